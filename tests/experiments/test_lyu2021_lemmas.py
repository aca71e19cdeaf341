"""Engine-level checks of Lemmas B.9, B.15, B.16 and B.17 (Lyu et al. 2021, App. B) on one small event-driven
flow_log run: an unbalanced start (Gaussian-like values) with one neuron exactly zero, on the 2-D symmetric data."""

from __future__ import annotations

import numpy as np
import pytest

import twolayer
from twolayer.claims.runs import run_dataset
from twolayer.papers.lyu2021._shared import base_config, flow_train, groups_data, values_init
from twolayer.theory.kkt import margins_jacobian

ALPHA = 0.2
W0 = np.array([[0.3, -0.2], [-0.25, 0.1], [0.0, 0.0], [0.1, 0.35]])
A0 = np.array([0.1, -0.4, 0.0, 0.2])  # unbalanced: ||w_k|| != |a_k|; neuron 2 is zero


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cfg = base_config(groups_data(), 4, values_init(W0, A0), flow_train(60.0), ["neuron_weights", "v", "log_loss"], 400)
    return twolayer.run(cfg, out=tmp_path_factory.mktemp("lemmas"))


def params(run):
    return np.asarray(run.trajectory["neuron_weights"]), np.asarray(run.trajectory["v"])


def test_lemma_b17_a_zero_neuron_stays_zero(run):
    W, a = params(run)
    assert np.all(W[:, 2] == 0.0) and np.all(a[:, 2] == 0.0)
    assert np.all(np.linalg.norm(W[-1, [0, 1, 3]], axis=1) > 1.0)  # the others grew


def test_lemma_b16_balancedness_conserved(run):
    W, a = params(run)
    beta = np.sum(W**2, axis=2) - a**2  # ||w_k||^2 - a_k^2
    scale = np.sum(W[-1] ** 2) + np.sum(a[-1] ** 2)
    assert np.max(np.abs(beta - beta[0])) <= 1e-5 * scale  # rtol 1e-6 of ||theta||^2 per step, accumulated


def test_lemma_b9_balanced_at_the_limit_direction(run):
    """(||w_k|| - |a_k|) / ||theta|| -> 0 along the flow (KKT-margin directions are balanced), from an unbalanced
    start: the difference is fixed by B.16 while ||theta|| grows."""
    W, a = params(run)
    norm = np.sqrt(np.sum(W**2, axis=(1, 2)) + np.sum(a**2, axis=1))
    gap = np.max(np.abs(np.linalg.norm(W, axis=2) - np.abs(a)), axis=1) / norm
    assert gap[0] > 0.1 and gap[-1] < 1e-2 and gap[-1] < gap[0] / 30


def test_lemma_b15_energy_identity(run):
    """-dL/dt = ||dtheta/dt||^2 = ||grad L||^2: L(0) - L(T) equals the integral of ||grad L||^2 dt (trapezoid on the
    recorded path, t = expm1(tau)) over the early part of the run."""
    data = run_dataset(run)
    W, a = params(run)
    t = np.expm1(np.asarray(run.trajectory["t"]))
    keep = t <= 30.0
    grads, losses = [], []
    for Wk, ak in zip(W[keep], a[keep]):
        theta = np.concatenate([Wk.ravel(), ak])
        q = data.y * (np.maximum(data.X @ Wk.T, ALPHA * (data.X @ Wk.T)) @ ak)
        weights = 1.0 / (1.0 + np.exp(q))  # -l'(q) for the logistic loss
        J = margins_jacobian(theta, data.X, data.y, ALPHA, 4)
        grads.append(np.sum((-(weights @ J) / len(q)) ** 2))
        losses.append(np.mean(np.log1p(np.exp(-q))))
    tk = t[keep]
    integral = float(np.sum(0.5 * (np.array(grads[1:]) + np.array(grads[:-1])) * np.diff(tk)))
    drop = losses[0] - losses[-1]
    assert drop > 0.1 and integral == pytest.approx(drop, rel=2e-3)
