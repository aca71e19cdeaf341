"""Method ``gd``: full-batch gradient descent, theta <- theta - lr (s grad L + weight_decay theta)."""

from __future__ import annotations

from typing import Literal

import jax

from twolayer.train.methods import DiscreteParams, descent_direction, discrete_advance, register_method


class GDParams(DiscreteParams):
    """``lr`` and ``steps`` (or ``time``: t = lr * k), ``layers``, ``weight_decay``."""

    method: Literal["gd"] = "gd"


@register_method("gd", GDParams, doc="full-batch gradient descent: theta <- theta - lr grad L")
def build_gd(train: GDParams, shape):
    """One GD step per iteration: theta + lr * descent_direction(theta)."""

    def step(p, k, aux, key, ctx, hyper):
        d = descent_direction(ctx.objective, p, train, hyper, ctx.problem.net)
        return jax.tree_util.tree_map(lambda x, dx: x + hyper["lr"] * dx, p, d), aux

    return discrete_advance(step, lambda start, key, ctx: (), absorbing=True)
