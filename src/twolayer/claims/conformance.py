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

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from twolayer.claims.checks import KINDS
from twolayer.claims.registry import Experiment
from twolayer.claims.reproduce import DYNAMICS, falsify, refuted

RUN_FALSIFIERS = ("counterfactual", "premise")  # real runs in a plausible wrong world: evidence, not a unit test


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
            if spec.kind == "prediction" and not any(f.kind in RUN_FALSIFIERS for f in spec.falsifiers):
                verdicts.append(Verdict(cid, "", "", False, "a prediction needs a counterfactual run (a Counterfactual "
                                        "or a Premise): a synthetic falsifier only tests the check"))
            for f in spec.falsifiers:
                verdicts.append(_verdict(exp, spec, f, cid, out))
    return verdicts


def _verdict(exp: Experiment, spec, falsifier, cid: str, out) -> Verdict:
    reads: set[str] = set()
    try:
        check = falsify(exp, spec, falsifier, out, reads)
    except Exception as e:  # a falsifier that cannot be built or run says so; it conforms to nothing
        return Verdict(cid, falsifier.name, falsifier.kind, False, f"{type(e).__name__}: {e}")
    must = ("pass (the paper's own setting)" if exp.assumption_broken else
            "pass (a world where the paper's statement holds)" if spec.kind == "finding" else "fail")
    if not refuted(exp, check, spec):
        return Verdict(cid, falsifier.name, falsifier.kind, False,
                       f"must {must} here ({falsifier.why}) but passed={check.passed}: measured {check.measured}")
    if not reads & set(DYNAMICS):
        return Verdict(cid, falsifier.name, falsifier.kind, False,
                       f"read only {sorted(reads)} of its runs, none of {', '.join(DYNAMICS)}")
    return Verdict(cid, falsifier.name, falsifier.kind, True, f"{'failed' if not check.passed else 'passed'} "
                                                               f"as it must: measured {check.measured}")


__all__ = ["Verdict", "conformance"]
