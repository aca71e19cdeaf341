"""Order parameters of a two-layer student against its teacher (Saad & Solla 1995; Goldt et al. 2019), so that
SGD runs and the order-parameter ODEs (``twolayer.theory.online_sgd``) are drawn on the same axes.

In twolayer's parametrization (f = sum_k v_k g(w_k . x), teacher y = sum_n v*_n g(w*_n . x), the context arrays
``target_dirs`` w* and ``target_coefs`` v*): Q = w w' [K, K], R = w w*' [K, M], T = w* w*' [M, M] (Goldt et al.'s
W W' / d, ...). ``eps_g`` is the generalization error (1/2) E[(f - y_noiseless)^2] of isotropic Gaussian inputs
computed from them with the closed-form integrals (``twolayer.theory.gaussian_integrals``; activations erf,
relu, abs, linear).
"""

from __future__ import annotations

from twolayer.observe.registry import observable
from twolayer.theory.gaussian_integrals import INTEGRALS
from twolayer.theory.online_sgd import generalization_error

TEACHER = ("target_dirs", "target_coefs")


@observable("Q", nets=("two_layer",), dims=("neuron", "neuron2"))
def student_overlaps(params, ctx):
    """Q = w w' [K, K] (Goldt et al.'s W W' / d)."""
    return params["W"] @ params["W"].T


@observable("R", nets=("two_layer",), needs=TEACHER, dims=("neuron", "direction"))
def teacher_overlaps(params, ctx):
    """R = w w*' [K, M] (Goldt et al.'s W W*' / d)."""
    return params["W"] @ ctx.arrays["target_dirs"].T


@observable("T", nets=("two_layer",), needs=TEACHER, dims=("direction", "direction2"))
def teacher_gram(params, ctx):
    """T = w* w*' [M, M], the teacher's overlaps (constant; recorded so that a run holds every order parameter)."""
    Ws = ctx.arrays["target_dirs"]
    return Ws @ Ws.T


@observable("eps_g", nets=("two_layer",), needs=TEACHER)
def eps_g(params, ctx):
    """eps_g = (1/2) c' I2(Omega) c, c = (v, -v*), Omega = [[Q, R], [R', T]] (Goldt et al. 2019, eq. (4))."""
    name = ctx.problem.activation.name
    if name not in INTEGRALS:
        raise ValueError(f"observe.metrics: 'eps_g' has closed forms for activations {', '.join(INTEGRALS.names())}, "
                         f"not {name!r}")
    W, Ws = params["W"], ctx.arrays["target_dirs"]
    return generalization_error(W @ W.T, W @ Ws.T, Ws @ Ws.T, params["v"], ctx.arrays["target_coefs"], name)
