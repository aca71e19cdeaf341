"""The Gaussian integrals of the online-SGD ODEs (``twolayer.theory.gaussian_integrals``) against an independent
deterministic quadrature (scipy) and against Monte Carlo at 5 standard errors, for erf, relu, abs and linear,
including the singular covariances of repeated arguments (I3(i, k, i), I4(i, k, i, k), ...)."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special

from twolayer.theory import gaussian_integrals as gi

NAMES = ("erf", "relu", "abs", "linear")
MC_SAMPLES = 200_000
MC_SIGMAS = 5.0


def random_cov(rng, n: int) -> np.ndarray:
    A = rng.normal(size=(n, n))
    return A @ A.T / n + 0.1 * np.eye(n)


# -- independent references -------------------------------------------------------------------------

def gauss_hermite(fn, C: np.ndarray, nodes: int = 24) -> float:
    """E[fn(u)] for u ~ N(0, C) by tensor Gauss-Hermite in whitened coordinates (smooth fn only: erf)."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / math.sqrt(2 * math.pi)
    n = len(C)
    L = np.linalg.cholesky(C + 1e-300 * np.eye(n))
    grids = np.meshgrid(*([x] * n), indexing="ij")
    z = np.stack([g.ravel() for g in grids], axis=1)
    weight = np.prod(np.stack(np.meshgrid(*([w] * n), indexing="ij")), axis=0).ravel()
    return float(np.sum(weight * fn(z @ L.T)))


def polar_2d(fn, C2: np.ndarray) -> float:
    """E[fn(u)] for u ~ N(0, C2) in 2-D with fn positively homogeneous of degree 2: (1/pi) int fn(L e_theta)
    d theta, split at the kinks of relu and abs (where a coordinate of L e_theta vanishes)."""
    L = np.linalg.cholesky(C2)
    kinks = sorted({(math.atan2(-L[i, 0], L[i, 1]) + k * math.pi) % (2 * math.pi) for i in range(2) for k in (0, 1)})
    edges = [0.0, *kinks, 2 * math.pi]
    total = 0.0
    for a, b in zip(edges, edges[1:]):
        if b > a:
            total += integrate.quad(lambda th: fn(L @ np.array([math.cos(th), math.sin(th)])), a, b,
                                    epsabs=1e-13, epsrel=1e-12)[0]
    return total / math.pi


def orthant(h, k, rho):
    """P(X < h, Y < k) for standard bivariate normal X, Y with correlation rho (Owen's T)."""
    if h == 0:
        h = 1e-300
    if k == 0:
        k = 1e-300
    s = math.sqrt(1 - rho * rho)
    ah, ak = (k / h - rho) / s, (h / k - rho) / s
    beta = 0.0 if h * k > 0 or (h * k == 0 and h + k >= 0) else 0.5
    return 0.5 * (special.ndtr(h) + special.ndtr(k)) - special.owens_t(h, ah) - special.owens_t(k, ak) - beta


def i4_by_conditioning(name: str, C: np.ndarray) -> float:
    """I4 = E[g(u3) g(u4) E[g'(u1) g'(u2) | u3, u4]] with the inner expectation a bivariate normal orthant
    probability (Owen's T) and the outer 2-D integral by adaptive quadrature in polar coordinates of the
    whitened (u3, u4), split at the kinks. An independent reduction from the interpolation integral."""
    B = C[2:, 2:]
    A = C[:2, 2:]
    coef = A @ np.linalg.inv(B)
    S = C[:2, :2] - coef @ A.T
    s1, s2 = math.sqrt(S[0, 0]), math.sqrt(S[1, 1])
    rho = S[0, 1] / (s1 * s2)
    L = np.linalg.cholesky(B)
    g = (lambda x: max(x, 0.0)) if name == "relu" else abs

    def inner(u):
        m = coef @ u
        h, k = m[0] / s1, m[1] / s2  # P(u1 > 0, u2 > 0) = P(-e1 < m1, -e2 < m2)
        pp = orthant(h, k, rho)
        if name == "relu":
            return pp
        return 4 * pp - 2 * special.ndtr(h) - 2 * special.ndtr(k) + 1

    def integrand(r, th):
        u = L @ np.array([r * math.cos(th), r * math.sin(th)])
        return g(u[0]) * g(u[1]) * inner(u) * r * math.exp(-0.5 * r * r) / (2 * math.pi)

    kinks = sorted({(math.atan2(-L[i, 0], L[i, 1]) + k * math.pi) % (2 * math.pi) for i in range(2) for k in (0, 1)})
    edges = [0.0, *kinks, 2 * math.pi]
    total = 0.0
    for a, b in zip(edges, edges[1:]):
        if b > a:
            total += integrate.dblquad(integrand, a, b, 0.0, 12.0, epsabs=1e-11, epsrel=1e-10)[0]
    return total


def integrands(name: str):
    g = {"erf": lambda x: special.erf(x / math.sqrt(2)), "relu": lambda x: np.maximum(x, 0),
         "abs": np.abs, "linear": lambda x: x}[name]
    dg = {"erf": lambda x: math.sqrt(2 / math.pi) * np.exp(-x * x / 2), "relu": lambda x: (x > 0) * 1.0,
          "abs": np.sign, "linear": np.ones_like}[name]
    return {
        "i2": lambda u: g(u[..., 0]) * g(u[..., 1]),
        "j2": lambda u: dg(u[..., 0]) * dg(u[..., 1]),
        "i3": lambda u: dg(u[..., 0]) * u[..., 1] * g(u[..., 2]),
        "i4": lambda u: dg(u[..., 0]) * dg(u[..., 1]) * g(u[..., 2]) * g(u[..., 3]),
    }


@functools.lru_cache(maxsize=None)
def compiled(name: str, which: str):
    return jax.jit(getattr(gi.INTEGRALS.get(name), which))


def value(name: str, which: str, C: np.ndarray) -> float:
    return float(compiled(name, which)(jnp.asarray(C)))


# -- tests ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_against_deterministic_quadrature(name):
    """I2, J2, I3, I4 on random nondegenerate covariances agree with an independent quadrature: Gauss-Hermite for
    the smooth erf, the exact polar form of degree-2 homogeneous integrands for relu/abs I2, J2 and I3 (after
    conditioning u2 on (u1, u3)), the Owen's-T conditioning of I4; linear is exact."""
    rng = np.random.default_rng(11)
    fns = integrands(name)
    for _ in range(2):
        C4 = random_cov(rng, 4)
        if name == "erf":
            refs = {w: gauss_hermite(fns[w], C4[:n, :n]) for w, n in (("i2", 2), ("j2", 2), ("i3", 3), ("i4", 4))}
        elif name == "linear":
            refs = {"i2": C4[0, 1], "j2": 1.0, "i3": C4[1, 2], "i4": C4[2, 3]}
        else:
            g = (lambda x: max(x, 0.0)) if name == "relu" else abs
            dg = (lambda x: float(x > 0)) if name == "relu" else (lambda x: float(np.sign(x)))
            C3 = C4[:3, :3]
            pair = C3[np.ix_([0, 2], [0, 2])]
            slope = C3[1, [0, 2]] @ np.linalg.inv(pair)  # E[u2 | u1, u3] = slope . (u1, u3)
            refs = {
                "i2": polar_2d(lambda u: g(u[0]) * g(u[1]), C4[:2, :2]),
                "i3": polar_2d(lambda u: dg(u[0]) * (slope @ u) * g(u[1]), pair),
                "i4": i4_by_conditioning(name, C4),
            }
            # J2 is degree 0: E = (1/2 pi) int over the circle; written as degree 2 by dividing by |z|^2 = 2 on average
            refs["j2"] = 0.5 * polar_2d(lambda u: dg(u[0]) * dg(u[1]) * float(np.sum(np.linalg.solve(
                np.linalg.cholesky(C4[:2, :2]), u) ** 2)), C4[:2, :2])
        for which, ref in refs.items():
            n = {"i2": 2, "j2": 2, "i3": 3, "i4": 4}[which]
            got = value(name, which, C4[:n, :n])
            assert got == pytest.approx(ref, rel=1e-7, abs=1e-9), (name, which, got, ref)
        if name in gi.HOMOGENEOUS:  # the orthant reduction the ODE uses, against the same reference
            got = float(jax.jit(functools.partial(gi.orthant_i4, name))(jnp.asarray(C4)))
            assert got == pytest.approx(refs["i4"], rel=1e-7, abs=1e-9), (name, "orthant i4", got, refs["i4"])


REPEATS = [(0, 1, 2, 3), (0, 1, 0, 2), (0, 0, 1, 2), (0, 1, 2, 2), (0, 1, 0, 1), (0, 0, 1, 1), (0, 0, 0, 1),
           (0, 1, 1, 0)]


@pytest.mark.parametrize("name", NAMES)
def test_against_monte_carlo_with_repeated_arguments(name):
    """Every integral, at the repeated arguments the ODEs evaluate (singular covariances), lies within 5
    standard errors of a Monte Carlo estimate with 200,000 samples (one draw per covariance)."""
    rng = np.random.default_rng(5)
    fns = integrands(name)
    for idx in REPEATS:
        base = random_cov(rng, 4)
        C = base[np.ix_(idx, idx)]
        u = rng.multivariate_normal(np.zeros(4), C, size=MC_SAMPLES, method="eigh")
        for which, n in (("i2", 2), ("j2", 2), ("i3", 3), ("i4", 4)):
            f = fns[which](u[:, :n])  # the leading n coordinates have covariance C[:n, :n]
            mean, se = float(f.mean()), float(f.std() / math.sqrt(MC_SAMPLES))
            got = value(name, which, C[:n, :n])
            assert abs(got - mean) <= MC_SIGMAS * se + 1e-12, (name, which, idx, got, mean, se)


def test_i4_quadrature_converges():
    """The interpolation integral of relu/abs I4 at 16 Gauss-Legendre nodes agrees with 64 nodes to 1e-9,
    also at singular covariances (repeated arguments), so I4_NODES = 16 (s = 1 - tau^4) is solver-grade, not a sampling error."""
    rng = np.random.default_rng(3)
    for name in ("relu", "abs"):
        fns = {n: jax.jit(functools.partial(gi.interpolation_i4, name, nodes=n)) for n in (16, 64)}
        for idx in REPEATS:
            C = jnp.asarray(random_cov(rng, 4)[np.ix_(idx, idx)])
            coarse, fine = (float(fns[n](C)) for n in (16, 64))
            assert abs(coarse - fine) < 1e-9


def test_relu_is_half_linear_plus_half_abs():
    """relu = (x + |x|)/2 and relu' = (1 + sign)/2: I2_relu = (C12 + I2_abs)/4 is an identity between the closed
    forms that any wrong constant would break."""
    rng = np.random.default_rng(2)
    C = jnp.asarray(random_cov(rng, 2))
    assert value("relu", "i2", C) == pytest.approx((float(C[0, 1]) + value("abs", "i2", C)) / 4, rel=1e-12)
    assert value("relu", "j2", C) == pytest.approx((1 + value("abs", "j2", C)) / 4, rel=1e-12)


PAIRED = [idx for idx in REPEATS if max(idx.count(j) for j in idx) < 3]  # no three arguments coincide


@pytest.mark.parametrize("name", ["relu", "abs"])
def test_orthant_i4_against_monte_carlo_and_the_interpolation_integral(name):
    """The orthant reduction of relu/abs I4 (Stein's lemma on u4, D4 by Plackett's identity; the ODE's fast I4)
    at every repeated-argument pattern without a triple (the ODE replaces triples by closed forms): within 5 SE of
    Monte Carlo, and within 1e-8 of the interpolation integral at 400 nodes (measured: <= 6e-10 over 30 draws of
    each pattern, the interpolation's own error included; 1e-8 is the ODE's rtol)."""
    rng = np.random.default_rng(8)
    fast = jax.jit(functools.partial(gi.orthant_i4, name))
    ref = jax.jit(functools.partial(gi.interpolation_i4, name, nodes=400))
    fn = integrands(name)["i4"]
    for idx in PAIRED:
        C = random_cov(rng, 4)[np.ix_(idx, idx)]
        got = float(fast(jnp.asarray(C)))
        assert abs(got - float(ref(jnp.asarray(C)))) < 1e-8, (name, idx)
        f = fn(rng.multivariate_normal(np.zeros(4), C, size=MC_SAMPLES, method="eigh"))
        assert abs(got - f.mean()) <= MC_SIGMAS * f.std() / math.sqrt(MC_SAMPLES) + 1e-12, (name, idx)


def test_orthant_i4_quadrature_converges():
    """The Plackett integral at ORTHANT_NODES = 16 agrees with 12 nodes to 1e-8 at every pattern of ``PAIRED``
    (measured 3.5e-9 for abs; 8 nodes are off by 7e-8), so the node count is not the error that matters."""
    rng = np.random.default_rng(4)
    for name in ("relu", "abs"):
        fns = {n: jax.jit(functools.partial(gi.orthant_i4, name, nodes=n)) for n in (12, gi.ORTHANT_NODES)}
        for idx in PAIRED:
            C = jnp.asarray(random_cov(rng, 4)[np.ix_(idx, idx)])
            assert abs(float(fns[12](C)) - float(fns[gi.ORTHANT_NODES](C))) < 1e-8, (name, idx)


def test_fast_asin_equals_arcsin():
    """The Cephes-style arcsin of the relu/abs D4 integrand against numpy's on a dense grid, near +-1 (where the
    second branch's sqrt(2 (1 - |x|)) carries it) and at the branch point 0.625: within 2 ulp (4.5e-16, absolute and
    relative; measured 1 ulp)."""
    x = np.concatenate([np.linspace(-1, 1, 400_001), 1 - np.geomspace(1e-17, 0.4, 2000),
                        -1 + np.geomspace(1e-17, 0.4, 2000), np.geomspace(1e-300, 1e-2, 200),
                        np.nextafter(0.625, [0.0, 1.0]), [0.625, 0.0, -0.0]])
    got = np.asarray(jax.jit(gi.fast_asin)(jnp.asarray(x)))
    assert np.max(np.abs(got - np.arcsin(x))) <= 4.5e-16
    assert np.all(np.abs(got[x != 0] - np.arcsin(x[x != 0])) <= 4.5e-16 * np.abs(np.arcsin(x[x != 0])))


def permuted(C, order):
    return C[np.ix_(order, order)]


@pytest.mark.parametrize("name", ["relu", "abs"])
def test_sets_i4_every_split_against_quadrature_and_monte_carlo(name):
    """The batched I4 of four distinct fields (``sets_i4``: one D4 integral and six closed pair weights shared by the
    six placements of g'; second-order Stein) against, for every placement, the orthant reduction per tuple (1e-12:
    the same D4 integrand; measured 1e-15), the independent Owen's-T quadrature (rel 1e-7, as above) and Monte Carlo
    at 5 SE (one 200,000-sample draw for the six products)."""
    rng = np.random.default_rng(21)
    fn = integrands(name)["i4"]
    C = random_cov(rng, 4)
    got = np.asarray(jax.jit(functools.partial(gi.sets_i4, name))(jnp.asarray(C)))
    u = rng.multivariate_normal(np.zeros(4), C, size=MC_SAMPLES, method="eigh")
    for j, (s, t) in enumerate(gi.PAIRS4):
        order = [s, t, *(m for m in range(4) if m not in (s, t))]
        per_tuple = float(jax.jit(functools.partial(gi.orthant_i4, name))(jnp.asarray(permuted(C, order))))
        assert abs(got[j] - per_tuple) < 1e-12, (name, (s, t))
        ref = i4_by_conditioning(name, permuted(C, order))
        assert got[j] == pytest.approx(ref, rel=1e-7, abs=1e-9), (name, (s, t), got[j], ref)
        f = fn(u[:, order])
        assert abs(got[j] - f.mean()) <= MC_SIGMAS * f.std() / math.sqrt(MC_SAMPLES) + 1e-12, (name, (s, t))


COPIES = [(0, 0, 1, 2), (0, 1, 2, 2), (0, 1, 0, 2), (0, 1, 1, 2), (0, 1, 2, 0), (0, 1, 2, 1), (0, 1, 0, 1),
          (0, 0, 1, 1), (0, 1, 1, 0)]  # every placement of one coinciding pair (and two pairs), no triple


@pytest.mark.parametrize("name", ["relu", "abs"])
def test_copy_i4_at_every_repeat_pattern(name):
    """I4 with two coinciding arguments and D4 in closed form (``copy_i4``: D4 = alpha^4 + alpha^2 beta^2 sum of
    pair sign moments + beta^4 E[s_p s_q] of the other two), at every placement of the copy the batched ODE field
    meets: equal to the orthant reduction with its D4 integral (1e-10; measured <= 1.5e-12), within 1e-8 of the
    400-node interpolation integral (the bound of the test above) and within 5 SE of Monte Carlo."""
    rng = np.random.default_rng(22)
    fast = functools.partial(gi.copy_i4, name)
    per_tuple = jax.jit(functools.partial(gi.orthant_i4, name))
    ref = jax.jit(functools.partial(gi.interpolation_i4, name, nodes=400))
    fn = integrands(name)["i4"]
    for idx in COPIES:
        C = random_cov(rng, 4)[np.ix_(idx, idx)]
        pair = next((p, q) for p, q in gi.PAIRS4 if idx[p] == idx[q])
        got = float(jax.jit(functools.partial(fast, pair=pair))(jnp.asarray(C)))
        assert abs(got - float(per_tuple(jnp.asarray(C)))) < 1e-10, (name, idx)
        assert abs(got - float(ref(jnp.asarray(C)))) < 1e-8, (name, idx)
        f = fn(rng.multivariate_normal(np.zeros(4), C, size=MC_SAMPLES, method="eigh"))
        assert abs(got - f.mean()) <= MC_SIGMAS * f.std() / math.sqrt(MC_SAMPLES) + 1e-12, (name, idx)
