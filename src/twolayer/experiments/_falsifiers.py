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
claim about training. ``falsify(..., reads=set())`` records which parts of the runs the claim
function read; ``DYNAMICS`` (trajectory, final parameters, summary, ``seeded`` entries) are the parts a training run
produces, as opposed to its config, from which data and initializations are rebuilt.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from twolayer.api import SeedAxis
from twolayer.experiments._claims import Check
from twolayer.experiments._registry import ClaimSpec, Experiment, Results

SCALE = "quick"  # falsifiers are built from, and run at, the quick scale


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


DYNAMICS = ("trajectory", "final_params", "summary", "seeded")  # what training produced (not the config)


class _ReadRecorder:
    """A run that records the names of the attributes read from it into ``read``."""

    def __init__(self, run: Any, read: set[str]):
        self._run, self._read = run, read

    def __getattr__(self, name: str) -> Any:
        self._read.add(name)
        return getattr(self._run, name)


class FalsifierError(RuntimeError):
    """A falsifier whose input could not be built or run: it is no evidence either way."""


@dataclass(frozen=True)
class Synthetic:
    """Hand-built runs that violate the claim: ``build(quick configs) -> {key: run}``."""

    name: str
    build: Callable[[dict[str, dict]], Mapping[str, Any]]
    why: str = ""
    kind: ClassVar[str] = "synthetic"

    def runs(self, exp: Experiment, out: str | Path) -> dict[str, Any]:  # noqa: ARG002 (nothing is run)
        return dict(self.build(copy.deepcopy(exp.run_configs(SCALE))))


@dataclass(frozen=True)
class Counterfactual:
    """Small runs that break one assumption: ``change(quick configs) -> configs`` (keys kept or dropped)."""

    name: str
    change: Callable[[dict[str, dict]], dict[str, dict]]
    why: str = ""
    kind: ClassVar[str] = "counterfactual"

    def configs(self, exp: Experiment) -> dict[str, dict]:
        return self.change(copy.deepcopy(exp.run_configs(SCALE)))

    def runs(self, exp: Experiment, out: str | Path) -> dict[str, Any]:
        """Run (or fetch from the store in ``out``) every changed config; each must complete."""
        import twolayer
        from twolayer.api import RunError
        from twolayer.config import ConfigError

        runs = {}
        for key, cfg in self.configs(exp).items():
            try:
                run = twolayer.run(cfg, out=out)
            except (ConfigError, RunError) as e:
                raise FalsifierError(f"{exp.id} counterfactual {self.name!r}: config {key!r}: {e}") from e
            if run.status != "completed":
                raise FalsifierError(f"{exp.id} counterfactual {self.name!r}: run {key!r} ended {run.status!r}: "
                                     f"{run.summary.get('message', '')}")
            runs[key] = run
        return runs


Falsifier = Synthetic | Counterfactual


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


def refuted(exp: Experiment, check: Check) -> bool:
    """Whether a falsifier's check came out the way it must: failed for an ordinary claim, passed
    (the paper's own setting) for a claim of an assumption-broken experiment."""
    return bool(check.passed) if exp.assumption_broken else not check.passed
