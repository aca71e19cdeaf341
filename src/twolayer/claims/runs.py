"""Helpers shared by the paper packages (min2024, lyu2021, multiindex2026): runs -> numpy.

ADD functions here; never rename or change an existing one (another paper package may use it).
Every function takes a stored run (``twolayer.api.Run``) or an in-memory run with the same
interface (``SyntheticRun``): ``config``, ``trajectory``, ``final_params``, ``seeded``.
"""

from __future__ import annotations

import numpy as np


def run_config(run):
    """The run's config, validated (``twolayer.config.RunConfig``)."""
    from twolayer.config import load_config

    return load_config(run.config)


def run_dataset(run):
    """The run's training data (``twolayer.data.Dataset``), rebuilt from its config."""
    from twolayer.data import build_dataset

    return build_dataset(run_config(run).data)


def initial_params(run) -> dict[str, np.ndarray]:
    """The run's initial parameters with a leading seed axis ({"W": [S, h, d], "v": [S, h]}),
    re-sampled from its config exactly as the run did."""
    from twolayer.train.loop import initial_params as drawn

    return {k: np.asarray(v) for k, v in drawn(run_config(run)).items()}


def final_value(run, name: str) -> np.ndarray:
    """The last recorded value of trajectory entry ``name`` for every seed: [S, ...]."""
    return run.seeded(name)[:, -1]


def crossing_time(t, y, level: float) -> float:
    """The first t at which the series y drops below ``level``, linearly interpolated between the
    two observations around the crossing (t[0] when y starts below it, nan when it never does)."""
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    below = np.flatnonzero(y < level)
    if not below.size:
        return float("nan")
    i = below[0]
    if i == 0:
        return float(t[0])
    return float(t[i - 1] + (level - y[i - 1]) * (t[i] - t[i - 1]) / (y[i] - y[i - 1]))
