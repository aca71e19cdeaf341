"""Shared fixtures: small configs and data files for engine tests."""

from __future__ import annotations

import jax
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)


def base_config(**sections) -> dict:
    """A small, fast two-layer config on the two_points data; sections override whole keys."""
    cfg = {
        "name": "t",
        "data": {"kind": "two_points", "angle": 1.2, "labels": [1, -1]},
        "model": {"kind": "two_layer", "activation": "relu", "width": 8},
        "init": {"kind": "gaussian", "scale": 0.3},
        "loss": {"kind": "logistic", "reduction": "mean"},
        "train": {"method": "gd", "lr": 0.05, "steps": 100},
        "observe": {"schedule": "log", "points": 10, "metrics": ["loss"]},
    }
    cfg.update(sections)
    return cfg


@pytest.fixture
def out(tmp_path):
    return tmp_path / "out"


@pytest.fixture
def random_data_file(tmp_path):
    """An npz with n=12 points in d=3 (labels +-1) and the path to it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = np.where(rng.random(12) < 0.5, -1.0, 1.0)
    path = tmp_path / "data.npz"
    np.savez(path, X=X, y=y)
    return path, X, y


@pytest.fixture
def init_file(tmp_path):
    """An npz with W [6, 3] and v [6] (generic, no zero pre-activations)."""
    rng = np.random.default_rng(1)
    W, v = 0.5 * rng.normal(size=(6, 3)), 0.5 * rng.normal(size=6)
    path = tmp_path / "init.npz"
    np.savez(path, W=W, v=v)
    return path, W, v
