"""Cache hits are verified: damaged outputs are recomputed (and the run says why), never served."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

import twolayer
from conftest import base_config
from twolayer.cli import main
from twolayer.fileio import sha256_of
from twolayer.store import RunStore

CFG = base_config(seeds=2, observe={"points": 6, "metrics": ["loss", "w_norm"]})


def damage(run_dir, how: str) -> None:
    traj, final = run_dir / "trajectory.npz", run_dir / "final.npz"
    if how == "truncated trajectory":
        traj.write_bytes(traj.read_bytes()[: traj.stat().st_size // 2])
    elif how == "zero-byte trajectory":
        traj.write_bytes(b"")
    elif how == "deleted trajectory":
        traj.unlink()
    elif how == "truncated final":
        final.write_bytes(final.read_bytes()[:100])
    elif how == "deleted final":
        final.unlink()
    elif how == "one byte of final changed":
        data = bytearray(final.read_bytes())
        data[-30] ^= 0xFF  # inside the zip's central directory or the data: still the same size
        final.write_bytes(bytes(data))
    elif how == "other arrays in trajectory":
        np.savez(traj, t=np.zeros(3), step=np.zeros(3, dtype=np.int64))
    elif how == "garbage summary":
        (run_dir / "summary.json").write_text("{ not json")
    elif how == "summary is a list":
        (run_dir / "summary.json").write_text("[1, 2]")
    elif how == "config.yaml changed":
        (run_dir / "config.yaml").write_text("name: other\n")
    else:
        raise AssertionError(how)


DAMAGES = ["truncated trajectory", "zero-byte trajectory", "deleted trajectory", "truncated final", "deleted final",
           "one byte of final changed", "other arrays in trajectory", "garbage summary", "summary is a list",
           "config.yaml changed"]


def test_summary_records_the_sha256_of_every_output(out):
    run = twolayer.run(CFG, out=out)
    files = run.summary["files"]
    assert set(files) == {"config.yaml", "trajectory.npz", "final.npz"}
    for name, digest in files.items():
        assert sha256_of(run.path / name) == digest


@pytest.mark.parametrize("how", DAMAGES)
def test_damaged_run_is_recomputed_not_served(out, how):
    first = twolayer.run(CFG, out=out)
    reference = {k: v.copy() for k, v in first.trajectory.items()}
    final = {k: v.copy() for k, v in first.final_params.items()}
    damage(first.path, how)
    again = twolayer.run(CFG, out=out)
    assert not again.cached and again.status == "completed"
    for k, v in reference.items():
        np.testing.assert_array_equal(again.trajectory[k], v)
    for k, v in final.items():
        np.testing.assert_array_equal(again.final_params[k], v)
    assert any("cannot be reused" in n and "recomputing" in n for n in again.notes), again.notes
    assert twolayer.run(CFG, out=out).cached  # intact again: a verified hit


def cli_run(tmp_path):
    """``(config path, out, run dir)`` of a config run once through the CLI."""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(CFG))
    out = tmp_path / "o"
    assert main(["run", str(path), "--out", str(out)]) == 0
    return path, out, next(out.glob("t-*"))


def test_cli_says_why_it_recomputes(tmp_path, capsys):
    path, out, run_dir = cli_run(tmp_path)
    damage(run_dir, "zero-byte trajectory")
    capsys.readouterr()
    assert main(["run", str(path), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "(cached)" not in captured.out and "completed" in captured.out
    assert "trajectory.npz" in captured.err and "recomputing" in captured.err


def test_garbage_summary_does_not_block_force(tmp_path, capsys):
    path, out, run_dir = cli_run(tmp_path)
    (run_dir / "summary.json").write_bytes(b"\x00\xff garbage")
    assert main(["run", str(path), "--out", str(out), "--force"]) == 0
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "completed"
    assert main(["show", str(run_dir)]) == 0
    assert main(["list", "--out", str(out)]) == 0


def test_a_summary_without_file_hashes_is_not_served(out):
    """Even with its digest made to match: the outputs of such a run cannot be verified."""
    import hashlib

    run = twolayer.run(CFG, out=out)
    summary = json.loads((run.path / "summary.json").read_text())
    summary.pop("files")
    (run.path / "summary.json").write_text(json.dumps(summary))
    (run.path / "summary.sha256").write_text(hashlib.sha256((run.path / "summary.json").read_bytes()).hexdigest())
    assert "records no sha256 of its files" in RunStore.stored_state(run.path).problem
    assert not twolayer.run(CFG, out=out).cached
    assert twolayer.run(CFG, out=out).cached


def test_sweep_does_not_count_a_damaged_point_as_cached(tmp_path):
    from twolayer.sweep import run_sweep

    spec = {"name": "s", "base": base_config(observe={"points": 4, "metrics": ["loss"]}),
            "grid": {"train.lr": [0.05, 0.1]}}
    first = run_sweep(spec, out=tmp_path)
    assert first.exit_code == 0
    damaged = tmp_path / first.results[0]["run_id"]
    damage(damaged, "deleted final")
    again = run_sweep(spec, out=tmp_path)
    assert [r["cached"] for _, r in sorted(again.results.items())] == [False, True]
    assert again.exit_code == 0 and (damaged / "final.npz").is_file()


def test_show_reports_a_damaged_run_instead_of_aborting(tmp_path, capsys):
    run = twolayer.run(CFG, out=tmp_path / "o")
    damage(run.path, "zero-byte trajectory")
    assert main(["show", str(run.path)]) == 0
    captured = capsys.readouterr()
    assert "aborted" not in captured.err and "Traceback" not in captured.err
    assert "damaged" in captured.err and "trajectory.npz" in captured.err
    assert "cannot be read" in captured.out
