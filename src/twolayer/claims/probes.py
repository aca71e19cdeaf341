"""Dynamics probes: does a passed prediction depend on what training did?

The same claim function is applied to its experiment's stored runs with the dynamics taken out, in three
worlds built from the runs themselves (nothing is run):

- ``frozen``: every recorded observable keeps its initial value at every time, and the final parameters are
  the initial ones (re-sampled from the config, as the run did);
- ``reversed``: the recorded path runs backwards in time (it ends where it started), final parameters as in
  ``frozen``;
- ``scrambled``: the recorded values are shuffled in time (a fixed permutation), the final parameters kept.

The summary's final values are the probe trajectory's last values and its events are detected anew on it.
A prediction that still passes in all three worlds does not depend on the trained state: the ledger lists it
as "independent of the dynamics" (issue 25: such a claim must read the trained state, or be of another kind).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

import numpy as np

from twolayer.claims.checks import PREDICTIVE_KINDS
from twolayer.claims.falsifiers import SyntheticRun
from twolayer.claims.registry import Experiment, Results

TIME_KEYS = ("t", "step")  # the time axis itself: never transformed


def _frozen(a: np.ndarray, axis: int) -> np.ndarray:
    first = np.take(a, [0], axis=axis)
    return np.repeat(first, a.shape[axis], axis=axis)


def _reversed(a: np.ndarray, axis: int) -> np.ndarray:
    return np.flip(a, axis=axis)


def _scrambled(a: np.ndarray, axis: int) -> np.ndarray:
    perm = np.random.default_rng(0).permutation(a.shape[axis])
    return np.take(a, perm, axis=axis)


# name -> (transform of a trajectory array along its time axis, whether the final parameters are the initial ones)
PROBES: dict[str, tuple[Callable[[np.ndarray, int], np.ndarray], bool]] = {
    "frozen": (_frozen, True),
    "reversed": (_reversed, True),
    "scrambled": (_scrambled, False),
}


def time_axis(a: np.ndarray, steps: int, batched: bool) -> int | None:
    """The time axis of a trajectory array ([S, T, ...] for ``seeds:`` runs, [T, ...] otherwise), None when the
    array has no axis of the trajectory's length there."""
    axis = 1 if batched else 0
    return axis if a.ndim > axis and a.shape[axis] == steps else None


class ProbeRun(SyntheticRun):
    """A stored run seen in a probe world: its trajectory transformed in time, its final parameters the initial
    ones (``initial``) or the trained ones, its summary's final values and events recomputed from the probe
    trajectory. Everything is computed on first access."""

    def __init__(self, run, transform: Callable[[np.ndarray, int], np.ndarray], initial: bool):
        super().__init__(dict(run.config), name=f"probe-{run.path.name}")
        self.source, self.transform, self.initial = run, transform, initial
        del self.trajectory, self.final_params, self.summary  # set by SyntheticRun; computed lazily here

    @cached_property
    def trajectory(self) -> dict[str, np.ndarray]:
        original = self.source.trajectory
        steps = len(np.asarray(original["t"])) if "t" in original else 0
        out = {}
        for name, value in original.items():
            a = np.asarray(value)
            axis = None if name in TIME_KEYS else time_axis(a, steps, self.batched)
            out[name] = a if axis is None else self.transform(a, axis)
        return out

    @cached_property
    def final_params(self) -> dict[str, np.ndarray]:
        if not self.initial:
            return dict(self.source.final_params)
        from twolayer.claims.runs import initial_params

        params = initial_params(self.source)
        return params if self.batched else {k: v[0] for k, v in params.items()}

    @cached_property
    def summary(self) -> dict:
        from twolayer.claims.runs import run_config
        from twolayer.events import detect_events

        summary = dict(self.source.summary)
        trajectory, batched = self.trajectory, self.batched
        final = {}
        for name in (summary.get("final") or {}):
            if name in trajectory and name not in TIME_KEYS:
                last = np.asarray(trajectory[name])
                last = last[:, -1] if batched else last[-1]
                final[name] = last.tolist()
        summary["final"] = final
        try:
            summary["events"] = detect_events(trajectory, run_config(self.source))
        except Exception:  # noqa: BLE001 (no events rather than the trained run's)
            summary["events"] = {}
        summary.pop("event_uncertainty", None)
        return summary


def probe_results(results: Results, probe: str) -> Results:
    """``results`` with every run seen in the probe world ``probe`` (one of ``PROBES``)."""
    transform, initial = PROBES[probe]
    return Results(results.experiment, results.scale,
                   {key: ProbeRun(run, transform, initial) for key, run in results.runs.items()})


def quiet_check(check: Callable[[Results], Any], world: Results) -> Any:
    """``check(world)`` without numpy's floating-point warnings. A probe world is degenerate by construction (a
    frozen path has no change to take the log of, a reversed one never reaches its event), so a claim function
    meets 0 / 0 and log 0 there: the NaN or inf it computes fails the check, which is the probe's answer, and the
    warnings would only reach the terminal of ``reproduce``."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "Mean of empty slice" and the like
        return check(world)


def probe_claims(exp: Experiment, results: Results, passed: Mapping[str, bool]) -> dict[str, dict[str, Any]]:
    """``{claim id: {probe: passed}}`` for each passed prediction of ``exp`` (``passed``: claim id -> passed):
    the same claim function on ``results`` seen in each probe world. A claim function that raises there has not
    passed."""
    worlds = {}
    out: dict[str, dict[str, Any]] = {}
    for spec in exp.claims:
        cid = f"{exp.id}:{spec.id}"
        if spec.kind not in PREDICTIVE_KINDS or not passed.get(cid):
            continue
        outcome = {}
        for probe in PROBES:
            world = worlds.setdefault(probe, probe_results(results, probe))
            try:
                outcome[probe] = bool(quiet_check(spec.check, world).passed)
            except Exception:  # noqa: BLE001 (it reads something the probe world lacks: it depends on it)
                outcome[probe] = False
        out[cid] = outcome
    return out


def independent_of_dynamics(probes: Mapping[str, bool]) -> bool:
    """True when a prediction passed in every probe world."""
    return bool(probes) and all(probes.get(p) for p in PROBES)


__all__ = ["PROBES", "ProbeRun", "independent_of_dynamics", "probe_claims", "probe_results", "time_axis"]
