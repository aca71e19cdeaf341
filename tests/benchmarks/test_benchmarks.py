"""The benchmark helpers: results.json keeps other benchmarks' entries, run_all lists every script."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import twolayer  # noqa: F401  (float64)


BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_benchmark_results_keep_other_keys(tmp_path, monkeypatch):
    common = _load_bench("_common")
    target = tmp_path / "results.json"
    target.write_text(json.dumps({"step_speed": {"x": 1}}))
    monkeypatch.setattr(common, "RESULTS", target)
    stats = common.summary([3.0, 1.0, 2.0])
    assert stats["median_seconds"] == 2.0 and stats["best_seconds"] == 1.0
    common.write_result("seed_batching", {"ratio": 2.5}, started=0.0, load_start=[0.1, 0.2, 0.3], argv=["--quick"])
    out = json.loads(target.read_text())
    assert out["step_speed"] == {"x": 1}
    assert out["seed_batching"]["ratio"] == 2.5
    assert out["seed_batching"]["machine"]["load_average_start"] == [0.1, 0.2, 0.3]


def test_run_all_lists_every_benchmark_script():
    run_all = _load_bench("run_all")
    for command, _ in run_all.SUITE.values():
        script = command.split()[0]  # the script and its arguments
        assert (BENCH / script).is_file(), script


def _load_bench(name):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))
