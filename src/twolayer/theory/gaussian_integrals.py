"""Gaussian integrals of the online-SGD order-parameter ODEs (Saad & Solla 1995; Goldt et al. 2019).

For a zero-mean Gaussian vector u with covariance C (the local fields lambda = w.x of student and teacher
neurons, C built from the order parameters Q, R, T) and an activation g:

    I2(C) = E[g(u1) g(u2)]                      C: [..., 2, 2]
    I3(C) = E[g'(u1) u2 g(u3)]                  C: [..., 3, 3]
    I4(C) = E[g'(u1) g'(u2) g(u3) g(u4)]        C: [..., 4, 4]
    J2(C) = E[g'(u1) g'(u2)]                    C: [..., 2, 2]   (the label-noise part of the eta^2 term)

(Goldt et al. 2019, eqs. (7)-(9) and App. A; Saad & Solla 1995, eqs. (9)-(11)). Every function takes the
covariance of the arguments, so repeated arguments (I3(i, k, i), I4(i, k, i, k)) are singular matrices,
which the formulas below accept.

Closed forms (x_ab = C_ab):

* ``erf``, g(x) = erf(x / sqrt 2) (Saad & Solla's g; Goldt et al. App. A):
  I2 = (2/pi) arcsin(x12 / sqrt((1 + x11)(1 + x22)));
  I3 = (2/pi) (x23 (1 + x11) - x12 x13) / ((1 + x11) sqrt(L3)), L3 = (1 + x11)(1 + x33) - x13^2;
  I4 = (4/pi^2) arcsin(L0 / sqrt(L1 L2)) / sqrt(L4) with L4 = (1 + x11)(1 + x22) - x12^2,
  L0 = L4 x34 - x23 x24 (1 + x11) - x13 x14 (1 + x22) + x12 x13 x24 + x12 x14 x23,
  L1 = L4 (1 + x33) - x23^2 (1 + x11) - x13^2 (1 + x22) + 2 x12 x13 x23 (L2: 3 -> 4);
  J2 = (2/pi) / sqrt((1 + x11)(1 + x22) - x12^2).
* ``linear``: I2 = x12, I3 = x23, I4 = x34, J2 = 1.
* ``relu`` (g' = H, the step; g'' = delta) and ``abs`` (g' = sign, g'' = 2 delta), by Stein's lemma
  E[u_b F(u)] = sum_e C_be E[d_e F]:
  I2: relu (sqrt(x11 x22) / 2 pi)(sqrt(1 - r^2) + (pi/2 + arcsin r) r); abs (2/pi) sqrt(x11 x22)(sqrt(1 - r^2)
  + r arcsin r), r = x12 / sqrt(x11 x22);
  I3 = x21 E[g''(u1) g(u3)] + x23 E[g'(u1) g'(u3)]: relu x21 sqrt(x11 x33 - x13^2) / (2 pi x11)
  + x23 (1/4 + arcsin(r13) / 2 pi); abs 2 x21 sqrt(x11 x33 - x13^2) / (pi x11) + x23 (2/pi) arcsin(r13);
  J2: relu 1/4 + arcsin(r) / 2 pi; abs (2/pi) arcsin(r).

I4 for relu and abs has no closed form. It is reduced exactly to a one-dimensional integral by the
Gaussian interpolation (heat-equation) identity d E_C[F] / d C_ab = E_C[d_a d_b F] (a != b): along the path
C(s) = C0 + s (C - C0), where C0 keeps the diagonal and the (3, 4) entry and zeroes the other off-diagonal
entries,

    I4(C) = E[g'] E[g'] I2(C_{34}) + int_0^1 sum_{(a,b) in P} C_ab E_{C(s)}[d_a d_b F] ds,
    P = {(1,2), (1,3), (1,4), (2,3), (2,4)},  F = g'(u1) g'(u2) g(u3) g(u4).

Each E[d_a d_b F] puts a delta on u_a (and on u_b for (1,2)) and is a closed form of the conditional
Gaussian: (1,2) gives k^2 phi2(0, 0) I2(C_{34 | 12}); (1,3) gives k phi(0) J3(C_{(2,3,4) | 1}), with
J3 = E[g'(x) g'(y) g(z)] = sum_h C_zh k phi_h(0) E[g'(.) g'(.) | u_h = 0] (Stein again; a bivariate orthant
probability or sign correlation), k = 1 (relu) or 2 (abs). Regrouped by the pair conditioned on, the five terms
need five conditionings and five arcsines per point (``_hom_i4_node``; the nested form ``_hom_i4_integrand`` took
thirteen). The substitution s = 1 - tau^4 (``I4_POWER``) removes the 1/sqrt(1 - s) singularity of phi2 at repeated
arguments and clusters the nodes at s = 1, where near copies (the K = M fixed point) put features of width
~ |w - w*|^2 in 1 - s; the conditionals are computed from 1 - s itself (``_hom_i4_prepare``), so that they stay
accurate there. Gauss-Legendre in tau with ``I4_NODES`` = 16 nodes is within 1.2e-9 (relu) and 1.9e-8 (abs) of an
independent reference at every tuple of near-fixed-point states, and within 2e-9 / 3e-8 along a relu K = M = 4 ODE
solution (the rule before, 24 nodes in s = 1 - tau^2: 1.1e-8 / 1.8e-7 and 4e-9 / 7e-8; ``tests/test_i4_reference.py``);
students nearly equal to each other (phi2 of the g' pair nearly singular) remain the hard case: 9e-7 / 7e-6 at squared
distance 1e-6 (before 4e-5 / 4e-4). Conditional variances that vanish (exactly repeated arguments) give zero
correlations, which is the limit of the regularized integrand.

The ODEs use the interpolation integral (``entries["i4"]``) by default. A cheaper exact reduction, ``entries["i4_pairs"]``
(``_hom_i4_orthant``; the ODE fields "orthant" and, batched, "sets"), is right on well-conditioned covariances but not
near copies (a student's field nearly a teacher's, the K = M fixed point): its 16 nodes do not resolve phi2(s rho) as
rho -> 1 (errors up to 6e-4 per I4 against ``tests/test_i4_reference.py``'s independent reference, where the
interpolation integral is within 2e-7). With g(z) = z g'(z), Stein's
lemma on u4 gives I4 = C34 D4 + sum_{e in (1,2,4)} C4e k phi_e(0) J3(C | u_e = 0), D4 = E[g'(u1) g'(u2) g'(u3) g'(u4)]
(relu: the orthant probability), and Plackett's identity dD4 / d rho_ij = k^2 phi2(0, 0; rho_ij) E[g' g' | u_i = u_j
= 0] along a path that scales the four cross correlations of (1, 2 | 3, 4) from 0 leaves one 1-D integral of four
closed terms (``ORTHANT_NODES`` = 16 nodes, the same s = 1 - tau^2). It holds at repeated arguments where at most
two coincide (a copy's conditional variance, left by round-off, is set to 0 and its correlation to +-1); three
coinciding arguments have closed forms instead, which ``theory.online_sgd`` uses.

``INTEGRALS`` is the registry: activation name -> ``Integrals`` (i2, i3, i4, j2 of covariance blocks, and the same
functions of the covariance entries in ``entries``), all pure JAX functions,
broadcasting over leading axes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from twolayer.registry import Registry

TWO_PI = 2.0 * math.pi
I4_NODES = 16  # Gauss-Legendre nodes of the interpolation integral for relu and abs (tests: against the reference)
I4_POWER = 4  # s = 1 - tau^I4_POWER: nodes clustered at s = 1, where copies and near copies put the integrand's features
ORTHANT_NODES = 16  # nodes of the Plackett integral of D4 (the 12- and 16-node values agree to 3.5e-9: tests)


@dataclass(frozen=True)
class Integrals:
    """The Gaussian integrals of one activation (see the module docstring). ``entries`` maps "i2", "i3", "i4",
    "j2" to functions of the covariance entries {(a, b): array} (a <= b, arrays that broadcast against each other:
    the ODEs build them by broadcasting the order parameters, without materializing the [..., n, n] blocks);
    ``i2``, ``i3``, ``i4``, ``j2`` are the same functions of a covariance [..., n, n]. ``g`` and ``dg`` are the
    activation and its derivative (for simulations and Monte Carlo checks); ``closed_i4`` says whether I4 is a
    closed form."""

    name: str
    g: Callable
    dg: Callable
    entries: dict
    closed_i4: bool

    def i2(self, C):
        return self.entries["i2"](_entries(C, 2))

    def i3(self, C):
        return self.entries["i3"](_entries(C, 3))

    def i4(self, C):
        return self.entries["i4"](_entries(C, 4))

    def j2(self, C):
        return self.entries["j2"](_entries(C, 2))


INTEGRALS: Registry[Integrals] = Registry("online-SGD activation")


def _safe_sqrt(x):
    return jnp.sqrt(jnp.maximum(x, 0.0))


def _corr(c12, c11, c22, snap: float = 0.0):
    """c12 / sqrt(c11 c22) clipped to [-1, 1]; 0 where a variance vanishes (an independent pure-noise limit). With
    ``snap`` > 0, |r| > 1 - snap is set to +-1 (a copy's correlation off by round-off: arcsin(1 - e) is off by
    sqrt(2 e), 1e-8 at e = 1e-16)."""
    den = c11 * c22
    ok = den > 0
    r = jnp.clip(jnp.where(ok, c12 / jnp.sqrt(jnp.where(ok, den, 1.0)), 0.0), -1.0, 1.0)
    return jnp.where(jnp.abs(r) > 1.0 - snap, jnp.sign(r), r) if snap > 0 else r


def _phi0(var):
    """The N(0, var) density at 0, 1 / sqrt(2 pi var) (0 where var <= 0: such terms carry a zero factor)."""
    ok = var > 0
    return jnp.where(ok, 1.0 / jnp.sqrt(TWO_PI * jnp.where(ok, var, 1.0)), 0.0)


# -- erf ------------------------------------------------------------------------------------------

def _erf_g(x):
    from jax.scipy.special import erf

    return erf(x / math.sqrt(2.0))


def _erf_dg(x):
    return math.sqrt(2.0 / math.pi) * jnp.exp(-0.5 * x * x)


def erf_i2(x):
    """(2/pi) arcsin(C12 / sqrt((1 + C11)(1 + C22)))."""
    return (2 / math.pi) * jnp.arcsin(x[0, 1] / jnp.sqrt((1 + x[0, 0]) * (1 + x[1, 1])))


def erf_i3(x):
    """(2/pi) (C23 (1 + C11) - C12 C13) / ((1 + C11) sqrt((1 + C11)(1 + C33) - C13^2))."""
    c11, c12, c13, c23, c33 = x[0, 0], x[0, 1], x[0, 2], x[1, 2], x[2, 2]
    lam3 = (1 + c11) * (1 + c33) - c13 ** 2
    return (2 / math.pi) * (c23 * (1 + c11) - c12 * c13) / ((1 + c11) * jnp.sqrt(lam3))


def erf_i4(x):
    """(4/pi^2) arcsin(L0 / sqrt(L1 L2)) / sqrt(L4) (Saad & Solla 1995, eq. (11); module docstring)."""
    lam4 = (1 + x[0, 0]) * (1 + x[1, 1]) - x[0, 1] ** 2
    lam0 = (lam4 * x[2, 3] - x[1, 2] * x[1, 3] * (1 + x[0, 0]) - x[0, 2] * x[0, 3] * (1 + x[1, 1])
            + x[0, 1] * x[0, 2] * x[1, 3] + x[0, 1] * x[0, 3] * x[1, 2])

    def lam(c):
        return (lam4 * (1 + x[c, c]) - x[1, c] ** 2 * (1 + x[0, 0]) - x[0, c] ** 2 * (1 + x[1, 1])
                + 2 * x[0, 1] * x[0, c] * x[1, c])

    ratio = jnp.clip(lam0 / jnp.sqrt(lam(2) * lam(3)), -1.0, 1.0)
    return (4 / math.pi ** 2) * jnp.arcsin(ratio) / jnp.sqrt(lam4)


def erf_j2(x):
    """(2/pi) / sqrt((1 + C11)(1 + C22) - C12^2)."""
    return (2 / math.pi) / jnp.sqrt((1 + x[0, 0]) * (1 + x[1, 1]) - x[0, 1] ** 2)


# -- linear ---------------------------------------------------------------------------------------

def linear_i2(x):
    """C12."""
    return x[0, 1]


def linear_i3(x):
    """C23 (g' = 1)."""
    return x[1, 2]


def linear_i4(x):
    """C34."""
    return x[2, 3]


def linear_j2(x):
    """1."""
    return jnp.ones_like(x[0, 1])


# -- relu and abs: closed forms -----------------------------------------------------------------------

_ASIN_P = (4.253011369004428248960e-3, -6.019598008014123785661e-1, 5.444622390564711410273e0,
           -1.626247967210700244449e1, 1.956261983317594739197e1, -8.198089802484824371615e0)
_ASIN_Q = (1.0, -1.474091372988853791896e1, 7.049610280856842141659e1, -1.471791292232726029859e2,
           1.395105614657485689735e2, -4.918853881490881290097e1)
_ASIN_R = (2.967721961301243206100e-3, -5.634242780008963776856e-1, 6.968710824104713396794e0,
           -2.556901049652824852289e1, 2.853665548261061424989e1)
_ASIN_S = (1.0, -2.194779531642920639778e1, 1.470656354026814941758e2, -3.838770957603691357202e2,
           3.424398657913078477438e2)
_PIO4, _MOREBITS = math.pi / 4, 6.123233995736765886130e-17  # pi/2 = 2 _PIO4 + 2 _MOREBITS


def _horner(coefs, z):
    out = coefs[0]
    for c in coefs[1:]:
        out = out * z + c
    return out


def fast_asin(x):
    """arcsin(x) for |x| <= 1 by the rational approximations of Cephes asin.c (Moshier; relative error ~1e-16:
    x + x^3 P(x^2) / Q(x^2) for |x| <= 0.625, pi/2 - sqrt(2 z)(1 + R(z) / S(z)) with z = 1 - |x| above), both
    branches in arithmetic and a select: XLA's arcsin on CPU costs ~20 ns per element, this a few; it is the
    inner cost of the relu / abs D4 integral (tests: equal to jnp.arcsin to 4e-16 on a dense grid)."""
    a = jnp.abs(x)
    w = a * a
    z = 1.0 - a
    hi = a > 0.625
    # one division: the branch's numerator over its denominator (the same quotients as two divisions and a select)
    ratio = (jnp.where(hi, z * _horner(_ASIN_R, z), w * _horner(_ASIN_P, w))
             / jnp.where(hi, _horner(_ASIN_S, z), _horner(_ASIN_Q, w)))
    small = a + a * ratio
    r = jnp.sqrt(z + z)
    big = (_PIO4 - r) - (r * ratio - _MOREBITS) + _PIO4
    return jnp.copysign(jnp.where(hi, big, small), x)


@dataclass(frozen=True)
class _Homogeneous:
    """relu or abs: ``kappa`` the weight of the delta in g'' (1 or 2), ``mean_dg`` E[g'], ``dg_dg(r)`` E[g' g'] at
    correlation r, ``delta_g(v_cond)`` E[delta(u1) g(u3)] / phi_1(0) as a function of the conditional variance."""

    kappa: float
    mean_dg: float
    i2_unit: Callable  # r -> E[g(x) g(y)] for unit variances
    dg_dg: Callable  # r -> E[g'(x) g'(y)]
    g_mean_abs: float  # E[g(N(0, 1))] (E[relu] = 1/sqrt(2 pi), E|z| = sqrt(2/pi))
    i2_asin: Callable  # (r, arcsin r) -> i2_unit(r)
    dg_asin: Callable  # arcsin r -> dg_dg(r)


def _relu_i2_unit(r):
    return (_safe_sqrt(1 - r * r) + (0.5 * math.pi + jnp.arcsin(r)) * r) / TWO_PI


def _abs_i2_unit(r):
    return (2 / math.pi) * (_safe_sqrt(1 - r * r) + r * jnp.arcsin(r))


RELU = _Homogeneous(1.0, 0.5, _relu_i2_unit, lambda r: 0.25 + fast_asin(r) / TWO_PI, 1 / math.sqrt(TWO_PI),
                    lambda r, a: (_safe_sqrt(1 - r * r) + (0.5 * math.pi + a) * r) / TWO_PI,
                    lambda a: 0.25 + a / TWO_PI)
ABS = _Homogeneous(2.0, 0.0, _abs_i2_unit, lambda r: (2 / math.pi) * fast_asin(r), math.sqrt(2 / math.pi),
                   lambda r, a: (2 / math.pi) * (_safe_sqrt(1 - r * r) + r * a), lambda a: (2 / math.pi) * a)


def _hom_i2(h: _Homogeneous, c11, c12, c22):
    return _safe_sqrt(c11 * c22) * h.i2_unit(_corr(c12, c11, c22))


def _hom_i3(h: _Homogeneous, x):
    """x21 k E[delta(u1) g(u3)] + x23 E[g'(u1) g'(u3)], E[delta(u1) g(u3)] = phi_1(0) E[g(u3) | u1 = 0]."""
    c11, c12, c13, c23, c33 = x[0, 0], x[0, 1], x[0, 2], x[1, 2], x[2, 2]
    cond = _safe_sqrt(c33 - jnp.where(c11 > 0, c13 ** 2 / jnp.where(c11 > 0, c11, 1.0), 0.0))
    delta_g = _phi0(c11) * h.g_mean_abs * cond
    return h.kappa * c12 * delta_g + c23 * h.dg_dg(_corr(c13, c11, c33))


def _entries(C, n):
    """The covariance entries {(a, b): C[..., a, b]} for a <= b < n."""
    return {(a, b): C[..., a, b] for a in range(n) for b in range(a, n)}


def _get(x, a, b):
    return x[(a, b)] if a <= b else x[(b, a)]


def _given(x, h, names, floor: float = 0.0):
    """Entries of the variables ``names`` given u_h = 0: x_pq - x_ph x_qh / x_hh (0 where x_hh vanishes). With
    ``floor`` > 0 a conditional variance at most ``floor`` x_pp (a copy of u_h, left by round-off) is set to 0."""
    xhh = _get(x, h, h)
    ok = xhh > 0
    inv = jnp.where(ok, 1.0 / jnp.where(ok, xhh, 1.0), 0.0)
    out = {(min(p, q), max(p, q)): _get(x, p, q) - _get(x, p, h) * _get(x, q, h) * inv
           for i, p in enumerate(names) for q in names[i:]}
    if floor > 0:
        for p in names:
            out[p, p] = jnp.where(out[p, p] > floor * _get(x, p, p), out[p, p], 0.0)
    return out


def _hom_j3_entries(h: _Homogeneous, x, order, floor: float = 0.0, snap: float = 0.0):
    """J3 = E[g'(u_a) g'(u_b) g(u_c)] for ``order`` = (a, b, c): sum over hh of x_c,hh k phi_hh(0) E[g' g' | u_hh = 0]
    (Stein's lemma on u_c, with g(z) = g'(z) z for relu and abs). Elementwise in the entries."""
    total = 0.0
    for hh in order:
        p, q = [i for i in order if i != hh]
        cond = _given(x, hh, (p, q), floor)
        r = _corr(_get(cond, p, q), _get(cond, p, p), _get(cond, q, q), snap)
        total = total + _get(x, order[2], hh) * h.kappa * _phi0(_get(x, hh, hh)) * h.dg_dg(r)
    return total


def _hom_j3(h: _Homogeneous, C):
    """J3(C) = E[g'(x) g'(y) g(z)] for C [..., 3, 3] over (x, y, z)."""
    return _hom_j3_entries(h, _entries(C, 3), (0, 1, 2))


_LEGENDRE = np.polynomial.legendre.leggauss(I4_NODES)
_PATH = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3))  # the entries that the interpolation path scales by s


def _hom_i4_integrand(h: _Homogeneous, full, s):
    """sum_{(a,b) in P} C_ab E_{C(s)}[d_a d_b F] at one point s of the interpolation path (module docstring)."""
    x = {k: (v * s if k in _PATH else v) for k, v in full.items()}
    # (1, 2): k^2 phi2(0, 0) I2(C_{34 | 12}): condition on u1 = 0, then on u2 = 0
    det = x[0, 0] * x[1, 1] - x[0, 1] ** 2
    phi2 = jnp.where(det > 0, 1.0 / (TWO_PI * jnp.sqrt(jnp.where(det > 0, det, 1.0))), 0.0)
    given0 = _given(x, 0, (1, 2, 3))
    given1 = _given(x, 1, (0, 2, 3))
    both = _given(given0, 1, (2, 3))
    t01 = h.kappa ** 2 * phi2 * _hom_i2(h, both[2, 2], both[2, 3], both[3, 3])
    t02 = h.kappa * _phi0(x[0, 0]) * _hom_j3_entries(h, given0, (1, 2, 3))
    t03 = h.kappa * _phi0(x[0, 0]) * _hom_j3_entries(h, given0, (1, 3, 2))
    t12 = h.kappa * _phi0(x[1, 1]) * _hom_j3_entries(h, given1, (0, 2, 3))
    t13 = h.kappa * _phi0(x[1, 1]) * _hom_j3_entries(h, given1, (0, 3, 2))
    return sum(full[k] * t for k, t in zip(_PATH, (t01, t02, t03, t12, t13)))


_GIVEN0 = ((1, 1), (1, 2), (1, 3), (2, 2), (2, 3), (3, 3))  # the entries of (u1, u2, u3) given u0 (0-based)
_GIVEN1 = ((0, 0), (0, 2), (0, 3), (2, 2), (2, 3), (3, 3))  # of (u0, u2, u3) given u1


def _hom_i4_prepare(full):
    """The parts of the conditionals given u0 = 0 and given u1 = 0 that do not depend on s (``_hom_i4_node``): for
    x = C(s), x_ab given u_e is s^m (U_ab + (1 - s^(2 - m)) V_ab) with U_ab = C_ab - C_ea C_eb / C_ee the conditional of
    the unscaled C, V_ab = C_ea C_eb / C_ee, and m = 1 where C_ab is scaled by s, else 0. Computing the 1 - s^2 and
    1 - s parts from 1 - s itself (not as differences of O(1) numbers) keeps the conditionals accurate near s = 1
    where they vanish (copies and near copies)."""
    out = {}
    for e, names in ((0, _GIVEN0), (1, _GIVEN1)):
        inv = _inv(full[e, e])
        for a, b in names:
            ea_eb = _get(full, e, a) * _get(full, e, b)
            # (C_ab C_ee - C_ea C_eb) / C_ee: exactly 0 for a copy (C_ab - C_ea C_eb / C_ee leaves an ulp of C_ab,
            # which stands for a squared distance of 1e-16 and spoils the integrand where 1 - s is that small)
            out[e, a, b] = ((_get(full, a, b) * full[e, e] - ea_eb) * inv, ea_eb * inv)
        out[e] = _phi0(full[e, e])
    return out


def _hom_i4_node(h: _Homogeneous, full, prep, s, om):
    """``_hom_i4_integrand`` at s (om = 1 - s, exact) from the s-free parts ``prep`` of ``_hom_i4_prepare``, with the
    conditionals shared among its terms. With x = C(s), x' = x given u0 = 0 and x'' = x given u1 = 0 (0-based
    positions), phi2_ef = 1 / (2 pi sqrt(det x_{ef})) and D_ef = E[g' g' | u_e = u_f = 0] of the other two fields,
    the five terms E[d_a d_b F] need five conditionings only:

        integrand / k^2 = C01 phi2_01 I2(x_{23 | 01})
                          + phi2_01 D_01 (C02 x'_13 + C03 x'_12 + C12 x''_03 + C13 x''_02)
                          + phi2_02 D_02 (C02 x'_23 + C03 x'_22) + phi2_03 D_03 (C02 x'_33 + C03 x'_23)
                          + phi2_12 D_12 (C12 x''_23 + C13 x''_22) + phi2_13 D_13 (C12 x''_33 + C13 x''_23)

    (each J3 of the nested form, Stein on its g field, regrouped by the pair conditioned on: one arcsin per pair, five
    per point where the nested form evaluates thirteen; I2 of (u2, u3 | u0, u1) shares D_01's), phi2_eh =
    phi0(C_ee) phi0(x'_hh)."""
    c = full
    om2 = om * (1.0 + s)  # 1 - s^2
    scaled = {(1, 2), (1, 3), (0, 2), (0, 3)}  # entries of the conditionals scaled by s (the others are not)

    def given(e, names):
        out = {}
        for a, b in names:
            u, v = prep[e, a, b]
            out[a, b] = s * (u + om * v) if (a, b) in scaled else u + om2 * v
        return out

    p = given(0, _GIVEN0)
    q = given(1, _GIVEN1)

    def pair(phi_e, cond_h, chh, c_pq, c_pp, c_qq):
        """phi2 of (u_e, u_h) and the conditional of (p, q) given u_e = u_h = 0 from the entries given u_e:
        c_pq - c_ph c_qh / c_hh (``chh`` = (c_ph, c_qh))."""
        inv = _inv(cond_h)
        phi2 = phi_e * jnp.sqrt(inv) / math.sqrt(TWO_PI)
        return phi2, c_pq - chh[0] * chh[1] * inv, c_pp - chh[0] ** 2 * inv, c_qq - chh[1] ** 2 * inv

    phi01, c23, c22, c33 = pair(prep[0], p[1, 1], (p[1, 2], p[1, 3]), p[2, 3], p[2, 2], p[3, 3])
    phi02, c13a, c11a, c33a = pair(prep[0], p[2, 2], (p[1, 2], p[2, 3]), p[1, 3], p[1, 1], p[3, 3])
    phi03, c12b, c11b, c22b = pair(prep[0], p[3, 3], (p[1, 3], p[2, 3]), p[1, 2], p[1, 1], p[2, 2])
    phi12, c03, c00a, c33c = pair(prep[1], q[2, 2], (q[0, 2], q[2, 3]), q[0, 3], q[0, 0], q[3, 3])
    phi13, c02, c00b, c22c = pair(prep[1], q[3, 3], (q[0, 3], q[2, 3]), q[0, 2], q[0, 0], q[2, 2])
    r01 = _corr(c23, c22, c33)
    a01 = fast_asin(r01)
    i2 = _safe_sqrt(c22 * c33) * h.i2_asin(r01, a01)
    total = c[0, 1] * phi01 * i2
    total = total + phi01 * h.dg_asin(a01) * (c[0, 2] * p[1, 3] + c[0, 3] * p[1, 2] + c[1, 2] * q[0, 3]
                                              + c[1, 3] * q[0, 2])
    total = total + phi02 * h.dg_dg(_corr(c13a, c11a, c33a)) * (c[0, 2] * p[2, 3] + c[0, 3] * p[2, 2])
    total = total + phi03 * h.dg_dg(_corr(c12b, c11b, c22b)) * (c[0, 2] * p[3, 3] + c[0, 3] * p[2, 3])
    total = total + phi12 * h.dg_dg(_corr(c03, c00a, c33c)) * (c[1, 2] * q[2, 3] + c[1, 3] * q[2, 2])
    total = total + phi13 * h.dg_dg(_corr(c02, c00b, c22c)) * (c[1, 2] * q[3, 3] + c[1, 3] * q[2, 3])
    return h.kappa ** 2 * total


def _inv(var):
    """1 / var where var > 0, else 0."""
    ok = var > 0
    return jnp.where(ok, 1.0 / jnp.where(ok, var, 1.0), 0.0)


def _hom_i4(h: _Homogeneous, full, nodes: int = I4_NODES, shared: bool = True, power: int = I4_POWER):
    """I4 by the interpolation integral (module docstring) with s = 1 - tau^power and Gauss-Legendre in tau, from the
    covariance entries ``full`` (elementwise in them). The nodes are a ``lax.scan``: one fused pass over the
    entries per node keeps the intermediates in cache (2.7x faster than one pass over [..., nodes] at K = M = 6).
    ``shared`` evaluates the integrand by ``_hom_i4_node`` (else the nested ``_hom_i4_integrand``, the form before)."""
    import jax

    xg, wg = _LEGENDRE if nodes == I4_NODES else np.polynomial.legendre.leggauss(nodes)
    tau = 0.5 * (xg + 1.0)
    weights = 0.5 * wg * power * tau ** (power - 1)  # d tau on [0, 1] times ds/dtau
    om = tau ** power  # 1 - s
    full = {k: jnp.asarray(v) for k, v in full.items()}
    base = h.mean_dg ** 2 * _hom_i2(h, full[2, 2], full[2, 3], full[3, 3])
    shape = jnp.broadcast_shapes(*(v.shape for v in full.values()))
    dtype = jnp.result_type(*full.values())
    prep = _hom_i4_prepare(full) if shared else None

    def step(acc, node):
        w, s, o = node
        f = _hom_i4_node(h, full, prep, s, o) if shared else _hom_i4_integrand(h, full, s)
        return acc + w * f, None

    xs = tuple(jnp.asarray(a, dtype) for a in (weights, 1.0 - om, om))
    acc, _ = jax.lax.scan(step, jnp.zeros(shape, dtype), xs)
    return base + acc



_FLOOR = 1e-12  # relative conditional variance below which a field is a copy of the conditioned one (round-off)
_SNAP = 1e-14  # |correlation| above 1 - _SNAP is a copy's (+-1) left by round-off
_CROSS = ((0, 2, 1, 3), (0, 3, 1, 2), (1, 2, 0, 3), (1, 3, 0, 2))  # (i, j) a cross pair, (k, l) the other two


def _hom_d4(h: _Homogeneous, x, nodes: int = ORTHANT_NODES):
    """D4 = E[g'(u1) g'(u2) g'(u3) g'(u4)] (relu: the orthant probability P(u > 0); abs: E[prod sign u]) by Plackett's
    identity dD4 / d rho_ij = k^2 phi2(0, 0; rho_ij) E[g'(u_k) g'(u_l) | u_i = u_j = 0] along rho(s), which scales the
    cross correlations (1,3), (1,4), (2,3), (2,4) by s: D4(rho(0)) = E[g' g'](rho_12) E[g' g'](rho_34), and
        D4 = D4(rho(0)) + int_0^1 sum_{(i,j) cross} rho_ij k^2 phi2(0, 0; s rho_ij) E[g' g'](r_kl.ij(s)) ds,
    r_kl.ij the partial correlation. s = 1 - tau^2 and Gauss-Legendre in tau, as for the interpolation integral;
    elementwise in the entries ``x``, the nodes a leading axis of one fused pass (3x faster than a ``lax.scan``
    over the nodes on the 3435 sets of K = M = 10)."""
    xg, wg = np.polynomial.legendre.leggauss(nodes)
    tau = 0.5 * (xg + 1.0)
    weights = 0.5 * wg * 2.0 * tau
    s = 1.0 - tau ** 2
    r = {(a, b): _corr(x[a, b], x[a, a], x[b, b], _SNAP) for a in range(4) for b in range(a + 1, 4)}
    base = h.dg_dg(r[0, 1]) * h.dg_dg(r[2, 3])
    dtype = jnp.result_type(*r.values())
    sv = jnp.asarray(s, dtype).reshape((nodes,) + (1,) * jnp.ndim(base))
    rs = {k: (v[None] * sv if k[0] < 2 <= k[1] else v[None]) for k, v in r.items()}
    total = 0.0
    for i, j, k, l in _CROSS:
        rij, rki, rkj, rli, rlj = rs[i, j], _get(rs, k, i), _get(rs, k, j), _get(rs, l, i), _get(rs, l, j)
        om = 1.0 - rij * rij
        ckk = om - (rki * rki - 2.0 * rij * rki * rkj + rkj * rkj)
        cll = om - (rli * rli - 2.0 * rij * rli * rlj + rlj * rlj)
        ckl = om * _get(rs, k, l) - (rki * rli - rij * (rki * rlj + rkj * rli) + rkj * rlj)
        ok = om > 0
        phi2 = jnp.where(ok, 1.0 / (TWO_PI * jnp.sqrt(jnp.where(ok, om, 1.0))), 0.0)
        tiny = _FLOOR * om  # a round-off residual: the field is a copy of u_i or u_j (zero correlation)
        rho = _corr(ckl, jnp.where(ckk > tiny, ckk, 0.0), jnp.where(cll > tiny, cll, 0.0), _SNAP)
        total = total + r[i, j][None] * phi2 * h.dg_dg(rho)
    return base + h.kappa ** 2 * jnp.tensordot(jnp.asarray(weights, dtype), total, 1)


def _hom_i4_orthant(h: _Homogeneous, x, nodes: int = ORTHANT_NODES, d4=None):
    """I4 = E[u3 u4 g'(u1) g'(u2) g'(u3) g'(u4)] (g(z) = z g'(z)) by Stein's lemma on u4:
        I4 = C34 D4 + sum_{e in (1, 2, 4)} C4e k phi_e(0) J3(C | u_e = 0),
    J3 = E[g'(.) g'(.) g(u3)] of the two other fields and u3 given u_e = 0 (closed, ``_hom_j3_entries``) and D4 the
    one-dimensional Plackett integral of ``_hom_d4`` (or ``d4`` when given, e.g. ``_hom_d4_copy``'s closed form).
    Elementwise in the covariance entries ``x``."""
    x = {k: jnp.asarray(v) for k, v in x.items()}
    total = x[2, 3] * (_hom_d4(h, x, nodes) if d4 is None else d4)
    for e, rest, order in ((0, (1, 2, 3), (1, 3, 2)), (1, (0, 2, 3), (0, 3, 2)), (3, (0, 1, 2), (0, 1, 2))):
        cond = _given(x, e, rest, _FLOOR)
        total = total + _get(x, 3, e) * h.kappa * _phi0(x[e, e]) * _hom_j3_entries(h, cond, order, _FLOOR, _SNAP)
    return total


PAIRS4 = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))  # the pairs of 4 positions, the order of ``_hom_i4_sets``


def _hom_pair_weights(h: _Homogeneous, x):
    """W_ef = E[d_e d_f D4] = k^2 phi2_ef(0, 0) E[g'(u_p) g'(u_q) | u_e = u_f = 0] ({p, q} the other two) for the six
    pairs (e, f) of ``PAIRS4`` of four distinct fields; elementwise in the entries ``x``."""
    out = {}
    for e, f in PAIRS4:
        p, q = (m for m in range(4) if m not in (e, f))
        det = x[e, e] * x[f, f] - x[e, f] ** 2
        ok = det > 0
        inv = jnp.where(ok, 1.0 / jnp.where(ok, det, 1.0), 0.0)

        def cond(a, b):  # C_ab - (C_ae, C_af) S_ef^-1 (C_be, C_bf)'
            ae, af, be, bf = _get(x, a, e), _get(x, a, f), _get(x, b, e), _get(x, b, f)
            return _get(x, a, b) - (ae * be * x[f, f] - (ae * bf + af * be) * x[e, f] + af * bf * x[e, e]) * inv

        cpp, cqq = cond(p, p), cond(q, q)
        tiny = _FLOOR * jnp.minimum(x[p, p], x[q, q])
        r = _corr(cond(p, q), jnp.where(cpp > tiny, cpp, 0.0), jnp.where(cqq > tiny, cqq, 0.0), _SNAP)
        out[e, f] = h.kappa ** 2 * jnp.sqrt(inv) / TWO_PI * h.dg_dg(r)
    return out


def _hom_i4_sets(h: _Homogeneous, x, nodes: int = ORTHANT_NODES):
    """I4 of four distinct fields for each of the six choices of the pair that carries g': [..., 6] in the order of
    ``PAIRS4`` ((s, t) there: g'(u_s) g'(u_t) g(u_a) g(u_b), {a, b} the other two). Second-order Stein on u_a u_b of
    D = prod g'(u_m) (g(z) = z g'(z)), with E[d_e^2 D] = -sum_{f != e} C_ef W_ef / C_ee (from E[u_e d_e D] = 0):
        I4 = C_ab D4 + sum_{e != f} W_ef C_ae (C_bf - C_be C_ef / C_ee) = [C (D4 + W C - diag(N) C)]_ab,
    N_e = (W C)_ee / C_ee, W_ef of ``_hom_pair_weights`` (W_ee = 0) and D4 the Plackett integral of ``_hom_d4``: one
    D4 and six closed W per set of four fields, shared by its six splits (the ODEs sum I4 over index tuples that are
    permutations of one set)."""
    x = {k: jnp.asarray(v) for k, v in x.items()}
    d4 = _hom_d4(h, x, nodes)
    W = _hom_pair_weights(h, x)
    shape = jnp.broadcast_shapes(*(v.shape for v in x.values()))
    zero = jnp.zeros(shape, d4.dtype)
    C = jnp.stack([jnp.stack([jnp.broadcast_to(_get(x, a, b), shape) for b in range(4)], -1) for a in range(4)], -2)
    Wm = jnp.stack([jnp.stack([zero if a == b else jnp.broadcast_to(W[min(a, b), max(a, b)], shape)
                               for b in range(4)], -1) for a in range(4)], -2)
    WC = Wm @ C
    N = jnp.diagonal(WC, axis1=-2, axis2=-1) / jnp.diagonal(C, axis1=-2, axis2=-1)
    Y = C @ (d4[..., None, None] * jnp.eye(4, dtype=d4.dtype) + WC - N[..., :, None] * C)
    rest = [[m for m in range(4) if m not in pair] for pair in PAIRS4]
    return jnp.stack([Y[..., a, b] for a, b in rest], axis=-1)


def _hom_d4_copy(h: _Homogeneous, x, r_rest):
    """D4 where two of the four arguments are one field: with g' = alpha + beta sign (alpha = E[g'], beta = k / 2)
    the odd sign moments vanish, so D4 = alpha^4 + alpha^2 beta^2 sum_{pairs} (2/pi) arcsin rho + beta^4 (2/pi)
    arcsin(r_rest), E[prod of four signs] = E[s_p s_q] of the other two positions (correlation ``r_rest``; a copy's
    correlation is 1). Elementwise in ``x``."""
    alpha, beta = h.mean_dg, h.kappa / 2
    sign2 = lambda r: (2 / math.pi) * fast_asin(r)  # noqa: E731
    pairs = sum(sign2(_corr(x[a, b], x[a, a], x[b, b], _SNAP)) for a, b in PAIRS4) if alpha else 0.0
    return alpha ** 4 + alpha ** 2 * beta ** 2 * pairs + beta ** 4 * sign2(r_rest)


def _hom_i4_copy(h: _Homogeneous, x, rest):
    """I4 where two of the four arguments are one field (and no three): ``_hom_i4_orthant`` with D4 closed; ``rest``
    the covariance entries {(0, 0), (0, 1), (1, 1)} of the two other arguments."""
    r_rest = _corr(rest[0, 1], rest[0, 0], rest[1, 1], _SNAP)
    return _hom_i4_orthant(h, x, d4=_hom_d4_copy(h, x, r_rest))


def _register_homogeneous(name: str, h: _Homogeneous, g: Callable, dg: Callable) -> None:
    INTEGRALS.register(name, Integrals(
        name, g, dg,
        entries={"i2": lambda x: _hom_i2(h, x[0, 0], x[0, 1], x[1, 1]),
                 "i3": lambda x: _hom_i3(h, x),
                 "i4": lambda x: _hom_i4(h, x),
                 "i4_pairs": lambda x: _hom_i4_orthant(h, x),
                 "i4_sets": lambda x: _hom_i4_sets(h, x),
                 "i4_copy": lambda x, rest: _hom_i4_copy(h, x, rest),
                 "j2": lambda x: h.dg_dg(_corr(x[0, 1], x[0, 0], x[1, 1]))},
        closed_i4=False,
    ))


INTEGRALS.register("erf", Integrals("erf", _erf_g, _erf_dg,
                                    {"i2": erf_i2, "i3": erf_i3, "i4": erf_i4, "j2": erf_j2}, closed_i4=True))
INTEGRALS.register("linear", Integrals("linear", lambda x: x, lambda x: jnp.ones_like(x),
                                       {"i2": linear_i2, "i3": linear_i3, "i4": linear_i4, "j2": linear_j2},
                                       closed_i4=True))
_register_homogeneous("relu", RELU, lambda x: jnp.maximum(x, 0.0), lambda x: (x > 0).astype(jnp.result_type(x)))
_register_homogeneous("abs", ABS, jnp.abs, jnp.sign)


HOMOGENEOUS = {"relu": RELU, "abs": ABS}


def interpolation_i4(name: str, C, nodes: int = I4_NODES, shared: bool = True, power: int = I4_POWER):
    """I4 of relu or abs by the interpolation integral with ``nodes`` Gauss-Legendre nodes (for convergence checks);
    ``shared=False`` evaluates the integrand in its nested form (``_hom_i4_integrand``, the form before)."""
    return _hom_i4(HOMOGENEOUS[name], _entries(C, 4), nodes, shared, power)


def sets_i4(name: str, C, nodes: int = ORTHANT_NODES):
    """I4 of relu or abs of four distinct fields for the six placements of the g' pair (``_hom_i4_sets``): [..., 6]."""
    return _hom_i4_sets(HOMOGENEOUS[name], _entries(C, 4), nodes)


def copy_i4(name: str, C, pair):
    """I4 of relu or abs where the arguments at the positions ``pair`` are one field (``_hom_i4_copy``)."""
    z, w = (m for m in range(4) if m not in pair)
    x = _entries(C, 4)
    return _hom_i4_copy(HOMOGENEOUS[name], x, {(0, 0): x[z, z], (0, 1): x[z, w], (1, 1): x[w, w]})


def orthant_i4(name: str, C, nodes: int = ORTHANT_NODES):
    """I4 of relu or abs by Stein's lemma and the Plackett integral of D4 (``_hom_i4_orthant``) with ``nodes`` nodes."""
    return _hom_i4_orthant(HOMOGENEOUS[name], _entries(C, 4), nodes)
