"""Numerical helpers shared across the package: norms that are safe to differentiate, the squared
norm of a parameter pytree, and a while_loop that vmap batches in one pass."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


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


def while_loop(cond, body, init):
    """``lax.while_loop(cond, body, init)`` with the initial carry batched as the predicate is: the same loop and
    values, cheaper to trace under ``vmap``.

    vmap batches a while_loop by a fixpoint: it batches the body again for each carry entry that turns batched
    only after an iteration, then once more, and a nested loop is batched again on every pass of the loop around
    it. When the predicate is batched (a per-seed stopping rule) vmap batches every entry of the carry in the end
    anyway, so batching them at the start (``where(pred, x, x)``: the broadcast vmap adds anyway, and a select)
    reaches the fixpoint in one pass with the same loop and the same values. An unbatched predicate leaves the
    carry as it is. The selects are not always folded away, so this is for loops entered once per call, not
    inside a step: the two outer loops of the event-driven flow (``train/event_flow.py``) halve its batching
    passes (90 -> 45, 3.8 s -> 1.1 s of tracing on lyu2021/symmetric's quick flow_log run)."""
    first = cond(init)
    return lax.while_loop(cond, body, jax.tree_util.tree_map(lambda x: jnp.where(first, x, x), init))
