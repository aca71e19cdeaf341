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
import numpy as np

from twolayer.activations import Activation, make_activation
from twolayer.losses import LOSSES, Loss, reduce_losses
from twolayer.nets import NETS, Net
from twolayer.registry import Entry, Registry

@dataclass(frozen=True, kw_only=True)
class Objective(Entry):
    """A registered training objective: ``fn(params, ctx) -> L`` (``Entry``'s fields), plus what it is:
    ``population`` (an exact expectation over Gaussian inputs: needs a dataset kind with a population
    form), ``drops_zero_columns`` (it reads X only through ``Context.training_view``, so input columns
    that are zero in every sample may be left out), ``log_form`` (``twolayer.logloss.log_objective``
    is a stable log of it, which method flow_log integrates) and ``sample_sum`` (it is the sum or mean of
    the loss record's ``per_sample`` over the training sample and nothing else: the field the event-driven
    integrator, ``train/event_flow.py``, builds from the per-sample losses)."""

    population: bool = False
    drops_zero_columns: bool = False
    log_form: bool = False
    sample_sum: bool = False


OBJECTIVES: Registry[Objective] = Registry("objective")
CONTEXT: Registry[Callable] = Registry("context array")


def objective(name: str, *, needs: tuple[str, ...] = (), nets: tuple[str, ...] = (), **supports):
    """Decorator: register ``fn(params, ctx) -> L`` as the objective ``name`` (``supports``: the keyword
    fields of ``Objective``)."""

    def decorator(fn):
        OBJECTIVES.register(name, Objective(name=name, fn=fn, doc=(fn.__doc__ or "").strip(), needs=tuple(needs),
                                            nets=tuple(nets), **supports))
        return fn

    return decorator


def context_array(name: str):
    """Register ``fn(dataset, cfg) -> array`` as the provider of the context array ``name``: a constant
    derived from the data (x+, mu, the max-margin direction, ...) that the ``Context`` carries, computed
    once per run outside the compiled loop."""
    return CONTEXT.register(name)


@dataclass(frozen=True)
class Problem:
    """What is trained, static under jit: the net, the activation, the loss, its reduction and the
    objective's name.
    """

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


def data_errors(problem: Problem, dataset, data_params) -> list[tuple[str, str]]:
    """What makes a built dataset unusable for this problem, as ``(field, message)``: the labels of a
    classification loss (a loss of the margin y f(x)) must be -1 or +1."""
    if not problem.loss.classification:
        return []
    y = np.asarray(dataset.y)
    wrong = np.unique(y[(y != 1.0) & (y != -1.0)])
    if wrong.size == 0:
        return []
    field = ("data.path" if "path" in type(data_params).model_fields else
             "data.labels" if "labels" in type(data_params).model_fields else "data")
    shown = ", ".join(f"{v:g}" for v in wrong[:5]) + (", ..." if wrong.size > 5 else "")
    return [(field, f"y holds {shown}: loss.kind {problem.loss.name!r} is a classification loss of the margin "
                    f"y f(x) and needs labels -1 or +1 (or use loss.kind square for regression targets)")]


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
        return OBJECTIVES.get(self.problem.objective).fn(params, self)

    def training_view(self, params):
        """``(X, params)`` for the training loss: the inputs and first-layer columns restricted to the
        input coordinates that are nonzero in some sample, when the context holds that restriction
        (``support_arrays``), else unchanged. Exact: a zero column adds nothing to X W'; the gradient of
        a dropped column of W is zero (the gather's transpose scatters zeros)."""
        if "support" not in self.arrays:
            return self.X, params
        return self.arrays["X_support"], {**params, "W": params["W"][:, self.arrays["support"]]}


@objective("empirical", drops_zero_columns=True, log_form=True, sample_sum=True)
def empirical_objective(params, ctx: Context):
    """L(theta) = sum_i l(y_i, f(x_i)) (or the mean) on the training sample, through
    ``Context.training_view`` (zero input columns left out when the context says so).
    """
    X, params = ctx.training_view(params)
    return ctx.problem.empirical_loss(params, X, ctx.y)


ZERO_COLUMNS_MIN_FRACTION = 1 / 8  # drop zero input columns only when they are at least this share of d


def support_arrays(problem: Problem, X) -> dict:
    """``{"X_support": X[:, S], "support": S}`` with S the input columns that are nonzero in some sample,
    when the training loss may drop the others: empirical objective, a net that sees X only through
    X W' (``Net.inputs_via_products``), and at least 1/8 of the columns zero (MNIST 0/1: 278 of 784
    pixels, so both products of a GD step shrink by 35%). Otherwise ``{}``."""
    if not OBJECTIVES.get(problem.objective).drops_zero_columns or not problem.net.inputs_via_products:
        return {}
    X = np.asarray(X)
    support = np.flatnonzero(np.any(X != 0, axis=0))
    if support.size == 0 or support.size > (1 - ZERO_COLUMNS_MIN_FRACTION) * X.shape[1]:
        return {}
    return {"X_support": X[:, support], "support": support}


def make_context(problem: Problem, arrays: dict, dtype) -> Context:
    """Floating arrays in ``dtype``; integer arrays (indices such as ``support``) keep their type."""

    def cast(v):
        return jnp.asarray(v) if jnp.issubdtype(jnp.result_type(v), jnp.integer) else jnp.asarray(v, dtype=dtype)

    return Context({k: cast(v) for k, v in arrays.items()}, problem)
