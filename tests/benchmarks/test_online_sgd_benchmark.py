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
