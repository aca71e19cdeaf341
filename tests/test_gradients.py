"""Gradients of every net x loss x activation against central finite differences."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from twolayer.activations import ACTIVATIONS, make_activation
from twolayer.losses import LOSSES
from twolayer.nets import NETS
from twolayer.problem import Problem

rng = np.random.default_rng(0)
X = jnp.asarray(rng.normal(size=(7, 4)))
Y = jnp.asarray(np.where(rng.random(7) < 0.5, -1.0, 1.0))
PARAMS = {"W": jnp.asarray(0.7 * rng.normal(size=(5, 4))), "v": jnp.asarray(0.7 * rng.normal(size=5))}


def activation_specs():
    return [{"name": "leaky_relu", "slope": 0.2} if n == "leaky_relu" else n for n in ACTIVATIONS.names()]


@pytest.mark.parametrize(("net", "loss", "act", "reduction"),
                         list(itertools.product(NETS.names(), LOSSES.names(), activation_specs(), ["sum", "mean"])))
def test_gradient_matches_central_differences(net, loss, act, reduction):
    problem = Problem(NETS.get(net), make_activation(act), LOSSES.get(loss), reduction)
    params = {k: PARAMS[k] for k in problem.net.param_names}

    def objective(p):
        return problem.empirical_loss(p, X, Y)

    grads = jax.grad(objective)(params)
    h = 1e-6
    for name, value in params.items():
        flat = np.asarray(value).ravel()
        numeric = np.empty_like(flat)
        for i in range(flat.size):
            plus, minus = flat.copy(), flat.copy()
            plus[i] += h
            minus[i] -= h
            p_plus = {**params, name: jnp.asarray(plus.reshape(value.shape))}
            p_minus = {**params, name: jnp.asarray(minus.reshape(value.shape))}
            numeric[i] = (objective(p_plus) - objective(p_minus)) / (2 * h)
        np.testing.assert_allclose(np.asarray(grads[name]).ravel(), numeric, rtol=1e-6, atol=1e-8,
                                   err_msg=f"d/d{name} for {net}/{loss}/{act}/{reduction}")


def test_relu_subgradient_at_zero_is_zero():
    """A neuron exactly orthogonal to a data point gets no gradient from it (sigma'(0) = 0)."""
    problem = Problem(NETS.get("two_layer"), make_activation("relu"), LOSSES.get("exponential"), "sum")
    Xz = jnp.array([[1.0, 0.0]])
    params = {"W": jnp.array([[0.0, 1.0]]), "v": jnp.array([1.0])}
    g = jax.grad(lambda p: problem.empirical_loss(p, Xz, jnp.array([1.0])))(params)
    assert float(jnp.abs(g["W"]).max()) == 0.0 and float(jnp.abs(g["v"]).max()) == 0.0
