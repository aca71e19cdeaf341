"""GD and SGD step in chunks checked once each (``discrete_advance(absorbing=True)``): the same bits as the
loop that checks every step, for healthy, diverging and batched runs, at every interval length."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import base_config
from twolayer.config import load_config
from twolayer.train import Simulation, gd, methods, sgd
from twolayer.train.loop import compiled_advance


def per_step(step, init_aux, **_):
    """``discrete_advance`` as it was before chunks: every step checked."""
    return methods.discrete_advance(step, init_aux)


def simulate(cfg: dict):
    sim = Simulation(load_config(cfg))
    state = sim.run(sim.initial_state())
    return sim.trajectory(state), sim.final_params(state), np.asarray(state.bad), np.asarray(state.code)


def both(cfg: dict, monkeypatch):
    """(chunked, per-step) results of one config."""
    compiled_advance.cache_clear()
    chunked = simulate(cfg)
    with monkeypatch.context() as m:
        m.setattr(gd, "discrete_advance", per_step)
        m.setattr(sgd, "discrete_advance", per_step)
        compiled_advance.cache_clear()
        stepped = simulate(cfg)
    compiled_advance.cache_clear()
    return chunked, stepped


def assert_same(a, b):
    traj_a, final_a, bad_a, code_a = a
    traj_b, final_b, bad_b, code_b = b
    assert traj_a.keys() == traj_b.keys()
    for name in traj_a:
        np.testing.assert_array_equal(traj_a[name], traj_b[name], err_msg=name)
    for name in final_a:
        assert final_a[name].tobytes() == final_b[name].tobytes(), name
    np.testing.assert_array_equal(bad_a, bad_b)
    np.testing.assert_array_equal(code_a, code_b)


def mnist_like(tmp_path):
    """Data large enough for ``nets.rows_dot``'s custom product (X.size >= 2^16, h < d)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 256)) / 16
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    np.savez(tmp_path / "big.npz", X=X, y=y)
    return {"kind": "file", "path": str(tmp_path / "big.npz")}


CASES = {
    "gd, one seed, log schedule": dict(train={"method": "gd", "lr": 0.05, "steps": 1000},
                                       observe={"points": 9, "metrics": ["loss", "w_norm"]}),
    "gd, 3 seeds, weight decay, first layer": dict(
        seeds=3, train={"method": "gd", "lr": 0.05, "steps": 777, "layers": "first", "weight_decay": 0.01},
        observe={"schedule": "every", "every": 130, "metrics": ["loss"]}),
    "sgd, 2 seeds": dict(seeds=2, data={"kind": "toy2d", "pos_angles": [10, 20, 30, 40, 50, 60, 70], "neg_angles": [200, 220, 240, 260]},
                         train={"method": "sgd", "lr": 0.05, "steps": 500, "batch_size": 4},
                         observe={"points": 7, "metrics": ["loss"]}),
    "gd, float32": dict(precision="float32", train={"method": "gd", "lr": 0.05, "steps": 300}),
    "gd, diverges": dict(init={"kind": "gaussian", "scale": 1.0}, loss={"kind": "exponential", "reduction": "mean"},
                         data={"kind": "two_points", "angle": 0.3, "labels": [1, -1]},
                         train={"method": "gd", "lr": 100.0, "steps": 1000}, observe={"points": 50, "metrics": ["loss"]}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_chunked_steps_are_bitwise_the_per_step_loop(case, monkeypatch):
    cfg = base_config(**CASES[case])
    chunked, stepped = both(cfg, monkeypatch)
    assert_same(chunked, stepped)
    if case == "gd, diverges":
        assert chunked[2][0] >= 0 and chunked[3][0] == methods.NONFINITE  # it did diverge, at the same step


def test_one_seed_diverging_mid_chunk_keeps_its_last_finite_state(tmp_path, monkeypatch):
    W = np.stack([0.3 * np.ones((4, 2)), 30.0 * np.ones((4, 2)), 0.2 * np.ones((4, 2))])
    v = np.stack([0.3 * np.ones(4), 30.0 * np.ones(4), 0.2 * np.ones(4)])
    np.savez(tmp_path / "init.npz", W=W, v=v)
    cfg = base_config(seeds=3, init={"kind": "file", "path": str(tmp_path / "init.npz")},
                      model={"activation": "linear", "width": 4}, loss={"kind": "square", "reduction": "mean"},
                      train={"method": "gd", "lr": 0.1, "steps": 200}, observe={"points": 4, "metrics": ["loss"]})
    chunked, stepped = both(cfg, monkeypatch)
    assert_same(chunked, stepped)
    bad = chunked[2]
    assert bad[1] > 0 and bad[1] % methods.CHUNK_STEPS != 0 and bad[0] < 0 and bad[2] < 0
    assert np.all(np.isfinite(chunked[1]["W"][1]))


def test_large_data_product_is_bitwise_the_per_step_loop(tmp_path, monkeypatch):
    cfg = base_config(data=mnist_like(tmp_path), model={"kind": "two_layer", "activation": "relu", "width": 8},
                      train={"method": "gd", "lr": 0.5, "steps": 150}, observe={"points": 4, "metrics": ["loss"]})
    assert_same(*both(cfg, monkeypatch))
