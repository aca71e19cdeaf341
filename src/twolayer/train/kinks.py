"""Activation hyperplanes of a two-layer net with a piecewise-linear activation: the pure core of the
event-driven ("exact") gradient flow.

For sigma piecewise linear with one kink at 0 (relu, leaky_relu, abs, linear; slopes sigma'_+ for z > 0
and sigma'_- for z < 0), the flow of f(x) = sum_j v_j sigma(<w_j, x>) is smooth as long as no
pre-activation z_ij = <x_i, w_j> changes sign. With the activation pattern frozen as a slope matrix
D [n, h] (D_ij = sigma'_+ or sigma'_-), sigma(z_ij) = D_ij z_ij and the field is polynomial in (W, v):

    f_i = sum_j v_j D_ij z_ij,   g_i = -dL/df_i (times a clock factor),
    dw_j/dt = v_j sum_i g_i D_ij x_i,   dv_j/dt = sum_i g_i D_ij z_ij          (Min et al. §1.3)

so an adaptive Runge-Kutta solver keeps its order up to the next sign change, which is found by root
finding (``train/event_flow.py``). At a hyperplane H_ij = {<x_i, w_j> = 0} only dw_j/dt jumps, by
v_j g_i (sigma'_+ - sigma'_-) x_i; the two one-sided normal velocities zdot^+ (point i active) and
zdot^- (inactive) decide what the solution does (``classify``):

- the same strict sign: it **crosses** (under Assumption 1 always, eq. 46, so each H_ij is crossed at
  most once);
- both into the plane (zdot^+ <= 0 <= zdot^-): it **slides** along H_ij with the Filippov velocity, the
  convex combination lam* F^+ + (1 - lam*) F^- with zero normal component, lam* = zdot^-/(zdot^- - zdot^+)
  (equivalently: dw_j/dt projected onto H_ij). With lam* = 0 (the inactive side is tangent, e.g. a
  ReLU neuron on the boundary of S_dead) this is the regular Caratheodory solution of Min et al.
  Definition 1 (E.3 with sigma'(0) = 0): the neuron stays put;
- both away (zdot^- <= 0 <= zdot^+): solutions are **not unique** (App. E.4); the regular, stay-put
  solution is taken.

A fixed subgradient sigma'(0) = c corresponds to lam_c = (c - sigma'_-)/(sigma'_+ - sigma'_-). A solution
that stays on H_ij for positive time is a Caratheodory solution of that fixed-subgradient field iff
lam* = lam_c. When one one-sided field is tangent (lam* in {0, 1}, the structural case of a neuron
whose other side is dead) and lam_c differs, there is no Caratheodory solution at all (App. E.3 with
sigma'(0) = a > 0): ``classify`` reports it and the method fails with time, neuron and data point.
When lam* is strictly inside (0, 1), no fixed subgradient gives a solution (App. E.2, Fig. 18, Zeno);
the sliding solution, the limit of GD as lr -> 0, is followed and flagged non-Caratheodory.

Parallel data points (x_k = c x_i, e.g. symmetric data x, -x) share one hyperplane; each such group is
represented by its first point ("rep") and crosses as one (``hyperplane_groups``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from twolayer.activations import Kink, names_with
from twolayer.problem import context_array

PARALLEL_TOL = 1e-12  # |cos(x_i, x_k)| >= 1 - PARALLEL_TOL: one hyperplane

# event kinds (the event table's ``kind`` column)
CROSS, SLIDE, RELEASE, NONUNIQUE, FAIL = 1, 2, 3, 4, 5
KIND_NAMES = {CROSS: "cross", SLIDE: "slide", RELEASE: "release", NONUNIQUE: "nonunique", FAIL: "fail"}
# new modes: +1 active side, -1 inactive side, 0 on the hyperplane (Filippov slide, uses a slide slot)
MAX_SLIDES = 2  # simultaneous Filippov slides per neuron (sliding along <= 2 hyperplanes at once)
DENSE_GROUPS = 1024  # data up to this n classify with [n, n] Gram matrices; larger data in O(n h) memory
RELEASE_MARGIN = 1e-8  # least margin by which lam* must leave [0, 1] to end a slide (hysteresis, see ``released``)


def kink_of(activation) -> Kink:
    """The ``Kink`` of a piecewise-linear activation (its record's ``piecewise_linear``); ValueError for any other."""
    if activation.piecewise_linear is None:
        allowed = names_with(lambda a: a.piecewise_linear is not None)
        raise ValueError(f"the event-driven flow needs a piecewise-linear activation ({', '.join(allowed)}), "
                         f"not {activation.name!r}; use method flow for smooth activations")
    return activation.piecewise_linear


# -- hyperplane groups (numpy, once per run) ----------------------------------------------------------

PARALLEL_WINDOW = 4 * np.sqrt(2 * PARALLEL_TOL)  # |cos| >= 1 - tol moves |<u, r>| (unit u, r) by at most sqrt(2 tol)


def parallel_reps(X) -> tuple[np.ndarray, np.ndarray]:
    """``(rep, orient)`` of ``hyperplane_groups`` in O(n log n + n d) time and O(n d) memory: rep[k] is the first
    point i < k parallel to x_k (|cos| >= 1 - PARALLEL_TOL), k itself when there is none, -1 for x_k = 0. Only
    points whose projections |<x/|x|, r>| on a fixed unit vector r lie within PARALLEL_WINDOW of each other can
    be parallel; those are compared exactly, in the order of k, with the representatives found so far: the same
    groups as comparing every pair."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    norms = np.linalg.norm(X, axis=1)
    nonzero = norms > 0
    U = np.where(nonzero[:, None], X / np.where(nonzero, norms, 1.0)[:, None], 0.0)
    r = np.random.default_rng(0).standard_normal(X.shape[1])
    r /= np.linalg.norm(r)
    p = np.abs(U @ r)
    order = np.argsort(np.where(nonzero, p, np.inf), kind="stable")
    sorted_p = p[order]
    lo = np.searchsorted(sorted_p, sorted_p - PARALLEL_WINDOW, side="left")
    hi = np.searchsorted(sorted_p, sorted_p + PARALLEL_WINDOW, side="right")
    rep = np.where(nonzero, np.arange(n), -1).astype(np.int32)
    orient = nonzero.astype(np.float64)
    crowded = np.flatnonzero((hi - lo > 1) & nonzero[order])
    for at in crowded[np.argsort(order[crowded], kind="stable")]:  # in the order of k: reps of i < k are final
        k = order[at]
        near = order[lo[at]:hi[at]]
        near = near[(near < k) & (rep[near] == near)]
        if near.size == 0:
            continue
        cos = U[near] @ U[k]
        parallel = np.abs(cos) >= 1 - PARALLEL_TOL
        if parallel.any():
            first = np.argmin(np.where(parallel, near, n))
            rep[k], orient[k] = near[first], np.sign(cos[first])
    return rep, orient


def group_scale(X, rep, orient) -> np.ndarray:
    """scale[k] = orient_k |x_k| / |x_rep(k)| (0 for x_k = 0): x_k = scale_k x_rep(k)."""
    norms = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=1)
    safe = np.maximum(rep, 0)
    return np.where(rep >= 0, orient * norms / np.where(rep >= 0, norms[safe], 1.0), 0.0)


def hyperplane_groups(X) -> dict:
    """Group parallel data points: ``rep`` [n] (index of the group's first point; points with x = 0 get
    -1: their pre-activation is identically 0), ``orient`` [n] (+1 or -1: x_k = orient_k (|x_k|/|x_rep|) x_rep),
    ``scale`` [n] (orient_k |x_k| / |x_rep(k)|) and ``members`` [n, n] with members[i, k] = scale_k for
    rep(k) = i (else 0), so that sum_{k in group i} a_k x_k = (members @ a)_i x_i. ``members`` is built only for
    n <= DENSE_GROUPS (the Gram-matrix classification of small data, ``one_sided_velocities``); larger data get
    None and the O(n h) forms."""
    rep, orient = parallel_reps(X)
    scale = group_scale(X, rep, orient)
    n = len(rep)
    members = None
    if n <= DENSE_GROUPS:
        members = np.zeros((n, n))
        valid = rep >= 0
        members[rep[valid], np.flatnonzero(valid)] = scale[valid]
    return {"rep": rep, "orient": orient, "scale": scale, "members": members}


@context_array("hyperplane_rep")
def _hyperplane_rep(dataset, cfg):
    """Index of the first data point parallel to x_i (-1 for x_i = 0): one hyperplane per group."""
    return hyperplane_groups(dataset.X)["rep"]


@context_array("hyperplane_orient")
def _hyperplane_orient(dataset, cfg):
    """+1 / -1: the orientation of x_i relative to its group's first point."""
    return hyperplane_groups(dataset.X)["orient"]


@context_array("hyperplane_members")
def _hyperplane_members(dataset, cfg):
    """members[i, k] = orient_k |x_k| / |x_i| for the points k of group i (hyperplane_groups); an empty [0, n]
    array for n > DENSE_GROUPS (the O(n h) classification reads ``hyperplane_scale``)."""
    members = hyperplane_groups(dataset.X)["members"]
    return np.zeros((0, dataset.X.shape[0])) if members is None else members


@context_array("hyperplane_scale")
def _hyperplane_scale(dataset, cfg):
    """scale[k] = orient_k |x_k| / |x_rep(k)|: x_k = scale_k x_rep(k) (0 for x_k = 0)."""
    return hyperplane_groups(dataset.X)["scale"]


NEEDS = ("hyperplane_rep", "hyperplane_orient", "hyperplane_members", "hyperplane_scale")


# -- the frozen-pattern field ----------------------------------------------------------------------------

def point_modes(modes, rep, orient):
    """Modes of every point [n, h] from the group modes stored on the representative rows: a point
    oriented against its representative is active where the representative is inactive."""
    safe = jnp.maximum(rep, 0)
    return (orient[:, None] * modes[safe]).astype(modes.dtype) * (rep >= 0)[:, None]


def slopes(point_mode, kink: Kink, dtype):
    """D [n, h]: sigma'_+ on the active side, sigma'_- on the inactive side and on a hyperplane (mode 0;
    the slide projection removes whatever the on-plane slope contributes to dw_j/dt)."""
    return jnp.where(point_mode > 0, jnp.asarray(kink.plus, dtype), jnp.asarray(kink.minus, dtype))


def slide_basis(slots, X):
    """Orthonormal Q [h, 2, d] spanning the hyperplane normals x_s of each neuron's slide slots
    (slots [h, 2], -1 = empty; Gram-Schmidt of the two normals; zero rows for empty slots)."""
    u = X[jnp.maximum(slots, 0)]  # [h, 2, d]
    u = u / jnp.linalg.norm(u, axis=-1, keepdims=True)
    u = jnp.where((slots >= 0)[..., None], u, 0.0)
    a, b = u[:, 0], u[:, 1]
    b = b - jnp.sum(a * b, axis=-1, keepdims=True) * a
    nb = jnp.linalg.norm(b, axis=-1, keepdims=True)
    b = jnp.where(nb > 1e-12, b / jnp.where(nb > 0, nb, 1.0), 0.0)
    return jnp.stack([a, b], axis=1)


def project_out(A, Q):
    """A_j - sum_k <A_j, Q_jk> Q_jk: remove the components along each neuron's slide normals."""
    return A - jnp.einsum("hk,hkd->hd", jnp.einsum("hd,hkd->hk", A, Q), Q)


def frozen_field(W, v, X, D, Q, out_grad, t, *, first_only: bool, weight_decay):
    """(dW/dt, dv/dt, g) of the field with the pattern frozen as slopes D and slides projected by Q."""
    Z = X @ W.T
    g = out_grad(t, (D * Z) @ v)
    G = g[:, None] * D
    dW = project_out(v[:, None] * (G.T @ X) - weight_decay * W, Q)
    dv = jnp.zeros_like(v) if first_only else jnp.sum(G * Z, axis=0) - weight_decay * v
    return dW, dv, g


# -- one-sided normal velocities and the decision at a hyperplane ----------------------------------------

def one_sided_velocities(W, v, X, modes, slots, groups, kink: Kink, out_grad, t, *, weight_decay):
    """zdot^+ and zdot^- [n, h] for every (group representative i, neuron j): <x_i, dw_j/dt> with group i
    put on its active (+) or inactive (-) side, every other group of neuron j at its current mode and
    neuron j's other slides projected out. Rows of non-representative points are meaningless.

    Written as sums that leave group i out, plus group i's own term, so that a side whose field is
    structurally tangent (a ReLU neuron with no other active point: every term is 0) gives exactly 0."""
    rep, orient, members = groups[:3]
    n = X.shape[0]
    if members.shape[0] != n:  # large data: no [n, n] arrays
        return _one_sided_large(W, v, X, modes, slots, groups, kink, out_grad, t, weight_decay=weight_decay)
    D = slopes(point_modes(modes, rep, orient), kink, X.dtype)
    Z = X @ W.T
    g = out_grad(t, (D * Z) @ v)
    gD = g[:, None] * D  # [n, h]
    other = (rep[None, :] != jnp.arange(n)[:, None]).astype(X.dtype)  # [i, k]: point k not in group i
    Gx = X @ X.T
    # <x_i, A_j> where A_j = dw_j/dt without group i's own term and without projection
    ZA = v[None, :] * ((Gx * other) @ gD) - weight_decay * Z
    # group i's own term on side s: v_j (sum_{k in group i} g_k sigma'_s(k) orient-scaled) x_i
    d_plus = jnp.where(orient > 0, kink.plus, kink.minus)
    d_minus = jnp.where(orient > 0, kink.minus, kink.plus)
    beta_p = (members @ (g * d_plus))[:, None] * v[None, :]
    beta_m = (members @ (g * d_minus))[:, None] * v[None, :]
    # the other slides of neuron j (slots minus group i), orthonormalised, as Gram entries
    norms = jnp.linalg.norm(X, axis=1)
    safe_norm = jnp.where(norms > 0, norms, 1.0)
    s_a, s_b = jnp.maximum(slots[:, 0], 0), jnp.maximum(slots[:, 1], 0)  # [h]

    def along(s):
        """(<x_i, u_s>, <u_s, A_j without group i>) [n, h] for the slot normals u_s = x_s / |x_s|."""
        proj = Gx[:, s] / safe_norm[s][None, :]
        A_s = (v[None, :] * (other @ (Gx[s].T * gD)) - weight_decay * jnp.take_along_axis(Z, s[None, :], axis=0))
        return proj, A_s / safe_norm[s][None, :]

    return _with_slides(along, Gx[s_a, s_b], ZA, beta_p, beta_m, norms, safe_norm, slots)


def _with_slides(along, gram_ab, ZA, beta_p, beta_m, norms, safe_norm, slots):
    """zdot^+/- from the unprojected terms: neuron j's other slides (its slots minus group i) projected out."""
    n = norms.shape[0]
    idx = jnp.arange(n)[:, None]
    s_a, s_b = jnp.maximum(slots[:, 0], 0), jnp.maximum(slots[:, 1], 0)  # [h]
    ka = (slots[:, 0][None, :] >= 0) & (slots[:, 0][None, :] != idx)
    kb = (slots[:, 1][None, :] >= 0) & (slots[:, 1][None, :] != idx)
    a_i, A_a = along(s_a)
    b_i, A_b = along(s_b)
    c = (gram_ab / (safe_norm[s_a] * safe_norm[s_b]))[None, :]
    both = ka & kb
    s2 = jnp.where(both, jnp.maximum(1 - c * c, 1e-300), 1.0)
    corr_A = jnp.where(both, a_i * A_a + (b_i - c * a_i) * (A_b - c * A_a) / s2,
                       jnp.where(ka, a_i * A_a, 0.0) + jnp.where(kb, b_i * A_b, 0.0))
    corr_X = jnp.where(both, a_i * a_i + (b_i - c * a_i) ** 2 / s2,
                       jnp.where(ka, a_i * a_i, 0.0) + jnp.where(kb, b_i * b_i, 0.0))
    base = ZA - corr_A
    normal = jnp.maximum(norms[:, None] ** 2 - corr_X, 0.0)
    return base + beta_p * normal, base + beta_m * normal


def _one_sided_large(W, v, X, modes, slots, groups, kink: Kink, out_grad, t, *, weight_decay):
    """``one_sided_velocities`` in O(n h) memory (n > DENSE_GROUPS): sums over the points outside group i as the sum
    over all points minus group i's (a segment sum over the groups), never an [n, n] Gram matrix. Where every term
    outside group i is zero (a structurally tangent side) the result is exactly 0, as in the Gram form; elsewhere
    it equals the Gram form up to rounding (within the solver's tolerance, not bitwise)."""
    rep, orient, _, scale = groups
    n = X.shape[0]
    seg = jnp.maximum(rep, 0)
    D = slopes(point_modes(modes, rep, orient), kink, X.dtype)
    Z = X @ W.T
    g = out_grad(t, (D * Z) @ v)
    gD = g[:, None] * D  # [n, h]

    def group_sum(a):  # [n, h] -> [n, h]: row i holds sum over the points k of group i of a[k]
        return jax.ops.segment_sum(jnp.where((rep >= 0)[:, None], a, 0.0), seg, num_segments=n)

    nonzero = (gD != 0).astype(jnp.int32)
    outside = (jnp.sum(nonzero, axis=0)[None, :] - jax.ops.segment_sum(nonzero * (rep >= 0)[:, None], seg,
                                                                        num_segments=n)) > 0  # [i, j]
    norms = jnp.linalg.norm(X, axis=1)
    safe_norm = jnp.where(norms > 0, norms, 1.0)
    # sum_{k not in group i} <x_i, x_k> gD_kj = <x_i, sum_k gD_kj x_k> - |x_i|^2 sum_{k in group i} scale_k gD_kj
    total = X @ (gD.T @ X).T
    own = norms[:, None] ** 2 * group_sum(scale[:, None] * gD)
    ZA = v[None, :] * jnp.where(outside, total - own, 0.0) - weight_decay * Z
    d_plus = jnp.where(orient > 0, kink.plus, kink.minus)
    d_minus = jnp.where(orient > 0, kink.minus, kink.plus)

    def members_of(a):  # [n] -> [n]: (members @ a)_i = sum_{k in group i} scale_k a_k
        return jax.ops.segment_sum(jnp.where(rep >= 0, scale * a, 0.0), seg, num_segments=n)

    beta_p = members_of(g * d_plus)[:, None] * v[None, :]
    beta_m = members_of(g * d_minus)[:, None] * v[None, :]

    def along(s):
        Xs = X[s]  # [h, d]
        gram = X @ Xs.T  # [n, h]: <x_k, x_{s_j}>
        proj = gram / safe_norm[s][None, :]
        Y = gram * gD  # [k, j]
        A_s = (v[None, :] * jnp.where(outside, jnp.sum(Y, axis=0)[None, :] - group_sum(Y), 0.0)
               - weight_decay * jnp.take_along_axis(Z, s[None, :], axis=0))
        return proj, A_s / safe_norm[s][None, :]

    s_a, s_b = jnp.maximum(slots[:, 0], 0), jnp.maximum(slots[:, 1], 0)
    return _with_slides(along, jnp.sum(X[s_a] * X[s_b], axis=-1), ZA, beta_p, beta_m, norms, safe_norm, slots)


def released(zp, zm, margin=RELEASE_MARGIN):
    """A Filippov slide ends: both one-sided fields point the same way, by a margin (lam* < -margin or
    lam* > 1 + margin). lam* is a near-cancellation where a slide is about to end, resolved only to about the
    solver's tolerance; the margin (``event_flow`` uses max(RELEASE_MARGIN, 100 rtol)) keeps that noise from
    making the slide end and restart every step (on the hinted data of lyu2021 at rtol 1e-6, 10 rtol chattered)."""
    return (jnp.sign(zp) == jnp.sign(zm)) & (jnp.minimum(jnp.abs(zp), jnp.abs(zm)) > margin * jnp.abs(zp - zm))


def classify(zp, zm, kink: Kink):
    """The decision at a hyperplane from the one-sided normal velocities (arrays of any shape).

    Returns ``(mode, kind, lam)``: mode +1 / -1 (leave into / stay on that side, the side's field being
    tangent when the neuron stays on the plane) or 0 (Filippov slide on the plane); kind CROSS, SLIDE,
    NONUNIQUE, FAIL (no Caratheodory solution for sigma'(0)) or 0 (both fields tangent: nothing happens);
    lam = zdot^-/(zdot^- - zdot^+), the Filippov weight of the + side (NaN when it is undefined)."""
    sp, sm = jnp.sign(zp), jnp.sign(zm)
    cross = (sp == sm) & (sp != 0)
    tangent = (sp == 0) & (sm == 0)
    attract = (sp <= 0) & (sm >= 0) & ~tangent
    repel = (sp >= 0) & (sm <= 0) & ~tangent
    denom = zm - zp
    lam = jnp.where(attract | repel, zm / jnp.where(denom != 0, denom, 1.0), jnp.nan)
    conv = kink.convention
    edge = (sp == 0) | (sm == 0)  # lam* in {0, 1}: one side's field is tangent to the plane
    edge_side = jnp.where(sm == 0, -1, 1)  # the tangent side (lam* = 0: the - side)
    matches = jnp.abs(lam - conv) <= 1e-12
    mode = jnp.where(cross, sp, 0)
    kind = jnp.where(cross, CROSS, 0)
    # attracting: slide; on an edge the tangent side's own field is the slide (no slot); fail if sigma'(0) differs
    mode = jnp.where(attract & edge, edge_side, mode)
    kind = jnp.where(attract, jnp.where(edge & ~matches, FAIL, SLIDE), kind)
    # repelling: the regular stay-put solution; on an edge with another sigma'(0) the only Caratheodory
    # solution leaves into the non-tangent side
    leaves = repel & edge & ~matches
    mode = jnp.where(repel & edge, jnp.where(leaves, -edge_side, edge_side), mode)
    kind = jnp.where(repel, jnp.where(leaves, CROSS, NONUNIQUE), kind)
    mode = jnp.where(tangent, 0, mode)  # caller keeps the current side
    return mode.astype(jnp.int8), kind.astype(jnp.int32), lam
