"""Margin diagnostics of Lyu, Li, Wang & Arora (NeurIPS 2021) for two-layer homogeneous nets.

Observables (jit/vmap-traceable; spec_001 §2):
- ``log_loss``: log L by log-sum-exp (finite at log L = -1e4), with ``log_loss`` the log of the MEAN
  loss (the paper's L) and ``log_loss_sum`` the log of the sum, whatever ``loss.reduction`` is.
- ``normalized_margin``: gamma = q_min / ||theta||^2 (§2.1, homogeneity order 2).
- ``smoothed_margin``: gamma~ = -log(expm1(n L)) / ||theta||^2 (logistic; -log(n L) / ||theta||^2 for the
  exponential loss), Lyu & Li (2020); non-decreasing along gradient flow once n L < ln 2 [RECALLED].
- ``margin_ratio``: gamma / gamma_ref with the context array ``margin_reference`` (theory.margin:
  (1+alpha) gamma*/4 on symmetric data, gamma^+/2 otherwise [RECON]).
- ``kkt_residual``: Definition B.8 by NNLS (§2.3): theta~ = theta / q_min^{1/2}, support
  S = {q_i(theta~) <= 1 + tau}, tau = 1e-2, r = min_{lambda >= 0} ||theta~ - sum_S lambda_i grad q_i|| / ||theta~||;
  gradients by autodiff (any net), NNLS by projected coordinate descent on the Gram matrix
  (``KKT_SWEEPS`` sweeps); 1 when q_min <= 0. ``theory.margin.kkt_residual`` is the scipy reference.
- ``nonlinearity``: NL = ||f_even|| / ||f_odd|| on probe points (f_odd(x) = (f(x) - f(-x))/2), 720
  unit-circle points in d = 2, 4096 Gaussian points otherwise (§2.8).
- ``boundary_linearity``: the fraction of probe points where sign f(x) !=
  sign <v, x> with v the least-squares linear fit of the odd part f_odd (for Leaky-ReLU-type nets
  f_odd(x) = ((1+alpha)/2) <sum_k a_k w_k, x> exactly, and a linear boundary {<u, x> = 0} forces
  v || u, so the rate is 0 exactly for linear boundaries); in d = 2 also ``boundary_crossings`` (sign changes of f on a 7200-point circle) and
  ``boundary_dev`` = | angle between the two crossings - 180 | in degrees (180 when there are not
  exactly 2 crossings).
- ``cos_mu``, ``cos_wstar`` (per neuron): cos(w_k, sign(a_k) mu_bar), cos(w_k, sign(a_k) w*).
- ``group_mass``: A+ = sum_{a_k > 0} a_k^2 / ||theta||^2 and A- (both -> 1/4 on symmetric data), and A+ + A-.
- ``balancedness`` (per neuron): (||w_k||^2 - a_k^2) / (||w_k||^2 + a_k^2), conserved by gradient flow.

Events: ``phase1_end`` (first t with min_k cos_mu >= 1 - 1e-3, spec §2.7 T_I(delta)), ``fit_time``
(L < ln 2 / 2), ``late_phase`` (n L < ln 2, Thm 3.1). Times are gradient-flow times t (for
``flow_log`` runs mapped back from tau = ln(1 + t)).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.flatten_util import ravel_pytree

from twolayer.clocks import CLOCKS
from twolayer.events import event, first_time
from twolayer.logloss import margins
from twolayer.numerics import safe_norm, squared_norm
from twolayer.observe.registry import observable
from twolayer.problem import context_array

KKT_TAU = 1e-2
KKT_SWEEPS = 200
PROBE_SEED = 12345
PROBES_GAUSS = 4096
PROBES_CIRCLE_2D = 720
CIRCLE_GRID = 7200
PHASE1_DELTA = 1e-3


# -- helpers --------------------------------------------------------------------------------------

def _log_losses(params, ctx):
    q = margins(params, ctx)
    loss = ctx.problem.loss
    if loss.log_per_sample is not None:
        logl = loss.log_per_sample(q)
    else:
        logl = jnp.log(ctx.problem.loss.per_sample(ctx.y, ctx.predict(params)))
    total = jax.scipy.special.logsumexp(logl)
    return total - jnp.log(q.shape[0]), total


def _slope(cfg) -> float:
    """The Leaky ReLU slope alpha of the config's activation (relu 0, linear 1)."""
    from twolayer.activations import make_activation, names_with

    act = make_activation(cfg.model.activation)
    if act.leaky_alpha is None:
        allowed = names_with(lambda a: a.leaky_alpha is not None)
        raise ValueError(f"margin references need a Leaky-ReLU-type activation ({', '.join(allowed)}), "
                         f"not {act.name!r}")
    return act.leaky_alpha


# -- context arrays -------------------------------------------------------------------------------

@context_array("w_star")
def _w_star(dataset, cfg):
    """w*, the bias-free max-margin linear separator (theory.margin.max_margin_linear)."""
    from twolayer.theory.margin import max_margin_linear

    return max_margin_linear(dataset.X, dataset.y)[0]


@context_array("mu_bar")
def _mu_bar(dataset, cfg):
    """mu / ||mu|| with mu = (1/n) sum_i y_i x_i."""
    from twolayer.theory.margin import mu

    m = mu(dataset.X, dataset.y)
    return m / max(np.linalg.norm(m), 1e-300)


@context_array("margin_reference")
def _margin_reference(dataset, cfg):
    """The predicted limit of the normalized margin (theory.margin.margin_reference)."""
    from twolayer.theory.margin import margin_reference

    value, why = margin_reference(dataset.X, dataset.y, _slope(cfg))
    if not np.isfinite(value):
        raise ValueError(f"observe.metrics: margin_ratio has no reference margin on this data ({why}); "
                         f"use normalized_margin instead")
    return np.asarray(value)


@context_array("probe_points")
def _probe_points(dataset, cfg):
    """720 unit-circle points (d = 2) or 4096 N(0, I_d) points (fixed seed) for NL and boundaries."""
    d = dataset.d
    if d == 2:
        ang = np.linspace(0, 2 * np.pi, PROBES_CIRCLE_2D, endpoint=False)
        return np.column_stack([np.cos(ang), np.sin(ang)])
    return np.random.default_rng(PROBE_SEED).normal(size=(PROBES_GAUSS, d))


@context_array("boundary_circle")
def _boundary_circle(dataset, cfg):
    """A 7200-point unit circle in d = 2 (empty [0, d] otherwise) for the crossing test."""
    if dataset.d != 2:
        return np.zeros((0, dataset.d))
    ang = np.linspace(0, 2 * np.pi, CIRCLE_GRID, endpoint=False)
    return np.column_stack([np.cos(ang), np.sin(ang)])


# -- observables ----------------------------------------------------------------------------------

@observable("log_loss")
def log_loss(params, ctx):
    """log of the mean loss (``log_loss``) and of the summed loss (``log_loss_sum``), by log-sum-exp."""
    mean, total = _log_losses(params, ctx)
    return {"log_loss": mean, "log_loss_sum": total}


@observable("normalized_margin")
def normalized_margin(params, ctx):
    """gamma(theta) = min_i y_i f(x_i) / ||theta||^2 (spec §2.1)."""
    return jnp.min(margins(params, ctx)) / squared_norm(params)


@observable("smoothed_margin")
def smoothed_margin(params, ctx):
    """gamma~ = l^-1(n L) / ||theta||^2 by the loss's ``margin_of_log``: -log(expm1(n L)) (logistic), -log(n L)
    (exponential); NaN for a loss without one."""
    _, total = _log_losses(params, ctx)
    link = ctx.problem.loss.margin_of_log
    value = link(total) if link else jnp.nan * total
    return value / squared_norm(params)


@observable("margin_ratio", needs=("margin_reference",))
def margin_ratio(params, ctx):
    """gamma(theta) / gamma_ref (gamma_ref = (1+alpha) gamma*/4 on symmetric data, else gamma^+/2)."""
    return normalized_margin(params, ctx) / ctx.arrays["margin_reference"]


def _nnls_gram(G, b, mask, sweeps: int):
    """min_{lambda >= 0, lambda = 0 off mask} 1/2 l^T G l - b^T l by cyclic projected coordinate descent."""
    n = b.shape[0]
    diag = jnp.diag(G)
    safe = jnp.where(diag > 0, diag, 1.0)

    def coord(i, lam):
        g = G[i] @ lam - b[i]
        new = jnp.maximum(lam[i] - g / safe[i], 0.0)
        return lam.at[i].set(jnp.where(mask[i] & (diag[i] > 0), new, 0.0))

    return lax.fori_loop(0, sweeps, lambda _, lam: lax.fori_loop(0, n, coord, lam), jnp.zeros_like(b))


@observable("kkt_residual")
def kkt_residual(params, ctx):
    """KKT residual of Definition B.8 at theta / q_min^{1/2} (NNLS on the support q_i <= (1 + 1e-2) q_min)."""
    q = margins(params, ctx)
    qmin = jnp.min(q)
    ok = qmin > 0
    scale = jnp.where(ok, 1.0 / jnp.sqrt(jnp.where(ok, qmin, 1.0)), 1.0)
    scaled = jax.tree_util.tree_map(lambda x: x * scale, params)
    flat, unravel = ravel_pytree(scaled)
    A = jax.jacrev(lambda f: margins(unravel(f), ctx))(flat)  # [n, P]: rows grad q_i
    mask = q <= (1 + KKT_TAU) * qmin
    lam = _nnls_gram(A @ A.T, A @ flat, mask, KKT_SWEEPS)
    res = safe_norm(flat - A.T @ lam) / safe_norm(flat)
    return jnp.where(ok, res, 1.0)


@observable("nonlinearity", needs=("probe_points",))
def nonlinearity(params, ctx):
    """NL = ||f_even|| / ||f_odd|| on the probe points (0 for a linear f; (1-alpha)/(1+alpha) for one
    neuron; inf when the odd part vanishes to round-off, e.g. for an even activation)."""
    P = ctx.arrays["probe_points"]
    fp, fm = ctx.predict(params, P), ctx.predict(params, -P)
    odd, even = safe_norm((fp - fm) / 2), safe_norm((fp + fm) / 2)
    resolved = odd > 64 * jnp.finfo(P.dtype).eps * (odd + even)
    return jnp.where(resolved, even / jnp.where(resolved, odd, 1.0), jnp.inf)


@observable("boundary_linearity", needs=("probe_points", "boundary_circle"))
def boundary_linearity(params, ctx):
    """Linearity of the decision boundary {f = 0}: disagreement with the best line (any d) and, in
    d = 2, the number of sign changes on the circle and |angle between them - 180| in degrees."""
    P = ctx.arrays["probe_points"]
    fp = ctx.predict(params, P)
    odd = (fp - ctx.predict(params, -P)) / 2
    v = jnp.linalg.solve(P.T @ P, P.T @ odd)  # least-squares linear fit of f_odd
    s = jnp.sign(fp)
    out = {"boundary_linearity": jnp.mean((s != jnp.sign(P @ v)).astype(P.dtype))}
    C = ctx.arrays["boundary_circle"]
    if C.shape[0] and C.shape[1] == 2:
        sc = jnp.sign(ctx.predict(params, C))
        change = sc != jnp.roll(sc, -1)
        count = jnp.sum(change)
        idx = jnp.arange(C.shape[0])
        first = jnp.argmax(change)
        second = jnp.argmax(change & (idx > first))
        gap = (second - first) * (360.0 / C.shape[0])
        dev = jnp.where(count == 2, jnp.abs(gap - 180.0), 180.0)
        out.update(boundary_crossings=count.astype(P.dtype), boundary_dev=dev.astype(P.dtype))
    return out


def _cos_signed(params, direction):
    W, a = params["W"], params["v"]
    s = jnp.where(a >= 0, 1.0, -1.0).astype(W.dtype)
    return s * (W @ direction) / jnp.maximum(safe_norm(W), jnp.finfo(W.dtype).tiny)


@observable("cos_mu", nets=("two_layer",), per_neuron=True, needs=("mu_bar",))
def cos_mu(params, ctx):
    """cos(w_k, sign(a_k) mu_bar) per neuron (Phase-I alignment; 0 for a zero neuron)."""
    return _cos_signed(params, ctx.arrays["mu_bar"])


@observable("cos_wstar", nets=("two_layer",), per_neuron=True, needs=("w_star",))
def cos_wstar(params, ctx):
    """cos(w_k, sign(a_k) w*) per neuron (alignment with the max-margin direction)."""
    return _cos_signed(params, ctx.arrays["w_star"])


@observable("group_mass", nets=("two_layer",))
def group_mass(params, ctx):
    """A+ = sum_{a_k > 0} a_k^2 / ||theta||^2 (``group_mass_pos``), A- (``group_mass_neg``) and their sum
    (``group_mass``, the output layer's share of ||theta||^2: 1/2 for balanced nets)."""
    a = params["v"]
    total = squared_norm(params)
    pos, neg = jnp.sum(jnp.where(a > 0, a**2, 0.0)) / total, jnp.sum(jnp.where(a < 0, a**2, 0.0)) / total
    return {"group_mass": pos + neg, "group_mass_pos": pos, "group_mass_neg": neg}


@observable("balancedness", nets=("two_layer",), per_neuron=True)
def balancedness(params, ctx):
    """beta_k = (||w_k||^2 - a_k^2) / (||w_k||^2 + a_k^2) (0 for balanced neurons and for zero neurons)."""
    w2, a2 = jnp.sum(params["W"] ** 2, axis=1), params["v"] ** 2
    total = w2 + a2
    return jnp.where(total > 0, (w2 - a2) / jnp.where(total > 0, total, 1.0), 0.0)


# -- events ---------------------------------------------------------------------------------------

def flow_time(t, cfg) -> np.ndarray:
    """Gradient-flow time of a trajectory's time axis, from the method's clock (flow_log records
    tau = ln(1 + t))."""
    return CLOCKS.get(cfg.train.clock).flow_time(t)


@event("phase1_end", needs=("cos_mu",))
def phase1_end(traj, cfg):
    """End of Phase I: first t with min_k cos(w_k, sign(a_k) mu_bar) >= 1 - 1e-3 (spec §2.7 T_I)."""
    return {"phase1_end": first_time(flow_time(traj["t"], cfg), np.min(traj["cos_mu"], axis=-1) >= 1 - PHASE1_DELTA)}


@event("margin_phases", needs=("log_loss", "log_loss_sum"))
def margin_phases(traj, cfg):
    """``fit_time``: first t with L < ln 2 / 2 (mean loss); ``late_phase``: first t with n L < ln 2."""
    t = flow_time(traj["t"], cfg)
    return {"fit_time": first_time(t, traj["log_loss"] < math.log(math.log(2) / 2)),
            "late_phase": first_time(t, traj["log_loss_sum"] < math.log(math.log(2)))}


@observable("mu_projection", nets=("two_layer",), per_neuron=True, needs=("mu_bar",))
def mu_projection(params, ctx):
    """s_k = <mu_bar, w_k> (``mu_projection``) and ||P_perp w_k|| (``perp_mu``), P_perp = I - mu_bar mu_bar^T:
    the coordinates of the Phase-I closed form (spec §2.6)."""
    m = ctx.arrays["mu_bar"]
    s = params["W"] @ m
    return {"mu_projection": s, "perp_mu": safe_norm(params["W"] - s[:, None] * m[None, :])}
