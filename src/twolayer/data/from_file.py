"""Data from a file: an ``.npz`` with ``X`` [n, d] and ``y`` [n] (finite numbers, n >= 1, d >= 1)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import field_validator

from twolayer.data.registry import DataParams, Dataset, register_dataset
from twolayer.fields import FileRef
from twolayer.fileio import read_npz

NEEDS = "X [n, d] and y [n]"


def read_data_file(path) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of a data file as float64; ValueError naming what is wrong with it."""
    arrays = read_npz(path, need=("X", "y"), what=NEEDS)
    X, y = np.asarray(arrays["X"], dtype=np.float64), np.asarray(arrays["y"], dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"{path}: X has shape {list(X.shape)} and y {list(y.shape)}; need {NEEDS}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{path}: X has shape {list(X.shape)}; need at least one sample (n >= 1) and one "
                         f"feature (d >= 1)")
    return X, y


class FileDataParams(DataParams, FileRef):
    """``data: {kind: file, path: data.npz}``; the resolved config records the file's sha256."""

    kind: Literal["file"] = "file"

    @field_validator("path")
    @classmethod
    def _valid_arrays(cls, v: str) -> str:
        read_data_file(v)
        return v


@register_dataset("file", FileDataParams)
def file_data(p: FileDataParams) -> Dataset:
    """The ``file`` dataset: ``X`` and ``y`` of the ``.npz`` file (``read_data_file``)."""
    X, y = read_data_file(p.checked_path())
    return Dataset(X, y, {"path": p.path})
