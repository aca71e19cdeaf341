"""KKT-margin directions of two-layer Leaky ReLU nets (Lyu et al. 2021, Definition B.8; spec E7, Figure 1
left): a search utility, an independent verification, and the boundary-linearity check.

The margin problem (P): min 1/2 ||theta||^2 s.t. q_i(theta) = y_i sum_k a_k phi(<w_k, x_i>) >= 1 for all i.
theta is along a KKT-margin direction iff theta~ = theta / q_min^{1/2} satisfies theta~ in sum_i lambda_i
d°q_i(theta~) with lambda >= 0 and lambda_i = 0 where q_i(theta~) > 1 (d°: Clarke subdifferential; on a kink
<w_k, x_i> = 0 the slope of neuron k at x_i is any h in [alpha, 1]).

- ``kkt_search``: random restarts of a local solver, ``method="slsqp"`` (SLSQP on (P): local minima of (P),
  i.e. local-max-margin directions) or ``method="lsq"`` (bounded least squares on the KKT system in
  (theta, lambda): residual [theta - J(theta)^T lambda; FB(lambda_i, q_i - 1)] with the Fischer-Burmeister
  function FB(a, b) = a + b - sqrt(a^2 + b^2), zero iff a, b >= 0 and ab = 0; it also converges to saddle
  KKT points); every result is re-checked by ``verify``.
- ``verify``: margin gamma = q_min / ||theta||^2, the Clarke NNLS KKT residual (every one-sided slope
  combination on kinks as a column), the boundary-linearity check (d = 2: sign changes of f on a 7200-point
  circle and |angle between them - 180 deg|; d > 2: disagreement with the best hyperplane on Gaussian probes)
  and the nonlinearity ||f_even|| / ||f_odd||.
- ``linear_boundary_search``: the best margin of general width-m nets whose decision boundary is a line
  (d = 2), by SLSQP on (P) with f(u) = f(-u) = 0 for a searched unit u: a check of the +-v family of spec §2.8.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy.optimize import least_squares, minimize, nnls

from twolayer.theory.margin import KINK_TOL, forward, leaky, leaky_derivative, unit_margin

CIRCLE = 7200
KKT_TOL = 1e-6  # a verified KKT direction: Clarke residual <= KKT_TOL
LINEAR_DEV = 0.5  # degrees: a 2-D boundary is linear iff 2 crossings within 0.5 deg of antipodal


def split(theta, m: int, d: int):
    """theta = (w_1..w_m, a_1..a_m) flattened -> (W [m, d], a [m])."""
    theta = np.asarray(theta, dtype=np.float64)
    return theta[: m * d].reshape(m, d), theta[m * d: m * d + m]


def margins(theta, X, y, alpha: float, m: int):
    """q_i(theta) = y_i sum_k a_k phi(<w_k, x_i>) for a flattened theta of width m."""
    W, a = split(theta, m, X.shape[1])
    return y * forward(W, a, X, alpha)


def margins_jacobian(theta, X, y, alpha: float, m: int) -> np.ndarray:
    """J [n, m (d + 1)]: rows grad q_i (w_k block y_i a_k phi'(<w_k, x_i>) x_i, a_k block y_i phi(<w_k, x_i>))."""
    W, a = split(theta, m, X.shape[1])
    Z = X @ W.T
    gw = (y[:, None] * a[None, :] * leaky_derivative(Z, alpha))[:, :, None] * X[:, None, :]
    return np.concatenate([gw.reshape(len(y), -1), y[:, None] * leaky(Z, alpha)], axis=1)


@dataclass(frozen=True)
class KKTCandidate:
    """A verified point theta~ (q_min = 1): W [m, d], a [m], its normalized margin, Clarke KKT residual,
    support size, kinks (neuron-point pairs on a hyperplane), boundary linearity and nonlinearity."""

    W: np.ndarray
    a: np.ndarray
    margin: float
    residual: float
    support: int
    kinks: int
    crossings: int
    boundary_dev: float
    disagreement: float
    nonlinearity: float
    method: str = ""
    restart: int = -1

    @property
    def kkt(self) -> bool:
        return self.residual <= KKT_TOL

    @property
    def linear_boundary(self) -> bool:
        if self.W.shape[1] == 2:
            return self.crossings == 2 and self.boundary_dev <= LINEAR_DEV
        return self.disagreement <= 1e-3

    def record(self) -> dict:
        out = asdict(self)
        out.update(W=self.W.tolist(), a=self.a.tolist(), kkt=self.kkt, linear_boundary=self.linear_boundary)
        return out


def clarke_kkt_residual(W, a, X, y, alpha: float, *, tau: float = 1e-2):
    """min_{lambda >= 0} ||theta~ - sum_{i in S} lambda_i g_i|| / ||theta~|| over Clarke gradients g_i of q_i,
    S = {q_i(theta~) <= 1 + tau}: every combination of one-sided slopes {alpha, 1} on the kinks of point i is
    a column (the cone of their union is sum_i lambda_i conv(...)). Returns (residual, support size, kinks);
    (1, 0, 0) when q_min <= 0."""
    u = unit_margin(W, a, X, y, alpha)
    if u is None:
        return 1.0, 0, 0
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    support = np.flatnonzero(u.q <= 1 + tau)
    cols = []
    for i in support:
        ks = np.flatnonzero(u.kink[i])[:6]  # 2^6 columns at most per point
        for slopes in itertools.product((alpha, 1.0), repeat=len(ks)):
            h = leaky_derivative(u.Z[i], alpha).astype(np.float64)
            h[ks] = slopes
            gw = (y[i] * u.a * h)[:, None] * X[i][None, :]
            cols.append(np.concatenate([gw.ravel(), y[i] * leaky(u.Z[i], alpha)]))
    A = np.array(cols).T
    theta = u.theta
    _, res = nnls(A, theta, maxiter=50 * A.shape[1] + 100)
    return float(res / np.linalg.norm(theta)), len(support), int(u.kink.sum())


def boundary_crossings(W, a, alpha: float, grid: int = CIRCLE) -> tuple[int, float]:
    """d = 2: the number of sign changes of f on a ``grid``-point unit circle and, when there are exactly 2,
    |angle between them - 180| in degrees (else 180)."""
    ang = np.linspace(0, 2 * np.pi, grid, endpoint=False)
    s = np.sign(forward(W, a, np.column_stack([np.cos(ang), np.sin(ang)]), alpha))
    change = np.flatnonzero(s != np.roll(s, -1))
    if len(change) != 2:
        return len(change), 180.0
    return 2, abs((change[1] - change[0]) * 360.0 / grid - 180.0)


def linearity(W, a, alpha: float, *, probes: int = 4096, seed: int = 12345) -> tuple[float, float]:
    """(disagreement of sign f with the best hyperplane, ||f_even|| / ||f_odd||) on probe points: the unit
    circle (720 points) in d = 2, N(0, I) points otherwise (the definitions of observe.margin)."""
    d = np.asarray(W).shape[1]
    if d == 2:
        ang = np.linspace(0, 2 * np.pi, 720, endpoint=False)
        P = np.column_stack([np.cos(ang), np.sin(ang)])
    else:
        P = np.random.default_rng(seed).normal(size=(probes, d))
    fp, fm = forward(W, a, P, alpha), forward(W, a, -P, alpha)
    odd, even = (fp - fm) / 2, (fp + fm) / 2
    v = np.linalg.lstsq(P, odd, rcond=None)[0]
    disagree = float(np.mean(np.sign(fp) != np.sign(P @ v)))
    norm_odd = np.linalg.norm(odd)
    return disagree, float(np.linalg.norm(even) / norm_odd) if norm_odd > 0 else math.inf


def verify(W, a, X, y, alpha: float, *, method: str = "", restart: int = -1) -> KKTCandidate:
    """The checks of a candidate direction (scaled to q_min = 1 when q_min > 0)."""
    W, a = np.asarray(W, dtype=np.float64), np.asarray(a, dtype=np.float64)
    q = y * forward(W, a, X, alpha)
    qmin = float(np.min(q))
    if qmin > 0:
        W, a = W / math.sqrt(qmin), a / math.sqrt(qmin)
    margin = float(np.min(y * forward(W, a, X, alpha)) / (np.sum(W**2) + np.sum(a**2)))
    residual, support, kinks = clarke_kkt_residual(W, a, X, y, alpha)
    crossings, dev = boundary_crossings(W, a, alpha) if X.shape[1] == 2 else (-1, math.nan)
    disagreement, nl = linearity(W, a, alpha)
    return KKTCandidate(W, a, margin, residual, support, kinks, crossings, dev, disagreement, nl, method, restart)


# -- search -------------------------------------------------------------------------------------------

def random_margin_net(X, y, alpha: float, width: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """A standard-Gaussian net (W [width, d], a [width]) that classifies every point (q_min > 0), by rejection:
    a margin direction that is almost surely not a KKT point (the checks' negative control)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    while True:
        W, a = rng.normal(size=(width, X.shape[1])), rng.normal(size=width)
        if np.min(y * forward(W, a, X, alpha)) > 0:
            return W, a


def _start(rng, m: int, d: int) -> np.ndarray:
    """A random start: W ~ N(0, 1), a = s ||w_k|| (random signs) or N(0, 1), half and half."""
    W = rng.normal(size=(m, d))
    a = rng.choice([-1.0, 1.0], size=m) * np.linalg.norm(W, axis=1) if rng.random() < 0.5 else rng.normal(size=m)
    return np.concatenate([W.ravel(), a])


def _slsqp(theta0, X, y, alpha, m):
    cons = {"type": "ineq", "fun": lambda th: margins(th, X, y, alpha, m) - 1.0,
            "jac": lambda th: margins_jacobian(th, X, y, alpha, m)}
    res = minimize(lambda th: 0.5 * th @ th, theta0, jac=lambda th: th, constraints=[cons], method="SLSQP",
                   options={"maxiter": 500, "ftol": 1e-14})
    return res.x


def _lsq(theta0, X, y, alpha, m, rng):
    """Least squares on the KKT system of (P) in (theta, lambda) from theta0 and random multipliers."""
    return _lsq_from(theta0, rng.uniform(0, 0.5, size=len(y)), X, y, alpha, m)


def _lsq_from(theta0, lam0, X, y, alpha, m):
    """Least squares on the KKT system of (P) in (theta, lambda), complementarity lambda_i >= 0, q_i >= 1,
    lambda_i (q_i - 1) = 0 written with the Fischer-Burmeister function a + b - sqrt(a^2 + b^2) = 0."""
    n, P = len(y), len(theta0)

    def residual(z):
        th, lam = z[:P], z[P:]
        slack = margins(th, X, y, alpha, m) - 1.0
        return np.concatenate([th - margins_jacobian(th, X, y, alpha, m).T @ lam,
                               lam + slack - np.sqrt(lam**2 + slack**2)])

    z0 = np.concatenate([theta0, lam0])
    res = least_squares(residual, z0, method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=200 * (P + n))
    return res.x[:P]


def _feasible_scale(theta, X, y, alpha, m):
    """theta scaled so that q_min = 1 (unchanged when q_min <= 0)."""
    qmin = float(np.min(margins(theta, X, y, alpha, m)))
    return theta / math.sqrt(qmin) if qmin > 0 else theta


def kkt_search(X, y, alpha: float, width: int, *, restarts: int = 50, seed: int = 0,
               method: str = "slsqp") -> list[KKTCandidate]:
    """``restarts`` random starts of ``method`` (``slsqp`` or ``lsq``) on the margin problem of a width-m net;
    every end point with q_min > 0 is verified (``verify``). Returns the candidates, best margin first."""
    if method not in ("slsqp", "lsq"):
        raise ValueError(f"method {method!r} is not one of slsqp, lsq")
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    rng = np.random.default_rng(seed)
    d = X.shape[1]
    out = []
    for k in range(restarts):
        theta0 = _feasible_scale(_start(rng, width, d), X, y, alpha, width)
        with np.errstate(all="ignore"):
            theta = _slsqp(theta0, X, y, alpha, width) if method == "slsqp" else _lsq(theta0, X, y, alpha, width, rng)
        if not np.all(np.isfinite(theta)):
            continue
        W, a = split(theta, width, d)
        if np.min(y * forward(W, a, X, alpha)) > 0:
            out.append(verify(W, a, X, y, alpha, method=method, restart=k))
    return sorted(out, key=lambda c: -c.margin)


def polish(c: KKTCandidate, X, y, alpha: float, *, tau: float = 1e-2) -> KKTCandidate:
    """``c`` refined by least squares on its KKT system (``method="lsq"``'s residual) from theta~ and the NNLS
    multipliers of its support {q_i <= 1 + tau}: an SLSQP end point (KKT residual 1e-13-1e-8) becomes the KKT
    point it approximates to rounding (1e-16), so its digits no longer carry the solver's stopping point. The
    refined point replaces ``c`` only if it verifies as KKT without kinks, with the same margin to 1e-6 and the same
    boundary linearity; otherwise ``c`` is returned."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    m, d = c.W.shape
    theta = np.concatenate([np.asarray(c.W, dtype=np.float64).ravel(), np.asarray(c.a, dtype=np.float64)])
    support = margins(theta, X, y, alpha, m) <= 1 + tau
    lam = np.zeros(len(y))
    lam[support] = nnls(margins_jacobian(theta, X, y, alpha, m)[support].T, theta)[0]
    with np.errstate(all="ignore"):
        refined = _lsq_from(theta, lam, X, y, alpha, m)
    if not np.all(np.isfinite(refined)) or np.min(margins(refined, X, y, alpha, m)) <= 0:
        return c
    W, a = split(_feasible_scale(refined, X, y, alpha, m), m, d)
    p = verify(W, a, X, y, alpha, method=c.method, restart=c.restart)
    same = p.kkt and not p.kinks and abs(p.margin - c.margin) <= 1e-6 * c.margin and p.linear_boundary == c.linear_boundary
    return p if same else c


def in_canonical_order(c: KKTCandidate, *, digits: int = 6) -> KKTCandidate:
    """``c`` with its neurons sorted by (a_k, w_k) read to ``digits`` significant digits, lexicographically.
    f, ||theta|| and the KKT conditions do not depend on the neurons' order, and a solver can stop at any
    permutation of them (a 1-ulp change of the data swapped two distinct neurons of a least-squares end point);
    the rounding keeps the order of neurons that differ only by solver noise from depending on it."""
    W, a = np.asarray(c.W, dtype=np.float64), np.asarray(c.a, dtype=np.float64)
    keys = np.column_stack([a, W])
    rounded = np.array([[float(f"{v:.{digits - 1}e}") for v in row] for row in keys])
    order = np.lexsort(rounded.T[::-1])
    if np.array_equal(order, np.arange(len(a))):
        return c
    return replace(c, W=W[order], a=a[order])


def same_ray_canonical(c: KKTCandidate, X, y, alpha: float, *, cos_tol: float = 1e-9) -> KKTCandidate:
    """The representative of ``c``'s flat family: neurons on one ray (cos(w_j, w_k) >= 1 - cos_tol, same sign of
    a) add up to one neuron of strength C = sum_k |a_k| ||w_k||, and any split of C among them keeps f, ||theta||^2
    (= 2 sum_k |a_k| ||w_k|| at a balanced KKT point) and the KKT conditions. A solver stops anywhere on that
    family: a 1-ulp change of the data moves a least-squares end point along it by ~1e-3. Returned: the equal
    split, w_k = sqrt(C/g) u, a_k = s sqrt(C/g) (g neurons of the group, u the unit ray, s the sign), verified;
    ``c`` itself when no two neurons share a ray or the split does not verify as the same KKT point. Either way
    the neurons come in ``in_canonical_order`` (a solver also stops at any permutation of the neurons)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    W, a = np.array(c.W, dtype=np.float64), np.array(c.a, dtype=np.float64)
    norms = np.linalg.norm(W, axis=1)
    units = W / np.maximum(norms, 1e-300)[:, None]
    group = -np.ones(len(a), dtype=int)
    for k in range(len(a)):
        if group[k] < 0:
            mates = (group < 0) & (units @ units[k] >= 1 - cos_tol) & (np.sign(a) == np.sign(a[k]))
            group[mates] = k
    if len(np.unique(group)) == len(a):
        return in_canonical_order(c)
    for g in np.unique(group):
        members = group == g
        strength = float(np.sum(np.abs(a[members]) * norms[members]))
        u = np.sum(units[members] * (np.abs(a[members]) * norms[members])[:, None], axis=0)
        share = math.sqrt(strength / members.sum())
        W[members] = share * u / np.linalg.norm(u)
        a[members] = np.sign(a[g]) * share
    p = verify(W, a, X, y, alpha, method=c.method, restart=c.restart)
    same = p.kkt and not p.kinks and abs(p.margin - c.margin) <= 1e-6 * c.margin and p.linear_boundary == c.linear_boundary
    return in_canonical_order(p if same else c)


def search_record(candidates: list[KKTCandidate]) -> dict:
    """A summary of a search: counts of verified KKT points (linear / nonlinear boundary), the best residual,
    and the nonlinear-boundary candidate with the smallest residual."""
    kkt = [c for c in candidates if c.kkt]
    nonlinear = sorted((c for c in candidates if not c.linear_boundary), key=lambda c: c.residual)
    return {"ends": len(candidates), "kkt": len(kkt), "kkt_linear": sum(c.linear_boundary for c in kkt),
            "kkt_nonlinear": sum(not c.linear_boundary for c in kkt),
            "best_residual": min((c.residual for c in candidates), default=math.nan),
            "best_nonlinear": nonlinear[0].record() if nonlinear else None}


def linear_boundary_search(X, y, alpha: float, width: int, *, restarts: int = 30, seed: int = 0):
    """d = 2: the best normalized margin found over width-m nets whose decision boundary is the line through
    a unit u(phi) (searched with theta): SLSQP on (P) with the equalities f(u) = 0 and f(-u) = 0, random starts;
    solutions whose boundary has more than those two crossings are dropped. Returns (margin, candidate)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    rng = np.random.default_rng(seed)
    m, d = width, 2
    best = (-math.inf, None)
    for k in range(restarts):
        z0 = np.concatenate([_start(rng, m, d), [rng.uniform(0, 2 * np.pi)]])

        def boundary(z):
            u = np.array([[math.cos(z[-1]), math.sin(z[-1])]])
            W, a = split(z[:-1], m, d)
            return np.array([forward(W, a, u, alpha)[0], forward(W, a, -u, alpha)[0]])

        cons = [{"type": "ineq", "fun": lambda z: margins(z[:-1], X, y, alpha, m) - 1.0},
                {"type": "eq", "fun": boundary}]
        with np.errstate(all="ignore"):
            res = minimize(lambda z: 0.5 * z[:-1] @ z[:-1], z0, constraints=cons, method="SLSQP",
                           options={"maxiter": 800, "ftol": 1e-14})
        W, a = split(res.x[:-1], m, d)
        if not np.all(np.isfinite(res.x)) or np.min(y * forward(W, a, X, alpha)) <= 0:
            continue
        c = verify(W, a, X, y, alpha, method="linear-boundary", restart=k)
        if c.linear_boundary and c.margin > best[0]:
            best = (c.margin, c)
    return best
