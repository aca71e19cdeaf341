"""Training methods: SGD semantics (full batch = GD, the partial last batch), float32 runs, and the
mean-field time scale of eq. (3)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import twolayer
from conftest import base_config
from twolayer.config import load_config
from twolayer.problem import Problem


def test_sgd_with_full_batch_equals_gd(out, random_data_file):
    path, X, y = random_data_file
    common = dict(data={"kind": "file", "path": str(path)}, observe={"points": 6, "metrics": ["loss"]})
    gd = twolayer.run(base_config(train={"method": "gd", "lr": 0.05, "steps": 50}, **common), out=out)
    sgd = twolayer.run(base_config(train={"method": "sgd", "lr": 0.05, "steps": 50, "batch_size": 12}, **common), out=out)
    np.testing.assert_allclose(sgd.final_params["W"], gd.final_params["W"], rtol=1e-12, atol=1e-15)


def sgd_reference(problem, X, y, W, v, *, seed: int, lr: float, size: int, steps: int):
    """Plain SGD on n = 12 samples: epoch e's permutation from fold_in(PRNGKey(seed), e), batch k mod 3 of it (the
    last one partial), the mean loss over the actual batch. Returns the final parameters and the batch sizes."""
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
    return params, sizes


def sgd_file_config(data_path, init_path, *, lr, size, steps, **sections):
    return base_config(data={"kind": "file", "path": str(data_path)},
                       model={"kind": "two_layer", "activation": "relu"}, init={"kind": "file", "path": str(init_path)},
                       loss={"kind": "logistic", "reduction": "mean"},
                       train={"method": "sgd", "lr": lr, "steps": steps, "batch_size": size},
                       observe={"schedule": "at", "at": [0]}, **sections)


def test_sgd_matches_reference_with_partial_last_batch(out, random_data_file, init_file):
    """n = 12, batch 5: batches of 5, 5, 2 per epoch, each epoch a fresh seeded permutation,
    mean over the actual batch; checked against a plain re-implementation."""
    data_path, X, y = random_data_file
    init_path, W, v = init_file
    lr, size, steps, seed = 0.05, 5, 7, 3
    cfg = sgd_file_config(data_path, init_path, lr=lr, size=size, steps=steps, seed=seed)
    run = twolayer.run(cfg, out=out)
    params, sizes = sgd_reference(Problem.from_config(load_config(cfg)), X, y, W, v, seed=seed, lr=lr, size=size,
                                  steps=steps)
    assert sizes == [5, 5, 2, 5, 5, 2, 5]
    np.testing.assert_allclose(run.final_params["W"], params["W"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(run.final_params["v"], params["v"], rtol=1e-12, atol=1e-15)


def test_sgd_seeds_in_a_batch_each_follow_their_own_permutations(out, random_data_file, init_file):
    """Three seeds in one batched run, 13 epochs (a new permutation every third step, batched through
    ``sgd``'s custom vmap rule, which draws them only when an epoch changes): each seed equals the plain
    re-implementation with its own key."""
    data_path, X, y = random_data_file
    init_path, W, v = init_file
    lr, size, steps, seeds = 0.05, 5, 38, [3, 4, 9]
    cfg = sgd_file_config(data_path, init_path, lr=lr, size=size, steps=steps, seeds=seeds)
    run = twolayer.run(cfg, out=out)
    problem = Problem.from_config(load_config(cfg))
    finals = []
    for i, seed in enumerate(seeds):
        params, _ = sgd_reference(problem, X, y, W, v, seed=seed, lr=lr, size=size, steps=steps)
        np.testing.assert_allclose(run.final_params["W"][i], params["W"], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(run.final_params["v"][i], params["v"], rtol=1e-12, atol=1e-15)
        finals.append(params["W"])
    assert not np.allclose(finals[0], finals[1])  # the seeds' permutations do differ


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


def test_sgd_batch_larger_than_n_is_warned_about(tmp_path, capsys):
    """A batch larger than the data is the full batch (the run is GD): a ``ConfigWarning`` names
    train.batch_size and n, and the command line prints it."""
    import warnings

    import pytest
    import yaml

    from twolayer.cli import main
    from twolayer.errors import ConfigWarning
    from twolayer.train import Simulation

    big = base_config(train={"method": "sgd", "lr": 0.05, "steps": 10, "batch_size": 100})
    with pytest.warns(ConfigWarning, match=r"train\.batch_size: is 100, more than the n = 2 samples"):
        Simulation(load_config(big))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigWarning)
        Simulation(load_config(base_config(train={"method": "sgd", "lr": 0.05, "steps": 10, "batch_size": 2})))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(big))
    assert main(["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "warning: train.batch_size: is 100, more than the n = 2 samples of the data" in err, err
