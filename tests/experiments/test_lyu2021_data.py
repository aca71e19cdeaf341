"""Inputs of the lyu2021 experiments that look only at data and starting points (tests, not claims): the
Theorem A.7 data meet A.2-A.5, the Theorem B.19 starts have exactly one good neuron, the embedding's b
are normalized, the local-convergence starts are in the late phase near their direction, the init kind
``values``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twolayer.config import ConfigError, load_config
from twolayer.data import build_dataset
from twolayer.theory import margin as th

ALPHA = 0.2


def test_a7_data_meet_the_assumptions():
    from twolayer.papers.lyu2021.nonsymmetric_general import A7_DATA

    data = build_dataset(load_config({"data": A7_DATA}).data)
    c = th.hinted_prechecks(data.X, data.y, ALPHA)
    assert not th.is_symmetric(data.X, data.y)
    assert c["mu_plus_classifies_all"]  # A.2 [RECON, operational]
    assert c["A3_mu_plus_larger"] and c["mu_plus_norm"] > c["mu_minus_norm"]
    assert c["A5_support_vectors_positive"]
    assert data.info["assumptions"] == c
    # the one-positive-neuron margin beats the symmetric formula on these data: the prediction is not gamma_max
    assert c["gamma_plus"] / 2 > (1 + ALPHA) * c["gamma_star"] / 4
    with pytest.raises(ValueError, match="A.2"):  # negatives as close as positives: A.5 cannot hold
        build_dataset(load_config({"data": {**A7_DATA, "margin_neg": 0.05, "n_neg": 16}}).data)


def test_b19_starts_have_exactly_one_good_neuron():
    from twolayer.papers.lyu2021.loss_convergence import B19_DATA, good_neuron_starts

    data = build_dataset(load_config({"data": B19_DATA}).data)
    w_star, _ = th.max_margin_linear(data.X, data.y)
    W, a = good_neuron_starts()
    assert np.allclose(np.abs(a), np.linalg.norm(W, axis=2))  # balanced: |a_k| = ||w_k||
    proj = np.sign(a) * (W @ w_star)
    assert np.all(proj[:, 0] > 0) and np.all(proj[:, 1:] < 0)
    assert not th.is_symmetric(data.X, data.y)


def test_embedding_b_and_pi_b_preserves_f():
    from twolayer.papers.lyu2021.embedding import B_NEG, B_POS, embed, two_neuron_init

    assert sum(b * b for b in B_POS) == pytest.approx(1.0) and sum(b * b for b in B_NEG) == pytest.approx(1.0)
    W, a = two_neuron_init()
    assert np.all(a[:, 0] > 0) and np.all(a[:, 1] < 0)
    We, ae = embed(W, a)
    x = np.random.default_rng(0).normal(size=(50, 2))
    for s in range(len(a)):
        np.testing.assert_allclose(th.forward(We[s], ae[s], x, ALPHA), th.forward(W[s], a[s], x, ALPHA), rtol=1e-12)


@pytest.mark.parametrize("kind", ["global", "same-sign"])
def test_local_convergence_starts(kind):
    from twolayer.papers.lyu2021._shared import groups_data
    from twolayer.papers.lyu2021.local_convergence import PERTURB, Q_START, set_distance, starts

    data = build_dataset(load_config({"data": groups_data()}).data)
    w_star, _ = th.max_margin_linear(data.X, data.y)
    W, a = starts(kind, 4)
    for s in range(4):
        q = data.y * th.forward(W[s], a[s], data.X, ALPHA)
        assert q.min() == pytest.approx(Q_START)
        assert data.n * np.mean(np.log1p(np.exp(-q))) < math.log(2)  # the late phase: n L < ln 2
    d = set_distance(W, a, w_star, kind)
    assert np.all(d > 0) and np.all(d <= 1.1 * PERTURB[kind])


def test_values_init_runs_and_is_validated(out):
    import twolayer

    W = [[[1.0, 0.0], [0.0, -1.0]], [[0.5, 0.5], [-0.5, 0.2]]]
    v = [[1.0, -1.0], [0.7, -0.5]]
    cfg = {"seeds": 2, "data": {"kind": "symmetric_separable", "d": 2, "n": 20},
           "model": {"kind": "two_layer", "activation": {"name": "leaky_relu", "slope": ALPHA}},
           "init": {"kind": "values", "W": W, "v": v}, "loss": {"kind": "logistic"},
           "train": {"method": "gd", "lr": 0.01, "steps": 3}, "observe": {"schedule": "every", "every": 1,
                                                                          "metrics": ["v"]}}
    run = twolayer.run(cfg, out=out)
    np.testing.assert_allclose(run.trajectory["v"][:, 0], v)
    assert load_config(cfg).width() == 2
    with pytest.raises(ConfigError, match="init.W"):
        load_config({**cfg, "seeds": 3})
    with pytest.raises(ConfigError, match="model.width"):
        load_config({**cfg, "model": {**cfg["model"], "width": 3}})
    with pytest.raises(ConfigError, match="init"):
        load_config({**cfg, "init": {"kind": "values", "W": [[1.0, float("nan")]], "v": [1.0]}})
