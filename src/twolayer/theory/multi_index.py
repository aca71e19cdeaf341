"""Reduced dynamics of the multi-index paper (§5, App. C-E): closed forms, equilibria and ODEs (scipy).

Notation: s0, s2, s4p are sigma_hat_0^2, sigma_hat_2^2 and sigma_hat_{>=4}^2 = sum_{j>=2} sigma_hat_{2j}^2;
lam = r lambda_0 the weight decay; time is gradient-flow time (eq. 3).

* Competitive ODE (eq. 6, Fig. 2): p' = p(-lam + A(1 - p - Bq) + kappa(1 - p)), q' = q(-lam + A(1 - p - Bq));
  stable point (1 - lam/(A + kappa), 0), late decay q/p ~ exp(-kappa lam t/(A + kappa));
  lam = 0: q ~ (A + kappa)/(A B kappa t).
* Stage 1.1 (Lemma C.5): alpha' = 4 s0 alpha (alpha_eq - alpha), alpha_eq = r - lam/(2 s0) (logistic).
* Stage 1.2 (eq. 9-10 / main text / Lemma C.10 "full"): beta_1 (subspace mass / r), beta_2 (irrelevant mass / (d-r));
  stable point beta_1* = 1 - lam/(2(s0 r + s2)), beta_2* = 0.
* Stage 2.1 (Lemma D.14): potential-neuron alignment p' = 2(1 - p) sum_{j>=2} 2j sigma_hat_{2j}^2 p^j.
* Stage 2.2 (eq. 23, balanced): a' = 2a(-lam + 2 s0 (r - S) + 2 s2 (1 - a - b) + 2 s4p (1 - a)),
  b' = 2b(-lam + 2 s0 (r - S) + 2 s2 (1 - a - b)), S = r(a + b); a* = 1 - lam/(2 s0 r + 2 s(>=2)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

RTOL, ATOL = 1e-10, 1e-14


@dataclass(frozen=True)
class HermiteSums:
    """The Hermite sums the reduced ODEs need, from an activation's coefficients."""

    s0: float
    s2: float
    s4: float
    s4p: float  # sum_{k>=4} sigma_hat_k^2
    coeffs: np.ndarray

    @classmethod
    def of(cls, act, K: int = 400) -> HermiteSums:
        c = np.asarray(act.hermite_coefficients(K))
        total = act.second_moment()
        return cls(c[0] ** 2, c[2] ** 2, c[4] ** 2, total - c[0] ** 2 - c[1] ** 2 - c[2] ** 2 - c[3] ** 2, c)

    @property
    def s2p(self) -> float:
        return self.s2 + self.s4p


def _solve(rhs, y0, t, method="LSODA"):
    t = np.asarray(t, dtype=np.float64)
    sol = solve_ivp(rhs, (float(t[0]), float(t[-1])), np.asarray(y0, dtype=np.float64), t_eval=t, method=method,
                    rtol=RTOL, atol=ATOL)
    if not sol.success:
        raise RuntimeError(f"reduced ODE failed: {sol.message}")
    return sol.y


# -- competitive ODE (eq. 6) --------------------------------------------------------------------------

def competitive_equilibrium(A: float, B: float, kappa: float, lam: float) -> tuple[float, float]:
    """The stable point (p_lam, 0) = (1 - lam/(A + kappa), 0) of eq. (6), for 0 <= lam < A + kappa."""
    return 1.0 - lam / (A + kappa), 0.0


def competitive_decay_rate(A: float, B: float, kappa: float, lam: float) -> float:
    """Late exponential rate of q/p near (p_lam, 0): d/dt log(q/p) = -kappa (1 - p) -> -kappa lam/(A + kappa)."""
    return kappa * lam / (A + kappa)


def competitive_ode(t, p0: float, q0: float, A: float = 10.0, B: float = 1.0, kappa: float = 1.0,
                    lam: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """(p(t), q(t)) of eq. (6), integrated in (log p, log q) (q falls to 1e-10 and below)."""
    def rhs(_, y):
        p, q = np.exp(y)
        common = -lam + A * (1.0 - p - B * q)
        return [common + kappa * (1.0 - p), common]

    logp, logq = _solve(rhs, [np.log(p0), np.log(q0)], t)
    return np.exp(logp), np.exp(logq)


def competitive_gd(steps: int, h: float, p0: float, q0: float, A: float = 10.0, B: float = 1.0, kappa: float = 1.0,
                   lam: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """(p_k, q_k), k = 0..steps: eq. (6) under GD's step h (in s units): each coordinate is multiplied by 1 + h G/2,
    so p -> p (1 + h G_p/2)^2, q -> q (1 + h G_q/2)^2 with G_p = -lam + A(1 - p - Bq) + kappa(1 - p), G_q = G_p -
    kappa(1 - p) (the flow's d log p/ds and d log q/ds)."""
    p, q = np.empty(steps + 1), np.empty(steps + 1)
    p[0], q[0] = p0, q0
    for k in range(steps):
        common = -lam + A * (1.0 - p[k] - B * q[k])
        p[k + 1] = p[k] * (1.0 + 0.5 * h * (common + kappa * (1.0 - p[k]))) ** 2
        q[k + 1] = q[k] * (1.0 + 0.5 * h * common) ** 2
    return p, q


# -- Stage 1.1 ----------------------------------------------------------------------------------------

def alpha_eq(r: int, lam: float, h: HermiteSums) -> float:
    """Equilibrium total mass alpha_eq = r - lam/(2 sigma_hat_0^2) (Lemma C.5)."""
    return r - lam / (2.0 * h.s0)


def stage11_mass(t, alpha0: float, r: int, lam: float, h: HermiteSums) -> np.ndarray:
    """Logistic alpha(t) = alpha_eq / (1 + (alpha_eq/alpha0 - 1) exp(-4 s0 alpha_eq t)) (spec §4.2)."""
    ae = alpha_eq(r, lam, h)
    return ae / (1.0 + (ae / alpha0 - 1.0) * np.exp(-4.0 * h.s0 * ae * np.asarray(t)))


def stage11_mass_gd(steps: int, lr: float, alpha0: float, r: int, lam: float, h: HermiteSums) -> np.ndarray:
    """alpha_k, k = 0..steps: Lemma C.5's rate under GD's step, alpha -> alpha (1 + lr 2 s0 (alpha_eq - alpha))^2
    (every coordinate is multiplied by 1 + lr g with 2 g = 4 s0 (alpha_eq - alpha), the flow's d log alpha/dt)."""
    ae = alpha_eq(r, lam, h)
    a = np.empty(steps + 1)
    a[0] = alpha0
    for k in range(steps):
        a[k + 1] = a[k] * (1.0 + lr * 2.0 * h.s0 * (ae - a[k])) ** 2
    return a


def stage11_time(fraction: float, alpha0: float, r: int, lam: float, h: HermiteSums) -> float:
    """Time for the logistic to reach ``fraction`` of alpha_eq."""
    ae = alpha_eq(r, lam, h)
    return float(np.log((ae / alpha0 - 1.0) * fraction / (1.0 - fraction)) / (4.0 * h.s0 * ae))


def settle_time(alpha0s, r: int, lam: float, h: HermiteSums) -> float:
    """2 t_0.99 for the slowest of the initial masses ``alpha0s``: twice the logistic time to 99 % of
    alpha_eq, after which the total mass stays within O(1/r) of alpha_eq (Stage 1.1 over; the spec's
    t >= 0.2 at r = 20 is 1.35 t_0.99)."""
    return 2.0 * max(stage11_time(0.99, float(a0), r, lam, h) for a0 in np.atleast_1d(alpha0s))


# -- Stage 1.2 ----------------------------------------------------------------------------------------

def beta_star(r: int, lam: float, h: HermiteSums) -> float:
    """Stable subspace level beta_1* = 1 - lam/(2(s0 r + s2)) (Prop. C.12)."""
    return 1.0 - lam / (2.0 * (h.s0 * r + h.s2))


def _beta_main(b1, b2, d, r, lam, h):
    common = -lam + 2 * h.s0 * (r - r * b1 - (d - r) * b2)
    return 2 * b1 * (common + 2 * h.s2 * (1 - b1)), 2 * b2 * common


def _beta_appendix(b1, b2, d, r, lam, h):
    bs, k = beta_star(r, lam, h), h.s0 * r + h.s2
    common = k * (bs - b1) - h.s0 * (d - r) * b2
    return 4 * b1 * common, 4 * b2 * (common - h.s2 * (1 - b1 + b2))


def _beta_full(b1, b2, d, r, lam, h):
    common = -lam + 2 * h.s0 * (r - r * b1 - (d - r) * b2)
    return 2 * b1 * (common + 2 * h.s2 * (1 - b1)), 2 * b2 * (common - 2 * h.s2 * b2)


BETA_FORMS = {"main": _beta_main, "appendix": _beta_appendix, "full": _beta_full}


def beta_ode(t, beta1_0: float, beta2_0: float, d: int, r: int, lam: float, h: HermiteSums,
             form: str = "full") -> tuple[np.ndarray, np.ndarray]:
    """(beta_1(t), beta_2(t)) of the Stage 1.2 reduced ODE in one of its forms (main text, appendix
    eq. 9-10, or the 'full' Lemma C.10 form that also covers Stage 1.1), in log variables."""
    f = BETA_FORMS[form]

    def rhs(_, y):
        b1, b2 = np.exp(y)
        d1, d2 = f(b1, b2, d, r, lam, h)
        return [d1 / b1, d2 / b2]

    y = _solve(rhs, [np.log(beta1_0), np.log(beta2_0)], t)
    return np.exp(y[0]), np.exp(y[1])


def beta_decay_rate(r: int, lam: float, h: HermiteSums) -> float:
    """Late rate of (d - r) beta_2/(r beta_1): 4 s2 (1 - beta_1*) (competitive map, spec §4.1)."""
    return 4.0 * h.s2 * (1.0 - beta_star(r, lam, h))


# -- Stage 2.1 ----------------------------------------------------------------------------------------

def alignment_rate(p, h: HermiteSums) -> np.ndarray:
    """p' = 2 (1 - p) sum_{j>=2} 2j sigma_hat_{2j}^2 p^j (Lemma D.14, tensor-power dynamics)."""
    c2 = h.coeffs**2
    p = np.asarray(p, dtype=np.float64)
    ks = np.arange(4, len(c2), 2)
    return 2.0 * (1.0 - p) * np.sum(ks[:, None] * c2[ks, None] * p[None, :] ** (ks[:, None] // 2), axis=0)


def alignment_ode(t, p0: float, h: HermiteSums) -> np.ndarray:
    """p(t) of Stage 2.1 for a potential neuron starting at p0 = (u_{<=r})_i^2."""
    return _solve(lambda _, y: alignment_rate(np.atleast_1d(y), h), [p0], t)[0]


def alignment_time(p0: float, h: HermiteSums, target: float = 0.99) -> float:
    """Integral time for p0 -> target: int dp / p'(p) (spec §4.4)."""
    from scipy.integrate import quad

    return float(quad(lambda p: 1.0 / alignment_rate(np.array([p]), h)[0], p0, target, limit=200)[0])


def max_alignment_p0(m: int, r: int) -> float:
    """Typical best initial coordinate of m uniform directions in r dims: 2 log(2m)/r (Lemma B.2)."""
    return 2.0 * np.log(2.0 * m) / r


# -- Stage 2.2 ----------------------------------------------------------------------------------------

def a_star(r: int, lam: float, h: HermiteSums) -> float:
    """Aligned-mass level a* = 1 - lam/(2 s0 r + 2 s_{>=2}) (Lemma D.18)."""
    return 1.0 - lam / (2.0 * h.s0 * r + 2.0 * h.s2p)


def ab_ode(t, a0: float, b0: float, r: int, lam: float, h: HermiteSums) -> tuple[np.ndarray, np.ndarray]:
    """(a_hat(t), b_hat(t)) of eq. (23) with balanced directions (S = r (a + b)), log variables."""
    def rhs(_, y):
        a, b = np.exp(y)
        common = -lam + 2 * h.s0 * (r - r * (a + b)) + 2 * h.s2 * (1 - a - b)
        return [2 * (common + 2 * h.s4p * (1 - a)), 2 * common]

    y = _solve(rhs, [np.log(a0), np.log(b0)], t)
    return np.exp(y[0]), np.exp(y[1])


def ab_decay_rate(r: int, lam: float, h: HermiteSums) -> float:
    """Late rate of b_hat/a_hat: 4 s_{>=4} (1 - a*) (Lemma D.18)."""
    return 4.0 * h.s4p * (1.0 - a_star(r, lam, h))


def plateau_loss(r: int, lam: float, h: HermiteSums) -> float:
    """Weight-decay plateau: f = a* f*, so L = (1 - a*)^2 (E_0 + E_{>=2}) with E_0 = r^2 s0/2, E_{>=2} = r s_{>=2}/2."""
    return (1.0 - a_star(r, lam, h)) ** 2 * (0.5 * r**2 * h.s0 + 0.5 * r * h.s2p)
