"""lyu2021 tolerances derived in issue 27 ('lyu2021 faithful'): the integrator's resolution of the hinted margin
(hinted.margin_resolution, limit_gap_rule), the quasi-static drift prediction on a KKT direction
(kkt_directions.stationary_offset), flow-leaves' smoothed-margin rule and converges-back's 'never farther than the
start' (spread) rule, each on inputs where it must fail."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from twolayer.claims import Results, get
from twolayer.papers.lyu2021 import hinted, kkt_directions, kkt_symmetric, local_convergence
from twolayer.papers.lyu2021._shared import LN_LN2, RTOL
from twolayer.theory.margin import max_margin_linear, one_neuron_margin

ALPHA = 0.2


def _spec(exp_id: str, name: str):
    exp = get(exp_id)
    return exp, next(s for s in exp.claims if s.id == name)


# -- hinted:margin-gamma-plus ------------------------------------------------------------------------

def _two_support_data():
    """Two positive support vectors (1, +-1)/sqrt 2 at norm 1 (w^+ = (1, 0), gamma^+ = 1/sqrt 2) and a far point
    (1000, 0): the far point is no support vector and must not enter the resolution."""
    X = np.array([[1.0, 1.0], [1.0, -1.0]]) / math.sqrt(2)
    X = np.vstack([X, [[1000.0, 0.0]], [[-10.0, 0.0]]])
    y = np.array([1.0, 1.0, 1.0, -1.0])
    return X, y


def test_margin_resolution_is_rtol_times_support_norm_over_half_gamma_plus():
    X, y = _two_support_data()
    w_plus, g_plus = one_neuron_margin(X, y, ALPHA, +1)
    np.testing.assert_allclose(w_plus, [1.0, 0.0], atol=1e-12)
    assert g_plus == pytest.approx(1 / math.sqrt(2), rel=1e-12)
    eps = hinted.margin_resolution(X, y, w_plus, g_plus)
    assert eps == pytest.approx(RTOL * 1.0 / (g_plus / 2), rel=1e-12)  # ||x_sv|| = 1, not the far point's 1000
    assert hinted.margin_resolution(X, y, w_plus, g_plus, rtol=1e-8) == pytest.approx(eps / 100, rel=1e-12)


def test_margin_resolution_of_the_hinted_data_is_3_8e_4():
    """The hinted data's support vectors of {(x_i^+, y_i)} are the two hints eps w* +- K w_perp (||x|| = 1)."""
    exp = get("lyu2021/hinted")
    from twolayer.claims.falsifiers import SyntheticRun
    from twolayer.claims.runs import run_dataset

    data = run_dataset(SyntheticRun(exp.run_configs("quick")["small"]))
    w_plus, g_plus = one_neuron_margin(data.X, data.y, ALPHA, +1)
    assert hinted.margin_resolution(data.X, data.y, w_plus, g_plus) == pytest.approx(3.8238e-4, rel=1e-3)


def _late_series(t, gap):
    ratio = 1.0 - np.atleast_2d(gap)
    log_sum = np.tile(math.log(2.0) - t - 1.0, (ratio.shape[0], 1))  # n L < ln 2 from tau = 0 on
    return ratio, log_sum


def test_limit_gap_rule_passes_a_gap_within_the_resolution_or_closing_like_c_over_tau():
    t = np.geomspace(1.0, 100.0, 60)
    eps = 3.8e-4
    ratio, log_sum = _late_series(t, np.full_like(t, 2e-4))  # at the resolution floor, flat
    assert hinted.limit_gap_rule(t, ratio, log_sum, eps)[0] == pytest.approx(2e-4 / eps)
    ratio, log_sum = _late_series(t, 0.5 / (1 + t))  # a finite-time gap, above the floor at tau_end
    assert hinted.limit_gap_rule(t, ratio, log_sum, eps)[0] <= 1.0


def test_limit_gap_rule_fails_a_gap_that_stays_or_is_not_yet_late():
    t = np.geomspace(1.0, 100.0, 60)
    eps = 3.8e-4
    ratio, log_sum = _late_series(t, np.full_like(t, 0.03))  # the spec's P11 lower end 0.97: another limit
    assert hinted.limit_gap_rule(t, ratio, log_sum, eps)[0] > 1.0
    ratio, _ = _late_series(t, 0.5 / (1 + t))
    early = np.tile(np.where(t < 50, 0.0, LN_LN2 - 1.0), (1, 1))  # not in the late phase at tau_end / 10
    assert hinted.limit_gap_rule(t, ratio, early, eps)[0] == pytest.approx(0.5 / (1 + t[-1]) / eps)
    assert hinted.limit_gap_rule(t, ratio, early, eps)[0] > 1.0


def test_margin_gamma_plus_fails_just_above_the_resolution():
    exp, spec = _spec("lyu2021/hinted", "margin-gamma-plus")
    runs = hinted.ideal_runs(exp.run_configs("quick"))
    assert spec.check(Results(exp, "quick", runs)).passed
    small = runs["small"]
    g = small.trajectory["normalized_margin"]
    small.trajectory["normalized_margin"] = np.where(np.arange(g.shape[1]) == g.shape[1] - 1, g * (1 + 5e-4), g)
    check = spec.check(Results(exp, "quick", runs))
    assert not check.passed, check.details


# -- kkt-directions:stationary-on-kkt ----------------------------------------------------------------

def _global_max_width2(X, y):
    """(w*, -w*, 1, -1)/2 on symmetric data: the global max of width 2 (Lemma F.2)."""
    w_star, _ = max_margin_linear(X, y)
    return 0.5 * np.array([w_star, -w_star]), np.array([0.5, -0.5])


def test_stationary_offset_falls_like_one_over_q_min():
    data, _ = local_convergence._w_star()  # the 2-D symmetric data (n = 20)
    W, a = _global_max_width2(data.X, data.y)
    d50, m50 = kkt_directions.stationary_offset(W, a, data.X, data.y, 50.0)
    d200, m200 = kkt_directions.stationary_offset(W, a, data.X, data.y, 200.0)
    assert 1e-4 < d50 < 1e-1 and 0 < m50 < 0.05
    assert 50 * d50 == pytest.approx(200 * d200, rel=2e-2)
    assert 50 * m50 == pytest.approx(200 * m200, rel=2e-2)


def test_stationary_offset_is_nil_with_a_single_support_vector():
    """One support vector: its loss weight alone matches the KKT multiplier, nothing to re-weight (the far points'
    weights are e^{-q_min (q_i / q_min - 1)} ~ e^{-50}); two support vectors with unequal multipliers: O(1 / q_min)."""
    X = np.array([[1.0, 0.0], [3.0, 1.0], [-10.0, 0.0]])  # q = 0.5, 1.5, 1.0: x_1 alone holds the margin
    y = np.array([1.0, 1.0, -1.0])
    W, a = np.array([[1.0, 0.0]]) / math.sqrt(2), np.array([1.0]) / math.sqrt(2)  # one neuron along w^+ = (1, 0)
    drift, change = kkt_directions.stationary_offset(W, a, X, y, 50.0)
    assert drift < 1e-8 and abs(change) < 1e-8
    X2 = np.array([[1.0, 1.0], [1.0, -2.0]])  # two support vectors of different norms
    y2 = np.array([1.0, 1.0])
    w_plus, _ = max_margin_linear(X2, y2)
    drift2, change2 = kkt_directions.stationary_offset(w_plus[None] / math.sqrt(2), np.array([1 / math.sqrt(2)]),
                                                       X2, y2, 50.0)
    assert drift2 > 1e-4 and change2 > 1e-4


def test_smoothed_margin_ascent_stops_on_a_stationary_point():
    X = np.array([[1.0, 1.0], [1.0, -2.0]])
    y = np.array([1.0, 1.0])
    w_plus, _ = max_margin_linear(X, y)
    theta = np.concatenate([w_plus, [1.0]]) / math.sqrt(2)
    u = kkt_directions.smoothed_margin_ascent(theta, X, y, 1, 100.0)
    assert np.linalg.norm(u) == pytest.approx(1.0)
    # the tangential gradient of gamma~ vanishes: the two support points' weights match the KKT multipliers
    from twolayer.theory.kkt import margins, margins_jacobian

    z = 100.0 * margins(u, X, y, ALPHA, 1)
    w = np.exp(-np.logaddexp(0.0, z) - np.logaddexp.reduce(kkt_directions._log_softplus_neg(z)))
    g = w @ margins_jacobian(u, X, y, ALPHA, 1)
    assert np.linalg.norm(g - (g @ u) * u) < 1e-9
    # stationary where the weights e^{-z_i} split 2 : 1 like the multipliers (2/3, 1/3) of (1, 1), (1, -2): with w at
    # angle delta, q_2 - q_1 = -1.5 sin(delta) = ln 2 / 100, and ||u - theta|| = |delta| ||w|| = |delta| / sqrt 2
    delta = math.asin(math.log(2.0) / 150.0)
    assert np.linalg.norm(u - theta) == pytest.approx(delta / math.sqrt(2), rel=1e-2)


def test_stationary_on_kkt_fails_a_drift_just_above_the_prediction():
    exp, spec = _spec("lyu2021/kkt-directions", "stationary-on-kkt")
    configs = exp.run_configs("quick")
    runs = kkt_directions.ideal_runs(configs)
    assert spec.check(Results(exp, "quick", runs)).passed
    run = runs["nonsymmetric"]
    predicted = kkt_directions.start_predictions(run, "nonsymmetric", "quick")[0]
    W = run.trajectory["neuron_weights"].copy()  # [S, T, m, d]: turn seed 0 by 1.5 x its prediction at the end
    a = run.trajectory["v"]
    theta = np.concatenate([W[0].reshape(W.shape[1], -1), a[0]], axis=1)
    rng = np.random.default_rng(0)
    xi = rng.normal(size=theta.shape[1])
    u0 = theta[0] / np.linalg.norm(theta[0])
    xi -= (xi @ u0) * u0
    xi /= np.linalg.norm(xi)
    bump = 1.5 * predicted[0] * np.linalg.norm(theta[-1]) * xi
    W[0, -1] += bump[: W[0, -1].size].reshape(W[0, -1].shape)
    run.trajectory["neuron_weights"] = W
    run.trajectory["v"] = a.copy()
    run.trajectory["v"][0, -1] += bump[W[0, -1].size:]
    assert not spec.check(Results(exp, "quick", runs)).passed


# -- kkt-symmetric:flow-leaves -----------------------------------------------------------------------

def test_flow_leaves_needs_the_smoothed_margin_above_the_points_margin():
    """A seed whose margin rises (0.9882 gamma_max) while its smoothed margin stays below the point's (0.9282):
    the limit may still be the point, so the claim fails."""
    exp, spec = _spec("lyu2021/kkt-symmetric", "flow-leaves")
    runs = kkt_symmetric.ideal_runs(exp.run_configs("quick"))
    assert spec.check(Results(exp, "quick", runs)).passed
    bad = copy.deepcopy(runs)
    gamma_max = kkt_symmetric.data_gamma_max(exp.run_configs("quick")["flow"])
    bad["flow"].trajectory["smoothed_margin"][1] = 0.9282 * gamma_max * (1 - 1e-5)
    assert not spec.check(Results(exp, "quick", bad)).passed


# -- local-convergence:converges-back ----------------------------------------------------------------

def test_converges_back_fails_when_the_distance_rises_above_its_start():
    """The spread rule: the distance never exceeds its start by more than rtol; a rise of 1e-4 (one observation, one
    seed, then back on course) fails."""
    exp, spec = _spec("lyu2021/local-convergence", "converges-back")
    runs = local_convergence.ideal_runs(exp.run_configs("quick"))
    assert spec.check(Results(exp, "quick", runs)).passed
    run = runs["global"]
    W, a = run.trajectory["neuron_weights"].copy(), run.trajectory["v"].copy()
    k = 3  # an early observation: push seed 0 away from theta_bar by enlarging its deviation there
    data_w = local_convergence._w_star()[1]
    Wb, ab = local_convergence.reference_direction("global", data_w)
    norm = math.sqrt(np.sum(W[0, k] ** 2) + np.sum(a[0, k] ** 2))
    d0 = local_convergence.set_distance(W[0, 0], a[0, 0], data_w, "global")
    dk = local_convergence.set_distance(W[0, k], a[0, k], data_w, "global")
    grow = (d0 + 1e-4) / dk
    W[0, k] = (Wb + (W[0, k] / norm - Wb) * grow) * norm
    a[0, k] = (ab + (a[0, k] / norm - ab) * grow) * norm
    run.trajectory["neuron_weights"], run.trajectory["v"] = W, a
    assert local_convergence.set_distance(W[0, k], a[0, k], data_w, "global") > d0 + 5e-5
    check = spec.check(Results(exp, "quick", runs))
    assert not check.passed, check.details
