"""Sparse observation (``observe.sparse``): expensive metrics evaluated only at a subset of the points."""

from __future__ import annotations

import numpy as np
import pytest

import twolayer
from twolayer.config import ConfigError

BASE = {"name": "sparse", "seeds": 2,
        "data": {"kind": "multi_index", "d": 10, "r": 3, "n": 300, "n_test": 300},
        "model": {"kind": "mean_field", "activation": "abs", "width": 12},
        "init": {"kind": "standard"}, "loss": {"kind": "square"}, "objective": "population",
        "train": {"method": "gd", "lr": 0.02, "steps": 200},
        "observe": {"schedule": "log", "points": 25,
                    "metrics": ["loss_population", "symmetrized_variance", "mass_total"]}}
# the hash of BASE before observe.sparse existed (main at 67886e6): configs without it keep their runs
BASE_HASH = "77aa40ecf5585fa0459278a095849f224ac6f3add7de684fc29ac08f8ea0c6bf"


def sparse(every=5, metrics=("symmetrized_variance",)):
    return {**BASE, "observe": {**BASE["observe"], "sparse": {"metrics": list(metrics), "every": every}}}


def test_a_config_without_sparse_keeps_its_hash():
    cfg = twolayer.load_config(BASE)
    assert "sparse" not in cfg.resolved()["observe"] and cfg.config_hash() == BASE_HASH
    assert twolayer.load_config(sparse()).config_hash() != BASE_HASH


def test_sparse_metrics_are_evaluated_at_every_kth_point_and_the_last(tmp_path):
    dense, thin = twolayer.run(BASE, out=tmp_path), twolayer.run(sparse(), out=tmp_path)
    a, b = dense.trajectory, thin.trajectory
    T = len(a["t"])
    assert np.array_equal(a["t"], b["t"]) and np.array_equal(a["loss_population"], b["loss_population"])
    assert np.array_equal(dense.final_params["W"], thin.final_params["W"])  # the dynamics are untouched
    at = sorted({*range(0, T, 5), T - 1})
    for key in ("symmetrized_variance", "symmetrized_variance_se", "symmetrized_variance_order"):
        finite = np.all(np.isfinite(b[key]), axis=tuple(i for i in range(b[key].ndim) if i != 1))
        assert np.flatnonzero(finite).tolist() == at, key
        np.testing.assert_array_equal(b[key][:, at], a[key][:, at])  # the same values where evaluated
    assert thin.summary["final"]["symmetrized_variance"] == dense.summary["final"]["symmetrized_variance"]


def test_sparse_runs_resume_bitwise(tmp_path):
    from twolayer.train.loop import Simulation

    cfg = twolayer.load_config(sparse(every=3))
    full = Simulation(cfg)
    whole = full.trajectory(full.run(full.initial_state()))
    part = Simulation(cfg)
    state = part.initial_state()
    stop = {"n": 0}

    def interrupt(st, i, total):
        stop["n"] = i
        if i == 8:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        part.run(state, on_observation=interrupt)
    resumed = part.trajectory(Simulation(cfg).run(state))
    for key, value in whole.items():
        np.testing.assert_array_equal(resumed[key], value, err_msg=key)


@pytest.mark.parametrize(("observe", "field"), [
    ({"sparse": {"metrics": ["loss_test"], "every": 2}}, "not in observe.metrics"),
    ({"sparse": {"metrics": ["mass_total"], "every": 0}}, "every"),
    ({"sparse": {"metrics": [], "every": 2}}, "metrics"),
])
def test_sparse_config_errors_name_the_field(observe, field):
    with pytest.raises(ConfigError, match=field):
        twolayer.load_config({**BASE, "observe": {**BASE["observe"], **observe}})
