"""Every KKT-margin direction of a width-<= m Leaky-ReLU net on 2-D data, by enumeration of activation faces
(issue 27, section 1: Figure 1 left), kinked points included, each verified by an exact LP for its multipliers.

Reduction (Lemma B.9: a KKT-margin direction is balanced, |a_k| = ||w_k||). With u_k = a_k w_k and s_k = sign a_k,
a_k phi(<w_k, x>) = s_k phi(s_k <u_k, x>) and 1/2 ||theta||^2 = sum_k ||u_k||, so (P) min 1/2 ||theta||^2 s.t.
q_i >= 1 reads min sum_k ||u_k|| s.t. y_i sum_k s_k phi(s_k <u_k, x_i>) >= 1. The lines x_i^perp cut the plane
into rays and open arcs ("faces"); while the direction of w_k = s_k u_k/||u_k|| stays in one face F_k,
s_k phi(s_k <u_k, x_i>) = h_ik <u_k, x_i> with h_ik = 1 (<w_k, x_i> > 0), alpha (< 0) or any value on a ray
through x_i^perp (then <u_k, x_i> = 0 and the term vanishes). On a fixed choice (F_k, s_k) the problem is convex
(u_k in the closed cone of F_k, linear constraints, a sum of norms), so every KKT point of (P) whose neurons lie
in those faces is that face problem's minimum: the enumeration of all choices of at most m distinct (face,
sign) pairs (two neurons in the same face with the same sign are parallel at a KKT point, Definition B.8's
stationarity u_k/||u_k|| = sum_i lambda_i h_ik y_i x_i, so they merge) finds every KKT-margin direction of width
<= m, up to a non-unique face minimum. A face minimum is kept when every arc neuron is inside its arc and no
neuron vanishes (otherwise the point belongs to a smaller face or width, enumerated there).

Verification (``exact_kkt``), independent of the face solve: at theta~ = theta / q_min^{1/2}, the active set
A = {q_i <= 1 + ACTIVE_TOL}, the kinks K = {|<w_k, x_i>| <= KINK_TOL ||w_k|| ||x_i||}, an LP (HiGHS) minimizes
||theta~ - sum_{i in A} lambda_i g_i||_inf over lambda >= 0 and, on kinks, mu_ik = lambda_i h_ik with
alpha lambda_i <= mu_ik <= lambda_i (the Clarke subdifferential of q_i, Definition B.8); the residual is
relative to ||theta~||_inf.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linprog, minimize

from twolayer.theory.kkt import boundary_crossings, linearity
from twolayer.theory.margin import forward, leaky, unit_margin

ACTIVE_TOL = 1e-8  # q_i <= 1 + ACTIVE_TOL at q_min = 1: an active constraint (the face solve meets q >= 1 to ~1e-12)
KINK_TOL = 1e-9  # |<w_k, x_i>| <= KINK_TOL ||w_k|| ||x_i||: a kink (rays are exact to rounding, 1e-16)
EXACT_TOL = 1e-8  # a verified KKT point: LP residual <= EXACT_TOL (the SLSQP face solve reaches 3e-16 to 5e-9)
LINEAR_DEV = 0.5  # degrees: theory.kkt's rule, a 2-D boundary is linear iff 2 crossings within 0.5 deg of antipodal


@dataclass(frozen=True)
class Face:
    """A face of the arrangement of the lines x_i^perp: a ray (one generator) or an open arc (two)."""

    kind: str
    gens: np.ndarray  # [1 or 2, 2] unit vectors

    def slopes(self, X, alpha: float) -> np.ndarray:
        """h_i of a neuron whose direction is in this face: 1, alpha, or 0 on a kink (the term vanishes)."""
        v = self.gens.sum(axis=0)
        z = np.asarray(X) @ v
        scale = np.linalg.norm(X, axis=1) * np.linalg.norm(v)
        return np.where(z > 1e-12 * scale, 1.0, np.where(z < -1e-12 * scale, alpha, 0.0))


def arrangement(X) -> list[Face]:
    """The rays and arcs of the lines {x: <x, x_i> = 0} in R^2, sorted by angle (rays first)."""
    angles = []
    for x in np.asarray(X, dtype=np.float64):
        t = math.atan2(x[1], x[0]) + math.pi / 2
        angles += [t % (2 * math.pi), (t + math.pi) % (2 * math.pi)]
    angles = np.sort(angles)
    keep = [angles[0]] + [t for prev, t in zip(angles, angles[1:]) if t - prev > 1e-12]
    if len(keep) > 1 and keep[0] + 2 * math.pi - keep[-1] <= 1e-12:
        keep = keep[:-1]
    rays = [np.array([math.cos(t), math.sin(t)]) for t in keep]
    return [Face("ray", r[None]) for r in rays] + [Face("arc", np.array([rays[i], rays[(i + 1) % len(rays)]]))
                                                    for i in range(len(rays))]


@dataclass(frozen=True)
class FacePoint:
    """The minimum of one face problem: balanced (W, a) scaled to q_min = 1, whether it is inside its faces."""

    combo: tuple
    W: np.ndarray
    a: np.ndarray
    interior: bool


def solve_face(combo, faces: list[Face], X, y, alpha: float) -> FacePoint | None:
    """min sum_k ||u_k|| over s_k u_k in cone(F_k), s.t. y_i sum_k h_ik <u_k, x_i> >= 1 (SLSQP from the LP
    relaxation sum c >= ||u||); None when infeasible."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    owner, gens, rows = [], [], []
    for k, (f, s) in enumerate(combo):
        h = faces[f].slopes(X, alpha)
        for e in faces[f].gens:
            owner.append(k)
            gens.append(e)
            rows.append(y * h * s * (X @ e))
    A = np.array(rows).T
    owner, E, m = np.array(owner), np.array(gens), len(combo)
    onehot = np.eye(m)[owner]  # [V, m]

    def units(c):  # s_k u_k (the direction of w_k) per neuron
        return onehot.T @ (c[:, None] * E)

    def obj(c):
        return float(np.sum(np.linalg.norm(units(c), axis=1)))

    def grad(c):
        U = units(c)
        n = np.maximum(np.linalg.norm(U, axis=1), 1e-300)
        return np.sum(E * (U / n[:, None])[owner], axis=1)

    lp = linprog(np.ones(len(E)), A_ub=-A, b_ub=-np.ones(len(y)), bounds=[(0, None)] * len(E), method="highs")
    if lp.status != 0:
        return None
    with np.errstate(all="ignore"):
        res = minimize(obj, lp.x + 1e-3, jac=grad, method="SLSQP", bounds=[(0, None)] * len(E),
                       constraints=[{"type": "ineq", "fun": lambda c: A @ c - 1.0, "jac": lambda c: A}],
                       options={"maxiter": 500, "ftol": 1e-15})
    c = res.x
    U = units(c)
    norms = np.linalg.norm(U, axis=1)
    interior = bool(np.all(norms > 1e-8 * norms.max()))
    for j, k in enumerate(owner):
        if faces[combo[k][0]].kind == "arc" and c[j] <= 1e-9 * norms[k]:
            interior = False
    signs = np.array([s for _, s in combo], dtype=np.float64)
    W = U / np.sqrt(np.maximum(norms, 1e-300))[:, None]
    a = signs * np.sqrt(norms)
    q = float(np.min(y * forward(W, a, X, alpha)))
    if not q > 0:
        return None
    return FacePoint(tuple(combo), W / math.sqrt(q), a / math.sqrt(q), interior)


@dataclass(frozen=True)
class ExactKKT:
    """The LP verification of Definition B.8 at theta~ (q_min = 1)."""

    residual: float
    active: tuple
    kinks: tuple  # (i, k) pairs on a hyperplane
    lam: np.ndarray
    kink_slopes: dict = field(default_factory=dict)  # (i, k) -> h in [alpha, 1]


def exact_kkt(W, a, X, y, alpha: float, *, active_tol: float = ACTIVE_TOL, kink_tol: float = KINK_TOL) -> ExactKKT:
    """min ||theta~ - sum_{i in A} (Clarke gradient of q_i)||_inf / ||theta~||_inf by LP over lambda >= 0 and the
    kink slopes (mu_ik = lambda_i h_ik, alpha lambda_i <= mu_ik <= lambda_i)."""
    u = unit_margin(W, a, X, y, alpha, kink_tol=kink_tol)
    if u is None:
        return ExactKKT(math.inf, (), (), np.zeros(0))
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    W, a, q, Z, kink, theta = u.W, u.a, u.q, u.Z, u.kink, u.theta
    m, d = W.shape
    active = [int(i) for i in np.flatnonzero(q <= 1 + active_tol)]
    kinks = [(i, int(k)) for i in active for k in np.flatnonzero(kink[i])]
    cols = []
    for i in active:  # lambda_i: the smooth part of the Clarke gradient of q_i (kink terms go to mu)
        gw = np.zeros((m, d))
        for k in range(m):
            if not kink[i, k]:
                gw[k] = y[i] * a[k] * (1.0 if Z[i, k] > 0 else alpha) * X[i]
        cols.append(np.concatenate([gw.ravel(), y[i] * leaky(Z[i], alpha) * ~kink[i]]))
    for i, k in kinks:  # mu_ik = lambda_i h_ik
        gw = np.zeros((m, d))
        gw[k] = y[i] * a[k] * X[i]
        cols.append(np.concatenate([gw.ravel(), np.zeros(m)]))
    M = np.array(cols).T  # [P, V]
    P, V, nl = len(theta), M.shape[1], len(active)
    # variables (lambda, mu, t): minimize t s.t. -t <= theta - M v <= t, alpha lambda_i <= mu_ik <= lambda_i
    cost = np.zeros(V + 1)
    cost[-1] = 1.0
    ub = [np.hstack([-M, -np.ones((P, 1))]), np.hstack([M, -np.ones((P, 1))])]
    rhs = [-theta, theta]
    for j, (i, k) in enumerate(kinks):
        li = active.index(i)
        lo, hi = np.zeros(V + 1), np.zeros(V + 1)
        lo[li], lo[nl + j] = alpha, -1.0  # alpha lambda_i - mu <= 0
        hi[li], hi[nl + j] = -1.0, 1.0  # mu - lambda_i <= 0
        ub += [lo[None], hi[None]]
        rhs += [np.zeros(1), np.zeros(1)]
    res = linprog(cost, A_ub=np.vstack(ub), b_ub=np.concatenate(rhs), bounds=[(0, None)] * (V + 1), method="highs")
    if res.status != 0:
        return ExactKKT(math.inf, tuple(active), tuple(kinks), np.zeros(nl))
    v = res.x[:V]
    lam = v[:nl]
    r = theta - M @ v
    slopes = {(i, k): float(v[nl + j] / lam[active.index(i)]) if lam[active.index(i)] > 0 else math.nan
              for j, (i, k) in enumerate(kinks)}
    return ExactKKT(float(np.max(np.abs(r)) / np.max(np.abs(theta))), tuple(active), tuple(kinks), lam, slopes)


@dataclass(frozen=True)
class CensusPoint:
    """A verified KKT-margin direction of the census: (W, a) at q_min = 1 and its checks."""

    combo: tuple
    W: np.ndarray
    a: np.ndarray
    margin: float
    exact: ExactKKT
    crossings: int
    boundary_dev: float
    nonlinearity: float

    @property
    def kkt(self) -> bool:
        return self.exact.residual <= EXACT_TOL

    @property
    def linear_boundary(self) -> bool:
        return self.crossings == 2 and self.boundary_dev <= LINEAR_DEV


@dataclass(frozen=True)
class Census:
    """The census of one dataset and width: face problems solved, minima inside their faces, verified points."""

    width: int
    problems: int
    interior: int
    points: tuple  # CensusPoint, distinct (margin, boundary) classes, best margin first
    best_nonlinear_residual: float

    def kkt(self, *, linear: bool | None = None) -> list[CensusPoint]:
        return [p for p in self.points if p.kkt and (linear is None or p.linear_boundary == linear)]


def census(X, y, alpha: float, width: int, *, signs=(1, -1)) -> Census:
    """Every choice of 1..width distinct (face, sign) pairs (sign in ``signs``): its face minimum, kept when inside its faces and
    verified by ``exact_kkt``; distinct points by (margin to 1e-9, boundary class, kinks)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    faces = arrangement(X)
    elements = [(f, s) for f in range(len(faces)) for s in signs]
    problems, inside, found, best_nl = 0, 0, {}, math.inf
    for m in range(1, width + 1):
        for combo in itertools.combinations(elements, m):
            problems += 1
            fp = solve_face(combo, faces, X, y, alpha)
            if fp is None or not fp.interior:
                continue
            inside += 1
            ex = exact_kkt(fp.W, fp.a, X, y, alpha)
            crossings, dev = boundary_crossings(fp.W, fp.a, alpha)
            _, nl = linearity(fp.W, fp.a, alpha)
            margin = float(np.min(y * forward(fp.W, fp.a, X, alpha)) / (np.sum(fp.W**2) + np.sum(fp.a**2)))
            pt = CensusPoint(combo, fp.W, fp.a, margin, ex, crossings, dev, nl)
            if not pt.linear_boundary:
                best_nl = min(best_nl, ex.residual)
            key = (round(margin, 9), pt.linear_boundary, len(ex.kinks), pt.kkt)
            if key not in found or ex.residual < found[key].exact.residual:
                found[key] = pt
    points = tuple(sorted(found.values(), key=lambda p: (-p.margin, p.exact.residual)))
    return Census(width, problems, inside, points, best_nl)
