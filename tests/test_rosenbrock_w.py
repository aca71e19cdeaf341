"""The Rosenbrock-W integrator (``theory.rosenbrock_w``): its order with any W, its stiff stability, its save times
and its failure report."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate

from twolayer.theory import rosenbrock_w


def van_der_pol(y):
    """A nonlinear, non-stiff test field (van der Pol at mu = 1 with a driven third component)."""
    return jnp.array([y[1], (1 - y[0] ** 2) * y[1] - y[0], -0.5 * y[2] + y[0] * y[1]])


Y0, T_END = jnp.array([2.0, 0.0, 1.0]), 2.0


def fixed_step_error(W_of, n_steps: int, reference) -> float:
    h = T_END / n_steps

    @jax.jit
    def run(y):
        return jax.lax.fori_loop(0, n_steps, lambda i, y: rosenbrock_w.w_step(van_der_pol, W_of(y), y, h)[0], y)

    return float(np.abs(np.asarray(run(Y0)) - reference).max())


@pytest.mark.parametrize("w", ["exact", "zero", "perturbed", "frozen"])
def test_the_method_has_order_three_with_any_w(w):
    """ROS34PW2 is a W-method: order 3 whatever W is, the exact Jacobian, zero (an explicit method), a perturbed
    one, or the Jacobian at the start kept for the whole run. The order fitted from 80 and 160 steps against a
    DOP853 reference at rtol 1e-13 is 3 +- 0.1 (a Rosenbrock method that needs W = f'(y), or a slip in a
    coefficient, drops it to 2 or less on some of these W)."""
    jac = jax.jacfwd(van_der_pol)
    W_of = {"exact": jac, "zero": lambda y: jnp.zeros((3, 3)), "perturbed": lambda y: 0.5 * jac(y) + 0.3 * jnp.eye(3),
            "frozen": lambda y: jac(Y0)}[w]
    reference = scipy.integrate.solve_ivp(lambda t, y: np.asarray(van_der_pol(jnp.asarray(y))), (0.0, T_END),
                                          np.asarray(Y0), method="DOP853", rtol=1e-13, atol=1e-14).y[:, -1]
    coarse, fine = fixed_step_error(W_of, 80, reference), fixed_step_error(W_of, 160, reference)
    assert abs(np.log2(coarse / fine) - 3.0) < 0.1, (coarse, fine)


def test_the_tableau_satisfies_the_order_conditions_it_states():
    """Consistency (sum b = sum bhat = 1), stiff accuracy (b_i = alpha_4i + gamma_4i, b_4 = gamma) and the
    second-order condition sum_i b_i beta_i = 1/2 - gamma with beta_i = sum_j (alpha_ij + gamma_ij)."""
    t = rosenbrock_w.ROS34PW2
    np.testing.assert_allclose([t.b.sum(), t.bhat.sum()], [1.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(t.b, t.alpha[-1] + t.gammas[-1] + np.eye(4)[-1] * t.gamma, atol=1e-15)
    beta = (t.alpha + t.gammas).sum(axis=1)
    assert abs(t.b @ beta - (0.5 - t.gamma)) < 1e-14


def prothero_robinson(lam):
    """y' = lam (y - cos s) - sin s, s' = 1: the solution cos(s) from y(0) = 1, stiff for lam << -1."""
    return lambda y: jnp.array([lam * (y[0] - jnp.cos(y[1])) - jnp.sin(y[1]), 1.0])


def test_a_stiff_problem_takes_the_steps_its_accuracy_needs():
    """Prothero-Robinson at lam = -1e6 to s = 10: with W = f'(y) the solution is within 1e-7 of cos(s) in a few
    hundred steps; an explicit method needs h < ~3e-6, i.e. millions. The same solve with W = 0 (the explicit
    Runge-Kutta method inside the tableau) does not reach s = 1 in 2,000 steps."""
    field = prothero_robinson(-1e6)
    times = jnp.linspace(0.0, 10.0, 11)
    ys, steps, reached = jax.jit(lambda y: rosenbrock_w.solve(field, jax.jacfwd(field), y, times, rtol=1e-6, atol=1e-8,
                                                              max_steps=2000))(jnp.array([1.0, 0.0]))
    assert bool(reached) and int(steps) < 500
    assert float(np.abs(np.asarray(ys[:, 0]) - np.cos(np.asarray(times))).max()) < 1e-7
    explicit = jax.jit(lambda y: rosenbrock_w.solve(field, lambda x: jnp.zeros((2, 2)), y, times[:2], rtol=1e-6,
                                                    atol=1e-8, max_steps=2000))
    assert not bool(explicit(jnp.array([1.0, 0.0]))[2])


def test_every_save_time_is_landed_on_including_repeats():
    """y' = -A y with a stiff and a slow mode, saved at repeated and uneven times: each row equals expm(-A t) y0
    to the tolerance, the repeats equal each other exactly, and the first row is y0."""
    A = jnp.array([[1000.0, 1.0], [0.0, 0.5]])
    times = jnp.array([0.0, 0.0, 1e-3, 0.3, 0.3, 2.0, 7.5])
    y0 = jnp.array([1.0, 1.0])
    ys, steps, reached = jax.jit(lambda y: rosenbrock_w.solve(lambda x: -A @ x, lambda x: -A, y, times, rtol=1e-9,
                                                              atol=1e-12, max_steps=10_000))(y0)
    exact = np.stack([np.asarray(jax.scipy.linalg.expm(-A * t) @ y0) for t in times])
    assert bool(reached)
    np.testing.assert_allclose(np.asarray(ys), exact, rtol=1e-7, atol=1e-10)
    assert np.array_equal(ys[0], y0) and np.array_equal(ys[0], ys[1]) and np.array_equal(ys[3], ys[4])


def test_running_out_of_steps_is_reported():
    """max_steps too small for the horizon: ``reached`` is False (``integrate`` turns it into an ODEError)."""
    field = prothero_robinson(-1.0)
    _, steps, reached = rosenbrock_w.solve(field, jax.jacfwd(field), jnp.array([1.0, 0.0]), jnp.array([0.0, 100.0]),
                                           rtol=1e-10, atol=1e-12, max_steps=5)
    assert not bool(reached) and int(steps) == 5
