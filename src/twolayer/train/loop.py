"""The simulation loop: compiled advances between observation points, seeds batched by vmap.

Python runs once per observation point (never per step): ``advance`` (jit + vmap over seeds of a
method's while_loop or ODE solve) moves every seed to the next point, then ``observe`` (jit + vmap
of the registered observables) records the metrics. ``SimulationState`` is everything needed to
resume bitwise: the parameters, the per-seed divergence markers and the records so far.
"""

from __future__ import annotations

import functools
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from twolayer.data import build_dataset
from twolayer.init import sample_seeds
from twolayer.observe import context_arrays, evaluate
from twolayer.problem import Problem, make_context, support_arrays
from twolayer.train.methods import EVENT_LIMIT, METHODS, NO_SOLUTION, NONFINITE, STOP_REASONS


# Values that are traced (lr, weight decay, steps, times) are NOT part of these keys: runs that
# differ only in them share one compiled program within a process.
_VALUE_FIELDS = ("lr", "steps", "time", "weight_decay")


def _static_train(train) -> tuple:
    return tuple((k, v) for k, v in train.model_dump().items() if k not in _VALUE_FIELDS)


def seed_map(fn, in_axes: tuple, name: str = "mapped"):
    """``vmap(fn, in_axes)`` over the leading seed axis, except that a batch of ONE seed calls ``fn``
    directly (axis squeezed, then restored): XLA:CPU runs a vmapped program with a size-1 batch axis up
    to 2x slower at large data (batched dot layouts), for the same values. Chosen at trace time from
    the static shape of the first batched argument."""
    batched = jax.vmap(fn, in_axes=in_axes)

    def mapped(*args):
        first = next(a for a, ax in zip(args, in_axes) if ax == 0)
        if jax.tree_util.tree_leaves(first)[0].shape[0] != 1:
            return batched(*args)
        squeezed = [jax.tree_util.tree_map(lambda x: x[0], a) if ax == 0 else a for a, ax in zip(args, in_axes)]
        return jax.tree_util.tree_map(lambda x: jnp.expand_dims(x, 0), fn(*squeezed))

    mapped.__name__ = mapped.__qualname__ = name  # names the program in JAX's compile logs and profiles
    return mapped


@functools.lru_cache(maxsize=256)
def compiled_advance(method: str, static_train: tuple, problem: Problem, x_shape: tuple):
    """jit(vmap(advance)) for one method/problem; cached so equal structures never retrace. Event-driven
    methods (``Method.events``) take start and stop per seed (one program for the run and for refining
    event times)."""
    from twolayer.config import TrainConfig

    train = TrainConfig.model_construct(**dict(static_train))
    entry = METHODS.get(method)
    one = entry.build(train, _ShapeOnly(x_shape))
    times = 0 if entry.events is not None else None
    return jax.jit(seed_map(one, (0, 0, 0, times, times, None, None), name=f"advance_{method}"))


@functools.lru_cache(maxsize=256)
def compiled_observe(metrics: tuple):
    return jax.jit(seed_map(lambda p, ctx: evaluate(metrics, p, ctx), (0, None), name="observe"))


@dataclass(frozen=True)
class _ShapeOnly:
    """What ``Method.build`` may read from the context at build time: the shape of X. Everything
    else must be read from the ``ctx`` argument of ``advance`` (compiled programs are shared
    between runs with different data, so nothing data-dependent may be closed over)."""

    X_shape: tuple

    @property
    def X(self):
        return np.empty(self.X_shape, dtype=np.int8)

    def __getattr__(self, name):
        raise AttributeError(f"Method.build may only read ctx.X.shape, not ctx.{name}; "
                             f"read data from the ctx argument of advance(...) instead")


def observation_points(cfg) -> np.ndarray:
    """Observation points: steps (int) for discrete methods, times for flow; first 0, last the end."""
    train, obs = cfg.train, cfg.observe
    continuous = METHODS.get(train.method).continuous
    end = float(train.time) if continuous else int(train.steps)
    if obs.schedule == "log":
        first = end * 1e-4 if continuous else 1
        pts = np.geomspace(first, end, obs.points - 1) if end > first else np.array([end])
        pts = np.concatenate([[0], pts])
    elif obs.schedule == "every":
        pts = np.append(np.arange(0, end, obs.every), end)
    else:
        pts = np.append(np.asarray(obs.at, dtype=float), end)
    if not continuous:
        pts = np.rint(pts).astype(np.int64)
    pts = np.unique(pts[(pts >= 0) & (pts <= end)])
    return pts


def objective_arrays(cfg, dataset) -> dict:
    """Context arrays the objective (or the training method's ``build``) declares in its ``needs``
    attribute (e.g. the population objective's target), from the dataset's context or the
    registered providers."""
    from twolayer.observe import CONTEXT
    from twolayer.problem import OBJECTIVES

    needs = (*getattr(OBJECTIVES.get(cfg.objective), "needs", ()),
             *getattr(METHODS.get(cfg.train.method).build, "needs", ()))
    return {k: dataset.context[k] if k in dataset.context else CONTEXT.get(k)(dataset, cfg) for k in needs}


@dataclass
class SimulationState:
    params: dict  # arrays with a leading seed axis
    bad: np.ndarray  # [S]: -1 healthy, else the step (time for flow) where the seed stopped
    code: np.ndarray  # [S]: 0 healthy, else why it stopped (methods.STOP_REASONS)
    index: int = 0  # number of observation points already recorded
    records: dict = field(default_factory=dict)  # name -> list of [S, ...] arrays
    wall_seconds: float = 0.0
    # event-driven methods (Method.events): the event table so far (column -> 1-D array, checkpointed) and,
    # in memory only, the parameters at each observation point (for refining event times)
    table: dict = field(default_factory=dict)
    snapshots: dict = field(default_factory=dict, repr=False)


class Simulation:
    """Build once from a validated config; ``run`` advances a state through the schedule."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.dtype = jnp.float32 if cfg.precision == "float32" else jnp.float64
        self.dataset = build_dataset(cfg.data)
        self.problem = Problem.from_config(cfg)
        arrays = {"X": self.dataset.X, "y": self.dataset.y,
                  **context_arrays(cfg.observe.metrics, self.dataset, cfg),
                  **objective_arrays(cfg, self.dataset), **support_arrays(self.problem, self.dataset.X)}
        self.ctx = make_context(self.problem, arrays, self.dtype)
        self.method = METHODS.get(cfg.train.method)
        self.points = observation_points(cfg)
        self.seeds = cfg.seed_list()
        self.width = cfg.width()
        hyper = {"lr": cfg.train.lr or 0.0, "weight_decay": cfg.train.weight_decay}
        self.hyper = {k: jnp.asarray(v, dtype=self.dtype) for k, v in hyper.items()}
        self.keys = jnp.asarray(np.stack([np.asarray(jax.random.PRNGKey(s)) for s in self.seeds]))
        self._advance = compiled_advance(self.method.name, _static_train(cfg.train), self.problem, self.ctx.X.shape)
        self._observe = compiled_observe(tuple(cfg.observe.metrics))

    # -- time -------------------------------------------------------------------------------
    def time_of(self, point) -> float:
        """Continuous time of an observation point: t = lr * k for GD/SGD, t itself for flow."""
        return float(point) if self.method.continuous else float(point) * float(self.cfg.train.lr)

    @property
    def times(self) -> np.ndarray:
        return np.array([self.time_of(p) for p in self.points])

    # -- state ------------------------------------------------------------------------------
    def initial_state(self) -> SimulationState:
        keys = np.stack([np.asarray(self._init_key(s)) for s in self.seeds])
        params = sample_seeds(self.cfg.init, keys, self.cfg.model.kind, self.width, self.dataset.d, self.dtype)
        d = self.dataset.d
        if params["W"].shape[-1] != d:
            raise ValueError(f"init.path: W has {params['W'].shape[-1]} input dimensions, the data has {d}")
        bad_dtype = np.float64 if self.method.continuous else np.int64
        n = len(self.seeds)
        return SimulationState(params=params, bad=np.full(n, -1, dtype=bad_dtype), code=np.zeros(n, dtype=np.int64))

    @staticmethod
    def _init_key(seed: int):
        return jax.random.fold_in(jax.random.PRNGKey(seed), 1)

    # -- loop -------------------------------------------------------------------------------
    def run(self, state: SimulationState, on_observation: Callable | None = None,
            on_checkpoint: Callable | None = None) -> SimulationState:
        """Advance ``state`` through the remaining observation points.

        ``on_observation(state, i, total)`` is called after each recorded point (progress bars);
        ``on_checkpoint(state)`` likewise (the store decides when to write). Stops early when
        every seed has diverged.
        """
        points = self.points
        params, bad, code = state.params, jnp.asarray(state.bad), np.asarray(state.code)
        position = points[state.index - 1] if state.index > 0 else points[0]
        for i in range(state.index, len(points)):
            started = _time.perf_counter()
            target = points[i]
            if target > position:
                out = self.advance_between(params, bad, position, target)
                params, bad, new_code = out[:3]
                code = np.where(code > 0, code, np.asarray(new_code))
                if self.method.events is not None:  # event-driven methods return their interval's event log
                    self._append_events(state, out[3])
            if self.method.events is not None and getattr(self.method.events, "refine", False):
                state.snapshots[i] = params
            values = self._observe(params, self.ctx)
            values = jax.device_get(values)
            bad_np = np.asarray(jax.device_get(bad))
            for name, value in values.items():
                value = np.array(value)
                if np.issubdtype(value.dtype, np.floating):
                    value[bad_np >= 0] = np.nan  # a diverged seed has no meaningful observables
                state.records.setdefault(name, []).append(value)
            position = target
            state.params, state.bad, state.code, state.index = params, bad_np, code, i + 1
            state.wall_seconds += _time.perf_counter() - started
            if on_checkpoint is not None:
                on_checkpoint(state)
            if on_observation is not None:
                on_observation(state, i + 1, len(points))
            if np.all(bad_np >= 0):
                break
        return state

    def _point(self, p):
        return jnp.asarray(p, dtype=self.dtype if self.method.continuous else jnp.int64)

    # -- event-driven methods (Method.events) ---------------------------------------------------------
    def _append_events(self, state: SimulationState, log) -> None:
        rows = self.method.events.rows(jax.device_get(log), self.seeds)
        state.table = {k: np.concatenate([state.table[k], v]) if k in state.table else v for k, v in rows.items()}

    def event_table(self, state: SimulationState) -> dict[str, np.ndarray] | None:
        """The event table (column -> array, one row per event, sorted by seed and time), or None for
        methods without events."""
        if self.method.events is None:
            return None
        table = state.table or self.method.events.empty()
        order = np.lexsort((np.asarray(table["t"]), np.asarray(table["seed"])))
        return {k: np.asarray(v)[order] for k, v in table.items()}

    def advance_between(self, params, bad, starts, stops):
        """Advance the seeds from ``starts`` to ``stops``: ``(params, bad, code[, log])``. Event-driven methods
        take one time per seed (arrays, or scalars broadcast), e.g. to refine event times."""
        if self.method.events is None:
            return self._advance(params, self.keys, bad, self._point(starts), self._point(stops), self.ctx, self.hyper)
        shape = (len(self.seeds),)
        return self._advance(params, self.keys, jnp.asarray(bad), jnp.broadcast_to(self._point(starts), shape),
                             jnp.broadcast_to(self._point(stops), shape), self.ctx, self.hyper)

    def observe(self, params) -> dict:
        """The configured observables at ``params`` (leading seed axis), as numpy arrays."""
        return {k: np.asarray(v) for k, v in jax.device_get(self._observe(params, self.ctx)).items()}

    # -- results ----------------------------------------------------------------------------
    def trajectory(self, state: SimulationState) -> dict[str, np.ndarray]:
        """``t``, ``step`` and one array per observable, shaped [S, T, ...] ([T, ...] for one seed)."""
        count = state.index
        traj = {"t": self.times[:count]}
        traj["step"] = (np.zeros(count, dtype=np.int64) if self.method.continuous
                        else np.asarray(self.points[:count], dtype=np.int64))
        for name, values in state.records.items():
            arr = np.moveaxis(np.stack(values), 0, 1)  # [S, T, ...]
            traj[name] = arr if self.cfg.batched else arr[0]
        if self.method.events is not None:  # observables derived from the event table (pattern_changes)
            for name, arr in self.method.events.derived(self.event_table(state), self.seeds, traj["t"]).items():
                traj[name] = arr if self.cfg.batched else arr[0]
        return traj

    def final_params(self, state: SimulationState) -> dict[str, np.ndarray]:
        params = {k: np.asarray(v) for k, v in jax.device_get(state.params).items()}
        return params if self.cfg.batched else {k: v[0] for k, v in params.items()}

    def stop_report(self, state: SimulationState) -> tuple[str, str] | None:
        """``(status, message)`` when seeds stopped early (``diverged`` for non-finite
        parameters, ``failed`` when the ODE solver gave up), None if every seed is healthy."""
        bad, code = np.asarray(state.bad), np.asarray(state.code)
        if not np.any(bad >= 0):
            return None
        messages = []
        for reason in sorted(set(code[bad >= 0].tolist())):
            idx = [i for i in range(len(bad)) if bad[i] >= 0 and code[i] == reason]
            first = float(np.min(bad[idx]))
            where = (f"t = {first:.6g}" if self.method.continuous
                     else f"step {int(first)} (t = {self.time_of(first):.6g})")
            seeds = [self.seeds[i] for i in idx]
            if reason == NONFINITE:
                params = jax.device_get(state.params)
                loss = np.asarray(jax.device_get(jax.vmap(self.ctx.objective)(state.params)))
                big = max(float(np.max(np.abs(params[k][idx]))) for k in params)
                messages.append(
                    f"{STOP_REASONS[reason]} at {where} for seed(s) {seeds}; at the last finite state the loss "
                    f"was {float(np.max(loss[idx])):.4g} and the largest |parameter| {big:.4g} "
                    f"(lower train.lr, or use a more stable loss)")
            elif reason in (NO_SOLUTION, EVENT_LIMIT):
                table = self.event_table(state)
                details = "; ".join(filter(None, (self.method.events.details(table, s) for s in seeds)))
                messages.append(f"{STOP_REASONS[reason]} at {where} for seed(s) {seeds}" + (f": {details}" if details else
                                (" (more than 4 n h + 64 events in one observation interval, or more than two "
                                 "simultaneous sliding hyperplanes for one neuron)" if reason == EVENT_LIMIT else "")))
            else:
                messages.append(
                    f"{STOP_REASONS[reason]} past {where} for seed(s) {seeds} within train.max_solver_steps = "
                    f"{self.cfg.train.max_solver_steps} steps. ReLU-type vector fields jump where a neuron crosses "
                    f"a data point's hyperplane and the flow may slide along it, which stalls adaptive solvers: "
                    f"raise train.max_solver_steps, loosen train.rtol/atol, or use method gd with a small lr")
        status = "diverged" if np.all(code[bad >= 0] == NONFINITE) else "failed"
        return status, "; ".join(messages)
