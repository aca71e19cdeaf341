"""benchmarks/gpu_check.sh: its CPU mode runs end to end at tiny size (the smoke run of the GPU check), and its
comparison fails a device result that differs beyond a method's tolerance."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_cpu_mode_runs_every_benchmark_and_writes_one_json(tmp_path):
    out = tmp_path / "gpu_check.json"
    proc = subprocess.run(["bash", str(BENCH / "gpu_check.sh"), "--cpu", "--tiny", "--out", str(out),
                           "--python", sys.executable], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["mode"] == "cpu" and result["passed"] and result["size"] == "tiny"
    names = [c["name"] for c in result["checks"]]
    for part in ("step.toy", "step.mnist_size", "seeds.1", "seeds.4", "exact_flow: event times"):
        assert any(name.startswith(part) for name in names), part
    assert result["device"]["platform"] == "cpu" and result["reference"]["platform"] == "cpu"
    assert result["device"]["exact_flow"]["events"] > 0
    assert set(result["speed_ratio_cpu_seconds_over_device_seconds"]) >= {"step.toy", "seeds.4", "exact_flow.warm"}


def test_usage_error_exits_2(tmp_path):
    proc = subprocess.run(["bash", str(BENCH / "gpu_check.sh"), "--bogus"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown argument" in proc.stderr


def _fake_measurement(prefix: Path, shift: float) -> None:
    """A measurement of the configs' shapes (one toy step case, one seed run, the exact flow)."""
    arrays = {}
    for group in ("step.toy", "seeds.1"):
        arrays.update({f"{group}.W": np.ones((3, 2)), f"{group}.v": np.ones(3), f"{group}.loss": np.array([[1.0], [0.5]])})
    arrays.update({"exact_flow.W": np.ones((1, 3, 2)) * (1 + shift), "exact_flow.v": np.ones((1, 3)),
                   "exact_flow.loss": np.array([1.0, 0.5]), "exact_flow.event_t": np.array([0.1, 0.2]),
                   "exact_flow.event_seed": np.array([0, 0]), "exact_flow.event_kind": np.array(["cross", "cross"]),
                   "exact_flow.t1": np.array([0.3])})
    np.savez(prefix.with_suffix(".npz"), **arrays)
    timing = {"seconds": 1.0}
    prefix.with_suffix(".json").write_text(json.dumps({
        "platform": "cpu", "size": "tiny", "step": {"toy": timing, "part_seconds": 1.0},
        "seeds": {"1": timing, "part_seconds": 1.0}, "exact_flow": {"warm_seconds": 1.0, "cold_seconds": 2.0}}))


def test_compare_fails_beyond_the_methods_tolerance(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_gpu_check", BENCH / "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    _fake_measurement(tmp_path / "cpu", 0.0)
    _fake_measurement(tmp_path / "near", 0.1 * gpu_check.TOLERANCES["flow_exact_rel"])
    _fake_measurement(tmp_path / "far", 10 * gpu_check.TOLERANCES["flow_exact_rel"])
    assert gpu_check.compare(tmp_path / "cpu", tmp_path / "near", tmp_path / "near-out.json", "cpu", "") == 0
    assert gpu_check.compare(tmp_path / "cpu", tmp_path / "far", tmp_path / "far-out.json", "cpu", "") == 1
    failed = [c["name"] for c in json.loads((tmp_path / "far-out.json").read_text())["checks"] if not c["passed"]]
    assert failed == ["exact_flow: final W"]
