"""Built-in observables: loss, accuracy, neuron norms, output weights, imbalance, parameter norm."""

from __future__ import annotations

import jax.numpy as jnp

from twolayer.numerics import safe_norm, squared_norm
from twolayer.observe.registry import observable


@observable("loss")
def loss(params, ctx):
    """The training objective L(theta) (the quantity gradient descent decreases)."""
    return ctx.objective(params)


@observable("accuracy")
def accuracy(params, ctx):
    """Fraction of training points with sign(f(x_i)) = sign(y_i) (f = 0 counts as wrong)."""
    return jnp.mean((jnp.sign(ctx.predict(params)) == jnp.sign(ctx.y)).astype(ctx.X.dtype))


@observable("w_norm", per_neuron=True)
def w_norm(params, ctx):
    """||w_j|| for every neuron j."""
    return safe_norm(params["W"])


@observable("v", nets=("two_layer",), per_neuron=True)
def v(params, ctx):
    """Output weights v_j."""
    return params["v"]


@observable("imbalance", nets=("two_layer",), per_neuron=True)
def imbalance(params, ctx):
    """Delta_j = v_j^2 - ||w_j||^2, conserved by gradient flow (Min et al. §1.4; Du et al. 2018)."""
    return params["v"] ** 2 - jnp.sum(params["W"] ** 2, axis=1)


@observable("param_norm_sq")
def param_norm_sq(params, ctx):
    """||theta||^2 = sum of squares of every parameter."""
    return squared_norm(params)
