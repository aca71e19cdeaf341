"""theory.kkt: the KKT-point search, its independent verification and the boundary-linearity check (E7);
no test depends on finding a nonlinear-boundary KKT point on symmetric data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from twolayer.config import load_config
from twolayer.data import build_dataset
from twolayer.theory import kkt
from twolayer.theory import margin as th

ALPHA = 0.2


def data_of(spec: dict):
    d = build_dataset(load_config({"data": spec}).data)
    return d.X, d.y


SYM = {"kind": "symmetric_separable", "d": 2, "n": 20, "margin": 0.1, "seed": 0}


def test_verify_the_constructed_global_max_and_a_random_direction():
    X, y = data_of(SYM)
    w, g = th.max_margin_linear(X, y)
    c = kkt.verify(np.array([w, -w]), np.array([1.0, -1.0]), X, y, ALPHA)
    assert c.kkt and c.residual < 1e-12 and c.linear_boundary and c.crossings == 2 and c.boundary_dev < 0.1
    assert c.margin == pytest.approx((1 + ALPHA) * g / 4, rel=1e-12)
    assert c.nonlinearity < 1e-12
    rng = np.random.default_rng(0)
    for _ in range(5):  # random directions that classify every point are not KKT
        W, a = kkt.random_margin_net(X, y, ALPHA, 3, rng)
        assert kkt.verify(W, a, X, y, ALPHA).residual > 1e-3


def test_clarke_residual_enumerates_both_slopes_on_kinks():
    """A support point on a neuron's hyperplane: the Clarke check counts the kink and, having the fixed-slope
    column among its columns, is never worse than the phi'(0) = alpha convention."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    W = np.array([[1.0, 1.0], [-1.0, -1.0]]) / np.sqrt(2)
    a = np.array([1.0, -1.0])  # the global max along w* = (1, 1)/sqrt 2: no kink
    assert kkt.clarke_kkt_residual(W, a, X, y, ALPHA)[0] < 1e-12
    W2 = np.array([[1.0, 1.0], [0.1, 0.0]]) / np.array([[np.sqrt(2)], [1.0]])  # neuron 2 through (0, +-1)
    a2 = np.array([1.0, 0.1])
    res, support, kinks = kkt.clarke_kkt_residual(W2, a2, X, y, ALPHA)
    assert kinks == 2 and support >= 1
    assert res <= th.kkt_residual(W2, a2, X, y, ALPHA)[0] + 1e-12


@pytest.mark.parametrize("method", ["slsqp", "lsq"])
def test_search_on_symmetric_data_obeys_theorem_4_2_and_lemma_f2(method):
    """Every verified KKT point has margin <= gamma_max = (1+alpha) gamma*/4 (Thm 4.2), and for m = 2 with
    a_1 > 0 > a_2 it is the global max (Lemma F.2); the search finds the global max and the one-neuron point."""
    X, y = data_of(SYM)
    gmax = th.global_max_margin(X, y, ALPHA)
    for m in (2, 3):
        found = [c for c in kkt.kkt_search(X, y, ALPHA, m, restarts=15, seed=1, method=method) if c.kkt]
        assert found
        assert all(c.margin <= gmax * (1 + 1e-9) for c in found)
        ratios = {round(c.margin / gmax, 4) for c in found}
        assert 1.0 in ratios
        if m == 2:
            mixed = [c for c in found if c.a.max() > 0 > c.a.min()]
            assert all(c.margin == pytest.approx(gmax, rel=1e-6) for c in mixed)
            assert all(np.allclose(c.W[0], -c.W[1], atol=1e-6) for c in mixed)
    record = kkt.search_record(found)
    assert record["kkt"] == len(found) and record["kkt_linear"] + record["kkt_nonlinear"] == len(found)


def test_boundary_crossings_of_a_two_direction_net():
    """Two positive neurons 90 degrees apart: two boundary rays that are not antipodal (a nonlinear boundary)."""
    W = np.array([[1.0, 0.0], [0.0, 1.0]])
    count, dev = kkt.boundary_crossings(W, np.array([1.0, 1.0]), ALPHA)
    assert count == 2 and dev > 10
    count, dev = kkt.boundary_crossings(W[:1], np.array([1.0]), ALPHA)  # one neuron: a line
    assert count == 2 and dev < 0.1


def test_linear_boundary_search_finds_nothing_above_the_linear_family_on_hinted_data():
    """The hinted claim's gamma_lin (all neurons on +-v, spec §2.8) against a constrained search over general
    width-3 nets whose boundary is a line: the search does not beat it."""
    from twolayer.papers.lyu2021.hinted import HINT_DATA

    X, y = data_of(HINT_DATA)
    family, _ = th.linear_family_margin(X, y, ALPHA)
    best, cand = kkt.linear_boundary_search(X, y, ALPHA, 3, restarts=12, seed=0)
    assert cand is not None and cand.linear_boundary
    assert best <= family * (1 + 1e-6)
    assert best >= 0.5 * family  # the search itself works (it gets near the optimum)


def test_search_rejects_an_unknown_method():
    X, y = data_of(SYM)
    with pytest.raises(ValueError, match="method"):
        kkt.kkt_search(X, y, ALPHA, 2, restarts=1, method="newton")


def test_margins_jacobian_matches_finite_differences():
    X, y = data_of(SYM)
    rng = np.random.default_rng(2)
    theta = rng.normal(size=3 * 3)  # width 3, d = 2
    J = kkt.margins_jacobian(theta, X, y, ALPHA, 3)
    h = 1e-6
    fd = np.stack([(kkt.margins(theta + h * e, X, y, ALPHA, 3) - kkt.margins(theta - h * e, X, y, ALPHA, 3)) / (2 * h)
                   for e in np.eye(len(theta))], axis=1)
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-8)


NONSYM = {"kind": "separable_ball", "d": 2, "n": 8, "margin": 0.1, "seed": 2}


def test_same_ray_canonical_gives_the_flat_family_one_representative():
    """Two neurons on one ray trade strength without changing f or ||theta||^2: every split maps to the equal one."""
    X, y = data_of(NONSYM)
    found = kkt.kkt_search(X, y, ALPHA, 3, restarts=12, seed=7, method="lsq")
    shared = [c for c in found if c.kkt and not c.kinks and kkt.same_ray_canonical(c, X, y, ALPHA) is not c]
    assert shared, "no verified KKT point with two neurons on one ray"
    c = shared[0]
    canon = kkt.same_ray_canonical(c, X, y, ALPHA)
    np.testing.assert_allclose(th.forward(canon.W, canon.a, X, ALPHA), th.forward(c.W, c.a, X, ALPHA), rtol=1e-9)
    assert canon.kkt and abs(canon.margin - c.margin) <= 1e-9 * c.margin
    # move strength between the first group's neurons (balanced: w = sqrt(c) u, a = s sqrt(c)): same representative
    W, a = np.array(c.W), np.array(c.a)
    units = W / np.linalg.norm(W, axis=1)[:, None]
    j, k = next((j, k) for j in range(3) for k in range(j + 1, 3)
                if units[j] @ units[k] >= 1 - 1e-9 and np.sign(a[j]) == np.sign(a[k]))
    cj, ck = abs(a[j]) * np.linalg.norm(W[j]), abs(a[k]) * np.linalg.norm(W[k])
    for share in (0.1, 0.7):
        W2, a2 = W.copy(), a.copy()
        for i, s in ((j, share * (cj + ck)), (k, (1 - share) * (cj + ck))):
            W2[i], a2[i] = np.sqrt(s) * units[i], np.sign(a[i]) * np.sqrt(s)
        moved = kkt.verify(W2, a2, X, y, ALPHA)
        assert moved.kkt and np.max(np.abs(moved.W - c.W)) > 1e-2  # a different point of the family ...
        again = kkt.same_ray_canonical(moved, X, y, ALPHA)
        np.testing.assert_allclose(again.W, canon.W, atol=1e-12)  # ... with the same representative
        np.testing.assert_allclose(again.a, canon.a, atol=1e-12)


def test_the_representative_does_not_depend_on_the_neurons_order():
    """A solver can stop at any permutation of the neurons (a 1-ulp change of the data swapped two distinct neurons
    of a nonsymmetric start on this machine): every permutation of a verified point, with or without a shared ray,
    gives the same representative, neuron for neuron."""
    X, y = data_of(NONSYM)
    found = [c for c in kkt.kkt_search(X, y, ALPHA, 3, restarts=12, seed=7, method="lsq") if c.kkt and not c.kinks]
    shared = [c for c in found if kkt.same_ray_canonical(c, X, y, ALPHA) is not c]
    distinct = [c for c in found if not any(c is s for s in shared)]
    assert shared, "no verified KKT point with two neurons on one ray"
    for c in shared[:1] + distinct[:1]:
        canon = kkt.same_ray_canonical(c, X, y, ALPHA)
        for perm in itertools.permutations(range(3)):
            perm = list(perm)
            moved = kkt.verify(np.array(c.W)[perm], np.array(c.a)[perm], X, y, ALPHA)
            again = kkt.same_ray_canonical(moved, X, y, ALPHA)
            np.testing.assert_allclose(again.W, canon.W, atol=1e-12)
            np.testing.assert_allclose(again.a, canon.a, atol=1e-12)
    # the order is (a, w) read to 6 digits, so noise in the 10th digit does not reorder distinct neurons
    c = shared[0]
    W = np.array(c.W) * (1 + 1e-10 * np.random.default_rng(0).standard_normal(np.shape(c.W)))
    np.testing.assert_allclose(kkt.in_canonical_order(kkt.verify(W, np.array(c.a), X, y, ALPHA)).a,
                               kkt.in_canonical_order(c).a, rtol=1e-9)


def test_polish_takes_an_slsqp_end_point_to_rounding():
    """The worst kink-free SLSQP end point goes to rounding; points with a neuron on a data kink (where the KKT system
    polish solves is not smooth) come back unchanged. The worst candidate overall is kinked or not depending on
    SLSQP's round-off, which depends on BLAS's thread count, so the test picks among the kink-free ones."""
    X, y = data_of(NONSYM)
    found = [c for c in kkt.kkt_search(X, y, ALPHA, 3, restarts=12, seed=7, method="slsqp") if c.kkt]
    worst = max((c for c in found if not c.kinks), key=lambda c: c.residual)
    assert worst.residual > 1e-12  # SLSQP stops at solver accuracy
    p = kkt.polish(worst, X, y, ALPHA)
    assert p.residual <= 1e-14 and abs(p.margin - worst.margin) <= 1e-6 * worst.margin
    kinked = [c for c in found if c.kinks]
    assert kinked and all(kkt.polish(c, X, y, ALPHA) is c for c in kinked)


def test_kkt_direction_starts_do_not_move_under_a_one_ulp_change_of_the_data(monkeypatch):
    """The start configs (and so the run names the paper references list) are the same when every data entry moves
    by one ulp: the picks do not read solver noise (residuals at 1e-16, the stopping point on a flat family)."""
    from twolayer.papers.lyu2021 import kkt_directions

    def starts():
        kkt_directions.search.cache_clear()
        return kkt_directions.kkt_configs("quick")

    plain = starts()
    search = kkt.kkt_search

    def nudged(X, y, *args, **kw):
        X = np.asarray(X) * (1 + 2.2e-16 * np.random.default_rng(1).choice([-1, 1], size=np.shape(X)))
        return search(X, y, *args, **kw)

    monkeypatch.setattr(kkt, "kkt_search", nudged)
    try:
        assert starts() == plain
    finally:
        monkeypatch.undo()
        kkt_directions.search.cache_clear()
