"""Rosenbrock-W integration of a stiff autonomous ODE y' = f(y) on a flat vector, with an approximate Jacobian.

A Rosenbrock-W method (Hairer & Wanner, Solving ODEs II, sec. IV.7, with W in place of f'(y)) solves s
linear systems with one matrix per step and no Newton iteration:

    (I - h gamma W) k_i = h f(y + sum_{j<i} alpha_ij k_j) + h W sum_{j<i} gamma_ij k_j,
    y1 = y + sum_i b_i k_i,    error estimate  sum_i (b_i - bhat_i) k_i,

where W is any matrix: the order conditions of a W-method hold for every W, so W only sets the stability (and the
step sizes) and may be an approximation of f'(y), computed once and kept for many steps. ``ROS34PW2`` is Rang &
Angermann's (2005, BIT Numer. Math. 45) four-stage W-method of order 3 with an embedded order 2: L-stable and
stiffly accurate (b_i = alpha_4i + gamma_4i, b_4 = gamma), so the step is not limited by the fast decaying modes of
a solution near a stable fixed point, where an explicit Runge-Kutta method must keep h |lambda_max| below ~3.

``solve`` is adaptive (the error estimate in the mixed absolute / relative RMS norm, step factor 0.9 err^(-1/3)
clipped to [0.2, 5]), lands on every save time exactly, and refreshes W from ``jacobian`` after ``refresh``
accepted steps or when a step is rejected with a W older than that step. Pure JAX: the caller jits it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np


class WTableau(NamedTuple):
    """A Rosenbrock-W method: ``gamma`` the diagonal, ``alpha`` and ``gammas`` the strictly lower stage tables,
    ``b`` the solution weights and ``bhat`` the embedded weights of order ``order - 1``."""

    gamma: float
    alpha: np.ndarray
    gammas: np.ndarray
    b: np.ndarray
    bhat: np.ndarray
    order: int


ROS34PW2 = WTableau(
    gamma=4.3586652150845900e-01,
    alpha=np.array([[0.0, 0.0, 0.0, 0.0],
                    [8.7173304301691801e-01, 0.0, 0.0, 0.0],
                    [8.4457060015369423e-01, -1.1299064236484185e-01, 0.0, 0.0],
                    [0.0, 0.0, 1.0, 0.0]]),
    gammas=np.array([[0.0, 0.0, 0.0, 0.0],
                     [-8.7173304301691801e-01, 0.0, 0.0, 0.0],
                     [-9.0338057013044082e-01, 5.4180672388095326e-02, 0.0, 0.0],
                     [2.4212380706095346e-01, -1.2232505839045147e+00, 5.4526025533510214e-01, 0.0]]),
    b=np.array([2.4212380706095346e-01, -1.2232505839045147e+00, 1.5452602553351020e+00, 4.3586652150845900e-01]),
    bhat=np.array([3.7810903145819369e-01, -9.6042292212423178e-02, 0.5, 2.1793326075422950e-01]),
    order=3,
)


def w_step(field: Callable, W, y, h, tableau: WTableau = ROS34PW2):
    """One step of size ``h`` from ``y`` (module docstring): (y1, error estimate). The s stages share one LU of
    I - h gamma W."""
    lu = jsl.lu_factor(jnp.eye(y.size, dtype=y.dtype) - (h * tableau.gamma) * W)
    ks = []
    for i in range(len(tableau.b)):
        rhs = h * field(y + sum((tableau.alpha[i, j] * ks[j] for j in range(i)), jnp.zeros_like(y)))
        if i:
            rhs = rhs + h * (W @ sum(tableau.gammas[i, j] * ks[j] for j in range(i)))
        ks.append(jsl.lu_solve(lu, rhs))
    y1 = y + sum(bi * k for bi, k in zip(tableau.b, ks))
    err = sum((bi - ci) * k for bi, ci, k in zip(tableau.b, tableau.bhat, ks))
    return y1, err


def _initial_step(field, y0, rtol, atol):
    """Hairer, Norsett & Wanner (ODEs I, sec. II.4) first guess: 0.01 ||y0|| / ||f(y0)|| in the error norm."""
    scale = atol + rtol * jnp.abs(y0)
    d0 = jnp.sqrt(jnp.mean((y0 / scale) ** 2))
    d1 = jnp.sqrt(jnp.mean((field(y0) / scale) ** 2))
    return jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)


def solve(field: Callable, jacobian: Callable, y0, times, *, rtol, atol, max_steps: int, refresh: int = 20,
          tableau: WTableau = ROS34PW2):
    """Integrate y' = ``field``(y) from y0 at times[0], saving at every entry of ``times`` (non-decreasing).
    ``jacobian``(y) gives W. Returns (ys [len(times), n], steps tried, reached): ``reached`` is False when
    ``max_steps`` ran out or the step size underflowed, and the unreached rows then hold the last state."""
    n_times = times.shape[0]
    exponent = -1.0 / tableau.order

    def cond(carry):
        t, y, h, k, W, age, ys, steps, failed = carry
        return (k < n_times) & (steps < max_steps) & ~failed

    def body(carry):
        t, y, h, k, W, age, ys, steps, failed = carry
        target = times[k]
        lands = h >= target - t
        hh = jnp.where(lands, target - t, h)
        y1, err = w_step(field, W, y, hh, tableau)
        scale = atol + rtol * jnp.maximum(jnp.abs(y), jnp.abs(y1))
        norm = jnp.sqrt(jnp.mean((err / scale) ** 2))
        ok = (norm <= 1.0) & jnp.all(jnp.isfinite(y1))
        factor = jnp.where(jnp.isfinite(norm), 0.9 * jnp.maximum(norm, 1e-10) ** exponent, 0.2)
        factor = jnp.clip(factor, 0.2, jnp.where(ok, 5.0, 1.0))
        h_next = jnp.where(ok & lands, jnp.maximum(hh * factor, h), hh * factor)
        t1 = jnp.where(ok, jnp.where(lands, target, t + hh), t)
        y_next = jnp.where(ok, y1, y)
        hit = ok & lands
        ys = ys.at[k].set(jnp.where(hit, y_next, ys[k]))
        age = jnp.where(ok, age + 1, age)
        stale = (age >= refresh) | (~ok & (age > 0))
        W, age = jax.lax.cond(stale, lambda: (jacobian(y_next), jnp.zeros_like(age)), lambda: (W, age))
        failed = h_next <= 1e-14 * jnp.maximum(jnp.abs(t1), 1.0)
        return t1, y_next, h_next, k + hit, W, age, ys, steps + 1, failed

    ys = jnp.broadcast_to(y0, (n_times, y0.size))
    h0 = jnp.minimum(_initial_step(field, y0, rtol, atol), jnp.maximum(times[-1] - times[0], 1e-12))
    carry = (times[0], y0, h0, jnp.asarray(1), jacobian(y0), jnp.asarray(0), ys, jnp.asarray(0), jnp.asarray(False))
    t, y, h, k, W, age, ys, steps, failed = jax.lax.while_loop(cond, body, carry)
    return ys, steps, k >= n_times
