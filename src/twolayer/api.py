"""``twolayer.run(config) -> Run``: validate, look up the store, simulate (or resume), save.

The run's directory is named by the hash of its resolved config, so an identical config is a
cache hit (unless ``force``) once its stored files are verified, an interrupted or failed run
resumes from its last checkpoint, and a run whose parameters or outputs stop being finite ends with
status ``diverged`` and a message. One process at a time computes a run directory (``twolayer.lock``);
a second one waits and reuses the result. Every way out of ``run`` after the run directory says
``running`` leaves a final status: ``completed``, ``diverged``, ``failed`` (with the message) or
``interrupted``.
"""

from __future__ import annotations

import errno
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np

from twolayer import checkpoint
from twolayer.config import RunConfig, load_config
from twolayer.errors import StoreError, UnrecordedEventWarning
from twolayer.events import EVENTS, detect_events, unrecorded_needs
from twolayer.lock import FILENAME as LOCK_FILE
from twolayer.lock import RunLock
from twolayer.store import CONFIG, DEFAULT_OUT, SUMMARY, RunStore, now_iso
from twolayer.stored import StoredRun

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class RunError(RuntimeError):
    """A run failed (not a config error): the run directory holds its status and checkpoint."""

    def __init__(self, message: str, path: Path):
        self.path = path
        super().__init__(message)


class Run(StoredRun):
    """A stored run (``twolayer.stored.StoredRun``: ``.config``, ``.trajectory``, ``.final_params``,
    ``.summary``, ``.notes``, ``.seeded``) with the notebook helpers: ``to_xarray``, ``plot``, ``explore``
    and a notebook summary."""

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


class DamagedRunWarning(UserWarning):
    """``open_run`` of a run whose summary or outputs do not verify (``Run.problem`` says why)."""


def open_run(path_or_id: str | Path, out: str | Path = DEFAULT_OUT) -> Run:
    """A stored run, verified as ``twolayer.run`` verifies a cache hit (``RunStore.stored_state``).

    Arguments:
        path_or_id: a run directory, a run id (``name-hash8``) or a unique prefix of one.
        out: the output folder the id is looked up in.

    Returns:
        The ``Run``; ``FileNotFoundError`` when nothing (or several runs) match, ``StoreError`` when the
        directory holds another config's run or no readable summary or config. A run whose summary or
        outputs do not verify is returned with ``Run.problem`` set, and a ``DamagedRunWarning``.
    """
    path = RunStore(out).find(path_or_id)
    state = RunStore.stored_state(path)
    if state.foreign or (state.summary is None and state.problem):
        raise StoreError([("run", f"{path}: {state.problem}")])
    if state.problem:
        warnings.warn(f"{path.name}: {state.problem}; `twolayer run` of its config recomputes it", DamagedRunWarning,
                      stacklevel=2)
    return Run(path, problem=state.problem)


def run(config: str | Path | dict | RunConfig, *, out: str | Path = DEFAULT_OUT, force: bool = False,
        overrides: list[str] | dict | None = None, progress: Callable | None = None,
        checkpoint_seconds: float = 30.0, notify: Callable[[str], None] | None = None,
        refused_checkpoint: Literal["restart", "stop"] = "restart",
        _on_observation: Callable | None = None) -> Run:
    """Run (or fetch from the store) the simulation a config describes.

    Arguments:
        config: a YAML path, a dict or a ``RunConfig`` (validated by ``load_config``).
        out: the output folder of run directories (default ``twolayer-out``).
        force: recompute even when an identical run is stored.
        overrides: ``--set``-style ``["train.lr=0.01"]`` or ``{"train.lr": 0.01}``.
        progress: ``progress(done, total, t)`` after each observation point.
        checkpoint_seconds: at most this long between checkpoints (0: at every point).
        notify: ``notify(message)`` for one-line notes.
        refused_checkpoint: ``"restart"`` or ``"stop"`` (see below).

    Returns:
        The ``Run`` of the run directory ``<out>/<name>-<hash8>`` (``.cached`` when it was a cache hit).

    ``progress(done, total, t)`` is called after each observation point. Checkpoints are written
    at observation points at most every ``checkpoint_seconds`` (0: at every point) and whenever
    the run is interrupted or fails. ``notify(message)`` receives one-line notes (also kept in
    ``Run.notes`` and ``summary["notes"]``): resumed from point k, a damaged stored run recomputed, a
    refused checkpoint, waiting for another process. A checkpoint that does not belong to this config
    is deleted and the run starts from scratch, or, with ``refused_checkpoint="stop"``, ``RunError``.

    Raises ``ConfigError`` / ``OutputError`` for user errors (nothing is written), ``RunError`` when
    the run fails (its directory says ``failed`` with the message and keeps the checkpoint), and
    re-raises ``KeyboardInterrupt`` after marking the run ``interrupted``.
    """
    from twolayer.train import Simulation

    notes: list[str] = []

    def note(message: str) -> None:
        notes.append(message)
        if notify is not None:
            notify(message)

    cfg = load_config(config, overrides)
    if cfg.mlflow is not None:  # fail before simulating when the tracking extra is missing
        from twolayer.tracking import require_mlflow

        require_mlflow()
    store = RunStore(out)
    config_hash = cfg.config_hash()
    run_dir = store.run_dir(cfg.name, config_hash)
    if not force and store.stored_state(run_dir, config_hash).cache_hit:
        return _tracked(Run(run_dir, cached=True), cfg)
    store.check_writable()
    sim = Simulation(cfg)  # user errors found while building (data, sizes) leave nothing behind

    run_dir.mkdir(parents=True, exist_ok=True)
    lock = RunLock(run_dir / LOCK_FILE)
    try:
        lock.acquire(on_wait=note)
        stored = store.stored_state(run_dir, config_hash)
        if stored.cache_hit and not force:  # computed by the process we waited for
            return _tracked(Run(run_dir, cached=True, notes=notes), cfg)
        if force:
            store.clear(run_dir, keep=(LOCK_FILE,))
        elif stored.problem:
            note(f"the stored run {run_dir.name} cannot be reused ({stored.problem}); recomputing it")
            store.clear(run_dir, keep=(LOCK_FILE, checkpoint.FILENAME))
        state = _start_state(sim, run_dir, config_hash, refused_checkpoint, note)
        _simulate(sim, cfg, state, store, run_dir, config_hash, stored.summary, notes, note,
                  progress, checkpoint_seconds, _on_observation)
    finally:
        lock.release()
    return _tracked(Run(run_dir, notes=notes), cfg)


def _start_state(sim, run_dir: Path, config_hash: str, refused: str, note: Callable[[str], None]):
    """The state to run from: the checkpoint's when it belongs to this config, else the initial one."""
    try:
        arrays = checkpoint.read(run_dir)
        if arrays is None:
            return sim.initial_state()
        state = checkpoint.restore(sim, arrays, config_hash)
    except checkpoint.CheckpointRefused as e:
        where = checkpoint.path_in(run_dir)
        if refused == "stop":
            raise RunError(f"refused {where}: {e}; it was left in place (run without --strict-resume to start "
                           f"from scratch)", run_dir) from None
        note(f"refused {where}: {e}; starting from scratch")
        where.unlink(missing_ok=True)
        return sim.initial_state()
    note(f"resumed from point {state.index} of {len(sim.points)} (t = {sim.time_of(sim.points[state.index - 1]):.6g})")
    return state


def _simulate(sim, cfg: RunConfig, state, store: RunStore, run_dir: Path, config_hash: str, previous: dict | None,
              notes: list[str], note, progress, checkpoint_seconds: float, on_observation_hook) -> None:
    """Run ``state`` to the end and store the results; on any failure, checkpoint and record why."""
    summary = {
        "run_id": run_dir.name, "name": cfg.name, "config_hash": config_hash,
        "created": (previous or {}).get("created", now_iso()), "seeds": cfg.seed_list(),
        "method": cfg.train.method, "status": "running", "message": "",
    }
    if state.index:
        summary["resumed_from"] = state.index
    saved = {"index": state.index, "time": time.monotonic()}

    def index_note(problem: str) -> None:  # the index is a cache: say so once, and go on
        if problem and problem not in notes:
            note(problem)

    def save_checkpoint(st) -> None:
        checkpoint.write(run_dir, st, config_hash, len(sim.points))
        saved.update(index=st.index, time=time.monotonic())

    def on_checkpoint(st) -> None:
        if time.monotonic() - saved["time"] >= checkpoint_seconds:
            save_checkpoint(st)

    for message in _unrecorded_event_messages(sim, state):
        warnings.warn(UnrecordedEventWarning("observe.metrics", message), stacklevel=3)
    stride = _snapshot_stride(sim, state)

    def on_observation(st, done, total) -> None:
        if stride and (done - 1) % stride == 0:  # where brackets of events are re-run from (``train/event_times.py``)
            st.snapshots[done - 1] = st.params
        if progress is not None:
            progress(done, total, sim.time_of(sim.points[done - 1]))
        if on_observation_hook is not None:
            on_observation_hook(st, done, total)

    try:
        config_sha = store.write_config(run_dir, cfg.resolved())
        index_note(store.write_summary(run_dir, {**summary, "notes": notes}))
        sim.run(state, on_observation=on_observation, on_checkpoint=on_checkpoint)
        trajectory = sim.trajectory(state)
        files = {CONFIG: config_sha, **store.write_results(run_dir, trajectory, sim.final_params(state))}
        table = sim.event_table(state)  # event-driven methods: one row per activation-boundary event
        if table is not None:
            files.update(store.write_events(run_dir, table))
        status, message = sim.stop_report(state) or ("completed", "")
        from twolayer.train.event_times import refine_events

        events, uncertainty = refine_events(sim, state, trajectory, detect_events(trajectory, cfg))
        summary.update(
            status=status, message=message, files=files,
            wall_seconds=state.wall_seconds, t_end=float(trajectory["t"][-1]),
            steps=None if sim.method.continuous else int(trajectory["step"][-1]),
            final=_final_scalars(trajectory, cfg.batched), events=events, event_uncertainty=uncertainty,
            diverged_seeds=[s for s, b in zip(sim.seeds, state.bad) if b >= 0],
        )
        index_note(store.write_summary(run_dir, {**summary, "notes": notes}))
    except BaseException as exc:
        _record_failure(exc, sim, state, store, run_dir, summary, notes, note, saved, save_checkpoint)
    checkpoint.path_in(run_dir).unlink(missing_ok=True)

def _unrecorded_event_messages(sim, state) -> list[str]:
    """One message per event that this run cannot detect because an observable it reads is not recorded
    (``events.unrecorded_needs``), naming the metric to add to ``observe.metrics``."""
    recorded = sim.record_spec(state.params)
    unmet = unrecorded_needs(recorded)
    if not unmet:
        return []
    producers = _producers(sim, state, {n for missing in unmet.values() for n in missing})
    messages = []
    for name, missing in unmet.items():
        metrics = sorted({producers.get(n, n) for n in missing})
        have = [n for n in EVENTS.get(name).needs if n in recorded]
        verb = ("is", "is") if len(missing) == 1 else ("are", "is" if len(have) == 1 else "are")
        messages.append(f"event {name!r} is not detected: it reads {', '.join(map(repr, missing))}, which {verb[0]} "
                        f"not recorded (only {', '.join(map(repr, have))} {verb[1]}); add {', '.join(map(repr, metrics))} "
                        f"to observe.metrics")
    return messages


def _producers(sim, state, outputs: set[str]) -> dict[str, str]:
    """output -> the registered observable that records it (the output's own name when it is one, else found from
    the outputs' shapes of the observables that apply here)."""
    import jax

    from twolayer.observe import OBSERVABLES

    found = {n: n for n in outputs if n in OBSERVABLES}
    one = {k: jax.ShapeDtypeStruct(np.shape(v)[1:], v.dtype) for k, v in state.params.items()}
    for name, obs in OBSERVABLES.items():
        if outputs <= set(found):
            break
        try:
            keys = jax.eval_shape(lambda p, fn=obs.fn: fn(p, sim.ctx), one).keys()
        except Exception:  # an observable that does not apply to this net or data
            continue
        found.update({k: name for k in keys if k in outputs and k not in found})
    return found


SNAPSHOT_BYTES = 256 * 2**20  # discrete methods keep observed states up to this size, to refine events from


def _snapshot_stride(sim, state) -> int:
    """Every how many observation points a discrete run keeps its parameters in memory (0: none), so that refining
    an event to the step re-runs its bracket from a state at most ``stride - 1`` intervals before it: 1 when every
    point's parameters fit in ``SNAPSHOT_BYTES``."""
    from twolayer.train.event_times import refinement

    if refinement(sim) != "step":
        return 0
    per_point = sum(int(np.size(v)) * np.dtype(v.dtype).itemsize for v in state.params.values())
    return max(1, -(-per_point * len(sim.points) // SNAPSHOT_BYTES))


def _tracked(run: Run, cfg: RunConfig) -> Run:
    """Log a finished run to MLflow when the config asks for it (``twolayer.tracking``)."""
    if cfg.mlflow is not None:
        from twolayer.tracking import log_run

        log_run(run, cfg.mlflow, cached=run.cached)
    return run


def _record_failure(exc: BaseException, sim, state, store: RunStore, run_dir: Path, summary: dict, notes: list[str],
                    note, saved: dict, save_checkpoint) -> None:
    """Checkpoint what was computed, write the final status (``interrupted`` or ``failed``) and raise."""
    total = len(sim.points)
    if state.index > saved["index"]:
        try:
            save_checkpoint(state)
        except (OSError, KeyboardInterrupt):  # a full disk, a second Ctrl-C: the previous checkpoint stays
            pass
    kept = (f"the checkpoint at point {saved['index']} of {total} is kept" if saved["index"]
            else "no checkpoint was written, so it starts from the beginning")
    interrupted = isinstance(exc, KeyboardInterrupt)
    disk_full = isinstance(exc, OSError) and exc.errno in DISK_FULL
    if interrupted:
        message = (f"interrupted at point {state.index} of {total}; run the same command again to resume ({kept})")
    elif disk_full:
        where = exc.filename or run_dir
        message = (f"no space left on device while writing {where}: free space there and run the same command "
                   f"again to resume ({kept})")
    else:
        message = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
    summary.update(status="interrupted" if interrupted else "failed", wall_seconds=state.wall_seconds, message=message)
    try:
        store.write_summary(run_dir, {**summary, "notes": notes})
    except (OSError, KeyboardInterrupt):  # nothing more can be recorded; the message still reaches the user
        message += f" (could not update {run_dir / SUMMARY} either, which still says running)"
    if interrupted:
        note(f"{run_dir.name}: {message}")
        raise exc
    if disk_full:
        raise RunError(f"run {run_dir.name} failed: {message}", run_dir) from exc
    raise RunError(f"run {run_dir.name} failed: {type(exc).__name__}: {exc}", run_dir) from exc


def _final_scalars(trajectory: dict, batched: bool) -> dict:
    """The last recorded value of every scalar observable (a list over seeds when batched)."""
    final = {}
    for name, arr in trajectory.items():
        if name in ("t", "step") or arr.ndim != (2 if batched else 1):
            continue
        last = arr[..., -1]
        final[name] = [float(x) for x in np.atleast_1d(last)] if batched else float(last)
    return final
