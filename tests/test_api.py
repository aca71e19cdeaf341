"""Every way a run ends leaves a final status: failures outside the simulation loop, a full disk at
the final write (resumable), Ctrl-C (with the message), nonsense that must end ``diverged``; run
files get the user's umask."""

from __future__ import annotations

import errno
import functools
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

import twolayer
import twolayer.api
import twolayer.fileio
from conftest import base_config
from twolayer.api import RunError
from twolayer.cli import main
from twolayer.store import RunStore

CFG = base_config(seeds=2, observe={"points": 8, "metrics": ["loss", "v"]})


def only_run_dir(out) -> Path:
    (run_dir,) = [d for d in Path(out).iterdir() if d.is_dir()]
    return run_dir


def write_config(tmp_path, cfg) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.parametrize("stage", ["trajectory", "stop_report", "events", "write_results", "final_summary"])
def test_errors_after_the_loop_leave_status_failed(out, monkeypatch, stage):
    from twolayer.train import Simulation

    def boom(*args, **kwargs):
        raise RuntimeError(f"injected failure in {stage}")

    if stage == "trajectory":
        monkeypatch.setattr(Simulation, "trajectory", boom)
    elif stage == "stop_report":
        monkeypatch.setattr(Simulation, "stop_report", boom)
    elif stage == "events":
        monkeypatch.setattr(twolayer.api, "detect_events", boom)
    elif stage == "write_results":
        monkeypatch.setattr(RunStore, "write_results", staticmethod(boom))
    else:
        real = RunStore.write_summary

        def second_fails(self, run_dir, summary):
            if summary["status"] != "running" and "injected" not in summary.get("message", ""):
                boom()
            return real(self, run_dir, summary)

        monkeypatch.setattr(RunStore, "write_summary", second_fails)
    with pytest.raises(RunError, match=f"injected failure in {stage}"):
        twolayer.run(CFG, out=out)
    run_dir = only_run_dir(out)
    summary = RunStore.read_summary(run_dir)
    assert summary["status"] == "failed" and f"injected failure in {stage}" in summary["message"]
    assert [r["status"] for r in RunStore(out).list()] == ["failed"]
    monkeypatch.undo()
    assert twolayer.run(CFG, out=out).status == "completed"  # and it can be run again


def disk_full_at(name: str, monkeypatch) -> None:
    real = twolayer.fileio.write_bytes_atomic

    def write(path, data):
        if Path(path).name == name:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, data)

    monkeypatch.setattr(twolayer.fileio, "write_bytes_atomic", write)


@pytest.mark.parametrize("name", ["final.npz", "trajectory.npz"])
def test_full_disk_at_the_final_write_keeps_the_checkpoint_and_resumes(tmp_path, monkeypatch, capsys, name):
    reference = twolayer.run(CFG, out=tmp_path / "ref")
    path = write_config(tmp_path, CFG)
    out = tmp_path / "o"
    disk_full_at(name, monkeypatch)
    assert main(["run", str(path), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    run_dir = only_run_dir(out)
    assert "no space left on device" in err and str(run_dir / name) in err and "Traceback" not in err
    assert (run_dir / "checkpoint.npz").is_file()
    summary = RunStore.read_summary(run_dir)
    assert summary["status"] == "failed" and "no space left on device" in summary["message"]
    monkeypatch.undo()
    assert main(["run", str(path), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "resumed from point" in captured.err and "(cached)" not in captured.out
    resumed = twolayer.Run(run_dir)
    assert resumed.status == "completed" and not (run_dir / "checkpoint.npz").exists()
    for k, v in reference.trajectory.items():
        np.testing.assert_array_equal(resumed.trajectory[k], v)
    for k, v in reference.final_params.items():
        np.testing.assert_array_equal(resumed.final_params[k], v)


def test_full_disk_at_a_checkpoint_fails_cleanly_and_resumes(tmp_path, monkeypatch):
    reference = twolayer.run(CFG, out=tmp_path / "ref")
    real = twolayer.fileio.write_bytes_atomic
    writes = {"n": 0}

    def write(path, data):
        if Path(path).name == "checkpoint.npz":
            writes["n"] += 1
            if writes["n"] >= 4:  # the disk fills up after three checkpoints
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, data)

    monkeypatch.setattr(twolayer.fileio, "write_bytes_atomic", write)
    with pytest.raises(RunError, match="no space left on device"):
        twolayer.run(CFG, out=tmp_path / "o", checkpoint_seconds=0)
    run_dir = only_run_dir(tmp_path / "o")
    summary = RunStore.read_summary(run_dir)
    assert summary["status"] == "failed" and "checkpoint at point 3" in summary["message"]
    monkeypatch.undo()
    notes = []
    resumed = twolayer.run(CFG, out=tmp_path / "o", notify=notes.append)
    assert "resumed from point 3" in notes[0]
    for k, v in reference.trajectory.items():
        np.testing.assert_array_equal(resumed.trajectory[k], v)


def test_ctrl_c_says_where_it_stopped_and_how_to_resume(tmp_path, monkeypatch, capsys):
    path = write_config(tmp_path, CFG)

    def stop(state, done, total):
        if done == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(twolayer.api, "run", functools.partial(twolayer.api.run, _on_observation=stop, checkpoint_seconds=0))
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 130
    err = capsys.readouterr().err
    assert "interrupted at point 3" in err and "run the same command again to resume" in err
    assert "Traceback" not in err
    assert twolayer.Run(only_run_dir(tmp_path / "o")).status == "interrupted"


def test_huge_lr_ends_diverged_not_completed(tmp_path, capsys):
    """lr = 1e300: parameters stay finite (~1e297) but f(x) overflows; before the fix the run said
    'completed' with loss 0 and accuracy 1."""
    cfg = base_config(loss={"kind": "exponential", "reduction": "mean"}, train={"method": "gd", "lr": 1e300, "steps": 50},
                      data={"kind": "two_points", "angle": 1.2, "labels": [1, 1]},
                      observe={"points": 10, "metrics": ["loss", "accuracy"]})
    run = twolayer.run(cfg, out=tmp_path / "o")
    assert run.status == "diverged"
    assert "outputs f(x)" in run.summary["message"] and "train.lr" in run.summary["message"]
    assert np.isnan(run.trajectory["loss"][-1]) and np.isnan(run.summary["final"]["accuracy"])
    assert main(["run", str(write_config(tmp_path, cfg)), "--out", str(tmp_path / "o")]) == 1
    assert "diverged" in capsys.readouterr().err


def test_huge_init_scale_is_reported_as_an_init_problem(out):
    cfg = base_config(init={"kind": "gaussian", "scale": 1e200}, observe={"points": 5, "metrics": ["loss"]})
    run = twolayer.run(cfg, out=out)
    assert run.status == "diverged" and "at initialization" in run.summary["message"]
    assert "init.scale" in run.summary["message"] and "lower train.lr" not in run.summary["message"]


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_run_files_get_the_umask_mode(out):
    run = twolayer.run(CFG, out=out)
    expected = 0o666 & ~current_umask()
    modes = {p.name: p.stat().st_mode & 0o777 for p in run.path.iterdir()}
    assert modes and all(m == expected for m in modes.values()), modes
