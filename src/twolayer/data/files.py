"""Data from a file: an ``.npz`` with ``X`` [n, d] and ``y`` [n]."""

from __future__ import annotations

from typing import Literal

import numpy as np

from twolayer.data.registry import DataParams, Dataset, register_dataset
from twolayer.files import FileRef


class FileDataParams(DataParams, FileRef):
    """``data: {kind: file, path: data.npz}``; the resolved config records the file's sha256."""

    kind: Literal["file"] = "file"


@register_dataset("file", FileDataParams)
def file_data(p: FileDataParams) -> Dataset:
    with np.load(p.checked_path()) as f:
        missing = [k for k in ("X", "y") if k not in f]
        if missing:
            raise ValueError(f"data.path: {p.path} has no array {', '.join(missing)} (needs X [n, d] and y [n])")
        X, y = np.asarray(f["X"], dtype=np.float64), np.asarray(f["y"], dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"data.path: X has shape {X.shape} and y {y.shape}; need X [n, d] and y [n]")
    return Dataset(X, y, {"path": p.path})
