"""Observables: the registry (``twolayer.observe.registry``) and the modules that register them.

An observable is a pure function ``(params, ctx) -> {name: array}`` evaluated inside the compiled loop
at observation times, vmapped over seeds. Context arrays they read are provided by
``twolayer.problem.CONTEXT``.
"""

from twolayer.observe.registry import (  # noqa: F401
    AXES, OBSERVABLES, Observable, context_arrays, evaluate, observable, output_dims,
)
from twolayer.problem import CONTEXT, context_array  # noqa: F401
from twolayer.observe import basic  # noqa: F401  (registers the built-in observables)
from twolayer.observe import multi_index  # noqa: F401  (multi-index paper observables)
from twolayer.observe import alignment  # noqa: F401  (Min et al. 2024: cones, alignment, spectra, events)
from twolayer.observe import margin  # noqa: F401  (margin diagnostics, Lyu et al. 2021)
from twolayer.observe import planes  # noqa: F401  (neuron directions on reference planes, for the explorer)
from twolayer.observe import order_parameters  # noqa: F401  (online SGD: Q, R, T, eps_g)
