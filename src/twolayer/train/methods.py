"""Training methods: the registry, their parameter models and the core every method builds on.

A method moves the parameters of ONE seed from one observation point to the next:
``advance(params, key, bad, start, stop, ctx, hyper) -> (params, bad, code)`` (the loop vmaps it over
seeds; an event-driven method, ``Method.events``, returns its interval's event log as a 4th value and takes
``start``/``stop`` per seed). ``start``/``stop`` are step counts for discrete methods (time t = lr * k) and times on the
method's clock for flows. ``bad`` is -1 while the seed is healthy, else the step (or time) where it
stopped; ``code`` says why (``STOP_REASONS``). A stopped seed stays frozen at its last good state.
``hyper`` holds the traced scalar values (``MethodParams.hyper``), so runs that differ only in values
share one compiled program.

Each method is one file (``gd.py``, ``sgd.py``, ``flow.py``, ``flow_log.py``, ``gd_paper.py``,
``flow_exact.py``; the event-driven integrator that flow_exact and flow_log share is ``event_flow.py``) that
registers a ``Method``: its builder ``fn(structure, shape) -> advance`` and its own pydantic parameter
model, chosen by ``train.method`` the way ``data`` and ``init`` sections are chosen by ``kind``. The
builder is called once per distinct (method, ``MethodParams.structure()``, problem, data shape) and
cached; at build time ``shape`` exposes only ``shape.X.shape``, so data must be read from the ``ctx``
given to ``advance``. Two builders own the bookkeeping methods share: ``discrete_advance`` (a
while_loop of steps that stops a seed at its first non-finite state) and ``ode_advance`` (a diffrax
solve with the post-solve checks).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import jax
import jax.numpy as jnp
from jax import lax
from pydantic import ConfigDict, Field, field_validator, model_validator

from twolayer.clocks import CLOCKS, Clock
from twolayer.fields import StrictNumbers, field_errors
from twolayer.limits import MAX_STEPS
from twolayer.registry import Entry, Registry

NONFINITE, SOLVER = 1, 2
NO_SOLUTION, EVENT_LIMIT = 4, 5  # event-driven flows (``train/event_flow.py``); 3 is the loop's OUTPUTS
STOP_REASONS = {NONFINITE: "parameters became non-finite (NaN/inf)", SOLVER: "the ODE solver could not advance",
                NO_SOLUTION: "the gradient flow has no Caratheodory solution for this sigma'(0) (Min et al. App. E.3)",
                EVENT_LIMIT: "the event-driven flow exceeded its event capacity"}


# -- parameters -----------------------------------------------------------------------------------

def too_many_steps(steps: float) -> str:
    """The message for a step count beyond what t = lr k can count exactly (2^53)."""
    return (f"{steps:.4g} steps is more than a run can count: at most 2^53 = {MAX_STEPS:.4g} (t = lr * k stays exact "
            f"in float64 up to there; at 1 microsecond a step that is already 285 years)")


def math_steps(time: float, lr: float) -> int:
    """Number of steps of size lr that reach time (t = lr * k), robust to round-off; ValueError when
    that is not a countable number of steps (``too_many_steps``)."""
    steps = time / lr
    if not math.isfinite(steps) or steps > MAX_STEPS:
        raise ValueError(f"train.time / train.lr = {steps:.4g}: " + too_many_steps(steps))
    return int(math.ceil(steps - 1e-9))


# The resolved ``train`` section keeps the keys, order and placeholder values of twolayer 0.1, where one flat
# model held every method's parameters: a key the method does not use holds the value 0.1 stored for it, so
# stored runs keep their config hash (and run id), and a resolved config validates again.
LAYOUT_V01 = {"method": None, "lr": None, "steps": None, "time": None, "batch_size": None, "layers": "both",
              "weight_decay": 0.0, "solver": "tsit5", "rtol": 1e-8, "atol": 1e-10, "max_solver_steps": 100_000}


class MethodParams(StrictNumbers):
    """The ``train`` section: ``method`` and the parameters every method has (``layers``,
    ``weight_decay``); each method's model adds its own. Frozen and strict: a parameter the method does
    not use is an error that says so (unless it holds the placeholder of ``LAYOUT_V01``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: str
    layers: Literal["both", "first"] = "both"
    weight_decay: float = Field(default=0.0, ge=0)

    # traced values: not part of a compiled program's identity (``structure``)
    VALUES: ClassVar[tuple[str, ...]] = ("weight_decay",)
    # messages for parameters of other methods that this one does not use ({method}: this method's name)
    UNUSED: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _parameters_of_other_methods(cls, data: Any):
        """A parameter another method has but this one does not is an error naming both, unless it is None
        (not set) or holds its ``LAYOUT_V01`` placeholder (as resolved configs do): then it is dropped."""
        if not isinstance(data, dict):
            return data
        data, errors = dict(data), []
        for key in list(data):
            if key in cls.model_fields:
                continue
            placeholder = key in LAYOUT_V01 and data[key] == LAYOUT_V01[key] and type(data[key]) is type(LAYOUT_V01[key])
            if data[key] is None or placeholder:  # not set (a sweep's zip may say None), or a resolved placeholder
                del data[key]
                continue
            owners = [name for name, m in METHODS.items() if key in m.params.model_fields]
            if owners:
                default = (f"is not used by method {data.get('method')} (it is a parameter of method "
                           f"{', '.join(owners)})")
                errors.append((key, cls.UNUSED.get(key, default).format(method=data.get("method"))))
        if errors:
            raise field_errors(cls.__name__, errors)
        return data

    def resolved(self) -> dict:
        """The section as stored and hashed: ``LAYOUT_V01``'s keys in its order (placeholders for the
        parameters this method does not have), then the method's own further parameters."""
        dump = self.model_dump(mode="json")
        return {**{k: dump.get(k, v) for k, v in LAYOUT_V01.items()}, **dump}

    @property
    def entry(self) -> Method:
        return METHODS.get(self.method)

    @property
    def clock(self) -> str:
        """The name of the method's time axis in ``twolayer.clocks.CLOCKS``."""
        return self.entry.clock

    @property
    def end(self) -> float:
        """The end of the run on the method's axis: steps for discrete methods, time for flows."""
        raise NotImplementedError

    def time_of(self, point) -> float:
        """Time of an observation point on the method's clock (t = lr * k for GD and SGD)."""
        raise NotImplementedError

    def hyper(self) -> dict[str, float]:
        """The traced scalar values an ``advance`` reads (``hyper["lr"]``, ``hyper["weight_decay"]``)."""
        return {"lr": 0.0, "weight_decay": self.weight_decay}

    def structure(self) -> MethodParams:
        """These parameters with their traced values cleared: the key of their compiled program."""
        return self.model_copy(update={k: None for k in self.VALUES})

    def data_warnings(self, dataset) -> list[tuple[str, str]]:
        """``(field, message)`` of parameters that run on this data, but probably not as meant."""
        return []


class DiscreteParams(MethodParams):
    """Parameters of the discrete methods: a step size ``lr`` and a length ``steps`` or ``time``
    (``time`` is resolved to ``steps = ceil(time / lr)``, t = lr * k)."""

    lr: float | None = Field(default=None, gt=0)
    steps: int | None = Field(default=None, ge=0)
    time: float | None = Field(default=None, ge=0)

    VALUES: ClassVar[tuple[str, ...]] = ("lr", "steps", "time", "weight_decay")
    UNUSED: ClassVar[dict[str, str]] = {"batch_size": "is only used by method sgd"}

    @field_validator("steps")
    @classmethod
    def _countable_steps(cls, v):
        if v is not None and v > MAX_STEPS:
            raise ValueError(too_many_steps(v))
        return v

    @model_validator(mode="wrap")
    @classmethod
    def _resolve_time(cls, data, handler):
        params = handler(data)
        if params.lr is None:
            raise field_errors(cls.__name__, [("lr", f"is required for method {params.method} (a positive step size)")])
        if (params.steps is None) == (params.time is None):
            raise field_errors(cls.__name__, [("steps", "give exactly one of train.steps or train.time "
                                                        "(time = lr * steps)")])
        if params.time is not None:
            return handler({**params.model_dump(), "steps": math_steps(params.time, params.lr), "time": None})
        return params

    @property
    def end(self) -> int:
        return int(self.steps)

    def time_of(self, point) -> float:
        return float(point) * float(self.lr)

    def hyper(self) -> dict[str, float]:
        return {"lr": self.lr, "weight_decay": self.weight_decay}


class ODEParams(MethodParams):
    """Parameters of the flows: an end ``time`` and an adaptive diffrax solver."""

    time: float | None = Field(default=None, ge=0)
    solver: Literal["tsit5", "dopri5", "dopri8", "heun"] = "tsit5"
    rtol: float = Field(default=1e-8, gt=0)
    atol: float = Field(default=1e-10, gt=0)
    max_solver_steps: int = Field(default=100_000, gt=0, le=2**62)  # per observation interval

    VALUES: ClassVar[tuple[str, ...]] = ("time", "weight_decay")
    TIME_DOC: ClassVar[str] = "the ODE end time"
    UNUSED: ClassVar[dict[str, str]] = {
        "lr": "is not used by method {method} (an adaptive solver picks its steps)",
        "steps": "is not used by method {method}; give train.time",
        "batch_size": "is only used by method sgd",
    }

    @model_validator(mode="after")
    def _needs_time(self):
        if self.time is None:
            raise field_errors(type(self).__name__, [("time", f"is required for method {self.method} ({self.TIME_DOC})")])
        return self

    @property
    def end(self) -> float:
        return float(self.time)

    def time_of(self, point) -> float:
        return float(point)


class EventLog:
    """What an event-driven method's ``advance`` returns as its 4th value, and how the loop reads it: the
    per-interval log -> table rows (``rows``), an empty table (``empty``), trajectory arrays derived from the
    table (``derived``), what a failed seed's stop message adds (``details``) and whether trajectory events
    are refined to solver accuracy after the run (``refine``). ``columns``: the table's columns."""

    columns: ClassVar[tuple[str, ...]] = ()
    refine: ClassVar[bool] = False

    def rows(self, log: dict, seeds: list[int]) -> dict:
        """Table rows (column -> 1-D numpy array) of one interval's log (leading seed axis)."""
        raise NotImplementedError

    def empty(self) -> dict:
        """A table with no rows."""
        raise NotImplementedError

    def derived(self, table: dict, seeds: list[int], times) -> dict:
        """Trajectory arrays [S, T] computed from the table at the observation times."""
        return {}

    def details(self, table: dict, seed: int) -> str:
        """What the stop message of a failed seed adds (the event where it failed)."""
        return ""


# -- the registry -----------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Method(Entry):
    """A registered training method: ``fn(structure, shape) -> advance`` (the builder), its parameter
    model ``params``, whether its axis is ``continuous`` (times, not steps) and its ``clock``
    (``twolayer.clocks.CLOCKS``)."""

    params: type[MethodParams]
    continuous: bool = False
    clock: str = "t"
    # event-driven methods (``train/event_flow.py``): ``events`` describes the event log that ``advance`` returns
    # as a 4th value (``EventLog``); such an advance takes its start and stop per seed
    events: EventLog | None = None
    # cross-section config checks: ``config_errors(cfg) -> [(field, message)]`` (e.g. the activations it needs)
    config_errors: Callable | None = None
    # XLA options of the advance program on the CPU, as (name, value) pairs (``jax.jit(compiler_options=...)``)
    cpu_compiler_options: tuple[tuple[str, object], ...] = ()


METHODS: Registry[Method] = Registry("train.method")


def register_method(name: str, params: type[MethodParams], *, continuous: bool = False, clock: str = "t",
                    needs: tuple[str, ...] = (), nets: tuple[str, ...] = (), doc: str = "",
                    events: EventLog | None = None, config_errors: Callable | None = None,
                    cpu_compiler_options: tuple[tuple[str, object], ...] = ()):
    """Decorator: register a builder ``fn(structure, shape) -> advance`` as the method ``name``."""

    def decorator(build):
        METHODS.register(name, Method(name=name, fn=build, doc=doc or (build.__doc__ or "").strip(), needs=tuple(needs),
                                      nets=tuple(nets), params=params, continuous=continuous, clock=clock,
                                      events=events, config_errors=config_errors,
                                      cpu_compiler_options=tuple(cpu_compiler_options)))
        return build

    return decorator


def clock_of(config: dict) -> Clock:
    """The clock of a resolved config's method (``config["train"]["method"]``; gd when absent)."""
    return CLOCKS.get(METHODS.get((config.get("train") or {}).get("method", "gd")).clock)


# -- shared bookkeeping --------------------------------------------------------------------------------

def tree_all_finite(tree):
    """Whether every entry of every leaf of a pytree is finite (a traced boolean)."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(tree)]))


def tree_where(cond, a, b):
    """``where(cond, a, b)`` leaf by leaf over two pytrees of the same structure."""
    return jax.tree_util.tree_map(lambda x, y: jnp.where(cond, x, y), a, b)


def descent_direction(loss_fn, params, train, hyper, net):
    """-(s grad L + weight_decay * theta) on the trained layers, zero on frozen ones, where
    s = net.time_scale (1 for two_layer; m for mean_field, multi-index paper eq. 3)."""
    grads = jax.grad(loss_fn)(params)
    scale = net.time_scale(params)

    def direction(name, p, g):
        if name == "v" and train.layers == "first":
            return jnp.zeros_like(p)
        return -(scale * g + hyper["weight_decay"] * p)

    return {k: direction(k, params[k], grads[k]) for k in params}


CHUNK_STEPS = 64  # steps of a discrete method between two finiteness checks (``discrete_advance(absorbing=True)``)
CHUNK_UNROLL = 4  # steps per iteration of the compiled loop over a chunk


def discrete_advance(step: Callable, init_aux: Callable, *, absorbing: bool = False) -> Callable:
    """``advance`` of a discrete method: iterate ``step(p, k, aux, key, ctx, hyper) -> (p, aux)`` from step
    ``start`` to ``stop`` in a while_loop; a seed whose next state is not finite stops there (``bad`` =
    the step, code ``NONFINITE``) and keeps its last finite state. ``init_aux(start, key, ctx)`` is the
    loop's extra state at ``start`` (SGD's permutation), rebuilt from the step alone so resume is exact.

    ``absorbing``: the method promises that a non-finite state never leads back to a finite one (true of
    every update ``theta + lr * d``: inf or NaN plus anything stays inf or NaN). Then the steps run in
    chunks of ``CHUNK_STEPS`` with no per-step check or select, unrolled ``CHUNK_UNROLL`` times, and the
    state is checked once per chunk; a chunk that ends non-finite is rolled back and stepped again with
    the per-step check, which finds the same first non-finite step. Same steps on the same values, so the
    same bits (tests/train/test_loop_chunks.py); on the toy GD step the per-step bookkeeping was about a
    sixth of the step (benchmarks/step_speed.py, diagnostics)."""

    def checked(p, k, b, aux, stop, key, ctx, hyper):
        def cond(c):
            return (c[1] < stop) & (c[2] < 0)

        def body(c):
            p, k, b, aux = c
            new, aux = step(p, k, aux, key, ctx, hyper)
            ok = tree_all_finite(new)
            return tree_where(ok, new, p), jnp.where(ok, k + 1, k), jnp.where(ok, b, k + 1), aux

        return lax.while_loop(cond, body, (p, k, b, aux))

    def chunks(p, k, b, aux, stop, key, ctx, hyper):
        """Whole chunks while they fit before ``stop``; a chunk that ends non-finite is undone, and the loop
        ends there (``ok`` False) for the per-step loop to step through it again."""

        def cond(c):
            return (c[1] + CHUNK_STEPS <= stop) & (c[2] < 0) & c[4]

        def body(c):
            p, k, b, aux, _ = c
            new, new_aux = lax.fori_loop(0, CHUNK_STEPS, lambda i, s: step(s[0], k + i, s[1], key, ctx, hyper),
                                         (p, aux), unroll=CHUNK_UNROLL)
            ok = tree_all_finite(new)
            return (tree_where(ok, new, p), jnp.where(ok, k + CHUNK_STEPS, k), b, tree_where(ok, new_aux, aux), ok)

        p, k, b, aux, _ = lax.while_loop(cond, body, (p, k, b, aux, jnp.asarray(True)))
        return p, k, b, aux

    def advance(params, key, bad, start, stop, ctx, hyper):
        state = (params, start, bad, init_aux(start, key, ctx))
        if absorbing:
            state = chunks(*state, stop, key, ctx, hyper)
        p, _, b, _ = checked(*state, stop, key, ctx, hyper)
        return p, b, jnp.where(b >= 0, NONFINITE, 0)

    return advance


def flow_solvers():
    """The adaptive diffrax solvers selectable with ``train.solver``."""
    import diffrax

    return {"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5, "dopri8": diffrax.Dopri8, "heun": diffrax.Heun}


def ode_advance(train: ODEParams, vector_field: Callable, controller: Callable, event=None,
                stopped_ok: bool = False) -> Callable:
    """``advance`` of a flow: solve d theta/dt = ``vector_field(t, theta, (ctx, hyper))`` from ``start`` to
    ``stop`` with ``train.solver`` and ``controller(params, start, stop, hyper)`` (a diffrax step-size controller,
    built per interval), saving only the end. A seed whose solve did not succeed (``max_solver_steps``
    exhausted, a stall) stops at ``start`` with code ``SOLVER``; one whose end state is not finite with
    ``NONFINITE``. With ``event`` (a ``diffrax.Event``) the solve may end early; ``stopped_ok`` counts that
    as success (the seed is then frozen, healthy, at the event)."""
    import diffrax

    solver = flow_solvers()[train.solver]()
    term = diffrax.ODETerm(vector_field)

    def advance(params, key, bad, start, stop, ctx, hyper):
        sol = diffrax.diffeqsolve(
            term, solver, t0=start, t1=stop, dt0=None, y0=params, args=(ctx, hyper),
            stepsize_controller=controller(params, start, stop, hyper), saveat=diffrax.SaveAt(t1=True), event=event,
            max_steps=train.max_solver_steps, throw=False,
        )
        new = jax.tree_util.tree_map(lambda y: y[-1], sol.ys)
        finite = tree_all_finite(new)
        done = sol.result == diffrax.RESULTS.successful
        if stopped_ok:
            done = done | (sol.result == diffrax.RESULTS.event_occurred)
        ok = done & finite & (bad < 0)
        failed_now = (bad < 0) & ~ok
        code = jnp.where(failed_now, jnp.where(finite, SOLVER, NONFINITE), 0)
        return tree_where(ok, new, params), jnp.where(failed_now, start, bad), code

    return advance
