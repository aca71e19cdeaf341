"""The reproduce driver: run every config of the selected experiments, then check every claim.

``reproduce`` runs configs through the run store (finished runs are cache hits, interrupted ones
resume), then ``assemble`` loads the stored runs and evaluates the claims. ``load`` rebuilds the
same ``Reproduction`` from an output folder without running anything, so a report can be
rebuilt and its ``claims.json`` equals the original. Failures are isolated: a run that fails or
a claim function that raises becomes a failed claim carrying the error; other experiments go on.
``falsify`` evaluates a claim, unchanged, on one of its falsifiers (``_falsifiers``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import traceback
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from twolayer.claims.checks import PREDICTIVE_KINDS, Check, Claim, jsonable
from twolayer.claims.falsifiers import SCALE, Falsifier, falsifier_record
from twolayer.claims.figures import DrawnFigure, draw_figures
from twolayer.claims.registry import (
    DISCOVERY_ERRORS, SCALES, ClaimSpec, Experiment, Results, discover, experiments, get, load_study, portable,
    select,
)
from twolayer.claims.studies import StudyError, is_study_file
from twolayer.provenance import provenance
from twolayer.claims.probes import independent_of_dynamics, probe_claims
from twolayer.claims.run_names import RunNames, name_prefix
from twolayer.claims.workers import WorkerDied, map_in_processes
from twolayer.claims_file import CLAIMS_FORMAT
from twolayer.errors import UnrecordedEventWarning
from twolayer.store import DEFAULT_OUT, FINISHED, TRAJECTORY, RunStore, now_iso

REPORT_DIR = "report"


@dataclass
class RunRecord:
    """One run of an experiment: its config key, run id (None if the config was invalid), status."""

    key: str
    run_id: str | None
    status: str
    cached: bool = False
    seconds: float = 0.0
    message: str = ""
    config_hash: str | None = None  # the full sha256 of the resolved config (None if it was invalid)


@dataclass
class ExperimentResult:
    """One experiment of a reproduction: its runs, evaluated claims, timings, and why it was skipped."""

    id: str
    title: str
    figure: str
    scale: str
    runs: list[RunRecord]
    claims: list[Claim] = field(default_factory=list)
    run_seconds: float = 0.0
    claim_seconds: float = 0.0
    skipped: str = ""  # why the experiment was not run (its data is missing); empty when it ran
    breaks: str = ""  # the assumption an assumption-broken experiment breaks (Experiment.breaks)
    figures: list[DrawnFigure] | None = None  # drawn with the claims (reproduce(figures=True)); None: not drawn
    figure_seconds: float = 0.0  # the seconds drawing ``figures`` took

    @property
    def assumption_broken(self) -> bool:
        return bool(self.breaks)

    @property
    def paper(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def passed(self) -> int:
        return sum(c.passed for c in self.claims)

    @property
    def as_expected(self) -> int:
        """Claims that came out as expected (passed; or failed, in an assumption-broken experiment)."""
        return sum(c.as_expected for c in self.claims)


@dataclass
class Reproduction:
    """The outcome of ``reproduce`` (or of ``load``): per experiment runs, claims and timings."""

    out: Path
    scale: str
    experiments: list[ExperimentResult]
    wall_seconds: float = 0.0  # runs and claims
    created: str = field(default_factory=now_iso)
    report_seconds: float = 0.0  # figures and report files (set by ``write_report``)
    errors: list[Claim] = field(default_factory=list)  # modules that failed to import
    studies: list[str] = field(default_factory=list)  # study files the experiments came from (``load_study``)
    provenance: dict = field(default_factory=dict)  # commit, engine digest (``twolayer.provenance``)

    @property
    def claims(self) -> list[Claim]:
        """Every claim, those of assumption-broken experiments included, and the import errors."""
        return [c for e in self.experiments for c in e.claims] + self.errors

    @property
    def ordinary_claims(self) -> list[Claim]:
        """The claims expected to pass (all but those of assumption-broken experiments)."""
        return [c for c in self.claims if c.expect == "pass"]

    @property
    def broken_claims(self) -> list[Claim]:
        """The claims of assumption-broken experiments (expected to fail)."""
        return [c for c in self.claims if c.expect == "fail" and c.kind != "finding"]

    @property
    def ledger(self) -> dict[str, dict[str, list[str]]]:
        """What each green is worth, per paper (``ledger``)."""
        return ledger(self.claims)

    @property
    def findings(self) -> list[Claim]:
        """Statements of the papers that the simulation contradicts (expected to fail; a finding that
        passes no longer is one, and makes ``exit_code`` 1)."""
        return [c for c in self.claims if c.kind == "finding"]

    @property
    def all_passed(self) -> bool:
        """Every ordinary claim passed."""
        return all(c.passed for c in self.ordinary_claims)

    @property
    def all_as_expected(self) -> bool:
        """Every ordinary claim passed and every claim of an assumption-broken experiment failed."""
        return all(c.as_expected for c in self.claims)

    @property
    def not_as_declared(self) -> list[Claim]:
        """The claims that did not come out as declared: a failed ordinary claim, a finding that holds now, an
        assumption-broken claim that holds."""
        return [c for c in self.claims if not c.as_expected]

    @property
    def verdict(self) -> str:
        """The headline of the report and the terminal: whether every claim came out as declared. It counts no
        passes: what each green is worth is the ledger's to say."""
        if not self.claims:
            return "no claims to check"
        bad = self.not_as_declared
        if not bad:
            return f"every claim came out as declared ({len(self.claims)} checked); the ledger says what each is worth"
        return f"{len(bad)} of {len(self.claims)} claims did not come out as declared: " + ", ".join(c.id for c in bad)

    @property
    def exit_code(self) -> int:
        """0 when every claim came out as expected; 1 otherwise: a failed claim, or a claim that holds
        although its experiment breaks an assumption of the theory (a finding to look at)."""
        return 0 if self.all_as_expected else 1

    @property
    def report_dir(self) -> Path:
        return self.out / REPORT_DIR

    def manifest(self) -> dict:
        """What ``load`` needs to rebuild this reproduction: scale, run ids, timings."""
        return {
            "scale": self.scale, "created": self.created, "wall_seconds": self.wall_seconds, "studies": self.studies,
            "provenance": self.provenance,
            "experiments": [
                {"id": e.id, "title": e.title, "runs": [asdict(r) for r in e.runs],
                 "run_seconds": e.run_seconds, "skipped": e.skipped} for e in self.experiments
            ],
        }


# What each green is worth: the ledger's categories, in the order the report shows them. A claim is in one
# of the first eleven (by its kind and its evidence) and in any of the last four that apply.
LEDGER = {
    "discriminates": "predictions that fail on a counterfactual run (the conformance test checks it) and on "
                     "each premise ablation of their theorem",
    "no premise ablated": "predictions that fail on a counterfactual run, but name no premise of their theorem "
                          "to remove",
    "holds without a premise": "predictions that still pass with a premise of their theorem removed: evidence for "
                               "the conclusion, not for the theorem",
    "assumption broken": "predictions run where an assumption of their theorem is broken (expected to fail there; "
                         "their falsifier restores the assumption, where they must pass)",
    "no counterfactual run": "predictions falsified only by synthetic runs (unit tests of the check)",
    "extrapolation": "the project's extensions of a paper's statement to settings the paper states nothing for (each "
                     "fails on a counterfactual run)",
    "informative bound": "bounds whose slack is at most one decade",
    "uninformative bound": "bounds that hold by more than a factor 10",
    "consistency": "identities of the engine: consistency checks, not confirmations",
    "finding": "statements of the papers that the simulation contradicts",
    "undeclared": "claims without a kind",
    "exploratory tolerance": "tolerances taken from earlier runs, not from the paper, a bound, the solver or a "
                             "measured spread",
    "exclusions": "claims that leave out seeds or neurons (by a premise the paper states)",
    "independent of the dynamics": "predictions that still pass on their own runs frozen at the initial state, "
                                   "reversed in time and scrambled in time: they do not read the trained state",
    "premise not run": "claims with a premise ablation that could not be run",
}
RUN_FALSIFIER_KINDS = ("counterfactual", "premise")


def ledger_categories(c: Claim) -> list[str]:
    """The ledger categories of one claim record (``LEDGER``), computed from ``claims.json`` alone."""
    slack = _number(c.slack)
    if c.kind == "prediction" and c.expect == "fail":
        main = "assumption broken"
    elif c.kind == "extrapolation":
        main = "extrapolation"
    elif c.kind == "prediction":
        if not any(f.get("kind") in RUN_FALSIFIER_KINDS and not f.get("holds") for f in c.falsifiers):
            main = "no counterfactual run"
        elif any(p.get("discriminates") is False for p in c.premises):
            main = "holds without a premise"
        else:
            main = "discriminates" if c.premises else "no premise ablated"
    elif c.kind == "bound":
        main = "uninformative bound" if slack is not None and slack > 1 else "informative bound"
    else:
        main = c.kind if c.kind in ("consistency", "finding") else "undeclared"
    extra = [name for name, applies in (
        ("exploratory tolerance", c.tolerance_source.startswith("exploratory")),
        ("exclusions", any(e.get("count") for e in c.exclusions)),
        ("premise not run", any(p.get("discriminates") is None for p in c.premises)),
        ("independent of the dynamics", c.kind in PREDICTIVE_KINDS and independent_of_dynamics(c.probes))) if applies]
    return [main, *extra]


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def ledger(claims: Iterable[Claim]) -> dict[str, dict[str, list[str]]]:
    """``{paper: {category: [claim ids]}}`` over ``LEDGER``'s categories (empty ones left out)."""
    out: dict[str, dict[str, list[str]]] = {}
    for c in claims:
        paper = c.experiment.split("/", 1)[0]
        for category in ledger_categories(c):
            out.setdefault(paper, {}).setdefault(category, []).append(c.id)
    return {paper: {k: entries[k] for k in LEDGER if k in entries} for paper, entries in out.items()}


def ledger_counts(claims: Iterable[Claim]) -> dict[str, dict[str, int]]:
    """``{paper: {category: count}}``: the ledger's counts, as ``claims.json`` and ``summary.json`` store them."""
    return {paper: {k: len(v) for k, v in entries.items()} for paper, entries in ledger(claims).items()}


def claims_document(claims: Iterable[Claim]) -> dict:
    """The content of ``claims.json``: ``{"format": 2, "ledger": {paper: {category: count}}, "claims": [...]}``.
    Each record lists its falsifiers (with their kind), premises (with ``discriminates``), tolerance source
    and exclusions, so the ledger is recomputable from the records alone (``twolayer.claims_file``)."""
    claims = list(claims)
    return {"format": CLAIMS_FORMAT, "ledger": ledger_counts(claims), "claims": [c.to_dict() for c in claims]}


class MissingDataError(FileNotFoundError):
    """``reproduce(require_data=True)`` selected experiments whose data files are missing."""


class Progress:
    """Progress hooks of ``reproduce`` (no-ops; the CLI draws rich bars)."""

    def start(self, total_runs: int) -> None: ...

    def run_started(self, experiment: str, key: str) -> None: ...

    def run_progress(self, done: int, total: int, t: float) -> None: ...

    def run_finished(self, experiment: str, key: str, record: RunRecord) -> None: ...

    def premise_started(self, experiment: str, claim: str, premise: str, done: int, total: int) -> None:
        """The ``done + 1``-th of the experiment's ``total`` premise ablations starts (``ablate_premises``: its runs
        are made then, after the experiment's own runs, so the suite bar does not count them)."""

    def premises_finished(self, experiment: str, total: int) -> None: ...

    def lane(self) -> Progress:
        """The hooks for one worker process of ``reproduce(jobs=N)`` (its events arrive interleaved with the
        other workers'); the same object by default, the CLI gives each worker its own bars."""
        return self


class EmittingProgress(Progress):
    """A worker's progress hooks: each event is sent to the parent (``workers.map_in_processes``'s ``emit``),
    which replays it on the worker's ``Progress.lane``."""

    def __init__(self, emit):
        self.emit = emit

    def run_started(self, experiment: str, key: str) -> None:
        self.emit("run_started", experiment, key)

    def run_progress(self, done: int, total: int, t: float) -> None:
        self.emit("run_progress", done, total, t)

    def run_finished(self, experiment: str, key: str, record: RunRecord) -> None:
        self.emit("run_finished", experiment, key, record)

    def premise_started(self, experiment: str, claim: str, premise: str, done: int, total: int) -> None:
        self.emit("premise_started", experiment, claim, premise, done, total)

    def premises_finished(self, experiment: str, total: int) -> None:
        self.emit("premises_finished", experiment, total)


def reproduce(targets: Iterable[str] | None = None, *, scale: str = "quick", out: str | Path = DEFAULT_OUT,
              force: bool = False, progress: Progress | None = None, require_data: bool = False,
              jobs: int = 1, figures: bool = False) -> Reproduction:
    """Run the selected experiments (all by default) at ``scale`` and evaluate their claims.

    Arguments:
        targets: paper ids (``min2024``), experiment ids (``min2024/fig7``) or study files (``./my_study.py``,
            whose experiments run; ``load_study``); empty: every installed experiment.
        scale: ``quick`` or ``paper``.
        out: the output folder (the run store; the report goes to ``<out>/report``).
        force: recompute stored runs.
        progress: a ``Progress`` receiving the run events (the CLI draws bars).
        require_data: raise instead of skipping experiments whose data files are missing.
        jobs: worker processes (``workers.map_in_processes``): with more than one, whole experiments (runs, claims,
            premise ablations, probes) run in parallel, each in one worker; the stored runs, and so the claims,
            are the same as with one. An experiment whose worker fails gets failed claims saying why; the
            others go on.
        figures: draw each experiment's figures where its claims are evaluated (in its worker with ``jobs``;
            ``claims.figures``), so that ``write_report`` only writes them; the CLI does, since it always writes
            the report. Without it, ``write_report`` draws them.

    Returns:
        The ``Reproduction``: per experiment its runs, claims and timings (``write_report`` draws it).

    Raises ``LookupError`` for an unknown target and ``ValueError`` for an unknown scale; run
    failures never raise (they become failed claims). An experiment whose data is missing
    (``Experiment.requires``) is skipped with a note, or raises ``MissingDataError`` when
    ``require_data``.
    """
    if scale not in SCALES:
        raise ValueError(f"scale {scale!r} is not one of {', '.join(SCALES)}")
    progress = progress or Progress()
    out = Path(out)
    start = time.perf_counter()
    targets, studies = expand_study_files(targets)
    plan = select(targets)
    skipped = {e.id: note for e in plan if (note := e.missing_data())}
    if skipped and require_data:
        raise MissingDataError("; ".join(f"{eid}: {note}" for eid, note in skipped.items()))
    configs = {e.id: e.run_configs(scale) for e in plan if e.id not in skipped}
    progress.start(sum(len(c) for c in configs.values()))
    in_workers = [e for e in plan if e.id not in skipped and portable(e.id)]
    if min(jobs, len(in_workers)) > 1:
        done = _in_workers(in_workers, configs, scale, out, force, progress, jobs, studies, figures)
        results = []
        for e in plan:  # the plan's order; what no worker could run (skipped, or known here only) runs here
            if e.id in skipped:
                results.append(assemble_experiment(e, [], 0.0, out, scale, skipped=skipped[e.id]))
            elif e.id in done:
                results.append(done[e.id])
            else:
                results.append(assemble_experiment(e, *run_experiment(e, configs[e.id], out, force, progress), out,
                                                   scale, progress, figures=figures))
        rep = Reproduction(out, scale, results, errors=import_errors() if not targets else [])
    else:
        records = {e.id: run_experiment(e, configs[e.id], out, force, progress) for e in plan if e.id not in skipped}
        rep = assemble(out, scale, [(e, *records.get(e.id, ([], 0.0))) for e in plan], include_errors=not targets,
                       skipped=skipped, progress=progress, figures=figures)
    rep.wall_seconds, rep.studies, rep.provenance = time.perf_counter() - start, studies, provenance()
    return rep


def run_experiment(exp: Experiment, configs: dict[str, dict], out: Path, force: bool,
                   progress: Progress) -> tuple[list[RunRecord], float]:
    """Make (or find in the store) each run of ``configs`` (key -> config); returns the records and the seconds."""
    t0 = time.perf_counter()
    runs = []
    for key, cfg in configs.items():
        progress.run_started(exp.id, key)
        record = _run_one(key, cfg, out, force, progress)
        progress.run_finished(exp.id, key, record)
        runs.append(record)
    return runs, time.perf_counter() - t0


@dataclass(frozen=True, eq=False)
class ExperimentJob:
    """What a worker needs to run one experiment: its id and the configs this process made (``run_configs``
    can take tens of seconds: a worker does not make them again). Hashed by identity (``map_in_processes``'s
    key)."""

    exp_id: str
    configs: dict[str, dict]
    scale: str
    out: str
    force: bool
    figures: bool = False  # draw its figures after its claims (reproduce's figures)


def _in_workers(exps: list[Experiment], configs: dict[str, dict[str, dict]], scale: str, out: Path, force: bool,
                progress: Progress, jobs: int, studies: list[str], figures: bool = False) -> dict[str, ExperimentResult]:
    """``reproduce(jobs > 1)``: each experiment (``portable``) run and assembled in a worker process, by id; one
    that a worker does not find after all is left out (the caller runs it here)."""
    lanes: dict[int, Progress] = {}

    def on_event(worker: int, name: str, args: tuple) -> None:
        if worker not in lanes:
            lanes[worker] = progress.lane()
        getattr(lanes[worker], name)(*args)

    items = {e.id: ExperimentJob(e.id, configs[e.id], scale, str(out), force, figures) for e in exps}
    outcomes = map_in_processes(_experiment_job, list(items.values()), jobs=jobs, on_event=on_event,
                                initializer=_load_studies, initargs=(tuple(studies),))
    done = {}
    for exp in exps:
        outcome = outcomes[items[exp.id]]
        if outcome is None:  # run here by the caller
            continue
        if not isinstance(outcome, ExperimentResult):
            why = (outcome.reason if isinstance(outcome, WorkerDied)
                   else f"error in its worker: {type(outcome).__name__}: {outcome}")
            outcome = ExperimentResult(exp.id, exp.title, exp.figure, scale, [],
                                       evaluate(exp, None, {"worker": f"experiment {exp.id}: {why}"}),
                                       breaks=exp.breaks)
        done[exp.id] = outcome
    return done


def _load_studies(studies: tuple[str, ...]) -> None:
    """A worker's set-up: the study files the parent's targets named (``load_study``)."""
    for path in studies:
        load_study(path)


def _experiment_job(job: ExperimentJob, emit) -> ExperimentResult | None:
    """In a worker: run and assemble one experiment (None when this process does not know its id)."""
    try:
        exp = get(job.exp_id)
    except LookupError:
        return None
    progress = EmittingProgress(emit)
    records, seconds = run_experiment(exp, job.configs, Path(job.out), job.force, progress)
    return assemble_experiment(exp, records, seconds, Path(job.out), job.scale, progress, figures=job.figures)


@dataclass(frozen=True)
class PlannedRun:
    """A run ``reproduce`` would make: where it would go, whether the store holds it (verified, as a cache hit
    is), and ``estimate``: seconds (0 when stored; else the wall time of the latest stored run of the same name,
    an earlier version of that config; None when there is none)."""

    experiment: str
    key: str
    run_id: str | None
    config_hash: str | None
    stored: bool
    estimate: float | None
    note: str = ""


def plan(targets: Iterable[str] | None = None, *, scale: str = "quick", out: str | Path = DEFAULT_OUT) -> list[PlannedRun]:
    """Every run ``reproduce(targets, scale=scale, out=out)`` would make, without running anything.

    Arguments:
        targets: as for ``reproduce`` (paper ids, experiment ids, study files; empty: every experiment).
        scale: ``quick`` or ``paper``.
        out: the run store looked in.

    Returns:
        One ``PlannedRun`` per run, in the order ``reproduce`` runs them.
    """
    from twolayer.config import ConfigError, load_config

    if scale not in SCALES:
        raise ValueError(f"scale {scale!r} is not one of {', '.join(SCALES)}")
    targets, _ = expand_study_files(targets)
    store = RunStore(out)
    earlier: dict[str, float] = {}  # run name -> wall seconds of its latest stored run
    for row in store.list():
        wall = row["summary"].get("wall_seconds")
        if row["name"] and isinstance(wall, int | float) and row["summary"].get("status") in FINISHED:
            earlier[row["name"]] = float(wall)
    planned = []
    for exp in select(targets):
        missing = exp.missing_data()
        for key, cfg in exp.run_configs(scale).items():
            try:
                c = load_config(cfg)
            except ConfigError as e:
                planned.append(PlannedRun(exp.id, key, None, None, False, None, f"invalid: {e.errors[0][0]}"))
                continue
            digest = c.config_hash()
            state = store.stored_state(store.run_dir(c.name, digest), digest)
            note = f"skipped: {missing}" if missing else (state.problem and f"recomputed: {state.problem}")
            planned.append(PlannedRun(exp.id, key, f"{c.name}-{digest[:8]}", digest, state.cache_hit,
                                      0.0 if state.cache_hit else earlier.get(c.name), note or ""))
    return planned


def expand_study_files(targets: Iterable[str] | None) -> tuple[list[str], list[str]]:
    """``(targets, study files)``: each target that names a study file replaced by the ids of the experiments
    it registers (``load_study``), and the absolute paths of those files (for ``load`` to import them again)."""
    expanded, studies = [], []
    for target in targets or []:
        if is_study_file(target):
            expanded += load_study(target)
            studies.append(str(Path(target).resolve()))
        else:
            expanded.append(target)
    return expanded, studies


def _run_one(key: str, cfg: dict, out: Path, force: bool, progress: Progress) -> RunRecord:
    from twolayer.api import RunError, run as run_config
    from twolayer.config import ConfigError

    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():  # a registered experiment records what its claims read
            warnings.simplefilter("ignore", UnrecordedEventWarning)
            run = run_config(cfg, out=out, force=force, progress=progress.run_progress)
    except ConfigError as e:
        return RunRecord(key, None, "invalid", False, time.perf_counter() - t0, str(e))
    except RunError as e:
        return RunRecord(key, e.path.name, "failed", False, time.perf_counter() - t0, _first_line(e.path, str(e)),
                         (RunStore.read_summary(e.path) or {}).get("config_hash"))
    except Exception as e:  # an engine bug must not stop the other experiments
        return RunRecord(key, None, "failed", False, time.perf_counter() - t0, f"{type(e).__name__}: {e}")
    return RunRecord(key, run.path.name, run.status, run.cached, time.perf_counter() - t0,
                     _first_line(run.path, ""), run.summary.get("config_hash"))


def _first_line(run_dir: Path, default: str) -> str:
    summary = RunStore.read_summary(run_dir) or {}
    message = summary.get("message") or default
    return message.strip().splitlines()[0] if message.strip() else ""


def assemble(out: str | Path, scale: str, planned: list[tuple[Experiment, list[RunRecord], float]],
             include_errors: bool = True, skipped: dict[str, str] | None = None,
             progress: Progress | None = None, figures: bool = False) -> Reproduction:
    """Load the stored runs of each experiment and evaluate its claims (pure in the stored runs; the premise
    ablations run their own small runs, reported to ``progress``); ``skipped`` maps the ids of experiments that
    were not run (missing data) to the reason; ``figures``: draw each experiment's figures too."""
    out = Path(out)
    progress = progress or Progress()
    skipped = skipped or {}
    results = [assemble_experiment(exp, records, seconds, out, scale, progress, skipped=skipped.get(exp.id, ""),
                                   figures=figures) for exp, records, seconds in planned]
    return Reproduction(out, scale, results, errors=import_errors() if include_errors else [])


def assemble_experiment(exp: Experiment, records: list[RunRecord], run_seconds: float, out: Path, scale: str,
                        progress: Progress | None = None, skipped: str = "", figures: bool = False) -> ExperimentResult:
    """One experiment of ``assemble``: its stored runs loaded, its claims evaluated, its premises ablated and
    its passed predictions probed, and with ``figures`` its figures drawn on the same results (or, when
    ``skipped`` says why it was not run, none of that)."""
    if skipped:
        return ExperimentResult(exp.id, exp.title, exp.figure, scale, [], skipped=skipped, breaks=exp.breaks)
    t0 = time.perf_counter()
    runs, failures = load_runs(out, records, may_fail=exp.may_fail)
    evaluated = Results(exp, scale, runs)
    counter = PremiseCounter(exp, progress or Progress())
    claims = [ablate_premises(exp, claim, out, counter) for claim in evaluate(exp, evaluated, failures)]
    counter.finish()
    if not failures and not exp.assumption_broken:
        probes = probe_claims(exp, evaluated, {c.id: c.passed for c in claims})
        claims = [dataclasses.replace(c, probes=probes[c.id]) if c.id in probes else c for c in claims]
    claim_seconds = time.perf_counter() - t0
    drawn, figure_seconds = draw_figures(exp, evaluated, failures) if figures else (None, 0.0)
    return ExperimentResult(exp.id, exp.title, exp.figure, scale, records, claims, run_seconds, claim_seconds,
                            breaks=exp.breaks, figures=drawn, figure_seconds=figure_seconds)


def import_errors() -> list[Claim]:
    """A failed claim for every study module that failed to import (``DISCOVERY_ERRORS``)."""
    return [Claim.failed("import", module, f"module {module} imports", tb.strip().splitlines()[-1])
            for module, tb in sorted(DISCOVERY_ERRORS.items())]


class PremiseCounter:
    """Counts an experiment's premise ablations for ``Progress.premise_started`` (every premise of every claim)."""

    def __init__(self, exp: Experiment, progress: Progress):
        self.exp, self.progress, self.done = exp, progress, 0
        self.total = sum(len(spec.premises) for spec in exp.claims)

    def started(self, claim: str, premise: str) -> None:
        self.progress.premise_started(self.exp.id, claim, premise, self.done, self.total)
        self.done += 1

    def finish(self) -> None:
        if self.total:
            self.progress.premises_finished(self.exp.id, self.total)


def ablate_premises(exp: Experiment, claim: Claim, out: Path, counter: PremiseCounter | None = None) -> Claim:
    """``claim`` with the outcome of each premise ablation of its theorem (``Premise``): the same claim function
    on the quick-scale runs with that premise removed, through the ordinary run store in ``out`` (cached, and
    shared with the conformance test's runs). ``discriminates`` is True when the claim fails there; False
    means it holds without that premise (evidence for its conclusion, not for the theorem). ``counter`` reports
    each ablation as it starts."""
    spec = next((s for s in exp.claims if f"{exp.id}:{s.id}" == claim.id), None)
    if spec is None or not spec.premises:
        return claim
    outcomes = []
    for premise in spec.premises:
        if counter is not None:
            counter.started(spec.id, premise.name)
        try:
            check = falsify(exp, spec, premise, out)
        except Exception as e:  # an ablation that cannot run is no evidence either way, and says why
            outcomes.append({"name": premise.name, "source": premise.source, "discriminates": None,
                             "measured": None, "error": f"{type(e).__name__}: {e}"})
            continue
        outcomes.append({"name": premise.name, "source": premise.source, "discriminates": refuted(exp, check, spec),
                         "measured": jsonable(check.measured)})
    return dataclasses.replace(claim, premises=outcomes)


def load_runs(out: Path, records: list[RunRecord], may_fail: tuple[str, ...] = ()) -> tuple[dict, dict[str, str]]:
    """The finished runs of ``records`` by key (and the ``failed`` runs of the keys in ``may_fail``, see
    ``Experiment.may_fail``), and a failure message for every other key."""
    from twolayer.api import Run

    runs, failures = {}, {}
    for r in records:
        path = Path(out) / r.run_id if r.run_id else None
        state = RunStore.stored_state(path) if path else None
        status = (state.summary or {}).get("status") if state else None
        allowed = FINISHED + (("failed",) if r.key in may_fail else ())
        if state is not None and state.problem:  # verified like a cache hit: a damaged run is never used
            failures[r.key] = (f"run {r.key!r} ({r.run_id}) cannot be used: {state.problem}; `twolayer reproduce` "
                               f"recomputes it")
        elif status in allowed and (path / TRAJECTORY).is_file():
            runs[r.key] = Run(path, cached=r.cached)
        else:
            failures[r.key] = f"run {r.key!r} ({r.run_id or 'no run directory'}) {status or r.status}: {r.message}"
    return runs, failures


def evaluate(exp: Experiment, results: Results, failures: dict[str, str] | None = None) -> list[Claim]:
    """Every claim of ``exp`` on ``results``; failed runs or raising claim functions give failed claims."""
    claims = []
    for spec in exp.claims:
        cid = f"{exp.id}:{spec.id}"
        meta = dict(kind=spec.kind, falsifiers=[falsifier_record(f) for f in spec.falsifiers],
                    expect="fail" if spec.kind == "finding" else exp.expect, tolerance_source=spec.tolerance_source,
                    explanation=spec.explanation)
        if failures:
            claims.append(Claim.failed(cid, exp.id, spec.statement, "; ".join(failures.values()), **meta))
            continue
        try:
            claims.append(Claim.from_check(cid, exp.id, spec.statement, spec.check(results), **meta))
        except Exception as e:
            frame = traceback.extract_tb(e.__traceback__)[-1]
            where = f" (at {Path(frame.filename).name}:{frame.lineno} in {frame.name})"
            claims.append(Claim.failed(cid, exp.id, spec.statement, f"error: {type(e).__name__}: {e}{where}", **meta))
    return claims


def load(out: str | Path = DEFAULT_OUT) -> Reproduction:
    """Rebuild the last reproduction in ``out`` from its stored runs, without running anything.

    Uses ``out/report/summary.json`` when present; otherwise scans the store for the runs of
    every registered experiment at each scale. Raises ``FileNotFoundError`` when nothing is found.
    """
    out = Path(out)
    manifest_path = out / REPORT_DIR / "summary.json"
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        discover()
        study_errors = []
        for study in manifest.get("studies") or []:
            try:
                load_study(study)
            except StudyError as e:
                study_errors.append(Claim.failed("study", study, f"study {study} loads", str(e)))
        planned, missing, skipped = [], [], {}
        for entry in manifest["experiments"]:
            if entry.get("skipped"):
                skipped[entry["id"]] = entry["skipped"]
            try:
                exp = get(entry["id"])
            except KeyError:
                missing.append(entry["id"])
                continue
            planned.append((exp, [RunRecord(**r) for r in entry["runs"]], float(entry.get("run_seconds", 0.0))))
        rep = assemble(out, manifest["scale"], planned, skipped=skipped)
        rep.errors += study_errors + [Claim.failed("registered", eid, f"experiment {eid} is registered",
                                                   "the stored report lists it, but no module registers it now")
                                      for eid in missing]
        rep.studies = list(manifest.get("studies") or [])
        rep.provenance = dict(manifest.get("provenance") or {})
        rep.wall_seconds, rep.created = float(manifest.get("wall_seconds", 0.0)), manifest.get("created", rep.created)
        return rep
    return _scan(out)


def _scan(out: Path) -> Reproduction:
    """Find stored runs of registered experiments by config hash (the scale with most runs wins). The run names
    the configs map to are kept between calls (``run_names``): making lyu2021's configs alone takes tens of
    seconds. An experiment of the package is looked for only when a stored run's name starts with its
    ``name_prefix``, the start of all its run names."""
    store = RunStore(out)
    names = RunNames()
    stored = [d.name for d in store.run_dirs()]
    candidates = [exp for exp in experiments()
                  if (prefix := name_prefix(exp)) is None or any(s.startswith(prefix) for s in stored)]
    best: tuple[int, str, list] = (0, "quick", [])
    for scale in SCALES:
        planned, found = [], 0
        for exp in candidates:
            records = []
            for n in names.names(exp, scale):
                if n.name is None:
                    records.append(RunRecord(n.key, None, "invalid", message=n.invalid))
                    continue
                run_dir = store.run_dir(n.name, n.config_hash)
                status = (store.read_summary(run_dir) or {}).get("status")
                records.append(RunRecord(n.key, run_dir.name if status else None, status or "missing", True,
                                         message="" if status else "not run yet"))
                found += status is not None
            if any(r.run_id for r in records):
                planned.append((exp, records, 0.0))
        if found > best[0]:
            best = (found, scale, planned)
    names.save()
    if not best[0]:
        raise FileNotFoundError(
            f"no runs of registered experiments in {out}: `report` draws the report of `twolayer reproduce --out {out}`. "
            f"To put claims on runs of your own, write a study (`twolayer new study NAME`) and run `twolayer reproduce "
            f"NAME/NAME.py --out {out}`, or give its file with `twolayer report {out} --study NAME/NAME.py`")
    return assemble(out, best[1], best[2])


# -- falsifiers: the same claim function on inputs where it must fail -----------------------------

DYNAMICS = ("trajectory", "final_params", "summary", "seeded")  # what training produced (not the config)


class _ReadRecorder:
    """A run that records the names of the attributes read from it into ``read``."""

    def __init__(self, run: Any, read: set[str]):
        self._run, self._read = run, read

    def __getattr__(self, name: str) -> Any:
        self._read.add(name)
        return getattr(self._run, name)


def falsify(exp: Experiment, spec: ClaimSpec, falsifier: Falsifier, out: str | Path,
            reads: set[str] | None = None) -> Check:
    """The claim ``spec`` of ``exp``, unchanged, on the falsifier's runs (counterfactuals run in the
    store ``out``). Raises ``FalsifierError`` when the runs cannot be made, and whatever the claim
    function raises: a falsifier on which the check cannot even be made is no evidence. With
    ``reads``, the names of the run attributes the claim function read are added to it."""
    runs = falsifier.runs(exp, out)
    if reads is not None:
        runs = {key: _ReadRecorder(run, reads) for key, run in runs.items()}
    return spec.check(Results(exp, SCALE, runs))


def refuted(exp: Experiment, check: Check, spec: ClaimSpec | None = None) -> bool:
    """Whether a falsifier's check came out the way it must: failed for an ordinary claim, passed for a
    claim of an assumption-broken experiment (its falsifier is the paper's own setting) and for a finding
    (its falsifier is a world where the paper's statement holds)."""
    swapped = exp.assumption_broken or (spec is not None and spec.kind == "finding")
    return bool(check.passed) if swapped else not check.passed
