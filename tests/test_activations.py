"""Tests for twolayer.activations: Hermite coefficients, dual kernels, subgradients, dtypes, specs.

References are computed independently of the module: numpy versions of each sigma, scipy ``quad``
for Hermite coefficients and moments, and Monte Carlo for the kernels.
"""

import jax

jax.config.update("jax_enable_x64", True)

import math  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from numpy.polynomial import hermite_e  # noqa: E402
from scipy import integrate, special  # noqa: E402

from twolayer.activations import ACTIVATIONS, Activation, make_activation  # noqa: E402
from twolayer.registry import UnknownNameError  # noqa: E402

ALL_NAMES = ["relu", "leaky_relu", "abs", "linear", "sym_gelu", "sym_swish", "erf", "sym_relu"]
SPECS = ["relu", {"name": "leaky_relu", "slope": 0.2}, "leaky_relu", "abs", "linear", "sym_gelu", "sym_swish", "sym_relu"]
CLOSED = ["relu", {"name": "leaky_relu", "slope": 0.2}, {"name": "leaky_relu", "slope": 0.01}, "abs", "linear", "sym_relu"]
SMOOTH = ["sym_gelu", "sym_swish"]


def _ids(spec):
    if isinstance(spec, dict):
        return f"{spec['name']}-{spec['slope']}"
    return spec if isinstance(spec, str) else None


def np_sigma(act: Activation):
    """Independent numpy reference of each activation."""
    a = dict(act.params).get("slope")
    return {
        "relu": lambda x: np.maximum(x, 0.0),
        "leaky_relu": lambda x: np.where(x > 0, x, a * x),
        "abs": np.abs,
        "sym_relu": np.abs,
        "linear": lambda x: x,
        "sym_gelu": lambda x: x * special.erf(x / np.sqrt(2)),
        "sym_swish": lambda x: x * np.tanh(x / 2),
    }[act.name]


def gauss_quad(f):
    """E_{z~N(0,1)} f(z) by quad on (-40, 0) and (0, 40) (kink at 0 allowed)."""
    opts = dict(epsabs=1e-14, epsrel=1e-13, limit=400)
    g = lambda z: f(z) * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)  # noqa: E731
    return integrate.quad(g, -40, 0, **opts)[0] + integrate.quad(g, 0, 40, **opts)[0]


def h(k, z):
    """Orthonormal probabilists' Hermite polynomial He_k / sqrt(k!)."""
    return hermite_e.hermeval(z, [0] * k + [1]) / math.sqrt(math.factorial(k))


def quad_coefficients(act, K):
    sig = np_sigma(act)
    return np.array([gauss_quad(lambda z, k=k: sig(z) * h(k, z)) for k in range(K + 1)])


# ---------------------------------------------------------------------------------------------
# Registry / specs
# ---------------------------------------------------------------------------------------------


def test_registered_names():
    assert ACTIVATIONS.names() == ALL_NAMES
    for name in ALL_NAMES:
        act = ACTIVATIONS.get(name)()
        assert isinstance(act, Activation) and act.name == name


def test_make_activation_specs_and_equality():
    leaky = make_activation({"name": "leaky_relu", "slope": 0.2})
    assert leaky.params == (("slope", 0.2),)
    assert make_activation("leaky_relu").params == (("slope", 0.01),)
    assert make_activation("leaky_relu") == make_activation({"name": "leaky_relu", "slope": 0.01})
    r1, r2 = make_activation("relu"), make_activation("relu")
    assert r1 == r2 and hash(r1) == hash(r2)
    assert make_activation("relu").params == ()
    assert make_activation(leaky) is leaky
    assert make_activation("sym_relu") != make_activation("abs")
    assert make_activation({"name": "leaky_relu", "slope": 1}).params == (("slope", 1.0),)


def test_make_activation_unknown_name_lists_allowed():
    with pytest.raises(UnknownNameError) as info:
        make_activation("tanh")
    for name in ALL_NAMES:
        assert name in str(info.value)
    with pytest.raises(UnknownNameError):
        make_activation({"name": "gelu"})


def test_make_activation_bad_params():
    with pytest.raises(ValueError, match=r"'slop'.*allowed: 'slope'"):
        make_activation({"name": "leaky_relu", "slop": 0.1})
    with pytest.raises(ValueError, match=r"'slope'.*allowed: none"):
        make_activation({"name": "abs", "slope": 0.1})
    with pytest.raises(ValueError, match=r"'slope'.*allowed: 'grad_at_zero'"):
        make_activation({"name": "relu", "slope": 0.1})
    for bad in [1.5, -0.1, True, "0.1"]:
        with pytest.raises(ValueError, match=r"grad_at_zero.*\[0, 1\]"):
            make_activation({"name": "relu", "grad_at_zero": bad})
    for bad in [1.5, -0.1, float("nan"), True, "0.1", None]:
        with pytest.raises(ValueError, match=r"slope.*\[0, 1\]"):
            make_activation({"name": "leaky_relu", "slope": bad})
    with pytest.raises(ValueError, match="name"):
        make_activation({"slope": 0.1})
    with pytest.raises(TypeError):
        make_activation(3)


# ---------------------------------------------------------------------------------------------
# Hermite coefficients
# ---------------------------------------------------------------------------------------------


def test_abs_coefficients_spec_values():
    c = make_activation("abs").hermite_coefficients(12)
    expected = {0: 0.7978846, 2: 0.5641896, 4: -0.1628675, 6: 0.0892062, 8: -0.0596034, 10: 0.0439793, 12: -0.0344511}
    for k, val in expected.items():
        assert c[k] == pytest.approx(val, abs=1e-7)
    assert c[2] == pytest.approx(1 / math.sqrt(math.pi), abs=1e-15)
    assert c[4] == pytest.approx(-1 / math.sqrt(12 * math.pi), abs=1e-15)
    assert np.all(c[1::2] == 0)
    # the explicit closed form sqrt(2/pi) (-1)^{q+1} (2q-3)!! / sqrt((2q)!)
    for q in range(1, 7):
        dfact = math.prod(range(2 * q - 3, 0, -2)) if q > 1 else 1
        closed = math.sqrt(2 / math.pi) * (-1) ** (q + 1) * dfact / math.sqrt(math.factorial(2 * q))
        assert c[2 * q] == pytest.approx(closed, rel=1e-13)


@pytest.mark.parametrize("spec", ["abs", "relu", {"name": "leaky_relu", "slope": 0.2}, "leaky_relu", "linear"], ids=_ids)
def test_closed_form_coefficients_vs_quadrature(spec):
    act = make_activation(spec)
    np.testing.assert_allclose(act.hermite_coefficients(20), quad_coefficients(act, 20), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", SMOOTH)
def test_smooth_coefficients_vs_quadrature_and_spec(name):
    act = make_activation(name)
    c = act.hermite_coefficients(12)
    np.testing.assert_allclose(c, quad_coefficients(act, 12), rtol=0, atol=1e-10)
    expected = {
        "sym_gelu": {0: 0.5641896, 2: 0.5984134, 4: -0.1439559, 6: 0.0551935, 8: -0.0237071, 10: 0.0106900, 12: -0.0049483},
        "sym_swish": {0: 0.4132419, 2: 0.4961704, 4: -0.0756100, 6: 0.0196550, 8: -0.0062407, 10: 0.0022450},
    }[name]
    for k, val in expected.items():
        assert c[k] == pytest.approx(val, abs=1e-7)
    assert np.all(c[1::2] == 0)
    # alternating sign (-1)^{q+1} for q >= 1, as for |x|
    c40 = act.hermite_coefficients(40)
    assert np.all(np.sign(c40[2::2]) == (-1.0) ** np.arange(40 // 2))


def test_coefficients_cached_readonly_and_validated():
    act = make_activation("sym_gelu")
    c = act.hermite_coefficients(30)
    assert c is make_activation("sym_gelu").hermite_coefficients(30)
    assert c.dtype == np.float64 and c.shape == (31,)
    with pytest.raises(ValueError):
        c[0] = 1.0
    # a longer expansion starts with the shorter one
    np.testing.assert_allclose(act.hermite_coefficients(100)[:31], c, atol=1e-13)
    for bad in [-1, 2.5, True]:
        with pytest.raises(ValueError):
            act.hermite_coefficients(bad)


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_second_moment_vs_quadrature(spec):
    act = make_activation(spec)
    sig = np_sigma(act)
    assert act.second_moment() == pytest.approx(gauss_quad(lambda z: sig(z) ** 2), abs=1e-10)


def test_second_moment_spec_values():
    assert make_activation("sym_gelu").second_moment() == pytest.approx(0.700886, abs=1e-6)
    assert make_activation("sym_swish").second_moment() == pytest.approx(0.423102, abs=1e-6)
    assert make_activation("abs").second_moment() == 1.0
    assert make_activation("relu").second_moment() == 0.5
    assert make_activation({"name": "leaky_relu", "slope": 0.2}).second_moment() == pytest.approx(0.52)


@pytest.mark.parametrize("name", SMOOTH + ["linear"])
def test_parseval_smooth(name):
    act = make_activation(name)
    assert np.sum(act.hermite_coefficients(60) ** 2) == pytest.approx(act.second_moment(), abs=1e-10)


def test_parseval_tails_kinked():
    tail_abs = 1 - np.sum(make_activation("abs").hermite_coefficients(50) ** 2)
    assert tail_abs == pytest.approx(4.745e-4, abs=1e-6)
    for K, tail in [(4, 0.018545), (8, 0.0070342), (20, 0.0018491)]:
        assert 1 - np.sum(make_activation("abs").hermite_coefficients(K) ** 2) == pytest.approx(tail, abs=1e-6)
    # relu / leaky: sigma_hat = ((1-a)/2) abs_hat + ((1+a)/2) e_1, so the tail is ((1-a)/2)^2 tail_abs
    for a in [0.0, 0.2]:
        act = make_activation({"name": "leaky_relu", "slope": a}) if a else make_activation("relu")
        tail = act.second_moment() - np.sum(act.hermite_coefficients(50) ** 2)
        assert tail == pytest.approx(((1 - a) / 2) ** 2 * tail_abs, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------

PAIRS = [
    ([1.0, 0.0, 0.0], [0.6, 0.8, 0.0]),  # unit, rho = 0.6
    ([2.0, 0.0, 0.0], [-0.5, 0.3, 0.1]),  # non-unit, negative correlation
    ([0.3, -1.2, 0.5], [0.51, -2.04, 0.85]),  # parallel, different norms
    ([1.0, 1.0, 0.0], [-2.0, -2.0, 0.0]),  # antiparallel
    ([0.7, 0.0, -0.4], [0.0, 1.5, 0.0]),  # orthogonal
]


@pytest.fixture(scope="module")
def gaussian_samples():
    return np.random.default_rng(12345).standard_normal((2_000_000, 3))


def monte_carlo(sig, u, v, X):
    prod = sig(X @ np.asarray(u)) * sig(X @ np.asarray(v))
    return prod.mean(), prod.std() / math.sqrt(len(prod))


@pytest.mark.parametrize("spec", CLOSED, ids=_ids)
def test_kernel_vs_monte_carlo(spec, gaussian_samples):
    act = make_activation(spec)
    assert act.has_dual_kernel
    sig = np_sigma(act)
    for u, v in PAIRS:
        mean, se = monte_carlo(sig, u, v, gaussian_samples)
        got = float(act.kernel(jnp.array(u), jnp.array(v)))
        assert abs(got - mean) < 4 * se + 1e-12, (u, v, got, mean, se)


@pytest.mark.parametrize("name", SMOOTH)
def test_series_kernel_vs_monte_carlo_unit(name, gaussian_samples):
    act = make_activation(name)
    assert not act.has_dual_kernel and act.dual_kernel(0.3) is None
    sig = np_sigma(act)
    for u, v in PAIRS:
        u, v = np.array(u) / np.linalg.norm(u), np.array(v) / np.linalg.norm(v)
        mean, se = monte_carlo(sig, u, v, gaussian_samples)
        assert abs(float(act.dual_kernel_series(u @ v)) - mean) < 4 * se
    with pytest.raises(NotImplementedError, match="homogeneous"):
        act.kernel(jnp.ones(3), jnp.ones(3))


@pytest.mark.parametrize(
    "spec, K, tol",
    [("abs", 2000, 1e-5), ("abs", 4000, 1e-6), ("relu", 2000, 3e-6),
     ({"name": "leaky_relu", "slope": 0.2}, 2000, 2e-6), ("linear", 5, 1e-15)],
    ids=["abs-2000", "abs-4000", "relu", "leaky-0.2", "linear"],
)  # fmt: skip
def test_closed_form_vs_hermite_series(spec, K, tol):
    act = make_activation(spec)
    rho = jnp.linspace(-1.0, 1.0, 201)
    err = jnp.max(jnp.abs(act.dual_kernel(rho) - act.dual_kernel_series(rho, K)))
    assert err < tol
    assert float(act.dual_kernel(1.0)) == pytest.approx(act.second_moment(), abs=1e-14)


def test_kernel_special_values():
    abs_, relu = make_activation("abs"), make_activation("relu")
    assert float(abs_.dual_kernel(0.0)) == pytest.approx(2 / math.pi)
    assert float(abs_.dual_kernel(-1.0)) == pytest.approx(1.0)
    assert float(relu.dual_kernel(0.0)) == pytest.approx(1 / (2 * math.pi))
    assert float(relu.dual_kernel(-1.0)) == pytest.approx(0.0, abs=1e-16)
    # clipping: rounding overshoots give kappa(+-1)
    assert float(abs_.dual_kernel(1.0 + 1e-12)) == float(abs_.dual_kernel(1.0))
    assert float(relu.dual_kernel(-1.5)) == float(relu.dual_kernel(-1.0))


@pytest.mark.parametrize("spec", CLOSED, ids=_ids)
def test_dual_kernel_gradient(spec):
    act = make_activation(spec)
    grad = jax.vmap(jax.grad(act.dual_kernel))
    # finite and equal to the closed-form derivative everywhere, including |rho| = 1
    rho = jnp.linspace(-1.0, 1.0, 41)
    a = dict(act.params).get("slope", 0.0)
    expected = {
        "abs": (2 / np.pi) * np.arcsin(rho),
        "sym_relu": (2 / np.pi) * np.arcsin(rho),
        "relu": (np.pi - np.arccos(rho)) / (2 * np.pi),
        "leaky_relu": a + (1 - a) ** 2 * (np.pi - np.arccos(rho)) / (2 * np.pi),
        "linear": np.ones_like(rho),
    }[act.name]
    np.testing.assert_allclose(grad(rho), expected, atol=1e-14)
    # and with central finite differences in the interior
    r, eps = jnp.linspace(-0.95, 0.95, 9), 1e-6
    fd = (act.dual_kernel(r + eps) - act.dual_kernel(r - eps)) / (2 * eps)
    np.testing.assert_allclose(grad(r), fd, atol=1e-8)


@pytest.mark.parametrize("name", SMOOTH + ["abs"])
def test_series_gradient_finite(name):
    act = make_activation(name)
    g = jax.vmap(jax.grad(lambda r: act.dual_kernel_series(r, 40)))(jnp.array([-1.0, 0.0, 0.5, 1.0]))
    assert jnp.all(jnp.isfinite(g))
    c = act.hermite_coefficients(40)
    assert float(g[1]) == pytest.approx(c[1] ** 2, abs=1e-15)  # kappa'(0) = sigma_hat_1^2


def test_kernel_batched_zero_vector_and_homogeneity():
    act = make_activation("relu")
    u = jnp.array([[1.0, 2.0, 0.0], [0.0, 0.0, 0.0], [0.5, -0.5, 1.0]])
    v = jnp.array([[0.0, 1.0, 3.0], [1.0, 1.0, 1.0], [-1.0, 0.2, 0.0]])
    out = act.kernel(u, v)
    assert out.shape == (3,)
    for i in range(3):
        assert float(out[i]) == pytest.approx(float(act.kernel(u[i], v[i])), rel=1e-14)
    assert float(out[1]) == 0.0
    g = jax.grad(lambda w: act.kernel(w, v[1]))(jnp.zeros(3))
    assert jnp.all(jnp.isfinite(g))
    # ||u|| ||v|| kappa(cos) identity
    cos = jnp.dot(u[0], v[0]) / (jnp.linalg.norm(u[0]) * jnp.linalg.norm(v[0]))
    assert float(out[0]) == pytest.approx(float(jnp.linalg.norm(u[0]) * jnp.linalg.norm(v[0]) * act.dual_kernel(cos)))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-3, 3), min_size=2, max_size=2),
    st.lists(st.floats(-3, 3), min_size=2, max_size=2),
    st.floats(0.1, 10),
    st.sampled_from(["relu", "abs", "linear", "leaky_relu"]),
)
def test_kernel_symmetric_and_homogeneous(u, v, c, name):
    act = make_activation(name)
    u, v = jnp.array(u), jnp.array(v)
    k = float(act.kernel(u, v))
    assert float(act.kernel(v, u)) == pytest.approx(k, rel=1e-12, abs=1e-12)
    assert float(act.kernel(c * u, v)) == pytest.approx(c * k, rel=1e-10, abs=1e-12)
    assert float(act.kernel(u, u)) == pytest.approx(float(jnp.dot(u, u)) * act.second_moment(), rel=1e-10, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Elementwise functions: values, flags, subgradients, dtypes, transformations
# ---------------------------------------------------------------------------------------------

XS = np.array([-3.0, -1.1, -0.2, 0.0, 0.3, 1.0, 2.5])


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_values_match_reference(spec):
    act = make_activation(spec)
    np.testing.assert_allclose(act(jnp.asarray(XS)), np_sigma(act)(XS), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_even_and_homogeneous_flags(spec):
    act = make_activation(spec)
    x = jnp.asarray(XS)
    is_even = bool(jnp.allclose(act(-x), act(x), atol=1e-14))
    is_homog = all(bool(jnp.allclose(act(c * x), c * act(x), atol=1e-13)) for c in (0.5, 2.0, 7.0))
    assert act.even == is_even
    assert act.homogeneous == is_homog


@pytest.mark.parametrize(
    "spec, expected",
    [("relu", 0.0), ("leaky_relu", 0.01), ({"name": "leaky_relu", "slope": 0.3}, 0.3), ("abs", 0.0), ("sym_relu", 0.0),
     ("linear", 1.0), ("sym_gelu", 0.0), ("sym_swish", 0.0)],
    ids=_ids,
)  # fmt: skip
def test_subgradient_at_zero(spec, expected):
    act = make_activation(spec)
    for dtype in (jnp.float64, jnp.float32):
        g = jax.grad(act)(jnp.zeros((), dtype))
        assert g.dtype == dtype
        assert float(g) == pytest.approx(expected, abs=1e-7)


def test_subgradients_away_from_zero():
    g = lambda spec, x: float(jax.grad(make_activation(spec))(x))  # noqa: E731
    assert (g("relu", 2.0), g("relu", -2.0)) == (1.0, 0.0)
    assert g({"name": "leaky_relu", "slope": 0.3}, -2.0) == pytest.approx(0.3)
    assert (g("abs", -2.0), g("abs", 2.0)) == (-1.0, 1.0)


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_float32_preserved(spec):
    act = make_activation(spec)
    x = jnp.asarray(XS, dtype=jnp.float32)
    assert act(x).dtype == jnp.float32
    assert jax.vmap(jax.grad(act))(x).dtype == jnp.float32
    rho = jnp.linspace(-1, 1, 5, dtype=jnp.float32)
    assert act.dual_kernel_series(rho, 20).dtype == jnp.float32
    assert jax.grad(lambda r: act.dual_kernel_series(r, 20))(jnp.float32(0.3)).dtype == jnp.float32
    if act.has_dual_kernel:
        assert act.dual_kernel(rho).dtype == jnp.float32
        assert jax.grad(act.dual_kernel)(jnp.float32(1.0)).dtype == jnp.float32
    if act.homogeneous:
        u = jnp.ones((4, 3), jnp.float32)
        assert act.kernel(u, 2 * u).dtype == jnp.float32
        assert jax.grad(lambda w: act.kernel(w, u[0]))(u[1]).dtype == jnp.float32


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_jit_vmap(spec):
    act = make_activation(spec)
    x = jnp.asarray(XS)
    np.testing.assert_allclose(jax.jit(act)(x), act(x), rtol=1e-14)
    np.testing.assert_allclose(jax.vmap(act)(x), act(x), rtol=1e-14)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(act)))(x), jax.vmap(jax.grad(act))(x), rtol=1e-14)
    rho = jnp.linspace(-1, 1, 7)
    series = jax.jit(act.dual_kernel_series, static_argnums=1)
    np.testing.assert_allclose(series(rho, 30), act.dual_kernel_series(rho, 30), rtol=1e-13)
    if act.has_dual_kernel:
        np.testing.assert_allclose(jax.jit(jax.vmap(act.dual_kernel))(rho), act.dual_kernel(rho), rtol=1e-14)


def test_activation_as_static_jit_argument():
    traces = []

    def apply(act, x):
        traces.append(act.name)
        return act(x)

    f = jax.jit(apply, static_argnums=0)
    x = jnp.asarray(XS)
    f(make_activation("relu"), x)
    f(make_activation("relu"), x)  # an equal activation built anew: no retrace
    f(make_activation({"name": "leaky_relu", "slope": 0.2}), x)
    assert traces == ["relu", "leaky_relu"]


def test_nan_propagates():
    for spec in SPECS:
        assert bool(jnp.isnan(make_activation(spec)(jnp.nan)))


def test_sym_relu_is_abs_under_its_own_name():
    sym, abs_ = make_activation("sym_relu"), make_activation("abs")
    assert sym.name == "sym_relu"
    x = jnp.asarray(XS)
    np.testing.assert_array_equal(sym(x), abs_(x))
    np.testing.assert_array_equal(sym.hermite_coefficients(10), abs_.hermite_coefficients(10))
    assert sym.even and sym.homogeneous


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fast_arcsin_within_two_ulp(dtype):
    """The vectorized arcsin (fdlibm rational form) against numpy's, on a dense grid and at the branch
    point 1/2, near +-1, at 0 and at subnormals."""
    from twolayer.activations import arcsin

    ftype = np.dtype(dtype).type
    x = np.concatenate([np.linspace(-1.0, 1.0, 400_001), np.nextafter(ftype(0.5), ftype([0.0, 1.0])),
                        np.nextafter(ftype(1.0), ftype(0.0)) * np.array([1, -1]), [0.0, 1e-300, -1e-30, 0.5, -0.5]])
    x = x.astype(dtype)
    got, ref = np.asarray(jax.jit(arcsin)(jnp.asarray(x))), np.arcsin(x)
    assert got.dtype == np.dtype(dtype)
    ulp = np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(dtype))
    assert ulp.max() <= 2.0, x[np.argmax(ulp)]
    assert np.all(np.sign(got) == np.sign(ref))
    assert got[np.searchsorted(x[:400_001], 1.0)] == ftype(np.pi / 2)
