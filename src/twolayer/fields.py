"""Strict numbers for every config section: ``StrictNumbers`` is the base of the run config's sections,
of every dataset's and every initialization's parameters.

- A number field does not take ``true``/``false``: pydantic would read ``width: true`` as 1.
- Floats are finite: ``observe.at: [.nan]`` or ``train.time: .inf`` are refused, naming the field.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

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
