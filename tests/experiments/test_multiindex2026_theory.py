"""Multi-index paper machinery: exact population loss, Gram identity, symmetry group, reduced ODEs."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import twolayer
from twolayer.activations import make_activation
from twolayer.population import (
    energies, kernel_fn, order_gaps, order_losses, population_loss,
)
from twolayer.numerics import unit_rows
from twolayer.theory import multi_index as th
from twolayer.theory.symmetry import (
    act_on, all_group_elements, group_moment, group_size, sample_group, symmetrized_decomposition,
)

ABS = make_activation("abs")


def _mf(rng, m, d, scale=1.0):
    W = scale * rng.normal(size=(m, d)) / np.sqrt(d)
    U, norms = unit_rows(jnp.asarray(W))
    return W, norms**2 / m, U


def test_abs_coefficients_closed_form_and_energies():
    c = ABS.hermite_coefficients(12)
    assert abs(c[0] ** 2 - 2 / np.pi) < 1e-14 and abs(c[2] ** 2 - 1 / np.pi) < 1e-14
    assert abs(c[4] ** 2 - 1 / (12 * np.pi)) < 1e-14
    r = 20
    E = np.asarray(energies(jnp.ones(r), jnp.eye(r, 100), c))
    assert E[0] == pytest.approx(r**2 / np.pi, rel=1e-13) and E[2] == pytest.approx(r / (2 * np.pi), rel=1e-13)
    h = th.HermiteSums.of(ABS)
    assert h.s4p == pytest.approx(1 - 3 / np.pi, rel=1e-9)


@pytest.mark.parametrize("directions", ["standard", "random"])
def test_gram_identity_matches_explicit_tensors(directions):
    rng = np.random.default_rng(0)
    d, r, m = 5, 2, 4
    _, c, U = _mf(rng, m, d)
    Ws = np.eye(d)[:r] if directions == "standard" else np.linalg.qr(rng.normal(size=(d, d)))[0].T[:r]
    cs = np.array([1.0, 0.7])
    gaps = np.asarray(order_gaps(c, U, jnp.asarray(cs), jnp.asarray(Ws), 4))
    U = np.asarray(U)
    for k in (0, 2, 3, 4):
        def tensor(weights, vecs):
            T = 0.0
            for w, v in zip(weights, vecs):
                t = np.array(1.0)
                for _ in range(k):
                    t = np.multiply.outer(t, v)
                T = T + w * t
            return T
        explicit = np.sum((tensor(np.asarray(c), U) - tensor(cs, Ws)) ** 2)
        assert gaps[k] == pytest.approx(explicit, rel=1e-10), k
    assert gaps[0] == pytest.approx((float(np.sum(c)) - cs.sum()) ** 2)


def test_population_loss_matches_monte_carlo_and_hermite_sum():
    rng = np.random.default_rng(1)
    d, r, m = 8, 3, 6
    W, c, U = _mf(rng, m, d, scale=1.5)
    Ws, cs = jnp.eye(d)[:r], jnp.ones(r)
    L = float(population_loss(c, U, cs, Ws, kernel_fn(ABS)))
    X = rng.normal(size=(400_000, d))
    norms = np.linalg.norm(W, axis=1)
    f = np.abs(X @ W.T / norms) @ norms**2 / m
    res2 = 0.5 * (f - np.abs(X[:, :r]).sum(1)) ** 2
    se = res2.std() / np.sqrt(len(res2))
    assert abs(L - res2.mean()) < 3 * se
    # Hermite sum converges to the closed form within the rigorous tail bound (spec §2.4)
    alpha = float(jnp.sum(c))
    for K in (10, 40):
        coeffs = ABS.hermite_coefficients(K)
        partial = float(jnp.sum(order_losses(c, U, cs, Ws, coeffs)))
        tail = 1.0 - float(np.sum(coeffs**2))
        assert 0 <= L - partial <= 0.5 * tail * (alpha + r) ** 2


@pytest.mark.parametrize("name", ["abs", "relu", "sym_gelu"])
def test_kernel_quadratic_form_derivatives_match_autodiff(name):
    """``kernel_quadratic_form``'s hand-written JVP (forward mode), its transpose (reverse mode) and second
    derivatives equal autodiff through ``c @ kappa(U @ U.T) @ c``, for closed-form and series kernels;
    and its gradient matches central differences."""
    from twolayer.population import kernel_quadratic_form

    kappa = kernel_fn(make_activation(name))
    key = jax.random.PRNGKey(3)
    kc, kU, kdc, kdU = jax.random.split(key, 4)
    U = 0.8 * unit_rows(jax.random.normal(kU, (7, 5)))[0]  # |rho| < 1: kappa is smooth at every entry
    c, dc, dU = jax.random.normal(kc, (7,)), jax.random.normal(kdc, (7,)), jax.random.normal(kdU, (7, 5))
    fast = lambda c, U: kernel_quadratic_form(c, U, kappa)  # noqa: E731
    plain = lambda c, U: c @ kappa(U @ U.T) @ c  # noqa: E731
    np.testing.assert_allclose(fast(c, U), plain(c, U), rtol=1e-14)
    np.testing.assert_allclose(jax.jvp(fast, (c, U), (dc, dU))[1], jax.jvp(plain, (c, U), (dc, dU))[1], rtol=1e-12)
    for a, b in zip(jax.grad(fast, argnums=(0, 1))(c, U), jax.grad(plain, argnums=(0, 1))(c, U)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    h_fast = jax.hessian(lambda U: fast(c, U))(U)
    np.testing.assert_allclose(h_fast, jax.hessian(lambda U: plain(c, U))(U), rtol=1e-10, atol=1e-12)
    eps = 1e-6
    fd = (fast(c, U + eps * dU) - fast(c, U - eps * dU)) / (2 * eps)
    np.testing.assert_allclose(jnp.sum(jax.grad(fast, argnums=1)(c, U) * dU), fd, rtol=1e-7)


def test_population_gradient_matches_finite_differences():
    cfg = {"data": {"kind": "multi_index", "d": 6, "r": 2, "n": 10, "n_test": 10},
           "model": {"kind": "mean_field", "activation": "abs", "width": 5},
           "loss": {"kind": "square"}, "objective": "population", "init": {"kind": "standard"}}
    from twolayer.train.loop import Simulation
    sim = Simulation(twolayer.load_config(cfg))
    W = jnp.asarray(np.random.default_rng(2).normal(size=(5, 6)))
    loss = jax.jit(lambda W: sim.ctx.objective({"W": W}))
    g = np.asarray(jax.grad(loss)(W))
    h = 1e-6
    fd = np.zeros_like(g)
    for i, j in itertools.product(range(5), range(6)):
        E = np.zeros((5, 6))
        E[i, j] = h
        fd[i, j] = (float(loss(W + E)) - float(loss(W - E))) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_smooth_activation_population_loss_matches_monte_carlo():
    act = make_activation("sym_gelu")
    rng = np.random.default_rng(3)
    d, r, m = 6, 2, 5
    W, c, U = _mf(rng, m, d, scale=1.2)
    L = float(population_loss(c, U, jnp.ones(r), jnp.eye(d)[:r], kernel_fn(act)))
    X = rng.normal(size=(400_000, d))
    norms = np.linalg.norm(W, axis=1)
    f = np.asarray(act(X @ W.T / norms)) @ norms**2 / m
    res2 = 0.5 * (f - np.asarray(act(X[:, :r])).sum(1)) ** 2
    assert abs(L - res2.mean()) < 3 * res2.std() / np.sqrt(len(res2))


@pytest.mark.parametrize(("d", "r"), [(5, 2), (6, 2), (6, 3), (4, 4), (5, 4)])
def test_group_moments_match_enumeration(d, r):
    """K_k = E_rho <u, rho y>^k, general formula (spec §3.4a) vs all |P| = 2^d (d-r)! elements, k = 0..10;
    (4, 4): no irrelevant block, (5, 4): n = 1 (set partitions with more blocks than n are skipped)."""
    rng = np.random.default_rng(4)
    Zu, Zy = rng.normal(size=(3, d)), rng.normal(size=(2, d))
    elements = list(all_group_elements(d, r))
    assert len(elements) == group_size(d, r)
    for k in range(11):
        brute = np.mean([(Zu @ act_on(Zy, s, p).T) ** k for s, p in elements], axis=0)
        scale = max(np.abs(Zu @ act_on(Zy, s, p).T).max() ** k for s, p in elements)  # round-off of the brute mean
        exact = np.asarray(group_moment(jnp.asarray(Zu), jnp.asarray(Zy), r, k))
        np.testing.assert_allclose(exact, brute, atol=1e-12 * scale, rtol=0, err_msg=f"k = {k}")
        if k % 2:
            assert np.all(exact == 0.0)


def test_group_moment_coefficients():
    from fractions import Fraction

    from twolayer.theory.symmetry import _log_cosh, group_moment_terms

    assert _log_cosh(5) == (Fraction(1, 2), Fraction(-1, 12), Fraction(1, 45), Fraction(-17, 2520),
                            Fraction(31, 14175))
    # K_k(u, u) summed over the sign group only (n = 0): E_s (sum s_l b_l)^{2q} at b = (1, 0, ...) is 1, so the
    # coefficients of the pure-R terms sum to 1 (S_p = 1 for every p); q = 3: 15 S_1^3 - 30 S_1 S_2 + 16 S_3
    for k in (2, 4, 6, 8, 10):
        assert sum(c for c, *_ in group_moment_terms(k, 0)) == 1
    assert {rexp: c for c, rexp, _, _ in group_moment_terms(6, 0)} == {(3, 0, 0): 15, (1, 1, 0): -30, (0, 0, 1): 16}


@pytest.mark.parametrize("K", [4, 8])
def test_bias_variance_identity_against_explicit_symmetrized_network(K):
    """L(f) = L(f~) + 1/2||f - f~||^2 with f~ built explicitly from all m|P| neurons (Lemma A.1); the exact
    orders k <= K of the hybrid estimator match the explicit network, and K = 8 shrinks the Monte Carlo error."""
    rng = np.random.default_rng(5)
    d, r, m = 5, 2, 4
    _, c, U = _mf(rng, m, d)
    Ws, cs, kappa = jnp.eye(d)[:r], jnp.ones(r), kernel_fn(ABS)
    elements = list(all_group_elements(d, r))
    U_sym = jnp.concatenate([act_on(U, jnp.asarray(s), p) for s, p in elements])
    c_sym = jnp.tile(c, len(elements)) / len(elements)
    L = float(population_loss(c, U, cs, Ws, kappa))
    L_sym = float(population_loss(c_sym, U_sym, cs, Ws, kappa))
    # variance 1/2||f - f~||^2 from the explicit networks
    var = float(population_loss(jnp.concatenate([c, -c_sym]), jnp.concatenate([U, U_sym]),
                                      jnp.zeros(1), jnp.zeros((1, d)), kappa))
    assert L == pytest.approx(L_sym + var, rel=1e-10)
    # our exact-orders + Monte Carlo estimate: within 4 SE, and the exact per-order parts
    signs, perms = sample_group(np.random.default_rng(6), 400, d, r)
    coeffs = ABS.hermite_coefficients(K)
    out = symmetrized_decomposition(c, U, r, coeffs, kappa, jnp.asarray(signs), jnp.asarray(perms))
    assert abs(float(out["variance"]) - var) <= 4 * float(out["variance_se"]) + 1e-12
    assert float(out["variance_se"]) > 0 and float(out["variance"]) >= 0
    assert out["variance_order"].shape == (K + 1,)
    c2 = coeffs**2
    for k in range(2, K + 1, 2):
        per_order = 0.5 * c2[k] * float(c @ (U @ U.T) ** k @ c - c_sym @ (U_sym @ U_sym.T) ** k @ c_sym)
        assert float(out["variance_order"][k]) == pytest.approx(per_order, rel=1e-9, abs=1e-13)
    if K == 8:  # the residual kernel kappa_{>8} is smaller than kappa_{>4}: a smaller Monte Carlo error
        out4 = symmetrized_decomposition(c, U, r, ABS.hermite_coefficients(4), kappa, jnp.asarray(signs),
                                         jnp.asarray(perms))
        assert float(out["variance_se"]) < 0.5 * float(out4["variance_se"])


def test_competitive_ode_equilibrium_rate_and_lambda0_law():
    A, B, kappa, lam = 10.0, 1.0, 1.0, 0.1
    t = np.linspace(0, 2000, 4001)
    p, q = th.competitive_ode(t, 0.01, 0.5, A, B, kappa, lam)
    assert p[-1] == pytest.approx(th.competitive_equilibrium(A, B, kappa, lam)[0], abs=1e-5)
    late = t >= 1500
    rate = -np.polyfit(t[late], np.log(q[late] / p[late]), 1)[0]
    assert rate == pytest.approx(th.competitive_decay_rate(A, B, kappa, lam), rel=0.02)
    t0 = np.array([0.0, 1e5])
    _, q0 = th.competitive_ode(t0, 0.01, 0.5, A, B, kappa, 0.0)
    assert 1e5 * q0[-1] == pytest.approx((A + kappa) / (A * B * kappa), rel=0.01)


def test_reduced_stage_odes_equilibria():
    h = th.HermiteSums.of(ABS)
    d, r, lam = 100, 20, 1.0
    t = np.linspace(0, 400, 801)
    ae = th.alpha_eq(r, lam, h)
    b1, b2 = th.beta_ode(t, ae / d, ae / d, d, r, lam, h, form="main")
    assert b1[-1] == pytest.approx(th.beta_star(r, lam, h), abs=1e-6) and b2[-1] < 1e-6
    assert th.beta_star(r, lam, h) == pytest.approx(0.96169, abs=1e-5)  # spec §4.3 reference
    a, b = th.ab_ode(np.linspace(0, 3000, 3001), 1 / r**2, th.beta_star(r, lam, h) - 1 / r**2, r, lam, h)
    assert a[-1] == pytest.approx(th.a_star(r, lam, h), abs=1e-5) and b[-1] < 1e-6
    assert th.a_star(r, lam, h) == pytest.approx(0.961818, abs=5e-6)  # spec rounds 0.9618197
    # a* minimises 1/2 (1 - c)^2 ||f*||^2 + lam r c / 2 (spec §4, structural fact)
    norm2 = r**2 * h.s0 + r * h.s2p
    cs = np.linspace(0.9, 1.0, 100001)
    best = cs[np.argmin(0.5 * (1 - cs) ** 2 * norm2 + lam * r * cs / 2)]
    assert best == pytest.approx(th.a_star(r, lam, h), abs=2e-6)
    # logistic Stage 1.1 matches its ODE; Stage 2.1 time integral (spec §4.4: 10.66 for r=20, m=250)
    tt = np.linspace(0, 0.5, 11)
    full = th.beta_ode(tt, 0.05, 0.05, 20, 20, 0.0, h, form="full")[0] * 20  # d = r: pure mass dynamics + s2
    assert full[-1] == pytest.approx(20.0, rel=1e-3)
    assert th.stage11_time(0.9, 0.9935, 20, 0.0, h) == pytest.approx(0.101, abs=1e-3)
    t21 = th.alignment_time(th.max_alignment_p0(250, 20), th.HermiteSums.of(ABS, K=4000))
    assert t21 == pytest.approx(10.66, rel=0.01)


def _ctx(objective, d, r, dtype=jnp.float64):
    from twolayer.losses import LOSSES
    from twolayer.nets import NETS
    from twolayer.problem import Problem, make_context

    problem = Problem(NETS.get("mean_field"), ABS, LOSSES.get("square"), "mean", objective)
    arrays = {"X": np.zeros((1, d)), "y": np.zeros(1), "target_dirs": np.eye(d)[:r], "target_coefs": np.ones(r),
              "target_basis": np.eye(d)}
    return make_context(problem, arrays, dtype)


def test_symmetrized_dynamics_equals_explicit_symmetrized_network_drift():
    """m grad_{v_i} L~(V) (reduced, m particles) = m|P| grad_{w~_{i,Id}} L(W~) (explicit m|P| network), sigma_4."""
    d, r, m = 4, 2, 3
    V = jnp.asarray(np.random.default_rng(7).normal(size=(m, d)))
    reduced = m * jax.grad(lambda W: _ctx("population_symmetrized4", d, r).objective({"W": W}))(V)
    elements = list(all_group_elements(d, r))
    W_sym = jnp.concatenate([act_on(V, jnp.asarray(s), p) for s, p in elements])  # block g holds rho_g(v_i)
    explicit = m * len(elements) * jax.grad(lambda W: _ctx("population_hermite4", d, r).objective({"W": W}))(W_sym)
    identity = next(g for g, (s, p) in enumerate(elements) if np.all(s > 0) and np.all(p == np.arange(d)))
    np.testing.assert_allclose(np.asarray(reduced), np.asarray(explicit[identity * m:(identity + 1) * m]),
                               rtol=1e-9, atol=1e-11)


def test_gd_paper_stage_detection_and_substepping():
    from twolayer.theory.stages import stage_state
    from twolayer.train.gd_paper import GDPaperParams, build_gd_paper

    d, r, m = 6, 2, 4
    W = np.zeros((m, d))
    W[0, 0], W[1, 1] = 0.1, 0.1  # aligned neurons with tiny mass: every direction found, window open
    W[2:] = np.random.default_rng(8).normal(size=(2, d))
    found, done, boost, a_hat, b_hat = stage_state(jnp.asarray(W), jnp.eye(d)[:r], 0.5, ABS)
    assert bool(found) and not bool(done)
    assert boost.tolist() == [True, True, False, False]
    np.testing.assert_allclose(np.asarray(a_hat), [0.01 / m, 0.01 / m])
    ctx = _ctx("population", d, r)
    train = GDPaperParams(method="gd_paper", lr=0.01, steps=1, weight_decay=0.5)
    advance = build_gd_paper(train, ctx)
    hyper = {"lr": jnp.asarray(0.01), "weight_decay": jnp.asarray(0.5)}
    out, bad, code = advance({"W": jnp.asarray(W)}, jax.random.PRNGKey(0), -1, 0, 1, ctx, hyper)
    grad = jax.grad(lambda W: ctx.objective({"W": W}))
    V, mult = jnp.asarray(W), jnp.asarray([m, m, 1, 1], dtype=jnp.float64)[:, None]
    for _ in range(m):  # gamma = m sub-steps of lr/gamma; boosted neurons move gamma times faster
        V = V - 0.01 / m * mult * (0.5 * V + m * grad(V))
    np.testing.assert_allclose(np.asarray(out["W"]), np.asarray(V), rtol=1e-12)
    assert int(bad) == -1 and int(code) == 0


def test_reduced_ode_decay_rates():
    """Late rates: (d-r)beta_2/(r beta_1) ~ exp(-4 s2 (1 - beta_1*) t), b_hat/a_hat ~ exp(-4 s_{>=4} (1 - a*) t)."""
    h = th.HermiteSums.of(ABS)
    d, r, lam = 100, 20, 1.0
    t = np.linspace(0, 400, 4001)
    b1, b2 = th.beta_ode(t, 0.2, 0.2, d, r, lam, h, form="main")
    late = t >= 300
    rate = -np.polyfit(t[late], np.log((d - r) * b2[late] / (r * b1[late])), 1)[0]
    assert rate == pytest.approx(th.beta_decay_rate(r, lam, h), rel=0.02)
    assert th.beta_decay_rate(r, lam, h) == pytest.approx(0.04878, rel=1e-3)  # spec §4.3 reference
    t = np.linspace(0, 3000, 3001)
    a, b = th.ab_ode(t, 1 / r**2, th.beta_star(r, lam, h) - 1 / r**2, r, lam, h)
    late = t >= 2000
    rate = -np.polyfit(t[late], np.log(b[late] / a[late]), 1)[0]
    assert rate == pytest.approx(th.ab_decay_rate(r, lam, h), rel=0.02)
    assert th.plateau_loss(r, lam, h) == pytest.approx(0.1909, rel=2e-3)  # spec §4.5 reference


def test_hermite_truncated_activation_and_empirical_objective():
    """sigma_4 = sum_{k<=4} sigma_hat_k h_k matches numpy's HermiteE series, and the empirical sigma_4 loss on n
    samples is an unbiased estimate of the population_hermite4 loss (within 4 SE at n = 100k)."""
    from numpy.polynomial import hermite_e

    from twolayer.losses import LOSSES
    from twolayer.nets import NETS
    from twolayer.population import hermite_truncated
    from twolayer.problem import Problem, make_context

    coeffs = ABS.hermite_coefficients(4)
    z = np.linspace(-3, 3, 13)
    He = hermite_e.hermeval(z, coeffs / np.sqrt([float(math.factorial(k)) for k in range(5)]))
    np.testing.assert_allclose(np.asarray(hermite_truncated(jnp.asarray(z), coeffs)), He, rtol=1e-13, atol=1e-13)
    d, r, m, n = 6, 2, 5, 100_000
    rng = np.random.default_rng(9)
    W = jnp.asarray(rng.normal(size=(m, d)) / np.sqrt(d) * 1.5)
    X = rng.normal(size=(n, d))
    arrays = {"X": X, "y": np.zeros(n), "target_dirs": np.eye(d)[:r], "target_coefs": np.ones(r)}

    def objective(name):
        problem = Problem(NETS.get("mean_field"), ABS, LOSSES.get("square"), "mean", name)
        return make_context(problem, arrays, jnp.float64).objective({"W": W})

    pop, emp = float(objective("population_hermite4")), float(objective("empirical_hermite4"))
    U, norms = unit_rows(W)
    f = np.asarray(hermite_truncated(jnp.asarray(X) @ U.T, coeffs) @ (norms**2 / m))
    y = np.asarray(hermite_truncated(jnp.asarray(X[:, :r]), coeffs)).sum(1)
    per = 0.5 * (f - y) ** 2
    assert emp == pytest.approx(per.mean(), rel=1e-10)  # square loss: 1/(2n) sum (f - y)^2
    assert abs(emp - pop) < 4 * per.std() / np.sqrt(n)


def _truncated_drift_A2(W, r, coeffs):
    """Claim A.2 (tensor form, lambda = 0, gamma = 1): -m grad_{w_i} L for sigma cut at K = len(coeffs) - 1."""
    U, norms = unit_rows(jnp.asarray(W))
    U, norms = np.asarray(U), np.asarray(norms)
    m, d = W.shape
    c = norms**2 / m
    alpha, c2 = c.sum(), np.asarray(coeffs) ** 2
    out = np.zeros_like(W)
    for i in range(m):
        v, vb = W[i], U[i]
        rho = U @ vb
        drift = 2 * c2[0] * (r - alpha) * vb
        for k in range(2, len(coeffs)):
            Tk = np.sum(c * rho**k)
            Tk1 = (c * rho ** (k - 1)) @ U
            Sk = np.sum(vb[:r] ** k)
            Sk1 = np.concatenate([vb[:r] ** (k - 1), np.zeros(d - r)])
            drift = drift + c2[k] * (k * (Sk1 - Tk1) - (k - 2) * (Sk - Tk) * vb)
        out[i] = np.linalg.norm(v) * drift
    return out


def _truncated_drift_A3(W, r, coeffs):
    """Claim A.3 (coordinate form, eq. 8): dv_i/dt = -sum_j [grad_{2j}]_i, valid where vbar_i != 0 (it divides by
    vbar_i); even orders only (odd sigma_hat vanish for |x|)."""
    U, norms = unit_rows(jnp.asarray(W))
    U, norms = np.asarray(U), np.asarray(norms)
    m, d = W.shape
    c = norms**2 / m
    c2 = np.asarray(coeffs) ** 2
    out = np.zeros_like(W)
    for n in range(m):
        v, vb = W[n], U[n]
        rho = U @ vb
        rate = 2 * c2[0] * (r - c.sum()) * np.ones(d)
        for j in range(1, (len(coeffs) - 1) // 2 + 1):
            k = 2 * j
            mixed = (c * rho ** (k - 1)) @ U / vb  # E_mu[||w||^2 <w, v>^{2j-1} w_i / v_i]
            rate = rate + c2[k] * (k * vb ** (k - 2) * (np.arange(d) < r) - k * mixed
                                   - (k - 2) * (np.sum(vb[:r] ** k) - np.sum(c * rho**k)))
        out[n] = rate * v
    return out


def test_claim_A3_coordinate_form_equals_A2_tensor_form_and_the_gradient():
    """Spec P9: Claim A.3's coordinate drift equals Claim A.2's tensor drift for any measure (here a random,
    not symmetric one) where vbar_i != 0, and both equal -m grad L of the engine (sigma cut at order 6)."""
    from twolayer.population import truncated_population_loss

    d, r, m = 5, 2, 4
    W = np.random.default_rng(11).normal(size=(m, d))
    coeffs = ABS.hermite_coefficients(6)
    a2, a3 = _truncated_drift_A2(W, r, coeffs), _truncated_drift_A3(W, r, coeffs)
    np.testing.assert_allclose(a3, a2, rtol=1e-10, atol=1e-12)
    ctx = _ctx("population", d, r)
    engine = -m * jax.grad(lambda V: truncated_population_loss({"W": V}, ctx, 6))(jnp.asarray(W))
    np.testing.assert_allclose(np.asarray(engine), a2, rtol=1e-10, atol=1e-12)


def test_aggregated_T4_matches_the_pairwise_group_moment_and_its_gradient():
    """Spec P11: the pair-free T~_4[y^4] (O(m d)) equals sum_i c_i K_4(u_i, y) (pairwise, exact group moments), and
    its gradient equals autodiff of the pairwise form (1e-10) and central finite differences (h = 1e-5)."""
    from twolayer.theory.symmetry import aggregated_T4

    rng = np.random.default_rng(12)
    d, r, m = 7, 3, 6
    _, c, U = _mf(rng, m, d)
    y = jnp.asarray(rng.normal(size=d))

    def pairwise(y):
        return c @ group_moment(U, y[None], r, 4)[:, 0]

    value, grad = aggregated_T4(c, U, y, r)
    assert float(value) == pytest.approx(float(pairwise(y)), rel=1e-10)
    np.testing.assert_allclose(np.asarray(grad), np.asarray(jax.grad(pairwise)(y)), rtol=1e-10, atol=1e-12)
    h = 1e-5
    fd = np.array([(float(aggregated_T4(c, U, y + h * e, r)[0]) - float(aggregated_T4(c, U, y - h * e, r)[0])) / (2 * h)
                   for e in np.eye(d)])
    np.testing.assert_allclose(fd, np.asarray(grad), rtol=1e-7, atol=1e-9)


def test_equivariance_of_the_explicit_symmetrized_network_under_population_gd():
    """Spec P15 (Claim 1): the explicit m|P|-neuron symmetrized network under population GD keeps
    w~_{i,rho}(t) = rho(w~_{i,Id}(t)) for 100 steps; its T~_2 has zero off-diagonal entries and equal irrelevant
    diagonal entries; and the symmetrized drift of a representative with v_l = 0 has zero l-th component
    (multiplicative dynamics, Remark 1)."""
    d, r, m = 4, 2, 3
    V = np.random.default_rng(13).normal(size=(m, d)) / np.sqrt(d)
    elements = list(all_group_elements(d, r))
    W = jnp.concatenate([act_on(jnp.asarray(V), jnp.asarray(s), p) for s, p in elements])  # block g = rho_g(v_i)
    N = W.shape[0]
    ctx = _ctx("population", d, r)
    grad = jax.jit(jax.grad(lambda W: ctx.objective({"W": W})))
    for _ in range(100):
        W = W - 0.01 * N * grad(W)
    identity = next(g for g, (s, p) in enumerate(elements) if np.all(s > 0) and np.all(p == np.arange(d)))
    base = W[identity * m:(identity + 1) * m]
    for g, (s, p) in enumerate(elements):
        np.testing.assert_allclose(np.asarray(W[g * m:(g + 1) * m]), np.asarray(act_on(base, jnp.asarray(s), p)),
                                   rtol=0, atol=1e-12)
    T2 = np.asarray(W.T @ W) / N
    assert np.max(np.abs(T2 - np.diag(np.diag(T2)))) < 1e-12
    assert np.ptp(np.diag(T2)[r:]) < 1e-12
    V0 = np.asarray(V).copy()
    V0[1, 0], V0[2, 3] = 0.0, 0.0  # a relevant and an irrelevant coordinate at 0
    drift = jax.grad(lambda W: _ctx("population_symmetrized4", d, r).objective({"W": W}))(jnp.asarray(V0))
    assert abs(float(drift[1, 0])) < 1e-14 and abs(float(drift[2, 3])) < 1e-14
    assert abs(float(drift[0, 0])) > 1e-6  # a nonzero coordinate does move


def test_claim_a1_hermite_coefficients_of_abs():
    """Claim A.1: for sigma = |x|, |sigma_hat_k| = Theta(k^{-5/4}), sigma_hat_k = 0 for odd k, and
    sum_{k>=4} 2k sigma_hat_k^2 <= 1. Local log-log slopes over even k: -1.37 (k = 4..20), -1.27 (20..100),
    -1.254 (100..400): they approach -5/4 from below (the exact sigma_hat_2k ~ k^{-5/4} (1 + O(1/k)))."""
    c = np.asarray(make_activation("abs").hermite_coefficients(400))
    k = np.arange(len(c))
    assert np.max(np.abs(c[1::2])) == 0.0
    slopes = []
    for lo, hi in ((4, 20), (20, 100), (100, 400)):
        sel = (k >= lo) & (k <= hi) & (k % 2 == 0)
        slopes.append(np.polyfit(np.log(k[sel]), np.log(np.abs(c[sel])), 1)[0])
    assert slopes[0] < slopes[1] < slopes[2] < -1.25 and abs(slopes[2] + 1.25) < 0.01, slopes
    assert 0.6 < np.sum(2 * k[4:] * c[4:] ** 2) <= 1.0
