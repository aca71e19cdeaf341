"""Method ``flow``: gradient flow d theta/dt = -(s grad L + weight_decay theta) by an adaptive diffrax solver."""

from __future__ import annotations

from typing import ClassVar, Literal

from twolayer.train.methods import ODEParams, descent_direction, ode_advance, register_method


class FlowParams(ODEParams):
    """``time``, ``solver``, ``rtol``/``atol`` (PID step-size control), ``max_solver_steps``, ``layers``,
    ``weight_decay``. The tolerances are traced values: runs that differ only in them (lemma1-3's atol = 1e-14 eps)
    share one compiled program."""

    method: Literal["flow"] = "flow"

    VALUES: ClassVar[tuple[str, ...]] = (*ODEParams.VALUES, "rtol", "atol")

    def hyper(self) -> dict[str, float]:
        return {**super().hyper(), "rtol": self.rtol, "atol": self.atol}


@register_method("flow", FlowParams, continuous=True,
                 doc="gradient flow d theta/dt = -grad L by an adaptive diffrax solver")
def build_flow(train: FlowParams, shape):
    """The descent direction as an ODE, solved between observation points with PID control."""
    import diffrax

    def vector_field(t, y, args):
        ctx, hyper = args
        return descent_direction(ctx.objective, y, train, hyper, ctx.problem.net)

    def controller(params, start, stop, hyper):
        return diffrax.PIDController(rtol=hyper["rtol"], atol=hyper["atol"])

    return ode_advance(train, vector_field, controller)
