"""The static description of what is trained (net, activation, loss, objective) and the
``Context`` that observables and objectives receive inside the compiled loop.

``Problem`` is hashable and static under ``jax.jit``; ``Context`` is a pytree whose array leaves
(data and precomputed quantities) are passed as arguments, never baked in as constants, so runs
that differ only in values reuse one compiled program.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp

from twolayer.activations import Activation, make_activation
from twolayer.losses import LOSSES, Loss, reduce_losses
from twolayer.nets import NETS, Net
from twolayer.registry import Registry

OBJECTIVES: Registry[Callable] = Registry("objective")


@dataclass(frozen=True)
class Problem:
    net: Net
    activation: Activation
    loss: Loss
    reduction: str
    objective: str = "empirical"

    @classmethod
    def from_config(cls, cfg) -> Problem:
        return cls(
            net=NETS.get(cfg.model.kind),
            activation=make_activation(cfg.model.activation),
            loss=LOSSES.get(cfg.loss.kind),
            reduction=cfg.loss.reduction,
            objective=cfg.objective,
        )

    def predict(self, params, X):
        return self.net.apply(params, X, self.activation)

    def empirical_loss(self, params, X, y, weights=None):
        """L = sum_i l(y_i, f(x_i)) (or the mean), optionally over a masked mini-batch."""
        return reduce_losses(self.loss.per_sample(y, self.predict(params, X)), self.reduction, weights)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Context:
    """What observables see: ``arrays`` (X, y and derived arrays) and the static ``problem``."""

    arrays: dict
    problem: Problem = field(metadata={"static": True})

    @property
    def X(self):
        return self.arrays["X"]

    @property
    def y(self):
        return self.arrays["y"]

    def predict(self, params, X=None):
        return self.problem.predict(params, self.X if X is None else X)

    def objective(self, params):
        """The training objective L(theta) that the trainer descends."""
        return OBJECTIVES.get(self.problem.objective)(params, self)


@OBJECTIVES.register("empirical")
def empirical_objective(params, ctx: Context):
    return ctx.problem.empirical_loss(params, ctx.X, ctx.y)


def make_context(problem: Problem, arrays: dict, dtype) -> Context:
    return Context({k: jnp.asarray(v, dtype=dtype) for k, v in arrays.items()}, problem)
