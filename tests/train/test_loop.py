"""The simulation loop: determinism, resume after a failure, divergence and solver failures, observation
schedules, and ``seed_map`` (batched seeds and resume after an interrupt are checked for every method in
tests/test_conformance.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer
from conftest import base_config
from twolayer import nets
from twolayer.activations import make_activation
from twolayer.config import load_config
from twolayer.train.loop import observation_points


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
}


def test_same_seed_twice_is_bitwise_identical(tmp_path):
    cfg = base_config(seeds=2, train=METHOD_CASES["sgd"], observe={"points": 6, "metrics": ["loss", "w_norm"]})
    a = twolayer.run(cfg, out=tmp_path / "a")
    b = twolayer.run(cfg, out=tmp_path / "b")
    for name, arr in a.trajectory.items():
        np.testing.assert_array_equal(arr, b.trajectory[name])
    np.testing.assert_array_equal(a.final_params["W"], b.final_params["W"])


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


def test_seed_map_single_seed_matches_vmap_and_keeps_the_seed_axis():
    """One seed runs unbatched (faster on CPU) but returns the same values, shaped like vmap's."""
    from twolayer.train.loop import seed_map

    X, y, p = _data(20, 3, 4)
    loss = _loss("two_layer", make_activation("relu"))

    def fn(q, scale):
        return {"g": jax.grad(loss)(q, X, y)["W"] * scale, "l": loss(q, X, y)}

    for seeds in (1, 3):
        batch = jax.tree_util.tree_map(lambda a: jnp.stack([a * (1 + i) for i in range(seeds)]), p)
        got = jax.jit(seed_map(fn, (0, None)))(batch, 2.0)
        ref = jax.vmap(fn, in_axes=(0, None))(batch, 2.0)
        assert got["g"].shape == (seeds, 4, 3) and got["l"].shape == (seeds,)
        for k in ref:
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize(("observe", "expected"), [
    ({"schedule": "every", "every": 25}, [0, 25, 50, 75, 100]),
    ({"schedule": "at", "at": [0, 3, 10]}, [0, 3, 10, 100]),
    ({"schedule": "log", "points": 4}, [0, 1, 10, 100]),
])
def test_observation_schedules(observe, expected):
    assert observation_points(load_config(base_config(observe=observe))).tolist() == expected


def test_flow_log_schedule_is_in_time():
    pts = observation_points(load_config(base_config(train={"method": "flow", "time": 10.0}, observe={"points": 3})))
    np.testing.assert_allclose(pts, [0.0, 1e-3, 10.0])


def _data(n, d, h, seed=0):
    rng = np.random.default_rng(seed)
    X = jnp.asarray(rng.standard_normal((n, d)) / np.sqrt(d))
    y = jnp.asarray(rng.choice([-1.0, 1.0], size=n))
    params = {"W": jnp.asarray(0.3 * rng.standard_normal((h, d))), "v": jnp.asarray(0.3 * rng.standard_normal(h))}
    return X, y, params


def _loss(net, act):
    return lambda p, X, y: jnp.mean(jnp.exp(-y * nets.NETS.get(net)(p, X, act)))


def test_compiled_programs_are_dropped_near_the_memory_map_limit(tmp_path, monkeypatch):
    """Past half of vm.max_map_count the loop drops its compiled programs before building the next run
    (a whole reproduce or test suite otherwise dies in the compiler at the limit); below it they are kept,
    and a run after the release is bitwise the run before it."""
    from twolayer.train import loop

    usage = loop.memory_maps()
    if usage is None:
        pytest.skip("/proc does not report memory maps here")
    assert 0 < usage[0] < usage[1]
    monkeypatch.setattr(loop, "MAPS_INTERVAL", 0.0)  # read the maps at every build
    first = twolayer.run(base_config(), out=tmp_path / "a")
    assert loop.compiled_advance.cache_info().currsize >= 1
    assert not loop.release_compiled_programs()  # this process is far below half the limit
    assert loop.compiled_advance.cache_info().currsize >= 1
    monkeypatch.setattr(loop, "memory_maps", lambda: (usage[1], usage[1]))
    second = twolayer.run(base_config(), out=tmp_path / "b")
    info = loop.compiled_advance.cache_info()
    assert info.currsize == 1 and info.hits == 0  # the cache was emptied, then this run compiled again
    np.testing.assert_array_equal(first.final_params["W"], second.final_params["W"])
    np.testing.assert_array_equal(first.trajectory["loss"], second.trajectory["loss"])


def test_the_memory_maps_are_read_at_most_once_per_interval(monkeypatch):
    """Reading /proc/self/maps costs ~20 ms in a process with thousands of mappings: builds within MAPS_INTERVAL
    of the last reading skip it, and the first build after the interval reads it again."""
    from twolayer.train import loop

    reads = []
    monkeypatch.setattr(loop, "memory_maps", lambda: reads.append(1) or (10, 100))
    monkeypatch.setattr(loop, "_maps_read_at", [-float("inf")])
    monkeypatch.setattr(loop, "MAPS_INTERVAL", 3600.0)
    assert [loop.release_compiled_programs() for _ in range(5)] == [False] * 5
    assert len(reads) == 1
    monkeypatch.setattr(loop, "MAPS_INTERVAL", 0.0)
    loop.release_compiled_programs()
    assert len(reads) == 2
