"""Experiments and their registry.

An ``Experiment`` (id ``PAPER/NAME``) reproduces one paper figure: ``configs(scale)`` gives its run
configs at scale ``quick`` or ``paper``, figure functions draw from the runs, claim functions check
predictions on them. Each module of ``twolayer.claims`` whose name does not start with ``_``
is imported on first use (``discover``) and registers its experiments with ``register``; adding a
paper is adding one module.

Every claim states its ``kind`` (``prediction``, ``bound`` or ``consistency``) and its
``falsifiers``: inputs on which the same claim function must fail (``twolayer.claims.falsifiers``).
An experiment with ``breaks`` set is *assumption-broken*: it runs the theory outside one of its
assumptions, so its claims are expected to fail, and each of its falsifiers is the paper's own
setting, on which the claim must pass.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
import json
import os
import pkgutil
import re
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twolayer.claims.checks import KINDS, LOG10, Check
from twolayer.claims.checks import tolerance_source as check_tolerance_source
from twolayer.claims.studies import StudyError, fingerprint, import_file, load_installed, study_entry_points
from twolayer.registry import Registry

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from twolayer.api import Run
    from twolayer.claims.falsifiers import Falsifier

SCALES = ("quick", "paper")
_ID = re.compile(r"^[a-z0-9][a-z0-9_\-]*/[a-z0-9][a-z0-9_\-]*$")


@dataclass(frozen=True)
class Paper:
    """A paper whose experiments are registered: id, title and a reference line for the report."""

    id: str
    title: str
    reference: str = ""


@dataclass(frozen=True)
class ClaimSpec:
    """A registered claim: ``fn(results) -> Check``, its kind (None: not converted yet) and falsifiers."""

    id: str
    statement: str
    fn: Callable[[Results], Check]
    kind: str | None = None
    falsifiers: tuple[Falsifier, ...] = ()
    tolerance_source: str = "exploratory"  # where the check's tolerance comes from (checks.TOLERANCE_SOURCES)
    explanation: str = ""  # a finding: why the paper's statement fails here, with the numbers

    @property
    def premises(self) -> tuple[Falsifier, ...]:
        """The falsifiers that remove one premise of the claim's theorem (``Premise``)."""
        return tuple(f for f in self.falsifiers if f.kind == "premise")

    def check(self, results: Results) -> Check:
        """``fn(results)``, checked: a ``Check``, with a log10 slack when the claim is a ``bound``."""
        check = self.fn(results)
        if not isinstance(check, Check):
            raise TypeError(f"claim function returned {type(check).__name__}, not a Check")
        if self.kind == "bound" and check.slack_unit != LOG10:
            raise TypeError("a claim of kind 'bound' must return a bound check (experiments.bound: "
                            "slack log10(bound / measured))")
        return check


@dataclass(frozen=True)
class FigureSpec:
    """A figure of an experiment: its ``name``, ``caption`` and ``fn(results) -> matplotlib Figure``."""

    name: str
    caption: str
    fn: Callable[[Results], Figure]


@dataclass
class Experiment:
    """One reproduced figure: configs at two scales, figure functions and claim functions.

    ``configs(scale) -> {key: config dict}``; a config without ``name`` is named
    ``<paper>-<name>-<key>``. Claim and figure functions take a ``Results``. ``breaks`` names the
    assumption of the theory that the experiment breaks (empty for an ordinary experiment): its
    claims are then expected to fail, and the report shows it in its own section. ``may_fail`` names
    config keys whose run is expected to end ``failed`` (a failure that a claim checks, e.g. a flow
    with no solution, Min et al. App. E.3): their stored runs reach the claims and figures, which read
    ``run.status`` and ``run.summary["message"]``, instead of failing every claim.
    """

    id: str
    title: str
    figure: str
    description: str
    configs: Callable[[str], dict[str, dict]]
    claims: list[ClaimSpec] = field(default_factory=list)
    figures: list[FigureSpec] = field(default_factory=list)
    # data the experiment needs beyond what twolayer generates: ``requires() -> None`` when it is
    # available, else a note saying what is missing and how to get it (reproduce then skips it)
    requires: Callable[[], str | None] | None = None
    breaks: str = ""
    may_fail: tuple[str, ...] = ()

    @property
    def assumption_broken(self) -> bool:
        return bool(self.breaks)

    @property
    def expect(self) -> str:
        """What its claims should do: ``"pass"``, or ``"fail"`` in an assumption-broken experiment."""
        return "fail" if self.breaks else "pass"

    def missing_data(self) -> str | None:
        """None when the experiment can run, else the note of its ``requires`` check."""
        return self.requires() if self.requires is not None else None

    def __post_init__(self):
        if not _ID.match(self.id):
            raise ValueError(f"experiment id {self.id!r} is not PAPER/NAME (lower case, digits, '-', '_')")

    @property
    def paper(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]

    def claim(self, id: str, statement: str, *, kind: str | None = None, falsifiers: Iterable[Falsifier] = (),
              premises: Iterable[Falsifier] = (), tolerance_source: str = "exploratory", explanation: str = ""):
        """Decorator: register ``fn(results) -> Check`` as the claim ``id`` of ``kind`` (one of
        ``KINDS``), with the inputs on which it must fail: ``falsifiers`` (``Synthetic`` /
        ``Counterfactual``) and ``premises`` (``Premise``: the runs with one premise of its theorem removed).
        ``tolerance_source`` says where the tolerance comes from (``"paper: <quote>"``, ``"derived: ..."``,
        ``"solver"``, ``"spread: 5 seeds"``, ``"exploratory"``, ``"none"``); a ``finding`` (a statement of the
        paper that the simulation contradicts, kept in the paper's words) gives its ``explanation``."""
        falsifiers = tuple(falsifiers) + tuple(premises)
        if kind is not None and kind not in KINDS:
            raise ValueError(f"{self.id}: claim {id!r}: kind {kind!r} is not one of {', '.join(KINDS.names())}")
        tolerance_source = check_tolerance_source(tolerance_source)
        if kind == "finding" and not explanation.strip():
            raise ValueError(f"{self.id}: claim {id!r}: a finding needs its explanation (explanation=...)")
        names = [f.name for f in falsifiers]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.id}: claim {id!r}: falsifier names repeat: {names}")

        def decorator(fn):
            if any(c.id == id for c in self.claims):
                raise ValueError(f"{self.id}: claim {id!r} is already defined")
            self.claims.append(ClaimSpec(id, statement, fn, kind, falsifiers, tolerance_source, explanation))
            return fn
        return decorator

    def plot(self, name: str, caption: str = ""):
        """Decorator: register ``fn(results) -> matplotlib Figure`` as the figure ``name``."""
        def decorator(fn):
            if any(f.name == name for f in self.figures):
                raise ValueError(f"{self.id}: figure {name!r} is already defined")
            self.figures.append(FigureSpec(name, caption, fn))
            return fn
        return decorator

    def run_configs(self, scale: str) -> dict[str, dict]:
        """The named run configs at ``scale`` (each gets a default ``name``)."""
        if scale not in SCALES:
            raise ValueError(f"scale {scale!r} is not one of {', '.join(SCALES)}")
        configs = {}
        for key, cfg in self.configs(scale).items():
            cfg = dict(cfg)
            cfg.setdefault("name", re.sub(r"[^A-Za-z0-9_.\-]", "-", f"{self.paper}-{self.name}-{key}")[:80])
            configs[key] = cfg
        return configs


@dataclass
class Results:
    """What figure and claim functions receive: the experiment's runs (by config key) and scale.

    ``memo(name, fn)`` computes a derived quantity once per evaluation (shared by claims and
    figures that need the same expensive analysis).
    """

    experiment: Experiment
    scale: str
    runs: dict[str, Run]
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def __getitem__(self, key: str) -> Run:
        return self.runs[key]

    def memo(self, name: str, fn: Callable[[], Any]) -> Any:
        if name not in self._memo:
            self._memo[name] = fn()
        return self._memo[name]


class ExperimentRegistry(Registry[Experiment]):
    """The registry of experiments, with removal (for temporary, e.g. test-only, experiments)."""

    def remove(self, name: str) -> None:
        self._items.pop(name, None)


EXPERIMENTS = ExperimentRegistry("experiment")
PAPERS: Registry[Paper] = Registry("paper")
DISCOVERY_ERRORS: dict[str, str] = {}  # module name -> traceback, for modules that failed to import
_discovered = False
_MODULES: dict[str, str] = {}  # experiment id -> the module whose code called ``register``
_FROM_STUDY_FILES: set[str] = set()  # ids a study file registered (``load_study``)


def register_paper(id: str, title: str, reference: str = "") -> Paper:
    """Register a paper (id, title, reference line) whose experiments the report groups."""
    return PAPERS.register(id, Paper(id, title, reference))


def register(experiment: Experiment) -> Experiment:
    """Register an experiment (its id must be new)."""
    EXPERIMENTS.register(experiment.id, experiment)
    caller = inspect.currentframe().f_back
    _MODULES[experiment.id] = caller.f_globals.get("__name__", "") if caller is not None else ""
    return experiment


@contextlib.contextmanager
def registered(*experiments: Experiment) -> Iterator[tuple[Experiment, ...]]:
    """Register experiments for the duration of a ``with`` block."""
    for e in experiments:
        register(e)
    try:
        yield experiments
    finally:
        for e in experiments:
            EXPERIMENTS.remove(e.id)


def discover() -> None:
    """Import every installed study once (``twolayer.claims.studies``: the entry point group
    ``twolayer.studies``, the papers included); each registers its own experiments, and a module that
    fails to import is recorded in ``DISCOVERY_ERRORS``."""
    global _discovered
    if not _discovered:
        _discovered = True
        DISCOVERY_ERRORS.update(load_installed())


def portable(id: str) -> bool:
    """Whether a fresh process finds experiment ``id`` by ``discover`` or ``load_study``: a study file registered
    it, or a module of an installed study (``study_entry_points``) did. One registered by a script, a test or
    ``registered`` is known to this process only."""
    if id not in EXPERIMENTS:
        return False
    module = _MODULES.get(id, "")
    return id in _FROM_STUDY_FILES or any(module == root or module.startswith(root + ".") for root in _study_modules())


@functools.cache
def _study_modules() -> tuple[str, ...]:
    return tuple(ep.value.split(":")[0] for ep in study_entry_points())


def import_submodules(package: str) -> dict[str, str]:
    """Import the submodules of ``package`` whose names do not start with ``_``; returns the
    traceback of each one that failed to import, by module name."""
    pkg = importlib.import_module(package)
    errors = {}
    for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:
            errors[info.name] = traceback.format_exc(limit=6)
    return errors


_STUDY_FILES: dict[Path, list[str]] = {}  # a study file's resolved path -> the experiment ids it registered


def load_study(path: str | Path) -> list[str]:
    """Import a study file once per process (``studies.import_file``) and return the ids of the experiments
    it registered; ``StudyError`` when it cannot be imported or registers no experiment. Installed studies
    are discovered first: a file cannot take their ids."""
    resolved = Path(path).resolve()
    if resolved in _STUDY_FILES:
        return _STUDY_FILES[resolved]
    discover()
    before = set(EXPERIMENTS)
    try:
        import_file(path)
    except StudyError:
        for id in set(EXPERIMENTS) - before:  # leave nothing half-registered
            EXPERIMENTS.remove(id)
        raise
    ids = [id for id in EXPERIMENTS if id not in before]
    if not ids:
        raise StudyError([(str(path), "registers no experiment (call twolayer.claims.register(Experiment(...)))")])
    _STUDY_FILES[resolved] = ids
    _FROM_STUDY_FILES.update(ids)
    return ids


def experiments() -> list[Experiment]:
    """All registered experiments, papers in registration order."""
    discover()
    return [EXPERIMENTS.get(i) for i in EXPERIMENTS]


CATALOG_FIELDS = ("id", "title", "figure", "claims")


def catalog() -> list[dict]:
    """``{id, title, figure, claims}`` (claims: how many) of every registered experiment, in registry order.

    Listing needs only these, but discovering them imports every experiment module (and so JAX, SciPy,
    matplotlib): ``twolayer list`` would take seconds. So the catalog is kept in
    ``<TWOLAYER_CACHE or ~/.cache/twolayer>/experiments-<fingerprint>.json``, where the fingerprint hashes
    the twolayer version and the path, size and modification time of every source file of this package:
    any edit, addition or removal of an experiment module makes a new catalog. It is only written when
    every module imported (``DISCOVERY_ERRORS`` empty), and a cache that cannot be read or written is
    skipped, never an error."""
    path = _catalog_path()
    if path is not None and path.is_file():
        try:
            entries = json.loads(path.read_text())
            if isinstance(entries, list) and all(isinstance(e, dict) and set(e) == set(CATALOG_FIELDS) for e in entries):
                return entries
        except (OSError, ValueError):
            pass
    entries = [{"id": e.id, "title": e.title, "figure": e.figure, "claims": len(e.claims)} for e in experiments()]
    if path is not None and not DISCOVERY_ERRORS:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(entries))
            os.replace(tmp, path)
        except OSError:
            pass
    return entries


PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the package: every source file of twolayer


def source_fingerprint(root: Path = PACKAGE_ROOT) -> str | None:
    """sha256 of the twolayer version, the installed studies (``studies.fingerprint``) and the path, size and
    modification time of every source file under ``root`` (the package); None when a file cannot be read."""
    from twolayer.version import __version__

    digest = hashlib.sha256(f"{__version__};{fingerprint()}".encode())
    try:
        for source in sorted(root.rglob("*.py")):
            stat = source.stat()
            digest.update(f"{source.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    except OSError:
        return None
    return digest.hexdigest()


def cache_folder() -> Path:
    """Where the claims machinery keeps what it derived from the source: ``TWOLAYER_CACHE`` or ``~/.cache/twolayer``."""
    return Path(os.environ.get("TWOLAYER_CACHE") or Path.home() / ".cache" / "twolayer")


def _catalog_path() -> Path | None:
    digest = source_fingerprint()
    return None if digest is None else cache_folder() / f"experiments-{digest[:16]}.json"


def get(id: str) -> Experiment:
    """The registered experiment ``id`` (``PAPER/NAME``), after discovering the experiment modules."""
    discover()
    return EXPERIMENTS.get(id)


def known_targets() -> list[str]:
    """Every paper id and experiment id that ``select`` accepts."""
    exps = experiments()
    return list(dict.fromkeys([e.paper for e in exps])) + [e.id for e in exps]


def select(targets: Iterable[str] | None = None) -> list[Experiment]:
    """Experiments matching paper ids or experiment ids (all when ``targets`` is empty), in
    registry order; raises ``LookupError`` naming the known targets for an unknown one."""
    exps = experiments()
    targets = list(targets or [])
    if not targets:
        return exps
    unknown = [t for t in targets if t not in {e.id for e in exps} and t not in {e.paper for e in exps}]
    if unknown:
        raise LookupError(f"unknown target {', '.join(map(repr, unknown))}; known: {', '.join(known_targets()) or 'none'}")
    return [e for e in exps if e.id in targets or e.paper in targets]
