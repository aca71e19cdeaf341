"""flow_log's clock-range stop: a seed whose loss stops falling like 1/t (a ReLU neuron dead on the negative
points, L stuck at (2/4) ln 2, as seed 4 of lyu2021/orthogonal at paper scale) would overflow the speed
exp(tau + log L) at tau ~ 710.8 and turn NaN; it stops healthy, frozen at a finite state, once
tau + log L >= clock_range (354.9 in float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import twolayer
from twolayer.train import flow_log

ORTHO = {"kind": "toy2d", "pos_angles": [10.0, -25.0], "neg_angles": [160.0, 200.0], "radii": [1.0, 0.8, 0.9, 0.7]}


def stuck_cfg(solver: str) -> dict:
    """One ReLU neuron along e_1 with a > 0: active on the two positive points only, dead on the two negative ones
    (orthogonally separable data keep it so), so L -> (2/4) ln 2."""
    return {"name": "stuck", "seed": 0, "data": ORTHO,
            "model": {"kind": "two_layer", "activation": {"name": "leaky_relu", "slope": 0.0}, "width": 1},
            "init": {"kind": "values", "W": [[0.1, 0.0]], "v": [0.1]},
            "loss": {"kind": "logistic", "reduction": "mean"},
            "train": {"method": "flow_log", "time": 800.0, "rtol": 1e-8, "atol": 1e-300, "solver": solver},
            "observe": {"schedule": "at", "at": [float(t) for t in np.linspace(0.0, 800.0, 17)],
                        "metrics": ["log_loss", "normalized_margin"]}}


@pytest.mark.parametrize("solver", ["tsit5"])
def test_stuck_seed_stops_at_the_clock_range(tmp_path, solver):
    run = twolayer.run(stuck_cfg(solver), out=tmp_path)
    tr = run.trajectory
    tau, ll, gamma = np.asarray(tr["t"]), np.asarray(tr["log_loss"]), np.asarray(tr["normalized_margin"])
    assert run.status == "completed"  # before the rule: 'diverged' at tau ~ 710.8, NaN observables after it
    assert np.all(np.isfinite(ll)) and np.all(np.isfinite(gamma))
    assert tau[-1] > 709.8 - ll[-1]  # the run went past where exp(tau + log L) overflows
    assert ll[-1] == pytest.approx(math.log(0.5 * math.log(2)), abs=1e-6)  # two points at f = 0
    stopped = flow_log.stopped_by_clock(tau, ll)
    assert not stopped[0] and stopped[-1]
    first = int(np.argmax(stopped))
    assert tau[first] >= flow_log.clock_range(np.float64) - ll[first]
    assert np.all(ll[first:] == ll[first]) and np.all(gamma[first:] == gamma[first])  # frozen since the stop


def test_clock_range_is_half_the_float_exponent_range():
    assert flow_log.clock_range(np.float64) == pytest.approx(0.5 * math.log(np.finfo(np.float64).max))
    assert flow_log.clock_range(np.float32) == pytest.approx(0.5 * math.log(np.finfo(np.float32).max), rel=1e-6)
    # a late-phase seed ((1 + t) L -> 1/(4 gamma |log L|)) is far inside it
    assert not flow_log.stopped_by_clock(1e4, -1e4 + 5.0)
