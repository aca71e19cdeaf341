"""Margin theory of Lyu, Li, Wang & Arora (NeurIPS 2021), "Gradient descent on two-layer nets:
margin maximization and simplicity bias": closed forms and reference solvers as numpy functions.

Network f(x) = sum_k a_k phi(w_k . x) with Leaky ReLU phi(z) = max(z, alpha z) (the engine's
``two_layer`` net with v = a), mean logistic loss L = (1/n) sum_i log(1 + exp(-q_i)),
q_i = y_i f(x_i). Tags follow spec_001 (papers/): [SEED] from the paper text, [DERIVED] worked out
and checked numerically, [RECON] a reconstruction of a definition whose display math was lost.

- ``max_margin_linear``: bias-free hard-margin SVM (w*, gamma*) as the min-norm point of
  conv{y_i x_i} (minimax duality, spec §2.4), NNLS then an exact polish on the support.
- ``mu``, ``mu_pm``, ``G``, ``growth_rate``, ``phase1_closed_form``, ``phase1_groups``,
  ``group_amplitude_ratio`` (spec §2.5-2.6).
- ``global_max_margin`` gamma_max = (1+alpha) gamma*/4 on symmetric data (Thm 4.2, [DERIVED]);
  ``one_neuron_margin`` (w^+, gamma^+) of {(x_i^+, y_i)} (App. A; a balanced single neuron has
  gamma^+/2); ``margin_reference`` picks the prediction for a dataset.
- ``normalized_margin`` gamma = q_min / ||theta||^2 (§2.1), ``kkt_residual`` (Definition B.8 by
  NNLS, §2.3), ``predicted_limit`` (width-m limit, §2.7), ``linear_family_margin`` and
  ``certificate_margin`` (hinted data, §2.8 / P12).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# scipy.optimize is imported inside the solvers that use it: it costs about a second of every command's start-up
# (twolayer.data imports this module for the margin data kinds).

KINK_TOL = 1e-7  # |<w_k, x_i>| <= KINK_TOL ||w_k|| ||x_i||: a kink (both slopes allowed)


def leaky(z, alpha: float):
    """phi(z) = max(z, alpha z) for 0 <= alpha <= 1 (alpha = 0: ReLU, 1: linear)."""
    return np.where(z > 0, z, alpha * z)


def leaky_derivative(z, alpha: float):
    """phi'(z) with the convention phi'(0) = alpha (spec A8)."""
    return np.where(z > 0, 1.0, alpha)


def forward(W, a, X, alpha: float):
    """f(x_i) = sum_k a_k phi(<w_k, x_i>) for every row of X."""
    return leaky(np.asarray(X) @ np.asarray(W).T, alpha) @ np.asarray(a)


# -- the linear max-margin problem ----------------------------------------------------------------

def min_norm_hull_point(Z, *, penalty: float = 1e4):
    """The min-norm point u* of conv{z_i} and its weights lambda (sum 1, >= 0).

    NNLS on [Z^T; M 1^T] lambda ~ [0; M] (spec §2.4), normalized, then polished by solving the
    equality-constrained problem min ||Z_S^T l|| s.t. 1^T l = 1 on the support S exactly.
    """
    from scipy.optimize import nnls

    Z = np.asarray(Z, dtype=np.float64)
    n, d = Z.shape
    A = np.vstack([Z.T, penalty * np.ones((1, n))])
    b = np.concatenate([np.zeros(d), [penalty]])
    lam, _ = nnls(A, b, maxiter=50 * (n + d))
    lam = lam / lam.sum()
    support = lam > 1e-10 * lam.max()
    Zs = Z[support]
    k = Zs.shape[0]
    kkt = np.block([[2 * Zs @ Zs.T, np.ones((k, 1))], [np.ones((1, k)), np.zeros((1, 1))]])
    rhs = np.concatenate([np.zeros(k), [1.0]])
    sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:k]
    if np.all(sol >= -1e-13) and abs(sol.sum() - 1) < 1e-9:
        polished = np.zeros(n)
        polished[support] = np.clip(sol, 0, None)
        polished /= polished.sum()
        if np.linalg.norm(Z.T @ polished) <= np.linalg.norm(Z.T @ lam) + 1e-15:
            lam = polished
    return Z.T @ lam, lam


def max_margin_linear(X, y):
    """Bias-free hard-margin SVM: w* = argmax_{||w||=1} min_i y_i <w, x_i>, gamma* its value.

    Solved exactly as gamma* = ||u*||, w* = u*/||u*|| with u* the min-norm point of conv{y_i x_i}
    (spec §2.4, [DERIVED]); raises ValueError when the data are not separable through the origin.
    """
    Z = np.asarray(y, dtype=np.float64)[:, None] * np.asarray(X, dtype=np.float64)
    u, _ = min_norm_hull_point(Z)
    gamma = float(np.linalg.norm(u))
    scale = float(np.max(np.linalg.norm(Z, axis=1)))
    if gamma <= 1e-10 * scale:
        raise ValueError("the data are not linearly separable by a hyperplane through the origin "
                         "(the convex hull of y_i x_i contains 0)")
    w = u / gamma
    return w, float(np.min(Z @ w))


def plus_minus_inputs(X, y, alpha: float):
    """x_i^+ (x_i if y_i = +1, alpha x_i otherwise) and x_i^- (alpha x_i if y_i = +1, x_i
    otherwise): y_i phi(<w, x_i>) = y_i <w, x_i^+> on the cone of correct classifiers (App. A)."""
    X = np.asarray(X, dtype=np.float64)
    pos = (np.asarray(y) > 0)[:, None]
    return np.where(pos, X, alpha * X), np.where(pos, alpha * X, X)


def one_neuron_margin(X, y, alpha: float, sign: int = +1):
    """(w^+, gamma^+) (sign +1) or (w^-, gamma^-) (sign -1): the max-margin linear separator of
    {(x_i^+, y_i)} (resp. x_i^-), App. A. A balanced single neuron along it has margin gamma/2."""
    Xp, Xm = plus_minus_inputs(X, y, alpha)
    return max_margin_linear(Xp if sign > 0 else Xm, y)


def mu(X, y):
    """mu = (1/n) sum_i y_i x_i, the mean of y_i x_i [SEED, App. A]."""
    return np.mean(np.asarray(y, dtype=np.float64)[:, None] * np.asarray(X, dtype=np.float64), axis=0)


def mu_pm(X, y, alpha: float):
    """(mu^+, mu^-) = ((1/n) sum y_i x_i^+, (1/n) sum y_i x_i^-) (spec §2.5, [RECON])."""
    Xp, Xm = plus_minus_inputs(X, y, alpha)
    return mu(Xp, y), mu(Xm, y)


def G(w, X, y, alpha: float, scale: float = 0.5):
    """G(w) = (scale / n) sum_i y_i phi(<w, x_i>) (Maennel et al. 2018; spec §2.5). The default
    scale -l'(0) = 1/2 of the mean logistic loss makes grad G the near-origin velocity:
    dw_k/dt ~ a_k grad G(w_k), da_k/dt ~ G(w_k). ``w`` may be [d] or [k, d]."""
    z = np.asarray(w, dtype=np.float64) @ np.asarray(X, dtype=np.float64).T
    return scale * np.mean(np.asarray(y) * leaky(z, alpha), axis=-1)


def is_symmetric(X, y, *, atol: float = 1e-12) -> bool:
    """Assumption 4.1 up to ordering: the multiset {(x_i, y_i)} equals {(-x_i, -y_i)}."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if X.shape[0] % 2:
        return False
    key = np.column_stack([X, y])
    a = key[np.lexsort(key.T[::-1])]
    b = -key[np.lexsort((-key).T[::-1])]
    return bool(np.allclose(a, b, rtol=0, atol=atol * max(1.0, float(np.max(np.abs(key))))))


def mu_dot_x_min(X, y) -> float:
    """min_i |<mu, x_i>|, which the technical assumption <mu, x_i> != 0 needs positive [SEED]."""
    return float(np.min(np.abs(np.asarray(X) @ mu(X, y))))


def growth_rate(X, y, alpha: float, *, loss: str = "logistic", reduction: str = "mean") -> float:
    """Phase-I growth rate lambda = -l'(0) (1+alpha)/2 ||mu|| on symmetric data: (1+alpha)/4 ||mu||
    for the mean logistic loss (spec §2.5 [DERIVED]); times n for reduction sum. -l'(0) is the loss record's
    ``slope_at_zero``."""
    from twolayer.losses import LOSSES

    rate = LOSSES.get(loss).slope_at_zero * (1 + alpha) / 2 * float(np.linalg.norm(mu(X, y)))
    return rate * (np.asarray(X).shape[0] if reduction == "sum" else 1.0)


def phase1_closed_form(W0, a0, t, X, y, alpha: float, **rate_kw):
    """Linearized Phase-I flow near 0 on symmetric data (spec §2.6 [DERIVED]): with s_k = <mu_bar, w_k>,
    s_k + a_k = (s_k0 + a_k0) e^{lambda t}, s_k - a_k = (s_k0 - a_k0) e^{-lambda t}, P_perp w_k fixed.
    Returns (W(t), a(t)); accurate while ||theta|| << 1."""
    W0, a0 = np.asarray(W0, dtype=np.float64), np.asarray(a0, dtype=np.float64)
    m = mu(X, y)
    mbar = m / np.linalg.norm(m)
    lam = growth_rate(X, y, alpha, **rate_kw)
    s0 = W0 @ mbar
    grow, decay = (s0 + a0) * math.exp(lam * t), (s0 - a0) * math.exp(-lam * t)
    s, a = (grow + decay) / 2, (grow - decay) / 2
    return W0 + np.outer(s - s0, mbar), a


def phase1_groups(W0, a0, X, y):
    """Group sign s_k = sign(<mu_bar, w_k0> + a_k0) and amplitude c_k = |<mu_bar, w_k0> + a_k0|
    (spec §2.6): neuron k ends Phase I on s_k mu_bar, with weight proportional to c_k."""
    m = mu(X, y)
    proj = np.asarray(W0) @ (m / np.linalg.norm(m)) + np.asarray(a0)
    return np.where(proj > 0, 1.0, -1.0), np.abs(proj)


def group_amplitude_ratio(W0, a0, X, y) -> float:
    """rho = (largest c_k of the weaker group) / (largest c_k of the stronger group), c_k = |<mu_bar, w_k0> + a_k0|
    (spec §2.6); 1 when one group is empty. After Phase I the two groups hold masses in the ratio ~rho^2, and
    the late phase equalizes them only slowly [DERIVED here, two groups on +-w*]: while the lighter group's
    class holds the margin, d ln(A_light / A_heavy) = ((1 - alpha) / alpha) d ln q_min, and q_min ~ ln t = tau
    (the flow_log clock), so the mass ratio grows only like tau^((1 - alpha) / alpha) = tau^4 at alpha = 0.2."""
    sign, c = phase1_groups(W0, a0, X, y)
    if not (np.any(sign > 0) and np.any(sign < 0)):
        return 1.0
    top = sorted((float(np.max(c[sign == g])) for g in (1.0, -1.0)))
    return top[0] / top[1]


def predicted_limit(W0, a0, X, y, w_star=None):
    """Predicted limit direction theta/||theta|| for width m on symmetric data when both groups are
    non-empty (spec §2.7 [DERIVED]): w_k = a_k w*, a_k = s_k b_k / 2, b_k = c_k / ||c_group||."""
    if w_star is None:
        w_star, _ = max_margin_linear(X, y)
    s, c = phase1_groups(W0, a0, X, y)
    b = np.zeros_like(c)
    for g in (1.0, -1.0):
        idx = s == g
        if np.any(idx):
            b[idx] = c[idx] / np.linalg.norm(c[idx])
    a = s * b / 2
    return np.outer(a, w_star), a


# -- margins of the network -----------------------------------------------------------------------

def normalized_margin(W, a, X, y, alpha: float) -> float:
    """gamma(theta) = min_i y_i f(x_i) / ||theta||^2, ||theta||^2 = sum_k ||w_k||^2 + a_k^2 (§2.1, L = 2)."""
    q = np.asarray(y) * forward(W, a, X, alpha)
    return float(np.min(q) / (np.sum(np.asarray(W) ** 2) + np.sum(np.asarray(a) ** 2)))


def global_max_margin(X, y, alpha: float, gamma_star: float | None = None) -> float:
    """gamma_max = (1+alpha) gamma*/4 on symmetric data (Thm 4.2 with the spec's [DERIVED] constant)."""
    if gamma_star is None:
        _, gamma_star = max_margin_linear(X, y)
    return (1 + alpha) * gamma_star / 4


def margin_reference(X, y, alpha: float) -> tuple[float, str]:
    """The normalized margin gradient flow from small initialization is predicted to reach:
    (1+alpha) gamma*/4 on symmetric data (Thm 4.3); otherwise gamma^+/2 (one positive neuron along
    w^+, Thm A.7 [RECON]) when ||mu^+|| >= ||mu^-||, else gamma^-/2 (the reversed case, App. A.3)."""
    if is_symmetric(X, y):
        return global_max_margin(X, y, alpha), "symmetric: (1+alpha) gamma*/4"
    mp, mm = mu_pm(X, y, alpha)
    sign = 1 if np.linalg.norm(mp) >= np.linalg.norm(mm) else -1
    try:
        _, g = one_neuron_margin(X, y, alpha, sign)
    except ValueError:
        return float("nan"), "not separable"
    return g / 2, ("gamma^+/2" if sign > 0 else "gamma^-/2") + " (one-neuron limit, Thm A.7 [RECON])"


@dataclass(frozen=True)
class UnitMargin:
    """theta~ = theta / q_min^{1/2} (so min_i q_i(theta~) = 1), where Definition B.8 is checked: q_i(theta~),
    Z_ik = <w~_k, x_i> and the kinks |Z_ik| <= kink_tol ||w~_k|| ||x_i||."""

    W: np.ndarray
    a: np.ndarray
    q: np.ndarray
    Z: np.ndarray
    kink: np.ndarray

    @property
    def theta(self) -> np.ndarray:
        return np.concatenate([self.W.ravel(), self.a])


def unit_margin(W, a, X, y, alpha: float, *, kink_tol: float = KINK_TOL) -> UnitMargin | None:
    """The point theta~ of theta's direction at q_min = 1 (``UnitMargin``); None when q_min <= 0 (no margin)."""
    W, a, X, y = (np.asarray(v, dtype=np.float64) for v in (W, a, X, y))
    q = y * forward(W, a, X, alpha)
    qmin = float(np.min(q))
    if qmin <= 0:
        return None
    Wt, at = W / math.sqrt(qmin), a / math.sqrt(qmin)
    Z = X @ Wt.T
    scale = np.linalg.norm(Wt, axis=1)[None, :] * np.linalg.norm(X, axis=1)[:, None]
    return UnitMargin(Wt, at, q / qmin, Z, np.abs(Z) <= kink_tol * np.maximum(scale, 1e-300))


def kkt_residual(W, a, X, y, alpha: float, *, tau: float = 1e-2):
    """KKT check of Definition B.8 (spec §2.3 [DEFAULT]): rescale theta~ = theta / q_min^{1/2}, take
    the support S = {i : q_i(theta~) <= 1 + tau}, solve min_{lambda >= 0} ||theta~ - A lambda|| by
    NNLS with columns grad q_i(theta~) (w_k block y_i a_k phi'(w_k.x_i) x_i, a_k block
    y_i phi(w_k.x_i)), and return (||theta~ - A lambda|| / ||theta~||, lambda [n], support mask).
    Returns (1.0, ...) when q_min <= 0 (not a margin direction)."""
    from scipy.optimize import nnls

    u = unit_margin(W, a, X, y, alpha)
    if u is None:
        return 1.0, np.zeros(len(y)), np.zeros(len(y), bool)
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    support = u.q <= 1 + tau
    gw = (y[:, None, None] * (u.a[None, :] * leaky_derivative(u.Z, alpha))[:, :, None] * X[:, None, :])  # [n, m, d]
    ga = y[:, None] * leaky(u.Z, alpha)  # [n, m]
    A = np.concatenate([gw.reshape(len(y), -1), ga], axis=1).T  # [P, n]
    theta = u.theta
    lam = np.zeros(len(y))
    sol, res = nnls(A[:, support], theta, maxiter=50 * A.shape[0])
    lam[support] = sol
    return float(res / np.linalg.norm(theta)), lam, support


# -- hinted data: linear-boundary family and a nonlinear certificate --------------------------------

def _family_at(v, X, y, alpha: float) -> float:
    """Best margin over p of nets with all neurons on +-v, a fraction p of the mass on +v (§2.8)."""
    z = np.asarray(X) @ v
    pos, neg = np.asarray(y) > 0, np.asarray(y) < 0
    mp = np.min(z[pos]) if pos.any() else np.inf
    mm = np.min(-z[neg]) if neg.any() else np.inf
    if mp <= 0 or mm <= 0:
        return min(mp, mm) / 2 if np.isfinite(min(mp, mm)) else 0.0
    A = lambda p: (p + alpha * (1 - p)) / 2  # noqa: E731
    B = lambda p: (alpha * p + 1 - p) / 2  # noqa: E731
    cands = [0.0, 1.0]
    if np.isfinite(mp) and np.isfinite(mm) and alpha < 1:
        cands.append(float(np.clip((mm - alpha * mp) / ((1 - alpha) * (mp + mm)), 0, 1)))
    return max(min(A(p) * mp, B(p) * mm) for p in cands)


def _special_directions(X, y, alpha: float) -> list:
    """w*, w^+ and w^- (where defined): the kinks where the linear-family margin peaks."""
    out = []
    for fn in (lambda: max_margin_linear(X, y)[0], lambda: one_neuron_margin(X, y, alpha, 1)[0],
               lambda: one_neuron_margin(X, y, alpha, -1)[0]):
        try:
            out.append(fn())
        except ValueError:
            pass
    return out


def linear_family_margin(X, y, alpha: float, *, starts: int = 16, seed: int = 0):
    """max over unit v and p in [0, 1] of the margin of a net whose neurons all lie on +-v (every
    linear-boundary classifier of this form, spec §2.8 [DERIVED]): gamma = min((p + alpha(1-p))/2 m_+(v),
    (alpha p + 1 - p)/2 m_-(v)), m_+(v) = min_{y=+1} <v,x>, m_-(v) = min_{y=-1} -<v,x>. The optimum
    over p is closed form; v is found by a 7200-angle grid plus refinement (d = 2) or by Nelder-Mead
    restarts (d > 2). Returns (gamma, v)."""
    from scipy.optimize import minimize, minimize_scalar

    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    if d == 2:
        ang = np.linspace(0, 2 * np.pi, 7200, endpoint=False)
        vals = [_family_at(np.array([np.cos(t), np.sin(t)]), X, y, alpha) for t in ang]
        t0 = ang[int(np.argmax(vals))]
        res = minimize_scalar(lambda t: -_family_at(np.array([np.cos(t), np.sin(t)]), X, y, alpha),
                              bounds=(t0 - np.pi / 3600, t0 + np.pi / 3600), method="bounded",
                              options={"xatol": 1e-12})
        cands = [(-res.fun, np.array([np.cos(res.x), np.sin(res.x)])), (max(vals), np.array([np.cos(t0), np.sin(t0)]))]
        cands += [(_family_at(v, X, y, alpha), v) for v in _special_directions(X, y, alpha)]
        best = max(cands, key=lambda c: c[0])
        return float(best[0]), best[1]
    rng = np.random.default_rng(seed)
    x0s = _special_directions(X, y, alpha) + list(rng.normal(size=(starts, d)))
    best = (-np.inf, None)
    for x0 in x0s:
        f = lambda v: -_family_at(v / np.linalg.norm(v), X, y, alpha)  # noqa: E731
        r = minimize(f, x0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 4000})
        if -r.fun > best[0]:
            best = (-r.fun, r.x / np.linalg.norm(r.x))
    return float(best[0]), best[1]


def certificate_margin(X, y, alpha: float, w_star, w_perp, *, grid: int = 2001):
    """Margin of the nonlinear certificate f = r1^2 (1+alpha) <w*, x> + r2^2 (1-alpha) |<w_perp, x>|
    (neurons (r1 w*, r1), (-r1 w*, -r1), (r2 w_perp, r2), (-r2 w_perp, r2); 4 r1^2 + 4 r2^2 = 1),
    maximized over r2^2 on a grid (spec P12 [DERIVED]). Returns (gamma, r2^2)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    u, v = X @ np.asarray(w_star), np.abs(X @ np.asarray(w_perp))
    r2sq = np.linspace(0, 0.25, grid)
    r1sq = 0.25 - r2sq
    q = y[None, :] * (r1sq[:, None] * (1 + alpha) * u[None, :] + r2sq[:, None] * (1 - alpha) * v[None, :])
    gam = q.min(axis=1)
    i = int(np.argmax(gam))
    return float(gam[i]), float(r2sq[i])


def hinted_prechecks(X, y, alpha: float) -> dict:
    """The pre-checks of spec E6 for a hinted dataset: y_i <mu^+, x_i> > 0 for all i, ||mu^+|| > ||mu^-||
    (A.3), every support vector of {(x^+, y)} has y = +1 (A.5), and gamma^+, w^+ against w*, gamma*."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    mp, mm = mu_pm(X, y, alpha)
    w_star, g_star = max_margin_linear(X, y)
    w_plus, g_plus = one_neuron_margin(X, y, alpha, +1)
    Xp, _ = plus_minus_inputs(X, y, alpha)
    margins_plus = y * (Xp @ w_plus)
    sv = margins_plus <= g_plus * (1 + 1e-6)
    return {
        "mu_plus_classifies_all": bool(np.all(y * (X @ mp) > 0)),
        "mu_plus_norm": float(np.linalg.norm(mp)), "mu_minus_norm": float(np.linalg.norm(mm)),
        "A3_mu_plus_larger": bool(np.linalg.norm(mp) > np.linalg.norm(mm)),
        "A5_support_vectors_positive": bool(np.all(y[sv] > 0)),
        "gamma_star": g_star, "gamma_plus": g_plus, "cos_wplus_wstar": float(w_plus @ w_star),
    }
