"""Seed batching, determinism, resume after interruption, divergence and solver failures."""

from __future__ import annotations

import numpy as np
import pytest

import twolayer
from conftest import base_config


class Interrupt(KeyboardInterrupt):
    pass


def interrupt_after(k):
    def hook(state, done, total):
        if done == k:
            raise Interrupt

    return hook


METHOD_CASES = {
    "gd": {"method": "gd", "lr": 0.05, "steps": 300},
    "sgd": {"method": "sgd", "lr": 0.05, "steps": 300, "batch_size": 1},
    "flow": {"method": "flow", "time": 5.0},
    "flow_exact": {"method": "flow_exact", "time": 5.0},  # crosses hyperplanes on the base data
}


@pytest.mark.parametrize("method", list(METHOD_CASES))
def test_batched_seeds_equal_seeds_alone(out, method):
    data = {"kind": "two_points", "angle": 1.4708, "labels": [1, 1]} if method == "flow" else None
    extra = {"data": data} if data else {}
    batched = twolayer.run(base_config(seeds=[0, 3, 5], train=METHOD_CASES[method],
                                       observe={"points": 8, "metrics": ["loss", "w_norm"]}, **extra), out=out)
    for i, seed in enumerate([0, 3, 5]):
        alone = twolayer.run(base_config(seed=seed, train=METHOD_CASES[method],
                                         observe={"points": 8, "metrics": ["loss", "w_norm"]}, **extra), out=out)
        for name in ("loss", "w_norm"):
            np.testing.assert_allclose(batched.trajectory[name][i], alone.trajectory[name], rtol=1e-11, atol=1e-14)
        np.testing.assert_allclose(batched.final_params["W"][i], alone.final_params["W"], rtol=1e-11, atol=1e-14)
    assert not np.allclose(batched.trajectory["loss"][0], batched.trajectory["loss"][1])  # seeds differ


def test_same_seed_twice_is_bitwise_identical(tmp_path):
    cfg = base_config(seeds=2, train=METHOD_CASES["sgd"], observe={"points": 6, "metrics": ["loss", "w_norm"]})
    a = twolayer.run(cfg, out=tmp_path / "a")
    b = twolayer.run(cfg, out=tmp_path / "b")
    for name, arr in a.trajectory.items():
        np.testing.assert_array_equal(arr, b.trajectory[name])
    np.testing.assert_array_equal(a.final_params["W"], b.final_params["W"])


@pytest.mark.parametrize("method", list(METHOD_CASES))
def test_resume_after_interruption_is_bitwise_identical(tmp_path, method):
    data = {"data": {"kind": "two_points", "angle": 1.4708, "labels": [1, 1]}} if method == "flow" else {}
    cfg = base_config(seeds=2, train=METHOD_CASES[method], observe={"points": 12, "metrics": ["loss", "v"]}, **data)
    reference = twolayer.run(cfg, out=tmp_path / "ref")
    with pytest.raises(Interrupt):
        twolayer.run(cfg, out=tmp_path / "b", checkpoint_seconds=0, _on_observation=interrupt_after(5))
    run_dir = next((tmp_path / "b").glob("t-*"))
    assert twolayer.Run(run_dir).status == "interrupted"
    assert (run_dir / "checkpoint.npz").is_file()
    resumed = twolayer.run(cfg, out=tmp_path / "b")
    assert resumed.status == "completed" and not (run_dir / "checkpoint.npz").exists()
    for k in ("W", "v"):
        np.testing.assert_array_equal(resumed.final_params[k], reference.final_params[k])
    for name, arr in reference.trajectory.items():
        np.testing.assert_array_equal(resumed.trajectory[name], arr)


def test_failed_run_keeps_checkpoint_and_resumes(tmp_path):
    cfg = base_config(train=METHOD_CASES["gd"], observe={"points": 10, "metrics": ["loss"]})

    def crash(state, done, total):
        if done == 4:
            raise RuntimeError("worker lost")

    with pytest.raises(twolayer.api.RunError, match="worker lost"):
        twolayer.run(cfg, out=tmp_path, checkpoint_seconds=0, _on_observation=crash)
    run_dir = next(tmp_path.glob("t-*"))
    summary = twolayer.Run(run_dir).summary
    assert summary["status"] == "failed" and "worker lost" in summary["message"]
    calls = []
    resumed = twolayer.run(cfg, out=tmp_path, _on_observation=lambda s, d, t: calls.append(d))
    assert resumed.status == "completed" and calls[0] == 5  # resumed after the 4 recorded points


def test_divergent_run_ends_diverged_with_message(out):
    cfg = base_config(init={"kind": "gaussian", "scale": 1.0}, loss={"kind": "exponential", "reduction": "mean"},
                      data={"kind": "two_points", "angle": 0.3, "labels": [1, -1]},
                      train={"method": "gd", "lr": 100.0, "steps": 1000}, observe={"points": 50, "metrics": ["loss"]})
    run = twolayer.run(cfg, out=out)
    s = run.summary
    assert s["status"] == "diverged"
    assert "non-finite" in s["message"] and "step" in s["message"] and "t = " in s["message"]
    assert run.trajectory["t"].size < 50  # stopped early, trajectory up to that point saved
    assert np.isfinite(run.trajectory["loss"][0])
    assert twolayer.run(cfg, out=out).cached  # deterministic end state: cache hit


def test_one_diverging_seed_does_not_stop_the_others(out, tmp_path):
    W = np.stack([0.3 * np.ones((4, 2)), 30.0 * np.ones((4, 2))])
    v = np.stack([0.3 * np.ones(4), 30.0 * np.ones(4)])
    np.savez(tmp_path / "init.npz", W=W, v=v)
    cfg = base_config(seeds=2, init={"kind": "file", "path": str(tmp_path / "init.npz")}, model={"activation": "linear"},
                      loss={"kind": "square", "reduction": "mean"},
                      train={"method": "gd", "lr": 0.1, "steps": 200}, observe={"points": 20, "metrics": ["loss"]})
    run = twolayer.run(cfg, out=out)
    assert run.status == "diverged" and "seed(s) [1]" in run.summary["message"]
    loss = run.trajectory["loss"]
    assert np.all(np.isfinite(loss[0])) and np.isnan(loss[1, -1])
    assert run.summary["diverged_seeds"] == [1]


def test_stalled_flow_solver_fails_with_advice(out):
    cfg = base_config(model={"activation": {"name": "leaky_relu", "slope": 0.1}, "width": 4},
                      init={"kind": "gaussian", "scale": 1e-3},
                      train={"method": "flow", "time": 20.0, "max_solver_steps": 2000},
                      observe={"points": 5, "metrics": ["loss"]})
    run = twolayer.run(cfg, out=out)
    assert run.status == "failed"
    assert "max_solver_steps" in run.summary["message"] and "method gd" in run.summary["message"]
