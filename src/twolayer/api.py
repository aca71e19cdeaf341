"""``twolayer.run(config) -> Run``: validate, look up the store, simulate (or resume), save.

The run's directory is named by the hash of its resolved config, so an identical config is a
cache hit (unless ``force``), an interrupted or failed run resumes from its last checkpoint, and
a run whose parameters stop being finite ends with status ``diverged`` and a message.
"""

from __future__ import annotations

import shutil
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
import yaml

from twolayer.config import RunConfig, load_config
from twolayer.events import detect_events
from twolayer.store import DEFAULT_OUT, FINISHED, RunStore, now_iso


class RunError(RuntimeError):
    """A run failed (not a config error): the run directory holds its status and checkpoint."""

    def __init__(self, message: str, path: Path):
        self.path = path
        super().__init__(message)


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


class Run(SeedAxis):
    """A stored run: ``.config`` (resolved dict), ``.trajectory``, ``.final_params``, ``.summary``."""

    def __init__(self, path: str | Path, cached: bool = False):
        self.path = Path(path)
        self.cached = cached
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
        return f"Run({str(self.path)!r}, status={self.status!r})"

    # -- notebook helpers (twolayer.labelled, twolayer.quickplot, twolayer.explore) -----------------
    def to_xarray(self):
        """The run as an ``xarray.Dataset`` with named axes (``twolayer.labelled.to_xarray``)."""
        from twolayer.labelled import to_xarray

        return to_xarray(self)

    def plot(self, name: str | None = None, **options):
        """A paper-style figure of one observable (default: the loss); returns the Axes
        (``twolayer.quickplot.plot``)."""
        from twolayer.quickplot import plot

        return plot(self, name, **options)

    def explore(self, dest: str | Path | None = None) -> Path:
        """Write this run's explorer page (``twolayer.explore``); returns its path."""
        from twolayer.explore import explore

        return explore(self.path, dest=dest)

    def _repr_html_(self) -> str:
        from twolayer.quickplot import repr_html

        return repr_html(self)


def run(config: str | Path | dict | RunConfig, *, out: str | Path = DEFAULT_OUT, force: bool = False,
        overrides: list[str] | dict | None = None, progress: Callable | None = None,
        checkpoint_seconds: float = 30.0, _on_observation: Callable | None = None) -> Run:
    """Run (or fetch from the store) the simulation a config describes.

    ``progress(done, total, t)`` is called after each observation point. Checkpoints are written
    at observation points at most every ``checkpoint_seconds`` (0: at every point) and whenever
    the run is interrupted or fails.
    """
    from twolayer.train import Simulation

    cfg = load_config(config, overrides)
    if cfg.mlflow is not None:  # fail before simulating when the tracking extra is missing
        from twolayer.tracking import require_mlflow

        require_mlflow()
    store = RunStore(out)
    config_hash = cfg.config_hash()
    run_dir = store.run_dir(cfg.name, config_hash)
    previous = store.read_summary(run_dir)
    if previous and previous.get("status") in FINISHED and not force:
        return _tracked(Run(run_dir, cached=True), cfg)
    if force and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    store.write_config(run_dir, cfg.resolved())

    summary = {
        "run_id": run_dir.name, "name": cfg.name, "config_hash": config_hash,
        "created": (previous or {}).get("created", now_iso()), "seeds": cfg.seed_list(),
        "method": cfg.train.method, "status": "running", "message": "",
    }
    store.write_summary(run_dir, summary)
    sim = Simulation(cfg)
    state = _resume_state(sim, store.read_checkpoint(run_dir))
    last_save = [time.monotonic()]

    def on_checkpoint(st):
        if time.monotonic() - last_save[0] >= checkpoint_seconds:
            store.write_checkpoint(run_dir, _checkpoint_arrays(st))
            last_save[0] = time.monotonic()

    def on_observation(st, done, total):
        if progress is not None:
            progress(done, total, sim.time_of(sim.points[done - 1]))
        if _on_observation is not None:
            _on_observation(st, done, total)

    try:
        sim.run(state, on_observation=on_observation, on_checkpoint=on_checkpoint)
    except BaseException as exc:
        if state.index > 0:
            store.write_checkpoint(run_dir, _checkpoint_arrays(state))
        interrupted = isinstance(exc, KeyboardInterrupt)
        summary.update(status="interrupted" if interrupted else "failed", wall_seconds=state.wall_seconds,
                       message=("interrupted; run again to resume from the last checkpoint" if interrupted
                                else f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"))
        store.write_summary(run_dir, summary)
        if interrupted:
            raise
        raise RunError(f"run {run_dir.name} failed: {type(exc).__name__}: {exc}", run_dir) from exc

    trajectory = sim.trajectory(state)
    store.write_results(run_dir, trajectory, sim.final_params(state))
    status, message = sim.stop_report(state) or ("completed", "")
    summary.update(
        status=status, message=message,
        wall_seconds=state.wall_seconds, t_end=float(trajectory["t"][-1]),
        steps=None if sim.method.continuous else int(trajectory["step"][-1]),
        final=_final_scalars(trajectory, cfg.batched), events=detect_events(trajectory, cfg),
        diverged_seeds=[s for s, b in zip(sim.seeds, state.bad) if b >= 0],
    )
    store.write_summary(run_dir, summary)
    (run_dir / "checkpoint.npz").unlink(missing_ok=True)
    return _tracked(Run(run_dir), cfg)


def _tracked(run: Run, cfg: RunConfig) -> Run:
    """Log a finished run to MLflow when the config asks for it (``twolayer.tracking``)."""
    if cfg.mlflow is not None:
        from twolayer.tracking import log_run

        log_run(run, cfg.mlflow, cached=run.cached)
    return run


def _final_scalars(trajectory: dict, batched: bool) -> dict:
    """The last recorded value of every scalar observable (a list over seeds when batched)."""
    final = {}
    for name, arr in trajectory.items():
        if name in ("t", "step") or arr.ndim != (2 if batched else 1):
            continue
        last = arr[..., -1]
        final[name] = [float(x) for x in np.atleast_1d(last)] if batched else float(last)
    return final


def _checkpoint_arrays(state) -> dict:
    arrays = {f"param/{k}": np.asarray(v) for k, v in state.params.items()}
    arrays.update({f"record/{k}": np.stack(v) for k, v in state.records.items()})
    arrays.update(bad=np.asarray(state.bad), code=np.asarray(state.code), index=np.array(state.index), wall=np.array(state.wall_seconds))
    return arrays


def _resume_state(sim, arrays: dict | None):
    state = sim.initial_state()
    if not arrays:
        return state
    import jax.numpy as jnp

    state.params = {k.split("/", 1)[1]: jnp.asarray(v) for k, v in arrays.items() if k.startswith("param/")}
    state.records = {k.split("/", 1)[1]: list(v) for k, v in arrays.items() if k.startswith("record/")}
    state.bad, state.code = arrays["bad"], arrays["code"]
    state.index, state.wall_seconds = int(arrays["index"]), float(arrays["wall"])
    return state
