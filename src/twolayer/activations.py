"""Activation functions with their Gaussian (Hermite / dual-kernel) machinery.

An :class:`Activation` bundles an elementwise, jax-traceable ``sigma`` with everything the population
(infinite-data) code needs about it under ``z ~ N(0, 1)``:

* Hermite coefficients ``sigma_hat_k = E[sigma(z) h_k(z)]`` in the orthonormal probabilists' basis
  ``h_k = He_k / sqrt(k!)`` (spec §2.1), so ``sigma = sum_k sigma_hat_k h_k`` and, by Parseval,
  ``sum_k sigma_hat_k^2 = E[sigma(z)^2]``;
* the dual kernel ``kappa(rho) = E[sigma(u.x) sigma(v.x)] = sum_k sigma_hat_k^2 rho^k`` for unit ``u, v``
  with ``<u, v> = rho`` and ``x ~ N(0, I_d)`` (closed form where one exists, truncated series otherwise);
* the kernel for arbitrary (non-unit) ``u, v``: ``||u|| ||v|| kappa(cos(u, v))`` for positively
  1-homogeneous ``sigma``.

Subgradient convention at the kink (what ``jax.grad`` returns at exactly 0): ``relu'(0) = 0`` (or the
``grad_at_zero`` parameter, ``{"name": "relu", "grad_at_zero": a}``),
``leaky_relu'(0) = slope``, ``abs'(0) = 0``. All functions keep the input dtype (float32 stays float32).

Activations are built from specs by :func:`make_activation` (``"relu"`` or
``{"name": "leaky_relu", "slope": 0.2}``); the :data:`ACTIVATIONS` registry maps each name to a factory
``factory(**params) -> Activation``. Activations compare and hash by ``(name, params, even, homogeneous)``,
so they can be passed to ``jax.jit`` as static arguments.

What the rest of the engine needs to know about an activation is a field of its record, never looked up
by its name: ``kinks`` (where sigma' jumps), ``piecewise_linear`` (the :class:`Kink` at 0 of a piecewise-linear
activation: the event-driven flows need one) and, read from it, ``leaky_alpha`` (the margin theory of Lyu et
al. 2021). Adding an activation is one factory here (and its docs and tests); ``tests/test_conformance.py``
checks every registered activation's declared facts against its function.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from twolayer.numerics import safe_norm
from twolayer.registry import Registry, UnknownNameError

__all__ = ["ACTIVATIONS", "Activation", "Kink", "activation_spec", "leaky_alpha", "make_activation", "UnknownNameError"]

ArrayLike = object  # jax arrays, numpy arrays and Python scalars are all accepted

_SQRT2 = math.sqrt(2.0)


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------


def _as_float(x) -> jax.Array:
    """``x`` as a floating jax array, keeping float32/float64 as they are (ints become floats)."""
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.promote_types(x.dtype, jnp.float32))


def _clip_unit(rho: jax.Array) -> jax.Array:
    """Clip to [-1, 1] with a straight-through gradient.

    The value is ``clip(rho, -1, 1)``; the derivative is 1 everywhere, so a kernel's derivative at a
    rounding-error overshoot such as ``rho = 1 + 1e-16`` is its one-sided derivative at 1 (``jnp.clip``
    would give 0 outside and 1/2 at exactly +-1).
    """
    return rho + lax.stop_gradient(jnp.clip(rho, -1.0, 1.0) - rho)


def _with_derivative(value_and_derivative: Callable) -> Callable:
    """``rho -> kappa(rho)`` as a ``jax.custom_jvp`` whose derivative is the closed form.

    ``value_and_derivative(rho)`` returns ``(kappa(rho), kappa'(rho))`` so that the two share their
    transcendental terms. The closed-form kernels contain terms such as ``sqrt(1 - rho^2)`` and
    ``rho * arcsin(rho)`` whose individual derivatives are infinite at ``|rho| = 1`` although their sum's
    is finite; automatic differentiation would give ``inf - inf = nan`` there. ``rho`` is assumed
    already in [-1, 1].
    """
    f = jax.custom_jvp(lambda rho: value_and_derivative(rho)[0])

    def jvp(primals, tangents):
        value, derivative = value_and_derivative(primals[0])
        return value, derivative * tangents[0]

    f.defjvp(jvp)
    return f


# fdlibm's (e_asin.c) rational approximation asin(s) = s + s * t P(t) / Q(t), t = s^2, on |s| <= 0.5.
_ASIN_P = (1.66666666666666657415e-01, -3.25565818622400915405e-01, 2.01212532134862925881e-01,
           -4.00555345006794114027e-02, 7.91534994289814532176e-04, 3.47933107596021167570e-05)
_ASIN_Q = (-2.40339491173441421878e+00, 2.02094576023350569471e+00, -6.88283971605453293030e-01,
           7.70381505559019352791e-02)


def arcsin(x: jax.Array) -> jax.Array:
    """``arcsin(x)`` on [-1, 1] by fdlibm's rational approximation, within 2 ulp, branch-free.

    On |x| < 1/2 it is ``x + x R(x^2)``; above, ``pi/2 - 2 arcsin(s)`` with ``s = sqrt((1 - |x|)/2) <= 1/2``
    (``1 - |x|`` is exact there). Only multiplies, one division and one square root, so XLA vectorizes
    it; ``jnp.arcsin`` lowers to a scalar ``atan2`` call per element on the CPU, 5-8x slower, and the
    dual kernels of the population loss evaluate it on every entry of an [m, m] Gram matrix per step.
    """
    a = jnp.abs(x)
    small = a < 0.5
    t = jnp.where(small, a * a, 0.5 * (1.0 - a))
    s = jnp.where(small, a, jnp.sqrt(t))
    p, q = _ASIN_P, _ASIN_Q
    num = t * (p[0] + t * (p[1] + t * (p[2] + t * (p[3] + t * (p[4] + t * p[5])))))
    den = 1.0 + t * (q[0] + t * (q[1] + t * (q[2] + t * q[3])))
    r = s + s * (num / den)
    return jnp.sign(x) * jnp.where(small, r, 0.5 * jnp.pi - 2.0 * r)


def _sqrt_one_minus_sq(rho: jax.Array) -> jax.Array:
    """``sqrt(max(1 - rho^2, 0))`` (only used inside custom-jvp primals, so no gradient issue)."""
    return jnp.sqrt(jnp.maximum(1.0 - rho * rho, 0.0))


# --------------------------------------------------------------------------------------------------
# Hermite coefficients
# --------------------------------------------------------------------------------------------------


def _abs_coefficients(K: int) -> np.ndarray:
    """Closed form for ``sigma = |x|`` (spec §2.1), via the overflow-free recursion

    ``sigma_hat_0 = sqrt(2/pi)``, ``sigma_hat_2 = 1/sqrt(pi)``,
    ``sigma_hat_{2q+2} = -sigma_hat_{2q} (2q-1) / sqrt((2q+1)(2q+2))`` (q >= 1), odd coefficients 0;
    equivalently ``sigma_hat_{2q} = sqrt(2/pi) (-1)^{q+1} (2q-3)!! / sqrt((2q)!)``.
    """
    c = np.zeros(K + 1)
    c[0] = math.sqrt(2.0 / math.pi)
    if K >= 2:
        c[2] = 1.0 / math.sqrt(math.pi)
    for q in range(1, K // 2):
        c[2 * q + 2] = -c[2 * q] * (2 * q - 1) / math.sqrt((2 * q + 1) * (2 * q + 2))
    return c


def _leaky_coefficients(slope: float, K: int) -> np.ndarray:
    """``leaky_relu_a(x) = ((1+a)/2) x + ((1-a)/2) |x|``, so ``sigma_hat = ((1-a)/2) abs_hat + ((1+a)/2) e_1``.

    ``relu`` is the case ``a = 0``.
    """
    c = 0.5 * (1.0 - slope) * _abs_coefficients(K)
    if K >= 1:
        c[1] += 0.5 * (1.0 + slope)
    return c


def _linear_coefficients(K: int) -> np.ndarray:
    """``x = h_1(x)``: only ``sigma_hat_1 = 1``."""
    c = np.zeros(K + 1)
    if K >= 1:
        c[1] = 1.0
    return c


def _gauss_hermite_coefficients(sigma_np: Callable[[np.ndarray], np.ndarray], K: int) -> np.ndarray:
    """``sigma_hat_k = E[sigma(z) h_k(z)]``, k <= K, by Gauss-Hermite quadrature (for smooth ``sigma``).

    Uses ``n = max(256, 2K + 64)`` nodes of the probabilists' rule (``scipy.special.roots_hermitenorm``,
    weights normalised by ``sqrt(2 pi)`` to sum to 1). The orthonormal polynomials are carried scaled
    by ``sqrt(w_i)`` through the three-term recursion ``h_{k+1} = (x h_k - sqrt(k) h_{k-1}) / sqrt(k+1)``
    so nothing overflows for large k. Accuracy ~1e-14 absolute for the smooth activations here.
    """
    from scipy import special  # imported on first use: scipy costs about a second of every command's start-up

    n = max(256, 2 * K + 64)
    x, w = special.roots_hermitenorm(n)
    sw = np.sqrt(w / math.sqrt(2.0 * math.pi))
    s = sw * np.asarray(sigma_np(x), dtype=np.float64)
    c = np.empty(K + 1)
    prev, cur = np.zeros_like(x), sw  # sqrt(w) h_{-1}, sqrt(w) h_0
    for k in range(K + 1):
        c[k] = s @ cur
        prev, cur = cur, (x * cur - math.sqrt(k) * prev) / math.sqrt(k + 1)
    return c


def _quad_second_moment(sigma_np: Callable[[float], float]) -> float:
    """``E[sigma(z)^2]`` by ``scipy.integrate.quad`` on (-40, 0) and (0, 40) (a kink at 0 is allowed)."""

    def integrand(z: float) -> float:
        return float(sigma_np(z)) ** 2 * math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)

    from scipy import integrate  # imported on first use (start-up)

    opts = dict(epsabs=1e-14, epsrel=1e-13, limit=200)
    return integrate.quad(integrand, -40.0, 0.0, **opts)[0] + integrate.quad(integrand, 0.0, 40.0, **opts)[0]


def _numpy_erf(x: np.ndarray) -> np.ndarray:
    """``scipy.special.erf`` in float64, with scipy imported on first use (start-up)."""
    from scipy import special

    return special.erf(x)


def _numpy_of(fn: Callable) -> Callable[[np.ndarray], np.ndarray]:
    """A float64 numpy evaluator of a jax function (fallback when no numpy reference is given)."""
    return lambda x: np.asarray(fn(jnp.asarray(x, dtype=jnp.float64)), dtype=np.float64)


@functools.lru_cache(maxsize=None)
def _cached_coefficients(act: Activation, K: int) -> np.ndarray:
    coeff_fn = act._coeffs or (lambda k: _gauss_hermite_coefficients(_numpy_of(act.fn), k))
    c = np.array(coeff_fn(K), dtype=np.float64)
    if act.even:  # odd coefficients of an even function vanish exactly (quadrature leaves ~1e-17 noise)
        c[1::2] = 0.0
    c.setflags(write=False)
    return c


@functools.lru_cache(maxsize=None)
def _cached_second_moment(act: Activation) -> float:
    if act._moment is not None:
        return float(act._moment())
    return _quad_second_moment(lambda z: _numpy_of(act.fn)(np.float64(z)))


# --------------------------------------------------------------------------------------------------
# The Activation record
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kink:
    """A piecewise-linear activation around its only possible kink, at 0: the slopes on both sides and the fixed
    subgradient at 0 (what ``jax.grad`` returns at exactly 0)."""

    plus: float  # sigma'(z), z > 0
    minus: float  # sigma'(z), z < 0
    at_zero: float  # sigma'(0)

    @property
    def smooth(self) -> bool:
        """No kink (linear): the field never jumps."""
        return self.plus == self.minus

    @property
    def convention(self) -> float:
        """lam_c = (sigma'(0) - sigma'_-)/(sigma'_+ - sigma'_-): the Filippov weight of the + side that the
        fixed subgradient puts on the hyperplane (0 for relu and leaky_relu, 1/2 for abs)."""
        return 0.0 if self.smooth else (self.at_zero - self.minus) / (self.plus - self.minus)


def _piecewise_linear(plus: float, minus: float, at_zero: float) -> dict:
    """The record fields of a piecewise-linear activation with slopes ``plus`` (z > 0) and ``minus`` (z < 0) and
    ``sigma'(0) = at_zero``: its ``piecewise_linear`` Kink and its ``kinks`` (0, unless the two slopes agree)."""
    kink = Kink(float(plus), float(minus), float(at_zero))
    return {"piecewise_linear": kink, "kinks": () if kink.smooth else (0.0,)}


@dataclass(frozen=True)
class Activation:
    """An elementwise activation ``sigma`` and its Gaussian quantities.

    Fields (public): ``name`` (registry name), ``params`` (sorted ``(key, value)`` pairs, hashable),
    ``fn`` (jax-traceable elementwise function, subgradient convention built in), ``even``
    (``sigma(-x) = sigma(x)``), ``homogeneous`` (positively 1-homogeneous: ``sigma(cx) = c sigma(x)``, c > 0).

    Capabilities (functions of ``name`` and ``params``, so excluded from equality/hash): ``kinks``, the points
    where sigma' jumps (empty: sigma is continuously differentiable); ``piecewise_linear``, the :class:`Kink`
    of an activation that is linear on z < 0 and on z > 0 (None otherwise; the event-driven methods
    ``flow_exact`` and event-driven ``flow_log`` need one). Derived: ``leaky_alpha``.

    Private construction fields (excluded from equality/hash/repr): ``_coeffs(K) -> ndarray[K+1]``
    (closed-form Hermite coefficients; default Gauss-Hermite quadrature of ``fn``), ``_moment() -> float``
    (``E sigma(z)^2``; default ``quad``), ``_kappa(rho)`` (closed-form dual kernel on [-1, 1] or None).
    """

    name: str
    params: tuple
    fn: Callable = field(compare=False, repr=False)
    even: bool = False
    homogeneous: bool = False
    kinks: tuple[float, ...] = field(default=(), compare=False)
    piecewise_linear: Kink | None = field(default=None, compare=False)
    _coeffs: Callable[[int], np.ndarray] | None = field(default=None, compare=False, repr=False)
    _moment: Callable[[], float] | None = field(default=None, compare=False, repr=False)
    _kappa: Callable | None = field(default=None, compare=False, repr=False)

    def __call__(self, x):
        return self.fn(x)

    @property
    def leaky_alpha(self) -> float | None:
        """alpha of a Leaky-ReLU-type activation phi(z) = max(z, alpha z) with 0 <= alpha <= 1 (Lyu et al. 2021):
        the slope on z < 0 of a piecewise-linear activation with slope 1 on z > 0 (relu 0, linear 1,
        leaky_relu its slope); None for any other activation."""
        kink = self.piecewise_linear
        if kink is None or kink.plus != 1.0 or not 0.0 <= kink.minus <= 1.0:
            return None
        return kink.minus

    @property
    def has_dual_kernel(self) -> bool:
        """Whether :meth:`dual_kernel` has a closed form (else it returns None; use the series)."""
        return self._kappa is not None

    def hermite_coefficients(self, K: int) -> np.ndarray:
        """``[sigma_hat_0, ..., sigma_hat_K]`` with ``sigma_hat_k = E_{z~N(0,1)}[sigma(z) He_k(z)] / sqrt(k!)``.

        Float64 numpy array of shape ``[K+1]``, cached per ``(activation, K)`` and read-only; odd entries
        are exactly 0 for even activations.
        """
        if not isinstance(K, numbers.Integral) or isinstance(K, bool) or K < 0:
            raise ValueError(f"K must be a non-negative integer, got {K!r}")
        return _cached_coefficients(self, int(K))

    def second_moment(self) -> float:
        """``E_{z~N(0,1)}[sigma(z)^2] = sum_k sigma_hat_k^2`` (closed form where known, quadrature otherwise)."""
        return _cached_second_moment(self)

    def dual_kernel(self, rho):
        """Closed-form ``kappa(rho) = E[sigma(u.x) sigma(v.x)]`` for unit ``u, v`` with ``<u, v> = rho``.

        ``rho`` is clipped to [-1, 1] (straight-through: the gradient at an overshoot is the one-sided
        derivative at +-1); the gradient is finite at ``|rho| = 1``. Returns None when
        ``has_dual_kernel`` is False (use :meth:`dual_kernel_series`).
        """
        if self._kappa is None:
            return None
        return self._kappa(_clip_unit(_as_float(rho)))

    def dual_kernel_series(self, rho, K: int = 40):
        """Truncated series ``sum_{k<=K} sigma_hat_k^2 rho^k`` (Horner, jax-traceable; ``rho`` clipped to [-1, 1]).

        Exact to machine precision at K = 40 for the smooth activations; for kinked ones the tail at
        ``|rho| = 1`` decays only like ``K^{-3/2}`` (e.g. ``|x|``: 4.7e-4 at K = 50), prefer
        :meth:`dual_kernel` there.
        """
        rho = _clip_unit(_as_float(rho))
        c2 = jnp.asarray(self.hermite_coefficients(K)[::-1] ** 2, dtype=rho.dtype)
        acc, _ = lax.scan(lambda a, c: (a * rho + c, None), jnp.zeros_like(rho), c2)
        return acc

    def kernel(self, u, v, K: int = 40):
        """``E_{x~N(0, I_d)}[sigma(u.x) sigma(v.x)]`` for arbitrary ``u, v`` of shape ``[..., d]``.

        Needs positive 1-homogeneity: then it equals ``||u|| ||v|| kappa(<u, v> / (||u|| ||v||))``
        (0 if either vector is 0), with the closed-form ``kappa`` when there is one and the K-term
        Hermite series otherwise. Raises NotImplementedError for non-homogeneous activations, whose
        kernel depends on the norms beyond this factorisation (for unit vectors use
        ``dual_kernel_series(<u, v>)``).
        """
        if not self.homogeneous:
            raise NotImplementedError(
                f"kernel(u, v) for arbitrary norms needs a positively 1-homogeneous activation; {self.name!r} "
                "is not. For unit u, v use dual_kernel_series(<u, v>)."
            )
        u, v = _as_float(u), _as_float(v)
        nu, nv = safe_norm(u), safe_norm(v)
        scale = nu * nv
        cos = jnp.sum(u * v, axis=-1) / jnp.where(scale > 0, scale, 1.0)
        kappa = self.dual_kernel(cos) if self.has_dual_kernel else self.dual_kernel_series(cos, K)
        return scale * kappa


# --------------------------------------------------------------------------------------------------
# Elementwise functions (subgradient conventions via custom_jvp)
# --------------------------------------------------------------------------------------------------


@jax.custom_jvp
def _relu(x):
    """``max(x, 0)`` with ``relu'(0) = 0`` (``jnp.maximum`` alone would give 1/2 at 0)."""
    return jnp.maximum(x, 0)


_relu.defjvp(lambda p, t: (_relu(p[0]), jnp.where(p[0] > 0, t[0], jnp.zeros_like(t[0]))))


@jax.custom_jvp
def _abs(x):
    """``|x|`` with ``abs'(0) = sign(0) = 0``."""
    return jnp.abs(x)


_abs.defjvp(lambda p, t: (_abs(p[0]), jnp.sign(p[0]) * t[0]))


def _linear(x):
    return jnp.asarray(x)


def _sym_gelu(x):
    """``x erf(x / sqrt 2) = x (2 Phi(x) - 1)``."""
    return x * jax.scipy.special.erf(x / _SQRT2)


def _sym_swish(x):
    """``x tanh(x / 2) = x (2 sigmoid(x) - 1)``."""
    return x * jnp.tanh(x / 2)


# Closed-form dual kernels on rho in [-1, 1], each with its derivative.
def _kappa_abs(rho):
    """``|x|``: ``kappa = (2/pi)(sqrt(1 - rho^2) + rho arcsin rho)``, ``kappa' = (2/pi) arcsin rho``."""
    asin = arcsin(rho)
    return (2 / jnp.pi) * (_sqrt_one_minus_sq(rho) + rho * asin), (2 / jnp.pi) * asin


def _kappa_relu(rho):
    """ReLU (arc-cosine kernel of degree 1): ``kappa = (sqrt(1 - rho^2) + (pi - arccos rho) rho) / (2 pi)``,

    ``kappa' = (pi - arccos rho) / (2 pi)``; equivalently ``kappa = (rho + kappa_abs) / 4``
    (``pi - arccos rho = pi/2 + arcsin rho``).
    """
    angle = 0.5 * jnp.pi + arcsin(rho)
    return (_sqrt_one_minus_sq(rho) + angle * rho) / (2 * jnp.pi), angle / (2 * jnp.pi)


_KAPPA_ABS = _with_derivative(_kappa_abs)
_KAPPA_RELU = _with_derivative(_kappa_relu)


def _kappa_linear(rho):
    return rho


# --------------------------------------------------------------------------------------------------
# Registry and factories
# --------------------------------------------------------------------------------------------------

ACTIVATIONS: Registry = Registry("activation")


def _relu_with_grad_at_zero(a: float) -> Callable:
    """``max(x, 0)`` whose derivative at exactly 0 is ``a`` (the fixed subgradient of Min et al. App. E.3)."""

    @jax.custom_jvp
    def relu(x):
        return jnp.maximum(x, 0)

    relu.defjvp(lambda p, t: (relu(p[0]), jnp.where(p[0] > 0, t[0], jnp.where(p[0] == 0, a * t[0], 0 * t[0]))))
    return relu


@ACTIVATIONS.register("relu")
def _make_relu(grad_at_zero: float = 0.0) -> Activation:
    """``max(x, 0)``; ``E sigma^2 = 1/2``. ``grad_at_zero`` in [0, 1] is the fixed subgradient sigma'(0)
    (default 0, the paper's convention; the parameter is left out of ``params`` at 0, so the default
    activation is the same object, hash and config as before). With sigma'(0) > 0 Min et al. App. E.3's
    example has no Caratheodory solution."""
    if (isinstance(grad_at_zero, bool) or not isinstance(grad_at_zero, numbers.Real)
            or not 0.0 <= float(grad_at_zero) <= 1.0):
        raise ValueError(f"activation 'relu': parameter 'grad_at_zero' must be a real number in [0, 1], got {grad_at_zero!r}")
    a = float(grad_at_zero)
    fn, params = (_relu, ()) if a == 0.0 else (_relu_with_grad_at_zero(a), (("grad_at_zero", a),))
    return Activation(
        "relu", params, fn, even=False, homogeneous=True, **_piecewise_linear(1.0, 0.0, a),
        _coeffs=functools.partial(_leaky_coefficients, 0.0), _moment=lambda: 0.5, _kappa=_KAPPA_RELU,
    )  # fmt: skip


@ACTIVATIONS.register("leaky_relu")
def _make_leaky_relu(slope: float = 0.01) -> Activation:
    """``x`` for x > 0, ``slope * x`` otherwise (``slope`` in [0, 1]); ``E sigma^2 = (1 + slope^2)/2``.

    With ``sigma = a x + (1-a) relu(x)`` and ``E[(u.x) relu(v.x)] = rho/2`` for unit u, v:
    ``kappa = a^2 rho + 2a(1-a) rho/2 + (1-a)^2 kappa_relu = a rho + (1-a)^2 kappa_relu``.
    """
    if isinstance(slope, bool) or not isinstance(slope, numbers.Real) or not 0.0 <= float(slope) <= 1.0:
        raise ValueError(f"activation 'leaky_relu': parameter 'slope' must be a real number in [0, 1], got {slope!r}")
    a = float(slope)

    @jax.custom_jvp
    def leaky(x):
        return jnp.where(x > 0, x, a * x)

    leaky.defjvp(lambda p, t: (leaky(p[0]), jnp.where(p[0] > 0, t[0], a * t[0])))
    return Activation(
        "leaky_relu", (("slope", a),), leaky, even=False, homogeneous=True, **_piecewise_linear(1.0, a, a),
        _coeffs=functools.partial(_leaky_coefficients, a), _moment=lambda: 0.5 * (1.0 + a * a),
        _kappa=lambda rho: a * rho + (1.0 - a) ** 2 * _KAPPA_RELU(rho),
    )  # fmt: skip


def _abs_like(name: str) -> Activation:
    return Activation(name, (), _abs, even=True, homogeneous=True, **_piecewise_linear(1.0, -1.0, 0.0),
                      _coeffs=_abs_coefficients, _moment=lambda: 1.0, _kappa=_KAPPA_ABS)  # fmt: skip


@ACTIVATIONS.register("abs")
def _make_abs() -> Activation:
    """``|x|``; ``E sigma^2 = 1``."""
    return _abs_like("abs")


@ACTIVATIONS.register("linear")
def _make_linear() -> Activation:
    """``x``; ``sigma_hat = e_1``, ``kappa(rho) = rho``."""
    return Activation("linear", (), _linear, even=False, homogeneous=True, **_piecewise_linear(1.0, 1.0, 1.0),
                      _coeffs=_linear_coefficients, _moment=lambda: 1.0, _kappa=_kappa_linear)  # fmt: skip


@ACTIVATIONS.register("sym_gelu")
def _make_sym_gelu() -> Activation:
    """``x erf(x/sqrt 2)``; no closed-form kernel. ``E sigma^2 = 1/3 + 2/(pi sqrt 3)`` (Stein's lemma:

    ``E[z^2 g] = E g + E g''`` with ``g = (2 Phi - 1)^2``). Coefficients by Gauss-Hermite quadrature.
    """
    sig = lambda x: x * _numpy_erf(x / _SQRT2)  # noqa: E731
    return Activation(
        "sym_gelu", (), _sym_gelu, even=True, homogeneous=False,
        _coeffs=functools.partial(_gauss_hermite_coefficients, sig),
        _moment=lambda: 1.0 / 3.0 + 2.0 / (math.pi * math.sqrt(3.0)),
    )  # fmt: skip


@ACTIVATIONS.register("sym_swish")
def _make_sym_swish() -> Activation:
    """``x tanh(x/2)``; no closed-form kernel; coefficients and ``E sigma^2`` by quadrature."""
    sig = lambda x: x * np.tanh(x / 2)  # noqa: E731
    return Activation(
        "sym_swish", (), _sym_swish, even=True, homogeneous=False,
        _coeffs=functools.partial(_gauss_hermite_coefficients, sig),
        _moment=lambda: _quad_second_moment(sig),
    )  # fmt: skip


def _erf(x):
    """``erf(x / sqrt 2) = 2 Phi(x) - 1`` (Saad & Solla 1995; Goldt et al. 2019)."""
    return jax.scipy.special.erf(x / _SQRT2)


@ACTIVATIONS.register("erf")
def _make_erf() -> Activation:
    """``erf(x / sqrt 2)``, odd and smooth; ``kappa(rho) = (2/pi) arcsin(rho / 2)`` (Saad & Solla 1995, eq. (9) with
    unit variances), ``E sigma^2 = (2/pi) arcsin(1/2) = 1/3``. Coefficients by Gauss-Hermite quadrature."""
    sig = lambda x: _numpy_erf(x / _SQRT2)  # noqa: E731
    return Activation(
        "erf", (), _erf, even=False, homogeneous=False,
        _coeffs=functools.partial(_gauss_hermite_coefficients, sig), _moment=lambda: 1.0 / 3.0,
        _kappa=_with_derivative(lambda rho: ((2 / jnp.pi) * arcsin(0.5 * rho), (1 / jnp.pi) / jnp.sqrt(1 - 0.25 * rho * rho))),
    )  # fmt: skip


@ACTIVATIONS.register("sym_relu")
def _make_sym_relu() -> Activation:
    """Same function as ``abs`` (``relu(x) + relu(-x) = |x|``) under its own name."""
    return _abs_like("sym_relu")


def leaky_alpha(act: Activation) -> float | None:
    """``act.leaky_alpha`` (the function form, for callers that map over activations)."""
    return act.leaky_alpha


def names_with(has: Callable[[Activation], bool]) -> list[str]:
    """The registered activations whose default record (``factory()``) has a capability, e.g.
    ``names_with(lambda a: a.piecewise_linear is not None)``: for messages that list what is allowed."""
    return [name for name, factory in ACTIVATIONS.items() if has(factory())]


def make_activation(spec: str | Mapping | Activation) -> Activation:
    """Build an :class:`Activation` from ``"name"``, ``{"name": ..., **params}`` or an Activation (returned as is).

    Unknown names raise :class:`UnknownNameError` (listing the registered names); unknown or invalid
    parameters raise ``ValueError`` naming the parameter and what is allowed.
    """
    if isinstance(spec, Activation):
        return spec
    if isinstance(spec, str):
        name, params = spec, {}
    elif isinstance(spec, Mapping):
        params = dict(spec)
        if "name" not in params:
            raise ValueError(f"activation spec {spec!r} has no 'name'; allowed names: {', '.join(ACTIVATIONS.names())}")
        name = params.pop("name")
    else:
        raise TypeError(f"activation spec must be a str, a mapping or an Activation, got {type(spec).__name__}")
    factory = ACTIVATIONS.get(name)
    allowed = list(inspect.signature(factory).parameters)
    unknown = sorted(set(params) - set(allowed), key=str)
    if unknown:
        raise ValueError(
            f"activation {name!r}: unknown parameter(s) {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(map(repr, allowed)) if allowed else 'none'}"
        )
    return factory(**params)


def activation_spec(spec) -> str | dict:
    """The canonical config form of an activation spec: its name, or ``{"name", **params}`` when it has
    parameters; a ``ValueError`` naming the problem otherwise (for pydantic validators)."""
    try:
        act = make_activation(spec)
    except UnknownNameError as e:
        raise ValueError(str(e)) from None
    return act.name if not act.params else {"name": act.name, **dict(act.params)}
