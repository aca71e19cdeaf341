"""Nets: gradients of every net x loss x activation against central finite differences, and the fast
row-major first-layer product (``rows_dot``) against autodiff."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer  # noqa: F401  (float64)
from twolayer import nets
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


def _data(n, d, h, seed=0):
    rng = np.random.default_rng(seed)
    X = jnp.asarray(rng.standard_normal((n, d)) / np.sqrt(d))
    y = jnp.asarray(rng.choice([-1.0, 1.0], size=n))
    params = {"W": jnp.asarray(0.3 * rng.standard_normal((h, d))), "v": jnp.asarray(0.3 * rng.standard_normal(h))}
    return X, y, params


def _loss(net, act):
    return lambda p, X, y: jnp.mean(jnp.exp(-y * nets.NETS.get(net)(p, X, act)))


@pytest.mark.parametrize("net", ["two_layer", "mean_field"])
def test_fast_rows_dot_gradient_equals_autodiff(net):
    """Large data take the custom-VJP path; its gradient (also batched over seeds) equals plain autodiff."""
    act = make_activation("relu")
    X, y, p = _data(1024, 96, 7)  # X.size = 98,304 >= 2^16 and h = 7 < d = 96: the fast path
    assert X.size >= nets.ROWS_DOT_FAST_MIN_SIZE
    assert "custom_vjp" in str(jax.make_jaxpr(nets.rows_dot)(X, p["W"]))
    assert "custom_vjp" not in str(jax.make_jaxpr(nets.rows_dot)(X, jnp.ones((200, 96))))  # h > d: plain
    if net == "mean_field":
        p = {"W": p["W"]}
    plain = _loss(net, act)

    def reference(q, X, y):  # the same loss with X @ W' written out (no custom VJP)
        W = q["W"]
        if net == "two_layer":
            return jnp.mean(jnp.exp(-y * (act(X @ W.T) @ q["v"])))
        norms = jnp.linalg.norm(W, axis=1)
        return jnp.mean(jnp.exp(-y * (act((X @ W.T) / norms) @ norms**2 / W.shape[0])))

    g_fast = jax.jit(jax.grad(plain))(p, X, y)
    g_ref = jax.jit(jax.grad(reference))(p, X, y)
    for k in p:
        np.testing.assert_allclose(g_fast[k], g_ref[k], rtol=1e-12, atol=1e-15)
    batched = jax.tree_util.tree_map(lambda a: jnp.stack([a, 2 * a]), p)
    gb = jax.jit(jax.vmap(jax.grad(plain), in_axes=(0, None, None)))(batched, X, y)
    g2 = jax.grad(reference)(jax.tree_util.tree_map(lambda a: 2 * a, p), X, y)
    for k in p:
        np.testing.assert_allclose(gb[k][0], g_ref[k], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(gb[k][1], g2[k], rtol=1e-12, atol=1e-15)
    # the input cotangent is right too (d/dX of the loss)
    gx = jax.grad(plain, argnums=1)(p, X, y)
    np.testing.assert_allclose(gx, jax.grad(reference, argnums=1)(p, X, y), rtol=1e-12, atol=1e-15)


def test_small_data_keep_the_plain_product_bit_for_bit():
    """Below the size threshold rows_dot is X @ W' itself: forward mode works and results are identical."""
    X, y, p = _data(20, 2, 50)
    assert X.size < nets.ROWS_DOT_FAST_MIN_SIZE
    np.testing.assert_array_equal(nets.rows_dot(X, p["W"]), X @ p["W"].T)
    act = make_activation("relu")
    f = lambda W: nets.NETS.get("two_layer")({"W": W, "v": p["v"]}, X, act)  # noqa: E731
    _, tangent = jax.jvp(f, (p["W"],), (jnp.ones_like(p["W"]),))  # raises on a custom_vjp
    assert tangent.shape == (20,)
