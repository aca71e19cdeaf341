"""The min2024 experiments on the exact ReLU flow (flow_exact): App. E's single neurons through the
reproduce driver (the E.3 run that must fail reaches its claim through ``Experiment.may_fail``; without
it the claim is failed), and the exact flow against GD on the same initialization. Both read the experiments' own
quick runs from the session's ``shared_store`` (the report and conformance tests use the same runs)."""

from __future__ import annotations

import dataclasses

import numpy as np

import twolayer
from twolayer.claims import get, registered, reproduce
from twolayer.papers.min2024._events import event_table, timelines

SINGLE = ("e3-regular", "e3-subgradient", "e4-regular", "e4-subgradient")


def _app_e(may_fail):
    exp = get("min2024/app-e-caratheodory")
    return dataclasses.replace(exp, id=f"min2024/zz-app-e-{len(may_fail)}", may_fail=may_fail,
                               configs=lambda scale: {k: v for k, v in exp.run_configs("quick").items() if k in SINGLE},
                               claims=[c for c in exp.claims if c.id.startswith(("E3", "E4"))], figures=[])


def test_app_e_claims_pass_and_the_expected_failure_reaches_its_claim(shared_store):
    """E.3/E.4 at quick scale: the four claims pass; the E.3 run with sigma'(0) = 0.5 ended failed and named
    t = 0, neuron 0, data point 0. Without ``may_fail`` the same failed run fails every claim of the experiment.
    Both experiments run the four single-neuron configs under their own run names: the second finds the
    completed ones in the store and runs the failing one again (a failed run is never a cache hit)."""
    exps = [_app_e(("e3-subgradient",)), _app_e(())]
    with registered(*exps):
        rep = reproduce([e.id for e in exps], scale="quick", out=shared_store)
    allowed, strict = rep.experiments
    assert {c.id.split(":")[1]: c.passed for c in allowed.claims} == {
        "E3-regular-solution": True, "E3-no-solution-reported": True, "E4-regular-solution-taken": True,
        "E4-eq47-solution": True}, [(c.id, c.details) for c in allowed.claims]
    status = {r.key: r.status for r in allowed.runs}
    assert status["e3-subgradient"] == "failed" and status["e3-regular"] == "completed"
    assert not any(c.passed for c in strict.claims)
    assert all("e3-subgradient" in c.details for c in strict.claims)


def test_flow_and_gd_start_from_the_same_initialization_and_agree_at_events(shared_store):
    """The GD runs of fig4-14-17-activation-paths share the exact run's initialization (same init and seeds),
    and every crossing of the experiment's own quick exact run (h = 50, 4 seeds) before t = 1.8 is seen by GD at
    lr 1e-3 (its gd-0.001 config to step 2000, observed at every step with the weights) within 3 steps."""
    configs = get("min2024/fig4-14-17-activation-paths").run_configs("quick")
    exact = twolayer.run(configs["exact"], out=shared_store)
    lr = configs["gd-0.001"]["train"]["lr"]
    assert lr == 1e-3
    gd = twolayer.run({**configs["gd-0.001"], "train": {**configs["gd-0.001"]["train"], "steps": 2000},
                       "observe": {"schedule": "every", "every": 1, "metrics": ["activation_pattern", "neuron_weights"]}},
                      out=shared_store)
    np.testing.assert_array_equal(gd.seeded("neuron_weights")[:, 0], exact.seeded("neuron_weights")[:, 0])
    P = gd.seeded("activation_pattern").astype(bool)
    checked = 0
    for per_seed in timelines(exact):
        for tl in per_seed:
            for c in tl.changes:
                if c.t > 1.8:
                    continue
                flips = np.flatnonzero(P[tl.seed, 1:, tl.neuron, c.point] != P[tl.seed, :-1, tl.neuron, c.point])
                assert flips.size and abs((flips[0] + 1) * lr - c.t) <= 3 * lr, (tl.seed, tl.neuron, c)
                checked += 1
    assert checked >= 10 and len(event_table(exact)["t"]) >= checked
