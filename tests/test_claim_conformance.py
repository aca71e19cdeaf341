"""Claim conformance: a claim is evidence only if it could have failed.

Every claim of every registered experiment (papers included) states its kind and declares at least
one falsifier, and the SAME claim function, applied unchanged to each falsifier, comes out the way it
must: failed for an ordinary claim, passed for a claim of an assumption-broken experiment (whose
falsifier is the paper's own setting), and reads what the runs produced (trajectory, final parameters
or summary), not only their configs. Counterfactual falsifiers run small configs through the
ordinary run store, shared by the session (``shared_store``) so that falsifiers with the same runs share them.

Claims not converted yet are listed in ``unconverted_claims.txt``; that list may only shrink.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from twolayer.claims import (
    DYNAMICS, KINDS, PREDICTIVE_KINDS, Counterfactual, Experiment, Synthetic, SyntheticRun, at_most, experiments, falsify, refuted,
    registered,
)
from twolayer.claims.conformance import RUN_FALSIFIERS, measures_nothing, refuting_run, undefined
from twolayer.claims.falsifiers import must_refute
from twolayer.claims.selftest import tiny, tiny_config

ALLOW_LIST = Path(__file__).with_name("unconverted_claims.txt")


def unconverted() -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in ALLOW_LIST.read_text().splitlines())
    return [line for line in lines if line]


CLAIMS = {f"{exp.id}:{spec.id}": (exp, spec) for exp in experiments() for spec in exp.claims}
CASES = [(exp, spec, f) for exp, spec in CLAIMS.values() for f in spec.falsifiers]


@pytest.fixture
def store(shared_store):
    """The session's run store: a falsifier's unchanged configs are the experiments' quick runs, which other tests
    make too."""
    return shared_store


def test_every_claim_has_a_kind_and_a_falsifier():
    allowed = set(unconverted())
    missing = [cid for cid, (_, spec) in CLAIMS.items()
               if cid not in allowed and (spec.kind not in KINDS or not spec.falsifiers)]
    assert not missing, (f"claims without a kind ({', '.join(KINDS.names())}) or without a falsifier: {missing}; "
                         "declare them with Experiment.claim(id, statement, kind=..., falsifiers=[...])")


NO_COUNTERFACTUAL = Path(__file__).with_name("predictions_without_counterfactual.txt")


def listed(path: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def test_every_prediction_fails_on_a_counterfactual_run():
    """Synthetic falsifiers are unit tests of a check; a prediction is evidence only if it also fails on a real
    run of a wrong world (a ``Counterfactual`` or a ``Premise``), which the falsifier test above runs."""
    allowed = set(listed(NO_COUNTERFACTUAL))
    missing = [cid for cid, (_, spec) in CLAIMS.items() if spec.kind in PREDICTIVE_KINDS and cid not in allowed
               and not any(refuting_run(f) for f in spec.falsifiers)]
    assert not missing, (f"predictions without a counterfactual run: {missing}; add a Counterfactual or a Premise "
                         f"on which the claim fails (a premise declared holds=True does not count)")


def test_the_counterfactual_allow_list_only_shrinks():
    entries = listed(NO_COUNTERFACTUAL)
    assert len(set(entries)) == len(entries), f"{NO_COUNTERFACTUAL.name} repeats an id"
    gone = [cid for cid in entries if cid not in CLAIMS or CLAIMS[cid][1].kind != "prediction"]
    done = [cid for cid in entries if cid in CLAIMS and any(refuting_run(f) for f in CLAIMS[cid][1].falsifiers)]
    assert not gone, f"remove from {NO_COUNTERFACTUAL.name} (no such prediction any more): {gone}"
    assert not done, f"remove from {NO_COUNTERFACTUAL.name} (these have a counterfactual run now): {done}"
    assert not entries, ("the list is empty since issue 26 (51 entries when it was made): every prediction fails on a "
                         "counterfactual run, and a new one must too")


UNDEFINED_LIST = Path(__file__).with_name("counterfactuals_measuring_nothing.txt")
UNDEFINED_ALLOWED = set(listed(UNDEFINED_LIST))
UNDEFINED_LIST_SIZE = 1  # 5 when the rule was made


def test_the_undefined_measure_list_only_shrinks():
    entries = listed(UNDEFINED_LIST)
    cases = {f"{exp.id}:{spec.id}[{f.name}]" for exp, spec, f in CASES if f.kind in RUN_FALSIFIERS}
    assert len(set(entries)) == len(entries), f"{UNDEFINED_LIST.name} repeats an entry"
    assert not [e for e in entries if e not in cases], f"remove from {UNDEFINED_LIST.name}: no such counterfactual"
    assert len(entries) <= UNDEFINED_LIST_SIZE, "the list may only shrink"


@pytest.mark.parametrize(("measured", "why"), [
    (None, "None"), (float("inf"), "inf"), ("-inf", "-inf"), (float("nan"), "nan"), ([], "empty"), ({}, "empty"),
    ([float("inf"), None], "every entry undefined (inf)"),
    (0.0, ""), (3, ""), ([float("inf"), 2.0], ""), ({"t1": 4.5}, ""), ("<= 1", ""), (True, ""),
])
def test_undefined_tells_a_measurement_from_none(measured, why):
    assert undefined(measured) == why


def test_a_counterfactual_that_measures_nothing_is_caught():
    """t1 = inf on the wrong world fails the check, but measured nothing: it does not count."""
    from twolayer.claims import Check, Premise

    spec = type("Spec", (), {"kind": "prediction"})()
    premise = Premise("small-init", lambda c: c, "Thm 1: small init")
    assert measures_nothing(spec, premise, Check("<= 10", float("inf"), False, 10))
    assert not measures_nothing(spec, premise, Check("<= 10", 12.5, False, 10))  # measured, and too late
    assert not measures_nothing(spec, premise, Check("<= 10", float("inf"), True, 10))  # passed: another rule
    synthetic = Synthetic("inf", lambda configs: {}, "t1 never")
    assert not measures_nothing(spec, synthetic, Check("<= 10", float("inf"), False, 10))  # a unit test of the check


def test_allow_list_only_shrinks():
    listed = unconverted()
    assert len(set(listed)) == len(listed), "unconverted_claims.txt repeats an id"
    gone = [cid for cid in listed if cid not in CLAIMS]
    converted = [cid for cid in listed if cid in CLAIMS and CLAIMS[cid][1].falsifiers]
    assert not gone, f"remove from unconverted_claims.txt (no such claim any more): {gone}"
    assert not converted, f"remove from unconverted_claims.txt (these claims have falsifiers now): {converted}"


def test_engine_and_sweeps_claims_are_all_converted():
    assert not [cid for cid in unconverted() if cid.split("/", 1)[0] in ("engine", "sweeps")]


def test_every_paper_main_theorem_has_an_assumption_broken_experiment():
    broken = {exp.paper for exp in experiments() if exp.assumption_broken}
    assert {"min2024", "lyu2021", "multiindex2026"} <= broken
    for exp in experiments():
        if exp.assumption_broken:
            assert exp.claims and all(spec.falsifiers for spec in exp.claims), exp.id


@pytest.mark.parametrize(("exp", "spec", "falsifier"), CASES,
                         ids=[f"{exp.id}:{spec.id}[{f.name}]" for exp, spec, f in CASES])
def test_claim_comes_out_the_other_way_on_its_falsifier(exp, spec, falsifier, store):
    if note := exp.missing_data():  # MNIST outside the project's folder (no ../shared, no TWOLAYER_DATA)
        pytest.skip(note)
    reads: set[str] = set()
    check = falsify(exp, spec, falsifier, store, reads)
    if must_refute(falsifier):
        must = ("pass (the paper's own setting)" if exp.assumption_broken else
                "pass (a world where the paper's statement holds)" if spec.kind == "finding" else "fail")
        assert refuted(exp, check, spec), (f"{exp.id}:{spec.id} must {must} on its {falsifier.kind} falsifier "
                                           f"{falsifier.name!r} ({falsifier.why}), but passed={check.passed}: "
                                           f"measured {check.measured}; {check.details}")
    else:  # a premise the claim is declared to hold without (Premise(holds=True)): it must still pass there
        assert not refuted(exp, check, spec), (f"{exp.id}:{spec.id} is declared to hold without the premise "
                                               f"{falsifier.name!r}, but passed={check.passed}: measured "
                                               f"{check.measured}; drop holds=True, the premise discriminates")
    # a claim about training reads what the runs produced, not only their configs (data, init, loss)
    assert reads & set(DYNAMICS), f"{exp.id}:{spec.id} read only {sorted(reads)} of its runs, none of {DYNAMICS}"
    # a prediction that fails on a wrong world only because its quantity is undefined there measured nothing
    case = f"{exp.id}:{spec.id}[{falsifier.name}]"
    if case in UNDEFINED_ALLOWED:
        assert measures_nothing(spec, falsifier, check), f"{case} measures something now: remove it from {UNDEFINED_LIST.name}"
    else:
        assert not measures_nothing(spec, falsifier, check), (
            f"{case} fails only because its quantity is undefined on this {falsifier.kind} run (measured "
            f"{undefined(check.measured)}): measure something defined there (a fraction, the final alignment, the "
            f"time reached), and say in details what was measured")
    # the slack says how far from failing: never positive on a failed check, never negative on a passed one
    if check.slack is not None and not math.isnan(check.slack):
        assert (check.slack <= 0) if not check.passed else (check.slack >= 0), check


# -- the mechanism itself ---------------------------------------------------------------------------

def test_a_premise_the_claim_holds_without_is_declared_and_checked(tmp_path):
    """A premise whose removal leaves the claim passing is declared holds=True: conformance checks that it still
    passes there, it does not count as the prediction's counterfactual, and the ledger says "holds without"."""
    from twolayer.claims import Premise, conformance, ledger_categories, reproduce

    def wider(configs):
        configs["gd"]["model"]["width"] = 8
        return configs

    def huge_init(configs):
        configs["gd"]["init"]["scale"] = 30.0  # f(x) ~ +-1e3 at init: exp(-y f) far above the bound
        return configs

    exp = tiny("zz/holds-without", bound=10.0)
    spec = exp.claims[0]
    kept = Premise("width", wider, "the width does not matter to this bound", "Thm: h = 4", holds=True)
    wrong = Premise("huge-init", huge_init, "declared to hold, but the claim fails there", "Thm: small init", holds=True)
    object.__setattr__(spec, "falsifiers", (*spec.falsifiers, kept, wrong))
    with registered(exp):
        verdicts = {v.falsifier: v for v in conformance([exp], tmp_path)}
        assert verdicts["width"].conforms, verdicts["width"].why
        assert not verdicts["huge-init"].conforms  # a premise declared holds=True that discriminates is caught
        assert any(not v.conforms and "needs a counterfactual run" in v.why for v in verdicts.values())  # not counted
        (claim,) = reproduce([exp.id], out=tmp_path).claims
    assert {"name": "width", "kind": "premise", "holds": True} in claim.falsifiers
    assert claim.premises[0]["discriminates"] is False and claim.premises[0]["name"] == "width"
    assert ledger_categories(claim)[0] == "no counterfactual run"  # a premise it holds without is no falsifier
    with_counterfactual = dataclasses.replace(claim, falsifiers=[*claim.falsifiers, {"name": "cf", "kind": "counterfactual"}])
    assert ledger_categories(with_counterfactual)[0] == "holds without a premise"
    assert must_refute(spec.falsifiers[0]) and not must_refute(kept) and not refuting_run(kept)


def test_reproduce_reports_each_premise_ablation_as_it_starts(tmp_path):
    """The premise ablations run after the experiment's own runs (their small runs are not in the suite total):
    reproduce reports each to its Progress as it starts (claim, premise, how many before it, of how many), then
    the experiment's end of them."""
    from twolayer.claims import Premise, reproduce
    from twolayer.claims.reproduce import Progress

    def wider(configs):
        configs["gd"]["model"]["width"] = 8
        return configs

    exp = tiny("zz/premise-progress", bound=10.0)
    spec = exp.claims[0]
    premises = (Premise("width", wider, "8 neurons", "Thm: h = 4", holds=True),
                Premise("width-again", wider, "8 neurons", "Thm: h = 4", holds=True))
    object.__setattr__(spec, "falsifiers", (*spec.falsifiers, *premises))
    events = []

    class Recorder(Progress):
        def start(self, total_runs):
            events.append(("start", total_runs))

        def premise_started(self, experiment, claim, premise, done, total):
            events.append((experiment, claim, premise, done, total))

        def premises_finished(self, experiment, total):
            events.append(("finished", experiment, total))

    with registered(exp):
        reproduce([exp.id], out=tmp_path, progress=Recorder())
    assert events == [("start", 1), (exp.id, spec.id, "width", 0, 2), (exp.id, spec.id, "width-again", 1, 2),
                      ("finished", exp.id, 2)]


def test_a_claim_that_cannot_fail_is_caught():
    """The conformance test tells a claim that could fail from one that cannot, on the same falsifier."""
    honest = tiny("zz/honest", bound=10.0)
    vacuous = Experiment("zz/vacuous", "t", "f", "d", tiny_config)
    loud = Synthetic("loss-1000", lambda configs: {"gd": SyntheticRun(configs["gd"], {"loss": [[1.0, 1e3]]})},
                     "the final loss is 1000")

    @vacuous.claim("loss-below-infinity", "the final loss is finite or not", kind="prediction", falsifiers=[loud])
    def _(r):
        return at_most(0.0, 1.0)  # ignores the runs

    spec = honest.claims[0]
    assert refuted(honest, falsify(honest, spec, spec.falsifiers[0], "/nonexistent"))  # synthetic: nothing is run
    assert not refuted(vacuous, falsify(vacuous, vacuous.claims[0], loud, "/nonexistent"))


def test_a_claim_that_only_looks_at_the_data_is_caught():
    """A claim that rebuilds the data from the config and checks it reads no dynamics of the run."""
    from twolayer.config import load_config
    from twolayer.data import build_dataset

    exp = Experiment("zz/data-only", "t", "f", "d", tiny_config)
    fake = Synthetic("any", lambda configs: {"gd": SyntheticRun(configs["gd"], {"loss": [[1.0, 1.0]]})}, "any run")

    @exp.claim("two-points", "the data has two points", kind="prediction", falsifiers=[fake])
    def _(r):
        return at_most(len(build_dataset(load_config(r["gd"].config).data).y), 2)

    reads: set[str] = set()
    falsify(exp, exp.claims[0], fake, "/nonexistent", reads)
    assert reads == {"config"} and not reads & set(DYNAMICS)


def test_assumption_broken_roles_swap(tmp_path):
    """In an assumption-broken experiment a falsifier is refuted when the claim passes on it."""
    broken = tiny("zz/broken", bound=1e-9, breaks="a bound below any loss")
    spec = broken.claims[0]
    check = falsify(broken, spec, spec.falsifiers[0], tmp_path)
    assert check.passed and refuted(broken, check)
    assert broken.expect == "fail" and tiny("zz/plain").expect == "pass"


def test_counterfactual_runs_go_through_the_store(tmp_path):
    exp = tiny("zz/cf", bound=1e-9)
    more_steps = Counterfactual("longer", lambda c: {"gd": {**c["gd"], "train": {**c["gd"]["train"], "steps": 40}}},
                                "twice the steps")
    with registered(exp):
        check = falsify(exp, exp.claims[0], more_steps, tmp_path)
    assert not check.passed
    runs = [p for p in tmp_path.iterdir() if (p / "config.yaml").is_file()]
    assert len(runs) == 1 and runs[0].name.startswith("zz-cf-gd-")
