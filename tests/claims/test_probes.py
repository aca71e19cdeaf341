"""Dynamics probes (``twolayer.claims.probes``): a passed prediction seen on its own runs with the dynamics
taken out. One that still passes frozen, reversed and scrambled reads no trained state, and the ledger says so."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from twolayer.claims import Experiment, Results, SyntheticRun, at_least, at_most, claim_records, registered, reproduce
from twolayer.claims.probes import PROBES, ProbeRun, independent_of_dynamics, probe_claims, probe_results
from twolayer.claims.selftest import tiny_config
from twolayer.report import write_report


def synthetic(config):
    t = np.linspace(0.0, 4.0, 5)
    loss = np.array([[1.0, 0.5, 0.25, 0.125, 0.0625], [2.0, 1.0, 0.5, 0.25, 0.125]])
    return SyntheticRun(config, {"t": t, "step": np.arange(5), "loss": loss},
                        final_params={"W": np.ones((2, 4, 2)), "v": np.ones((2, 4))},
                        summary={"final": {"loss": [0.0625, 0.125]}, "events": {"loss_halved": [1.0, 1.0]}})


def test_each_probe_world_takes_the_dynamics_out():
    config = tiny_config("quick")["gd"]
    run = synthetic(config)
    frozen = ProbeRun(run, *PROBES["frozen"])
    assert np.array_equal(frozen.trajectory["t"], run.trajectory["t"])  # the time axis is kept
    assert np.array_equal(frozen.trajectory["loss"], np.repeat(run.trajectory["loss"][:, :1], 5, axis=1))
    assert frozen.summary["final"] == {"loss": [1.0, 2.0]}  # the probe trajectory's last values
    assert frozen.summary["events"].get("loss_halved") in (None, [None, None])  # never halved when frozen
    init = frozen.final_params  # re-sampled from the config, as the run did: not the trained ones
    assert init["W"].shape == (2, 4, 2) and not np.allclose(init["W"], 1.0)
    backwards = ProbeRun(run, *PROBES["reversed"])
    assert np.array_equal(backwards.trajectory["loss"], run.trajectory["loss"][:, ::-1])
    assert backwards.summary["final"] == {"loss": [1.0, 2.0]}
    shuffled = ProbeRun(run, *PROBES["scrambled"])
    assert sorted(shuffled.trajectory["loss"][0]) == sorted(run.trajectory["loss"][0])
    assert not np.array_equal(shuffled.trajectory["loss"], run.trajectory["loss"])
    assert np.array_equal(shuffled.final_params["W"], run.final_params["W"])  # the trained end state kept
    assert run.trajectory["loss"][0, 0] == 1.0  # the source is untouched


def test_probe_results_keep_keys_and_scale():
    exp = Experiment("zz/probe", "t", "f", "d", tiny_config)
    r = Results(exp, "quick", {"gd": synthetic(tiny_config("quick")["gd"])})
    world = probe_results(r, "frozen")
    assert set(world.runs) == {"gd"} and world.scale == "quick" and world.experiment is exp


def test_a_probe_world_s_zeros_fail_the_claim_without_numpy_warnings():
    """A frozen path has no decrease: the claim's log(decrease) is -inf there and fails, silently (these warnings
    came out of every ``make run``)."""
    exp = Experiment("zz/probe-log", "t", "f", "d", tiny_config)

    @exp.claim("log-decrease", "The loss falls by half its initial value or more", kind="prediction")
    def _log_decrease(r):
        loss = r["gd"].trajectory["loss"]  # log of the decrease: -inf frozen, nan reversed (both fail)
        return at_least(float(np.min(np.log((loss[:, 0] - loss[:, -1]) / loss[:, 0]))), math.log(0.5))

    r = Results(exp, "quick", {"gd": synthetic(tiny_config("quick")["gd"])})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = probe_claims(exp, r, {"zz/probe-log:log-decrease": True})["zz/probe-log:log-decrease"]
    assert outcome["frozen"] is False and outcome["reversed"] is False
    assert [str(w.message) for w in caught] == []
    with pytest.warns(RuntimeWarning):  # the same world outside the probe: numpy warns
        exp.claims[0].check(probe_results(r, "frozen"))


@pytest.mark.parametrize(("probes", "independent"), [
    ({"frozen": True, "reversed": True, "scrambled": True}, True),
    ({"frozen": True, "reversed": True, "scrambled": False}, False),
    ({}, False),
])
def test_independent_only_when_every_probe_passed(probes, independent):
    assert independent_of_dynamics(probes) is independent


def test_reproduce_marks_a_prediction_that_reads_no_trained_state(tmp_path):
    exp = Experiment("zz/probed", "Probed", "none", "the tiny run, two claims", tiny_config)

    @exp.claim("loss-bounded", "The loss never exceeds 10", kind="prediction")
    def _bounded(r):
        return at_most(float(r["gd"].trajectory["loss"].max()), 10.0)  # holds for any path of this net

    @exp.claim("loss-falls", "Training lowers the loss below 90 % of its initial value", kind="prediction")
    def _falls(r):
        loss = r["gd"].trajectory["loss"]
        return at_most(float(np.max(loss[:, -1] / loss[:, 0])), 0.9)

    with registered(exp):
        write_report(reproduce([exp.id], out=tmp_path))
    doc = json.loads((tmp_path / "report" / "claims.json").read_text())
    probes = {c["id"]: c["probes"] for c in claim_records(doc)}
    assert probes["zz/probed:loss-bounded"] == {"frozen": True, "reversed": True, "scrambled": True}
    assert probes["zz/probed:loss-falls"]["frozen"] is False and probes["zz/probed:loss-falls"]["reversed"] is False
    assert doc["ledger"]["zz"]["independent of the dynamics"] == 1
    html = (tmp_path / "report" / "index.html").read_text()
    assert 'data-category="independent of the dynamics"' in html
