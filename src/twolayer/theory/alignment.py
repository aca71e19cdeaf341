"""Geometry and theorem quantities of Min, Mallada & Vidal (ICLR 2024), "Early neuron alignment in
two-layer ReLU networks with small initialization", as pure numpy functions.

Conventions: data ``X`` [n, d] (rows x_i), labels ``y`` [n] in {-1, +1}, neurons ``W`` [h, d] (rows
w_j), output weights ``v`` [h]. All times are **sum-loss gradient-flow times** (the paper's); a run
with ``reduction: mean`` at step lr after k steps is at sum time k lr / n (spec §1.6), and a loss
with y r(0) = c_l (exp: 1, logistic: 1/2) runs early dynamics at speed c_l.

Constants that the paper only proves to exist (zeta1, xi) get the computable choices of the spec
(§2.3, §2.5): exact in 2-D by an angle grid, Monte-Carlo *estimates* in higher dimension, labelled so.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

# cone codes of the ``cone`` observable
CONE_POS, CONE_NEG, CONE_DEAD, CONE_NONE = 1, -1, 0, 2
CONE_NAMES = {CONE_POS: "S+", CONE_NEG: "S-", CONE_DEAD: "S_dead", CONE_NONE: "none"}


def _unit(a, axis=-1):
    a = np.asarray(a, dtype=np.float64)
    norm = np.linalg.norm(a, axis=axis, keepdims=True)
    return np.divide(a, norm, out=np.zeros_like(a), where=norm > 0)


def cosine(a, b) -> np.ndarray:
    """cos(a, b) = <a, b>/(||a|| ||b||) along the last axis (0 when either vector is 0)."""
    return np.sum(_unit(a) * _unit(b), axis=-1)


def class_sums(X, y) -> tuple[np.ndarray, np.ndarray]:
    """x_+ = sum_{y_i > 0} x_i and x_- = sum_{y_i < 0} x_i (sums, not means; §2.1)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    return X[y > 0].sum(axis=0), X[y < 0].sum(axis=0)


def class_centers(X, y) -> tuple[np.ndarray, np.ndarray]:
    """Data centres x+ / |I+| and x- / |I-| (Fig. 5; zero vector for an empty class)."""
    xp, xn = class_sums(X, y)
    n_pos, n_neg = int(np.sum(np.asarray(y) > 0)), int(np.sum(np.asarray(y) < 0))
    return xp / max(n_pos, 1), xn / max(n_neg, 1)


def separability(X, y) -> float:
    """mu = min_{i,j} <y_i x_i, y_j x_j>/(||x_i|| ||x_j||) (Assumption 1; includes i = j, so mu <= 1)."""
    Z = _unit(np.asarray(y, dtype=np.float64)[:, None] * np.asarray(X, dtype=np.float64))
    return float(np.min(Z @ Z.T))


def activation_pattern(W, X) -> np.ndarray:
    """1[<w_j, x_i> > 0] as a bool array [..., h, n] (sigma'(0) = 0)."""
    return np.einsum("...hd,nd->...hn", np.asarray(W, dtype=np.float64), np.asarray(X, dtype=np.float64)) > 0


def cone_membership(W, X, y) -> np.ndarray:
    """Cone code of each neuron (§2.3): 0 S_dead (no x_i with <x_i, w> > 0; checked first, so a
    class-free S_+ or S_- that equals S_dead reports 0), 1 S_+ (active exactly on the positives),
    -1 S_- (exactly on the negatives), 2 none of them. Works on [..., h, d]."""
    A = activation_pattern(W, X)
    pos = np.asarray(y) > 0
    dead = ~A.any(axis=-1)
    in_pos = np.all(A == pos, axis=-1)
    in_neg = np.all(A == ~pos, axis=-1)
    return np.where(dead, CONE_DEAD, np.where(in_pos, CONE_POS, np.where(in_neg, CONE_NEG, CONE_NONE)))


def _in_pos_or_neg(U, X, y) -> np.ndarray:
    """Membership of rows of U in S_+ u S_- by the activation rule alone (with an empty class, S_-
    or S_+ coincides with S_dead and counts here)."""
    A = activation_pattern(U, X)
    pos = np.asarray(y) > 0
    return np.all(A == pos, axis=-1) | np.all(A == ~pos, axis=-1)


def x_a(w, X, y, slope: float = 0.0) -> np.ndarray:
    """x_a(w) = sum_{<x_i, w> > 0} y_i x_i + slope sum_{<x_i, w> <= 0} y_i x_i (eq. 5; App. B for
    leaky ReLU). ``w`` may be [d] or [..., d]."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    active = (np.asarray(w, dtype=np.float64) @ X.T) > 0
    weight = np.where(active, 1.0, slope) * y
    return weight @ X


def in_cap(z, x, zeta: float) -> np.ndarray:
    """z in S_x^zeta = {z : cos(z, x) >= sqrt(1 - zeta)} (§2.3)."""
    return cosine(z, x) >= math.sqrt(max(0.0, 1.0 - zeta))


def zeta1(X, y, shrink: float = 0.999) -> float:
    """zeta1 = shrink * min(min_i cos^2(x_+, x_i), min_i cos^2(x_-, x_i)) (Lemma 8; spec §2.3): the
    caps S_{x+}^zeta1, S_{x-}^zeta1 then lie inside S_+, S_-. An empty class is skipped."""
    X = np.asarray(X, dtype=np.float64)
    values = [np.min(cosine(X, c) ** 2) for c in class_sums(X, y) if np.linalg.norm(c) > 0]
    return float(shrink * min(values))


def zeta2(W0, v, X, y, shrink: float = 0.999) -> float:
    """zeta2 of eq. 26: shrink * (1 - max(0, m)^2), m = max(max_{v_j > 0} cos(w_j, x_-),
    max_{v_j < 0} cos(w_j, x_+)); 1 if m <= 0 or both maxima are vacuous (Assumption 2)."""
    xp, xn = class_sums(X, y)
    W0, v = np.asarray(W0, dtype=np.float64), np.asarray(v)
    cands = []
    if np.any(v > 0) and np.linalg.norm(xn) > 0:
        cands.append(np.max(cosine(W0[v > 0], xn)))
    if np.any(v < 0) and np.linalg.norm(xp) > 0:
        cands.append(np.max(cosine(W0[v < 0], xp)))
    m = max(cands) if cands else 0.0
    return 1.0 if m <= 0 else float(shrink * (1.0 - m * m))


@dataclass(frozen=True)
class Estimate:
    """A constant with a flag saying whether it is exact (2-D grid) or a Monte-Carlo estimate."""

    value: float
    exact: bool
    method: str


def xi(X, y, *, grid: int = 200_000, samples: int = 4000, seed: int = 0) -> Estimate:
    """xi of Lemma 9: 1 - sup |cos(x1, x2)|^2 over x1 in K = CH{y_i x_i} and unit x2 outside
    S_+ u S_-. 2-D: exact up to the angle grid (sup |cos| = cos of the smallest angle between the
    complement arcs and K u -K). d > 2: Monte-Carlo estimate (random x2 outside the cones,
    projection onto K by non-negative least squares) - it over-estimates xi."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    Z = y[:, None] * X
    if X.shape[1] == 2:
        phi = np.linspace(0, 2 * np.pi, grid, endpoint=False)
        U = np.stack([np.cos(phi), np.sin(phi)], axis=1)
        outside = ~_in_pos_or_neg(U, X, y)
        if not outside.any():
            return Estimate(1.0, True, "2-D grid: S+ u S- covers the circle")
        zang = np.arctan2(Z[:, 1], Z[:, 0])
        ref = zang[0]
        rel = np.angle(np.exp(1j * (zang - ref)))  # K is an arc of width < pi/2 (mu > 0) around zang[0]
        lo, width = ref + rel.min(), rel.max() - rel.min()

        def dist_to_arc(p):  # angular distance from p to the arc [lo, lo + width]
            a = np.mod(p - lo, 2 * np.pi)
            return np.where(a <= width, 0.0, np.minimum(a - width, 2 * np.pi - a))

        po = phi[outside]
        dmin = np.minimum(dist_to_arc(po), dist_to_arc(po + np.pi))  # |cos| with K or with -K
        sup = float(np.cos(np.min(dmin)))
        return Estimate(1.0 - sup**2, True, f"2-D angle grid ({grid} points)")
    from scipy.optimize import nnls

    rng = np.random.default_rng(seed)
    U = _unit(rng.normal(size=(samples, X.shape[1])))
    U = U[~_in_pos_or_neg(U, X, y)]
    if U.shape[0] == 0:
        return Estimate(1.0, False, f"Monte-Carlo ({samples} samples): none outside S+ u S-")
    sup = 0.0
    for u in U[:min(len(U), 500)]:
        for s in (1.0, -1.0):
            a, _ = nnls(Z.T, s * u)
            p = Z.T @ a
            sup = max(sup, float(np.linalg.norm(p)))  # cos(u, proj_K(u)) = ||proj|| for unit u
    return Estimate(1.0 - sup**2, False, f"Monte-Carlo estimate ({min(len(U), 500)} directions outside the cones)")


def harmonic(k: int) -> float:
    """The harmonic number H_k = sum_{i <= k} 1/i."""
    return float(sum(1.0 / i for i in range(1, k + 1)))


@dataclass(frozen=True)
class TheoremQuantities:
    """Every quantity of spec §2.6 for one dataset and one balanced init W(0) = eps W0.

    Times are in sum-loss gradient-flow time; eps bounds are natural logs (they are astronomically
    small, eq. 28). ``zeta`` = min(zeta1, zeta2) [spec FIX of the paper's max]."""

    n: int
    n_pos: int
    n_neg: int
    h: int
    mu: float
    X_max: float
    X_min: float
    W_max: float
    W_min: float
    eps: float
    zeta1: float
    zeta2: float
    zeta: float
    xi: float
    xi_exact: bool
    T: float  # end of the alignment phase (Lemma 1)
    log_eps_lemma1: float  # log of 1/(4 sqrt h X_max W_max^2)
    log_eps1: float
    log_eps2: float
    log_eps_bound: float  # log min(eps1, eps2, eps_lemma1) (eq. 28)
    t1: float  # 16 log n / (min{zeta, xi} sqrt(mu) X_min)
    T_Pmax: float  # travel time of the maximal activation path (App. C.2)
    t2_bound_pos: float  # eq. 39
    t2_bound_neg: float
    rate_const: float  # (mu X_min)^2 / (32 X_max)
    norm_bound: float  # Lemma 3: max ||w_j||^2 <= 2 eps W_max^2 / sqrt h on [0, T]
    output_bound: float  # Lemma 3: max |f| <= 2 eps sqrt h X_max W_max^2
    direction_error_bound: float  # Lemma 1: 4 eps n sqrt h X_max^2 W_max^2

    def to_dict(self) -> dict:
        return asdict(self)

    def delta_t(self, n_a: int) -> float:
        """App. C.2: a neuron outside S_+ u S_- u S_dead changes pattern within 4/(min{zeta, xi}
        sqrt(mu) X_min n_a)."""
        return 4.0 / (min(self.zeta, self.xi) * math.sqrt(self.mu) * self.X_min * n_a)


def theorem_quantities(X, y, W0, v0, eps: float) -> TheoremQuantities:
    """Quantities of Theorem 1 and its lemmas (spec §2.6) for data (X, y) and the balanced init
    W(0) = eps W0 (rows of ``W0`` are the shape vectors, ``v0`` gives the signs V_+/V_-)."""
    X, y, W0 = np.asarray(X, dtype=np.float64), np.asarray(y), np.asarray(W0, dtype=np.float64)
    n, h = X.shape[0], W0.shape[0]
    n_pos, n_neg = int(np.sum(y > 0)), int(np.sum(y < 0))
    norms_x = np.linalg.norm(X, axis=1)
    X_max, X_min = float(norms_x.max()), float(norms_x.min())
    wn = np.linalg.norm(W0, axis=1)
    wn = wn[wn > 0]
    W_max, W_min = float(wn.max()), float(wn.min())
    mu = separability(X, y)
    z1, z2 = zeta1(X, y), zeta2(W0, v0, X, y)
    zeta = min(z1, z2)
    x = xi(X, y)
    m = min(zeta, x.value)
    smu = math.sqrt(max(mu, 0.0))
    T = math.log(1.0 / (math.sqrt(h) * eps)) / (4 * n * X_max)
    log_lemma = -math.log(4 * math.sqrt(h) * X_max * W_max**2)
    log_eps1 = math.log(min(mu, zeta, x.value) * smu * X_min / (4 * math.sqrt(h) * n * X_max**2 * W_max**2)) if mu > 0 else -math.inf
    log_eps2 = (-0.5 * math.log(h) - 64 * n * X_max * math.log(n) / (m * smu * X_min)) if mu > 0 else -math.inf
    t1 = 16 * math.log(n) / (m * smu * X_min) if mu > 0 else math.inf
    T_P = 4 / (m * smu * X_min) * (harmonic(n_neg) + 0.5 + harmonic(max(n_pos - 1, 0))) if mu > 0 else math.inf

    def t2(n_c):
        if n_c == 0 or mu <= 0:
            return math.nan
        a = smu * n_c * X_min
        return t1 + 6 / a + 4 / a * (math.log(2 / (eps**2 * smu * X_min * W_min**2)) + 4 * n * X_max * t1)

    return TheoremQuantities(
        n=n, n_pos=n_pos, n_neg=n_neg, h=h, mu=mu, X_max=X_max, X_min=X_min, W_max=W_max, W_min=W_min, eps=eps,
        zeta1=z1, zeta2=z2, zeta=zeta, xi=x.value, xi_exact=x.exact, T=T, log_eps_lemma1=log_lemma,
        log_eps1=log_eps1, log_eps2=log_eps2, log_eps_bound=min(log_eps1, log_eps2, log_lemma), t1=t1, T_Pmax=T_P,
        t2_bound_pos=t2(n_pos), t2_bound_neg=t2(n_neg), rate_const=(mu * X_min) ** 2 / (32 * X_max),
        norm_bound=2 * eps * W_max**2 / math.sqrt(h), output_bound=2 * eps * math.sqrt(h) * X_max * W_max**2,
        direction_error_bound=4 * eps * n * math.sqrt(h) * X_max**2 * W_max**2,
    )


def sum_time(t, *, n: int, reduction: str, loss: str = "exponential"):
    """Convert a run's time t = lr k to the theory's sum-loss time, including the loss's early
    speed c_l: t_sum = c_l t (sum) or c_l t / n (mean)."""
    return np.asarray(t) * early_rate(n, reduction, loss)


def two_point_crossing_time(theta0: float, phi0, c: float = 1.0):
    """P7: a balanced V_+ neuron active only on x_1, at angle phi0 in (theta0, pi/2] from x_1, enters
    S_+ at t = ln(tan(phi0/2)/tan(theta0/2)) / c (eps -> 0; unit data at angle pi/2 - theta0;
    c = c_l for sum reduction, c_l/n for mean). Infinite for theta0 = 0."""
    phi0 = np.asarray(phi0, dtype=np.float64)
    if theta0 <= 0:
        return np.full_like(phi0, np.inf)
    return np.log(np.tan(phi0 / 2) / np.tan(theta0 / 2)) / c


def two_point_end_probabilities(theta0: float) -> dict[str, float]:
    """P8: end states of a balanced V_+ neuron with isotropic initial direction on two unit
    positive points at angle pi/2 - theta0. theta0 > 0: S_+ w.p. 3/4 - theta0/(2 pi), dead
    1/4 + theta0/(2 pi). theta0 = 0: S_+ 1/4, only x_1 1/4, only x_2 1/4, dead 1/4."""
    if theta0 > 0:
        return {"pos": 0.75 - theta0 / (2 * np.pi), "dead": 0.25 + theta0 / (2 * np.pi)}
    return {"pos": 0.25, "only_x1": 0.25, "only_x2": 0.25, "dead": 0.25}


def loss_rate_bound(loss_t2: float, rate_const: float, t):
    """Theorem 1: L(t) <= L(t2) / (L(t2) rate_const (t - t2) + 1) for t >= t2 (``t`` = t - t2)."""
    return loss_t2 / (loss_t2 * rate_const * np.asarray(t) + 1.0)


def stable_rank(W) -> np.ndarray:
    """||W||_F^2 / ||W||_2^2 of [..., h, d]."""
    W = np.asarray(W, dtype=np.float64)
    s = np.linalg.svd(W, compute_uv=False)
    return np.sum(s**2, axis=-1) / np.max(s**2, axis=-1)


def alignment_time_law(n, mu, X_min: float = 1.0):
    """The law t1 ~ log(n) / (sqrt(mu) X_min) (Theorem 1, up to the constant 16/min{zeta, xi})."""
    return np.log(np.asarray(n, dtype=np.float64)) / (np.sqrt(np.asarray(mu, dtype=np.float64)) * X_min)


def lemma2_gap(loss: str, yhat=None) -> float:
    """Lemma 2 (eq. 9) needs |-dl/dyhat(y, yhat) - y| <= 2 |yhat| for y in {-1, +1} and |yhat| <= 1.
    Returns max over y and a grid of yhat in [-1, 1] (default 2001 points, incl. 0) of
    |-dl/dyhat - y| - 2 |yhat|, with dl/dyhat by autodiff of the registered loss: <= 0 when the
    property holds (exp, logistic2, square); 1/2 for plain logistic (-dl/dyhat = y/2 at 0)."""
    import jax
    import jax.numpy as jnp

    from twolayer.losses import LOSSES

    yhat = np.linspace(-1.0, 1.0, 2001) if yhat is None else np.asarray(yhat, dtype=np.float64)
    per_sample = LOSSES.get(loss).per_sample
    grad = jax.vmap(jax.grad(lambda y, f: per_sample(y, f), argnums=1), in_axes=(None, 0))
    gaps = [np.abs(-np.asarray(grad(jnp.asarray(y, dtype=yhat.dtype), jnp.asarray(yhat))) - y) - 2 * np.abs(yhat)
            for y in (-1.0, 1.0)]
    return float(np.max(gaps))


def sharp_drops(t, loss, *, floor: float = 0.2, dip: float = 0.5) -> list[float]:
    """Times of the distinct sharp decreases of a loss curve (Fig. 6 remark: two of them on TOY-A).
    The decrease rate r = -d log L/dt is taken between consecutive observations; a sharp decrease
    is a local maximum of r of at least ``floor`` max(r), and two maxima are distinct only if r
    falls below ``dip`` times the smaller of them in between (else the higher one is kept)."""
    t, loss = np.asarray(t, dtype=np.float64), np.asarray(loss, dtype=np.float64)
    r = -np.diff(np.log(loss)) / np.diff(t)
    mid = 0.5 * (t[1:] + t[:-1])
    if r.size < 3 or not np.any(r > 0):
        return []
    peaks = [k for k in range(1, r.size - 1) if r[k] >= r[k - 1] and r[k] > r[k + 1] and r[k] >= floor * r.max()]
    kept: list[int] = []
    for k in peaks:
        if kept and np.min(r[kept[-1]:k + 1]) > dip * min(r[kept[-1]], r[k]):
            if r[k] > r[kept[-1]]:
                kept[-1] = k
            continue
        kept.append(k)
    return [float(mid[k]) for k in kept]


# -- the early phase of one neuron under an unbalanced init (Gaussian, the paper's experiments) ---------

def early_rate(n: int, reduction: str, loss: str = "exponential") -> float:
    """The early-phase speed factor s c_l: r_i ~ c_l y_i while |f| << 1 (spec §1.2), with c_l = y r at yhat = 0,
    the loss record's ``slope_at_zero``, and s = 1 (sum) or 1/n (mean). The early flow of a neuron whose
    activation pattern is fixed is then linear (below)."""
    from twolayer.losses import LOSSES

    return LOSSES.get(loss).slope_at_zero * (1.0 if reduction == "sum" else 1.0 / n)


@dataclass(frozen=True)
class EarlyNeuron:
    """Closed-form early dynamics of one neuron (w_j, v_j) while its activation pattern is fixed and
    r_i = c y_i (|f| << 1): with a = x_a(w_j) (eq. 5) and rate k = c ||a||,

        dw/dt = c v a,  dv/dt = c <w, a>   =>   w(t) = alpha(t) a/||a|| + w_perp,
        alpha(t) + v(t) = (alpha0 + v0) e^{k t},  alpha(t) - v(t) = (alpha0 - v0) e^{-k t},

    with alpha = <w, a>/||a|| and w_perp (the part of w orthogonal to a) constant. A balanced init
    (v0 = +-||w0||) gives eq. 4 exactly (tan(phi/2) = tan(phi0/2) e^{-k t} for the angle phi to a, P7);
    an unbalanced one is a saddle: the neuron ends with sign(alpha0 + v0) and needs a time
    ln(||w_perp|| / |alpha0 + v0|) / k to turn, unbounded as alpha0 + v0 -> 0."""

    alpha0: float
    v0: float
    perp: np.ndarray  # w_perp [d]
    direction: np.ndarray  # a / ||a|| [d]
    k: float

    @classmethod
    def of(cls, w0, v0, a, c: float) -> EarlyNeuron:
        w0, a = np.asarray(w0, dtype=np.float64), np.asarray(a, dtype=np.float64)
        na = float(np.linalg.norm(a))
        if na == 0:
            raise ValueError("x_a(w) = 0: the neuron is dead (no active point), its early flow is zero")
        u = a / na
        alpha = float(w0 @ u)
        return cls(alpha, float(v0), w0 - alpha * u, u, c * na)

    def alpha(self, t):
        t = np.asarray(t, dtype=np.float64)
        return 0.5 * ((self.alpha0 + self.v0) * np.exp(self.k * t) + (self.alpha0 - self.v0) * np.exp(-self.k * t))

    def v(self, t):
        t = np.asarray(t, dtype=np.float64)
        return 0.5 * ((self.alpha0 + self.v0) * np.exp(self.k * t) - (self.alpha0 - self.v0) * np.exp(-self.k * t))

    def w(self, t):
        return self.alpha(t)[..., None] * self.direction + self.perp

    def sign_change_time(self) -> float:
        """The time at which v crosses 0: ln((alpha0 - v0)/(alpha0 + v0)) / (2k) when that ratio is
        > 1 (v0 and alpha0 + v0 of opposite signs), else inf (v keeps its sign)."""
        s = self.alpha0 + self.v0
        ratio = (self.alpha0 - self.v0) / s if s != 0 else math.inf
        return math.log(ratio) / (2 * self.k) if 1 < ratio < math.inf else math.inf

    def gain_time(self, x) -> float:
        """The first time t >= 0 at which <w(t), x> > 0 for a point x inactive at t = 0 (inf if never, 0 if
        active already). With u = e^{kt}, <w(t), x> u = ux A u^2 + <w_perp, x> u + ux B, where ux = <a/||a||,
        x>, A = (alpha0 + v0)/2 and B = (alpha0 - v0)/2: the first root u >= 1 of that quadratic where it
        turns positive."""
        x = np.asarray(x, dtype=np.float64)
        ux, p = float(self.direction @ x), float(self.perp @ x)
        A, B = 0.5 * (self.alpha0 + self.v0), 0.5 * (self.alpha0 - self.v0)
        a2, a1, a0 = ux * A, p, ux * B
        if a2 + a1 + a0 > 0:
            return 0.0
        if a2 == 0:
            return math.log(-a0 / a1) / self.k if a1 > 0 and -a0 / a1 >= 1 else math.inf
        disc = a1 * a1 - 4 * a2 * a0
        if disc < 0:
            return math.inf
        roots = sorted(((-a1 - math.sqrt(disc)) / (2 * a2), (-a1 + math.sqrt(disc)) / (2 * a2)))
        # a2 > 0: positive beyond the larger root; a2 < 0: positive between the roots
        u = roots[1] if a2 > 0 else roots[0]
        if a2 < 0 and roots[1] <= 1:
            return math.inf
        return math.log(max(u, 1.0)) / self.k if u >= 1 or a2 < 0 else math.inf
