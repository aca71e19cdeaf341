"""lyu2021 claims: each experiment's ideal synthetic runs (the theory's prediction, seed by seed) pass every
claim, so each synthetic falsifier (the same runs with one defect) fails for that defect alone; the claim
conformance test (tests/test_claim_conformance.py) runs every falsifier."""

from __future__ import annotations

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
