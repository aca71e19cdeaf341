"""Method ``flow``: gradient flow d theta/dt = -(s grad L + weight_decay theta) by an adaptive diffrax solver."""

from __future__ import annotations

from typing import Literal

from twolayer.train.methods import ODEParams, descent_direction, ode_advance, register_method


class FlowParams(ODEParams):
    """``time``, ``solver``, ``rtol``/``atol`` (PID step-size control), ``max_solver_steps``, ``layers``,
    ``weight_decay``."""

    method: Literal["flow"] = "flow"


@register_method("flow", FlowParams, continuous=True,
                 doc="gradient flow d theta/dt = -grad L by an adaptive diffrax solver")
def build_flow(train: FlowParams, shape):
    """The descent direction as an ODE, solved between observation points with PID control."""
    import diffrax

    controller = diffrax.PIDController(rtol=train.rtol, atol=train.atol)

    def vector_field(t, y, args):
        ctx, hyper = args
        return descent_direction(ctx.objective, y, train, hyper, ctx.problem.net)

    return ode_advance(train, vector_field, lambda params, start, stop: controller)
