"""The claim conformance test as a function (``twolayer check``): a claim is evidence only if it could
have failed.

Every claim states its kind and at least one falsifier (a prediction at least one counterfactual run:
a ``Counterfactual`` or a ``Premise``), and the SAME claim function, applied unchanged to
each falsifier (synthetic runs, counterfactual runs, runs with a premise removed), comes out the way it
must (``refuted``: failed, or passed for an assumption-broken experiment) and reads what the runs
produced (``DYNAMICS``), not only their configs. ``tests/test_claim_conformance.py`` holds every
registered experiment to this.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from twolayer.claims.checks import KINDS, PREDICTIVE_KINDS
from twolayer.claims.registry import Experiment
from twolayer.claims.falsifiers import must_refute
from twolayer.claims.reproduce import DYNAMICS, falsify, refuted

RUN_FALSIFIERS = ("counterfactual", "premise")  # real runs in a plausible wrong world: evidence, not a unit test


def undefined(measured) -> str:
    """Why a measured value is undefined ("" when it is not): None, a non-finite number (t1 = inf: never
    aligned), or an empty collection (no neuron in S-). A prediction that fails on a run of a wrong world only
    because its quantity is undefined there measured nothing (issue 25, section 2)."""
    if measured is None:
        return "None"
    if isinstance(measured, str):
        return measured if measured.lower().lstrip("+-") in ("inf", "nan", "infinity") else ""
    if isinstance(measured, (int, float)) and not isinstance(measured, bool):
        return "" if math.isfinite(measured) else repr(float(measured))
    if isinstance(measured, dict):
        values = list(measured.values())
    elif isinstance(measured, (list, tuple)):
        values = list(measured)
    else:
        return ""
    if not values:
        return "empty"
    reasons = [undefined(v) for v in values]
    return f"every entry undefined ({reasons[0]})" if all(reasons) else ""


@dataclass(frozen=True)
class Verdict:
    """One claim on one falsifier (or the claim alone, ``falsifier`` empty, when it declares none)."""

    claim: str
    falsifier: str
    kind: str
    conforms: bool
    why: str


def conformance(exps: Iterable[Experiment], out: str | Path) -> list[Verdict]:
    """The verdict of every claim of ``exps`` on each of its falsifiers; counterfactual runs go through the
    run store in ``out`` (cached like every run)."""
    verdicts = []
    for exp in exps:
        for spec in exp.claims:
            cid = f"{exp.id}:{spec.id}"
            if spec.kind not in KINDS or not spec.falsifiers:
                verdicts.append(Verdict(cid, "", "", False, f"declare kind= (one of {', '.join(KINDS.names())}) "
                                                            f"and falsifiers=[...] (at least one)"))
                continue
            if spec.kind in PREDICTIVE_KINDS and not any(refuting_run(f) for f in spec.falsifiers):
                verdicts.append(Verdict(cid, "", "", False, "a prediction needs a counterfactual run on which it fails "
                                        "(a Counterfactual or a Premise): a synthetic falsifier only tests the check, "
                                        "and a premise it holds without is no falsifier"))
            for f in spec.falsifiers:
                verdicts.append(_verdict(exp, spec, f, cid, out))
    return verdicts


def _verdict(exp: Experiment, spec, falsifier, cid: str, out) -> Verdict:
    reads: set[str] = set()
    try:
        check = falsify(exp, spec, falsifier, out, reads)
    except Exception as e:  # a falsifier that cannot be built or run says so; it conforms to nothing
        return Verdict(cid, falsifier.name, falsifier.kind, False, f"{type(e).__name__}: {e}")
    if not must_refute(falsifier):  # a premise the claim is declared to hold without: it must still pass there
        if refuted(exp, check, spec):
            return Verdict(cid, falsifier.name, falsifier.kind, False,
                           f"declared to hold without this premise (holds=True) but passed={check.passed}: measured "
                           f"{check.measured}; drop holds=True, it discriminates")
    elif not refuted(exp, check, spec):
        must = ("pass (the paper's own setting)" if exp.assumption_broken else
                "pass (a world where the paper's statement holds)" if spec.kind == "finding" else "fail")
        return Verdict(cid, falsifier.name, falsifier.kind, False,
                       f"must {must} here ({falsifier.why}) but passed={check.passed}: measured {check.measured}")
    if not reads & set(DYNAMICS):
        return Verdict(cid, falsifier.name, falsifier.kind, False,
                       f"read only {sorted(reads)} of its runs, none of {', '.join(DYNAMICS)}")
    if measures_nothing(spec, falsifier, check):
        return Verdict(cid, falsifier.name, falsifier.kind, False,
                       f"failed only because its quantity is undefined here (measured {undefined(check.measured)}): "
                       f"a run of a wrong world must measure something; {check.details}")
    return Verdict(cid, falsifier.name, falsifier.kind, True, f"{'failed' if not check.passed else 'passed'} "
                                                               f"as it must: measured {check.measured}")


def refuting_run(falsifier) -> bool:
    """A real run of a wrong world on which the claim must fail: a ``Counterfactual``, or a ``Premise`` not
    declared with ``holds=True``."""
    return falsifier.kind in RUN_FALSIFIERS and must_refute(falsifier)


def measures_nothing(spec, falsifier, check) -> bool:
    """A prediction that failed on a run falsifier with an undefined measurement (``undefined``)."""
    return (spec.kind in PREDICTIVE_KINDS and refuting_run(falsifier) and not check.passed
            and bool(undefined(check.measured)))


__all__ = ["RUN_FALSIFIERS", "Verdict", "conformance", "measures_nothing", "refuting_run", "undefined"]
