"""The d sweep and Stage 2.1 pieces of multiindex2026/scalings: the crossing and integral of Prop. C.12, the
pair-slope bands, and the in-subspace alignment observable they read."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import twolayer
from twolayer.observe import evaluate
from twolayer.papers.multiindex2026 import scalings
from twolayer.papers.multiindex2026._shared import hermite_sums
from twolayer.train.loop import Simulation


def test_convergence_interpolates_the_crossing_and_integrates_to_it():
    """q = 10 e^{-t} crosses 1/r = 0.1 at t = ln 100; with beta_1 = 1 - e^{-t} the integral of (1 - beta_1) to it
    is 1 - 1/100 (trapezoid error on a 2,000-point grid below 1e-6)."""
    t = np.linspace(0.0, 10.0, 2001)
    tc, integral = scalings.convergence(t, 1 - np.exp(-t), 10 * np.exp(-t), 10)
    assert tc == pytest.approx(np.log(100), abs=1e-12)
    assert integral == pytest.approx(0.99, abs=1e-5)
    assert np.isnan(scalings.convergence(t, 1 - np.exp(-t), np.full_like(t, 5.0), 10)[0])  # never reached
    assert np.isnan(scalings.convergence(t, 1 - np.exp(-t), np.full_like(t, 0.01), 10)[0])  # below from the start


def test_reduced_integral_grows_like_log_d_over_4_sigma2():
    """Prop. C.12: int_0^{T_conv} (1 - beta_1) = log d / (4 sigma_hat_2^2) + O(1) for the reduced ODE itself: its
    slope per ln d falls toward pi/4 (1.55x at d = 60 -> 120, r = 12, lambda = 0.6; within 10 % at 10^4 -> 2 10^4)."""
    pi4 = 1 / (4 * hermite_sums("abs").s2)

    def slope(d0, d1):
        return (scalings.convergence_reduced(d1, 12, 0.6)[1] - scalings.convergence_reduced(d0, 12, 0.6)[1]) / np.log(d1 / d0)

    assert slope(60, 120) / pi4 == pytest.approx(1.55, abs=0.02)
    assert slope(10_000, 20_000) / pi4 == pytest.approx(1.0, abs=0.1)


def test_pair_slopes_band_holds_the_true_slope_and_not_a_wrong_one():
    """Times 2 + 1.1 ln d read on a 1 %-spaced grid: the band of each doubling contains 1.1 and not pi/4."""
    grid = np.exp(np.linspace(np.log(0.01), np.log(20.0), 800))
    rows = []
    for d in (60, 120, 240):
        true = 2 + 1.1 * np.log(d)
        read = np.full(4, grid[np.searchsorted(grid, true)])
        rows.append({"d": d, "x": read, "x bracket": scalings.brackets(grid, read), "x ode": true})
    for p in scalings.pair_slopes(rows, "x", sd=0.0):
        assert p["band"][0] <= 1.1 <= p["band"][1] and not p["band"][0] <= np.pi / 4 <= p["band"][1]
        assert p["ode"] == pytest.approx(1.1)


def test_subspace_alignment_best_is_the_in_subspace_coordinate():
    """max_i (u_{i,<=r})_j^2 per direction against numpy on random weights (d = 9, r = 3, m = 5)."""
    cfg = {"seeds": 1, "data": {"kind": "multi_index", "d": 9, "r": 3, "n": 10, "n_test": 10},
           "model": {"kind": "mean_field", "activation": "abs", "width": 5}, "init": {"kind": "standard"},
           "loss": {"kind": "square"}, "objective": "population", "train": {"method": "gd", "lr": 0.01, "steps": 1},
           "precision": "float64", "observe": {"metrics": ["subspace_alignment_best"]}}
    sim = Simulation(twolayer.load_config(cfg))
    params = jax.tree_util.tree_map(lambda x: x[0], sim.initial_state().params)
    got = np.asarray(evaluate(["subspace_alignment_best"], params, sim.ctx)["subspace_alignment_best"])
    W = np.asarray(params["W"])
    sub = W[:, :3] / np.linalg.norm(W[:, :3], axis=1, keepdims=True)
    np.testing.assert_allclose(got, np.max(sub**2, axis=0), rtol=1e-12)


def test_stage21_duration_passes_on_the_p_ode_and_fails_on_an_order_6_tensor_power():
    """The claim's check on synthetic sweeps whose directions align by |x|'s order-4 tensor power from the law of
    the best of m starts (passes) and by an order-6 power with the same duration at the fixed r (fails: the
    duration then grows like 1/p_0^2)."""
    from twolayer.claims import Results, get

    exp = get("multiindex2026/scalings")
    claim = next(c for c in exp.claims if c.id.endswith("stage21-duration"))
    configs = exp.run_configs("quick")
    assert claim.check(Results(exp, "quick", scalings.synthetic_stage21(configs))).passed
    assert not claim.check(Results(exp, "quick", scalings.synthetic_stage21(configs, order=6))).passed


def test_convergence_with_d_holds_where_the_network_follows_the_beta_ode():
    from twolayer.claims import Results, get

    exp = get("multiindex2026/scalings")
    runs = scalings.synthetic_d_sweep(exp.run_configs("quick"))
    for name in ("growth-with-d", "convergence-with-d"):
        claim = next(c for c in exp.claims if c.id.endswith(name))
        assert claim.check(Results(exp, "quick", runs)).passed, name
