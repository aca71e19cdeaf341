"""SGD semantics, initializations, observation schedules and float32 runs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer
from conftest import base_config
from twolayer.config import load_config
from twolayer.init import INITS
from twolayer.nets import NETS
from twolayer.problem import Problem
from twolayer.train.loop import observation_points


def test_sgd_with_full_batch_equals_gd(out, random_data_file):
    path, X, y = random_data_file
    common = dict(data={"kind": "file", "path": str(path)}, observe={"points": 6, "metrics": ["loss"]})
    gd = twolayer.run(base_config(train={"method": "gd", "lr": 0.05, "steps": 50}, **common), out=out)
    sgd = twolayer.run(base_config(train={"method": "sgd", "lr": 0.05, "steps": 50, "batch_size": 12}, **common), out=out)
    np.testing.assert_allclose(sgd.final_params["W"], gd.final_params["W"], rtol=1e-12, atol=1e-15)


def test_sgd_matches_reference_with_partial_last_batch(out, random_data_file, init_file):
    """n = 12, batch 5: batches of 5, 5, 2 per epoch, each epoch a fresh seeded permutation,
    mean over the actual batch; checked against a plain re-implementation."""
    data_path, X, y = random_data_file
    init_path, W, v = init_file
    lr, size, steps, seed = 0.05, 5, 7, 3
    cfg = base_config(seed=seed, data={"kind": "file", "path": str(data_path)},
                      model={"kind": "two_layer", "activation": "relu"}, init={"kind": "file", "path": str(init_path)},
                      loss={"kind": "logistic", "reduction": "mean"},
                      train={"method": "sgd", "lr": lr, "steps": steps, "batch_size": size},
                      observe={"schedule": "at", "at": [0]})
    run = twolayer.run(cfg, out=out)
    problem = Problem.from_config(load_config(cfg))
    key = jax.random.PRNGKey(seed)
    params = {"W": jnp.asarray(W), "v": jnp.asarray(v)}
    sizes = []
    for k in range(steps):
        epoch, position = divmod(k, 3)
        perm = np.asarray(jax.random.permutation(jax.random.fold_in(key, epoch), 12))
        idx = perm[position * size:(position + 1) * size]
        sizes.append(idx.size)
        g = jax.grad(lambda p: problem.empirical_loss(p, jnp.asarray(X[idx]), jnp.asarray(y[idx])))(params)
        params = jax.tree_util.tree_map(lambda p, d: p - lr * d, params, g)
    assert sizes == [5, 5, 2, 5, 5, 2, 5]
    np.testing.assert_allclose(run.final_params["W"], params["W"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(run.final_params["v"], params["v"], rtol=1e-12, atol=1e-15)


def test_balanced_init_is_balanced_with_given_signs():
    cfg = load_config(base_config(model={"width": 4}, init={"kind": "balanced", "scale": 1e-3, "signs": [1, -1, -1, 1]}))
    p = INITS.get("balanced").fn(cfg.init, jax.random.PRNGKey(0), NETS.get("two_layer"), 4, 2)
    norms = np.linalg.norm(p["W"], axis=1)
    np.testing.assert_allclose(p["v"], np.array([1, -1, -1, 1]) * norms, rtol=1e-15)
    assert 1e-4 < norms.mean() < 1e-2


def test_init_scales():
    d, h = 400, 300
    key = jax.random.PRNGKey(0)
    std = INITS.get("standard").fn(load_config(base_config(init={"kind": "standard"})).init, key, NETS.get("two_layer"), h, d)
    np.testing.assert_allclose(np.mean(np.sum(np.asarray(std["W"]) ** 2, axis=1)), 1.0, rtol=0.02)
    gauss = INITS.get("gaussian").fn(load_config(base_config(init={"kind": "gaussian", "scale": 1e-6})).init,
                                         key, NETS.get("two_layer"), h, d)
    np.testing.assert_allclose(np.std(np.asarray(gauss["W"])), 1e-6, rtol=0.02)
    assert "v" not in INITS.get("standard").fn(load_config(base_config(init={"kind": "standard"})).init,
                                                   key, NETS.get("mean_field"), h, d)


def test_init_file_with_seed_axis(out, tmp_path):
    W = np.random.default_rng(0).normal(size=(2, 3, 2))
    v = np.random.default_rng(1).normal(size=(2, 3))
    np.savez(tmp_path / "i.npz", W=W, v=v)
    cfg = base_config(seeds=2, model={"activation": "relu"}, init={"kind": "file", "path": str(tmp_path / "i.npz")},
                      train={"method": "gd", "lr": 0.1, "steps": 0}, observe={"schedule": "at", "at": [0]})
    run = twolayer.run(cfg, out=out)
    np.testing.assert_array_equal(run.final_params["W"], W)


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


def test_float32_run_stays_float32(out):
    run = twolayer.run(base_config(precision="float32", observe={"points": 4, "metrics": ["loss", "w_norm"]}), out=out)
    assert run.final_params["W"].dtype == np.float32 and run.trajectory["loss"].dtype == np.float32
    ref = twolayer.run(base_config(observe={"points": 4, "metrics": ["loss", "w_norm"]}), out=out)
    np.testing.assert_allclose(run.trajectory["loss"], ref.trajectory["loss"], rtol=1e-4)


def test_mean_field_time_follows_eq3(out, random_data_file):
    """mean_field GD: w_i <- w_i - lr (lambda w_i + m grad_{w_i} L) (multi-index paper eq. 3)."""
    path, X, y = random_data_file
    m, lr, wd = 6, 0.01, 0.1
    cfg = base_config(data={"kind": "file", "path": str(path)}, model={"kind": "mean_field", "activation": "abs", "width": m},
                      init={"kind": "standard"}, loss={"kind": "square", "reduction": "mean"},
                      train={"method": "gd", "lr": lr, "steps": 1, "weight_decay": wd}, observe={"schedule": "at", "at": [0]})
    run = twolayer.run(cfg, out=out)
    config = load_config(cfg)
    problem = Problem.from_config(config)
    from twolayer.train import Simulation

    W0 = Simulation(config).initial_state().params["W"][0]
    g = jax.grad(lambda W: problem.empirical_loss({"W": W}, jnp.asarray(X), jnp.asarray(y)))(W0)
    np.testing.assert_allclose(run.final_params["W"], W0 - lr * (wd * W0 + m * g), rtol=1e-12)
