"""Strict numbers for every config section, and field errors for cross-field checks.

``StrictNumbers`` is the base of the run config's sections, of every dataset's, initialization's and
training method's parameters:

- A number field does not take ``true``/``false``: pydantic would read ``width: true`` as 1.
- Floats are finite: ``observe.at: [.nan]`` or ``train.time: .inf`` are refused, naming the field.

``field_errors`` builds a pydantic ``ValidationError`` whose entries carry their own field paths, so a
validator can name the fields a cross-field check is about. ``FileRef`` is the mixin of sections that
read a file (``data.path``, ``init.path``).
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from twolayer.fileio import sha256_of

_NUMBERS = (int, float)


def is_number_annotation(annotation) -> bool:
    """True when every type an annotation allows is a number (or None, or a list/tuple of numbers),
    e.g. ``int | list[int] | None`` or ``Literal[-1, 1]``; False as soon as it allows anything else."""
    if annotation in _NUMBERS:
        return True
    if annotation is type(None):
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return all(isinstance(a, _NUMBERS) and not isinstance(a, bool) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return is_number_annotation(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, tuple):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return bool(args) and all(is_number_annotation(a) for a in args)
    return False


def _holds_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    return isinstance(value, list | tuple) and any(_holds_bool(v) for v in value)


class StrictNumbers(BaseModel):
    """Base model: number fields refuse booleans, float fields refuse NaN and inf."""

    model_config = ConfigDict(allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_not_booleans(cls, value, info: ValidationInfo):
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and _holds_bool(value) and is_number_annotation(field.annotation):
            raise ValueError(f"must be a number, not {str(value).lower()}")
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
