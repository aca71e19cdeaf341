"""Exact Gaussian-population losses for targets f*(x) = sum_j c*_j sigma(w*_j . x) (multi-index paper).

Every network is written as a weighted sum of unit-direction neurons, f(x) = sum_i c_i sigma(u_i . x):

* ``mean_field``: c_i = ||w_i||^2 / m, u_i = w_i / ||w_i||  (paper eq. 2; any activation);
* ``two_layer``:  c_i = v_i ||w_i||,  u_i = w_i / ||w_i||    (positively 1-homogeneous activations only).

With the dual kernel kappa(rho) = E[sigma(u.x) sigma(v.x)] = sum_k sigma_hat_k^2 rho^k (unit u, v) the
population square loss is (spec §2.4)

    L = 1/2 E_x (f - f*)^2 = 1/2 [ c' kappa(U U') c - 2 c' kappa(U W*') c* + c*' kappa(W* W*') c* ],

closed form for activations with a closed-form kappa (abs, relu, leaky_relu, linear), otherwise the
Hermite series truncated at K = 40 (machine precision for the smooth symmetrized activations).

By Hermite orthogonality the loss splits by order (paper eq. 4), L = sum_k L_k with
L_k = 1/2 sigma_hat_k^2 ||T_k - T*_k||_F^2, and the Gram identity <u^{(x)k}, v^{(x)k}> = <u, v>^k gives,
without forming any tensor (spec §2.3),

    ||T_k - T*_k||^2 = c' (G∘k) c - 2 c' (C∘k) c* + c*' (S∘k) c*,   G = U U', C = U W*', S = W* W*'

(∘k: elementwise power; for k = 0 all three matrices are all-ones, so the constant is (sum c*)^2 = r^2
for the standard target). Target energies (paper Thm 3.1): E_k = 1/2 sigma_hat_k^2 c*' (S∘k) c*.

All functions are pure JAX (jit/vmap/grad-safe). The ``population`` objective registered here reads the
target from the context arrays ``target_dirs`` [r, d] and ``target_coefs`` [r].
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from twolayer.activations import Activation
from twolayer.losses import reduce_losses
from twolayer.nets import Net
from twolayer.problem import Context, objective

SERIES_K = 40  # truncation of the Hermite series for activations without a closed-form kernel


def kernel_fn(act: Activation, K: int = SERIES_K):
    """``rho -> kappa(rho)``: the closed form when the activation has one, else the K-term series."""
    if act.has_dual_kernel:
        return act.dual_kernel
    return lambda rho: act.dual_kernel_series(rho, K)


def neuron_weights(params, net: Net, act: Activation):
    """``(c, U)`` with f(x) = sum_i c_i act(U_i . x), U_i unit (or zero) rows (``Net.unit_neurons``)."""
    if net.unit_neurons is None:
        raise NotImplementedError(f"no population form for model.kind {net.name!r}")
    return net.unit_neurons(params, act)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def kernel_quadratic_form(c, U, kappa):
    """``q = c' kappa(U U') c = sum_ij c_i c_j kappa(<u_i, u_j>)`` (the ||f||^2 term of spec §2.4).

    Differentiated by hand: with K = kappa(G), K' = kappa'(G) (elementwise, G = U U'), W = (c c') * K',
    ``dq = 2 dc' K c + 2 <W U, dU>``; one elementwise pass gives K and K' together, and the whole
    derivative costs one more [m, m] x [m, d] product, where autodiff through ``U @ U.T`` and the kernel
    takes two products, a transpose and several passes over the [m, m] matrices (a 1.3x slower step
    at m = 250, d = 100; benchmarks/engine_ablation.py).
    Forward and reverse mode, and higher derivatives, all go through this rule.
    """
    return c @ kappa(U @ U.T) @ c


@kernel_quadratic_form.defjvp
def _kernel_quadratic_form_jvp(kappa, primals, tangents):
    (c, U), (dc, dU) = primals, tangents
    G = U @ U.T
    K, dK = jax.jvp(kappa, (G,), (jnp.ones_like(G),))  # kappa is elementwise: its tangent along ones is kappa'
    Kc = K @ c
    M = ((c[:, None] * c[None, :]) * dK) @ U
    return c @ Kc, 2.0 * (dc @ Kc) + 2.0 * jnp.sum(M * dU)


def population_loss_terms(c, U, cs, Ws, kappa):
    """``(||f||^2, <f, f*>, ||f*||^2)`` under x ~ N(0, I) for f = sum c_i sigma(U_i.x), f* = sum cs_j sigma(Ws_j.x)."""
    ff = kernel_quadratic_form(c, U, kappa)
    fs = c @ kappa(U @ Ws.T) @ cs
    ss = cs @ kappa(Ws @ Ws.T) @ cs
    return ff, fs, ss


def population_loss(c, U, cs, Ws, kappa):
    """L = 1/2 E (f - f*)^2 (spec §2.4)."""
    ff, fs, ss = population_loss_terms(c, U, cs, Ws, kappa)
    return 0.5 * (ff - 2.0 * fs + ss)


def order_gaps(c, U, cs, Ws, K: int):
    """``||T_k - T*_k||_F^2`` for k = 0..K by the Gram identity (spec §2.3); shape [K+1]."""
    G, C, S = U @ U.T, U @ Ws.T, Ws @ Ws.T
    out = []
    Gk, Ck, Sk = jnp.ones_like(G), jnp.ones_like(C), jnp.ones_like(S)
    for _ in range(K + 1):
        out.append(c @ Gk @ c - 2.0 * (c @ Ck @ cs) + cs @ Sk @ cs)
        Gk, Ck, Sk = Gk * G, Ck * C, Sk * S
    return jnp.stack(out)


def target_norms(cs, Ws, K: int):
    """``||T*_k||_F^2 = cs' (S∘k) cs`` for k = 0..K; shape [K+1]."""
    S = Ws @ Ws.T
    return jnp.stack([cs @ (S**k) @ cs for k in range(K + 1)])


def order_losses(c, U, cs, Ws, coeffs):
    """Per-order losses L_k = 1/2 sigma_hat_k^2 ||T_k - T*_k||^2 (paper eq. 4), k = 0..len(coeffs)-1."""
    coeffs = jnp.asarray(coeffs, dtype=U.dtype)
    return 0.5 * coeffs**2 * order_gaps(c, U, cs, Ws, coeffs.shape[0] - 1)


def energies(cs, Ws, coeffs):
    """Target energies E_k = 1/2 sigma_hat_k^2 ||T*_k||^2 = ||P_k f*||^2 / 2, k = 0..len(coeffs)-1."""
    coeffs = jnp.asarray(coeffs, dtype=Ws.dtype)
    return 0.5 * coeffs**2 * target_norms(cs, Ws, coeffs.shape[0] - 1)


def target_of(ctx: Context):
    """``(c*, W*)`` from the context (arrays ``target_coefs`` [r] and ``target_dirs`` [r, d])."""
    return ctx.arrays["target_coefs"], ctx.arrays["target_dirs"]


def exact_population_loss(params, ctx: Context):
    """The exact population square loss of ``params`` against the context's target."""
    act = ctx.problem.activation
    c, U = neuron_weights(params, ctx.problem.net, act)
    cs, Ws = target_of(ctx)
    return population_loss(c, U, cs, Ws, kernel_fn(act))


@objective("population", needs=("target_dirs", "target_coefs"), population=True)
def population_objective(params, ctx: Context):
    """L(W) = 1/2 E_{x~N(0,I)} (f_W(x) - f*(x))^2, exact (closed-form dual kernel, or K = 40 series)."""
    return exact_population_loss(params, ctx)


@objective("population_correlation", needs=("target_dirs", "target_coefs"), population=True)
def correlation_objective(params, ctx: Context):
    """The correlation loss -E_x[f(x) f*(x)] = -c' kappa(U W*') c* (exact): the alternative the multi-index paper
    names (its Section 1: 'small initialization, correlation loss, or layer-wise training'), in which the
    network's own output drops out of the gradient, so every neuron amplifies its correlation with f* on its
    own (mass grows by amplification, not by competition) and nothing holds the total mass at T*_0."""
    act = ctx.problem.activation
    c, U = neuron_weights(params, ctx.problem.net, act)
    cs, Ws = target_of(ctx)
    return -(c @ kernel_fn(act)(U @ Ws.T) @ cs)


# -- Hermite-truncated activation and the symmetrized dynamics (spec §3.6) --------------------------------

TRUNCATION_K = 4  # sigma_K = sum_{k<=K} sigma_hat_k h_k (group moments are exact at any K; 4 keeps runs cheap)


def truncated_population_loss(params, ctx: Context, K: int):
    """Population loss with sigma replaced by sigma_K = sum_{k<=K} sigma_hat_k h_k (net and target):
    L = 1/2 sum_{k<=K} sigma_hat_k^2 ||T_k - T*_k||^2 (eq. 4 truncated; mean_field only)."""
    c, U = neuron_weights(params, ctx.problem.net, ctx.problem.activation)
    cs, Ws = target_of(ctx)
    return jnp.sum(order_losses(c, U, cs, Ws, ctx.problem.activation.hermite_coefficients(K)))


@objective("population_hermite4", needs=("target_dirs", "target_coefs"), nets=("mean_field",), population=True)
def hermite4_objective(params, ctx: Context):
    """Population loss with sigma replaced by sigma_4 = sum_{k<=4} sigma_hat_k h_k (net and target):
    L = 1/2 sum_{k<=4} sigma_hat_k^2 ||T_k - T*_k||^2 (eq. 4 truncated; mean_field only)."""
    return truncated_population_loss(params, ctx, TRUNCATION_K)


@objective("population_hermite2", needs=("target_dirs", "target_coefs"), nets=("mean_field",), population=True)
def hermite2_objective(params, ctx: Context):
    """Population loss with sigma replaced by sigma_2 = sigma_hat_0 + sigma_hat_2 h_2 (net and target):
    L = 1/2 sigma_hat_0^2 (alpha - T*_0)^2 + 1/2 sigma_hat_2^2 ||T_2 - T*_2||^2. Only the mean and the
    subspace are learned: the Stage 1.2 competition of subspace against irrelevant mass (paper §5.2) is
    then the whole dynamics, and the competitive ODE (eq. 6) its reduced form (multiindex2026/figure2)."""
    return truncated_population_loss(params, ctx, 2)


def symmetrized_population_loss(params, ctx: Context, K: int):
    """The symmetrized loss of the representatives V = {v_i} with sigma_K:
    L~(V) = 1/2 sum_{k<=K} sigma_hat_k^2 (c' K_k c - 2 c' (C∘k) c* + ||T*_k||^2), K_k the exact group moments.
    GD on it with time scale m is exactly the symmetrized particle dynamics of §3.6 (Sec. 6, process 2):
    m |P| grad_{w~_{i,Id}} L(W~) = m grad_{v_i} L~(V) by equivariance."""
    from twolayer.theory.symmetry import group_moment

    c, U = neuron_weights(params, ctx.problem.net, ctx.problem.activation)
    cs, Ws = target_of(ctx)
    Z = U @ ctx.arrays["target_basis"].T
    r = Ws.shape[0]
    coeffs = jnp.asarray(ctx.problem.activation.hermite_coefficients(K), dtype=U.dtype)
    C, S = U @ Ws.T, Ws @ Ws.T
    total = 0.0
    for k in range(K + 1):
        total = total + 0.5 * coeffs[k] ** 2 * (c @ group_moment(Z, Z, r, k) @ c - 2.0 * c @ C**k @ cs
                                                 + cs @ S**k @ cs)
    return total


@objective("population_symmetrized4", needs=("target_dirs", "target_coefs", "target_basis"), nets=("mean_field",),
           population=True)
def symmetrized4_objective(params, ctx: Context):
    """``symmetrized_population_loss`` with sigma_4 (the symmetrized counterpart of ``population_hermite4``)."""
    return symmetrized_population_loss(params, ctx, TRUNCATION_K)


@objective("population_symmetrized2", needs=("target_dirs", "target_coefs", "target_basis"), nets=("mean_field",),
           population=True)
def symmetrized2_objective(params, ctx: Context):
    """``symmetrized_population_loss`` with sigma_2 (the symmetrized counterpart of ``population_hermite2``):
    the symmetrized network of Section 5, for which the competitive ODE (eq. 6) is the exact reduction of
    Stage 1.2 up to the balance of the r relevant coordinates and the beta_2 self-term."""
    return symmetrized_population_loss(params, ctx, 2)


def hermite_truncated(z, coeffs):
    """sigma_K(z) = sum_{k<=K} sigma_hat_k h_k(z), h_k = He_k/sqrt(k!) (recursion He_{k+1} = z He_k - k He_{k-1})."""
    coeffs = jnp.asarray(coeffs, dtype=z.dtype)
    prev, cur = jnp.zeros_like(z), jnp.ones_like(z)
    out = coeffs[0] * cur
    for k in range(1, coeffs.shape[0]):
        prev, cur = cur, z * cur - (k - 1) * prev
        out = out + coeffs[k] * cur / jnp.sqrt(float(math.factorial(k)))
    return out


@objective("empirical_hermite4", needs=("target_dirs", "target_coefs"), nets=("mean_field",))
def empirical_hermite4_objective(params, ctx: Context):
    """Training loss on the fixed sample with sigma replaced by sigma_4 in the net and the target:
    L^ = (1/n) sum_k l(f*_4(x_k), f_4(x_k)), f_4(x) = sum_i c_i sigma_4(u_i . x),
    f*_4(x) = sum_j c*_j sigma_4(w*_j . x).
    The finite-sample counterpart of ``population_hermite4``: GD on it is the empirical particle dynamics whose
    coupling to the symmetrized dynamics (``population_symmetrized4``) includes the sample error C_t (spec §3.7)."""
    c, U = neuron_weights(params, ctx.problem.net, ctx.problem.activation)
    cs, Ws = target_of(ctx)
    coeffs = ctx.problem.activation.hermite_coefficients(TRUNCATION_K)
    f = hermite_truncated(ctx.X @ U.T, coeffs) @ c
    y = hermite_truncated(ctx.X @ Ws.T, coeffs) @ cs
    return reduce_losses(ctx.problem.loss.per_sample(y, f), ctx.problem.reduction)

