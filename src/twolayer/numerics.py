"""Numerical helpers shared across the package: norms that are safe to differentiate, and the squared
norm of a parameter pytree."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def safe_norm(W, axis=-1, keepdims=False):
    """Euclidean norms along ``axis`` (rows by default) with a zero, not NaN, gradient at the origin.

    Arguments: ``W`` an array; ``axis`` and ``keepdims`` as in ``jnp.sum``.
    Returns: ``sqrt(sum(W**2, axis))``, 0 where that sum is 0.
    """
    sq = jnp.sum(W * W, axis=axis, keepdims=keepdims)
    positive = sq > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, sq, 1.0)), 0.0)


def unit_rows(W):
    """``(U, norms)``: the rows of ``W`` divided by their norms (zero rows stay zero), and the norms."""
    norms = safe_norm(W)
    inv = jnp.where(norms > 0, 1.0 / jnp.where(norms > 0, norms, 1.0), 0.0)
    return W * inv[:, None], norms


def squared_norm(tree):
    """||theta||^2: the sum of squares of every array leaf of a parameter pytree (e.g. {"W", "v"})."""
    return sum(jnp.sum(leaf**2) for leaf in jax.tree_util.tree_leaves(tree))
