"""Two-layer networks as pure functions over parameter pytrees (neurons are rows).

- ``two_layer``:  f(x) = sum_j v_j act(w_j . x),                       params {"W": [h, d], "v": [h]}
- ``mean_field``: f(x) = (1/m) sum_i ||w_i||^2 act(w_i . x / ||w_i||), params {"W": [m, d]}
  (the mean-field parametrization of the multi-index paper, eq. (1)).

``time_scale`` multiplies the loss gradient in the dynamics. It is 1 for ``two_layer`` and m for
``mean_field``, whose time follows the multi-index paper's eq. (3):
dw_i/dt = -lambda w_i - m grad_{w_i} L, so that each particle moves at O(1) speed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import lax

from twolayer.numerics import safe_norm, unit_rows
from twolayer.registry import Registry


@dataclass(frozen=True)
class Net:
    """A network architecture: which parameters it has and how it maps inputs to outputs."""

    name: str
    param_names: tuple[str, ...]
    apply: Callable  # (params, X [n, d], activation) -> predictions [n]
    time_scale: Callable = lambda params: 1.0  # factor on grad L in the dynamics
    doc: str = ""
    # f depends on W only through the products X W' (no row norms), so input columns that are zero in
    # every sample can be dropped together with the matching columns of W (problem.support_arrays)
    inputs_via_products: bool = False
    # (params, activation) -> (c, U) with f(x) = sum_i c_i act(<U_i, x>), U_i unit (or zero) rows: the form
    # the exact population objectives integrate (twolayer.population); None: the net has no such form
    unit_neurons: Callable | None = None

    def __call__(self, params, X, activation):
        return self.apply(params, X, activation)


NETS: Registry[Net] = Registry("model.kind")


# Data sets with at least this many entries in X use ``_rows_dot_fast`` for the pre-activations.
ROWS_DOT_FAST_MIN_SIZE = 1 << 16


@jax.custom_vjp
def _rows_dot_fast(X, W):
    return X @ W.T


def _rows_dot_fwd(X, W):
    return X @ W.T, (X, W)


def _rows_dot_bwd(res, ct):
    # dL/dW = ct' X: XLA's CPU dot contracting the FIRST axis of both operands (what autodiff emits) runs
    # about 2x slower than a plain row-major product, so ct' is materialized first (the barrier stops XLA
    # from folding the transpose back into the dot). The outer barrier keeps the product's [h, d] row-major
    # layout: without it, a consumer that wants [d, h] (the scatter of Context.training_view's column
    # gather) makes layout assignment turn it back into the slow dot. Same sum over samples, possibly in
    # another order.
    X, W = res
    return ct @ W, lax.optimization_barrier(lax.optimization_barrier(ct.T) @ X)


_rows_dot_fast.defvjp(_rows_dot_fwd, _rows_dot_bwd)


def rows_dot(X, W):
    """Pre-activations X @ W' [n, h]. For large data (X.size >= ROWS_DOT_FAST_MIN_SIZE) with fewer neurons than
    input dimensions (h < d: transposing the [n, h] cotangent is cheap next to the product) a custom VJP
    makes the first-layer gradient ct' X a row-major product (1.4x faster GD steps at MNIST size, n=2000,
    d=784, h=50, on CPU; benchmarks/engine_ablation.py; the result may differ in the last bits; reverse mode
    only: jax.jvp / jacfwd through it raise). Otherwise (every toy and synthetic set, and the multi-index
    sizes m > d, where the transpose costs more than it saves) the plain product, bit for bit as before."""
    if X.size >= ROWS_DOT_FAST_MIN_SIZE and W.shape[-2] < X.shape[-1]:
        return _rows_dot_fast(X, W)
    return X @ W.T


def _two_layer(params, X, act):
    """f(x) = sum_j v_j act(<w_j, x>)  (Min et al. eq. 1; Lyu et al. eq. 1)."""
    return act(rows_dot(X, params["W"])) @ params["v"]


def _mean_field(params, X, act):
    """f(x) = (1/m) sum_i ||w_i||^2 act(<w_i, x> / ||w_i||)  (multi-index paper, eq. 1)."""
    W = params["W"]
    norms = safe_norm(W)
    inv = jnp.where(norms > 0, 1.0 / jnp.where(norms > 0, norms, 1.0), 0.0)
    pre = rows_dot(X, W) * inv
    return act(pre) @ (norms**2) / W.shape[0]


def _width(params):
    return float(params["W"].shape[0])


def _two_layer_unit_neurons(params, act):
    """c_j = v_j ||w_j||, U_j = w_j/||w_j||: exact for positively 1-homogeneous activations only."""
    if not act.homogeneous:
        raise NotImplementedError(
            f"the exact population loss of a two_layer net needs a positively 1-homogeneous activation; "
            f"{act.name!r} is not (use model.kind mean_field)")
    U, norms = unit_rows(params["W"])
    return params["v"] * norms, U


def _mean_field_unit_neurons(params, act):
    """c_i = ||w_i||^2 / m, U_i = w_i/||w_i|| (eq. 1 as written)."""
    U, norms = unit_rows(params["W"])
    return norms**2 / params["W"].shape[0], U


NETS.register("two_layer", Net("two_layer", ("W", "v"), _two_layer, doc=_two_layer.__doc__, inputs_via_products=True,
                               unit_neurons=_two_layer_unit_neurons))
NETS.register("mean_field", Net("mean_field", ("W",), _mean_field, time_scale=_width, doc=_mean_field.__doc__,
                                unit_neurons=_mean_field_unit_neurons))
