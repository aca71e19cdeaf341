"""benchmarks/gpu_check.sh: its CPU mode runs end to end at tiny size (the smoke run of the GPU check), and its
comparison fails a device result that differs beyond a method's tolerance. The mode for a lent machine with no
network (--preinstalled: the interpreter's own JAX, the project from src/, carried wheels installed with
pip --no-index --target, the JSON file under $OUT) is checked through --preflight-only, which stops before
measuring, and the time limit through a limit already spent."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_cpu_mode_runs_every_benchmark_and_writes_one_json(tmp_path):
    out = tmp_path / "gpu_check.json"
    proc = subprocess.run(["bash", str(BENCH / "gpu_check.sh"), "--cpu", "--tiny", "--out", str(out),
                           "--python", sys.executable], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["mode"] == "cpu" and result["passed"] and result["size"] == "tiny"
    names = [c["name"] for c in result["checks"]]
    for part in ("step.toy", "step.mnist_size", "seeds.1", "seeds.4", "exact_flow: event times", "ode: Q"):
        assert any(name.startswith(part) for name in names), part
    assert result["device"]["platform"] == "cpu" and result["reference"]["platform"] == "cpu"
    assert result["device"]["exact_flow"]["events"] > 0
    assert result["device"]["ode"]["steps"] > 0 and result["device"]["ode"]["activation"] == "relu"
    assert set(result["speed_ratio_cpu_seconds_over_device_seconds"]) >= {"step.toy", "seeds.4", "exact_flow.warm",
                                                                         "ode.warm"}
    assert result["environment"]["missing"] == {} and result["environment"]["versions"]["jax"]


def test_usage_error_exits_2(tmp_path):
    proc = subprocess.run(["bash", str(BENCH / "gpu_check.sh"), "--bogus"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown argument" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--time-limit", "ten"], "whole number of seconds"),
    (["--time-limit", "0"], "whole number of seconds"),
    (["--time-limit"], "needs seconds"),
    (["--wheels", "."], "goes with --preinstalled"),
    (["--preinstalled", "--wheels", "/no/such/folder"], "is not a folder"),
])
def test_usage_errors_of_the_preinstalled_mode_exit_2(args, message):
    proc = subprocess.run(["bash", str(BENCH / "gpu_check.sh"), *args], capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def _probe_wheel(folder: Path) -> None:
    """A pure-Python wheel, gpucheck_probe 0.1, made here (pip installs it with --no-index)."""
    folder.mkdir()
    info = "gpucheck_probe-0.1.dist-info"
    with zipfile.ZipFile(folder / "gpucheck_probe-0.1-py3-none-any.whl", "w") as whl:
        whl.writestr("gpucheck_probe.py", "VALUE = 1\n")
        whl.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: gpucheck_probe\nVersion: 0.1\n")
        whl.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{info}/RECORD", f"gpucheck_probe.py,,\n{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")


def test_preinstalled_mode_installs_carried_wheels_runs_from_src_and_writes_under_OUT(tmp_path):
    _probe_wheel(tmp_path / "whl")
    (tmp_path / "out").mkdir()
    env = {**os.environ, "OUT": str(tmp_path / "out")}
    proc = subprocess.run(["bash", str(BENCH / "gpu_check.sh"), "--preinstalled", "--cpu", "--preflight-only",
                           "--wheels", str(tmp_path / "whl"), "--python", sys.executable],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert result["preflight_only"] and result["passed"] and "1 wheels from" in result["install"]
    environment = result["environment"]
    assert environment["carried"] == {"gpucheck_probe": "0.1"}  # found through PYTHONPATH, installed by --target
    assert environment["missing"] == {}
    src = BENCH.parent / "src"
    assert Path(environment["modules"]["twolayer"]).is_relative_to(src)
    assert environment["pythonpath"].split(os.pathsep)[0] == str(src)
    assert environment["versions"]["jax"] and environment["python"]


def test_a_spent_time_limit_writes_the_reason_and_exits_3(tmp_path):
    out = tmp_path / "gpu_check.json"
    proc = subprocess.run(["bash", str(BENCH / "gpu_check.sh"), "--cpu", "--tiny", "--time-limit", "1", "--out",
                           str(out), "--python", sys.executable], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert not result["passed"] and "ran past --time-limit 1 s" in result["error"]
    assert result["environment"]["versions"]["jax"]


def test_environment_names_a_missing_import(tmp_path, monkeypatch):
    gpu_check = _load()
    monkeypatch.setattr(gpu_check, "MODULES", ("numpy", "gpucheck_no_such_module"))
    assert gpu_check.environment(tmp_path / "env.json") == 1
    entry = json.loads((tmp_path / "env.json").read_text())
    assert list(entry["missing"]) == ["gpucheck_no_such_module"] and "numpy" in entry["modules"]


def _fake_measurement(prefix: Path, shift: float, ode_shift: float = 0.0) -> None:
    """A measurement of the configs' shapes (one toy step case, one seed run, the exact flow, the ODE)."""
    arrays = {}
    for group in ("step.toy", "seeds.1"):
        arrays.update({f"{group}.W": np.ones((3, 2)), f"{group}.v": np.ones(3), f"{group}.loss": np.array([[1.0], [0.5]])})
    arrays.update({"exact_flow.W": np.ones((1, 3, 2)) * (1 + shift), "exact_flow.v": np.ones((1, 3)),
                   "exact_flow.loss": np.array([1.0, 0.5]), "exact_flow.event_t": np.array([0.1, 0.2]),
                   "exact_flow.event_seed": np.array([0, 0]), "exact_flow.event_kind": np.array(["cross", "cross"]),
                   "exact_flow.t1": np.array([0.3]),
                   "ode.Q": np.full((3, 2, 2), 0.5) + ode_shift, "ode.R": np.full((3, 2, 2), 0.1),
                   "ode.v": np.ones((3, 2)), "ode.eps_g": np.array([0.3, 0.2, 0.1])})
    np.savez(prefix.with_suffix(".npz"), **arrays)
    timing = {"seconds": 1.0}
    prefix.with_suffix(".json").write_text(json.dumps({
        "platform": "cpu", "size": "tiny", "step": {"toy": timing, "part_seconds": 1.0},
        "seeds": {"1": timing, "part_seconds": 1.0}, "exact_flow": {"warm_seconds": 1.0, "cold_seconds": 2.0},
        "ode": timing}))


def _load():
    spec = importlib.util.spec_from_file_location("bench_gpu_check", BENCH / "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    return gpu_check


def test_compare_fails_beyond_the_methods_tolerance(tmp_path):
    gpu_check = _load()
    _fake_measurement(tmp_path / "cpu", 0.0)
    _fake_measurement(tmp_path / "near", 0.1 * gpu_check.TOLERANCES["flow_exact_rel"])
    _fake_measurement(tmp_path / "far", 10 * gpu_check.TOLERANCES["flow_exact_rel"])
    assert gpu_check.compare(tmp_path / "cpu", tmp_path / "near", tmp_path / "near-out.json", "cpu", "") == 0
    assert gpu_check.compare(tmp_path / "cpu", tmp_path / "far", tmp_path / "far-out.json", "cpu", "") == 1
    failed = [c["name"] for c in json.loads((tmp_path / "far-out.json").read_text())["checks"] if not c["passed"]]
    assert failed == ["exact_flow: final W"]


def test_compare_fails_an_ode_beyond_its_tolerance(tmp_path):
    gpu_check = _load()
    tol = gpu_check.TOLERANCES["ode_abs"]
    _fake_measurement(tmp_path / "cpu", 0.0)
    _fake_measurement(tmp_path / "near", 0.0, ode_shift=0.5 * tol)
    _fake_measurement(tmp_path / "far", 0.0, ode_shift=3 * tol)
    assert gpu_check.compare(tmp_path / "cpu", tmp_path / "near", tmp_path / "near-out.json", "cpu", "") == 0
    assert gpu_check.compare(tmp_path / "cpu", tmp_path / "far", tmp_path / "far-out.json", "cpu", "") == 1
    failed = [c["name"] for c in json.loads((tmp_path / "far-out.json").read_text())["checks"] if not c["passed"]]
    assert failed == ["ode: Q at every save time"]
