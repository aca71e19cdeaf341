"""The committed paper-scale references (``benchmarks/reference/PAPER-paper/``) are current: each is one run
of today's experiments, so the config hash of every run it lists is the one its experiment makes now at
that scale (issue 25: a reference merged from two commits, or left from an older config, fails here).
``make paper PAPER=...`` writes a fresh one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twolayer.claims import get
from twolayer.config import load_config

REFERENCES = sorted((Path(__file__).resolve().parents[1] / "benchmarks" / "reference").glob("*-paper/summary.json"))


@pytest.mark.parametrize("path", REFERENCES, ids=[p.parent.name for p in REFERENCES])
def test_a_reference_lists_the_runs_its_experiments_make_today(path):
    manifest = json.loads(path.read_text())
    stale = []
    for entry in manifest["experiments"]:
        configs = get(entry["id"]).run_configs(manifest["scale"])
        assert {r["key"] for r in entry["runs"]} == set(configs), f"{entry['id']}: the runs differ"
        for record in entry["runs"]:
            cfg = load_config(configs[record["key"]])
            digest = cfg.config_hash()
            if record["run_id"] != f"{cfg.name}-{digest[:8]}" or record.get("config_hash", digest) != digest:
                stale.append(f"{entry['id']} {record['key']}: {record['run_id']} (now {digest[:8]})")
    assert not stale, (f"{path.parent.name} is stale (`make paper PAPER={path.parent.name.removesuffix('-paper')}` "
                       f"writes a fresh one):\n" + "\n".join(stale))


def test_there_is_a_reference_per_paper():
    assert {p.parent.name for p in REFERENCES} >= {"min2024-paper", "lyu2021-paper", "multiindex2026-paper"}
