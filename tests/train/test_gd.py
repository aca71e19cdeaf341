"""GD against an independent plain-numpy implementation, and the exact GD imbalance identity."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import twolayer
from conftest import base_config
from twolayer.config import load_config
from twolayer.problem import Problem


def numpy_gd(X, y, W, v, *, loss, reduction, lr, steps, layers="both", weight_decay=0.0):
    """Reference GD for f(x) = sum_j v_j relu(w_j.x), written without JAX; returns losses per step."""
    n = X.shape[0]
    scale = 1.0 if reduction == "sum" else 1.0 / n
    losses = []
    for k in range(steps + 1):
        Z = X @ W.T
        A = np.maximum(Z, 0.0)
        f = A @ v
        m = y * f
        if loss == "exponential":
            values, dl_df = np.exp(-m), -y * np.exp(-m)
        elif loss == "logistic":
            values, dl_df = np.logaddexp(0.0, -m), -y / (1.0 + np.exp(m))
        else:
            values, dl_df = 0.5 * (y - f) ** 2, f - y
        losses.append(scale * values.sum())
        if k == steps:
            break
        r = scale * dl_df  # dL/df_i
        gv = A.T @ r
        gW = ((r[:, None] * (Z > 0)) * v[None, :]).T @ X
        W = W - lr * (gW + weight_decay * W)
        if layers == "both":
            v = v - lr * (gv + weight_decay * v)
    return np.array(losses), W, v


@pytest.mark.parametrize(("loss", "reduction", "layers", "weight_decay"), [
    ("exponential", "mean", "both", 0.0),
    ("logistic", "sum", "both", 0.0),
    ("square", "mean", "first", 0.0),
    ("exponential", "sum", "both", 0.1),
])
def test_gd_matches_numpy_reference(out, random_data_file, init_file, loss, reduction, layers, weight_decay):
    data_path, X, y = random_data_file
    init_path, W0, v0 = init_file
    cfg = base_config(
        data={"kind": "file", "path": str(data_path)},
        model={"kind": "two_layer", "activation": "relu"},
        init={"kind": "file", "path": str(init_path)},
        loss={"kind": loss, "reduction": reduction},
        train={"method": "gd", "lr": 0.01, "steps": 200, "layers": layers, "weight_decay": weight_decay},
        observe={"schedule": "every", "every": 1, "metrics": ["loss"]},
    )
    run = twolayer.run(cfg, out=out)
    ref_losses, W, v = numpy_gd(X, y, W0, v0, loss=loss, reduction=reduction, lr=0.01, steps=200,
                                layers=layers, weight_decay=weight_decay)
    np.testing.assert_allclose(run.trajectory["loss"], ref_losses, rtol=1e-10)
    np.testing.assert_allclose(run.final_params["W"], W, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(run.final_params["v"], v, rtol=1e-10, atol=1e-14)
    if layers == "first":
        np.testing.assert_array_equal(run.final_params["v"], v0)


def test_gd_imbalance_identity_is_exact(out, tmp_path, random_data_file, init_file):
    """Delta_j(k+1) - Delta_j(k) = lr^2 (g_v^2 - ||g_w||^2) for every step of GD (Min et al. §1.4)."""
    data_path, X, y = random_data_file
    init_path, W, v = init_file
    lr = 0.05
    cfg = base_config(data={"kind": "file", "path": str(data_path)}, model={"kind": "two_layer", "activation": "relu"},
                      loss={"kind": "exponential", "reduction": "mean"},
                      train={"method": "gd", "lr": lr, "steps": 1}, observe={"schedule": "at", "at": [0]})
    problem = Problem.from_config(load_config({**cfg, "init": {"kind": "file", "path": str(init_path)}}))
    grad = jax.grad(lambda p: problem.empirical_loss(p, X, y))
    for k in range(5):
        path = tmp_path / f"init{k}.npz"
        np.savez(path, W=W, v=v)
        run = twolayer.run({**cfg, "init": {"kind": "file", "path": str(path)}}, out=out)
        g = grad({"W": W, "v": v})
        predicted = lr**2 * (np.asarray(g["v"]) ** 2 - np.sum(np.asarray(g["W"]) ** 2, axis=1))
        W1, v1 = run.final_params["W"], run.final_params["v"]
        change = (v1**2 - np.sum(W1**2, axis=1)) - (v**2 - np.sum(W**2, axis=1))
        np.testing.assert_allclose(change, predicted, rtol=1e-9, atol=1e-12)
        assert np.max(np.abs(predicted)) > 1e-6  # the identity is not trivially 0 = 0
        W, v = W1, v1


@pytest.mark.parametrize(("activation", "labels"), [("relu", [1, 1]), ("linear", [1, -1])])
def test_flow_conserves_imbalance_to_solver_tolerance(out, activation, labels):
    cfg = base_config(seeds=3, data={"kind": "two_points", "angle": 1.4708, "labels": labels},
                      model={"activation": activation, "width": 8}, init={"kind": "gaussian", "scale": 1e-3},
                      loss={"kind": "exponential", "reduction": "sum"},
                      train={"method": "flow", "time": 20.0, "rtol": 1e-9, "atol": 1e-12},
                      observe={"points": 20, "metrics": ["loss", "imbalance"]})
    run = twolayer.run(cfg, out=out)
    delta = run.trajectory["imbalance"]  # [S, T, h]
    drift = np.max(np.abs(delta - delta[:, :1]))
    assert run.status == "completed" and drift < 1e-10, drift
    loss = run.trajectory["loss"]
    assert np.all(np.diff(loss, axis=1) <= 1e-12)  # gradient flow never increases the loss
    assert loss[:, -1].max() < 0.05 * loss[:, 0].min()  # and it actually trains


def test_gd_imbalance_drift_is_second_order_in_lr(out):
    """Over a fixed time, halving lr roughly halves the accumulated drift (sum of lr^2 terms)."""
    drifts = []
    for lr in (0.02, 0.01):
        cfg = base_config(train={"method": "gd", "lr": lr, "time": 4.0}, observe={"points": 5, "metrics": ["imbalance"]})
        d = twolayer.run(cfg, out=out).trajectory["imbalance"]
        drifts.append(np.max(np.abs(d[-1] - d[0])))
    assert 1.6 < drifts[0] / drifts[1] < 2.5, drifts
