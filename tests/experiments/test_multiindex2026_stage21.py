"""multiindex2026/stage21's helpers for Lemmas D.9 / B.2 (the law of the best start at T_1) and Lemma D.15 (the dense
neurons' fourth moments): each statistic passes where its statement holds and fails where it does not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from twolayer.claims import Results, get
from twolayer.papers.multiindex2026 import stage21
from twolayer.papers.multiindex2026._shared import ABS, synthetic_run
from twolayer.theory import multi_index as th

R, M = 10, 160  # the quick scale's r and m
H = th.HermiteSums.of(ABS, K=1000)


def best_of_m_draws(n: int, r: int = R, m: int = M, seed: int = 0) -> np.ndarray:
    """n draws of the max of m Beta(1/2, (r - 1)/2) variables, by inverting its CDF F^m."""
    u = np.random.default_rng(seed).uniform(size=n)
    return stats.beta(0.5, (r - 1) / 2).ppf(u ** (1.0 / m))


def claim(claim_id: str):
    exp = get("multiindex2026/stage21")
    return exp, next(spec for spec in exp.claims if spec.id == claim_id)


# -- Lemma D.9 / B.2 ----------------------------------------------------------------------------------

def test_best_of_m_cdf_is_the_order_statistic():
    for q in (0.1, 0.5, 0.9):
        assert stage21.best_of_m_cdf(stage21.order_statistic(R, M, q), R, M) == pytest.approx(q, abs=1e-9)
    x = best_of_m_draws(20_000, seed=1)
    assert stats.kstest(stage21.best_of_m_cdf(x, R, M), "uniform").pvalue > 0.01


def test_pulled_back_inverts_the_p_ode():
    q = np.array([0.3, 0.5, 0.7])
    p = np.array([th.alignment_ode([0.0, 2.5], x, H)[-1] for x in q])
    assert np.all(p > q)
    assert stage21.pulled_back(p, 2.5, H) == pytest.approx(q, rel=1e-6)
    assert stage21.pulled_back(p, 0.0, H) == pytest.approx(p)


def test_ks_distances_and_their_critical_value():
    assert stage21.ks_below([0.5]) == pytest.approx(0.5) and stage21.ks_above([0.5]) == pytest.approx(0.5)
    assert stage21.ks_below(np.full(10, 0.01)) == pytest.approx(0.99)  # everything far to the left of the law
    assert stage21.ks_above(np.full(10, 0.99)) == pytest.approx(0.99)
    n = 40
    assert stage21.ks_critical(n) == pytest.approx(stats.ksone.ppf(0.975, n))
    assert stage21.ks_critical(20) == pytest.approx(0.294, abs=1e-3)


@pytest.mark.parametrize(("draws", "passes"), [
    ("exact", True),  # no drift: the lower end of the band
    ("carried", True),  # the whole p-ODE drift over [0, T_1]: the upper end
    ("shrunk", False),  # every start 15 % below the law (a stretched coordinate elsewhere)
    ("carried-twice", False),  # twice the p-ODE's time: more drift than the orders >= 4 give
])
def test_start_band_tells_the_law_from_shifted_ones(draws, passes):
    n, T1 = 200, 2.9
    x = best_of_m_draws(n, seed=2)
    p = {"exact": x, "carried": np.array([th.alignment_ode([0.0, T1], v, H)[-1] for v in x]), "shrunk": 0.85 * x,
         "carried-twice": np.array([th.alignment_ode([0.0, 2 * T1], v, H)[-1] for v in x])}[draws]
    below, above = stage21.start_band_distances(p, np.full(n, T1), R, M, H)
    assert (max(below, above) <= stage21.ks_critical(n)) == passes, (below, above)


def test_lemma_constants_at_the_figure1_sizes():
    assert stage21.lemma_d9_band(10, 160) == pytest.approx((0.630, 1.677), abs=1e-3)
    assert stage21.lemma_b2_bounds(20, 250) == pytest.approx((0.426, 0.990), abs=1e-3)
    assert stage21.lemma_omega(10) < 0 < stage21.lemma_omega(20) == pytest.approx(0.0928, abs=1e-4)
    assert stage21.lemma_d15_error(10, 160) == pytest.approx(7.0e-6, rel=0.01)
    assert stage21.lemma_d15_floor(10) < 0 and stage21.lemma_d15_floor(20) == pytest.approx(0.539, abs=1e-3)


def test_start_law_claim_fails_on_starts_outside_the_band():
    """Every best start at the law's 1 % quantile (below the law) or at 0.97 (above the p-ODE's reach): the claim
    fails, each time on the side that is wrong."""
    exp, spec = claim("best-start-law")
    configs = exp.run_configs("quick")
    sides = {"starts-below-the-law": 0, "starts-above-the-p-ode": 1}
    for f in spec.falsifiers:
        if f.kind == "synthetic":
            check = spec.check(Results(exp, "quick", f.build(configs)))
            assert not check.passed, f.name
            assert check.measured[sides[f.name]] > 0.9 > check.measured[1 - sides[f.name]], (f.name, check.measured)


# -- Lemma D.15 -----------------------------------------------------------------------------------------

def orbit_weights(r: int = 4, orbits: int = 3, extra: int = 2, d: int = 6, seed: int = 0) -> np.ndarray:
    """[m, d] neurons in whole cyclic orbits of their first r coordinates (plus ``extra`` all-equal ones), with an
    irrelevant part and norms that differ between orbits: every fourth moment E ||w||^2 w_bar_i^4 is the same."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.5, 1.5, size=(orbits, r)) * rng.uniform(0.5, 2.0, size=(orbits, 1))
    sub = np.concatenate([np.roll(base, k, axis=1) for k in range(r)] + [np.ones((extra, r))])
    tail = np.tile(rng.normal(size=(orbits, d - r)), (r, 1))
    tail = np.concatenate([tail, np.zeros((extra, d - r))])
    return np.concatenate([sub, tail], axis=1)


def test_dense_fourth_moments_are_balanced_on_cyclic_orbits():
    W = orbit_weights()
    M4 = stage21.dense_fourth_moments(W[None], np.ones(len(W), bool), 4)
    assert stage21.balance_ratio(M4)[0] == pytest.approx(1.0, abs=1e-12)
    n2 = np.sum(W**2, -1, keepdims=True)
    assert M4[0, 0] == pytest.approx(np.mean(W[:, 0] ** 4 / n2[:, 0]))  # ||w||^2 (w_0/||w||)^4
    imbalanced = W.copy()
    imbalanced[:, 0] *= 1.1  # one direction 10 % larger in every neuron
    assert stage21.balance_ratio(stage21.dense_fourth_moments(imbalanced[None], np.ones(len(W), bool), 4))[0] > 1.2


def test_dense_set_drops_each_directions_best_and_t21_finds_the_first_aligned_time():
    P = np.array([[0.9, 0.05], [0.1, 0.2], [0.2, 0.7], [0.3, 0.1]])
    assert stage21.dense_set(P).tolist() == [False, True, False, True]
    W = np.zeros((3, 2, 3))
    W[:, :, 2] = 1.0
    W[1:, 0, 0] = [2.0, 20.0]  # neuron 0 aligns with e_0 (w_bar_0^2 = 0.8, then 0.9975)
    W[2, 1, 1] = 20.0  # neuron 1 aligns with e_1 at the last time
    assert stage21.t21_index(W, 2) == 2
    assert stage21.t21_index(W[:2], 2) == -1


def test_balance_finding_holds_on_balanced_dense_neurons_and_fails_on_an_imbalance():
    exp, spec = claim("dense-fourth-moments-balanced")
    configs = exp.run_configs("quick")
    runs = spec.falsifiers[0].build(configs)  # the dense neurons in whole cyclic orbits
    check = spec.check(Results(exp, "quick", runs))
    assert check.passed, check.details
    tr = dict(runs["population"].trajectory)
    W = np.array(tr["neuron_weights"])
    W[:, :, R:, 0] *= 1.05  # the dense neurons lean 5 % towards direction 0
    tr["neuron_weights"] = W
    imbalanced = {"population": synthetic_run(configs["population"], "population", tr)}
    assert not spec.check(Results(exp, "quick", imbalanced)).passed
