"""Strict numbers for every config section, and field errors for cross-field checks.

``StrictNumbers`` is the base of the run config's sections, of every dataset's, initialization's and
training method's parameters:

- A number field does not take ``true``/``false`` or a string: pydantic would read ``width: true`` as 1
  and ``width: '10'`` as 10, so a quoted number would pass unnoticed.
- An integer too large to count with (beyond int64, ``limits.MAX_INT``; beyond float64 where the field
  takes floats) is refused, naming the field: a 400-digit ``model.width`` would overflow later.
- Floats are finite: ``observe.at: [.nan]`` or ``train.time: .inf`` are refused, naming the field.

``field_errors`` builds a pydantic ``ValidationError`` whose entries carry their own field paths, so a
validator can name the fields a cross-field check is about. ``FileRef`` is the mixin of sections that
read a file (``data.path``, ``init.path``).
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from twolayer.fileio import sha256_of
from twolayer.limits import MAX_INT

_NUMBERS = (int, float)
MAX_FLOAT_INT = int(sys.float_info.max)  # an integer beyond it has no float


def number_types(annotation) -> set[type] | None:
    """The number types (int, float) an annotation allows when every type it allows is a number (or
    None, or a list/tuple of numbers), e.g. ``int | list[int] | None`` -> {int} or ``Literal[-1, 1]`` ->
    {int}; None as soon as it allows anything else."""
    if annotation in _NUMBERS:
        return {annotation}
    if annotation is type(None):
        return set()
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        args = typing.get_args(annotation)
        ok = all(isinstance(a, _NUMBERS) and not isinstance(a, bool) for a in args)
        return {type(a) for a in args} if ok else None
    if origin is typing.Annotated:
        return number_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, tuple):
        parts = [number_types(a) for a in typing.get_args(annotation) if a is not Ellipsis]
        return set().union(*parts) if parts and None not in parts else None
    return None


def not_a_number(value: Any, types_: set[type]) -> tuple[str, str]:
    """``(where, why)`` when the raw value of a number field, or the entry ``where`` of its list (``"0.1"``),
    is no number of ``types_``: a boolean, a string, or an integer too large to count with; ``why`` is ""
    when it may be one."""
    if isinstance(value, bool):
        return "", f"must be a number, not {str(value).lower()}"
    if isinstance(value, str):
        return "", f"must be a number, not the string {value!r}" + (" (write numbers without quotes)" if _numeric(value) else "")
    if isinstance(value, int) and abs(value) > MAX_INT and (float not in types_ or abs(value) > MAX_FLOAT_INT):
        return "", (f"{len(str(abs(value)))}-digit integer is too large: at most 2^63 - 1"
                    + (" (or a float up to 1.8e308)" if float in types_ else ""))
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            where, why = not_a_number(v, types_)
            if why:
                return ".".join(filter(None, (str(i), where))), why
    return "", ""


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class StrictNumbers(BaseModel):
    """Base model: number fields refuse booleans, strings and integers too large to count with; float
    fields refuse NaN and inf."""

    model_config = ConfigDict(allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_numbers(cls, value, info: ValidationInfo):
        field = cls.model_fields.get(info.field_name or "")
        allowed = number_types(field.annotation) if field is not None else None
        where, why = not_a_number(value, allowed) if allowed is not None else ("", "")
        if why and where:
            raise field_errors(cls.__name__, [(where, why)])
        if why:
            raise ValueError(why)
        return value


def field_errors(title: str, errors: list[tuple[str, str]]) -> ValidationError:
    """A ValidationError whose entries carry their own field paths (for cross-field checks)."""
    details = [
        {"type": PydanticCustomError("config", "{message}", {"message": msg}), "loc": tuple(path.split(".")), "input": None}
        for path, msg in errors
    ]
    return ValidationError.from_exception_data(title, details)


class FileRef(BaseModel):
    """Mixin for config sections that read a file: ``path`` (required; relative paths are taken from the
    config file's folder, the validation context ``base_dir``) and its ``sha256``, recorded in the
    resolved config so a run's hash changes when the file does (a given ``sha256`` must match)."""

    path: str
    sha256: str | None = Field(default=None, validate_default=True)

    @field_validator("path")
    @classmethod
    def _absolute_existing(cls, v: str, info: ValidationInfo) -> str:
        p = Path(v).expanduser()
        base = (info.context or {}).get("base_dir")
        if not p.is_absolute() and base is not None:
            p = Path(base) / p
        p = p.resolve()
        if not p.is_file():
            raise ValueError(f"file not found: {p}" if not p.exists() else f"{p} is not a file")
        return str(p)

    @field_validator("sha256")
    @classmethod
    def _file_hash(cls, v: str | None, info: ValidationInfo) -> str | None:
        path = info.data.get("path")
        if path is None:  # the path itself was refused
            return v
        digest = sha256_of(Path(path))
        if v is not None and v != digest:
            raise ValueError(f"{path} has sha256 {digest[:12]}..., the config expects {v[:12]}...")
        return digest

    def checked_path(self) -> Path:
        return Path(self.path)
