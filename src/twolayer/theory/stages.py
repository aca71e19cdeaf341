"""The multi-index paper's stage tests (App. A.2 schedule; spec §4.7 / §7.6), evaluated on the weights.

Used by the training method ``gd_paper`` (which switches weight decay off and boosts aligned neurons by
them) and by the observables ``a_hat``/``b_hat``; pure functions of W, no hidden state:

  found      every direction j has a neuron with <u_i, w*_j>^2 >= 1 - EPS_DIR^2             (T_21)
  G_j        neurons with <u_i, w*_j>^2 >= 1 - EPS_DIR;  a_hat_j = (1/m) sum_{i in G_j} ||w_i||^2
  b_hat_j    (1/m) sum_{i not in any G} ||w_i||^2 <u_i, w*_j>^2 (mass version, spec §7.8)
  done       found and max_j b_hat_j <= EPS_NORM and min_j a_hat_j >= a* - EPS_NORM             (T_22)

with a* = 1 - lambda/(2 sigma_hat_0^2 r + 2 sigma_hat_{>=2}^2) (Lemma D.18).
"""

from __future__ import annotations

import jax.numpy as jnp

from twolayer.numerics import unit_rows

EPS_DIR = 0.1
EPS_NORM = 0.02
WINDOW = 0.5


def stage_state(W, dirs, lam, act):
    """``(found, done, boost [m], a_hat [r], b_hat [r])`` of the paper's schedule at weights ``W``."""
    U, norms = unit_rows(W)
    a = norms**2
    m, r = W.shape[0], dirs.shape[0]
    P2 = (U @ dirs.T) ** 2  # [m, r]
    found = jnp.all(jnp.max(P2, axis=0) >= 1.0 - EPS_DIR**2)
    in_G = P2 >= 1.0 - EPS_DIR  # [m, r], at most one True per row since EPS_DIR < 1/2
    a_hat = jnp.sum(jnp.where(in_G, a[:, None], 0.0), axis=0) / m
    dense = ~jnp.any(in_G, axis=1)
    b_hat = jnp.sum(jnp.where(dense[:, None], a[:, None] * P2, 0.0), axis=0) / m
    c = act.hermite_coefficients(4)
    s0, s2p = c[0] ** 2, act.second_moment() - c[0] ** 2 - c[1] ** 2
    a_star = 1.0 - lam / (2.0 * s0 * r + 2.0 * s2p)
    done = found & (jnp.max(b_hat) <= EPS_NORM) & (jnp.min(a_hat) >= a_star - EPS_NORM)
    window = found & (a_hat < WINDOW / r)  # [r]
    boost = jnp.any(in_G & window[None, :], axis=1)
    return found, done, boost, a_hat, b_hat
