"""The symmetry group of the multi-index target and the symmetrized network (paper §3, eq. 5, Lemma A.1).

The group P acts on coordinates in the target basis (first r relevant, last n = d - r irrelevant) by
rho(x) = (s_1 x_1, ..., s_r x_r, s_{r+1} x_{pi(r+1)}, ..., s_d x_{pi(d)}), s in {+-1}^d, pi a permutation
of the irrelevant block; |P| = 2^d (d - r)!. The symmetrized network f~(x) = E_rho f(rho x) keeps the
target part and drops the rest: L(f) = L(f~) + 1/2 ||f - f~||^2 exactly ("bias" + "variance", eq. 5).

For f = sum_i c_i sigma(u_i . x) with unit u_i, ||f~||^2 = sum_ij c_i c_j E_rho kappa(<u_i, rho u_j>) and by
kappa = sum_k sigma_hat_k^2 rho^k it splits into exact group moments K_k(u, y) = E_rho <u, rho y>^k (odd k: 0):

    K_2 = R_1 + U_1 Y_1 / n,
    K_4 = 3 [R_1^2 + 2 R_1 U_1 Y_1 / n + U_2 Y_2 / n + (U_1^2 - U_2)(Y_1^2 - Y_2) / (n (n - 1))]
          - 2 [R_2 + U_2 Y_2 / n],

R_p = sum_{l<=r} u_l^{2p} y_l^{2p}, U_p = sum_{l>r} u_l^{2p}, Y_p = sum_{l>r} y_l^{2p} (spec §3.4a), and a Monte
Carlo average over uniformly drawn group elements for the residual kernel kappa_{>4} (spec §3.4b).
Functions take coordinates Z = U B' in the target basis B (identity for the standard target).
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

K_SYM = 4  # group moments are exact up to this order; the residual is Monte Carlo


def group_moment(Zu, Zy, r: int, k: int):
    """``K_k[i, j] = E_{rho in P} <u_i, rho y_j>^k`` for rows of ``Zu`` [m, d], ``Zy`` [m', d], k in 0..4."""
    n = Zu.shape[1] - r
    if k % 2:
        return jnp.zeros((Zu.shape[0], Zy.shape[0]), dtype=Zu.dtype)
    if k == 0:
        return jnp.ones((Zu.shape[0], Zy.shape[0]), dtype=Zu.dtype)
    if k > 4:
        raise NotImplementedError("exact group moments are implemented for k <= 4")
    ur, yr, ui, yi = Zu[:, :r], Zy[:, :r], Zu[:, r:], Zy[:, r:]
    R1 = (ur**2) @ (yr**2).T
    inv_n = 1.0 / n if n > 0 else 0.0
    U1, Y1 = jnp.sum(ui**2, axis=1), jnp.sum(yi**2, axis=1)
    UY1 = jnp.outer(U1, Y1) * inv_n
    if k == 2:
        return R1 + UY1
    R2 = (ur**4) @ (yr**4).T
    U2, Y2 = jnp.sum(ui**4, axis=1), jnp.sum(yi**4, axis=1)
    UY2 = jnp.outer(U2, Y2) * inv_n
    inv_nn = 1.0 / (n * (n - 1)) if n > 1 else 0.0
    pairs = jnp.outer(U1**2 - U2, Y1**2 - Y2) * inv_nn
    return 3.0 * (R1**2 + 2.0 * R1 * UY1 + UY2 + pairs) - 2.0 * (R2 + UY2)


def act_on(Z, signs, perm):
    """``rho(Z)`` for rows of ``Z`` [m, d]: coordinate l becomes s_l Z[:, perm[l]]."""
    return Z[:, perm] * signs


def sample_group(rng: np.random.Generator, S: int, d: int, r: int):
    """``S`` uniform group elements: signs [S, d] (Rademacher) and perms [S, d] (irrelevant block shuffled)."""
    signs = rng.choice([-1.0, 1.0], size=(S, d))
    perms = np.stack([np.concatenate([np.arange(r), r + rng.permutation(d - r)]) for _ in range(S)])
    return signs, perms


def all_group_elements(d: int, r: int):
    """Every element of P as (signs, perm) (tests only: |P| = 2^d (d - r)!)."""
    for signs in itertools.product([-1.0, 1.0], repeat=d):
        for tail in itertools.permutations(range(r, d)):
            yield np.asarray(signs), np.concatenate([np.arange(r), np.asarray(tail, dtype=int)]).astype(int)


def group_size(d: int, r: int) -> int:
    return 2**d * math.factorial(d - r)


def symmetrized_decomposition(c, Z, r: int, coeffs, kappa, signs, perms):
    """Exact-plus-Monte-Carlo ``||f~||^2`` and the variance ``1/2 ||f - f~||^2`` of f = sum c_i sigma(z_i . x).

    ``coeffs`` are sigma_hat_0..sigma_hat_4; ``signs``/``perms`` [S, d] group samples for the residual
    kernel kappa_{>4}(rho) = kappa(rho) - sum_{k<=4} sigma_hat_k^2 rho^k. Returns a dict with
    ``norm_sym`` (||f~||^2), ``variance``, ``variance_se`` (Monte Carlo standard error) and
    ``variance_order`` [5] (exact parts k = 0..4: 1/2 sigma_hat_k^2 (||T_k||^2 - ||T~_k||^2)).
    """
    coeffs = jnp.asarray(coeffs, dtype=Z.dtype)[: K_SYM + 1]
    c2 = coeffs**2
    G = Z @ Z.T
    norm_k = jnp.stack([c @ (G**k) @ c for k in range(K_SYM + 1)])
    sym_k = jnp.stack([c @ group_moment(Z, Z, r, k) @ c for k in range(K_SYM + 1)])

    def residual(rho):
        return kappa(rho) - sum(c2[k] * rho**k for k in range(K_SYM + 1))

    perms = jnp.asarray(perms).astype(jnp.int32)
    samples = jax.vmap(lambda s, p: c @ residual(Z @ act_on(Z, s, p).T) @ c)(jnp.asarray(signs, Z.dtype), perms)
    res_full = c @ residual(G) @ c
    S = signs.shape[0]
    res_sym = jnp.mean(samples)
    se = jnp.std(samples, ddof=1) / jnp.sqrt(S) if S > 1 else jnp.zeros((), Z.dtype)
    var_order = 0.5 * c2 * (norm_k - sym_k)
    norm_sym = jnp.sum(c2 * sym_k) + res_sym
    return {"norm_sym": norm_sym, "variance": jnp.sum(var_order) + 0.5 * (res_full - res_sym),
            "variance_se": 0.5 * se, "variance_order": var_order}
