"""Stable log-losses: log l(q) and log L for margin losses, finite down to log L = -1e4 and beyond.

The late phase of margin maximization has log L ~ -q_min ~ -1e3...-1e4, far below where L itself
underflows (e^-745). These functions never form L: ``log_per_sample[name](q)`` is log l(q) on the
margin q = y f(x), and ``log_objective`` combines them by log-sum-exp (spec_001 §1.5):

- logistic: log l(q) = log softplus(-q), and for q > 30, log l(q) = -q + log(log1p(z)/z) with
  z = e^-q, i.e. -q - z/2 (error < z^2/8 < 1e-27); branches are evaluated on masked inputs so
  neither value nor gradient overflows;
- exponential: log l(q) = -q exactly;
- log L = logsumexp_i log l(q_i) - log n (mean) or logsumexp_i log l(q_i) (sum).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax.scipy.special import logsumexp

from twolayer.registry import Registry

LOG_LOSSES: Registry = Registry("loss.kind with a stable log form")

_SWITCH = 30.0


@LOG_LOSSES.register("logistic")
def log_logistic(q):
    """log log(1 + e^-q), stable for every q (tail -q - e^-q / 2 for q > 30)."""
    big = q > _SWITCH
    q_small = jnp.where(big, 0.0, q)
    q_big = jnp.where(big, q, _SWITCH + 1.0)
    return jnp.where(big, -q_big - 0.5 * jnp.exp(-q_big), jnp.log(jnp.logaddexp(0.0, -q_small)))


@LOG_LOSSES.register("exponential")
def log_exponential(q):
    """log e^-q = -q."""
    return -q


def margins(params, ctx, X=None, y=None):
    """q_i = y_i f(x_i)."""
    X = ctx.X if X is None else X
    y = ctx.y if y is None else y
    return y * ctx.predict(params, X)


def log_objective(params, ctx, reduction: str | None = None):
    """log L(theta) for the context's loss (``reduction`` defaults to the problem's)."""
    reduction = ctx.problem.reduction if reduction is None else reduction
    return log_loss_of_outputs(ctx.predict(params), ctx.y, ctx.problem.loss.name, reduction)


def log_loss_of_outputs(f, y, loss: str, reduction: str):
    """log L as a function of the outputs f_i = f(x_i): logsumexp_i log l(y_i f_i) (- log n for mean)."""
    logl = LOG_LOSSES.get(loss)(y * f)
    total = logsumexp(logl)
    return total - jnp.log(logl.shape[0]) if reduction == "mean" else total
