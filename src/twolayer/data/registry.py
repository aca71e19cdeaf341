"""The dataset registry: kinds, each with a validated parameter model and a builder.

A dataset is built once per run (outside the compiled loop) from its validated parameters; the
trainer only sees the arrays. Later modules add kinds by calling ``register_dataset``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import ConfigDict, field_validator, model_serializer

from twolayer.errors import ConfigError, field_error
from twolayer.fields import StrictNumbers
from twolayer.registry import Entry, Registry


class DataParams(StrictNumbers):
    """Base class of every dataset's parameters: strict (unknown keys are errors, numbers are not
    booleans and are finite), frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: str
    # optional augmentation applied after building (``AUGMENTATIONS``, e.g. ``symmetric``: append
    # (-x, -y)); left out of the resolved config when unset, so existing run hashes do not change
    augment: str | None = None

    @field_validator("augment")
    @classmethod
    def _augment(cls, v):
        if v is not None and v not in AUGMENTATIONS:
            raise ValueError(f"{v!r} is not one of {', '.join(AUGMENTATIONS.names())}")
        return v

    # fields left out of the resolved config while they hold these values, so that adding an
    # optional field does not change the hashes of existing runs
    omitted_defaults: ClassVar[dict[str, Any]] = {"augment": None}

    @model_serializer(mode="wrap")
    def _drop_unset_defaults(self, handler):
        out = handler(self)
        if isinstance(out, dict):
            for key, default in self.omitted_defaults.items():
                if key in out and out[key] == default:
                    out.pop(key)
        return out


# data.augment: name -> fn(Dataset) -> Dataset, applied by ``build_dataset`` (see data/margin.py)
AUGMENTATIONS: Registry[Callable] = Registry("data.augment")


@dataclass(frozen=True)
class Dataset:
    """Training data: inputs ``X`` [n, d], labels or targets ``y`` [n]; ``context`` holds derived
    arrays observables may read (e.g. target directions), ``info`` plain metadata for reports."""

    X: np.ndarray
    y: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)
    context: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]


@dataclass(frozen=True, kw_only=True)
class DatasetKind(Entry):
    """A registered dataset kind: ``fn(params) -> Dataset`` (the builder), its validated parameter model
    ``params``, and ``population``: whether its inputs are Gaussian with a target that the exact
    population objectives integrate (``Objective.population``)."""

    params: type[DataParams]
    population: bool = False


DATASETS: Registry[DatasetKind] = Registry("data.kind")


def register_dataset(name: str, params: type[DataParams], *, population: bool = False):
    """Decorator: ``@register_dataset("two_points", TwoPointsParams)`` on a builder function."""

    def decorator(build):
        DATASETS.register(name, DatasetKind(name=name, fn=build, doc=(build.__doc__ or params.__doc__ or "").strip(),
                                            params=params, population=population))
        return build

    return decorator


NUMPY_TOO_BIG = ("array is too big", "Maximum allowed dimension exceeded")  # numpy's ValueErrors for huge shapes


def build_dataset(params: DataParams) -> Dataset:
    """Build a dataset; ``ConfigError`` (field ``data``, or the field its message names) when the builder
    refuses its parameters (a ``ValueError``: ``data.w_perp`` of the wrong length, no draw met the
    assumptions), its arrays do not fit in memory, or they hold no samples, no features or non-finite
    values."""
    try:
        data = DATASETS.get(params.kind).fn(params)
    except (MemoryError, ValueError) as e:
        if isinstance(e, MemoryError) or any(words in str(e) for words in NUMPY_TOO_BIG):
            raise ConfigError([("data", f"data.kind {params.kind!r} with these sizes does not fit in this machine's "
                                        f"memory")]) from None
        raise ConfigError([field_error(str(e), "data")]) from None
    X, y = np.asarray(data.X, dtype=np.float64), np.asarray(data.y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"data.kind {params.kind!r} built X {X.shape} and y {y.shape}; need [n, d] and [n]")
    field = "data.path" if "path" in type(params).model_fields else "data"
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ConfigError([(field, f"data.kind {params.kind!r} gives X of shape {list(X.shape)}: need at least one "
                                   f"sample (n >= 1) and one feature (d >= 1)")])
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ConfigError([(field, f"data.kind {params.kind!r} gives non-finite values (NaN or inf) in X or y")])
    data = Dataset(X, y, data.info, data.context)
    if getattr(params, "augment", None) is not None:
        data = AUGMENTATIONS.get(params.augment)(data)
    return data


def resolve_path(path: str | Path, base: Path | None) -> Path:
    """``path`` as given when absolute, else relative to ``base`` (the config file's folder)."""
    p = Path(path).expanduser()
    return p if p.is_absolute() or base is None else (base / p)
