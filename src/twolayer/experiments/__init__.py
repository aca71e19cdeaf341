"""Paper experiments: a registry of reproduced figures, their claims, and the reproduce driver.

Adding an experiment is adding a module here (e.g. ``engine.py``, or a package such as ``min2024/`` whose ``__init__`` imports one module per experiment) that builds ``Experiment``
objects, decorates their claim and figure functions, and calls ``register``; ``discover`` imports
every module whose name does not start with ``_``. See ``engine.py`` for a complete example: every
claim there states its kind and the falsifiers on which it must fail (``_falsifiers.py``).
"""

from twolayer.experiments._claims import (
    FLAG_NEAR_EDGE, FLAG_SAYS_LITTLE, KINDS, MONOTONE, NEAR_EDGE, RELATIONS, SAYS_LITTLE, Check, Claim, all_of,
    at_least, at_most, bound, close_to, compare, fmt, holds, jsonable, monotone, ordered, relation, slack_flags,
    within,
)
from twolayer.experiments._falsifiers import Counterfactual, Falsifier, FalsifierError, Synthetic, SyntheticRun
from twolayer.experiments._registry import (
    DISCOVERY_ERRORS, EXPERIMENTS, PAPERS, SCALES, ClaimSpec, Experiment, FigureSpec, Paper, Results, catalog, discover,
    experiments, get, import_submodules, known_targets, register, register_paper, registered, select,
)
from twolayer.experiments._reproduce import (
    DYNAMICS, REPORT_DIR, ExperimentResult, Progress, Reproduction, RunRecord, assemble, evaluate, falsify, load,
    refuted, reproduce,
)

__all__ = [
    "DISCOVERY_ERRORS", "DYNAMICS", "EXPERIMENTS", "FLAG_NEAR_EDGE", "FLAG_SAYS_LITTLE", "KINDS", "MONOTONE", "NEAR_EDGE",
    "PAPERS", "RELATIONS", "REPORT_DIR", "SAYS_LITTLE", "SCALES", "Check", "Claim", "ClaimSpec", "Counterfactual",
    "Experiment", "ExperimentResult", "Falsifier", "FalsifierError", "FigureSpec", "Paper", "Progress",
    "Reproduction", "Results", "RunRecord", "Synthetic", "SyntheticRun", "all_of", "assemble", "at_least",
    "at_most", "bound", "catalog", "close_to", "compare", "discover", "evaluate", "experiments", "falsify", "fmt", "get",
    "holds", "import_submodules", "jsonable", "known_targets", "load", "monotone", "ordered", "refuted",
    "register", "register_paper", "registered", "relation", "reproduce", "select", "slack_flags", "within",
]
