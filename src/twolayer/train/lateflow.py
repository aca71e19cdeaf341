"""``flow_log``: gradient flow followed into the late phase (log L down to -1e4), on a log clock.

Margins of homogeneous nets converge only like 1/log t (Lyu & Li 2020; Lyu et al. 2021, Thm 3.1), so
the late phase lives at t ~ e^{1e3...1e4}: unreachable by fixed-step GD and not representable in
float64. ``flow_log`` integrates the SAME gradient-flow trajectory with the clock

    tau = ln(1 + t),   d theta / d tau = (1 + t) (-grad L) = -exp(tau + log L) grad log L,

with an adaptive diffrax solver (``train.solver``, PI step control); the error of component i is
controlled to ``atol + rtol (|theta_i| + 1e-3 rms(theta))`` with rms(theta) taken at the start of each
observation interval, so neurons that stay tiny (1e-30 next to O(1) ones) neither escape error control
in Phase I nor stall the solver later (the spec's Heun integrator measures ||err|| / (tol ||theta||)).
``log L`` and ``grad log L`` are computed by log-sum-exp (``twolayer.logloss``), so nothing
overflows; and (1 + t) L -> 1/(4 gamma |log L|) in the late phase, so the speed stays finite while
tau ~ -log L grows. This is a time change of gradient flow, as is the spec's d theta/ds =
-grad log L (ds = L dt), but its clock maps back to gradient-flow time in closed form,
t = expm1(tau), with no extra state to integrate.

Contract: for ``flow_log`` the time axis of the run (``train.time``, observation points,
``trajectory["t"]``) is tau = ln(1 + t); ``physical_time(tau) = expm1(tau)`` gives t (inf beyond
tau ~ 709). Stop rules: the solve of a seed ends (and the seed stays frozen, healthy, for the
rest of the run) once log L <= ``train.stop_log_loss`` (default -1e4) or ||theta||^2 >=
``train.stop_norm_sq`` (default 1e12); ``train.max_solver_steps`` is the step budget per observation
interval (exceeding it fails the seed, as for ``flow``). Needs the logistic or exponential loss,
objective empirical, no weight decay.

Cost (explicit solvers): in the late phase the margins of competing support vectors equalize at a
rate ~ D^2 / (4 gamma^2) per unit tau (D: spread of the support points, gamma: normalized margin), and
where a neuron's hyperplane passes through a data point the flow slides along the kink; both force
small steps. Easy data reach tau = 1e4 in seconds; for small-margin data (the hinted set) choose a
smaller ``train.time`` (the direction has converged long before) or raise ``train.max_solver_steps``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from twolayer.logloss import LOG_LOSSES, log_loss_of_outputs, log_objective
from twolayer.train.exact_flow import EventTable
from twolayer.train.kinks import NEEDS
from twolayer.train.methods import METHODS, NONFINITE, SOLVER, Method, _require, tree_all_finite, tree_where

DEFAULT_STOP_LOG_LOSS = -1e4
DEFAULT_STOP_NORM_SQ = 1e12
RMS_FLOOR = 1e-3  # absolute tolerance floor, as a fraction of rms(theta) (times rtol)
PCOEFF, ICOEFF = 0.3, 0.4  # PI step-size control: kept hinted-data runs faithful where I-control escaped
# optional floor on the step (fraction of the observation interval), steps at the floor accepted without error
# control. Off: forced steps made stiff runs (hinted data) leave the gradient-flow path. Where the flow slides
# along a kink (a neuron's hyperplane through a data point) error-controlled steps crawl and a seed can hit
# train.max_solver_steps; that is reported as a solver failure, never hidden.
DTMIN_FRACTION = 0.0


def physical_time(tau):
    """Gradient-flow time t = expm1(tau) of the flow_log clock tau = ln(1 + t)."""
    with np.errstate(over="ignore"):
        return np.expm1(np.asarray(tau, dtype=np.float64))


def log_clock(t):
    """tau = ln(1 + t), the flow_log clock of gradient-flow time t."""
    return np.log1p(np.asarray(t, dtype=np.float64))


def _validate(train):
    _require(train.time is not None, "time", "is required for method flow_log (the end of the clock "
                                             "tau = ln(1 + t); tau = 1e4 reaches log L ~ -1e4)")
    _require(train.steps is None, "steps", "is not used by method flow_log; give train.time (tau = ln(1 + t))")
    _require(train.lr is None, "lr", "is not used by method flow_log (an adaptive solver picks its steps)")
    _require(train.batch_size is None, "batch_size", "is only used by method sgd")
    _require(train.weight_decay == 0, "weight_decay", "must be 0 for method flow_log (late-phase margin flow)")
    if train.stop_log_loss is None:
        object.__setattr__(train, "stop_log_loss", DEFAULT_STOP_LOG_LOSS)
    if train.stop_norm_sq is None:
        object.__setattr__(train, "stop_norm_sq", DEFAULT_STOP_NORM_SQ)


def log_clock_field(train, ctx):
    """The vector field d theta/d tau = -s exp(tau + log L) grad log L (s = net.time_scale), zero on
    frozen layers (``train.layers = first``)."""

    def field(tau, params, args):
        ctx, _ = args
        ll, g = jax.value_and_grad(log_objective)(params, ctx)
        speed = jnp.exp(tau + ll) * ctx.problem.net.time_scale(params)
        return {k: (jnp.zeros_like(params[k]) if (k == "v" and train.layers == "first") else -speed * g[k])
                for k in params}

    return field


def _check_problem(problem):
    if problem.loss.name not in LOG_LOSSES:
        raise ValueError(f"method flow_log needs a loss with a stable log form ({', '.join(LOG_LOSSES.names())}), "
                         f"not loss.kind {problem.loss.name!r}")
    if problem.objective != "empirical":
        raise ValueError("method flow_log needs objective empirical")


def log_clock_out_grad(problem, y):
    """g = -exp(tau + log L) d log L / df: the log clock's speed times -dL/df, from the stable log loss."""
    value_and_grad = jax.value_and_grad(lambda f: log_loss_of_outputs(f, y, problem.loss.name, problem.reduction))

    def out_grad(tau, f):
        ll, g = value_and_grad(f)
        return -jnp.exp(tau + ll) * g

    return out_grad


def _stop_rule(train):
    stop_ll, stop_sq = float(train.stop_log_loss), float(train.stop_norm_sq)

    def stop(params, ctx):
        sq = sum(jnp.sum(x**2) for x in jax.tree_util.tree_leaves(params))
        return (log_objective(params, ctx) <= stop_ll) | (sq >= stop_sq)

    return stop


def _build(train, ctx):
    """Event-driven (``train/exact_flow.py``) for two-layer nets with a piecewise-linear activation, where
    the flow crosses and slides along the data hyperplanes; the adaptive diffrax solve otherwise."""
    from twolayer.train import exact_flow, kinks

    clock = exact_flow.Clock(log_clock_out_grad, stop=_stop_rule(train), pcoeff=PCOEFF, icoeff=ICOEFF,
                             rms_per_step=False)
    events = exact_flow.build_advance(train, clock) if train.solver in exact_flow.SOLVER_ORDERS else None
    smooth = diffrax_build(train, ctx)

    def advance(params, key, bad, start, stop, ctx, hyper):
        _check_problem(ctx.problem)
        if events is not None and ctx.problem.net.name == "two_layer" and ctx.problem.activation.name in kinks.KINKS:
            return events(params, key, bad, start, stop, ctx, hyper)
        return (*smooth(params, key, bad, start, stop, ctx, hyper), exact_flow.empty_log(ctx.X.dtype))

    return advance


_build.needs = NEEDS


def diffrax_build(train, ctx):
    """The adaptive diffrax solve of the log-clock flow (no event handling: it stalls where the flow slides
    along a kink). Used for smooth activations, and as the benchmarks' baseline."""
    import diffrax

    from twolayer.train.methods import flow_solvers

    solvers = flow_solvers()
    solver = solvers[train.solver]()
    term = diffrax.ODETerm(log_clock_field(train, ctx))
    stop_ll, stop_sq = float(train.stop_log_loss), float(train.stop_norm_sq)

    def stop_rule(tau, params, args, **kwargs):
        ctx, _ = args
        sq = sum(jnp.sum(x**2) for x in jax.tree_util.tree_leaves(params))
        return (log_objective(params, ctx) <= stop_ll) | (sq >= stop_sq)

    event = diffrax.Event(stop_rule)

    def advance(params, key, bad, start, stop, ctx, hyper):
        _check_problem(ctx.problem)  # static metadata: checked once, at trace time
        # per-component tolerance atol + rtol (|theta_i| + rms(theta(start))): relative to the size of the
        # WHOLE parameter vector, so neurons that stay tiny (1e-30) neither stall the solver at kinks nor
        # escape error control in Phase I (spec §1.5: error measured as ||err|| / (tol ||theta||))
        leaves = jax.tree_util.tree_leaves(params)
        rms = jnp.sqrt(sum(jnp.sum(x**2) for x in leaves) / sum(x.size for x in leaves))
        controller = diffrax.PIDController(rtol=train.rtol, atol=train.atol + train.rtol * RMS_FLOOR * rms,
                                           pcoeff=PCOEFF, icoeff=ICOEFF,
                                           dtmin=DTMIN_FRACTION * (stop - start) if DTMIN_FRACTION else None,
                                           force_dtmin=bool(DTMIN_FRACTION))
        sol = diffrax.diffeqsolve(
            term, solver, t0=start, t1=stop, dt0=None, y0=params, args=(ctx, hyper),
            stepsize_controller=controller, saveat=diffrax.SaveAt(t1=True), event=event,
            max_steps=train.max_solver_steps, throw=False,
        )
        new = jax.tree_util.tree_map(lambda y: y[-1], sol.ys)
        finite = tree_all_finite(new)
        done = (sol.result == diffrax.RESULTS.successful) | (sol.result == diffrax.RESULTS.event_occurred)
        ok = done & finite & (bad < 0)
        failed_now = (bad < 0) & ~ok
        code = jnp.where(failed_now, jnp.where(finite, SOLVER, NONFINITE), 0)
        return tree_where(ok, new, params), jnp.where(failed_now, start, bad), code

    return advance


class LogClockEvents(EventTable):
    """flow_log's event table: the same rows, with ``t`` on the log clock tau = ln(1 + t)."""

    refine = False


METHODS.register("flow_log", Method(
    "flow_log", True, _validate, _build,
    "gradient flow into the late phase on the clock tau = ln(1 + t): d theta/d tau = -exp(tau + log L) grad log L "
    "(event-driven across activation boundaries for piecewise-linear activations, adaptive diffrax otherwise; "
    "stable log-sum-exp loss; stops at log L <= stop_log_loss or ||theta||^2 >= stop_norm_sq)",
    events=LogClockEvents))
