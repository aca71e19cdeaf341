"""Per-sample losses l(y, yhat) and their reduction over a data set.

All are written on the margin m = y * yhat where that is the natural variable, in forms that do
not overflow: logistic uses logaddexp; the exponential loss overflows only when the network has
already diverged (exp(-m) with m < -709), which the trainer reports as a divergence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp

from twolayer.registry import Registry


@dataclass(frozen=True)
class Loss:
    """A registered loss: ``per_sample(y, f)`` and its doc; ``classification`` losses need labels +-1."""

    name: str
    per_sample: Callable  # (y, yhat) -> [n]
    doc: str = ""
    classification: bool = False  # a loss of the margin y * yhat: labels must be -1 or +1


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


for _fn in (_exponential, _logistic, _logistic2, _square):
    _name = _fn.__name__.lstrip("_")
    LOSSES.register(_name, Loss(_name, _fn, _fn.__doc__, classification=_fn is not _square))


def reduce_losses(per_sample, reduction: str, weights=None):
    """Sum or mean of per-sample losses; ``weights`` (0/1 mask) supports padded mini-batches."""
    if weights is None:
        total = jnp.sum(per_sample)
        count = per_sample.shape[0]
    else:
        total = jnp.sum(per_sample * weights)
        count = jnp.sum(weights)
    return total if reduction == "sum" else total / count
