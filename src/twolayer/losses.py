"""Per-sample losses l(y, yhat) and their reduction over a data set.

All are written on the margin m = y * yhat where that is the natural variable, in forms that do
not overflow: logistic uses logaddexp; the exponential loss overflows only when the network has
already diverged (exp(-m) with m < -709), which the trainer reports as a divergence.

What the rest of the engine needs to know about a loss is a field of its record, never looked up by its
name: ``slope_at_zero`` (the early-phase speed of the theories), ``log_per_sample`` (the stable log form that
``flow_log`` and ``log_loss`` use, finite at log l = -1e4) and ``margin_of_log`` (its inverse, the link of the
smoothed margin). Adding a loss is one ``Loss`` here (and its docs and tests); ``tests/test_conformance.py``
checks every registered loss's declared facts against ``per_sample``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp

from twolayer.registry import Registry


@dataclass(frozen=True)
class Loss:
    """A registered loss: ``per_sample(y, f)`` and its doc; ``classification`` losses need labels +-1.

    ``slope_at_zero``: -dl/dyhat at yhat = 0 for y = 1 (for a loss of the margin q = y yhat, -l'(0)): the factor
    of the near-origin dynamics (logistic 1/2, exponential 1). ``log_per_sample(q)``: log l as a function of the
    margin q, stable where l underflows (None: the loss has none, and ``flow_log`` refuses it).
    ``margin_of_log(z)``: the margin q with log l(q) = z (the inverse of ``log_per_sample``; the link of the
    smoothed margin -l^-1(n L), Lyu & Li 2020; None where not given)."""

    name: str
    per_sample: Callable  # (y, yhat) -> [n]
    doc: str = ""
    classification: bool = False  # a loss of the margin y * yhat: labels must be -1 or +1
    slope_at_zero: float = 1.0
    log_per_sample: Callable | None = None  # q -> log l(q)
    margin_of_log: Callable | None = None  # z -> q with log l(q) = z


LOSSES: Registry[Loss] = Registry("loss.kind")
REDUCTIONS = ("sum", "mean")


def _exponential(y, yhat):
    """l = exp(-y yhat)  (Min et al. Table 1, 'exp')."""
    return jnp.exp(-y * yhat)


def _logistic(y, yhat):
    """l = log(1 + exp(-y yhat)), computed as logaddexp(0, -y yhat)."""
    return jnp.logaddexp(0.0, -y * yhat)


def _logistic2(y, yhat):
    """l = 2 log(1 + exp(-y yhat)), as 2 logaddexp(0, -y yhat) (Min et al. App. B: -dl/dyhat = y at
    yhat = 0, so Lemma 2 / eq. 9 holds, unlike plain logistic)."""
    return 2.0 * jnp.logaddexp(0.0, -y * yhat)


def _square(y, yhat):
    """l = (1/2)(y - yhat)^2."""
    return 0.5 * (y - yhat) ** 2


_SWITCH = 30.0


def log_logistic(q):
    """log log(1 + e^-q), stable for every q: log softplus(-q), and for q > 30 the tail -q + log(log1p(z)/z)
    with z = e^-q, i.e. -q - z/2 (error < z^2/8 < 1e-27); both branches are evaluated on masked inputs, so
    neither value nor gradient overflows."""
    big = q > _SWITCH
    q_small = jnp.where(big, 0.0, q)
    q_big = jnp.where(big, q, _SWITCH + 1.0)
    return jnp.where(big, -q_big - 0.5 * jnp.exp(-q_big), jnp.log(jnp.logaddexp(0.0, -q_small)))


def log_exponential(q):
    """log e^-q = -q."""
    return -q


def _logistic_margin_of_log(z):
    """q = -log(expm1(e^z)), with the tail -z - e^z / 2 below z = -20 (where expm1(e^z) = e^z (1 + e^z / 2))."""
    return -jnp.where(z < -20, z + 0.5 * jnp.exp(jnp.minimum(z, -20.0)),
                      jnp.log(jnp.expm1(jnp.exp(jnp.maximum(z, -20.0)))))


def _exponential_margin_of_log(z):
    """q = -z."""
    return -z


def _register(fn, **fields) -> None:
    name = fn.__name__.lstrip("_")
    LOSSES.register(name, Loss(name, fn, fn.__doc__, **fields))


_register(_exponential, classification=True, slope_at_zero=1.0, log_per_sample=log_exponential,
          margin_of_log=_exponential_margin_of_log)
_register(_logistic, classification=True, slope_at_zero=0.5, log_per_sample=log_logistic,
          margin_of_log=_logistic_margin_of_log)
_register(_logistic2, classification=True, slope_at_zero=1.0)
_register(_square, slope_at_zero=1.0)


def reduce_losses(per_sample, reduction: str, weights=None):
    """Sum or mean of per-sample losses; ``weights`` (0/1 mask) supports padded mini-batches."""
    if weights is None:
        total = jnp.sum(per_sample)
        count = per_sample.shape[0]
    else:
        total = jnp.sum(per_sample * weights)
        count = jnp.sum(weights)
    return total if reduction == "sum" else total / count
