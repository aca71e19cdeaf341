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


class Run:
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
    store = RunStore(out)
    config_hash = cfg.config_hash()
    run_dir = store.run_dir(cfg.name, config_hash)
    previous = store.read_summary(run_dir)
    if previous and previous.get("status") in FINISHED and not force:
        return Run(run_dir, cached=True)
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
    table = sim.event_table(state)  # event-driven methods: one row per activation-boundary event
    if table is not None:
        store.write_events(run_dir, table)
    status, message = sim.stop_report(state) or ("completed", "")
    events = detect_events(trajectory, cfg)
    if getattr(sim.method.events, "refine", False):  # event times to solver accuracy, not the grid
        from twolayer.train.event_times import refine_events

        events = refine_events(sim, state, trajectory, events)
    summary.update(
        status=status, message=message,
        wall_seconds=state.wall_seconds, t_end=float(trajectory["t"][-1]),
        steps=None if sim.method.continuous else int(trajectory["step"][-1]),
        final=_final_scalars(trajectory, cfg.batched), events=events,
        diverged_seeds=[s for s, b in zip(sim.seeds, state.bad) if b >= 0],
    )
    store.write_summary(run_dir, summary)
    (run_dir / "checkpoint.npz").unlink(missing_ok=True)
    return Run(run_dir)


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
    arrays.update({f"table/{k}": np.asarray(v) for k, v in state.table.items()})  # event-driven methods
    return arrays


def _resume_state(sim, arrays: dict | None):
    state = sim.initial_state()
    if not arrays:
        return state
    import jax.numpy as jnp

    state.params = {k.split("/", 1)[1]: jnp.asarray(v) for k, v in arrays.items() if k.startswith("param/")}
    state.records = {k.split("/", 1)[1]: list(v) for k, v in arrays.items() if k.startswith("record/")}
    state.table = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("table/")}
    state.bad, state.code = arrays["bad"], arrays["code"]
    state.index, state.wall_seconds = int(arrays["index"]), float(arrays["wall"])
    return state
