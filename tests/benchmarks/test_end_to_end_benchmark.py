"""benchmarks/end_to_end.py reads reproduce's verdict from the CLI's output, whatever its tables print above it, and
splits the time by phase from the reproduction's summary.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from twolayer.claims.reproduce import ExperimentResult, Reproduction

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import end_to_end as bench  # noqa: E402

TABLE = """\
┃ experiment      ┃ claims passed ┃ runs (cached) ┃ wall s ┃
│ sweeps/fit-time │ 1 / 1         │ 5 (0)         │ 2.8    │
"""


def verdict(*as_expected: bool) -> str:
    claims = [SimpleNamespace(id=f"x/c{i}", as_expected=ok, passed=ok) for i, ok in enumerate(as_expected)]
    experiment = ExperimentResult(id="x/e", title="", figure="", scale="quick", runs=[], claims=claims)
    return Reproduction(out=Path("."), scale="quick", experiments=[experiment]).verdict


@pytest.mark.parametrize("as_expected", [(True, True), (True, False), ()])
def test_verdict_line_is_the_reproduction_verdict(as_expected):
    line = verdict(*as_expected)
    stdout = TABLE + line + "\nin 5.2 s (runs and claims 4.9 s, figures and report 0.4 s)\nreport: out/index.html\n"
    assert bench.verdict_line(stdout) == line


def test_verdict_line_is_empty_without_a_verdict():
    assert bench.verdict_line(TABLE) == ""


def test_phase_split_sums_the_experiments_and_keeps_the_report(tmp_path):
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"report_seconds": 4.0, "experiments": [
        {"run_seconds": 10.0, "claim_seconds": 2.0, "figure_seconds": 1.0},
        {"run_seconds": 5.5, "claim_seconds": None, "figure_seconds": 0.5}]}))
    assert bench.phase_split(summary) == {"runs": 15.5, "claims": 2.0, "figures": 1.5, "report": 4.0}
    assert bench.phase_split(tmp_path / "missing.json") == {}
