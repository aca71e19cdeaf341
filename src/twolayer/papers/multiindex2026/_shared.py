"""What the multiindex2026 experiments share: sizes, config builders, run accessors, and the ideal
synthetic Figure-1 trajectory their synthetic falsifiers start from.

Setting (paper eqs. 1-3): mean-field net f(x) = (1/m) sum_i ||w_i||^2 sigma(w_i.x/||w_i||), sigma = |x|,
Gaussian inputs, target f*(x) = sum_{j<=r} sigma(x_j), square loss, standard init w_i ~ N(0, I/d), GD on
eq. (3): w <- w - lr (lambda w + m grad L). ``quick`` uses the exact population objective at d = 50,
r = 10, m = 160 (lr 0.02, keeping lr 4 sigma_hat_0^2 r = 0.5 as at the paper's lr 0.01, r = 20);
``paper`` uses the paper's d = 100, r = 20, m = 250.
"""

from __future__ import annotations

import copy
import functools

import numpy as np

from twolayer.activations import make_activation
from twolayer.claims.falsifiers import SyntheticRun
from twolayer.claims.registry import register_paper
from twolayer.theory import multi_index as th

PAPER = "multiindex2026"
register_paper(PAPER, "Learning Orthogonal Multi-Index Models Beyond Small Initialization: Incremental "
                      "Learning, Competitive Dynamics and Symmetry",
               "Mean-field two-layer networks on Gaussian orthogonal multi-index targets (spec 002).")

# Figure-1 sizes: time is the lambda = 0 horizon, time_wd the weight-decay run's
SCALE = {
    "quick": dict(d=50, r=10, m=160, seeds=3, lr=0.02, time=100.0, time_wd=100.0, points=150),
    "paper": dict(d=100, r=20, m=250, seeds=3, lr=0.01, time=100.0, time_wd=150.0, points=400),
}
LAMBDA0 = 0.05  # weight decay lambda = r lambda_0 of the paper's schedule (spec §1.5 default)
ETA = 0.1  # eta of the transition times tau_k (first L_k <= eta E_k; spec §4.7) and of the Theorem 3.1 table
FINE_LR = 0.002  # the spec's step for the Stage 1 overlays (P23: lr <= 0.002 keeps the Euler error below 3 %)
FIG1_METRICS = [
    "loss_population", "loss_order", "loss_order_4plus", "energies", "mass_total", "mass_subspace",
    "mass_irrelevant", "beta1", "beta2", "mass_aligned", "mass_dense", "directions_found", "direction_alignment_min",
    "subspace_fraction_min", "symmetrized_variance", "a_hat", "b_hat",
]
ABS = make_activation("abs")


@functools.cache
def hermite_sums(activation: str = "abs") -> th.HermiteSums:
    """The Hermite sums sigma_hat_0^2, sigma_hat_2^2, sigma_hat_{>=4}^2, ... of an activation (cached)."""
    return th.HermiteSums.of(make_activation(activation))


def edge_lr(r: int) -> float:
    """The GD stability edge 1/(2 sigma_hat_0^2 r) of the collective mass mode (rate 4 sigma_hat_0^2 alpha_eq,
    spec §1.5): GD settles below it and oscillates above it."""
    return 1.0 / (2.0 * hermite_sums("abs").s0 * r)


def base_config(s: dict, *, activation: str = "abs", objective: str = "population", d: int | None = None,
                r: int | None = None, m: int | None = None, n: int = 200, n_test: int = 200,
                seeds: int | None = None, points: int | None = None, metrics=None) -> dict:
    """A run config of the paper's setting with the sizes of ``s`` (a ``SCALE`` entry), overridable."""
    d, r, m = d or s["d"], r or s["r"], m or s["m"]
    return {
        "seeds": seeds or s["seeds"],
        "data": {"kind": "multi_index", "d": d, "r": r, "n": n, "n_test": n_test, "activation": activation},
        "model": {"kind": "mean_field", "activation": activation, "width": m},
        "init": {"kind": "standard"},
        "loss": {"kind": "square", "reduction": "mean"},
        "objective": objective,
        "observe": {"schedule": "log", "points": points or s["points"], "metrics": list(metrics or FIG1_METRICS)},
        "precision": "float64",
    }


def gd(lr: float, time: float, weight_decay: float = 0.0) -> dict:
    """``train`` for GD with step ``lr`` to time ``time`` (steps = time / lr)."""
    return {"method": "gd", "lr": lr, "steps": int(round(time / lr)), "weight_decay": weight_decay}


def r_of(run) -> int:
    return int(run.config["data"]["r"])


def d_of(run) -> int:
    return int(run.config["data"]["d"])


def lam_of(run) -> float:
    return float(run.config["train"]["weight_decay"])


def lam_paper(run) -> float:
    """The paper's weight decay lambda = r lambda_0 at the run's r (the statement's constant, not the run's)."""
    return r_of(run) * LAMBDA0


def small(cfg: dict, *, seeds: int = 2, time: float | None = None, points: int = 30, metrics=None, **train) -> dict:
    """A cheaper copy of ``cfg`` for a counterfactual: fewer seeds and points, optionally a shorter horizon,
    only ``metrics``, and other ``train`` values (e.g. ``lr``, ``weight_decay``)."""
    out = copy.deepcopy(cfg)
    out["seeds"] = seeds
    tr = out["train"] = {**out["train"], **train}
    if time is not None:
        tr["steps"] = int(round(time / tr["lr"]))
    out["observe"] = {"schedule": "log", "points": points, "metrics": list(metrics or out["observe"]["metrics"])}
    return out


def variant(cfg: dict, *, data: dict | None = None, model: dict | None = None, init: dict | None = None,
            objective: str | None = None, **small_kw) -> dict:
    """``small(cfg, **small_kw)`` with the ``data``, ``model`` and ``init`` sections updated by the given
    entries and the ``objective`` replaced: one counterfactual world (another activation, target, width,
    initialization or loss) and nothing else changed. ``data.activation`` follows ``model.activation``."""
    out = small(cfg, **small_kw)
    if model:
        out["model"] = {**out["model"], **model}
        if "activation" in model:
            data = {**(data or {}), "activation": model["activation"]}
    if data:
        out["data"] = {**out["data"], **data}
    if init:
        out["init"] = dict(init)
    if objective:
        out["objective"] = objective
    return out


@functools.cache
def tau2_reduced(d: int, r: int, lam: float = 0.0) -> float:
    """tau_2 (first L_2 <= eta E_2) of the reduced beta-ODE (eq. 9-10 with eps = 0; the 'full' Lemma C.10 form,
    which also covers Stage 1.1) at weight decay ``lam`` from the standard init beta_1 = beta_2 = 1/d, with
    L_2/E_2 = (1 - beta_1)^2 + (d - r) beta_2^2 / r (T_2 diagonal, T*_2 = P)."""
    t = np.linspace(0.0, 40.0, 40001)
    b1, b2 = th.beta_ode(t, 1.0 / d, 1.0 / d, d, r, lam, hermite_sums("abs"), "full")
    hit = np.flatnonzero((1 - b1) ** 2 + (d - r) * b2**2 / r <= ETA)
    return float(t[hit[0]]) if hit.size else float("nan")


def delta_tau(d: int) -> float:
    """delta_tau = 1/sqrt(log d) of Theorem 3.1's table (the part of each window the lower bounds leave out)."""
    return 1.0 / float(np.sqrt(np.log(d)))


def window_mask(t, lo: float | None, hi: float | None, d: int) -> np.ndarray:
    """[T] bool: Theorem 3.1's window lo <= t <= (1 - delta_tau) hi before a transition at ``hi`` (all False when
    a transition is missing)."""
    t = np.asarray(t)
    if lo is None or hi is None:
        return np.zeros(len(t), bool)
    return (t >= lo) & (t <= (1 - delta_tau(d)) * hi)


def window_min(t, x, lo: float | None, hi: float | None, d: int) -> float:
    """min of ``x`` [T] on ``window_mask`` (NaN when the window is empty)."""
    sel = window_mask(t, lo, hi, d)
    return float(np.min(np.asarray(x)[sel])) if sel.any() else float("nan")


# -- the ideal synthetic Figure-1 run ------------------------------------------------------------------

def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=np.float64)))


def synthetic_figure1(cfg: dict, *, seeds: int | None = None, points: int = 150, **defects) -> dict[str, np.ndarray]:
    """A trajectory with every Figure-1 observable, following the paper's stages at the run's d, r and
    lambda: the logistic total mass of Stage 1.1, L_2 learned around t = 3, L_{>=4} around t = 22-29,
    irrelevant mass decaying like exp(-t/4), aligned mass and direction recovery around t = 15-20, a
    variance term of 10 % of L. Without ``defects`` it passes the claims of multiindex2026/figure1,
    figure1-empirical and theorem31-table; each defect (keyword: value) breaks one statement:

    ``order2_scale`` (L_2 decay time, default 1.3), ``order4_mid`` (mid-point of L_{>=4}, 22), ``order4_dip``
    (L_{>=4} drops by this fraction already at t = 1), ``mass_drift`` (alpha drifts by this fraction after
    t = ``mass_drift_from``, default 10), ``mass_rate`` (multiplies the Stage 1.1 rate), ``irrelevant_bump``
    (M_irr rises by this at t = 5),
    ``irrelevant_floor`` (M_irr/alpha levels off here), ``missed`` (directions never found), ``aligned_dip``
    (M_al dips by this fraction at t = 60), ``loss_bump`` (the loss rises by this fraction at t = 40),
    ``variance0`` (variance/L at t = 0), ``variance_late`` (variance/L for t > 0), ``order2_rise`` (L_{>=2}
    grows by this fraction during Stage 1.1), ``final_loss`` (a floor under the loss), ``time_scale``
    (stretches every stage time)."""
    d, r, S = cfg["data"]["d"], cfg["data"]["r"], seeds or cfg.get("seeds", 1)
    lam = float(cfg["train"].get("weight_decay", 0.0))
    lr, steps = cfg["train"]["lr"], cfg["train"]["steps"]
    T = lr * steps
    t = np.concatenate([[0.0], np.geomspace(lr, T, points - 1)])
    ts = t / defects.get("time_scale", 1.0)
    h = hermite_sums("abs")
    coeffs = np.asarray(ABS.hermite_coefficients(8))
    E = 0.5 * coeffs**2 * np.array([r**2] + [r] * 8, dtype=np.float64)
    E4 = 0.5 * r * h.s4p
    a_star = th.a_star(r, lam, h)
    F = (1 - a_star) ** 2  # weight-decay floor of every order (f = a* f* at the plateau)
    alpha0 = 1.0
    alpha = th.stage11_mass(ts * defects.get("mass_rate", 1.0), alpha0, r, lam, h)
    alpha = alpha + (r * a_star - th.alpha_eq(r, lam, h)) * (1 - np.exp(-ts / 20.0))
    alpha = alpha * (1 + defects.get("mass_drift", 0.0) * (ts > defects.get("mass_drift_from", 10.0)))
    L0 = 0.5 * h.s0 * (alpha - r) ** 2
    rise = 1 + defects.get("order2_rise", 0.0) * _sigmoid((ts - 0.05) / 0.01) * np.exp(-ts / 0.5)
    L2 = (F * E[2] + (E[2] - F * E[2]) * np.exp(-ts / defects.get("order2_scale", 1.3))) * rise
    mid = defects.get("order4_mid", 22.0)
    L4 = F * E4 + (E4 - F * E4) / (1.0 + (ts / mid) ** 8)
    L4 = L4 * (1 - defects.get("order4_dip", 0.0) * (ts >= 1.0)) * rise
    loss = L0 + L2 + L4 + defects.get("final_loss", 0.0)
    loss = loss * (1 + defects.get("loss_bump", 0.0) * ((ts > 40) & (ts < 45)))
    irr_frac = (0.8 - 1e-3) * np.exp(-ts / 4.0) + defects.get("irrelevant_floor", 1e-3)
    M_irr = alpha * irr_frac * (1 + defects.get("irrelevant_bump", 0.0) * (ts >= 5))
    M_sub = alpha - M_irr
    aligned = alpha * 0.95 * (_sigmoid((ts - 15.0) / 2.5) - _sigmoid(-15.0 / 2.5)) / (1 - _sigmoid(-6.0))
    aligned = aligned * (1 - defects.get("aligned_dip", 0.0) * ((ts > 60) & (ts < 65)))
    found = np.where(ts >= 20.0, float(r - defects.get("missed", 0)), 0.0)
    p_min = 0.1 + 0.9 * _sigmoid((ts - 18.0) / 2.0)
    if defects.get("missed"):
        p_min = np.minimum(p_min, 0.5)
    sub_min = (1 - 1 / r) - (1 - 1 / r - 0.07) * np.exp(-ts / 5.0)
    var = loss * np.where(t > 0, defects.get("variance_late", 0.1), defects.get("variance0", 1e-5))
    Lk = np.zeros((len(t), 9))
    Lk[:, 0], Lk[:, 2] = L0, L2
    Lk[:, 4:9:2] = L4[:, None] * (E[4:9:2] / E[4:9:2].sum())[None, :]

    def seeded(x):
        x = np.asarray(x, dtype=np.float64)
        return np.broadcast_to(x, (S, *x.shape)).copy()

    var_order = np.zeros((len(t), 9))
    var_order[:, 2] = var
    return {
        "t": t, "step": np.rint(t / lr).astype(np.int64),
        "loss_population": seeded(loss), "loss_order": seeded(Lk), "loss_order_4plus": seeded(L4),
        "energies": seeded(np.tile(E, (len(t), 1))), "energy_4plus": seeded(np.full(len(t), E4)),
        "mass_total": seeded(alpha), "mass_subspace": seeded(M_sub), "mass_irrelevant": seeded(M_irr),
        "beta1": seeded(M_sub / r), "beta2": seeded(M_irr / (d - r)), "mass_aligned": seeded(aligned),
        "mass_dense": seeded(alpha - aligned), "directions_found": seeded(found),
        "direction_alignment_min": seeded(p_min), "subspace_fraction_min": seeded(sub_min),
        "symmetrized_variance": seeded(var), "symmetrized_variance_se": seeded(0.01 * var),
        "symmetrized_variance_order": seeded(var_order),
        "a_hat": seeded(np.tile((aligned / r)[:, None], (1, r))),
        "b_hat": seeded(np.tile(((M_sub - aligned) / r)[:, None], (1, r))),
    }


def synthetic_run(cfg: dict, key: str, trajectory: dict, final_params: dict | None = None) -> SyntheticRun:
    return SyntheticRun(cfg, trajectory, final_params, name=f"synthetic-{key}")
