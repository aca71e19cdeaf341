"""benchmarks/end_to_end.py reads reproduce's verdict from the CLI's output, whatever its tables print above it."""

from __future__ import annotations

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
