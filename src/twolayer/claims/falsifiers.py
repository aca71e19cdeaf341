"""Falsifiers: the inputs on which a claim must fail.

A green claim is evidence only if it could have been red. Every registered claim declares at
least one falsifier (``Experiment.claim(..., falsifiers=[...])``), and the claim conformance test
(``tests/test_claim_conformance.py``) applies the SAME claim function, unchanged, to each one:

- ``Synthetic(name, build, why)``: ``build(configs) -> {key: SyntheticRun}`` hand-makes the runs
  of a ``Results`` (trajectories, final parameters, summaries) that violates the statement. It
  shows that the check can fail at all. ``configs`` are the experiment's quick-scale configs, so
  a builder can copy their settings (learning rates, seeds, sweep points).
- ``Counterfactual(name, change, why)``: ``change(configs) -> configs`` maps the experiment's
  quick-scale configs to small runs that break one assumption or ingredient the claim rests on
  (a large initialization, non-separable or non-symmetric data, another loss, a non-orthogonal
  target, ...), where the theory says the claim no longer holds. They run through the ordinary
  run store (a temporary folder in the test). It shows that the check tells the theory's
  dynamics from other dynamics.

For the claims of an assumption-broken experiment (``Experiment.breaks``) the roles swap: the
claim is expected to fail on the experiment's own runs, and its falsifier is the paper's own
setting, on which the claim must pass (``refuted``).

A check that looks only at the data, the loss function or the initialization sampler is not a
claim about training. ``falsify(..., reads=set())`` (in ``_reproduce``, beside the claims' other
evaluator) records which parts of the runs the claim function read; ``DYNAMICS`` (trajectory, final parameters, summary, ``seeded`` entries) are the parts a training run
produces, as opposed to its config, from which data and initializations are rebuilt.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from twolayer.errors import UnrecordedEventWarning
from twolayer.stored import SeedAxis

SCALE = "quick"  # falsifiers are built from, and run at, the quick scale


class HasRunConfigs(Protocol):
    """What a falsifier reads of its experiment (a ``twolayer.claims.Experiment``): its id and its
    run configs at a scale."""

    id: str

    def run_configs(self, scale: str) -> dict[str, dict]: ...


class SyntheticRun(SeedAxis):
    """An in-memory run with the interface of ``twolayer.api.Run`` (``config``, ``trajectory``,
    ``final_params``, ``summary``, ``status``, ``path``, ``cached``), for synthetic falsifiers and
    tests. ``path.name`` is the run id (``name``); ``summary`` gets ``status: completed`` unless given."""

    def __init__(self, config: dict | None = None, trajectory: Mapping[str, Any] | None = None,
                 final_params: Mapping[str, Any] | None = None, summary: Mapping[str, Any] | None = None,
                 name: str = "synthetic"):
        self.config = dict(config or {})
        self.trajectory = dict(trajectory or {})
        self.final_params = dict(final_params or {})
        self.summary = {"run_id": name, "status": "completed", **dict(summary or {})}
        self.path = Path(name)
        self.cached = False

    @property
    def status(self) -> str:
        return self.summary.get("status", "unknown")

    def __repr__(self) -> str:
        return f"SyntheticRun({self.path.name!r})"


class FalsifierError(RuntimeError):
    """A falsifier whose input could not be built or run: it is no evidence either way."""


@dataclass(frozen=True)
class Synthetic:
    """Hand-built runs that violate the claim: ``build(quick configs) -> {key: run}``."""

    name: str
    build: Callable[[dict[str, dict]], Mapping[str, Any]]
    why: str = ""
    kind: ClassVar[str] = "synthetic"

    def runs(self, exp: HasRunConfigs, out: str | Path) -> dict[str, Any]:  # noqa: ARG002 (nothing is run)
        return dict(self.build(copy.deepcopy(exp.run_configs(SCALE))))


@dataclass(frozen=True)
class Counterfactual:
    """Small runs that break one assumption: ``change(quick configs) -> configs`` (keys kept or dropped)."""

    name: str
    change: Callable[[dict[str, dict]], dict[str, dict]]
    why: str = ""
    kind: ClassVar[str] = "counterfactual"

    def configs(self, exp: HasRunConfigs) -> dict[str, dict]:
        return self.change(copy.deepcopy(exp.run_configs(SCALE)))

    def runs(self, exp: HasRunConfigs, out: str | Path) -> dict[str, Any]:
        """Run (or fetch from the store in ``out``) every changed config; each must complete."""
        from twolayer.api import RunError, run
        from twolayer.config import ConfigError

        runs = {}
        for key, cfg in self.configs(exp).items():
            try:
                with warnings.catch_warnings():  # the experiment records what its claims read
                    warnings.simplefilter("ignore", UnrecordedEventWarning)
                    stored = run(cfg, out=out)
            except (ConfigError, RunError) as e:
                raise FalsifierError(f"{exp.id} counterfactual {self.name!r}: config {key!r}: {e}") from e
            if stored.status != "completed":
                raise FalsifierError(f"{exp.id} counterfactual {self.name!r}: run {key!r} ended {stored.status!r}: "
                                     f"{stored.summary.get('message', '')}")
            runs[key] = stored
        return runs


@dataclass(frozen=True)
class Premise(Counterfactual):
    """A premise of the statement (theorem, lemma, corollary) a claim comes from, ``source`` quoting it
    (``"Thm 1: mu > 0"``), and ``change``: the same runs with that premise removed and nothing else
    changed. Run like a counterfactual: the claim must fail there, else it holds without the premise
    and is evidence for its conclusion, not for the theorem. A premise the claim was measured to hold without is
    declared with ``holds=True``: the conformance test then checks that it still passes there, and the ledger
    lists the claim as "holds without a premise"."""

    source: str = ""
    holds: bool = False  # declared from a measurement: the claim still passes without this premise (the conformance
    # test checks it), so it is evidence for the conclusion, not for the theorem ("holds without a premise")
    kind: ClassVar[str] = "premise"


def must_refute(falsifier) -> bool:
    """Whether the claim must come out the other way on ``falsifier``: every falsifier but a ``Premise`` declared
    with ``holds=True``, on which it must still pass."""
    return not getattr(falsifier, "holds", False)


def falsifier_record(falsifier) -> dict:
    """A falsifier as ``claims.json`` lists it: ``{name, kind}``, and ``holds: true`` for a premise the claim is
    declared to hold without."""
    record = {"name": falsifier.name, "kind": falsifier.kind}
    if not must_refute(falsifier):
        record["holds"] = True
    return record


Falsifier = Synthetic | Counterfactual
