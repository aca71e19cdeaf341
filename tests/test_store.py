"""Run store (directories, cache, index, atomic files) and the command line."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
import yaml

import twolayer
from conftest import base_config
from twolayer.cli import main
from twolayer.store import RunStore


def test_run_directory_contract(out):
    run = twolayer.run(base_config(seeds=2, observe={"points": 5, "metrics": ["loss", "w_norm", "v"]}), out=out)
    cfg = twolayer.load_config(base_config(seeds=2, observe={"points": 5, "metrics": ["loss", "w_norm", "v"]}))
    assert run.path.name == f"t-{cfg.config_hash()[:8]}"
    assert {p.name for p in run.path.iterdir()} == {"config.yaml", "trajectory.npz", "final.npz", "summary.json",
                                                  "summary.sha256"}
    s = run.summary
    assert s["status"] == "completed" and s["run_id"] == run.path.name and s["steps"] == 100
    assert s["wall_seconds"] > 0 and len(s["final"]["loss"]) == 2 and s["message"] == ""
    traj = run.trajectory
    assert traj["t"][0] == 0 and traj["t"][-1] == pytest.approx(100 * 0.05) and traj["step"][-1] == 100
    assert traj["loss"].shape == (2, traj["t"].size) and traj["w_norm"].shape == (2, traj["t"].size, 8)
    assert run.final_params["W"].shape == (2, 8, 2) and run.final_params["v"].shape == (2, 8)
    assert yaml.safe_load((run.path / "config.yaml").read_text()) == cfg.resolved()
    assert not list(run.path.glob(".*tmp"))  # atomic writes leave no temporaries


def test_cache_hit_and_force(out):
    cfg = base_config()
    first = twolayer.run(cfg, out=out)
    second = twolayer.run(cfg, out=out)
    assert not first.cached and second.cached and second.path == first.path
    third = twolayer.run(cfg, out=out, force=True)
    assert not third.cached and third.status == "completed"
    other = twolayer.run(cfg, out=out, overrides={"train.lr": 0.01})
    assert other.path != first.path


def test_index_lists_runs(out):
    twolayer.run(base_config(), out=out)
    twolayer.run(base_config(name="other"), out=out)
    rows = RunStore(out).list()
    assert [r["name"] for r in rows] == ["t", "other"]
    assert all(r["status"] == "completed" for r in rows)
    with sqlite3.connect(out / "runs.sqlite") as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_single_seed_squeezes_seed_axis(out):
    run = twolayer.run(base_config(seed=4, observe={"points": 4, "metrics": ["loss", "w_norm"]}), out=out)
    assert run.trajectory["loss"].ndim == 1 and run.trajectory["w_norm"].ndim == 2
    assert run.final_params["W"].shape == (8, 2) and isinstance(run.summary["final"]["loss"], float)


def test_cli_run_list_show(tmp_path, capsys):
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump(base_config()))
    out = tmp_path / "out"
    assert main(["run", str(cfg_path), "--out", str(out), "--set", "train.steps=20"]) == 0
    assert "completed" in capsys.readouterr().out
    assert main(["run", str(cfg_path), "--out", str(out), "--set", "train.steps=20"]) == 0
    assert "(cached)" in capsys.readouterr().out
    assert main(["list", "--out", str(out)]) == 0
    listing = capsys.readouterr().out
    assert "completed" in listing
    run_id = RunStore(out).list()[0]["run_id"]
    assert main(["show", run_id, "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "trajectory.npz" in shown and "lr: 0.05" in shown


def test_cli_user_errors_exit_2_without_traceback(tmp_path, capsys):
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump(base_config(model={"activation": "relu2"})))
    assert main(["run", str(cfg_path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "model.activation: 'relu2' is not one of relu" in err and "Traceback" not in err
    assert main(["run", str(tmp_path / "missing.yaml")]) == 2
    assert main(["run", str(cfg_path), "--set", "novalue"]) == 2
    assert main(["show", "no-such-run", "--out", str(tmp_path)]) == 2
    assert main(["frobnicate"]) == 2


def test_cli_diverged_run_exits_1(tmp_path, capsys):
    cfg = base_config(init={"kind": "gaussian", "scale": 1.0}, data={"kind": "two_points", "angle": 0.3, "labels": [1, -1]},
                      loss={"kind": "exponential", "reduction": "mean"}, train={"method": "gd", "lr": 100.0, "steps": 50})
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    assert main(["run", str(cfg_path), "--out", str(tmp_path / "o")]) == 1
    assert "diverged" in capsys.readouterr().err


def test_file_data_and_mean_field_run(out, random_data_file):
    path, X, y = random_data_file
    cfg = base_config(data={"kind": "file", "path": str(path)}, model={"kind": "mean_field", "activation": "abs", "width": 6},
                      init={"kind": "standard"}, loss={"kind": "square", "reduction": "mean"},
                      observe={"points": 5, "metrics": ["loss", "w_norm", "param_norm_sq"]})
    run = twolayer.run(cfg, out=out)
    loss = run.trajectory["loss"]
    assert run.status == "completed" and loss[-1] < loss[0]
    assert set(run.final_params) == {"W"}
    summary = json.loads((run.path / "summary.json").read_text())
    assert summary["final"]["param_norm_sq"] == pytest.approx(np.sum(run.final_params["W"] ** 2))


def test_events_and_context_arrays(out):
    from twolayer.events import EVENTS
    from twolayer.observe import OBSERVABLES, context_array, observable

    if "test_center_dot" not in OBSERVABLES:
        @context_array("test_center")
        def _center(dataset, cfg):
            return dataset.X.mean(axis=0)

        @observable("test_center_dot", needs=("test_center",), per_neuron=True)
        def _dot(params, ctx):
            return params["W"] @ ctx.arrays["test_center"]

    run = twolayer.run(base_config(seeds=2, observe={"points": 30, "metrics": ["loss", "test_center_dot"]}), out=out)
    X = np.array([[1.0, 0.0], [np.cos(1.2), np.sin(1.2)]])
    np.testing.assert_allclose(run.trajectory["test_center_dot"][:, -1], run.final_params["W"] @ X.mean(axis=0), rtol=1e-12)
    assert "loss_halved" in EVENTS
    halved = run.summary["events"]["loss_halved"]
    loss, t = run.trajectory["loss"], run.trajectory["t"]
    for s in range(2):  # refined to the step inside the grid interval where the loss first halves
        hit = np.flatnonzero(loss[s] <= 0.5 * loss[s, 0])
        if not hit.size:
            assert halved[s] is None
            continue
        assert t[hit[0] - 1] < halved[s] <= t[hit[0]]
        assert halved[s] / 0.05 == pytest.approx(round(halved[s] / 0.05), abs=1e-9)  # t = lr k


def test_cli_run_prints_the_events_per_seed(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(base_config(seeds=2)))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    summary = json.loads(next((tmp_path / "out").glob("t-*/summary.json")).read_text())
    halved = summary["events"]["loss_halved"]
    assert "seed 0" in out and "seed 1" in out and "loss_halved" in out
    for value in halved:
        assert ("not reached" if value is None else f"{value:.6g}") in out
