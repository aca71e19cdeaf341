"""Observables and events of early neuron alignment (Min, Mallada & Vidal, ICLR 2024).

Context arrays ``x_pos`` = sum_{y_i > 0} x_i and ``x_neg`` = sum_{y_i < 0} x_i (§2.1) are computed
once per run. Per-neuron observables return [h] arrays (neurons of ``W`` [h, d] as rows); the
cone code is 1 = S_+, -1 = S_-, 0 = S_dead, 2 = none (``theory.alignment.cone_membership``, the
same rule in numpy). Events read finished trajectories: ``t1`` (alignment), ``norm_growth``
(onset of the second phase) and ``t2`` (the subnetworks start fitting, §2.6).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from twolayer.events import event, first_time
from twolayer.numerics import safe_norm
from twolayer.observe.registry import observable
from twolayer.problem import context_array
from twolayer.theory.alignment import CONE_DEAD, CONE_NEG, CONE_NONE, CONE_POS, class_sums


@context_array("x_pos")
def _x_pos(dataset, cfg):
    """x_+ = sum of the positive-label inputs."""
    return class_sums(dataset.X, dataset.y)[0]


@context_array("x_neg")
def _x_neg(dataset, cfg):
    """x_- = sum of the negative-label inputs."""
    return class_sums(dataset.X, dataset.y)[1]


def _cos_rows(W, x):
    """cos(w_j, x) for each row (0 where w_j = 0 or x = 0)."""
    denom = safe_norm(W) * safe_norm(x)
    return jnp.where(denom > 0, (W @ x) / jnp.where(denom > 0, denom, 1.0), 0.0)


@observable("cos_pos", per_neuron=True, needs=("x_pos",))
def cos_pos(params, ctx):
    """cos(w_j, x_+) for every neuron (Fig. 5 alignment; 0 when x_+ = 0)."""
    return _cos_rows(params["W"], ctx.arrays["x_pos"])


@observable("cos_neg", per_neuron=True, needs=("x_neg",))
def cos_neg(params, ctx):
    """cos(w_j, x_-) for every neuron (0 when x_- = 0)."""
    return _cos_rows(params["W"], ctx.arrays["x_neg"])


def _active(params, ctx):
    return (params["W"] @ ctx.X.T) > 0  # [h, n], sigma'(0) = 0


@observable("cone", per_neuron=True)
def cone(params, ctx):
    """Cone of w_j (§2.3): 1 S_+ (active on exactly the positives), -1 S_- (exactly the negatives),
    0 S_dead (<w_j, x_i> <= 0 for all i; takes precedence), 2 none."""
    A = _active(params, ctx)
    pos = ctx.y > 0
    dead = ~jnp.any(A, axis=1)
    in_pos = jnp.all(A == pos, axis=1)
    in_neg = jnp.all(A == ~pos, axis=1)
    return jnp.where(dead, CONE_DEAD, jnp.where(in_pos, CONE_POS, jnp.where(in_neg, CONE_NEG, CONE_NONE))).astype(jnp.int32)


@observable("activation_counts", per_neuron=True)
def activation_counts(params, ctx):
    """{active_pos, active_neg}: number of positive / negative x_i with <w_j, x_i> > 0 (n_a split by
    class; under Assumption 1 a V_+ neuron's active_pos never decreases and active_neg never
    increases, eq. 7-8)."""
    A = _active(params, ctx).astype(jnp.int32)
    pos = (ctx.y > 0).astype(jnp.int32)
    return {"activation_counts": A.sum(axis=1), "active_pos": A @ pos, "active_neg": A @ (1 - pos)}


@observable("activation_pattern", dims=("neuron", "sample"))
def activation_pattern(params, ctx):
    """1[<w_j, x_i> > 0] as int8 [h, n] (for small data: n values per neuron and observation)."""
    return _active(params, ctx).astype(jnp.int8)


@observable("signed_preact", nets=("two_layer",), dims=("neuron", "sample"))
def signed_preact(params, ctx):
    """y_i sign(v_j) <x_i, w_j> as [h, n]: non-decreasing under GD/SGD/GF for exp and logistic
    losses while sign(v_j) is fixed (spec P3, eq. 46)."""
    return jnp.sign(params["v"])[:, None] * (params["W"] @ ctx.X.T) * ctx.y[None, :]


@observable("signed_preact_rate", nets=("two_layer",))
def signed_preact_rate(params, ctx):
    """{signed_preact_rate: min_{i,j} y_i sign(v_j) <x_i, -grad_{w_j} L>, signed_preact_rate_scale: max_{i,j}
    |y_i sign(v_j) <x_i, w_j>|}: one GD step of size lr changes y_i sign(v_j) <x_i, w_j> by exactly lr times
    the rate (while sign(v_j) holds), and eq. 46 makes the rate >= 0 under Assumption 1 (exp and logistic
    losses), so observing the min at every step checks P3 at every step. 0 for dead neurons."""
    sv = jnp.sign(params["v"])[:, None]
    rate = sv * (_neg_grad_W(params, ctx) @ ctx.X.T) * ctx.y[None, :]
    value = sv * (params["W"] @ ctx.X.T) * ctx.y[None, :]
    return {"signed_preact_rate": jnp.min(rate), "signed_preact_rate_scale": jnp.max(jnp.abs(value))}


def _gram_top(W):
    """||W||_2^2 as the top eigenvalue of the smaller Gram matrix."""
    G = W @ W.T if W.shape[0] <= W.shape[1] else W.T @ W
    return jnp.linalg.eigvalsh(G)[-1]


@observable("spectral_norm_sq")
def spectral_norm_sq(params, ctx):
    """||W||_2^2, the squared largest singular value of the first layer (Fig. 5)."""
    return _gram_top(params["W"])


@observable("stable_rank")
def stable_rank(params, ctx):
    """||W||_F^2 / ||W||_2^2 (Theorem 1: limsup <= 2; 0 for W = 0)."""
    W = params["W"]
    top = _gram_top(W)
    return jnp.where(top > 0, jnp.sum(W * W) / jnp.where(top > 0, top, 1.0), 0.0)


def _neg_grad_W(params, ctx):
    return -jax.grad(ctx.objective)(params)["W"]


@observable("norm_change", nets=("two_layer",))
def norm_change(params, ctx):
    """sum_j d/dt ||w_j||^2 = sum_j 2 <-grad_{w_j} L, w_j> (App. A.5, Fig. 12; full batch)."""
    return 2.0 * jnp.sum(_neg_grad_W(params, ctx) * params["W"])


@observable("direction_change", nets=("two_layer",))
def direction_change(params, ctx):
    """sum_j ||P_{w_j}(-grad_{w_j} L)|| / ||w_j|| = sum_j ||d/dt (w_j/||w_j||)|| (App. A.5, Fig. 12;
    full batch; neurons with w_j = 0 contribute 0)."""
    W, G = params["W"], _neg_grad_W(params, ctx)
    norm = safe_norm(W)
    safe = jnp.where(norm > 0, norm, 1.0)[:, None]
    U = W / safe
    P = G - jnp.sum(G * U, axis=1, keepdims=True) * U
    return jnp.sum(jnp.where(norm > 0, safe_norm(P) / safe[:, 0], 0.0))


def _center(params, ctx, sign, x):
    mask = (jnp.sign(params["v"]) == sign).astype(params["W"].dtype)
    count = jnp.sum(mask)
    c = (mask @ params["W"]) / jnp.where(count > 0, count, 1.0)
    return c, _cos_rows(c[None, :], x)[0]


@observable("center_pos", nets=("two_layer",), needs=("x_pos",), dims=("input",))
def center_pos(params, ctx):
    """{center_pos: mean of w_j over V_+(t) = {v_j > 0} [d], center_cos_pos: cos(center, x_+)}."""
    c, cos = _center(params, ctx, 1.0, ctx.arrays["x_pos"])
    return {"center_pos": c, "center_cos_pos": cos}


@observable("center_neg", nets=("two_layer",), needs=("x_neg",), dims=("input",))
def center_neg(params, ctx):
    """{center_neg: mean of w_j over V_-(t) = {v_j < 0} [d], center_cos_neg: cos(center, x_-)}."""
    c, cos = _center(params, ctx, -1.0, ctx.arrays["x_neg"])
    return {"center_neg": c, "center_cos_neg": cos}


@observable("margin_min")
def margin_min(params, ctx):
    """min_i y_i f(x_i) (positive iff every point is classified correctly)."""
    return jnp.min(ctx.y * ctx.predict(params))


@observable("subnet_fit", nets=("two_layer",))
def subnet_fit(params, ctx):
    """{subnet_fit = max(fit_pos, fit_neg), fit_pos, fit_neg}: max_{i in I_+} |f_+(x_i)| with f_+ = sum over neurons now in S_+ of
    v_j sigma(<w_j, x>) (and the S_-/I_- mirror); t2^+ is when fit_pos first exceeds 1/4 (§2.6)."""
    A = _active(params, ctx)
    pos = ctx.y > 0
    dead = ~jnp.any(A, axis=1)
    in_pos = jnp.all(A == pos, axis=1) & ~dead
    in_neg = jnp.all(A == ~pos, axis=1) & ~dead
    contrib = params["v"][:, None] * jnp.maximum(params["W"] @ ctx.X.T, 0.0)  # [h, n]
    f_pos = jnp.sum(jnp.where(in_pos[:, None], contrib, 0.0), axis=0)
    f_neg = jnp.sum(jnp.where(in_neg[:, None], contrib, 0.0), axis=0)
    fit_pos = jnp.max(jnp.where(pos, jnp.abs(f_pos), 0.0))
    fit_neg = jnp.max(jnp.where(~pos, jnp.abs(f_neg), 0.0))
    return {"subnet_fit": jnp.maximum(fit_pos, fit_neg), "fit_pos": fit_pos, "fit_neg": fit_neg}


@observable("grad_imbalance", nets=("two_layer",), per_neuron=True)
def grad_imbalance(params, ctx):
    """g_{v_j}^2 - ||g_{w_j}||^2 with g = grad L: one GD step of size lr changes
    Delta_j = v_j^2 - ||w_j||^2 by exactly lr^2 times this (spec P1)."""
    g = jax.grad(ctx.objective)(params)
    return g["v"] ** 2 - jnp.sum(g["W"] ** 2, axis=1)


@observable("output_max")
def output_max(params, ctx):
    """max_i |f(x_i)| (Lemma 3: <= 2 eps sqrt(h) X_max W_max^2 on [0, T] under balanced init)."""
    return jnp.max(jnp.abs(ctx.predict(params)))


@observable("direction_error", nets=("two_layer",), per_neuron=True)
def direction_error(params, ctx):
    """Lemma 1 / eq. 4: || d/dt(w_j/||w_j||) - s (v_j/||w_j||) P_{w_j} x_a(w_j) || with the exact
    d/dt(w_j/||w_j||) = P_{w_j}(-grad_{w_j} L)/||w_j|| (autodiff), x_a(w) = sum_i sigma'(<x_i, w>) y_i x_i
    and s = 1 (sum) or 1/n (mean). <= 4 eps n sqrt(h) X_max^2 W_max^2 on [0, T] for losses with
    Lemma 2 (exp, logistic2, square; sum); plain logistic misses the factor 1/2. 0 where w_j = 0."""
    W, v = params["W"], params["v"]
    norm = safe_norm(W)
    safe = jnp.where(norm > 0, norm, 1.0)[:, None]
    U = W / safe
    Z = W @ ctx.X.T  # [h, n]
    dsig = jax.jvp(ctx.problem.activation.fn, (Z,), (jnp.ones_like(Z),))[1]
    s = 1.0 if ctx.problem.reduction == "sum" else 1.0 / ctx.X.shape[0]
    x_a = (dsig * ctx.y[None, :]) @ ctx.X  # [h, d]
    diff = _neg_grad_W(params, ctx) / safe - s * (v[:, None] / safe) * x_a
    P = diff - jnp.sum(diff * U, axis=1, keepdims=True) * U
    return jnp.where(norm > 0, safe_norm(P), 0.0)


# -- post-hoc analyses of a trajectory ----------------------------------------------------------

def activation_pattern_changes(pattern: np.ndarray) -> np.ndarray:
    """Number of activation-pattern entries that flipped per neuron between consecutive observation
    points, summed over time: [..., T, h, n] -> [..., h] (Fig. 4: at most n under Assumption 1)."""
    p = np.asarray(pattern).astype(np.int8)
    return np.sum(np.abs(np.diff(p, axis=-3)), axis=(-3, -1))


def min_max_over(values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, min and max over neurons of ``values`` [..., h] where ``mask`` [..., h] (NaN if empty)."""
    v = np.where(mask, values, np.nan)
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(v, axis=-1), np.nanmin(v, axis=-1), np.nanmax(v, axis=-1)


# -- events ---------------------------------------------------------------------------------------

def aligned(cone, v):
    """Theorem 1's aligned state per neuron: in S_dead, or in S+ with v_j > 0, or in S- with v_j < 0."""
    cone, v = np.asarray(cone), np.asarray(v)
    return (cone == CONE_DEAD) | ((cone == CONE_POS) & (v > 0)) | ((cone == CONE_NEG) & (v < 0))


@event("t1", needs=("cone", "v"), marks=("cone",))
def alignment_time(traj, cfg):
    """t1 (Theorem 1): first observed time at which every V+ neuron (v_j > 0) is in S+ u S_dead and every
    V- neuron in S- u S_dead."""
    return {"t1": first_time(traj["t"], np.all(aligned(traj["cone"], traj["v"]), axis=-1))}


@event("t1_cones", needs=("cone",))
def cone_time(traj, cfg):
    """t1_cones: first observed time at which every neuron is in one of S+, S-, S_dead (any sign of v)."""
    return {"t1_cones": first_time(traj["t"], np.all(traj["cone"] != CONE_NONE, axis=-1))}


@event("norm_growth", needs=("w_norm",))
def norm_growth(traj, cfg):
    """Onset of norm growth: first time ||W||_F^2 >= sqrt(||W(0)||_F^2), i.e. the squared norm has
    covered half of the way (on a log scale) from its small initial value to O(1). (||W||_2^2 is not
    used: during alignment it grows by the rank collapse alone, up to h-fold, without any norm
    growth; a fixed factor such as 10x is reached by the slow early drift of unbalanced inits.)"""
    s = np.sum(np.asarray(traj["w_norm"], dtype=np.float64) ** 2, axis=-1)
    return {"norm_growth": first_time(traj["t"], s >= np.sqrt(s[0])) if 0 < s[0] < 1 else None}


@event("t2", needs=("fit_pos", "fit_neg"))
def fit_time(traj, cfg):
    """t2^+ / t2^-: first time the S_+ (S_-) subnetwork's output exceeds 1/4 on its class (§2.6);
    t2 = max of the two over the classes whose subnetwork is ever non-zero."""
    t = traj["t"]
    out = {f"t2_{c}": first_time(t, traj[f"fit_{c}"] > 0.25) for c in ("pos", "neg")}
    present = [out[f"t2_{c}"] for c in ("pos", "neg") if np.any(traj[f"fit_{c}"] > 0)]
    out["t2"] = None if not present or any(p is None for p in present) else max(present)
    return out


@observable("neuron_weights", dims=("neuron", "input"))
def neuron_weights(params, ctx):
    """The first-layer weights W [h, d] themselves (for direction plots on low-dimensional data)."""
    return params["W"]
