"""Write a small 2-D data set of one's own: two noisy clusters at an angle, labels +1 and -1.

    python examples/study/make_data.py [PATH]        (default: data.npz beside this file)

The file holds ``X`` [n, 2] and ``y`` [n], the format of ``data: {kind: file, path: ...}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def make(path: Path, n: int = 12, angle: float = 1.0, spread: float = 0.08, seed: int = 0) -> Path:
    """``n`` points per class around the unit vectors at 0 (label +1) and at ``angle`` + pi/2 (label -1)."""
    rng = np.random.default_rng(seed)
    centers = np.array([[1.0, 0.0], [np.cos(angle + np.pi / 2), np.sin(angle + np.pi / 2)]])
    X = np.concatenate([c + spread * rng.normal(size=(n, 2)) for c in centers])
    y = np.repeat([1.0, -1.0], n)
    np.savez(path, X=X, y=y)
    return path


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("data.npz")
    print(make(target))
