"""Method ``flow_exact``: gradient flow d theta/dt = -(grad L + weight_decay theta) of a two-layer net with a
piecewise-linear activation (relu, leaky_relu, abs, linear), integrated exactly across activation
boundaries (Min et al. §1.3 and App. E).

Between changes of the activation pattern the field is smooth and is integrated by an adaptive
Runge-Kutta pair (``train.solver``: tsit5, dopri5 or dopri8, whose dense output locates events); every
crossing of a hyperplane <x_i, w_j> = 0 is located by root finding and classified from the two one-sided
fields (cross, Filippov slide, non-unique E.4: the regular stay-put solution, no Caratheodory solution
E.3: the seed ends ``failed``). The integrator is ``train/event_flow.py``, the decisions ``train/kinks.py``.
Every event is a row of the run's ``events.npz`` (``EventTable``); ``pattern_changes`` counts them at the
observation times, and trajectory events (t1, t2, ...) are refined to solver accuracy
(``train/event_times.py``).
"""

from __future__ import annotations

from typing import Literal

from twolayer.train import event_flow, kinks
from twolayer.train.methods import ODEParams, register_method


# XLA:CPU's fusion emitters off for the flow_exact program: its ~500 small kernels compile ~25 % faster (TOY-A, 4
# seeds: 3.6-4.0 s against 4.8-5.6 s, one process each, alternating; docs/performance.md) and its outputs are
# bitwise the same (the flow_exact references of benchmarks/event_flow_reference.py). Not for flow_log: its outputs
# differ in the last bits on all 3 flow_log references (cause not traced), and the references are bitwise.
CPU_COMPILER_OPTIONS = (("xla_cpu_use_fusion_emitters", False),)


class FlowExactParams(ODEParams):
    """``time``, ``solver`` (a pair with dense output: tsit5, dopri5, dopri8), ``rtol``/``atol`` (error per
    component atol + rtol (max(|y0|, |y1|) + 1e-3 rms(y0))), ``max_solver_steps`` (per observation interval),
    ``layers``, ``weight_decay``."""

    method: Literal["flow_exact"] = "flow_exact"
    solver: Literal["tsit5", "dopri5", "dopri8"] = "tsit5"


@register_method("flow_exact", FlowExactParams, continuous=True, needs=kinks.NEEDS, nets=event_flow.NETS,
                 events=event_flow.EventTable(), config_errors=event_flow.config_errors,
                 cpu_compiler_options=CPU_COMPILER_OPTIONS, doc=(
                     "gradient flow integrated exactly across activation boundaries: adaptive Runge-Kutta between "
                     "pattern changes, every crossing of <x_i, w_j> = 0 located by root finding and classified "
                     "(cross, slide, non-unique, no Caratheodory solution); events in events.npz"))
def build_flow_exact(train: FlowExactParams, shape):
    """The event-driven integrator on the plain clock t (g = -dL/df)."""
    return event_flow.build_advance(train, event_flow.PLAIN)
