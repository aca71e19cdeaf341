"""The claims SDK: experiments, their claims and falsifiers, and the reproduce driver.

A *study* registers ``Experiment`` objects (id ``STUDY/NAME``): run configs at the ``quick`` and ``paper``
scales, figure functions (``@exp.plot``) and claim functions (``@exp.claim(id, statement, kind=...,
falsifiers=[...], premises=[...])``) that return a ``Check`` built with the helpers (``at_most``,
``close_to``, ``within``, ``ordered``, ``monotone``...). A falsifier is a plausible wrong world on which
the same claim must fail: ``Counterfactual`` (the runs with one thing changed), ``Premise`` (the runs with
one premise of the claim's theorem removed) or ``Synthetic`` (hand-made runs, a unit test of the check).

Studies are found through the entry point group ``twolayer.studies`` (``twolayer.claims.studies``: the
papers in ``twolayer.papers`` register this way), or loaded from a single file (``load_study``,
``twolayer reproduce ./my_study.py``). ``reproduce`` runs them through the store; ``conformance``
(``twolayer check``) runs every falsifier; ``twolayer.report.write_report`` draws the report.
``twolayer new study NAME`` writes a working template.
"""

from twolayer.claims.checks import (
    FLAG_NEAR_EDGE, FLAG_SAYS_LITTLE, KINDS, MONOTONE, NEAR_EDGE, PREDICTIVE_KINDS, RELATIONS, SAYS_LITTLE,
    TOLERANCE_SOURCES, Check,
    Claim, Exclusion, all_of,
    at_least, at_most, bound, close_to, compare, fmt, holds, jsonable, monotone, ordered, relation, slack_flags,
    within,
)
from twolayer.claims.conformance import Verdict, conformance
from twolayer.claims.falsifiers import Counterfactual, Falsifier, FalsifierError, Premise, Synthetic, SyntheticRun
from twolayer.claims.registry import (
    DISCOVERY_ERRORS, EXPERIMENTS, PAPERS, SCALES, ClaimSpec, Experiment, FigureSpec, Paper, Results, catalog, discover,
    experiments, get, import_submodules, known_targets, load_study, register, register_paper, registered, select,
)
from twolayer.claims.reproduce import (
    DYNAMICS, REPORT_DIR, ExperimentResult, Progress, Reproduction, RunRecord, assemble, evaluate,
    LEDGER, PlannedRun, ablate_premises, claims_document, expand_study_files, falsify,
    ledger, ledger_categories, ledger_counts, load, plan, refuted,
    reproduce,
)
from twolayer.claims.studies import GROUP, StudyError, is_study_file
from twolayer.claims_file import CLAIMS_FORMAT, claim_records

__all__ = [
    "DISCOVERY_ERRORS", "DYNAMICS", "EXPERIMENTS", "Exclusion", "GROUP", "TOLERANCE_SOURCES", "Premise", "StudyError", "Verdict", "conformance",
    "expand_study_files", "is_study_file", "load_study", "PlannedRun", "plan", "LEDGER", "ablate_premises", "ledger",
    "ledger_categories", "ledger_counts", "CLAIMS_FORMAT", "claim_records", "claims_document",
    "FLAG_NEAR_EDGE", "FLAG_SAYS_LITTLE", "KINDS", "MONOTONE", "NEAR_EDGE", "PREDICTIVE_KINDS",
    "PAPERS", "RELATIONS", "REPORT_DIR", "SAYS_LITTLE", "SCALES", "Check", "Claim", "ClaimSpec", "Counterfactual",
    "Experiment", "ExperimentResult", "Falsifier", "FalsifierError", "FigureSpec", "Paper", "Progress",
    "Reproduction", "Results", "RunRecord", "Synthetic", "SyntheticRun", "all_of", "assemble", "at_least",
    "at_most", "bound", "catalog", "close_to", "compare", "discover", "evaluate", "experiments", "falsify", "fmt", "get",
    "holds", "import_submodules", "jsonable", "known_targets", "load", "monotone", "ordered", "refuted",
    "register", "register_paper", "registered", "relation", "reproduce", "select", "slack_flags", "within",
]
