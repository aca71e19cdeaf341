"""lyu2021 claims: each experiment's ideal synthetic runs (the theory's prediction, seed by seed) pass every
claim, so each synthetic falsifier (the same runs with one defect) fails for that defect alone; the claim
conformance test (tests/test_claim_conformance.py) runs every falsifier."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twolayer.claims import Results, get
from twolayer.papers.lyu2021 import (
    embedding, hinted, kkt_directions, kkt_symmetric, late_phase, local_convergence, loss_convergence, nonsymmetric_general, orthogonal, phase1, phase2,
    sigma_limit, sign_groups, symmetric,
)

IDEAL = {"lyu2021/symmetric": symmetric.ideal_runs, "lyu2021/phase1": phase1.ideal_runs,
         "lyu2021/sign-groups": sign_groups.ideal_runs, "lyu2021/hinted": hinted.ideal_runs,
         "lyu2021/late-phase": late_phase.ideal_runs, "lyu2021/embedding": embedding.ideal_runs,
         "lyu2021/local-convergence": local_convergence.ideal_runs,
         "lyu2021/loss-convergence": loss_convergence.ideal_runs,
         "lyu2021/nonsymmetric-general": nonsymmetric_general.ideal_runs,
         "lyu2021/kkt-directions": kkt_directions.ideal_runs, "lyu2021/sigma-limit": sigma_limit.ideal_runs,
         "lyu2021/kkt-symmetric": kkt_symmetric.ideal_runs, "lyu2021/phase2": phase2.ideal_runs,
         "lyu2021/orthogonal": orthogonal.ideal_runs}


def test_every_ordinary_lyu2021_experiment_has_ideal_runs():
    from twolayer.claims import experiments

    ordinary = {e.id for e in experiments() if e.paper == "lyu2021" and not e.assumption_broken}
    assert ordinary == set(IDEAL)


@pytest.mark.parametrize("exp_id", sorted(IDEAL))
def test_ideal_runs_pass_every_claim(exp_id):
    exp = get(exp_id)
    results = Results(exp, "quick", IDEAL[exp_id](exp.run_configs("quick")))
    failed = {spec.id: check for spec in exp.claims if not (check := spec.check(results)).passed}
    assert not failed, {k: (c.measured, c.details) for k, c in failed.items()}
    for spec in exp.claims:  # a passed check is never negative in slack
        check = spec.check(results)
        assert check.slack is None or check.slack >= 0, (spec.id, check.slack)


def test_every_lyu2021_run_records_the_late_phase_metrics():
    """E8 reads log_loss_sum, normalized_margin and smoothed_margin from every lyu2021 run."""
    from twolayer.papers.lyu2021._shared import LATE_METRICS

    configs = get("lyu2021/late-phase").run_configs("quick")
    assert len(configs) >= 27
    for key, cfg in configs.items():
        assert set(LATE_METRICS) <= set(cfg["observe"]["metrics"]), key


@pytest.mark.parametrize("defect", ["returning", "linear"])
def test_hinted_sensitivity_fails_on_a_seed_that_does_not_escape_for_good(defect):
    """hinted:sensitivity is a finding (its falsifiers are worlds where the spec's 'escapes' holds): the check must
    still fail on a fitted seed below gamma^+/2 whose negative share falls since the fit (the quick seeds' shape)."""
    exp = get("lyu2021/hinted")
    spec = next(s for s in exp.claims if s.id == "sensitivity")
    assert spec.kind == "finding"
    check = spec.check(Results(exp, "quick", hinted.ideal_runs(exp.run_configs("quick"), defect)))
    assert not check.passed and check.measured[0] == 1, (check.measured, check.details)


def test_fit_time_interpolation_error_is_unknown_where_the_spline_does_not_cross():
    """phase1.fit-time-slope's allowance adds |t_linear - t_spline| per scale: where the spline has no crossing of the
    fit level near t_linear (or t_linear is not finite) the error is nan, so the allowance is nan and the claim fails;
    an infinite error (before) made the allowance infinite and accepted any slope."""
    from twolayer.claims.checks import close_to
    from twolayer.papers.lyu2021.phase1 import FIT_LEVEL, spline_crossing

    t = np.linspace(0.0, 10.0, 101)
    falling = FIT_LEVEL - 0.3 * (t - 4.0)  # crosses at t = 4 exactly, linear: no interpolation error
    err, rate = spline_crossing(t, falling, 4.0)
    assert err == pytest.approx(0.0, abs=1e-9) and rate == pytest.approx(0.3, rel=1e-9)
    curved = FIT_LEVEL - (t - 4.0) ** 3  # the linear crossing between t = 3.9 and 4.1 is exact by symmetry; off it: not
    err, _ = spline_crossing(t, curved, 4.02)
    assert err == pytest.approx(0.02, rel=1e-3)
    assert all(np.isnan(spline_crossing(t, falling, 9.0)))  # the crossing (t = 4) is not on the bracket around t = 9
    assert all(np.isnan(spline_crossing(t, falling + 100.0, 4.0)))  # never reaches the level
    assert all(np.isnan(spline_crossing(t, falling, math.nan)))
    assert not close_to(1.0, 1.5, atol=math.nan).passed


def test_phase1_correction_exponent_reads_the_power_of_sigma():
    """alignment-time's exponent of the deviations from sigma -> 0: c sigma^2 gives 2 for any c, c sigma gives 1 (a
    first-order dependence, which the claim rejects), deviations at the rounding floor give 2 (the closed form), and
    one deviation at the floor with the other above gives inf."""
    from twolayer.papers.lyu2021.phase1 import correction_exponent

    assert correction_exponent((1e-4, 1e-6), (3.0 * 1e-8, 3.0 * 1e-12)) == pytest.approx(2.0)
    assert correction_exponent((1e-4, 1e-6), (0.5 * 1e-4, 0.5 * 1e-6)) == pytest.approx(1.0)
    assert correction_exponent((1e-4, 1e-6), (1e-12, 0.0)) == 2.0
    assert correction_exponent((1e-4, 1e-6), (0.1, 0.0)) == math.inf


def test_cauchy_fit_reads_the_sigma_expansion_of_vector_curves():
    """phase2-limit's fit on theta: curves Psi(s) + sigma g(s) + sigma^2 h(s) with vector values give the distances
    max_s ||c_i - c_i+1|| = (sigma_i - sigma_i+1) max_s ||g + (sigma_i + sigma_i+1) h|| and so A = max ||g||, B = the
    h term's share, residuals ~ 0; a curve off by a constant per scale (a wrong shift) is not of that form."""
    from twolayer.papers.lyu2021.phase1 import cauchy_fit

    s = np.linspace(-5.0, 40.0, 91)
    g = np.stack([np.sin(s / 7), np.cos(s / 5), np.ones_like(s)], axis=1)  # ||g|| is largest where cos = +-1
    sig = np.array([1e-2, 1e-3, 1e-4, 1e-5])
    curves = [np.exp(-s / 30)[:, None] + x * g for x in sig]
    f = cauchy_fit(sig, curves, np.full(len(sig), 1e-9))
    assert f["A"] == pytest.approx(float(np.max(np.linalg.norm(g, axis=1))), rel=1e-9) and abs(f["B"]) < 1e-6
    assert np.all(f["residual"] < 1e-3)
    drifting = [c + 0.01 * k for k, c in enumerate(curves)]  # a constant offset per scale: D_i does not shrink
    assert np.max(cauchy_fit(sig, drifting, np.full(len(sig), 1e-9))["residual"]) > 1e3
