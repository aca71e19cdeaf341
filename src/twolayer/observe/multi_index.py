"""Observables and events of the multi-index paper (mean-field net, Gaussian multi-index target).

Exact population quantities (``twolayer.population``), per-order losses by the Gram identity, the
paper's mass accounting (Fig. 1) and the symmetrized bias/variance split (eq. 5). Notation: a_i =
||w_i||^2, u_i = w_i/||w_i||, z_i = B u_i the coordinates in the target basis B (first r rows = w*_j),
alpha = (1/m) sum a_i. Masses are normalised by 1/m so the parts add up to alpha (spec §7.2).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from twolayer.events import event, first_time
from twolayer.numerics import unit_rows
from twolayer.observe.registry import observable
from twolayer.problem import context_array
from twolayer.population import (
    energies, kernel_fn, neuron_weights, order_losses, population_loss, target_of,
)
from twolayer.theory.stages import stage_state
from twolayer.theory.symmetry import K_SYM, sample_group, symmetrized_decomposition

ORDER_K = 8  # loss_order / energies report the Hermite orders k = 0..ORDER_K
TARGET = ("target_dirs", "target_coefs")
MF = ("mean_field",)
GROUP_SAMPLES = 16  # Monte Carlo group elements for the symmetrized residual (fixed per run)


def _coeffs(ctx, K: int):
    return ctx.problem.activation.hermite_coefficients(K)


@observable("loss_population", needs=TARGET)
def loss_population(params, ctx):
    """Exact population loss L = 1/2 E_x (f - f*)^2 (closed-form dual kernel or K = 40 Hermite series)."""
    c, U = neuron_weights(params, ctx.problem.net, ctx.problem.activation)
    cs, Ws = target_of(ctx)
    return population_loss(c, U, cs, Ws, kernel_fn(ctx.problem.activation))


@observable("loss_train")
def loss_train(params, ctx):
    """Training loss 1/(2n) sum_k (f(x_k) - y_k)^2 on the fixed training set."""
    return 0.5 * jnp.mean((ctx.predict(params) - ctx.y) ** 2)


@observable("loss_test", needs=("X_test", "y_test"))
def loss_test(params, ctx):
    """Held-out Monte Carlo estimate 1/(2 n_test) sum (f(x) - f*(x))^2 of the population loss."""
    X = ctx.arrays["X_test"]
    return 0.5 * jnp.mean((ctx.predict(params, X) - ctx.arrays["y_test"]) ** 2)


def _orders(params, ctx):
    c, U = neuron_weights(params, ctx.problem.net, ctx.problem.activation)
    cs, Ws = target_of(ctx)
    return order_losses(c, U, cs, Ws, _coeffs(ctx, ORDER_K))


@observable("loss_order", nets=MF, needs=TARGET, dims=("order",))
def loss_order(params, ctx):
    """L_k = 1/2 sigma_hat_k^2 ||T_k - T*_k||_F^2 for k = 0..8 (paper eq. 4, Gram identity, exact) [9]."""
    return _orders(params, ctx)


@observable("loss_order_4plus", nets=MF, needs=TARGET)
def loss_order_4plus(params, ctx):
    """L_{>=4} = L - L_0 - L_1 - L_2 - L_3 (exact: the total is closed form; L_1 = L_3 = 0 for even sigma)."""
    return loss_population(params, ctx) - jnp.sum(_orders(params, ctx)[:4])


@observable("energies", nets=MF, needs=TARGET, dims=("order",))
def energies_obs(params, ctx):
    """Target energies E_k = 1/2 ||P_k f*||^2 (k = 0..8) and E_{>=4} = ||f*||^2/2 - E_0 - .. - E_3 (Thm 3.1)."""
    cs, Ws = target_of(ctx)
    E = energies(cs, Ws, _coeffs(ctx, ORDER_K))
    total = 0.5 * cs @ kernel_fn(ctx.problem.activation)(Ws @ Ws.T) @ cs
    zero = 0.0 * jnp.sum(params["W"][:1, :1])  # keeps the seed axis under vmap
    return {"energies": E + zero, "energy_4plus": total - jnp.sum(E[:4]) + zero}


class Geometry(NamedTuple):
    """What the mass observables share: squared norms ``a``, overlaps ``P`` = <u_i, w*_j>, total mass
    ``alpha`` and the coordinates ``S`` of the unit neurons in the target subspace.
    """

    a: jnp.ndarray  # [m] masses ||w_i||^2
    P: jnp.ndarray  # [m, r] <u_i, w*_j>
    alpha: jnp.ndarray
    S: jnp.ndarray | None = None  # [m, r] coordinates of u_i in an orthonormal basis of span(w*_j)


def _geometry(params, ctx) -> Geometry:
    W = params["W"]
    a = jnp.sum(W * W, axis=1)
    U, _ = unit_rows(W)
    dirs = ctx.arrays["target_dirs"]
    basis = ctx.arrays.get("target_basis")  # its first r rows span the target (equal to w*_j when orthonormal)
    return Geometry(a, U @ dirs.T, jnp.mean(a), None if basis is None else U @ basis[: dirs.shape[0]].T)


def _span_fraction(g):
    """||P u_i||^2 per neuron, P the projection on span(w*_j) (also for non-orthogonal w*_j)."""
    return jnp.sum(g.S**2, axis=1)


def _sub_mass(g):
    return jnp.mean(g.a * _span_fraction(g))


def _aligned(g, ctx):
    return jnp.max(g.P**2, axis=1) >= ctx.arrays["align_threshold"]


def _d_r(ctx):
    return ctx.arrays["target_basis"].shape[0], ctx.arrays["target_dirs"].shape[0]


GEOMETRY = {
    "mass_total": (lambda g, ctx: g.alpha, "alpha = (1/m) sum_i ||w_i||^2 (total mass, T_0)"),
    "mass_subspace": (lambda g, ctx: _sub_mass(g), "(1/m) sum_i ||P w_i||^2, P the projection on span(w*_j)"),
    "mass_irrelevant": (lambda g, ctx: g.alpha - _sub_mass(g), "(1/m) sum_i ||(I - P) w_i||^2"),
    "beta1": (lambda g, ctx: _sub_mass(g) / _d_r(ctx)[1], "beta_1 = subspace mass / r (Stage 1.2)"),
    "beta2": (lambda g, ctx: (g.alpha - _sub_mass(g)) / max(_d_r(ctx)[0] - _d_r(ctx)[1], 1),
              "beta_2 = irrelevant mass / (d - r) (Stage 1.2)"),
    "subspace_fraction_min": (lambda g, ctx: jnp.min(jnp.where(g.a > 0, _span_fraction(g), 1.0)),
                              "min_i ||P w_i||^2 / ||w_i||^2 (every neuron mostly in the target subspace)"),
    "mass_aligned": (lambda g, ctx: jnp.mean(jnp.where(_aligned(g, ctx), g.a, 0.0)),
                     "(1/m) sum over aligned i (max_j <u_i, w*_j>^2 >= data.align_threshold) of ||w_i||^2"),
    "mass_dense": (lambda g, ctx: g.alpha - jnp.mean(jnp.where(_aligned(g, ctx), g.a, 0.0)),
                   "alpha - mass_aligned (mass on dense, i.e. non-aligned, neurons)"),
    "aligned_count": (lambda g, ctx: jnp.sum(_aligned(g, ctx)).astype(g.a.dtype),
                      "number of aligned neurons |A(t)|"),
    "directions_found": (lambda g, ctx: jnp.sum(jnp.max(g.P**2, axis=0) >= ctx.arrays["found_threshold"])
                         .astype(g.a.dtype),
                         "number of target directions j with some <u_i, w*_j>^2 >= data.found_threshold"),
    "direction_alignment_min": (lambda g, ctx: jnp.min(jnp.max(g.P**2, axis=0)),
                                "min_j max_i <u_i, w*_j>^2 (worst-covered target direction)"),
}
GEOMETRY_NEEDS = {"mass_aligned": ("align_threshold",), "mass_dense": ("align_threshold",),
                  "aligned_count": ("align_threshold",), "directions_found": ("found_threshold",),
                  "mass_subspace": ("target_basis",), "mass_irrelevant": ("target_basis",),
                  "subspace_fraction_min": ("target_basis",), "beta1": ("target_basis",), "beta2": ("target_basis",)}


def _register_geometry(name, fn, doc):
    def obs(params, ctx):
        return fn(_geometry(params, ctx), ctx)

    obs.__doc__ = doc
    observable(name, nets=MF, needs=("target_dirs", *GEOMETRY_NEEDS.get(name, ())))(obs)


for _name, (_fn, _doc) in GEOMETRY.items():
    _register_geometry(_name, _fn, _doc)


@observable("alignment", nets=MF, per_neuron=True, needs=("target_dirs",))
def alignment(params, ctx):
    """max_j <u_i, w*_j>^2 per neuron (post-hoc thresholds: aligned mass at any level)."""
    return jnp.max(_geometry(params, ctx).P ** 2, axis=1)


@observable("subspace_fraction", nets=MF, per_neuron=True, needs=("target_dirs", "target_basis"))
def subspace_fraction(params, ctx):
    """||P w_i||^2 / ||w_i||^2 per neuron."""
    return _span_fraction(_geometry(params, ctx))


@observable("subspace_alignment_best", nets=MF, needs=("target_dirs", "target_basis"), dims=("direction",))
def subspace_alignment_best(params, ctx):
    """max_i (u_{i,<=r})_j^2 = max_i <u_i, e_j>^2 / ||P u_i||^2 per target direction j (e_j the target basis):
    Stage 2.1's in-subspace alignment p of each direction's best neuron (Lemma D.14) [r]."""
    g = _geometry(params, ctx)
    return jnp.max(g.S**2 / jnp.maximum(_span_fraction(g), 1e-300)[:, None], axis=0)


SYM_NEEDS = ("target_dirs", "target_coefs", "target_basis", "group_signs", "group_perms")


def _symmetrized(params, ctx):
    act = ctx.problem.activation
    c, U = neuron_weights(params, ctx.problem.net, act)
    Z = U @ ctx.arrays["target_basis"].T
    r = ctx.arrays["target_dirs"].shape[0]
    return symmetrized_decomposition(c, Z, r, _coeffs(ctx, K_SYM), kernel_fn(act),
                                     ctx.arrays["group_signs"], ctx.arrays["group_perms"])


@observable("symmetrized_variance", nets=MF, needs=SYM_NEEDS,
            dims={"symmetrized_variance_order": ("order",)})
def symmetrized_variance(params, ctx):
    """1/2 ||f - f~||^2 (eq. 5 'variance'; f~ = E_rho f(rho x)): exact for orders <= K_SYM = 8 by the group
    moments (spec §3.4a), the residual kernel Monte Carlo over 16 fixed group elements
    (``symmetrized_variance_se``: its standard error; ``symmetrized_variance_order`` [9]: the exact parts
    k = 0..8)."""
    out = _symmetrized(params, ctx)
    return {"symmetrized_variance": out["variance"], "symmetrized_variance_se": out["variance_se"],
            "symmetrized_variance_order": out["variance_order"]}


@observable("symmetrized_bias", nets=MF, needs=SYM_NEEDS)
def symmetrized_bias(params, ctx):
    """L(f~) = 1/2 ||f~ - f*||^2 = L(f) - variance (eq. 5, Lemma A.1)."""
    return loss_population(params, ctx) - _symmetrized(params, ctx)["variance"]


def _group(dataset, cfg):
    d, r = dataset.d, getattr(cfg.data, "r", None)
    if r is None:
        raise ValueError("the symmetrized observables need data.kind multi_index")
    return sample_group(np.random.default_rng([getattr(cfg.data, "seed", 0), 3]), GROUP_SAMPLES, d, r)


@context_array("group_signs")
def _group_signs(dataset, cfg):
    """Rademacher signs [S, d] of S fixed uniform group elements."""
    return _group(dataset, cfg)[0]


@context_array("group_perms")
def _group_perms(dataset, cfg):
    """Coordinate permutations [S, d] (irrelevant block shuffled) of the same group elements."""
    return _group(dataset, cfg)[1]


# -- events (spec §4.7) ------------------------------------------------------------------------------

ETA_LOSS = 0.1  # a component is learned when L_k <= ETA_LOSS * E_k


def hermite_transition_times(t, L, E, L4, E4, eta: float = ETA_LOSS):
    """tau_0 = inf{t: L_0 <= eta E_0}, tau_2 = inf{t >= tau_0: L_2 <= eta E_2},
    tau_4 = inf{t >= tau_2: L_{>=4} <= eta E_{>=4}} (per component, spec §4.7)."""
    def after(mask, start):
        return mask & (t >= (start if start is not None else np.inf))

    tau0 = first_time(t, L[:, 0] <= eta * E[:, 0])
    tau2 = first_time(t, after(L[:, 2] <= eta * E[:, 2], tau0))
    tau4 = first_time(t, after(L4 <= eta * E4, tau2))
    return {"tau_order0": tau0, "tau_order2": tau2, "tau_order4plus": tau4}


def transition_times(traj: dict, eta: float = ETA_LOSS) -> list[dict]:
    """Per seed of a batched trajectory ([S, T, ...] entries), ``hermite_transition_times``: tau_0, tau_2,
    tau_4 (None when a component is never learned)."""
    L, E, L4, E4 = traj["loss_order"], traj["energies"], traj["loss_order_4plus"], traj["energy_4plus"]
    return [hermite_transition_times(traj["t"], L[s], E[s], L4[s], E4[s], eta) for s in range(L.shape[0])]


def first_times(t, mask) -> list[float]:
    """Per seed (rows of ``mask`` [S, T]) the first time at which ``mask`` holds (NaN if never)."""
    out = [first_time(t, row) for row in np.asarray(mask)]
    return [float("nan") if v is None else v for v in out]


def cover_times(traj: dict, threshold: float) -> list[float]:
    """Per seed, the first time every target direction has a neuron with <u_i, w*_j>^2 >= threshold:
    min_j max_i <u_i, w*_j>^2 >= threshold (``direction_alignment_min``; NaN if never)."""
    return first_times(traj["t"], np.asarray(traj["direction_alignment_min"]) >= threshold)


def coupling_errors(W_actual, W_symmetrized) -> tuple[np.ndarray, np.ndarray]:
    """``(Delta, Delta_max)`` [..., T] between stored weights [..., T, m, d] of the actual particles v_i and
    their symmetrized representatives v~_i from the same initialization (Sec. 6, spec §3.7):
    Delta^2 = (1/m) sum_i ||v_i - v~_i||^2, Delta_max = max_i ||v_i - v~_i|| / ||v~_i||."""
    diff = np.linalg.norm(np.asarray(W_actual) - np.asarray(W_symmetrized), axis=-1)
    delta = np.sqrt(np.mean(diff**2, axis=-1))
    dmax = np.max(diff / np.maximum(np.linalg.norm(W_symmetrized, axis=-1), 1e-300), axis=-1)
    return delta, dmax


@event("hermite_transitions", needs=("loss_order", "energies", "loss_order_4plus", "energy_4plus"))
def _hermite_transitions(traj, cfg):
    return hermite_transition_times(traj["t"], traj["loss_order"], traj["energies"], traj["loss_order_4plus"],
                                    traj["energy_4plus"])


@event("irrelevant_mass_collapse", needs=("mass_irrelevant", "mass_total"))
def _irrelevant_collapse(traj, cfg):
    """First time the irrelevant mass is below 10% of the total mass."""
    return {"t_irrelevant_below_10pct": first_time(traj["t"], traj["mass_irrelevant"] <= 0.1 * traj["mass_total"])}


@event("all_directions_found", needs=("directions_found",))
def _all_found(traj, cfg):
    """First time every target direction has a neuron with <u_i, w*_j>^2 >= data.found_threshold."""
    return {"t_all_directions_found": first_time(traj["t"], traj["directions_found"] >= cfg.data.r)}




def _direction_masses(params, ctx):
    return stage_state(params["W"], ctx.arrays["target_dirs"], 0.0, ctx.problem.activation)[3:]


@observable("a_hat", nets=MF, needs=("target_dirs",), dims=("direction",))
def a_hat(params, ctx):
    """Aligned mass per target direction [r] (Stage 2.2, spec §4.5): (1/m) sum_{i in G_j} ||w_i||^2 with
    G_j = {i: <u_i, w*_j>^2 >= 0.9} taken at the current time (eps_dir = 0.1)."""
    return _direction_masses(params, ctx)[0]


@observable("b_hat", nets=MF, needs=("target_dirs",), dims=("direction",))
def b_hat(params, ctx):
    """Dense mass along each target direction [r]: (1/m) sum_{i in no G} ||w_i||^2 <u_i, w*_j>^2 (spec §7.8,
    mass normalisation)."""
    return _direction_masses(params, ctx)[1]
