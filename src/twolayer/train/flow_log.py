"""``flow_log``: gradient flow followed into the late phase (log L down to -1e4), on a log clock.

Margins of homogeneous nets converge only like 1/log t (Lyu & Li 2020; Lyu et al. 2021, Thm 3.1), so
the late phase lives at t ~ e^{1e3...1e4}: unreachable by fixed-step GD and not representable in
float64. ``flow_log`` integrates the SAME gradient-flow trajectory with the clock

    tau = ln(1 + t),   d theta / d tau = (1 + t) (-grad L) = -exp(tau + log L) grad log L,

with an adaptive solver (``train.solver``, PI step control): for two-layer nets with a piecewise-linear
activation the event-driven integrator of ``train/event_flow.py`` (the one of ``flow_exact``: every crossing
of a data hyperplane located and classified, slides followed along the kink, events in ``events.npz`` with
``t`` on this clock), else diffrax. The error of component i is
controlled to ``atol + rtol (|theta_i| + 1e-3 rms(theta))`` with rms(theta) taken at the start of each
observation interval, so neurons that stay tiny (1e-30 next to O(1) ones) neither escape error control
in Phase I nor stall the solver later (the spec's Heun integrator measures ||err|| / (tol ||theta||)).
``log L`` and ``grad log L`` are computed by log-sum-exp (``twolayer.logloss``), so nothing
overflows; and (1 + t) L -> 1/(4 gamma |log L|) in the late phase, so the speed stays finite while
tau ~ -log L grows. This is a time change of gradient flow, as is the spec's d theta/ds =
-grad log L (ds = L dt), but its clock maps back to gradient-flow time in closed form,
t = expm1(tau), with no extra state to integrate.

Contract: for ``flow_log`` the time axis of the run (``train.time``, observation points,
``trajectory["t"]``) is tau = ln(1 + t), the ``log1p`` clock of ``twolayer.clocks``: ``physical_time(tau) = expm1(tau)`` gives t (inf beyond
tau ~ 709). Stop rules: the solve of a seed ends (and the seed stays frozen, healthy, for the
rest of the run) once log L <= ``train.stop_log_loss`` (default -1e4), ||theta||^2 >=
``train.stop_norm_sq`` (default 1e12), or tau + log L = ln((1 + t) L) >= ``clock_range`` (354.9 in float64:
a loss that does not fall like 1/t, where the speed exp(tau + log L) would overflow; ``stopped_by_clock`` tells
these seeds); ``train.max_solver_steps`` is the step budget per observation
interval (exceeding it fails the seed, as for ``flow``). Needs the logistic or exponential loss,
objective empirical, no weight decay.

Cost (explicit solvers): in the late phase the margins of competing support vectors equalize at a
rate ~ D^2 / (4 gamma^2) per unit tau (D: spread of the support points, gamma: normalized margin), and
where a neuron's hyperplane passes through a data point the flow slides along the kink (diffrax stalls
there; the event-driven integrator follows the slide); both force small steps. Easy data reach tau = 1e4 in seconds; for small-margin data (the hinted set) choose a
smaller ``train.time`` (the direction has converged long before) or raise ``train.max_solver_steps``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field, model_validator

from twolayer.fields import field_errors
from twolayer.logloss import log_loss_of_outputs, log_objective
from twolayer.losses import LOSSES
from twolayer.numerics import squared_norm
from twolayer.problem import OBJECTIVES
from twolayer.train import event_flow, kinks
from twolayer.train.methods import ODEParams, ode_advance, register_method

DEFAULT_STOP_LOG_LOSS = -1e4
DEFAULT_STOP_NORM_SQ = 1e12
# the clock's range: a seed stops (healthy, frozen) once ln((1 + t) L) = tau + log L >= CLOCK_RANGE ln(max float)
# (354.9 in float64): the speed exp(tau + log L) times |grad log L| <= ||theta|| < 1e6 then stays below
# sqrt(max float). Only a seed whose loss stops falling like 1/t gets there (in the late phase (1 + t) L ->
# 1/(4 gamma |log L|) < 1): e.g. ReLU neurons dead on some points, L stuck at (k/n) ln 2 and tau + log L ~ tau;
# without the rule exp(tau + log L) overflows at tau ~ 709.8 - log L and the state turns NaN.
CLOCK_RANGE = 0.5
RMS_FLOOR = 1e-3  # absolute tolerance floor, as a fraction of rms(theta) (times rtol)
PCOEFF, ICOEFF = 0.3, 0.4  # PI step-size control: kept hinted-data runs faithful where I-control escaped
# optional floor on the step (fraction of the observation interval), steps at the floor accepted without error
# control. Off: forced steps made stiff runs (hinted data) leave the gradient-flow path. Where the flow slides
# along a kink (a neuron's hyperplane through a data point) error-controlled steps crawl and a seed can hit
# train.max_solver_steps; that is reported as a solver failure, never hidden.
DTMIN_FRACTION = 0.0


class FlowLogParams(ODEParams):
    """``time`` (the end of the clock tau = ln(1 + t)), the solver settings of ``flow``, and the stop rules
    ``stop_log_loss`` (log L at which a seed stops, healthy) and ``stop_norm_sq`` (||theta||^2 likewise);
    ``weight_decay`` must be 0."""

    method: Literal["flow_log"] = "flow_log"
    stop_log_loss: float = DEFAULT_STOP_LOG_LOSS
    stop_norm_sq: float = Field(default=DEFAULT_STOP_NORM_SQ, gt=0)

    TIME_DOC: ClassVar[str] = "the end of the clock tau = ln(1 + t); tau = 1e4 reaches log L ~ -1e4"
    UNUSED: ClassVar[dict[str, str]] = {**ODEParams.UNUSED,
                                        "steps": "is not used by method flow_log; give train.time (tau = ln(1 + t))"}

    @model_validator(mode="after")
    def _no_weight_decay(self):
        if self.weight_decay != 0:
            raise field_errors(type(self).__name__, [("weight_decay", "must be 0 for method flow_log (late-phase "
                                                                      "margin flow)")])
        return self


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


def check_problem(problem):
    """flow_log integrates the stable log form of the empirical loss: the loss must have one."""
    if problem.loss.log_per_sample is None:
        with_log = [name for name, loss in LOSSES.items() if loss.log_per_sample is not None]
        raise ValueError(f"method flow_log needs a loss with a stable log form ({', '.join(with_log)}), "
                         f"not loss.kind {problem.loss.name!r}")
    if not OBJECTIVES.get(problem.objective).log_form:
        with_log = [name for name, o in OBJECTIVES.items() if o.log_form]
        raise ValueError(f"method flow_log needs objective {' or '.join(with_log)}")


def log_clock_out_grad(problem, y):
    """g = -exp(tau + log L) d log L / df: the log clock's speed times -dL/df, from the stable log loss (the
    event-driven integrator's ``FlowClock.out_grad``)."""
    value_and_grad = jax.value_and_grad(lambda f: log_loss_of_outputs(f, y, problem.loss, problem.reduction))

    def out_grad(tau, f):
        ll, g = value_and_grad(f)
        return -jnp.exp(tau + ll) * g

    return out_grad


def clock_range(dtype) -> float:
    """CLOCK_RANGE ln(max float): the bound on ln((1 + t) L) = tau + log L past which flow_log stops a seed."""
    return CLOCK_RANGE * float(np.log(np.finfo(dtype).max))


def stopped_by_clock(tau, log_loss, dtype=jnp.float64):
    """Whether a recorded point (tau, log L) lies past the clock's range (tau + log L >= ``clock_range``): the
    seed was stopped there by that rule (its state frozen since), not by log L or ||theta||^2."""
    return np.asarray(tau) + np.asarray(log_loss) >= clock_range(dtype)


def stop_rule(train: FlowLogParams):
    """``stop(params, ctx, tau)``: log L <= ``train.stop_log_loss``, ||theta||^2 >= ``train.stop_norm_sq``, or
    the clock's range: tau + log L >= ``clock_range`` (the speed exp(tau + log L) near overflow)."""
    stop_ll, stop_sq = float(train.stop_log_loss), float(train.stop_norm_sq)

    def stop(params, ctx, tau):
        ll = log_objective(params, ctx)
        return (ll <= stop_ll) | (squared_norm(params) >= stop_sq) | (tau + ll >= clock_range(ll.dtype))

    return stop


def event_driven(train: FlowLogParams, problem) -> bool:
    """Whether flow_log integrates this problem event-driven (``train/event_flow.py``): a two-layer net with a
    piecewise-linear activation, where the flow crosses and slides along the data hyperplanes, and a solver
    with dense output; the adaptive diffrax solve otherwise."""
    return (train.solver in event_flow.SOLVER_ORDERS and problem.net.name in event_flow.NETS
            and problem.activation.piecewise_linear is not None)


def diffrax_advance(train: FlowLogParams, shape):
    """``advance -> (params, bad, code)`` by diffrax alone (no event handling: it stalls where the flow slides
    along a kink): ``log_clock_field`` with the stop rules as a diffrax event and a tolerance floor relative to
    rms(theta) at the start of each observation interval. flow_log's solve for problems that are not
    ``event_driven``, and the benchmarks' baseline (``benchmarks/exact_flow.py``)."""
    import diffrax

    stop = stop_rule(train)

    def stop_rule_event(tau, params, args, **kwargs):
        ctx, _ = args
        return stop(params, ctx, tau)

    def controller(params, start, stop, hyper):
        # per-component tolerance atol + rtol (|theta_i| + rms(theta(start))): relative to the size of the
        # WHOLE parameter vector, so neurons that stay tiny (1e-30) neither stall the solver at kinks nor
        # escape error control in Phase I (spec §1.5: error measured as ||err|| / (tol ||theta||))
        leaves = jax.tree_util.tree_leaves(params)
        rms = jnp.sqrt(squared_norm(params) / sum(x.size for x in leaves))
        return diffrax.PIDController(rtol=train.rtol, atol=train.atol + train.rtol * RMS_FLOOR * rms,
                                     pcoeff=PCOEFF, icoeff=ICOEFF,
                                     dtmin=DTMIN_FRACTION * (stop - start) if DTMIN_FRACTION else None,
                                     force_dtmin=bool(DTMIN_FRACTION))

    solve = ode_advance(train, log_clock_field(train, shape), controller, event=diffrax.Event(stop_rule_event),
                        stopped_ok=True)

    def advance(params, key, bad, start, stop, ctx, hyper):
        check_problem(ctx.problem)  # static metadata: checked once, at trace time
        return solve(params, key, bad, start, stop, ctx, hyper)

    return advance


@register_method("flow_log", FlowLogParams, continuous=True, clock="log1p", needs=kinks.NEEDS,
                 events=event_flow.LogClockEvents(), doc=(
    "gradient flow into the late phase on the clock tau = ln(1 + t): d theta/d tau = -exp(tau + log L) grad log L "
    "(event-driven across activation boundaries for two-layer nets with a piecewise-linear activation, adaptive "
    "diffrax otherwise; stable log-sum-exp loss; stops at log L <= stop_log_loss or ||theta||^2 >= stop_norm_sq)"))
def build_flow_log(train: FlowLogParams, shape):
    """Event-driven (``event_flow.build_advance`` on the log clock, PI control, error floor relative to
    rms(theta) at the start of each observation interval) where ``event_driven``, else ``diffrax_advance``.
    Returns the interval's event log as a 4th value (empty for the diffrax solve)."""
    clock = event_flow.FlowClock(log_clock_out_grad, stop=stop_rule(train), pcoeff=PCOEFF, icoeff=ICOEFF,
                                 rms_per_step=False)
    events = event_flow.build_advance(train, clock) if train.solver in event_flow.SOLVER_ORDERS else None
    smooth = diffrax_advance(train, shape)

    def advance(params, key, bad, start, stop, ctx, hyper):
        check_problem(ctx.problem)  # static metadata: checked once, at trace time
        if events is not None and event_driven(train, ctx.problem):
            return events(params, key, bad, start, stop, ctx, hyper)
        return (*smooth(params, key, bad, start, stop, ctx, hyper), event_flow.empty_log(ctx.X.dtype))

    return advance
