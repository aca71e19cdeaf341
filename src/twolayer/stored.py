"""A stored run as read from its directory: ``StoredRun`` (config, trajectory, final parameters,
summary), and ``SeedAxis``, the seed-axis view every run-like object shares (stored, in memory).

``twolayer.api.Run`` adds the notebook helpers to ``StoredRun``; modules that only read runs (the
explorer, the labelled datasets, the report) use ``StoredRun`` and never import the API.
"""

from __future__ import annotations

import copy
import zipfile
from pathlib import Path

import numpy as np
import yaml

from twolayer.errors import StoreError
from twolayer.store import CONFIG, FINAL, TRAJECTORY, RunStore, load_config_text


class ResolvedConfig(dict):
    """A run's resolved config: the stored dict (``config["train"]["lr"]``, ``.get``, JSON) with attribute access
    to its sections and fields (``config.train.lr``, ``config.model.activation``; a key that is also a dict
    method, such as ``items``, is read with ``[]``), and ``validated()``, the ``RunConfig`` it validates to."""

    def __getattr__(self, name: str):
        if name.startswith("__") or name not in self:
            import difflib

            close = difflib.get_close_matches(name, [str(k) for k in self], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (it has {', '.join(map(str, self)) or 'no fields'})"
            raise AttributeError(f"the config has no field {name!r}{hint}")
        value = self[name]
        return ResolvedConfig(value) if type(value) is dict else value

    def validated(self):
        """The ``RunConfig`` (``twolayer.config``) this resolved config validates to."""
        from twolayer.config import load_config

        return load_config(_plain(self))


yaml.SafeDumper.add_representer(ResolvedConfig, lambda dumper, value: dumper.represent_dict(value))  # dumps as a dict


def _plain(value):
    """``value`` with every ``ResolvedConfig`` inside it a plain dict (for YAML and validation)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


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
    """A run directory, read lazily: ``.config`` (the resolved dict, ``ResolvedConfig``), ``.trajectory``, ``.final_params``,
    ``.summary``; ``.notes`` says what ``twolayer.run`` did beyond computing (resumed, recomputed a damaged
    run, waited...)."""

    def __init__(self, path: str | Path, cached: bool = False, notes: list[str] | None = None, problem: str = ""):
        self.path = Path(path)
        self.cached = cached
        self.notes = list(notes or [])
        self.problem = problem  # why the stored run does not verify ("" when it does; see RunStore.stored_state)
        self._trajectory = None
        self._final = None
        self._config = None

    @property
    def config(self) -> ResolvedConfig:
        """The resolved config as stored (a dict, with attribute access: ``run.config.train.lr``). Read once (a
        run directory's config never changes: its name is the config's hash); each access returns its own copy,
        so that a caller that edits it changes nothing for the next."""
        return ResolvedConfig(copy.deepcopy(self._stored_config()))

    @property
    def batched(self) -> bool:
        """``SeedAxis.batched`` without copying the config (``seeded`` asks it for every entry)."""
        return self._stored_config().get("seeds") is not None

    def _stored_config(self) -> dict:
        if self._config is None:
            self._config = self._read_config()
        return self._config

    def _read_config(self) -> dict:
        try:
            config = load_config_text((self.path / CONFIG).read_text())
        except FileNotFoundError:
            raise StoreError([("run", f"{self.path} has no {CONFIG}: it is not a run directory")]) from None
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise StoreError([("run", f"{self.path / CONFIG} is damaged ({type(e).__name__})")]) from None
        if not isinstance(config, dict):
            raise StoreError([("run", f"{self.path / CONFIG} is not a run config")])
        return config

    @property
    def summary(self) -> dict:
        return RunStore.read_summary(self.path) or {}

    @property
    def status(self) -> str:
        return self.summary.get("status", "unknown")

    @property
    def trajectory(self) -> dict[str, np.ndarray]:
        if self._trajectory is None:
            self._trajectory = self._arrays(TRAJECTORY)
        return self._trajectory

    @property
    def final_params(self) -> dict[str, np.ndarray]:
        if self._final is None:
            self._final = self._arrays(FINAL)
        return self._final

    def _arrays(self, name: str) -> dict[str, np.ndarray]:
        """The arrays of an output file; ``StoreError`` saying why when the run has not written it (still
        running, interrupted, failed) or it cannot be read."""
        path = self.path / name
        if not path.is_file():
            status = self.status
            how = {"interrupted": "run its config again (`twolayer run`, same config and --out) to resume it",
                   "running": "it is still running (or was killed: run its config again to resume it)",
                   "failed": "see its summary.json for the message; running its config again resumes it"}.get(
                status, "run its config again (`twolayer run`) to compute it")
            raise StoreError([("run", f"{self.path.name} is {status} and has no {name} yet: {how}")])
        try:
            with np.load(path, allow_pickle=False) as f:
                return {k: f[k] for k in f.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise StoreError([("run", f"{path} is damaged ({type(e).__name__}); `twolayer run` of its config "
                                      f"recomputes it")]) from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}, status={self.status!r})"
