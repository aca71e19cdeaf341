"""Method ``sgd``: mini-batch SGD, reshuffled each epoch (seeded), the last partial batch kept."""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
from jax import lax
from jax.custom_batching import custom_vmap
from pydantic import Field, model_validator

from twolayer.fields import field_errors
from twolayer.train.methods import DiscreteParams, descent_direction, discrete_advance, register_method


class SGDParams(DiscreteParams):
    """GD's parameters and ``batch_size`` (a batch larger than n is the full batch)."""

    method: Literal["sgd"] = "sgd"
    batch_size: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _needs_batch_size(self):
        if self.batch_size is None:
            raise field_errors(type(self).__name__, [("batch_size", "is required for method sgd")])
        return self

    def data_warnings(self, dataset) -> list[tuple[str, str]]:
        if self.batch_size <= dataset.n:
            return []
        return [("train.batch_size", f"is {self.batch_size}, more than the n = {dataset.n} samples of the data: every "
                                     f"step uses all {dataset.n} (full-batch gradient descent, not SGD)")]


@register_method("sgd", SGDParams, doc="mini-batch SGD, reshuffled each epoch (seeded), last partial batch kept")
def build_sgd(train: SGDParams, shape):
    """Epoch e uses the permutation of ``fold_in(key, e)``; step k takes batch k mod (batches per epoch),
    masking the padding of the last partial batch (drop_last=False)."""
    n = shape.X.shape[0]
    size = min(train.batch_size, n)
    per_epoch = -(-n // size)  # the last partial batch is kept (drop_last=False)
    padded = per_epoch * size

    def permutation(epoch, key):
        perm = jax.random.permutation(jax.random.fold_in(key, epoch), n)
        return jnp.concatenate([perm, jnp.zeros(padded - n, perm.dtype)])

    @custom_vmap
    def refreshed(stale, epoch, key, perm):
        """``perm``, or epoch's permutation when ``stale`` (a new epoch began)."""
        return lax.cond(stale, lambda: permutation(epoch, key), lambda: perm)

    @refreshed.def_vmap
    def refreshed_batched(axis_size, in_batched, stale, epoch, key, perm):
        """Over batched seeds the step counter is batched too, and a cond on a batched predicate becomes a
        select that draws every seed's permutation at every step (8x the step time at n = 800, 2 seeds).
        Draw them only at steps where some seed's epoch changed; the same values, so the same bits."""
        def batched(x, b):
            return x if b else jnp.broadcast_to(x, (axis_size, *jnp.shape(x)))

        stale, epoch, perm = (batched(x, b) for x, b in zip((stale, epoch, perm), in_batched[:2] + in_batched[3:]))
        draw = jax.vmap(permutation, in_axes=(0, 0 if in_batched[2] else None))
        out = lax.cond(jnp.any(stale), lambda: jnp.where(stale[:, None], draw(epoch, key), perm), lambda: perm)
        return out, True

    def init_aux(start, key, ctx):
        epoch = start // per_epoch
        return permutation(epoch, key), epoch

    def step(p, k, aux, key, ctx, hyper):
        epoch, position = k // per_epoch, k % per_epoch
        perm, perm_epoch = aux
        perm = refreshed(epoch != perm_epoch, epoch, key, perm)
        idx = lax.dynamic_slice(perm, (position * size,), (size,))
        mask = (position * size + jnp.arange(size) < n).astype(ctx.X.dtype)
        yb = ctx.y[idx]

        def batch_loss(q):
            X, q = ctx.training_view(q)
            return ctx.problem.empirical_loss(q, X[idx], yb, mask)

        d = descent_direction(batch_loss, p, train, hyper, ctx.problem.net)
        return jax.tree_util.tree_map(lambda x, dx: x + hyper["lr"] * dx, p, d), (perm, epoch)

    return discrete_advance(step, init_aux, absorbing=True)
