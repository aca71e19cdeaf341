"""A stored run as read from its directory: ``StoredRun`` (config, trajectory, final parameters,
summary), and ``SeedAxis``, the seed-axis view every run-like object shares (stored, in memory).

``twolayer.api.Run`` adds the notebook helpers to ``StoredRun``; modules that only read runs (the
explorer, the labelled datasets, the report) use ``StoredRun`` and never import the API.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from twolayer.store import RunStore


class SeedAxis:
    """``seeded``: any stored entry with a leading seed axis, for runs with ``seed:`` or ``seeds:``.

    Mixed into ``Run`` and into in-memory runs with the same interface (``config``, ``trajectory``,
    ``final_params``)."""

    @property
    def batched(self) -> bool:
        """True when the config asks for ``seeds`` (stored arrays then carry a leading seed axis)."""
        return self.config.get("seeds") is not None

    def seeded(self, name: str, source: str = "trajectory") -> np.ndarray:
        """``source`` (``trajectory`` or ``final``) entry ``name`` as [S, ...]: unchanged for ``seeds:``
        runs, with a new leading axis of length 1 for ``seed:`` runs. ``t`` and ``step`` have no seed
        axis and are refused."""
        arrays = {"trajectory": self.trajectory, "final": self.final_params}.get(source)
        if arrays is None:
            raise ValueError(f"source {source!r} is not one of trajectory, final")
        if source == "trajectory" and name in ("t", "step"):
            raise ValueError(f"{name!r} is shared by every seed; read run.trajectory[{name!r}]")
        if name not in arrays:
            raise KeyError(f"{name!r} is not in the run's {source} (it holds {', '.join(sorted(arrays))})")
        value = np.asarray(arrays[name])
        return value if self.batched else value[None]


class StoredRun(SeedAxis):
    """A run directory, read lazily: ``.config`` (resolved dict), ``.trajectory``, ``.final_params``,
    ``.summary``; ``.notes`` says what ``twolayer.run`` did beyond computing (resumed, recomputed a damaged
    run, waited...)."""

    def __init__(self, path: str | Path, cached: bool = False, notes: list[str] | None = None):
        self.path = Path(path)
        self.cached = cached
        self.notes = list(notes or [])
        self._trajectory = None
        self._final = None

    @property
    def config(self) -> dict:
        return yaml.safe_load((self.path / "config.yaml").read_text())

    @property
    def summary(self) -> dict:
        return RunStore.read_summary(self.path) or {}

    @property
    def status(self) -> str:
        return self.summary.get("status", "unknown")

    @property
    def trajectory(self) -> dict[str, np.ndarray]:
        if self._trajectory is None:
            with np.load(self.path / "trajectory.npz") as f:
                self._trajectory = {k: f[k] for k in f.files}
        return self._trajectory

    @property
    def final_params(self) -> dict[str, np.ndarray]:
        if self._final is None:
            with np.load(self.path / "final.npz") as f:
                self._final = {k: f[k] for k in f.files}
        return self._final

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}, status={self.status!r})"
