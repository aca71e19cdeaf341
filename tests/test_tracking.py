"""MLflow tracking against a real MLflow file store in a temporary folder."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import twolayer
from twolayer.cli import main
from twolayer.config import load_config

from conftest import base_config

mlflow = pytest.importorskip("mlflow")


def _config(uri=None, **changes):
    cfg = base_config(seeds=2, **changes)
    cfg["observe"] = {"schedule": "log", "points": 8, "metrics": ["loss", "w_norm", "v"]}
    return {**cfg, **({"mlflow": {"uri": uri, "experiment": "tests"}} if uri else {})}


def _client(uri):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _runs(uri, run_id):
    client = _client(uri)
    exp = client.get_experiment_by_name("tests")
    return client.search_runs([exp.experiment_id], filter_string=f"tags.`twolayer.run_id` = '{run_id}'")


def test_tracking_settings_do_not_change_the_config_hash():
    plain = load_config(_config())
    tracked = load_config(_config("file:///tmp/elsewhere"))
    assert "mlflow" not in plain.resolved() and "mlflow" not in tracked.resolved()
    assert plain.config_hash() == tracked.config_hash()
    assert tracked.mlflow.uri == "file:///tmp/elsewhere"
    assert load_config(tracked, ["train.lr=0.1"]).mlflow == tracked.mlflow  # survives overrides


def test_run_logs_params_metrics_and_a_link(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    run = twolayer.run(_config(uri), out=tmp_path / "out")
    (logged,) = _runs(uri, run.path.name)
    data = logged.data
    assert data.params["model.width"] == "8" and data.params["train.lr"] == "0.05"
    assert data.params["data.kind"] == "two_points"
    assert data.tags["twolayer.config_hash"] == run.summary["config_hash"]
    assert data.tags["twolayer.status"] == "completed" and logged.info.status == "FINISHED"
    client = _client(uri)
    traj = run.trajectory
    history = client.get_metric_history(logged.info.run_id, "loss")
    assert [m.step for m in history] == traj["step"].tolist()
    np.testing.assert_allclose([m.value for m in history], np.median(traj["loss"], axis=0), rtol=1e-12)
    seed1 = client.get_metric_history(logged.info.run_id, "seed_1/loss")
    np.testing.assert_allclose([m.value for m in seed1], traj["loss"][1], rtol=1e-12)
    assert data.metrics["final.loss"] == pytest.approx(np.median(run.summary["final"]["loss"]))
    assert "w_norm" not in data.metrics  # per-neuron arrays are not metrics
    artifacts = {a.path for a in client.list_artifacts(logged.info.run_id)}
    assert {"config.yaml", "summary.json", "twolayer_run.json"} <= artifacts
    link = json.loads(open(client.download_artifacts(logged.info.run_id, "twolayer_run.json", str(tmp_path))).read())
    assert link["run_dir"] == str(run.path.resolve()) and link["arrays"]["w_norm"] == [2, len(traj["t"]), 8]
    record = json.loads((run.path / "mlflow.json").read_text())
    assert record["run_id"] == logged.info.run_id

    again = twolayer.run(_config(uri), out=tmp_path / "out")  # a cache hit already logged: not logged twice
    assert again.cached and len(_runs(uri, run.path.name)) == 1
    twolayer.run(_config(uri), out=tmp_path / "out", force=True)  # recomputed: a new MLflow run
    assert len(_runs(uri, run.path.name)) == 2


def test_cli_mlflow_option(tmp_path, capsys, monkeypatch):
    import yaml

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_config()))
    uri = (tmp_path / "mlruns").as_uri()
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--mlflow", uri]) == 0
    assert "mlflow: run" in capsys.readouterr().out
    client = _client(uri)
    (exp,) = [e for e in client.search_experiments() if e.name == "twolayer"]
    assert len(client.search_runs([exp.experiment_id])) == 1
    # without --mlflow the same config is the same run (a cache hit), and nothing more is logged
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    assert len(client.search_runs([exp.experiment_id])) == 1


def test_missing_mlflow_is_a_clear_error_before_simulating(tmp_path, monkeypatch, capsys):
    import yaml

    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow now raises ImportError
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_config()))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--mlflow", "file:///x"]) == 2
    assert "pip install 'twolayer[mlflow]'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_params_are_logged_as_the_method_resolves_them(tmp_path, monkeypatch):
    """A GD run given in steps logs its horizon in time too (lr * steps), and no empty fields or other methods'
    placeholders (``train.time: None``, ``train.batch_size: None``, ``train.solver`` for GD)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    run = twolayer.run(_config(uri), out=tmp_path / "out")  # train: gd, lr 0.05, steps 100
    (logged,) = _runs(uri, run.path.name)
    params = logged.data.params
    assert params["train.steps"] == "100" and float(params["train.time"]) == pytest.approx(5.0)
    assert "None" not in params.values()
    assert not {"train.batch_size", "train.solver", "train.rtol", "seed"} & set(params)


def test_sweep_logs_every_point_cache_hits_included(tmp_path, monkeypatch, capsys):
    import yaml

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    sweep = {"name": "lrs", "base": _config(), "grid": {"train.lr": [0.05, 0.1]}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(sweep))
    out = str(tmp_path / "out")
    assert main(["sweep", str(path), "--out", out]) == 0  # computed without tracking
    uri = (tmp_path / "mlruns").as_uri()
    assert main(["sweep", str(path), "--out", out, "--mlflow", uri]) == 0  # every point a cache hit
    client = _client(uri)
    exp = client.get_experiment_by_name("lrs")
    logged = client.search_runs([exp.experiment_id])
    assert sorted(float(r.data.params["train.lr"]) for r in logged) == [0.05, 0.1]
    assert {r.data.tags["twolayer.cached"] for r in logged} == {"true"}
    assert main(["sweep", str(path), "--out", out, "--mlflow", uri]) == 0  # logged once per experiment
    assert len(client.search_runs([exp.experiment_id])) == 2
