"""Event-driven gradient flow of a two-layer net with a piecewise-linear activation, integrated exactly
across activation boundaries, one independent event loop per seed: the integrator of methods
``flow_exact`` (``train/flow_exact.py``, the plain clock t) and ``flow_log`` (``train/flow_log.py``, the log
clock tau = ln(1 + t)).

Between changes of the activation pattern the field is smooth (``train/kinks.py``); it is integrated
with the pattern frozen as slopes D by an adaptive explicit Runge-Kutta pair (``train.solver``: tsit5,
dopri5 or dopri8; the tableaux and dense output of diffrax's solvers), error per component
``atol + rtol (max(|y0|, |y1|) + 1e-3 rms(y0))``, I step-size control (PI for flow_log). After an accepted
step the pre-activations z_ij = <x_i, w_j> of every hyperplane group are evaluated on the step's dense
output at 8 Chebyshev-Lobatto nodes, where a bound on the step's motion, |dz_ij| <= |h| |x_i| sum_s max_k |B_ks|
|F_s,j|, leaves a pair that could reach its plane (``may_cross``; elsewhere no node can be past it, so skipping
the scan changes nothing); the first node where a pair z_ij is past its plane by more than
1.5 ``EVENT_TOL |x_i| |w_j|`` brackets its crossing, which is located by Illinois (regula falsi) on the
step's dense-output polynomial. The step is cut there: the next iterations re-step from the step's
start with the Runge-Kutta method, the step length found by regula falsi (Illinois) in the bracket
[0, first node past the root] on the solution itself (at most ``LANDING_STEPS``), until the pair is
1.25-1.75 EVENT_TOL |x_i| |w_j| past its plane (so |z_ij| <= 2e-12 |x_i| |w_j| at the reported time: a time
tolerance of 2e-12 over the neuron's relative normal speed, on top of the solver's own error).
Releases of slides are located by bisection on the dense output and re-stepped to
likewise.
At the event the two one-sided fields decide (``kinks.classify``): cross, slide (Filippov, on the
plane; w_j's velocity is projected onto it and w_j snapped back after every step), non-unique
(the regular stay-put solution) or no Caratheodory solution (the seed ends ``failed``). A slide is
released when its one-sided fields point the same way again (located by bisection on the dense
output). Every event is written to the run's event table (``events.npz``).

Seeds are independent: each runs its own ``while_loop`` of iterations of one Runge-Kutta step each (a
trial step, or a re-step to an event), vmapped over seeds, so an event costs its seed a few iterations
while the other seeds keep stepping. The rarer, more expensive parts (the node scan and root finding, release
bisection, classification) sit in inner loops that run only in iterations where some seed needs them
(``run_if``: a loop of at most one trip, a conditional that survives vmap and XLA's loop-invariant code motion).

At the start of every observation interval the modes are re-derived from the parameters (pairs with
|z_ij| <= ON_PLANE_TOL |x_i| |w_j| are classified again), so nothing beyond the parameters is carried
between intervals and resumed runs end bitwise as uninterrupted ones. Events found at t = 0 (an
initial condition on a hyperplane: App. E.3, E.4) are recorded; re-derivations later are silent.

Limits: at most ``kinks.MAX_SLIDES`` simultaneous Filippov slides per neuron and ``4 n h + 64`` events
per observation interval (both end the seed ``failed`` with EVENT_LIMIT); ``two_layer`` nets,
empirical objective.

The pieces, each a function of its inputs (``tests/train/test_event_flow.py`` tests them alone):

- ``State``: the typed loop state of one seed (a NamedTuple: the ``while_loop`` carry); ``EventRows`` its
  event buffer, ``Bracket`` the landing's bracket;
- ``Options`` (what a compiled program fixes) and ``Setup`` (what one advance fixes: data, hyperplane
  groups, kink, field, tolerances);
- the root finder, written once: ``illinois_point`` / ``illinois_update`` (regula falsi, Illinois), used by
  the event location on the dense output (``illinois_pairs``, for the earliest root of several pairs) and
  by the landing on the Runge-Kutta solution (``land``, one update per re-step);
- the step controller ``StepControl`` (error ratio, accept/reject and the next step, the initial step);
  diffrax supplies the tableaux and dense output (``Tableau``) but not the controller: ``StepControl``
  says where and why;
- event location: ``locate_crossing`` (``may_cross``, the screen; ``scan_nodes``, the scan and root),
  ``locate_release`` (``bisect_release``), ``pair_margin``; ``run_if`` runs a piece only where a seed needs it;
- kink decisions: ``new_modes`` (the decision table over ``kinks.classify``), ``decide``, ``record``;
- the loop: ``iterate`` (one Runge-Kutta step: ``schedule_event``, ``land``, ``decide_landed``,
  ``check_status``), ``integrate`` (the loop with its event chunks) and ``build_advance``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.flatten_util import ravel_pytree

from twolayer.losses import reduce_losses
from twolayer.numerics import while_loop
from twolayer.problem import OBJECTIVES
from twolayer.train import kinks
from twolayer.train.methods import EVENT_LIMIT, NO_SOLUTION, NONFINITE, SOLVER, EventLog

EVENT_TOL = 1e-12  # a crossing is located where the pair is past its plane by EVENT_TOL |x_i| |w_j| (+-50%)
ON_PLANE_TOL = 1e-10  # at an interval start, |z_ij| <= this * |x_i| |w_j| is on the hyperplane
# rtol and EVENT_TOL are at least PRECISION_FLOOR eps (ON_PLANE_TOL 100x that): no change in float64 (64 eps =
# 1.4e-14), ~1e-5 in float32, where train.rtol's default 1e-8 is below round-off and no step would be accepted
PRECISION_FLOOR = 64
LANDING_STEPS = 8  # landing iterations: regula falsi on the Runge-Kutta re-step length, after the dense-output root
CHUNK, CHUNK_FLUSH = 64, 32  # events one classification may record; the step loop's buffer is flushed at 32
ILLINOIS_STEPS = 40  # regula falsi (Illinois) on each crossing pair's dense-output polynomial
ROOT_BRACKET = 1e-7  # the dense-output root is bracketed to this fraction of the step; the landing iterations on
# the solution itself then put the crossing pair in its window
BISECTIONS = 45  # releases: bisection on the dense output of one step, to 2^-45 of the step
NODES = 8  # Chebyshev-Lobatto nodes for the sign scan (the dense outputs have degree <= 6)
RMS_FLOOR = 1e-3
SOLVER_ORDERS = {"tsit5": 5, "dopri5": 5, "dopri8": 8}
NETS = ("two_layer",)  # the nets it integrates (f = sum_j v_j sigma(<w_j, x>)): the methods' ``nets`` record field
SAFETY, FACTOR_MIN, FACTOR_MAX = 0.9, 0.2, 10.0


# -- Runge-Kutta tableaux with dense output ---------------------------------------------------------------

@dataclass(frozen=True)
class Tableau:
    """An explicit FSAL Runge-Kutta pair: A [S, S] (lower), b, b_error, c [S], order, and the dense-output
    weights B(theta) [S] (y(t0 + theta h) = y0 + h B(theta) . F) from diffrax's interpolation."""

    name: str
    A: np.ndarray
    b: np.ndarray
    b_error: np.ndarray
    c: np.ndarray
    order: int

    @property
    def stages(self) -> int:
        return len(self.b)

    def dense(self, theta):
        """B(theta) [..., S] for theta of any shape (linear in the stage derivatives)."""
        import diffrax

        cls = {"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5, "dopri8": diffrax.Dopri8}[self.name]
        S = self.stages
        dtype = jnp.result_type(theta)
        interp = cls.interpolation_cls(t0=jnp.zeros((), dtype), t1=jnp.ones((), dtype), y0=jnp.zeros(S, dtype),
                                       y1=jnp.asarray(self.b, dtype), k=jnp.eye(S, dtype=dtype))
        flat = jnp.reshape(theta, (-1,))
        return jax.vmap(interp.evaluate)(flat).reshape(jnp.shape(theta) + (S,))


def tableau(name: str) -> Tableau:
    """The ``Tableau`` of diffrax's solver ``name`` (one of ``SOLVER_ORDERS``)."""
    import diffrax

    if name not in SOLVER_ORDERS:
        raise ValueError(f"train.solver {name!r} has no dense output here; use one of {', '.join(SOLVER_ORDERS)}")
    tab = {"tsit5": diffrax.Tsit5, "dopri5": diffrax.Dopri5, "dopri8": diffrax.Dopri8}[name].tableau
    S = len(tab.b_sol)
    A = np.zeros((S, S))
    for m, row in enumerate(tab.a_lower):
        A[m + 1, : len(row)] = row
    c = np.concatenate([[0.0], np.asarray(tab.c, dtype=np.float64)])
    b = np.asarray(tab.b_sol, dtype=np.float64)
    assert c[-1] == 1.0 and b[-1] == 0.0 and np.allclose(A[-1, :-1], b[:-1]), "expected an FSAL pair"
    return Tableau(name, A, b, np.asarray(tab.b_error, dtype=np.float64), c, SOLVER_ORDERS[name])


def rk_step(field, tab: Tableau, t, y, F0, h):
    """One step of size h (any sign, 0 allowed): (y1, error estimate, stage derivatives F [S, P]); the
    last stage is the field at (t + h, y1) (FSAL)."""
    F = [F0]
    for m in range(1, tab.stages):
        incr = sum(float(a) * F[l] for l, a in enumerate(tab.A[m, :m]) if a != 0.0)
        F.append(field(t + float(tab.c[m]) * h, y + h * incr))
    F = jnp.stack(F)
    return y + h * jnp.asarray(tab.b, y.dtype) @ F, h * jnp.asarray(tab.b_error, y.dtype) @ F, F


# -- what differs between the plain clock (flow_exact) and the log clock (flow_log) ----------------------

@dataclass(frozen=True)
class FlowClock:
    """``out_grad(problem, y) -> (t, f) -> g``: g = -dL/df times the clock's speed (positive, so it never
    changes a decision); ``stop(params, ctx, t) -> bool`` ends a seed's integration early (healthy);
    (pcoeff, icoeff) of the step-size controller; whether the error floor's rms is taken at each step's
    start or at the interval's."""

    out_grad: callable
    stop: callable | None = None
    pcoeff: float = 0.0
    icoeff: float = 1.0
    rms_per_step: bool = True


def plain_out_grad(problem, y):
    """g = -dL/df for L = sum or mean of l(y_i, f_i) (dt: the gradient-flow clock)."""
    def loss(f):
        return reduce_losses(problem.loss.per_sample(y, f), problem.reduction)

    grad = jax.grad(loss)
    return lambda t, f: -grad(f)


PLAIN = FlowClock(plain_out_grad)


# -- the per-seed event-driven integrator ---------------------------------------------------------------

def materialize(tree, one):
    """``tree`` computed once and stored: a loop whose trip count (``one``, a traced 1) XLA cannot know is a
    fusion boundary. Without it XLA:CPU fuses a whole classification into each element of a consumer (a
    gather, a broadcast) and recomputes it there, 10-100x the cost. (optimization_barrier is dropped on CPU
    before fusion.)"""
    return lax.while_loop(lambda s: s[0] < one, lambda s: (s[0] + 1, s[1]), (jnp.zeros((), one.dtype), tree))[1]


def first_min(v, axis=0):
    """argmin (first index) by two plain reductions: XLA:CPU runs the variadic reduce of jnp.argmin as a
    scalar loop, 10x slower at these sizes."""
    idx = jnp.arange(v.shape[axis]).reshape([-1 if a == axis else 1 for a in range(v.ndim)])
    return jnp.min(jnp.where(v == jnp.min(v, axis=axis, keepdims=True), idx, v.shape[axis]), axis=axis).astype(jnp.int32)


def first_true(mask, axis=0):
    """Index of the first True along ``axis`` (the length where none)."""
    return first_min(jnp.where(mask, 0, 1), axis=axis)


def select(pred, a, b):
    """``a`` where ``pred``, else ``b``, leaf by leaf (two pytrees of one structure, e.g. two ``State``)."""
    return jax.tree_util.tree_map(lambda x, y: jnp.where(pred, x, y), a, b)


def run_if(pred, fn, operand, default):
    """``fn(operand)`` where ``pred``, else ``default`` (a pytree of ``fn``'s output structure), as a loop of at most
    one trip: vmapped over seeds it runs once where some seed needs it and not at all where none does (a
    ``lax.cond`` becomes a select of both branches under vmap). The operand travels in the loop's carry and the body
    replaces it by a value derived from the result, so that XLA cannot hoist ``fn`` out of the loop as loop-invariant
    code (it would then run on every call, needed or not)."""

    def body(c):
        _, x, _ = c
        out = fn(x)
        token = jax.tree_util.tree_leaves(out)[0].reshape(-1)[0]
        x = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(token.astype(a.dtype), a.shape), x)
        return jnp.asarray(False), x, out

    return lax.while_loop(lambda c: c[0], body, (jnp.asarray(pred), operand, default))[2]


def _chebyshev_lobatto(count: int) -> np.ndarray:
    return 0.5 * (1.0 - np.cos(np.pi * np.arange(count) / (count - 1)))


# -- regula falsi (Illinois): the root finder of the event location and of the landing ---------------------------

class Bracket(NamedTuple):
    """A bracket [lo, hi] of a root of f with f >= 0 at lo and f < 0 at hi, as regula falsi (Illinois) keeps it:
    ``f_lo``, ``f_hi`` the values it interpolates (halved at an end that stays while the other end moves twice in a
    row), ``side`` the end that moved last (-1 hi, +1 lo, 0 neither yet)."""

    lo: jax.Array
    hi: jax.Array
    f_lo: jax.Array
    f_hi: jax.Array
    side: jax.Array


def illinois_point(b: Bracket):
    """The next point to measure: the root of the secant through (lo, f_lo) and (hi, f_hi), or the midpoint where
    that falls outside (lo, hi) (equal values, rounding)."""
    x = b.hi - b.f_hi * (b.hi - b.lo) / jnp.where(b.f_hi != b.f_lo, b.f_hi - b.f_lo, -1.0)
    return jnp.where((x > b.lo) & (x < b.hi), x, 0.5 * (b.lo + b.hi))


def illinois_update(b: Bracket, x, f_x, below) -> Bracket:
    """The bracket once f was measured at x in (lo, hi): x replaces hi where ``below`` (f(x) < 0, or what the caller
    counts as past the root), else lo. An end that moves twice in a row halves the value kept at the other end
    (Illinois), so the bracket closes from both sides (plain regula falsi keeps one end for ever on a convex f)."""
    lo, f_lo = jnp.where(below, b.lo, x), jnp.where(below, b.f_lo, f_x)
    hi, f_hi = jnp.where(below, x, b.hi), jnp.where(below, f_x, b.f_hi)
    f_lo = jnp.where(below & (b.side < 0), 0.5 * f_lo, f_lo)
    f_hi = jnp.where(~below & (b.side > 0), 0.5 * f_hi, f_hi)
    return Bracket(lo, hi, f_lo, f_hi, jnp.where(below, -1, 1).astype(b.side.dtype))


# -- the step-size controller ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class StepControl:
    """Error control of an embedded Runge-Kutta pair: I control (``expo_p`` = 0) or PI control, Hairer, Norsett &
    Wanner I, II.4 and Soderlind's form as diffrax writes it: factor = SAFETY ratio^-expo_i prev_ratio^expo_p.

    Not diffrax's ``PIDController``, whose rules differ in four places that change outputs (bitwise identity with
    the integrator's reference runs is kept; ``tests/train/test_event_flow.py`` checks that the two agree where the
    rules coincide): (1) the error of component i is measured against atol + rtol (max(|y0_i|, |y1_i|) + 1e-3
    rms(y)), a floor relative to the whole parameter vector, inside the rtol term (diffrax: atol + rtol max(...));
    (2) a step is accepted at ratio <= 1 (diffrax: < 1); (3) an accepted step may shrink the next one down to
    FACTOR_MIN (diffrax: a factor >= 1 after an accepted step) and a rejected one keeps at most its size (diffrax:
    at most SAFETY); (4) the re-steps that land on an event are not controller steps: they leave the step size and
    the controller's memory alone, which diffrax's ``adapt_step_size`` cannot be told. ``initial_step`` is the
    first estimate of Hairer & Wanner's algorithm only (diffrax's private ``_select_initial_step`` adds the
    second-derivative estimate, one more field evaluation, and an absolute fallback of 1e-6 instead of 1e-6 of the
    interval)."""

    rtol: float
    atol: float
    expo_i: float  # (icoeff + pcoeff) / order
    expo_p: float  # pcoeff / order

    def error_ratio(self, err, y0, y1, rms):
        """rms_i(err_i / (atol + rtol (max(|y0_i|, |y1_i|) + RMS_FLOOR rms))): the step is acceptable at <= 1."""
        scale = self.atol + self.rtol * (jnp.maximum(jnp.abs(y0), jnp.abs(y1)) + RMS_FLOOR * rms)
        return jnp.sqrt(jnp.mean((err / scale) ** 2))

    def adapt(self, ratio, prev_inv, ok, trial):
        """(accept, factor, inv) for a step of error ``ratio`` (``ok``: ratio and the solution are finite; ``trial``:
        an ordinary step, not a landing re-step): the next step is ``factor`` times this one, within [FACTOR_MIN,
        FACTOR_MAX] after an accepted step and [FACTOR_MIN, 1] after a rejected one (FACTOR_MIN when not ``ok``);
        inv = 1/ratio is the controller's memory (``prev_inv``) once the step is accepted."""
        accept = trial & ok & (ratio <= 1.0)
        inv = 1.0 / jnp.maximum(ratio, 1e-10)
        factor = SAFETY * inv**self.expo_i * prev_inv ** (-self.expo_p)
        factor = jnp.where(ok, jnp.clip(factor, FACTOR_MIN, jnp.where(accept, FACTOR_MAX, 1.0)), FACTOR_MIN)
        return accept, factor, inv

    def initial_step(self, y0, F0, rms, span):
        """Hairer & Wanner's first estimate: 1% of |y0| / |f(y0)| in the error norm, within the interval ``span``
        (1e-6 of it where either norm is below 1e-5)."""
        scale0 = self.atol + self.rtol * (jnp.abs(y0) + RMS_FLOOR * rms)
        d0 = jnp.sqrt(jnp.mean((y0 / scale0) ** 2))
        d1 = jnp.sqrt(jnp.mean((F0 / scale0) ** 2))
        h0 = jnp.where((d0 > 1e-5) & (d1 > 1e-5), 0.01 * d0 / jnp.where(d1 > 0, d1, 1.0), 1e-6 * span)
        return jnp.minimum(h0, span)


# -- the loop state ---------------------------------------------------------------------------------------------

class EventRows(NamedTuple):
    """Columns of an event buffer: time, neuron, point (its group's first), kind, side afterwards, Filippov lam."""

    t: jax.Array
    neuron: jax.Array
    point: jax.Array
    kind: jax.Array
    side: jax.Array
    lam: jax.Array

    @staticmethod
    def zeros(size: int, dtype) -> EventRows:
        return EventRows(jnp.zeros(size, dtype), jnp.zeros(size, jnp.int32), jnp.zeros(size, jnp.int32),
                         jnp.zeros(size, jnp.int8), jnp.zeros(size, jnp.int8), jnp.zeros(size, dtype))


class State(NamedTuple):
    """The carry of one seed's event loop (``lax.while_loop``, vmapped over seeds)."""

    t: jax.Array  # time on the clock
    y: jax.Array  # the raveled parameters (W, v)
    F0: jax.Array  # the field at (t, y) (FSAL)
    h: jax.Array  # the next trial step
    prev_inv: jax.Array  # 1 / error ratio of the last accepted step (PI control)
    modes: jax.Array  # [n, h] int8: +1 active, -1 inactive, 0 sliding on the hyperplane (representative rows)
    slots: jax.Array  # [h, 2] int32: the hyperplanes each neuron slides along (-1: none)
    Q: jax.Array  # [h, 2, d] orthonormal normals of the slides
    rows: EventRows  # the chunk of the event buffer (flushed every CHUNK_FLUSH events)
    count: jax.Array  # events in ``rows``
    steps: jax.Array  # Runge-Kutta steps (iterations) in this interval
    code: jax.Array  # stop code (0: running or stopped healthy)
    pending: jax.Array  # an event was found: landing re-steps from t follow
    land_h: jax.Array  # the next landing re-step
    pair: jax.Array  # the crossing pair i h + j being landed (-1: a release)
    floor: jax.Array  # [n, h] min(0, margin) at the start of the step that found the event
    landing: jax.Array  # landing iterations so far
    bracket: Bracket  # the landing's bracket of the re-step length (phi >= 0 at lo, < 0 at hi)
    init: jax.Array  # the first iteration: classify the pairs that start on a hyperplane
    done: jax.Array  # stopped early, healthy (the clock's stop rule)


# -- what one advance integrates ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Options:
    """What a compiled program fixes (``build_advance``): the Runge-Kutta pair and its dense-output weights at the
    sign-scan nodes, the tolerances as given, the step budget, the frozen layers, the release margin and the
    controller's exponents."""

    tab: Tableau
    nodes: np.ndarray  # [K] Chebyshev-Lobatto nodes of the sign scan
    dense_nodes: np.ndarray  # [K, S] dense-output weights at the nodes
    max_steps: int
    rtol: float
    atol: float
    first_only: bool
    release_margin: float
    expo_i: float
    expo_p: float

    @staticmethod
    def of(train, clock: FlowClock) -> Options:
        tab = tableau(train.solver)
        nodes = _chebyshev_lobatto(NODES)
        with jax.ensure_compile_time_eval():
            dense_nodes = np.asarray(tab.dense(jnp.asarray(nodes, jnp.float64)))
        rtol = float(train.rtol)
        return Options(tab, nodes, dense_nodes, int(train.max_solver_steps), rtol, float(train.atol),
                       train.layers == "first",
                       max(kinks.RELEASE_MARGIN, 100 * rtol),  # lam* is resolved to ~10-20 rtol (hinted data)
                       (clock.icoeff + clock.pcoeff) / tab.order, clock.pcoeff / tab.order)


@dataclass(frozen=True, eq=False)
class Setup:
    """Everything fixed during one advance (one seed, one observation interval), with the pieces of the field the
    loop needs: the program's ``options``, the data (the input columns that are zero in every sample left out of
    the products X W' and G' X, as GD's ``Context.training_view`` does: 278 of 784 on the MNIST 0/1 pair) and its
    hyperplane groups, the activation's kink, the clock's output gradient and stop rule, the tolerances the
    precision can resolve and the step-size controller, the interval and its initial state. ``Setup.of`` builds it
    at trace time."""

    options: Options
    control: StepControl
    X: jax.Array
    x_norm: jax.Array
    X_support: jax.Array  # X without the input columns that are zero in every sample (``Context.training_view``)
    support: jax.Array | None  # the indices of the kept columns; None: X itself (no column dropped)
    groups: tuple  # (rep, orient, members, scale): kinks.hyperplane_groups
    is_rep: jax.Array  # [n, h] bool: rows of group representatives
    kink: kinks.Kink
    out_grad: callable
    weight_decay: jax.Array
    unravel: callable
    event_tol: float
    on_plane_tol: float
    rms_per_step: bool
    stop_rule: callable | None
    ctx: object
    y_start: jax.Array  # the raveled parameters at the interval's start
    rms0: jax.Array  # their rms
    start: jax.Array
    stop: jax.Array

    @staticmethod
    def of(options: Options, clock: FlowClock, ctx, params, hyper, start, stop) -> Setup:
        """The setup of one advance of ``params`` over [start, stop] from the program's ``options``, the clock and
        the context; the tolerances are floored to what the data's precision resolves (float64: unchanged;
        float32: ~1e-5)."""
        problem = ctx.problem
        y_start, unravel = ravel_pytree(params)
        X = ctx.X
        n = X.shape[0]
        eps = float(jnp.finfo(X.dtype).eps)
        rep = ctx.arrays["hyperplane_rep"]
        h_count = params["W"].shape[0]
        control = StepControl(max(options.rtol, PRECISION_FLOOR * eps), options.atol, options.expo_i, options.expo_p)
        return Setup(
            options=options, control=control, X=X, x_norm=jnp.linalg.norm(X, axis=1),
            X_support=ctx.arrays["X_support"] if "support" in ctx.arrays else X, support=ctx.arrays.get("support"),
            groups=(rep, ctx.arrays["hyperplane_orient"], ctx.arrays["hyperplane_members"],
                    ctx.arrays["hyperplane_scale"]),
            is_rep=(rep == jnp.arange(n))[:, None] & jnp.ones((1, h_count), bool),
            kink=kinks.kink_of(problem.activation), out_grad=clock.out_grad(problem, ctx.y),
            weight_decay=hyper["weight_decay"], unravel=unravel,
            event_tol=max(EVENT_TOL, PRECISION_FLOOR * eps),
            on_plane_tol=max(ON_PLANE_TOL, 100 * PRECISION_FLOOR * eps),
            rms_per_step=clock.rms_per_step, stop_rule=clock.stop, ctx=ctx,
            y_start=y_start, rms0=jnp.sqrt(jnp.mean(y_start * y_start)), start=start, stop=stop)

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def h_count(self) -> int:
        return self.is_rep.shape[1]

    @property
    def dtype(self):
        return self.X.dtype

    @property
    def events_on(self) -> bool:
        """Whether the activation has a kink (linear: the field never jumps, no events)."""
        return not self.kink.smooth

    @property
    def conv_side(self):
        """The side a pair found on its hyperplane starts on: where the fixed subgradient sigma'(0) puts it."""
        return jnp.int8(-1 if self.kink.convention <= 0.5 else 1)

    def parts(self, y):
        p = self.unravel(y)
        return p["W"], p["v"]

    def on_support(self, A):
        """A [..., d] restricted to the support columns (``X_support``); A itself where none is dropped."""
        return A if self.support is None else A[..., self.support]

    def pre_activations(self, W):
        """z = X W' [n, h], as X_support W_support': a zero input column adds nothing to it (O(n h |support|))."""
        return self.X_support @ self.on_support(W).T

    def field(self, t, y, modes, Q):
        """The raveled frozen-pattern field (``kinks.frozen_field``) at (t, y)."""
        W, v = self.parts(y)
        rep, orient = self.groups[:2]
        D = kinks.slopes(kinks.point_modes(modes, rep, orient), self.kink, self.dtype)
        dW, dv, _ = kinks.frozen_field(self.on_support(W), v, self.X_support, D, self.on_support(Q), self.out_grad, t,
                                       first_only=self.options.first_only, weight_decay=self.weight_decay)
        if self.support is not None:  # dropped columns: v_j (G' X)_jk = 0 and Q_jk = 0, so -weight_decay W_jk alone
            dW = (-self.weight_decay * W).at[:, self.support].set(dW)
        return ravel_pytree({"W": dW, "v": dv})[0]

    def tolerance(self, W):
        """[n, h] EVENT_TOL |x_i| |w_j|: how far past its plane a pair is located."""
        return self.event_tol * self.x_norm[:, None] * jnp.linalg.norm(W, axis=1)[None, :]

    def margins(self, W, modes):
        """e = M z + tol for representative pairs on a side (+inf elsewhere): negative once past."""
        z = self.pre_activations(W)
        live = self.is_rep & (modes != 0)
        return jnp.where(live, modes * z + self.tolerance(W), jnp.inf)

    def one_sided(self, y, modes, slots, t):
        W, v = self.parts(y)
        return kinks.one_sided_velocities(self.on_support(W), v, self.X_support, modes, slots, self.groups, self.kink,
                                          self.out_grad, t, weight_decay=self.weight_decay)

    def slots_of(self, modes):
        """The slide slots [h, 2] of the sliding pairs (modes 0) and whether a neuron slides along more than
        MAX_SLIDES hyperplanes."""
        n = self.n
        sliding = self.is_rep & (modes == 0)
        count = jnp.sum(sliding, axis=0)
        first = first_true(sliding, axis=0)
        second = first_true(sliding & (jnp.arange(n)[:, None] != first[None, :]), axis=0)
        slots = jnp.stack([jnp.where(count >= 1, first, -1), jnp.where(count >= 2, second, -1)], axis=1)
        return slots.astype(jnp.int32), jnp.any(count > kinks.MAX_SLIDES)

    def snap(self, y, Q):
        """w_j projected back onto its slides' hyperplanes."""
        W, v = self.parts(y)
        return ravel_pytree({"W": kinks.project_out(W, Q), "v": v})[0]

    def stopped(self, t, y):
        """The clock's stop rule at (t, y) (flow_log: log L, ||theta||^2 or the clock's range reached), False
        without one."""
        if self.stop_rule is None:
            return jnp.asarray(False)
        return self.stop_rule(self.unravel(y), self.ctx, t)

    def error_ratio(self, err, y0, y1):
        """The step's error ratio; the floor's rms is y0's (flow_exact) or the interval start's (flow_log)."""
        return self.control.error_ratio(err, y0, y1, jnp.sqrt(jnp.mean(y0 * y0)) if self.rms_per_step else self.rms0)

    def initial_step(self, F0):
        """The first trial step of the interval, from its start (``StepControl.initial_step``)."""
        return self.control.initial_step(self.y_start, F0, self.rms0, self.stop - self.start).astype(self.dtype)

    def dense_state(self, y, F, hstep, theta):
        """The solution at t + theta hstep on the dense output of the step of stage derivatives F from (t, y)."""
        return y + hstep * (self.options.tab.dense(theta) @ F)

    def initial_modes(self, y):
        """(modes, on) at the interval's start: each pair's side, and the pairs within ON_PLANE_TOL |x_i| |w_j| of
        their plane (put on the side of the fixed subgradient until classified)."""
        W0, _ = self.parts(y)
        z0 = self.pre_activations(W0)
        near = self.on_plane_tol * self.x_norm[:, None] * jnp.linalg.norm(W0, axis=1)[None, :]
        on = self.is_rep & (jnp.abs(z0) <= near)
        modes0 = jnp.where(on, self.conv_side, jnp.sign(z0).astype(jnp.int8)).astype(jnp.int8)
        return jnp.where(self.is_rep, modes0, 0).astype(jnp.int8), on


# -- event location ---------------------------------------------------------------------------------------------

def locate_crossing(s: Setup, st: State, F, hstep, accept):
    """Earliest crossing in the step [t, t + hstep] from ``st``: (theta, pair, floor, theta_node, phi_node). The
    margins of the live pairs, phi = (M z + 1.5 tol - floor) / tol (negative: more than 1.5 tol past the plane), are
    scanned at the nodes; the first node where min phi < 0 brackets the earliest root of min phi, refined by
    Illinois on the dense output until min phi is in [-0.25, 0). theta = 2 where no pair crosses (or not
    ``accept``); (theta_node, phi_node): the first node past the root and the pair's phi there, the bracket's hi
    for the landing on the Runge-Kutta solution. The scan runs only where ``may_cross`` leaves a pair that could be
    past its plane at a node (``run_if``); elsewhere no node can be, so the result is the scan's, bitwise."""
    W_start = s.parts(st.y)[0]
    live = s.is_rep & (st.modes != 0)
    tol = s.tolerance(W_start)
    tol = jnp.where(tol > 0, tol, 1e-300)
    z0 = s.pre_activations(W_start)
    e_start = jnp.where(live, st.modes * z0 + tol, 0.0)
    floor = jnp.minimum(e_start, 0.0)
    F_W = jax.vmap(lambda z: s.parts(z)[0])(F)  # [S, h, d]
    need = accept & jnp.any(may_cross(s, live, st.modes, z0, F_W, hstep))
    dtype = s.dtype
    default = (jnp.asarray(2.0, dtype), jnp.int32(0), jnp.asarray(s.options.nodes[1], dtype), jnp.zeros((), dtype))
    theta, pair, theta_node, phi_node = run_if(
        need, lambda op: scan_nodes(s, *op), (live, st.modes, z0, tol, floor, F_W, hstep, accept), default)
    return theta, pair, floor, theta_node, phi_node


def may_cross(s: Setup, live, modes, z0, F_W, hstep):
    """[n, h]: the live pairs that could be past their plane at a node of the step (phi < 0). At node k, z_ij moves
    from z0 by hstep sum_s B_ks <x_i, F_s,j>, at most reach = |hstep| |x_i| sum_s max_k |B_ks| |F_s,j| (Cauchy-Schwarz),
    widened by 4 (S + d + 8) eps for the rounding of the dense output and the norms. A pair with M z0 > reach keeps
    its side at every node as computed (a sum keeps the sign of its larger term, and rounding keeps signs), so its
    floor is 0 and its phi = (M z + 1.5 tol) / tol > 0: only the others can cross."""
    eps = float(jnp.finfo(s.dtype).eps)
    S, d = F_W.shape[0], F_W.shape[2]
    beta = jnp.asarray(np.max(np.abs(s.options.dense_nodes), axis=0), s.dtype)  # [S]
    speed = (1.0 + 4 * (S + d + 8) * eps) * jnp.abs(hstep) * (beta @ jnp.linalg.norm(F_W, axis=2))  # [h]
    return live & ~(modes * z0 > s.x_norm[:, None] * speed[None, :])


def scan_nodes(s: Setup, live, modes, z0, tol, floor, F_W, hstep, accept):
    """The node scan and root of ``locate_crossing``: (theta, pair, theta_node, phi_node)."""
    dtype = s.dtype
    P = jnp.einsum("nd,shd->snh", s.X_support, s.on_support(F_W))  # stage derivatives of z

    def phi(B):  # [n, h] at the dense-output weights B [S]
        z = z0 + hstep * jnp.einsum("s,snh->nh", B, P)
        return jnp.where(live, (modes * z + 1.5 * tol - floor) / tol, jnp.inf)

    v_nodes = jax.vmap(phi)(jnp.asarray(s.options.dense_nodes, dtype))  # [K, n, h]
    g_nodes = jnp.min(v_nodes.reshape(len(s.options.nodes), -1), axis=1)
    neg = g_nodes < 0
    found = jnp.any(neg) & accept
    k = jnp.maximum(first_true(neg), 1)
    grid = jnp.asarray(s.options.nodes, dtype)
    v_lo, v_hi = v_nodes[k - 1].reshape(-1), v_nodes[k].reshape(-1)
    lo, hi, _, v_hi = illinois_pairs(lambda theta: phi(s.options.tab.dense(theta)).reshape(-1), grid[k - 1], grid[k],
                                     v_lo, v_hi, found)
    theta = jnp.where(found, hi, 2.0)
    pair = first_min(v_hi)
    return theta, pair, grid[k], v_nodes[k].reshape(-1)[pair]


def illinois_pairs(f, lo, hi, v_lo, v_hi, active):
    """Illinois on the earliest root of min_p f_p(theta) in [lo, hi] (f: [P] values, min >= 0 at lo, < 0 at hi):
    regula falsi on one pair's values; a pair found below -0.25 at hi crossed before the current pair's root and
    takes over (hi only decreases). Stops once every pair at hi is in [-0.25, ...) with some below 0, after
    ILLINOIS_STEPS, or where hi - lo <= ROOT_BRACKET; nothing where not ``active``. Returns (lo, hi, v_lo, v_hi)."""
    p = first_min(v_hi)
    b = Bracket(lo, hi, v_lo[p], v_hi[p], jnp.int32(0))

    def step(state):
        b, v_lo, v_hi, p, it = state
        switch = (v_hi[p] >= -0.25) & (jnp.min(v_hi) < -0.25)
        p = jnp.where(switch, first_min(v_hi), p).astype(jnp.int32)
        b = b._replace(f_lo=jnp.where(switch, v_lo[p], b.f_lo), f_hi=jnp.where(switch, v_hi[p], b.f_hi))
        theta = illinois_point(b)
        v = f(theta)
        below = jnp.min(v) < 0
        b = illinois_update(b, theta, v[p], below)
        new_p = jnp.where(below & (v[p] >= 0), first_min(v), p).astype(jnp.int32)
        v_lo, v_hi = jnp.where(below, v_lo, v), jnp.where(below, v, v_hi)
        moved = new_p != p  # another pair is past at the new hi: its own values, not halved
        b = b._replace(f_lo=jnp.where(moved, v_lo[new_p], b.f_lo), f_hi=jnp.where(moved, v_hi[new_p], b.f_hi))
        return b, v_lo, v_hi, new_p, it + 1

    def more(state):
        b, _, v_hi, p, it = state
        done = (v_hi[p] >= -0.25) & (jnp.min(v_hi) >= -0.25)
        return active & ~done & (b.hi - b.lo > ROOT_BRACKET) & (it < ILLINOIS_STEPS)

    b, v_lo, v_hi, _, _ = lax.while_loop(more, step, (b, v_lo, v_hi, p.astype(jnp.int32), jnp.int32(0)))
    return b.lo, b.hi, v_lo, v_hi


def locate_release(s: Setup, st: State, F, hstep, theta_end, accept=True):
    """Earliest release of a slide in [0, theta_end] of the step (bisection on the dense output); 2 where none (or
    not ``accept``). Runs only where some pair slides (``run_if``)."""
    need = jnp.any(s.is_rep & (st.modes == 0)) & accept
    return run_if(need, lambda op: bisect_release(s, *op), (st.y, st.modes, st.slots, st.t, F, hstep, theta_end),
                  jnp.asarray(2.0, s.dtype))


def bisect_release(s: Setup, y, modes, slots, t, F, hstep, theta_end):
    """The bisection of ``locate_release`` from the step's start (t, y) with the slides (modes, slots)."""
    sliding = s.is_rep & (modes == 0)
    need = jnp.any(sliding)

    def released_at(theta):
        zp, zm = s.one_sided(s.dense_state(y, F, hstep, theta), modes, slots, t + theta * hstep)
        return jnp.any(sliding & kinks.released(zp, zm, s.options.release_margin))

    def bisect(b):  # iteration 0 checks theta_end; a release there starts the bisection
        lo, hi, it, at_end = b
        mid = jnp.where(it == 0, hi, 0.5 * (lo + hi))
        r = released_at(mid)
        at_end = jnp.where(it == 0, r, at_end)
        lo = jnp.where((it > 0) & ~r, mid, lo)
        hi = jnp.where((it > 0) & r, mid, hi)
        return lo, hi, it + 1, at_end

    _, hi, _, at_end = lax.while_loop(lambda b: need & ((b[2] == 0) | b[3]) & (b[2] <= BISECTIONS), bisect,
                                      (jnp.asarray(0.0, s.dtype), theta_end, jnp.int32(0), jnp.asarray(False)))
    return jnp.where(need & at_end, hi, 2.0)


def pair_margin(s: Setup, st: State, y):
    """phi of the crossing pair being landed at y, in units of its tolerance (as ``locate_crossing``): 0 at 1.5 tol
    past its plane."""
    W = s.parts(y)[0]
    safe = jnp.maximum(st.pair, 0)
    i, j = safe // s.h_count, safe % s.h_count
    tol = s.event_tol * s.x_norm[i] * jnp.linalg.norm(W[j])
    tol = jnp.where(tol > 0, tol, 1e-300)
    M = st.modes.reshape(-1)[safe]
    return (M * (s.X[i] @ W[j]) + 1.5 * tol - st.floor.reshape(-1)[safe]) / tol


# -- kink decisions ---------------------------------------------------------------------------------------------

def new_modes(zp, zm, modes, zsign, candidates, kink: kinks.Kink, conv_side, release_margin, one):
    """The decision at the hyperplanes of the ``candidates`` pairs [n, h] from their one-sided normal velocities
    (``kinks.classify``): (modes, kind, applies, lam). A sliding pair (mode 0) changes only when released (both
    one-sided fields point the same way, by ``release_margin``; recorded as RELEASE); a pair whose two fields are
    both tangent (kind 0) stays on the side where z_ij now is (``zsign``), or keeps its side, or (on the plane)
    takes the fixed subgradient's ``conv_side``. ``one`` is a traced 1 (``materialize``)."""
    mode, kind, lam = materialize(kinks.classify(zp, zm, kink), one)
    keep = jnp.where(zsign != 0, zsign, jnp.where(modes != 0, modes, conv_side))
    applies = candidates & jnp.where(modes == 0, (kind == kinks.CROSS) & kinks.released(zp, zm, release_margin), True)
    new_mode = jnp.where(kind == 0, keep, mode)
    kind_rec = jnp.where(modes == 0, kinks.RELEASE, kind)
    return jnp.where(applies, new_mode, modes), kind_rec, applies & (kind != 0), applies & (kind == kinks.FAIL), lam


def record(st: State, mask, kind, side, lam, rows: int) -> State:
    """Append one row per True entry of mask [n, h] (row-major order) to the state's event buffer at time st.t, one
    row per loop iteration (a classification records one or two events; a batched scatter, a sort or a [rows, n h]
    match would cost more). More than ``rows`` at once, or a full buffer: EVENT_LIMIT."""
    h_count = mask.shape[1]
    size = st.rows.t.shape[0]
    flat = mask.reshape(-1)
    kind, side, lam = kind.reshape(-1), side.reshape(-1), lam.reshape(-1)
    added = jnp.sum(flat, dtype=jnp.int32)
    limit = jnp.minimum(jnp.minimum(added, rows), size - st.count)

    def one(b):
        k, left, buf = b
        at = first_true(left)
        row = EventRows(st.t, at % h_count, at // h_count, kind[at], side[at], lam[at])
        pos = st.count + k
        buf = EventRows(*(lax.dynamic_update_slice(col, value.astype(col.dtype)[None], (pos,))
                          for col, value in zip(buf, row)))
        return k + 1, left & (jnp.arange(flat.shape[0]) != at), buf

    _, _, buf = lax.while_loop(lambda b: b[0] < limit, one, (jnp.int32(0), flat, st.rows))
    over = (added > rows) | (st.count + added > size)
    code = jnp.where((st.code == 0) & over, EVENT_LIMIT, st.code)
    return st._replace(rows=buf, count=jnp.minimum(st.count + added, size).astype(jnp.int32), code=code)


def decide(s: Setup, st: State, candidates, do_record, rows: int) -> State:
    """Classify ``candidates`` [n, h] at the state; update modes, slots, basis and F0; record the events (where
    ``do_record``). NO_SOLUTION where a pair has no Caratheodory solution, EVENT_LIMIT past MAX_SLIDES."""
    zp, zm = s.one_sided(st.y, st.modes, st.slots, st.t)
    one = (st.steps >= 0).astype(jnp.int32)  # 1, unknown to the compiler
    W, _ = s.parts(st.y)
    zsign = jnp.sign(s.pre_activations(W)).astype(jnp.int8)
    modes, kind_rec, changed, failed, lam = new_modes(zp, zm, st.modes, zsign, candidates, s.kink, s.conv_side,
                                                      s.options.release_margin, one)
    st = record(st, changed & do_record, kind_rec, modes, lam, rows)
    slots, too_many = s.slots_of(modes)
    Q = kinks.slide_basis(slots, s.X)
    y = s.snap(st.y, Q)
    code = jnp.where(st.code == 0, jnp.where(jnp.any(failed), NO_SOLUTION, jnp.where(too_many, EVENT_LIMIT, 0)),
                     st.code)
    return st._replace(modes=modes, slots=slots, Q=Q, y=y, code=code, F0=s.field(st.t, y, modes, Q))


# -- one iteration: a Runge-Kutta step (a trial step, or a re-step to an event) ---------------------------------

def schedule_event(s: Setup, st: State, new: State, F, hstep, accept):
    """After an accepted trial step: the earliest crossing or release in it. Where there is one (``event``) the step
    is cut: ``pending``, and the landing starts with a re-step of theta hstep and the bracket [0, first node past
    the root] of its length. Returns (new, event)."""
    theta_c, pair, floor, theta_node, phi_node = locate_crossing(s, st, F, hstep, accept)
    theta_c = jnp.where(accept, theta_c, 2.0)
    theta_r = locate_release(s, st, F, hstep, jnp.minimum(theta_c, 1.0), accept)
    theta = jnp.minimum(theta_c, theta_r)
    event = accept & (theta <= 1.0)
    by_release = theta_r < theta_c
    dtype = s.dtype
    start = Bracket(jnp.zeros((), dtype), (theta_node * hstep).astype(dtype), jnp.ones((), dtype),
                    phi_node.astype(dtype), jnp.int32(0))
    return new._replace(
        pending=event | st.pending, land_h=jnp.where(event, theta * hstep, st.land_h),
        pair=jnp.where(event, jnp.where(by_release, -1, pair), st.pair), floor=jnp.where(event, floor, st.floor),
        landing=jnp.where(event, 0, st.landing),
        bracket=select(event, start, st.bracket)), event


def land(s: Setup, st: State, new: State, y1, hstep, ok):
    """A landing re-step of length hstep ended at y1: where the crossing pair is not yet in its window (phi in
    [-0.25, 0]), the next re-step length by Illinois on the bracket (at most LANDING_STEPS, down to 1e-15 of the
    step). Returns (new, landed): landed where the re-step stands (a release lands at once) and at the first
    iteration (``st.init``: its zero step lands on the initial state); a landed state is no longer pending."""
    phi = pair_margin(s, st, y1)
    below = phi < 0
    b = illinois_update(st.bracket, hstep, phi, below)
    off = ((phi > 0) | (phi < -0.25)) & (st.landing < LANDING_STEPS) & (b.hi - b.lo > 1e-15 * jnp.abs(hstep))
    retry = st.pending & ok & (st.pair >= 0) & off
    new = new._replace(land_h=jnp.where(retry, illinois_point(b), new.land_h),
                       bracket=select(retry, b, new.bracket),
                       landing=jnp.where(retry, st.landing + 1, new.landing))
    landed = (st.pending & ok & ~retry) | st.init
    return new._replace(pending=jnp.where(landed, False, new.pending)), landed


def decide_landed(s: Setup, st: State, new: State, landed, on, rows: int) -> State:
    """Where the step landed (or at the first iteration, ``st.init``): classify the pairs that crossed their plane
    (margin below the step's floor) and the sliding ones (the first iteration: those ``on`` a plane; its events
    are recorded only at t = 0); the first iteration also sets the initial step."""

    def once(b):
        _, cc = b
        e = s.margins(s.parts(cc.y)[0], cc.modes)
        crossed = s.is_rep & (cc.modes != 0) & (e < st.floor)
        candidates = jnp.where(st.init, on, crossed | (s.is_rep & (cc.modes == 0)))
        cc = decide(s, cc, candidates, ~st.init | (s.start == 0), rows)
        h = jnp.where(st.init, s.initial_step(cc.F0), cc.h)
        return False, cc._replace(h=h, init=jnp.asarray(False))

    _, decided = lax.while_loop(lambda b: b[0], once, (landed, new))
    return select(landed, decided, new)


def iterate(s: Setup, st: State, rows: int, on) -> State:
    """One iteration of the event loop: one Runge-Kutta step from st.t, of the controller's trial length (clipped to
    the interval), of the landing's re-step length (``st.pending``) or 0 (``st.init``: the initial classification).
    An accepted trial step that contains an event is cut (``schedule_event``) and landed on by re-steps (``land``);
    a landed step is decided (``decide_landed``; ``on``: the pairs on a plane at the start); a step that stands
    moves t, y, F0."""
    t, y = st.t, st.y
    hstep = jnp.where(st.init, 0.0, jnp.where(st.pending, st.land_h, jnp.minimum(st.h, s.stop - t)))
    y1, err, F = rk_step(lambda u, z: s.field(u, z, st.modes, st.Q), s.options.tab, t, y, st.F0, hstep)
    ratio = s.error_ratio(err, y, y1)
    ok = jnp.isfinite(ratio) & jnp.all(jnp.isfinite(y1))
    accept, factor, inv = s.control.adapt(ratio, st.prev_inv, ok, ~st.pending & ~st.init)
    new = st._replace(steps=st.steps + 1, h=jnp.where(st.pending, st.h, hstep * factor),
                      prev_inv=jnp.where(accept, inv, st.prev_inv))
    event, landed = jnp.asarray(False), st.pending & ok
    if s.events_on:
        new, event = schedule_event(s, st, new, F, hstep, accept)
        new, landed = land(s, st, new, y1, hstep, ok)
    moved = (accept & ~event) | landed
    new = new._replace(t=jnp.where(moved, t + hstep, t), y=jnp.where(moved, s.snap(y1, st.Q), y),
                       F0=jnp.where(moved, F[-1], st.F0),
                       code=jnp.where((new.code == 0) & st.pending & ~ok, NONFINITE, new.code))
    if s.events_on:
        new = decide_landed(s, st, new, landed, on, rows)
    return check_status(s, st, new, moved, ok)


def running(s: Setup, st: State):
    """The seed goes on: before the interval's end, no stop code, the stop rule not met."""
    return (st.t < s.stop) & (st.code == 0) & ~st.done


def check_status(s: Setup, st: State, new: State, moved, ok) -> State:
    """Stop rule and stop codes after an iteration: ``done`` once the clock's stop rule holds at a new state;
    NONFINITE for a non-finite state, SOLVER past ``max_solver_steps`` or where the trial step
    collapsed to round-off of t (NONFINITE where the error was not finite)."""
    code = new.code
    done = st.done | (moved & s.stopped(new.t, new.y))
    new = new._replace(done=done)
    code = jnp.where((code == 0) & ~jnp.all(jnp.isfinite(new.y)), NONFINITE, code)
    over_budget = (new.steps >= s.options.max_steps) & running(s, new._replace(code=code))
    code = jnp.where((code == 0) & over_budget, SOLVER, code)
    collapsed = ~st.pending & (new.h <= 1e-14 * (jnp.abs(st.t) + jnp.abs(s.stop)) + 1e-300)
    code = jnp.where((code == 0) & collapsed & running(s, new._replace(code=code)), jnp.where(ok, SOLVER, NONFINITE),
                     code)
    return new._replace(code=code)


def initial_state(s: Setup, modes, rows: int, healthy) -> State:
    """The state at the interval's start: no slides yet (the first iteration classifies the pairs on a plane), an
    empty event buffer of ``rows`` + CHUNK_FLUSH rows; without events (a linear activation) the field and the
    initial step at once."""
    dtype = s.dtype
    zero = jnp.asarray(0.0, dtype)
    st = State(t=jnp.asarray(s.start, dtype), y=s.y_start, F0=jnp.zeros_like(s.y_start), h=zero,
               prev_inv=jnp.asarray(1.0, dtype), modes=modes, slots=-jnp.ones((s.h_count, 2), jnp.int32),
               Q=jnp.zeros((s.h_count, 2, s.X.shape[1]), dtype), rows=EventRows.zeros(rows + CHUNK_FLUSH, dtype),
               count=jnp.int32(0), steps=jnp.int32(0), code=jnp.int32(0), pending=jnp.asarray(False), land_h=zero,
               pair=jnp.int32(-1), floor=jnp.zeros((s.n, s.h_count), dtype), landing=jnp.int32(0),
               bracket=Bracket(zero, zero, zero, zero, jnp.int32(0)), init=jnp.asarray(s.events_on),
               done=~healthy | s.stopped(s.start, s.y_start))
    if not s.events_on:
        F0 = s.field(st.t, st.y, st.modes, st.Q)
        st = st._replace(F0=F0, h=s.initial_step(F0))
    return st


def integrate(s: Setup, params, bad):
    """(params, bad, code, log) of one seed over [s.start, s.stop]: the event loop, whose buffer of events is
    flushed every CHUNK_FLUSH events into the interval's (the step loop carries only a small chunk: the batched
    while_loop selects its whole carry every iteration)."""
    capacity = 4 * s.n * s.h_count + 64
    rows = min(s.n * s.h_count, CHUNK)  # events one classification may record at once
    healthy = bad < 0
    modes0, on = s.initial_modes(s.y_start)
    st = initial_state(s, modes0, rows, healthy)

    def chunk(b):
        st, big, big_count = b
        st = while_loop(lambda st: running(s, st) & (st.count < CHUNK_FLUSH), lambda st: iterate(s, st, rows, on),
                        st)
        over = big_count + st.count > capacity
        big = EventRows(*(lax.dynamic_update_slice(col, part, (big_count,)) for col, part in zip(big, st.rows)))
        big_count = jnp.minimum(big_count + st.count, capacity)
        st = st._replace(count=jnp.int32(0), code=jnp.where((st.code == 0) & over, EVENT_LIMIT, st.code))
        return st, big, big_count

    big = EventRows.zeros(capacity + rows + CHUNK_FLUSH, s.dtype)
    st, big, big_count = while_loop(lambda b: running(s, b[0]), chunk, (st, big, jnp.int32(0)))
    failed = healthy & (st.code != 0)
    final = jnp.where(jnp.all(jnp.isfinite(st.y)), st.y, s.y_start)
    out_params = select(healthy, s.unravel(final), params)
    log = {name: col[:capacity] for name, col in zip(EventRows._fields, big)}
    log["count"] = jnp.where(healthy, big_count, 0)
    log["steps"] = st.steps
    return out_params, jnp.where(failed, st.t, bad), jnp.where(failed, st.code, 0), log


def build_advance(train, clock: FlowClock):
    """``advance(params, key, bad, start, stop, ctx, hyper) -> (params, bad, code, log)`` for one seed, for the
    ODE parameters ``train`` (``solver`` in ``SOLVER_ORDERS``, ``rtol``, ``atol``, ``max_solver_steps``,
    ``layers``) on ``clock``; ``log`` is one interval's event log (``EventTable.rows`` reads it)."""
    options = Options.of(train, clock)

    def advance(params, key, bad, start, stop, ctx, hyper):
        check_problem(ctx.problem)
        return integrate(Setup.of(options, clock, ctx, params, hyper, start, stop), params, bad)

    return advance


def empty_log(dtype) -> dict:
    """The event log of a method run that records no events (same keys as ``build_advance``'s)."""
    z = lambda dt: jnp.zeros(1, dt)  # noqa: E731
    return {"t": z(dtype), "neuron": z(jnp.int32), "point": z(jnp.int32), "kind": z(jnp.int8), "side": z(jnp.int8),
            "lam": z(dtype), "count": jnp.int32(0), "steps": jnp.int32(0)}


def _sample_sums() -> str:
    """The objectives the event-driven flow integrates (their record's ``sample_sum``), for messages."""
    return " or ".join(name for name, o in OBJECTIVES.items() if o.sample_sum)


def check_problem(problem):
    """The event-driven flow integrates two-layer nets on an objective that is the sum (or mean) of the per-sample
    losses, ``Objective.sample_sum`` (checked at trace time)."""
    if problem.net.name not in NETS:
        raise ValueError(f"the event-driven flow needs model.kind {' or '.join(NETS)}, not {problem.net.name!r}")
    if not OBJECTIVES.get(problem.objective).sample_sum:
        raise ValueError(f"the event-driven flow needs objective {_sample_sums()}")


def config_errors(cfg) -> list[tuple[str, str]]:
    """Config-load checks of the event-driven methods: an objective with ``sample_sum`` (empirical) and a
    piecewise-linear activation (``model.kind`` is checked by the method's ``nets``)."""
    from twolayer.activations import make_activation

    errors = []
    if not OBJECTIVES.get(cfg.objective).sample_sum:
        errors.append(("objective", f"method {cfg.train.method} needs objective {_sample_sums()}"))
    try:
        kinks.kink_of(make_activation(cfg.model.activation))
    except ValueError as e:
        errors.append(("model.activation", str(e)))
    return errors


# -- the event table --------------------------------------------------------------------------------------

class EventTable(EventLog):
    """Rows of the event log: ``t, seed, neuron, point, kind, side, lam`` (numpy columns).

    ``kind`` is one of cross, slide, release, nonunique, fail; ``side`` the neuron's side of the point's
    hyperplane afterwards (+1 active, -1 inactive, 0 on it: a Filippov slide); ``lam`` the Filippov
    weight zdot^-/(zdot^- - zdot^+) of the active side (NaN for crossings). ``point`` is the first data
    point of the hyperplane's group (parallel points share one hyperplane)."""

    refine = True
    columns = ("t", "seed", "neuron", "point", "kind", "side", "lam")

    def rows(self, log: dict, seeds: list[int]) -> dict[str, np.ndarray]:
        """One row per recorded event of the interval's ``log`` (leading seed axis), seeds in order."""
        count = np.asarray(log["count"])
        out = {k: [] for k in self.columns}
        for s, seed in enumerate(seeds):
            m = int(count[s])
            out["t"].append(np.asarray(log["t"][s][:m], dtype=np.float64))
            out["seed"].append(np.full(m, seed, dtype=np.int64))
            for k in ("neuron", "point", "side"):
                out[k].append(np.asarray(log[k][s][:m], dtype=np.int64))
            out["kind"].append(np.array([kinks.KIND_NAMES.get(int(x), "?") for x in np.asarray(log["kind"][s][:m])],
                                        dtype="<U9"))
            out["lam"].append(np.asarray(log["lam"][s][:m], dtype=np.float64))
        return {k: np.concatenate(v) if v else np.zeros(0) for k, v in out.items()}

    def empty(self) -> dict[str, np.ndarray]:
        """The table with no rows (the columns' dtypes)."""
        return {"t": np.zeros(0), "seed": np.zeros(0, np.int64), "neuron": np.zeros(0, np.int64),
                "point": np.zeros(0, np.int64), "kind": np.zeros(0, "<U9"), "side": np.zeros(0, np.int64),
                "lam": np.zeros(0)}

    def derived(self, table: dict, seeds: list[int], times: np.ndarray) -> dict[str, np.ndarray]:
        """``pattern_changes`` [S, T]: events that changed a neuron's side of a hyperplane (cross, slide,
        release, nonunique) up to and including each observation time."""
        kind = np.asarray(table["kind"])
        changes = (kind != "fail")
        t = np.asarray(table["t"])
        seed_col = np.asarray(table["seed"])
        out = np.zeros((len(seeds), len(times)), dtype=np.int64)
        for s, seed in enumerate(seeds):
            ts = np.sort(t[(seed_col == seed) & changes])
            out[s] = np.searchsorted(ts, np.asarray(times), side="right")
        return {"pattern_changes": out}

    def details(self, table: dict, seed: int) -> str:
        """The fail row of a seed: time, neuron and data point."""
        kind, seed_col = np.asarray(table["kind"]), np.asarray(table["seed"])
        hit = np.flatnonzero((kind == "fail") & (seed_col == seed))
        if not hit.size:
            return ""
        i = hit[0]
        return (f"seed {seed}: at t = {float(table['t'][i]):.6g}, neuron {int(table['neuron'][i])}, data point "
                f"{int(table['point'][i])} (the flow pushes w_j onto <x_i, w_j> = 0 while the other side's field is "
                f"tangent, and the fixed sigma'(0) pushes it off)")


class LogClockEvents(EventTable):
    """flow_log's event table: the same rows, with ``t`` on the log clock tau = ln(1 + t) (not refined)."""

    refine = False
