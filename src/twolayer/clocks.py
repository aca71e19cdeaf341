"""Clocks: how a training method's time axis maps to gradient-flow time t.

Every run records its observations on its method's clock (``trajectory["t"]``, ``train.time``,
observation points). Most methods use t itself (GD and SGD at t = lr k, ``flow``); ``flow_log``
integrates the same gradient flow on tau = ln(1 + t) (Lyu et al. 2021: margins converge like
1/log t, so the late phase lives at t ~ e^{1e3...1e4}). A method names its clock in its registry
entry (``Method.clock``); analyses that need t call ``CLOCKS.get(name).flow_time(axis)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from twolayer.registry import Registry


@dataclass(frozen=True)
class Clock:
    """A time axis: ``flow_time`` maps it to gradient-flow time t, ``from_flow_time`` back; ``label``
    names the axis once mapped to t (plots), ``doc`` describes the axis itself."""

    name: str
    flow_time: Callable[[np.ndarray], np.ndarray]
    from_flow_time: Callable[[np.ndarray], np.ndarray]
    doc: str
    label: str = "t"


def physical_time(tau):
    """Gradient-flow time t = expm1(tau) of the clock tau = ln(1 + t) (inf beyond tau ~ 709)."""
    with np.errstate(over="ignore"):
        return np.expm1(np.asarray(tau, dtype=np.float64))


def log_clock(t):
    """tau = ln(1 + t), the log clock of gradient-flow time t."""
    return np.log1p(np.asarray(t, dtype=np.float64))


def _identity(t):
    return np.asarray(t, dtype=np.float64)


CLOCKS: Registry[Clock] = Registry("clock")
CLOCKS.register("t", Clock("t", _identity, _identity, "continuous time t (lr * steps for GD/SGD)"))
CLOCKS.register("log1p", Clock("log1p", physical_time, log_clock,
                               "tau = ln(1 + t) (late-phase flow clock; physical time t = expm1(tau))",
                               label="t (physical time expm1(tau))"))
