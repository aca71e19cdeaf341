"""The ODE-speed part of benchmarks/online_sgd.py runs and reports both vector fields (a small case)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import online_sgd as bench  # noqa: E402


def test_ode_speed_reports_both_fields():
    """The three fields the ratios read (for erf every field but "blocks" is the closed-form path of "distinct", so
    the smoke run leaves "orthant" and "sets" out)."""
    e = bench.time_ode_speed("erf", 2, 1, 1.0, None, fields=("distinct", "interpolation", "blocks"))
    for key in ("distinct_eval_ms", "blocks_eval_ms", "distinct_to_t1_seconds", "blocks_to_t1_seconds"):
        assert key in e and all(x > 0 for x in (e[key] if isinstance(e[key], list) else [e[key]])), key
    assert e["eval_speedup"] > 0 and e["integrate_speedup"] > 0
    assert "sets_eval_ms" not in e and "orthant_eval_ms" not in e


def test_time_to_horizon_compares_the_solvers():
    """``--horizon`` with two solvers (erf K = M = 2 to t = 5): each solver's seconds and steps, and the second's
    speed-up and differences against the first, which are small where both are right (rtol 1e-6: 1e-4 in Q)."""
    (e,) = bench.time_to_horizon([("erf", 2)], 5.0, set(), ("tsit5", "ros34pw2"), 1e-6)
    assert set(e["solvers"]) == {"tsit5", "ros34pw2"}
    assert all(r["seconds"] > 0 and r["steps"] > 0 for r in e["solvers"].values())
    second = e["solvers"]["ros34pw2"]
    assert second["against"] == "tsit5" and second["speedup"] > 0
    assert second["max_abs_Q_difference"] < 1e-4 and second["max_rel_eps_g_difference"] < 1e-4
