"""Event-driven gradient flow of a two-layer net with a piecewise-linear activation, integrated exactly
across activation boundaries, one independent event loop per seed: the integrator of methods
``flow_exact`` (``train/flow_exact.py``, the plain clock t) and ``flow_log`` (``train/flow_log.py``, the log
clock tau = ln(1 + t)).

Between changes of the activation pattern the field is smooth (``train/kinks.py``); it is integrated
with the pattern frozen as slopes D by an adaptive explicit Runge-Kutta pair (``train.solver``: tsit5,
dopri5 or dopri8; the tableaux and dense output of diffrax's solvers), error per component
``atol + rtol (max(|y0|, |y1|) + 1e-3 rms(y0))``, I step-size control (PI for flow_log). After an accepted
step the pre-activations z_ij = <x_i, w_j> of every hyperplane group are evaluated on the step's dense
output at 8 Chebyshev-Lobatto nodes; the first node where a pair z_ij is past its plane by more than
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
while the other seeds keep stepping. The rarer, more expensive parts (root finding, release bisection,
classification) sit in inner loops that run only in iterations where some seed needs them.

At the start of every observation interval the modes are re-derived from the parameters (pairs with
|z_ij| <= ON_PLANE_TOL |x_i| |w_j| are classified again), so nothing beyond the parameters is carried
between intervals and resumed runs end bitwise as uninterrupted ones. Events found at t = 0 (an
initial condition on a hyperplane: App. E.3, E.4) are recorded; re-derivations later are silent.

Limits: at most ``kinks.MAX_SLIDES`` simultaneous Filippov slides per neuron and ``4 n h + 64`` events
per observation interval (both end the seed ``failed`` with EVENT_LIMIT); ``two_layer`` nets,
empirical objective.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.flatten_util import ravel_pytree

from twolayer.losses import reduce_losses
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
    changes a decision); ``stop(params, ctx) -> bool`` ends a seed's integration early (healthy);
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


def _chebyshev_lobatto(count: int) -> np.ndarray:
    return 0.5 * (1.0 - np.cos(np.pi * np.arange(count) / (count - 1)))


def build_advance(train, clock: FlowClock):
    """``advance(params, key, bad, start, stop, ctx, hyper) -> (params, bad, code, log)`` for one seed, for the
    ODE parameters ``train`` (``solver`` in ``SOLVER_ORDERS``, ``rtol``, ``atol``, ``max_solver_steps``,
    ``layers``) on ``clock``; ``log`` is one interval's event log (``EventTable.rows`` reads it)."""
    tab = tableau(train.solver)
    first_only = train.layers == "first"
    nodes = _chebyshev_lobatto(NODES)
    with jax.ensure_compile_time_eval():
        dense_nodes = np.asarray(tab.dense(jnp.asarray(nodes, jnp.float64)))  # [K, S] dense-output weights
    max_steps = int(train.max_solver_steps)
    rtol_given, atol = float(train.rtol), float(train.atol)
    release_margin = max(kinks.RELEASE_MARGIN, 100 * rtol_given)  # lam* is resolved to ~10-20 rtol (hinted data)
    expo_i = (clock.icoeff + clock.pcoeff) / tab.order
    expo_p = clock.pcoeff / tab.order

    def advance(params, key, bad, start, stop, ctx, hyper):
        problem = ctx.problem
        check_problem(problem)
        kink = kinks.kink_of(problem.activation)
        X = ctx.X
        dtype = X.dtype
        n, d = X.shape
        # tolerances a precision can resolve (float64: the constants and train.rtol themselves; float32: ~1e-5)
        eps = float(jnp.finfo(dtype).eps)
        rtol = max(rtol_given, PRECISION_FLOOR * eps)
        event_tol, on_plane_tol = max(EVENT_TOL, PRECISION_FLOOR * eps), max(ON_PLANE_TOL, 100 * PRECISION_FLOOR * eps)
        h_count = params["W"].shape[0]
        capacity = 4 * n * h_count + 64
        rep = ctx.arrays["hyperplane_rep"]
        orient = ctx.arrays["hyperplane_orient"]
        groups = (rep, orient, ctx.arrays["hyperplane_members"])
        is_rep = (rep == jnp.arange(n))[:, None] & jnp.ones((1, h_count), bool)
        x_norm = jnp.linalg.norm(X, axis=1)
        out_grad = clock.out_grad(problem, ctx.y)
        wd = hyper["weight_decay"]
        y_start, unravel = ravel_pytree(params)
        conv_side = jnp.int8(-1 if kink.convention <= 0.5 else 1)
        events_on = not kink.smooth

        def parts(y):
            p = unravel(y)
            return p["W"], p["v"]

        def field(t, y, modes, Q):
            W, v = parts(y)
            D = kinks.slopes(kinks.point_modes(modes, rep, orient), kink, dtype)
            dW, dv, _ = kinks.frozen_field(W, v, X, D, Q, out_grad, t, first_only=first_only, weight_decay=wd)
            return ravel_pytree({"W": dW, "v": dv})[0]

        def margins(W, modes):
            """e = M z + tol for representative pairs on a side (+inf elsewhere): negative once past."""
            z = X @ W.T
            tol = event_tol * x_norm[:, None] * jnp.linalg.norm(W, axis=1)[None, :]
            live = is_rep & (modes != 0)
            return jnp.where(live, modes * z + tol, jnp.inf)

        def one_sided(y, modes, slots, t):
            W, v = parts(y)
            return kinks.one_sided_velocities(W, v, X, modes, slots, groups, kink, out_grad, t, weight_decay=wd)

        def slots_of(modes):
            sliding = is_rep & (modes == 0)
            count = jnp.sum(sliding, axis=0)
            first = first_true(sliding, axis=0)
            second = first_true(sliding & (jnp.arange(n)[:, None] != first[None, :]), axis=0)
            slots = jnp.stack([jnp.where(count >= 1, first, -1), jnp.where(count >= 2, second, -1)], axis=1)
            return slots.astype(jnp.int32), jnp.any(count > kinks.MAX_SLIDES)

        def snap(y, Q):
            W, v = parts(y)
            return ravel_pytree({"W": kinks.project_out(W, Q), "v": v})[0]

        def record(c, mask, kind, side, lam, t, rows):
            """Append one row per True entry of mask [n, h] (row-major order) to the carry's event buffer, one
            row per loop iteration (a classification records one or two events; a batched scatter, a sort or
            a [rows, n h] match would cost more). More than ``rows`` at once, or a full buffer: EVENT_LIMIT."""
            size = c["ev_t"].shape[0]
            flat = mask.reshape(-1)
            cols = {"ev_kind": kind.reshape(-1), "ev_side": side.reshape(-1), "ev_lam": lam.reshape(-1)}
            added = jnp.sum(flat, dtype=jnp.int32)
            limit = jnp.minimum(jnp.minimum(added, rows), size - c["count"])

            def one(s):
                k, left, buf = s
                at = first_true(left)
                row = {"ev_t": t, "ev_neuron": at % h_count, "ev_point": at // h_count,
                       **{name: col[at] for name, col in cols.items()}}
                pos = c["count"] + k
                buf = {name: lax.dynamic_update_slice(buf[name], row[name].astype(buf[name].dtype)[None], (pos,))
                       for name in buf}
                return k + 1, left & (jnp.arange(flat.shape[0]) != at), buf

            buf = {name: c[name] for name in ("ev_t", "ev_neuron", "ev_point", "ev_kind", "ev_side", "ev_lam")}
            _, _, buf = lax.while_loop(lambda s: s[0] < limit, one, (jnp.int32(0), flat, buf))
            over = (added > rows) | (c["count"] + added > size)
            c = dict(c, **buf, count=jnp.minimum(c["count"] + added, size).astype(jnp.int32))
            c["code"] = jnp.where((c["code"] == 0) & over, EVENT_LIMIT, c["code"])
            return c

        def decide(c, candidates, do_record, rows):
            """Classify ``candidates`` [n, h] at the carry's state; update modes, slots, basis, F0; record."""
            zp, zm = one_sided(c["y"], c["modes"], c["slots"], c["t"])
            one = (c["steps"] >= 0).astype(jnp.int32)  # 1, unknown to the compiler
            mode, kind, lam = materialize(kinks.classify(zp, zm, kink), one)
            W, _ = parts(c["y"])
            zsign = jnp.sign(X @ W.T).astype(jnp.int8)
            # both one-sided fields tangent (kind 0): stay on the side where z_ij now is
            keep = jnp.where(zsign != 0, zsign, jnp.where(c["modes"] != 0, c["modes"], conv_side))
            # sliding pairs change only when released (both one-sided fields point the same way, by a margin)
            applies = candidates & jnp.where(c["modes"] == 0, (kind == kinks.CROSS) & kinks.released(zp, zm, release_margin), True)
            new_mode = jnp.where(kind == 0, keep, mode)
            modes = jnp.where(applies, new_mode, c["modes"])
            kind_rec = jnp.where(c["modes"] == 0, kinks.RELEASE, kind)
            rec = applies & (kind != 0) & do_record
            c = record(c, rec, kind_rec, modes, lam, c["t"], rows)
            failed = jnp.any(applies & (kind == kinks.FAIL))
            slots, too_many = slots_of(modes)
            Q = kinks.slide_basis(slots, X)
            c = dict(c, modes=modes, slots=slots, Q=Q)
            c["y"] = snap(c["y"], Q)
            c["code"] = jnp.where(c["code"] == 0, jnp.where(failed, NO_SOLUTION, jnp.where(too_many, EVENT_LIMIT, 0)),
                                  c["code"])
            c["F0"] = field(c["t"], c["y"], modes, Q)
            return c

        c0_rms = jnp.sqrt(jnp.mean(y_start * y_start))

        def err_ratio(err, y0, y1):
            rms = jnp.sqrt(jnp.mean(y0 * y0)) if clock.rms_per_step else c0_rms
            scale = atol + rtol * (jnp.maximum(jnp.abs(y0), jnp.abs(y1)) + RMS_FLOOR * rms)
            return jnp.sqrt(jnp.mean((err / scale) ** 2))

        def stopped(y):
            if clock.stop is None:
                return jnp.asarray(False)
            return clock.stop(unravel(y), ctx)

        def dense_state(c, F, hstep, theta):
            return c["y"] + hstep * (tab.dense(theta) @ F)

        def initial_step(F0):
            """Hairer & Wanner's heuristic: 1% of |y| / |f| in the error norm, within the interval."""
            scale0 = atol + rtol * (jnp.abs(y_start) + RMS_FLOOR * c0_rms)
            d0 = jnp.sqrt(jnp.mean((y_start / scale0) ** 2))
            d1 = jnp.sqrt(jnp.mean((F0 / scale0) ** 2))
            h0 = jnp.where((d0 > 1e-5) & (d1 > 1e-5), 0.01 * d0 / jnp.where(d1 > 0, d1, 1.0), 1e-6 * (stop - start))
            return jnp.minimum(h0, stop - start).astype(dtype)

        # ---- the initial modes ------------------------------------------------------------------------
        W0, _ = parts(y_start)
        z0 = X @ W0.T
        on = is_rep & (jnp.abs(z0) <= on_plane_tol * x_norm[:, None] * jnp.linalg.norm(W0, axis=1)[None, :])
        modes0 = jnp.where(on, conv_side, jnp.sign(z0).astype(jnp.int8)).astype(jnp.int8)
        modes0 = jnp.where(is_rep, modes0, 0).astype(jnp.int8)
        empty = -jnp.ones((h_count, 2), jnp.int32)
        Q0 = jnp.zeros((h_count, 2, d), dtype)
        healthy = bad < 0

        def buffer(size):
            return {"ev_t": jnp.zeros(size, dtype), "ev_neuron": jnp.zeros(size, jnp.int32),
                    "ev_point": jnp.zeros(size, jnp.int32), "ev_kind": jnp.zeros(size, jnp.int8),
                    "ev_side": jnp.zeros(size, jnp.int8), "ev_lam": jnp.zeros(size, dtype)}

        rows = min(n * h_count, CHUNK)  # events one classification may record at once
        carry = {
            "t": jnp.asarray(start, dtype), "y": y_start, "F0": jnp.zeros_like(y_start),
            "h": jnp.asarray(0.0, dtype), "prev_inv": jnp.asarray(1.0, dtype),
            "modes": modes0, "slots": empty, "Q": Q0, **buffer(rows + CHUNK_FLUSH),
            "count": jnp.int32(0), "steps": jnp.int32(0), "code": jnp.int32(0),
            "pending": jnp.asarray(False), "land_h": jnp.asarray(0.0, dtype), "pair": jnp.int32(-1),
            "floor": jnp.zeros((n, h_count), dtype), "landing": jnp.int32(0), "br": jnp.zeros(5, dtype),
            # the first iteration classifies the pairs that start on a hyperplane (recorded only at t = 0)
            "init": jnp.asarray(events_on), "done": ~healthy | stopped(y_start),
        }
        if not events_on:
            carry["F0"] = field(carry["t"], carry["y"], carry["modes"], carry["Q"])
            carry["h"] = initial_step(carry["F0"])

        def running(c):
            return (c["t"] < stop) & (c["code"] == 0) & ~c["done"]

        def crossing(c, F, hstep, y, accept):
            """Earliest crossing in the step [t, t + hstep]: (theta, pair, floor). The margins of the live pairs,
            phi = (M z + 1.5 tol - floor) / tol (negative: more than 1.5 tol past the plane), are scanned at the
            nodes; the first node where min phi < 0 brackets the earliest root of min phi, refined by Illinois
            on the dense output until min phi is in [-0.25, 0)."""
            W_start = parts(y)[0]
            live = is_rep & (c["modes"] != 0)
            tol = event_tol * x_norm[:, None] * jnp.linalg.norm(W_start, axis=1)[None, :]
            tol = jnp.where(tol > 0, tol, 1e-300)
            z0 = X @ W_start.T
            e_start = jnp.where(live, c["modes"] * z0 + tol, 0.0)
            floor = jnp.minimum(e_start, 0.0)
            F_W = jax.vmap(lambda z: parts(z)[0])(F)  # [S, h, d]
            P = jnp.einsum("nd,shd->snh", X, F_W)  # stage derivatives of z

            def phi(B):  # [n, h] at the dense-output weights B [S]
                z = z0 + hstep * jnp.einsum("s,snh->nh", B, P)
                return jnp.where(live, (c["modes"] * z + 1.5 * tol - floor) / tol, jnp.inf)

            B_nodes = jnp.asarray(dense_nodes, dtype)  # [K, S]
            v_nodes = jax.vmap(phi)(B_nodes)  # [K, n, h]
            g_nodes = jnp.min(v_nodes.reshape(NODES, -1), axis=1)
            neg = g_nodes < 0
            found = jnp.any(neg) & accept
            k = jnp.maximum(first_true(neg), 1)
            grid = jnp.asarray(nodes, dtype)
            v_lo, v_hi = v_nodes[k - 1].reshape(-1), v_nodes[k].reshape(-1)
            one = jnp.asarray(1.0, dtype)
            # regula falsi (Illinois) on one pair's polynomial, lo keeping every pair >= 0; a pair found below
            # -0.25 at hi crossed before the current pair's root and takes over (hi only decreases)
            state = (grid[k - 1], grid[k], v_lo, v_hi, first_min(v_hi), one, one,
                     jnp.int32(0), jnp.int32(0))

            def illinois(s):
                lo, hi, v_lo, v_hi, p, m_lo, m_hi, side, it = s
                switch = (v_hi[p] >= -0.25) & (jnp.min(v_hi) < -0.25)
                p = jnp.where(switch, first_min(v_hi), p).astype(jnp.int32)
                m_lo, m_hi = jnp.where(switch, 1.0, m_lo), jnp.where(switch, 1.0, m_hi)
                f_lo, f_hi = v_lo[p] * m_lo, v_hi[p] * m_hi
                theta = hi - f_hi * (hi - lo) / jnp.where(f_hi != f_lo, f_hi - f_lo, -1.0)
                theta = jnp.where((theta > lo) & (theta < hi), theta, 0.5 * (lo + hi))
                v = phi(tab.dense(theta)).reshape(-1)
                below = jnp.min(v) < 0
                new_p = jnp.where(below & (v[p] >= 0), first_min(v), p).astype(jnp.int32)
                same = new_p == p
                m_lo = jnp.where(below, jnp.where(same & (side == -1), 0.5 * m_lo, jnp.where(same, m_lo, 1.0)), 1.0)
                m_hi = jnp.where(below, jnp.where(same, 1.0, 1.0), jnp.where(side == 1, 0.5 * m_hi, m_hi))
                return (jnp.where(below, lo, theta), jnp.where(below, theta, hi), jnp.where(below, v_lo, v),
                        jnp.where(below, v, v_hi), new_p, m_lo, m_hi, jnp.where(below, -1, 1).astype(jnp.int32), it + 1)

            def more(s):
                lo, hi, _, v_hi, p, _, _, _, it = s
                done = (v_hi[p] >= -0.25) & (jnp.min(v_hi) >= -0.25)
                return found & ~done & (hi - lo > ROOT_BRACKET) & (it < ILLINOIS_STEPS)

            lo, hi, _, v_hi, _, _, _, _, _ = lax.while_loop(more, illinois, state)
            theta = jnp.where(found, hi, 2.0)
            pair = first_min(v_hi)
            # the landing's bracket on the Runge-Kutta solution: [0, the first node past the root]
            return theta, pair, floor, grid[k], v_nodes[k].reshape(-1)[pair]

        def release(c, F, hstep, theta_end):
            """Earliest release of a slide in [0, theta_end] of the step (bisection on the dense output)."""
            sliding = is_rep & (c["modes"] == 0)
            need = jnp.any(sliding)

            def released_at(theta):
                zp, zm = one_sided(dense_state(c, F, hstep, theta), c["modes"], c["slots"], c["t"] + theta * hstep)
                return jnp.any(sliding & kinks.released(zp, zm, release_margin))

            def bisect(s):  # iteration 0 checks theta_end; a release there starts the bisection
                lo, hi, it, at_end = s
                mid = jnp.where(it == 0, hi, 0.5 * (lo + hi))
                r = released_at(mid)
                at_end = jnp.where(it == 0, r, at_end)
                lo = jnp.where((it > 0) & ~r, mid, lo)
                hi = jnp.where((it > 0) & r, mid, hi)
                return lo, hi, it + 1, at_end

            _, hi, _, at_end = lax.while_loop(lambda s: need & ((s[2] == 0) | s[3]) & (s[2] <= BISECTIONS), bisect,
                                              (jnp.asarray(0.0, dtype), theta_end, jnp.int32(0), jnp.asarray(False)))
            return jnp.where(need & at_end, hi, 2.0)

        def pair_margin(c, y):
            """phi of the crossing pair at y, in units of its tolerance (as ``crossing``): 0 at 1.5 tol past."""
            W = parts(y)[0]
            safe = jnp.maximum(c["pair"], 0)
            i, j = safe // h_count, safe % h_count
            tol = event_tol * x_norm[i] * jnp.linalg.norm(W[j])
            tol = jnp.where(tol > 0, tol, 1e-300)
            M = c["modes"].reshape(-1)[safe]
            return (M * (X[i] @ W[j]) + 1.5 * tol - c["floor"].reshape(-1)[safe]) / tol

        def body(c):
            t, y = c["t"], c["y"]
            pending, init = c["pending"], c["init"]
            hstep = jnp.where(init, 0.0, jnp.where(pending, c["land_h"], jnp.minimum(c["h"], stop - t)))
            y1, err, F = rk_step(lambda s, z: field(s, z, c["modes"], c["Q"]), tab, t, y, c["F0"], hstep)
            ratio = err_ratio(err, y, y1)
            ok = jnp.isfinite(ratio) & jnp.all(jnp.isfinite(y1))
            accept = ~pending & ~init & ok & (ratio <= 1.0)
            inv = 1.0 / jnp.maximum(ratio, 1e-10)
            factor = SAFETY * inv**expo_i * c["prev_inv"] ** (-expo_p)
            factor = jnp.where(ok, jnp.clip(factor, FACTOR_MIN, jnp.where(accept, FACTOR_MAX, 1.0)), FACTOR_MIN)
            new = dict(c, steps=c["steps"] + 1)
            new["h"] = jnp.where(pending, c["h"], hstep * factor)
            new["prev_inv"] = jnp.where(accept, inv, c["prev_inv"])
            event = jnp.asarray(False)
            land = pending & ok
            if events_on:
                theta_c, pair, floor, theta_node, phi_node = crossing(c, F, hstep, y, accept)
                theta_c = jnp.where(accept, theta_c, 2.0)
                theta_r = jnp.where(accept, release(c, F, hstep, jnp.minimum(theta_c, 1.0)), 2.0)
                theta = jnp.minimum(theta_c, theta_r)
                event = accept & (theta <= 1.0)  # cut the step: land there in the next iterations
                by_release = theta_r < theta_c
                new["pending"] = event | pending
                new["land_h"] = jnp.where(event, theta * hstep, c["land_h"])
                new["pair"] = jnp.where(event, jnp.where(by_release, -1, pair), c["pair"])
                new["floor"] = jnp.where(event, floor, c["floor"])
                new["landing"] = jnp.where(event, 0, c["landing"])
                # bracket [lo, hi] of the landing step length, phi >= 0 at lo, < 0 at hi (from the dense output
                # until measured on the Runge-Kutta solution)
                new["br"] = jnp.where(event, jnp.stack([0.0, theta_node * hstep, 1.0, phi_node, 0.0]).astype(dtype),
                                      c["br"])
                # a landing: regula falsi (Illinois) on the re-step length until the crossing pair is in its window
                phi = pair_margin(c, y1)
                lo, hi, phi_lo, phi_hi, side = c["br"][0], c["br"][1], c["br"][2], c["br"][3], c["br"][4]
                below = phi < 0
                lo, phi_lo = jnp.where(below, lo, hstep), jnp.where(below, phi_lo, phi)
                hi, phi_hi = jnp.where(below, hstep, hi), jnp.where(below, phi, phi_hi)
                phi_lo = jnp.where(below & (side < 0), 0.5 * phi_lo, phi_lo)
                phi_hi = jnp.where(~below & (side > 0), 0.5 * phi_hi, phi_hi)
                guess = hi - phi_hi * (hi - lo) / jnp.where(phi_hi != phi_lo, phi_hi - phi_lo, -1.0)
                guess = jnp.where((guess > lo) & (guess < hi), guess, 0.5 * (lo + hi))
                off = ((phi > 0) | (phi < -0.25)) & (c["landing"] < LANDING_STEPS) & (hi - lo > 1e-15 * jnp.abs(hstep))
                retry = land & (c["pair"] >= 0) & off
                new["land_h"] = jnp.where(retry, guess, new["land_h"])
                new["br"] = jnp.where(retry, jnp.stack([lo, hi, phi_lo, phi_hi, jnp.where(below, -1.0, 1.0)]), new["br"])
                new["landing"] = jnp.where(retry, c["landing"] + 1, new["landing"])
                land = (land & ~retry) | init
                new["pending"] = jnp.where(land, False, new["pending"])
            moved = (accept & ~event) | land
            new["t"] = jnp.where(moved, t + hstep, t)
            new["y"] = jnp.where(moved, snap(y1, c["Q"]), y)
            new["F0"] = jnp.where(moved, F[-1], c["F0"])
            new["code"] = jnp.where((new["code"] == 0) & pending & ~ok, NONFINITE, new["code"])
            if events_on:
                def decide_once(s):
                    _, cc = s
                    e = margins(parts(cc["y"])[0], cc["modes"])
                    crossed = is_rep & (cc["modes"] != 0) & (e < c["floor"])
                    candidates = jnp.where(init, on, crossed | (is_rep & (cc["modes"] == 0)))
                    cc = decide(cc, candidates, ~init | (start == 0), rows)
                    return False, dict(cc, h=jnp.where(init, initial_step(cc["F0"]), cc["h"]), init=jnp.asarray(False))

                _, decided = lax.while_loop(lambda s: s[0], decide_once, (land, new))
                new = jax.tree_util.tree_map(lambda a, b: jnp.where(land, a, b), decided, new)
            new["done"] = c["done"] | (moved & stopped(new["y"]))
            new["code"] = jnp.where((new["code"] == 0) & ~jnp.all(jnp.isfinite(new["y"])), NONFINITE, new["code"])
            new["code"] = jnp.where((new["code"] == 0) & (new["steps"] >= max_steps) & running(new), SOLVER, new["code"])
            collapsed = ~pending & (new["h"] <= 1e-14 * (jnp.abs(t) + jnp.abs(stop)) + 1e-300)
            new["code"] = jnp.where((new["code"] == 0) & collapsed & running(new), jnp.where(ok, SOLVER, NONFINITE),
                                    new["code"])
            return new

        # The step loop carries a small chunk of the event buffer (the batched while_loop selects its whole
        # carry every iteration); an outer loop flushes full chunks into the interval's buffer.
        big = buffer(capacity + rows + CHUNK_FLUSH)

        big_count = jnp.int32(0)

        def chunk(s):
            c, big, big_count = s
            c = lax.while_loop(lambda c: running(c) & (c["count"] < CHUNK_FLUSH), body, c)
            over = big_count + c["count"] > capacity
            big = {k: lax.dynamic_update_slice(big[k], c[k], (big_count,)) for k in big}
            big_count = jnp.minimum(big_count + c["count"], capacity)
            c = dict(c, count=jnp.int32(0), code=jnp.where((c["code"] == 0) & over, EVENT_LIMIT, c["code"]))
            return c, big, big_count

        carry, big, big_count = lax.while_loop(lambda s: running(s[0]), chunk, (carry, big, big_count))
        failed = healthy & (carry["code"] != 0)
        final = jnp.where(jnp.all(jnp.isfinite(carry["y"])), carry["y"], y_start)
        out_params = jax.tree_util.tree_map(lambda a, b: jnp.where(healthy, a, b), unravel(final), params)
        log = {k[3:]: big[k][:capacity] for k in big}
        log["count"] = jnp.where(healthy, big_count, 0)
        log["steps"] = carry["steps"]
        return out_params, jnp.where(failed, carry["t"], bad), jnp.where(failed, carry["code"], 0), log

    return advance


def empty_log(dtype) -> dict:
    """The event log of a method run that records no events (same keys as ``build_advance``'s)."""
    z = lambda dt: jnp.zeros(1, dt)  # noqa: E731
    return {"t": z(dtype), "neuron": z(jnp.int32), "point": z(jnp.int32), "kind": z(jnp.int8), "side": z(jnp.int8),
            "lam": z(dtype), "count": jnp.int32(0), "steps": jnp.int32(0)}


def check_problem(problem):
    """The event-driven flow integrates two-layer nets on the empirical objective (checked at trace time)."""
    if problem.net.name not in NETS:
        raise ValueError(f"the event-driven flow needs model.kind {' or '.join(NETS)}, not {problem.net.name!r}")
    if problem.objective != "empirical":
        raise ValueError("the event-driven flow needs objective empirical")


def config_errors(cfg) -> list[tuple[str, str]]:
    """Config-load checks of the event-driven methods: objective empirical and a piecewise-linear activation
    (``model.kind`` is checked by the method's ``nets``)."""
    from twolayer.activations import make_activation

    errors = []
    if cfg.objective != "empirical":
        errors.append(("objective", f"method {cfg.train.method} needs objective empirical"))
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
