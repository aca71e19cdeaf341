"""The experiment registry, the claim helpers, and claim evaluation on synthetic runs."""

from __future__ import annotations

import json
import math
import sys
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest

from twolayer.config import load_config
from twolayer.claims import (
    EXPERIMENTS, SCALES, Check, Claim, Exclusion, Experiment, Results, all_of, at_least, at_most, close_to, compare, evaluate,
    experiments, get, holds, import_submodules, jsonable, known_targets, monotone, ordered, registered, relation,
    select, within,
)
from twolayer.claims.run_names import name_prefix
from twolayer.claims.selftest import tiny
from twolayer.papers.engine import synthetic_conservation


# -- registry -----------------------------------------------------------------------------------

def test_builtin_experiment_is_discovered():
    ids = [e.id for e in experiments()]
    assert "engine/conservation" in ids
    assert "engine" in known_targets() and "engine/conservation" in known_targets()
    assert "selftest/tiny" not in ids  # modules starting with "_" are not discovered


@pytest.mark.parametrize("exp", experiments(), ids=lambda e: e.id)
def test_every_registered_experiment_is_well_formed(exp):
    """Conformance: every registered experiment (papers included) has text, claims and valid
    configs at both scales, with distinct run names that start with ``<paper>-`` (``name_prefix``: ``report`` on a
    folder without its summary looks for an experiment's runs only when a stored name has the prefix)."""
    assert exp.title and exp.figure and exp.description
    assert exp.claims, "an experiment must state at least one claim"
    assert len({c.id for c in exp.claims}) == len(exp.claims)
    assert name_prefix(exp) == f"{exp.paper}-"  # the package's configs
    for scale in SCALES:
        configs = exp.run_configs(scale)
        names = [load_config(c).name for c in configs.values()]
        assert len(set(names)) == len(names), f"{scale}: run names collide"
        assert all(n.startswith(f"{exp.paper}-") for n in names), f"{scale}: run names not starting {exp.paper}-: {names}"


def test_discovery_imports_public_modules_and_isolates_broken_ones(tmp_path, monkeypatch):
    pkg = tmp_path / "fakepapers"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "good.py").write_text(textwrap.dedent("""
        from twolayer.claims import register
        from twolayer.claims.selftest import tiny
        register(tiny("fake/good"))
    """))
    (pkg / "_private.py").write_text("raise RuntimeError('private modules are not imported')\n")
    (pkg / "broken.py").write_text("raise ImportError('missing optional dependency')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        errors = import_submodules("fakepapers")
        assert "fake/good" in EXPERIMENTS
        assert list(errors) == ["fakepapers.broken"]
        assert "missing optional dependency" in errors["fakepapers.broken"]
        assert "fakepapers._private" not in sys.modules
    finally:
        EXPERIMENTS.remove("fake/good")
        for m in [m for m in sys.modules if m.startswith("fakepapers")]:
            del sys.modules[m]


def test_select_by_paper_and_experiment_and_unknown():
    a, b, c = tiny("zz/a"), tiny("zz/b"), tiny("yy/c")
    with registered(a, b, c):
        assert select(["zz"]) == [a, b]
        assert select(["yy/c", "zz/a"]) == [a, c]  # registry order, not argument order
        assert select(["zz", "zz/a"]) == [a, b]  # no duplicates
        assert a in select([]) and c in select(None)
        with pytest.raises(LookupError) as info:
            select(["zz/nope"])
        assert "zz/nope" in str(info.value) and "zz/a" in str(info.value) and "engine/conservation" in str(info.value)
    assert "zz/a" not in EXPERIMENTS  # `registered` cleans up


def test_experiment_validation():
    with pytest.raises(ValueError, match="PAPER/NAME"):
        Experiment("no-slash", "t", "f", "d", lambda s: {})
    exp = tiny("zz/dup")
    with pytest.raises(ValueError, match="already defined"):
        exp.claim("final-loss", "again")(lambda r: None)
    with pytest.raises(ValueError, match="scale"):
        exp.run_configs("huge")
    assert exp.run_configs("quick")["gd"]["name"] == "zz-dup-gd"
    with registered(exp), pytest.raises(ValueError, match="already registered"):
        with registered(tiny("zz/dup")):
            pass
    assert get("engine/conservation").paper == "engine"


# -- claim helpers ------------------------------------------------------------------------------

def test_close_to():
    assert close_to(1.01, 1.0, rtol=0.02).passed
    assert not close_to(1.03, 1.0, rtol=0.02).passed
    assert close_to([0.999, 1.004], 1.0, atol=0.005).passed
    assert not close_to([0.999, 1.006], 1.0, atol=0.005).passed
    assert not close_to(math.nan, 1.0, rtol=1.0).passed
    c = close_to(2.0, 2.0)
    assert c.passed and c.tolerance == "exact" and c.predicted == 2.0


def test_within():
    assert within(0.5, 0.0, 1.0).passed and within(1.0, 0.0, 1.0).passed
    assert not within(1.0001, 0.0, 1.0).passed
    assert not within([0.5, -0.1], 0.0, 1.0).passed
    assert not within(math.inf, 0.0, 1.0).passed
    assert within(0.3, 0.0, 1.0).predicted == [0.0, 1.0]


@pytest.mark.parametrize("measured, predicted, passed", [
    (2.0, "<= 2", True), (2.1, "<= 2", False), (1.9, "< 2", True), (2.0, "< 2", False),
    (3.0, ">= 3", True), (2.9, ">= 3", False), (0.1, "> 0", True), (0.0, "> 0", False),
    (0, "== 0", True), (1, "== 0", False), (1, "!= 0", True), (0, "!= 0", False),
    ([1.0, 1.5], "<= 2", True), ([1.0, 2.5], "<= 2", False), (math.nan, "<= 2", False),
])
def test_relation(measured, predicted, passed):
    c = relation(measured, predicted)
    assert c.passed is passed
    assert c.predicted.replace(" ", "") == predicted.replace(" ", "")


def test_relation_tolerance_and_errors():
    assert compare(2.05, "<=", 2.0, tolerance=0.1).passed
    assert not compare(2.15, "<=", 2.0, tolerance=0.1).passed
    assert compare(0.95, ">=", 1.0, tolerance=0.1).passed
    assert compare(1.05, "==", 1.0, tolerance=0.1).passed and not compare(1.2, "==", 1.0, tolerance=0.1).passed
    assert at_most(1, 1).passed and at_least(1, 1).passed and not at_least(0.5, 1).passed
    with pytest.raises(ValueError, match="relation"):
        relation(1.0, "about 2")
    with pytest.raises(KeyError):
        compare(1.0, "~", 2.0)


@pytest.mark.parametrize("kind, series, passed", [
    ("decreasing", [3, 2, 1], True), ("decreasing", [3, 3, 1], False), ("decreasing", [3, 4, 1], False),
    ("non-increasing", [3, 3, 1], True), ("non-increasing", [3, 3.5, 1], False),
    ("increasing", [1, 2, 3], True), ("increasing", [1, 1, 3], False),
    ("non-decreasing", [1, 1, 3], True), ("non-decreasing", [1, 0.5, 3], False),
    ("decreasing", [[3, 2, 1], [5, 4, 3]], True), ("decreasing", [[3, 2, 1], [5, 6, 3]], False),
    ("decreasing", [3, np.nan, 1], False),
])
def test_monotone(kind, series, passed):
    c = monotone(series, kind)
    assert c.passed is passed and c.predicted == kind


def test_monotone_tolerance_and_measured():
    c = monotone([1.0, 1.0 + 1e-10, 0.5], "non-increasing", atol=1e-9)
    assert c.passed and c.measured == pytest.approx(1e-10)
    assert not monotone([1.0, 1.0 + 1e-8, 0.5], "non-increasing", atol=1e-9).passed
    assert monotone([1.0, 1.01, 0.5], "non-increasing", rtol=0.02).passed  # 0.01 <= 0.02 * max|x|
    assert "index 0" in monotone([1.0, 2.0, 1.5], "decreasing").details
    assert not monotone([1.0], "decreasing").passed


def test_ordered():
    c = ordered({"order 0": 0.1, "order 2": 3.0, "order 4": 35.0}, ["order 0", "order 2", "order 4"])
    assert c.passed and c.predicted == "order 0 before order 2 before order 4"
    assert c.measured.startswith("order 0 (0.1) before order 2 (3)")
    c = ordered({"order 0": 0.1, "order 2": 40.0, "order 4": 35.0}, ["order 0", "order 2", "order 4"])
    assert not c.passed and "order 4 (35) before order 2 (40)" in c.measured
    c = ordered({"order 0": 0.1, "order 2": math.nan}, ["order 0", "order 2", "order 4"])
    assert not c.passed and "never: order 2, order 4" in c.measured
    assert not ordered({"a": 1.0, "b": 1.0}, ["a", "b"]).passed  # ties are not "before"


def test_holds_and_all_of():
    assert holds(True, "converges").passed and not holds(False, "converges").passed
    both = all_of(at_most(1.0, 2.0), at_least(5.0, 10.0))
    assert not both.passed and both.predicted == "<= 2 and >= 10" and both.measured == [1.0, 5.0]
    assert all_of(at_most(1.0, 2.0), within(0.5, 0, 1)).passed


def test_claim_records_are_json():
    check = Check(np.float64(1.5), np.array([1.0, np.nan, np.inf]), np.bool_(True), None, "d", np.float64(-np.inf),
                  exclusions=(Exclusion("seeds", (np.int64(3), 7), "Cor. 4.4: rho >= 1e-3"),))
    falsifiers = [{"name": "f1", "kind": "synthetic"}, {"name": "f2", "kind": "counterfactual"}]
    claim = Claim.from_check("p/e:c", "p/e", "s", check, kind="bound", falsifiers=falsifiers,
                             tolerance_source="derived: Lemma 2")
    d = json.loads(json.dumps(claim.to_dict(), allow_nan=False))
    assert d == {"id": "p/e:c", "experiment": "p/e", "statement": "s", "kind": "bound", "predicted": 1.5,
                 "measured": [1.0, "nan", "inf"], "tolerance": None, "slack": "-inf", "passed": True,
                 "falsifiers": falsifiers, "details": "d", "expect": "pass", "evaluated": True,
                 "tolerance_source": "derived: Lemma 2", "explanation": "", "premises": [], "probes": {},
                 "exclusions": [{"what": "seeds", "count": 2, "which": [3, 7], "source": "Cor. 4.4: rho >= 1e-3"}]}
    assert isinstance(claim.passed, bool)
    assert jsonable({"a": (np.int64(2), 3.0)}) == {"a": [2, 3.0]}
    failed = Claim.failed("p/e:c", "p/e", "s", "boom", kind="prediction", falsifiers=["f"], expect="fail")
    assert not failed.evaluated and not failed.passed and not failed.as_expected  # an error is never "as expected"


# -- evaluation on synthetic runs ---------------------------------------------------------------

def fake_run(train: dict, traj: dict, rtol: float = 1e-8):
    return SimpleNamespace(config={"train": {**train, "rtol": rtol}}, trajectory=traj)


def engine_claims(runs) -> dict[str, Claim]:
    exp = get("engine/conservation")
    return {c.id.split(":")[1]: c for c in evaluate(exp, Results(exp, "quick", runs))}


def test_engine_claims_pass_on_ideal_synthetic_runs():
    """The engine's synthetic falsifiers are one defect away from runs that pass every claim, so each
    falsifier fails its claim because of its defect (the conformance test checks that it fails)."""
    exp = get("engine/conservation")
    claims = engine_claims(synthetic_conservation(exp.run_configs("quick")))
    assert set(claims) == {"flow-conserves-imbalance", "gd-drift-order-lr", "loss-non-increasing",
                           "flow-preserves-signs"}
    assert all(c.passed for c in claims.values()), [c for c in claims.values() if not c.passed]
    assert claims["gd-drift-order-lr"].measured == pytest.approx(1.0)
    assert all(c.kind and c.falsifiers and c.slack is not None for c in claims.values())


@pytest.mark.parametrize("defect, failing", [
    (dict(flow_drift=1e-5), "flow-conserves-imbalance"),
    (dict(gd_power=2.0), "gd-drift-order-lr"),
    (dict(loss_bump=0.5), "loss-non-increasing"),
    (dict(flip=True), "flow-preserves-signs"),
])
def test_each_engine_defect_fails_only_its_claim(defect, failing):
    claims = engine_claims(synthetic_conservation(get("engine/conservation").run_configs("quick"), **defect))
    assert [k for k, c in claims.items() if not c.passed] == [failing]


def test_evaluate_isolates_errors():
    exp = tiny("zz/errors")
    exp.claim("raises", "raises")(lambda r: 1 / 0)
    exp.claim("not-a-check", "returns junk")(lambda r: 42)
    runs = {"gd": fake_run({"method": "gd"}, {"loss": np.array([[1.0, 0.5]])})}
    claims = {c.id: c for c in evaluate(exp, Results(exp, "quick", runs))}
    assert claims["zz/errors:final-loss"].passed
    assert not claims["zz/errors:raises"].passed and "ZeroDivisionError" in claims["zz/errors:raises"].details
    assert not claims["zz/errors:not-a-check"].passed and "not a Check" in claims["zz/errors:not-a-check"].details
    failed = evaluate(exp, Results(exp, "quick", {}), {"gd": "run 'gd' failed: boom"})
    assert len(failed) == 3 and not any(c.passed for c in failed)
    assert all("boom" in c.details for c in failed)


def test_results_memo_computes_once():
    calls = []
    r = Results(tiny("zz/memo"), "quick", {})
    assert r.memo("x", lambda: calls.append(1) or 7) == 7
    assert r.memo("x", lambda: calls.append(1) or 8) == 7
    assert calls == [1]


def test_one_neuron_is_one_sign_group(tmp_path):
    """sweeps/success-width starts its law at m = 2: with m = 1 one of the group masses is exactly 0, so the
    success fraction is 0 by construction (not a claim about the dynamics)."""
    import twolayer
    from twolayer.papers.scaling_laws import SWEEPS

    base = SWEEPS["success-width"]["quick"]["base"]
    cfg = {**base, "seeds": 8, "model": {**base["model"], "width": 1}, "train": {**base["train"], "steps": 200},
           "observe": {"schedule": "every", "every": 100, "metrics": ["group_mass"]}}
    tr = twolayer.run(cfg, out=tmp_path).trajectory
    assert np.all(np.minimum(tr["group_mass_pos"][:, -1], tr["group_mass_neg"][:, -1]) == 0.0)
    assert np.all(np.maximum(tr["group_mass_pos"][:, -1], tr["group_mass_neg"][:, -1]) > 0.0)


def test_one_sign_group_cannot_pass_the_success_margin():
    """sweeps/success-width's derived threshold: on the symmetric pair a net whose output weights share one sign
    has normalized margin at most alpha/2, and the global max (1 + alpha)/4 is reached by two groups."""
    from twolayer.papers.scaling_laws import ALPHA, GLOBAL_MARGIN, ONE_GROUP_MARGIN, SUCCESS_MARGIN

    rng = np.random.default_rng(0)
    x, y = np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([1.0, -1.0])

    def margin(W, v):
        z = W @ x.T
        f = v @ np.where(z > 0, z, ALPHA * z)
        return float(np.min(y * f) / (v @ v + np.sum(W * W)))

    one_group = max(margin(rng.normal(size=(3, 2)), np.abs(rng.normal(size=3))) for _ in range(20000))
    assert ONE_GROUP_MARGIN - 0.01 < one_group <= ONE_GROUP_MARGIN + 1e-12 < SUCCESS_MARGIN
    two = margin(np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([1.0, -1.0]))  # one neuron per point
    assert two == pytest.approx(GLOBAL_MARGIN) and two > SUCCESS_MARGIN


def test_an_exclusion_names_the_sentence_of_the_paper_it_follows():
    with pytest.raises(ValueError, match="needs the sentence of the paper"):
        Exclusion("seeds", (1, 2))
    assert Exclusion("seeds", (1, 2), "Remark 1: V+(t)").to_dict()["count"] == 2
