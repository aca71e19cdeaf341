"""The simulation loop: compiled advances between observation points, seeds batched by vmap.

Python runs once per observation point (never per step): ``advance`` (jit + vmap over seeds of a
method's while_loop or ODE solve) moves every seed to the next point, then ``observe`` (jit + vmap
of the registered observables) records the metrics. ``SimulationState`` is everything needed to
resume bitwise: the parameters, the per-seed divergence markers and the records so far. A point is
committed in one assignment (``SimulationState.commit``), so an interrupt anywhere leaves a state whose
records and index agree.
"""

from __future__ import annotations

import functools
import time as _time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from twolayer import seed_keys
from twolayer.data import build_dataset
from twolayer.errors import ConfigError, ConfigWarning, field_error
from twolayer.init import INITS, sample_seeds
from twolayer.limits import check_memory, memory_maps, record_bytes
from twolayer.nets import NETS
from twolayer.observe import context_arrays, evaluate
from twolayer.problem import CONTEXT, OBJECTIVES, Problem, data_errors, make_context, support_arrays
from twolayer.train.methods import EVENT_LIMIT, NO_SOLUTION, NONFINITE, STOP_REASONS, MethodParams

OUTPUTS = 3  # a stop code of the loop: finite parameters whose outputs f(x) are not finite (kept at 3: checkpoints)
REASONS = {**STOP_REASONS, OUTPUTS: "the network outputs f(x) became non-finite (inf/NaN)"}
DIVERGED = (NONFINITE, OUTPUTS)  # stop codes that end a run ``diverged`` (any other code: ``failed``)


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


MAPS_SHARE = 0.5  # compiled programs are dropped when the process holds this share of vm.max_map_count
# /proc/self/maps is read at most once per MAPS_INTERVAL seconds: the kernel writes a line per mapping, ~15-25 ms
# for the thousands a long process holds, which every run's build paid. In a second a process compiles at most
# ~100 programs (>= 10 ms each), ~1,000 mappings, far inside the half of the limit that MAPS_SHARE leaves.
MAPS_INTERVAL = 1.0
_maps_read_at = [-float("inf")]  # time.monotonic() of the last reading


def release_compiled_programs(share: float = MAPS_SHARE) -> bool:
    """Drop every compiled program (this module's caches and JAX's) when this process holds more than
    ``share`` of the kernel's memory-map limit (``limits.memory_maps``, read at most once per ``MAPS_INTERVAL``
    seconds); returns whether it did.

    A process that compiles thousands of programs (a whole ``reproduce``, a long sweep, the test suite)
    holds about 10 mappings per XLA:CPU executable and would die at the limit (65,530 by default) inside
    the compiler. Dropped programs are compiled again when next needed (from the persistent XLA cache
    when it is on). Called before each simulation is built."""
    now = _time.monotonic()
    if now - _maps_read_at[0] < MAPS_INTERVAL:
        return False
    _maps_read_at[0] = now
    usage = memory_maps()
    if usage is None or usage[0] <= share * usage[1]:
        return False
    for cached in (compiled_advance, compiled_observe, compiled_outputs_finite):
        cached.cache_clear()
    jax.clear_caches()
    return True


@functools.lru_cache(maxsize=256)
def compiled_advance(structure: MethodParams, problem: Problem, x_shape: tuple):
    """jit(vmap(advance)) for one method structure (``MethodParams.structure``: the traced values lr,
    steps, times and weight decay cleared, so runs that differ only in them share one program) and
    problem; cached so equal structures never retrace. Event-driven methods (``Method.events``) take
    start and stop per seed (one program for the run and for refining event times). On the CPU the program is
    compiled with the method's ``cpu_compiler_options``."""
    one = structure.entry.fn(structure, _ShapeOnly(x_shape))
    times = 0 if structure.entry.events is not None else None
    options = dict(structure.entry.cpu_compiler_options) if jax.default_backend() == "cpu" else {}
    return jax.jit(seed_map(one, (0, 0, 0, times, times, None, None), name=f"advance_{structure.method}"),
                   compiler_options=options or None)


@functools.lru_cache(maxsize=256)
def compiled_observe(metrics: tuple):
    """jit(vmap(observables)) for one list of metrics; cached, so runs that record the same metrics
    share the program.
    """
    return jax.jit(seed_map(lambda p, ctx: evaluate(metrics, p, ctx), (0, None), name="observe"))


@functools.lru_cache(maxsize=1)
def compiled_outputs_finite():
    """[S] bool: every output f(x_i) of the seed's network is finite. A separate program from
    ``observe``, so the observables' compiled code (and their values) do not change."""
    return jax.jit(seed_map(lambda p, ctx: jnp.all(jnp.isfinite(ctx.predict(p))), (0, None), name="outputs_finite"))


@dataclass(frozen=True)
class _ShapeOnly:
    """What a method's builder (``Method.fn``) may read from the context at build time: the shape of X. Everything
    else must be read from the ``ctx`` argument of ``advance`` (compiled programs are shared
    between runs with different data, so nothing data-dependent may be closed over)."""

    X_shape: tuple

    @property
    def X(self):
        return np.empty(self.X_shape, dtype=np.int8)

    def __getattr__(self, name):
        raise AttributeError(f"a method's builder may only read ctx.X.shape, not ctx.{name}; "
                             f"read data from the ctx argument of advance(...) instead")


def _init_dimension_errors(cfg, d: int) -> list[tuple[str, str]]:
    """A given init's W (``file``, ``values``) must have the data's number of input dimensions d."""
    arrays = cfg.init.fixed()
    if arrays is None:
        return []
    W = arrays["W"]
    if W.shape[-1] == d:
        return []
    return [(cfg.init.field_of("W"), f"W has {W.shape[-1]} input dimensions (shape {list(W.shape)}), the data has "
                                     f"d = {d}")]


def config_warnings(cfg, dataset) -> list[tuple[str, str]]:
    """``(field, message)`` of what makes a valid config run, but probably not as meant: the training
    method's (``MethodParams.data_warnings``: an SGD batch larger than n) and a given init whose every
    weight is zero (an exact saddle: the gradient vanishes, nothing moves)."""
    out = cfg.train.data_warnings(dataset)
    arrays = cfg.init.fixed()
    if arrays is None:
        return out
    seeds = arrays["W"].shape[0] if arrays["W"].ndim == 3 else 1
    given = [arrays[k].reshape(seeds, -1) for k in NETS.get(cfg.model.kind).param_names if k in arrays]
    zero = [s for s in range(seeds) if not any(np.any(a[s]) for a in given)]
    if zero:
        which = "" if seeds == 1 else f" in seed(s) {', '.join(map(str, zero))} of the given {seeds}"
        out.append((cfg.init.field_of("W"), f"every initial weight is zero{which}: an exact saddle (sigma(0) = 0, so "
                                            f"the gradient vanishes) where training does not move; start from small "
                                            f"nonzero values (e.g. init.kind gaussian with a small scale)"))
    return out


def observation_points(cfg) -> np.ndarray:
    """Observation points: steps (int) for discrete methods, times for flow; first 0, last the end."""
    train, obs = cfg.train, cfg.observe
    continuous = train.entry.continuous
    end = train.end
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
    """Context arrays the objective and the training method declare in their ``needs`` (e.g. the
    population objective's target), from the dataset's context or the registered providers."""
    needs = (*OBJECTIVES.get(cfg.objective).needs, *cfg.train.entry.needs)
    return {k: dataset.context[k] if k in dataset.context else CONTEXT.get(k)(dataset, cfg) for k in needs}


@dataclass(frozen=True)
class Committed:
    """The committed part of a state: what holds after the first ``index`` observation points."""

    params: dict  # arrays with a leading seed axis
    bad: np.ndarray  # [S]: -1 healthy, else the step (time for flow) where the seed stopped
    code: np.ndarray  # [S]: 0 healthy, else why it stopped (``REASONS``)
    index: int  # number of observation points recorded
    wall_seconds: float
    table: dict  # event-driven methods: the event table so far (column -> 1-D array); {} otherwise


class SimulationState:
    """Everything needed to resume bitwise: the committed position and the records of its points.

    ``commit`` appends a point's records past the committed index, then replaces ``committed`` in one
    assignment; every reader takes records only up to ``committed.index``. So an interrupt at any
    moment (even between two records of one point) leaves records and index that agree.
    """

    def __init__(self, params: dict, bad, code, index: int = 0, records: dict | None = None,
                 wall_seconds: float = 0.0, table: dict | None = None):
        self.committed = Committed(params, np.asarray(bad), np.asarray(code), int(index), float(wall_seconds),
                                   dict(table or {}))
        self._records = {name: list(values) for name, values in (records or {}).items()}
        # event-driven methods that refine event times: the parameters at each observation point (memory only)
        self.snapshots: dict[int, dict] = {}

    params = property(lambda self: self.committed.params)
    bad = property(lambda self: self.committed.bad)
    code = property(lambda self: self.committed.code)
    index = property(lambda self: self.committed.index)
    wall_seconds = property(lambda self: self.committed.wall_seconds)
    table = property(lambda self: self.committed.table)

    @property
    def records(self) -> dict[str, list]:
        """name -> list of [S, ...] arrays, one per committed point."""
        return self.snapshot()[1]

    def snapshot(self) -> tuple[Committed, dict[str, list]]:
        """The committed position and its records, read consistently."""
        committed = self.committed
        return committed, {name: values[:committed.index] for name, values in self._records.items()}

    def commit(self, params: dict, bad: np.ndarray, code: np.ndarray, values: dict, seconds: float,
               rows: dict | None = None) -> None:
        """Record one more observation point (``values``: name -> [S, ...]) reached with ``params``, and
        the event-table ``rows`` of the interval before it (event-driven methods)."""
        before = self.committed
        for name, value in values.items():
            recorded = self._records.setdefault(name, [])
            del recorded[before.index:]  # records past the committed index belong to no point
            recorded.append(value)
        table = before.table
        if rows is not None:
            table = {k: np.concatenate([table[k], v]) if k in table else v for k, v in rows.items()}
        self.committed = Committed(params, bad, code, before.index + 1, before.wall_seconds + seconds, table)


def precision_dtype(cfg):
    """The dtype of a config's parameters and data (``precision``)."""
    return jnp.float32 if cfg.precision == "float32" else jnp.float64


def init_keys(seeds) -> np.ndarray:
    """[S, 2] uint32: the init key ``fold_in(PRNGKey(s), 1)`` of every seed (the training key is ``PRNGKey(s)`` itself),
    on the host (``twolayer.seed_keys``)."""
    return seed_keys.fold_in(seed_keys.prng_keys(seeds), 1)


def draw_params(cfg, net, d: int) -> dict:
    """The initial parameters of a validated config's seeds ({"W": [S, h, d], "v": [S, h]}, the config's precision) on
    data of input dimension d: what ``Simulation.initial_state`` starts from, drawn without building the run (its
    data context and compiled programs)."""
    return sample_seeds(cfg.init, init_keys(cfg.seed_list()), net, cfg.width(), d, precision_dtype(cfg))


def initial_params(cfg) -> dict:
    """``draw_params`` of a validated config on its own data."""
    return draw_params(cfg, NETS.get(cfg.model.kind), build_dataset(cfg.data).d)


class Simulation:
    """Build once from a validated config; ``run`` advances a state through the schedule."""

    def __init__(self, cfg):
        """Build the data, context and compiled programs of a validated config. ``ConfigError`` (a user
        error: nothing has been allocated for the run yet) when the data does not suit the problem,
        an init file's d differs from the data's, a context provider refuses the config, or the run
        would not fit in memory (``limits.check_memory``)."""
        self.cfg = cfg
        self.dtype = precision_dtype(cfg)
        self.dataset = build_dataset(cfg.data)
        self.problem = Problem.from_config(cfg)
        errors = data_errors(self.problem, self.dataset, cfg.data) + _init_dimension_errors(cfg, self.dataset.d)
        if errors:
            raise ConfigError(errors)
        check_memory(cfg, self.dataset.n, self.dataset.d)
        for field, message in config_warnings(cfg, self.dataset):
            warnings.warn(ConfigWarning(field, message), stacklevel=2)
        try:  # a provider that refuses this config (e.g. a target the model cannot realize)
            extra = context_arrays(cfg.observe.metrics, self.dataset, cfg)
        except ValueError as e:
            raise ConfigError([field_error(str(e), "observe.metrics")]) from None
        try:
            extra.update(objective_arrays(cfg, self.dataset))
        except ValueError as e:
            raise ConfigError([field_error(str(e), "objective")]) from None
        arrays = {"X": self.dataset.X, "y": self.dataset.y, **extra, **support_arrays(self.problem, self.dataset.X)}
        self.ctx = make_context(self.problem, arrays, self.dtype)
        self.method = cfg.train.entry
        self.points = observation_points(cfg)
        self.seeds = cfg.seed_list()
        self.width = cfg.width()
        self.hyper = {k: jnp.asarray(v, dtype=self.dtype) for k, v in cfg.train.hyper().items()}
        self.keys = jnp.asarray(seed_keys.prng_keys(self.seeds))
        release_compiled_programs()
        self._advance = compiled_advance(cfg.train.structure(), self.problem, self.ctx.X.shape)
        self._observe = compiled_observe(tuple(cfg.observe.metrics))
        sparse = cfg.observe.sparse
        self._observe_dense = compiled_observe(tuple(cfg.observe.dense_metrics)) if sparse else None
        self.sparse_points = sparse.points(len(self.points)) if sparse else None
        self._sparse_blank = None  # NaN stand-ins for the sparse metrics' outputs (shapes from eval_shape)
        self._outputs_finite = compiled_outputs_finite()
        try:
            spec = self.record_spec()
        except ValueError as e:  # an init that refuses this config (e.g. init.signs of the wrong length)
            raise ConfigError([field_error(str(e), "init")]) from None
        check_memory(cfg, self.dataset.n, self.dataset.d, per_point_bytes=record_bytes(spec))

    def record_spec(self, params: dict | None = None) -> dict[str, tuple[tuple, np.dtype]]:
        """What each observation point records: name -> (shape [S, ...], dtype), from the shapes alone
        (``jax.eval_shape``: nothing is computed or allocated)."""
        if params is None:
            params = self._param_shapes()
        out = jax.eval_shape(self._observe, params, self.ctx)
        return {name: (tuple(v.shape), np.dtype(v.dtype)) for name, v in out.items()}

    def _param_shapes(self) -> dict:
        """Shapes and dtypes of the initial parameters [S, ...], without drawing them."""
        one = jax.eval_shape(lambda key: INITS.get(self.cfg.init.kind).fn(
            self.cfg.init, key, self.problem.net, self.width, self.dataset.d), init_keys([0])[0])
        per_seed_file = len(one["W"].shape) == 3  # an init file that holds every seed already
        seeds = len(self.seeds)
        return {k: jax.ShapeDtypeStruct(v.shape if per_seed_file else (seeds, *v.shape), self.dtype)
                for k, v in one.items()}

    # -- time -------------------------------------------------------------------------------
    def time_of(self, point) -> float:
        """Continuous time of an observation point: t = lr * k for GD/SGD, t itself for flow."""
        return self.cfg.train.time_of(point)

    @property
    def times(self) -> np.ndarray:
        return np.array([self.time_of(p) for p in self.points])

    # -- state ------------------------------------------------------------------------------
    def initial_state(self) -> SimulationState:
        params = draw_params(self.cfg, self.problem.net, self.dataset.d)
        n = len(self.seeds)
        return SimulationState(params=params, bad=np.full(n, -1, dtype=self.bad_dtype), code=np.zeros(n, dtype=np.int64))

    @property
    def bad_dtype(self):
        """dtype of ``SimulationState.bad``: a time for continuous methods, a step otherwise."""
        return np.float64 if self.method.continuous else np.int64

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
        events = self.method.events
        for i in range(state.index, len(points)):
            started = _time.perf_counter()
            target = points[i]
            rows = None if events is None else events.empty()
            if target > position:
                out = self.advance_between(params, bad, position, target)
                params, bad, new_code = out[:3]
                code = np.where(code > 0, code, np.asarray(new_code))
                if events is not None:
                    rows = events.rows(jax.device_get(out[3]), self.seeds)
            if events is not None and events.refine:
                state.snapshots[i] = params
            finite = self._outputs_finite(params, self.ctx)
            values = self._observe_at(i, params)
            values, finite, bad_np = jax.device_get((values, finite, bad))  # one wait for the device
            bad, bad_np, code = self._stop_nonfinite_outputs(finite, bad, np.asarray(bad_np), code, target)
            recorded = {}
            for name, value in values.items():
                value = np.array(value)
                if np.issubdtype(value.dtype, np.floating):
                    value[bad_np >= 0] = np.nan  # a diverged seed has no meaningful observables
                recorded[name] = value
            position = target
            state.commit(params, bad_np, code, recorded, _time.perf_counter() - started, rows)
            if on_checkpoint is not None:
                on_checkpoint(state)
            if on_observation is not None:
                on_observation(state, i + 1, len(points))
            if np.all(bad_np >= 0):
                break
        return state

    def _observe_at(self, i: int, params) -> dict:
        """The observables at observation point ``i``: all of them, or (``observe.sparse``) only the dense
        ones away from the sparse points, with NaN in place of the sparse metrics' outputs."""
        if self.sparse_points is None or i in self.sparse_points:
            return self._observe(params, self.ctx)
        if self._sparse_blank is None:
            shapes = jax.eval_shape(compiled_observe(tuple(self.cfg.observe.sparse.metrics)), params, self.ctx)
            for name, spec in shapes.items():
                if not jnp.issubdtype(spec.dtype, jnp.floating):
                    raise ValueError(f"observe.sparse.metrics: output {name!r} is {spec.dtype}, not floating "
                                     f"(sparse outputs are NaN between their points)")
            self._sparse_blank = {k: np.full(v.shape, np.nan, dtype=v.dtype) for k, v in shapes.items()}
        return {**self._observe_dense(params, self.ctx), **self._sparse_blank}

    @staticmethod
    def _stop_nonfinite_outputs(finite, bad, bad_np, code, point):
        """Stop (code ``OUTPUTS``, at ``point``) every healthy seed whose outputs f(x) on the data are not
        all ``finite`` although its parameters are: e.g. a huge lr leaves |theta| ~ 1e297, f = inf and a
        loss of 0, which would otherwise pass for a converged run. Returns ``(bad, bad_np, code)``."""
        stopped = ~np.asarray(finite) & (bad_np < 0)
        if not stopped.any():
            return bad, bad_np, code
        bad_np = np.where(stopped, np.asarray(point, dtype=bad_np.dtype), bad_np)
        return jnp.asarray(bad_np), bad_np, np.where(stopped, OUTPUTS, code)

    def _point(self, p):
        return jnp.asarray(p, dtype=self.dtype if self.method.continuous else jnp.int64)

    # -- event-driven methods (Method.events) ---------------------------------------------------------
    def advance_between(self, params, bad, starts, stops, seeds: list[int] | None = None):
        """Advance the seeds from ``starts`` to ``stops``: ``(params, bad, code[, log])``. Event-driven methods
        take one time per seed (arrays, or scalars broadcast), e.g. to refine event times. ``seeds``: the
        indices of the seeds ``params`` holds (default: all), e.g. one seed's bracket of an event."""
        keys = self.keys if seeds is None else self.keys[np.asarray(seeds)]
        if self.method.events is None:
            return self._advance(params, keys, bad, self._point(starts), self._point(stops), self.ctx, self.hyper)
        shape = (len(self.seeds),)
        return self._advance(params, self.keys, jnp.asarray(bad), jnp.broadcast_to(self._point(starts), shape),
                             jnp.broadcast_to(self._point(stops), shape), self.ctx, self.hyper)

    def event_table(self, state: SimulationState) -> dict[str, np.ndarray] | None:
        """The event table (column -> array, one row per event, sorted by seed and time), or None for
        methods without events."""
        events = self.method.events
        if events is None:
            return None
        table = state.snapshot()[0].table or events.empty()
        order = np.lexsort((np.asarray(table["t"]), np.asarray(table["seed"])))
        return {k: np.asarray(v)[order] for k, v in table.items()}

    def observe(self, params) -> dict:
        """The configured observables at ``params`` (leading seed axis), as numpy arrays."""
        return {k: np.asarray(v) for k, v in jax.device_get(self._observe(params, self.ctx)).items()}

    # -- results ----------------------------------------------------------------------------
    def trajectory(self, state: SimulationState) -> dict[str, np.ndarray]:
        """``t``, ``step`` and one array per observable, shaped [S, T, ...] ([T, ...] for one seed)."""
        committed, records = state.snapshot()
        count = committed.index
        traj = {"t": self.times[:count]}
        traj["step"] = (np.zeros(count, dtype=np.int64) if self.method.continuous
                        else np.asarray(self.points[:count], dtype=np.int64))
        for name, values in records.items():
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
        """``(status, message)`` when seeds stopped early (``diverged`` for non-finite parameters or
        outputs, ``failed`` when the ODE solver gave up), None if every seed is healthy."""
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
            params = jax.device_get(state.params)
            big = max(float(np.max(np.abs(params[k][idx]))) for k in params)
            if reason == NONFINITE:
                loss = np.asarray(jax.device_get(jax.vmap(self.ctx.objective)(state.params)))
                messages.append(
                    f"{REASONS[reason]} at {where} for seed(s) {seeds}; at the last finite state the loss "
                    f"was {float(np.max(loss[idx])):.4g} and the largest |parameter| {big:.4g} "
                    f"(lower train.lr, or use a more stable loss)")
            elif reason == OUTPUTS and first == 0:
                messages.append(
                    f"{REASONS[reason]} at initialization for seed(s) {seeds}: the initial parameters are finite "
                    f"(largest |parameter| {big:.4g}) but the network's outputs on the data overflow "
                    f"(lower init.scale)")
            elif reason == OUTPUTS:
                messages.append(
                    f"{REASONS[reason]} by {where} for seed(s) {seeds} although the parameters stayed finite "
                    f"(largest |parameter| {big:.4g}; losses and accuracies of such a network mean nothing): "
                    f"lower train.lr")
            elif reason in (NO_SOLUTION, EVENT_LIMIT):
                table = self.event_table(state)
                details = "; ".join(filter(None, (self.method.events.details(table, s) for s in seeds)))
                limit = (" (more than 4 n h + 64 events in one observation interval, or more than two simultaneous "
                         "sliding hyperplanes for one neuron)" if reason == EVENT_LIMIT else "")
                messages.append(f"{REASONS[reason]} at {where} for seed(s) {seeds}" + (f": {details}" if details else limit))
            else:
                messages.append(
                    f"{REASONS[reason]} past {where} for seed(s) {seeds} within train.max_solver_steps = "
                    f"{self.cfg.train.max_solver_steps} steps. ReLU-type vector fields jump where a neuron crosses "
                    f"a data point's hyperplane and the flow may slide along it, which stalls adaptive solvers: "
                    f"raise train.max_solver_steps, loosen train.rtol/atol, or use method gd with a small lr")
        status = "diverged" if np.all(np.isin(code[bad >= 0], DIVERGED)) else "failed"
        return status, "; ".join(messages)
