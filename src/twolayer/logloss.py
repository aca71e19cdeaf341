"""Stable log-losses: log l(q) and log L for margin losses, finite down to log L = -1e4 and beyond.

The late phase of margin maximization has log L ~ -q_min ~ -1e3...-1e4, far below where L itself
underflows (e^-745). These functions never form L: each loss record's ``log_per_sample(q)``
(``twolayer.losses``: logistic, exponential) is log l(q) on the margin q = y f(x), and
``log_objective`` combines them by log-sum-exp (spec_001 §1.5):

- log L = logsumexp_i log l(q_i) - log n (mean) or logsumexp_i log l(q_i) (sum).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax.scipy.special import logsumexp


def margins(params, ctx, X=None, y=None):
    """q_i = y_i f(x_i)."""
    X = ctx.X if X is None else X
    y = ctx.y if y is None else y
    return y * ctx.predict(params, X)


def log_objective(params, ctx, reduction: str | None = None):
    """log L(theta) for the context's loss (``reduction`` defaults to the problem's)."""
    reduction = ctx.problem.reduction if reduction is None else reduction
    return log_loss_of_outputs(ctx.predict(params), ctx.y, ctx.problem.loss, reduction)


def log_loss_of_outputs(f, y, loss, reduction: str):
    """log L as a function of the outputs f_i = f(x_i): logsumexp_i log l(y_i f_i) (- log n for mean), for a
    ``Loss`` with a ``log_per_sample`` form."""
    logl = loss.log_per_sample(y * f)
    total = logsumexp(logl)
    return total - jnp.log(logl.shape[0]) if reduction == "mean" else total
