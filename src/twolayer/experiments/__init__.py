"""Paper experiments: a registry of reproduced figures, their claims, and the reproduce driver.

Adding an experiment is adding a module here (e.g. ``min2024.py``) that builds ``Experiment``
objects, decorates their claim and figure functions, and calls ``register``; ``discover`` imports
every module whose name does not start with ``_``. See ``engine.py`` for a complete example.
"""

from twolayer.experiments._claims import (
    MONOTONE, RELATIONS, Check, Claim, all_of, at_least, at_most, close_to, compare, fmt, holds, jsonable,
    monotone, ordered, relation, within,
)
from twolayer.experiments._registry import (
    DISCOVERY_ERRORS, EXPERIMENTS, PAPERS, SCALES, ClaimSpec, Experiment, FigureSpec, Paper, Results, discover,
    experiments, get, import_submodules, known_targets, register, register_paper, registered, select,
)
from twolayer.experiments._reproduce import (
    REPORT_DIR, ExperimentResult, Progress, Reproduction, RunRecord, assemble, evaluate, load, reproduce,
)

__all__ = [
    "DISCOVERY_ERRORS", "EXPERIMENTS", "MONOTONE", "PAPERS", "RELATIONS", "REPORT_DIR", "SCALES", "Check", "Claim",
    "ClaimSpec", "Experiment", "ExperimentResult", "FigureSpec", "Paper", "Progress", "Reproduction", "Results",
    "RunRecord", "all_of", "assemble", "at_least", "at_most", "close_to", "compare", "discover", "evaluate",
    "experiments", "fmt", "get", "holds", "import_submodules", "jsonable", "known_targets", "load", "monotone", "ordered", "register",
    "register_paper", "registered", "relation", "reproduce", "select", "within",
]
