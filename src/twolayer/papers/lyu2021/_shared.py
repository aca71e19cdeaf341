"""Shared pieces of the lyu2021 experiments: the setting, config builders, runs -> numpy, references,
falsifier builders and plot helpers.

Setting (spec_001 §1): f(x) = sum_k a_k phi(w_k . x) (the ``two_layer`` net, v = a), Leaky ReLU slope
alpha = 0.2 [DEFAULT, A3], mean logistic loss, balanced small initialization; gradient flow followed
into the late phase by ``flow_log`` (clock tau = ln(1 + t), log L down to -1e4; ``train/flow_log.py``).
Every run records ``LATE_METRICS`` so that the late-phase experiment (E8) can check it.
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.runs import final_value, initial_params, run_dataset
from twolayer.claims.falsifiers import Counterfactual, Premise, SyntheticRun
from twolayer.claims.registry import Results, register_paper

register_paper(
    "lyu2021", "Gradient Descent on Two-layer Nets: Margin Maximization and Simplicity Bias",
    "K. Lyu, Z. Li, R. Wang, S. Arora. NeurIPS 34 (2021), pp. 12978-12991. arXiv:2110.13905.")

ALPHA = 0.2  # [DEFAULT] the paper's Leaky ReLU slope is unknown (spec A3)
ACT = {"name": "leaky_relu", "slope": ALPHA}
LOSS = {"kind": "logistic", "reduction": "mean"}
RTOL = 1e-6
RECON = "[RECON] reconstructed definition (spec_001 §3.1)"
DERIVED = "[DERIVED] constant derived in spec_001, not read from the paper"
SAME_SIGN_RATIO = 2 * ALPHA / (1 + ALPHA)  # gamma/gamma_max of the one-neuron direction on symmetric data

# every lyu2021 run records these (the late-phase experiment, E8, reads them from every run)
LATE_METRICS = ["log_loss", "normalized_margin", "smoothed_margin"]
MARGIN_METRICS = [*LATE_METRICS, "margin_ratio", "group_mass", "cos_wstar", "balancedness", "nonlinearity",
                  "boundary_linearity", "kkt_residual"]
LN_LN2 = math.log(math.log(2))  # log(n L) < log ln 2: the late phase of Theorem 3.1


# -- configs -----------------------------------------------------------------------------------------

def flow_train(tau: float, **extra) -> dict:
    """``flow_log`` to the clock value tau = ln(1 + t); errors relative to rms(theta) (train/flow_log.py),
    so atol only guards theta = 0."""
    return {"method": "flow_log", "time": tau, "rtol": RTOL, "atol": 1e-300, "solver": "tsit5", **extra}


def base_config(data: dict, width: int, init: dict, train: dict, metrics: list[str], points: int, **extra) -> dict:
    missing = [m for m in LATE_METRICS if m not in metrics]
    return {"data": data, "model": {"kind": "two_layer", "activation": ACT, "width": width}, "init": init,
            "loss": LOSS, "train": train,
            "observe": {"schedule": "log", "points": points, "metrics": [*metrics, *missing]}, **extra}


def symmetric_data(d: int = 5, n: int = 60, seed: int = 0) -> dict:
    """n/2 separable ball points (teacher margin 0.1) and their mirror images (Assumption 4.1)."""
    return {"kind": "symmetric_separable", "d": d, "n": n, "margin": 0.1, "seed": seed}


def groups_data() -> dict:
    """The 2-D symmetric data of the sign-group and Figure 1 (left) experiments (n = 20)."""
    return symmetric_data(d=2, n=20)


VALUE_DIGITS = 10  # significant digits kept of a computed init (see values_init)
ZERO_FLOOR = 1e-12  # |entry| below this fraction of the array's largest: solver residue, kept as 0 (config_values)


def config_values(x) -> list:
    """``x`` as nested lists of floats rounded to VALUE_DIGITS significant digits. A computed start (KKT picks by
    least squares, draws through JAX) differs in its last bits between machines and library builds; the config,
    and so its hash and run name, must not: the committed paper-scale references name their runs by it. The
    rounding moves a start by at most 5e-10 of each entry, far below every tolerance that reads the runs. Entries
    below ZERO_FLOOR of the array's largest are rounding residue of a solver (1e-17 where the exact point has 0, a
    different 1e-17 on another machine) and become 0: rounding them to 10 digits would keep their noise."""
    arr = np.asarray(x, dtype=np.float64)
    scale = float(np.max(np.abs(arr))) if arr.size else 0.0
    arr = np.where(np.abs(arr) < ZERO_FLOOR * scale, 0.0, arr)
    return np.vectorize(lambda e: float(f"{e:.{VALUE_DIGITS}g}"), otypes=[np.float64])(arr).tolist()


def values_init(W, a) -> dict:
    """An init given in the config: W [S, m, d] (or [m, d]) and a [S, m] (or [m]), rounded by ``config_values``."""
    return {"kind": "values", "W": config_values(W), "v": config_values(a)}


# -- small counterfactual runs (seconds; shared by every claim that rests on the same assumption) -------

def small_symmetric(*, width: int = 4, signs=None, scale: float = 1e-4, tau: float = 1e3, layers: str = "both",
                    init_kind: str = "balanced", seeds: int = 2, points: int = 30, data: dict | None = None) -> dict:
    """A small run on the symmetric d = 5 data (60 points): width 4, 2 seeds, flow_log to tau = 1e3."""
    init = {"kind": init_kind, "scale": scale}
    if signs is not None:
        init["signs"] = list(signs)
    train = flow_train(tau)
    if layers != "both":
        train["layers"] = layers
    cfg = base_config(data or symmetric_data(), width, init, train, MARGIN_METRICS, points, seeds=seeds)
    cfg["name"] = "lyu2021-counterfactual"
    return cfg


def replace_runs(**configs):
    """A counterfactual change: the listed keys get the given configs, every other key is dropped."""
    return lambda _: dict(configs)


SHORT_RUN = Counterfactual(
    "stopped-early", replace_runs(flow=small_symmetric(tau=3.0)),
    "the flow stopped at t = e^3 - 1 = 19 (Thm 3.1 is a t -> infinity statement): neurons are still on "
    "+-mu_bar, not on +-w*, and theta is far from any KKT direction")
# Premises of Theorem 4.3 (and Thm 4.2, Cor. 4.4), each removed from the same small run (``small_symmetric``)
SOURCE_SYMMETRIC = "Assumption 4.1 (Thms 4.2, 4.3): 'n is even and x_i = -x_{i+n/2}, y_i = 1, y_{i+n/2} = -1'"
SOURCE_BOTH_SIGNS = ("Cor. 4.4 / Thm 4.3: the flow reaches the global max unless every neuron starts in one sign group "
                     "(probability 1 - 2^-(m-1) over the balanced init)")
NOT_SYMMETRIC = Premise(
    "not-symmetric", replace_runs(flow=small_symmetric(data={**symmetric_data(), "kind": "separable_ball"})),
    "the same 60 points drawn without their mirror images (separable_ball, same seed): the global max is no longer "
    "(1+alpha) gamma*/4 and the limit is not linear; the margin ratio against (1+alpha) gamma*/4 exceeds 1",
    source=SOURCE_SYMMETRIC)
BOTH_SIGNS = Premise(
    "one-sign-group", replace_runs(flow=small_symmetric(signs=[1, 1, 1, 1])),
    "every a_k > 0 at init: the flow ends on the one-neuron direction, margin ratio 2 alpha/(1+alpha) = 1/3, A- = 0, "
    "nonlinearity (1-alpha)/(1+alpha) = 0.67", source=SOURCE_BOTH_SIGNS)
SMALL_INIT = Premise(
    "large-init", replace_runs(flow=small_symmetric(scale=1.0)),
    "init scale 1 (the Phase-I analysis needs sigma -> 0): the within-group weights no longer follow "
    "c_k = |<mu_bar, w_k(0)> + a_k(0)|", source="Thm 4.3: small initialization, the limit sigma_init -> 0")
LATE_PHASE_REACHED = Premise(
    "late-phase-not-reached", replace_runs(flow=small_symmetric(tau=3.0)),
    "the flow stopped at t = e^3 - 1 = 19, before n L < ln 2: neurons are still on +-mu_bar, not on +-w*, and theta "
    "is far from any KKT direction", source="Thm 3.1: 'if L(theta(t_0)) < ln 2 / n for some t_0' (then theta/||theta|| "
                                            "tends to a KKT-margin direction)")
FIRST_LAYER_ONLY = Counterfactual(
    "first-layer-only", replace_runs(flow=small_symmetric(layers="first")),
    "a_k frozen (only W trained): ||w_k||^2 - a_k^2 is no longer conserved, ||w_k|| grows while a_k stays ~1e-4")


# -- runs -> numpy -------------------------------------------------------------------------------------

def dataset(r: Results, key: str):
    return r.memo(f"data:{key}", lambda: run_dataset(r[key]))


def initial(r: Results, key: str) -> dict:
    """The initial parameters {"W": [S, m, d], "v": [S, m]} of a run (re-sampled as the run did)."""
    return r.memo(f"init:{key}", lambda: initial_params(r[key]))


def final(run) -> tuple[np.ndarray, np.ndarray]:
    """Final (W [S, m, d], a [S, m]) of a run."""
    return run.seeded("W", "final"), run.seeded("v", "final")


def last(run, name: str) -> np.ndarray:
    """The final recorded value of ``name`` per seed: [S, ...]."""
    return final_value(run, name)


def tau(run) -> np.ndarray:
    return np.asarray(run.trajectory["t"])


def theta_flat(W, a) -> np.ndarray:
    """theta = (w_1..w_m, a_1..a_m) per seed: [S, m (d + 1)]."""
    W, a = np.asarray(W), np.asarray(a)
    return np.concatenate([W.reshape(W.shape[0], -1), a], axis=1)


def symmetric_reference(r: Results, key: str):
    """(w*, gamma*, gamma_max = (1+alpha) gamma*/4) of a run's data."""
    from twolayer.theory.margin import global_max_margin, max_margin_linear

    data = dataset(r, key)
    w_star, g_star = max_margin_linear(data.X, data.y)
    return w_star, g_star, global_max_margin(data.X, data.y, ALPHA, g_star)


def kkt(r: Results, key: str) -> np.ndarray:
    """scipy-NNLS KKT residual (tau = 1e-2, Definition B.8) of every seed's final parameters."""
    from twolayer.theory.margin import kkt_residual

    def compute():
        data = dataset(r, key)
        W, a = final(r[key])
        return np.array([kkt_residual(W[s], a[s], data.X, data.y, ALPHA)[0] for s in range(len(a))])

    return r.memo(f"kkt:{key}", compute)


# -- synthetic runs ------------------------------------------------------------------------------------

def decade_start(t: np.ndarray) -> int:
    """The observation nearest tau_end / 10."""
    return int(np.argmin(np.abs(np.log(np.maximum(t, 1e-300)) - np.log(t[-1] / 10))))


def decade_growth(t: np.ndarray, deficit: np.ndarray) -> np.ndarray:
    """The finite-time rule of the late phase: [tau D](tau_end) / [tau D](tau_early) / (ln tau_end / ln tau_early)
    along the last axis of the deficit D, tau_early = ``decade_start``. On flow_log's clock log L = -tau + o(1),
    q_min = tau + O(log n) and ||theta||^2 grows linearly in tau once the direction settles, so near a KKT-margin
    direction D = O(ln tau / tau) and the growth is <= 1 (about 0.68 for c / tau over the decade 100 -> 1000); a
    deficit that stays gives about 10 / ln 10 ... (callers guard D <= 0: the raw quotient is returned, inf or nan)."""
    t = np.asarray(t, dtype=np.float64)
    D = np.asarray(deficit, dtype=np.float64)
    end, early = len(t) - 1, decade_start(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (t[end] * D[..., end]) / (t[early] * D[..., early]) / (np.log(t[end]) / np.log(t[early]))


def deficit_growth(t: np.ndarray, deficit: np.ndarray) -> np.ndarray:
    """Per seed, ``decade_growth`` of the deficit D [S, T] of the margin below theta_bar's. Started in the late phase, flow_log has log L = -tau + O(1) and ||theta||^2 linear in tau once the
    direction settles, so near a KKT-margin direction D(tau) = gamma(theta_bar)/gamma_max - gamma/gamma_max =
    O(ln tau / tau): the growth is <= 1 (about 0.68 for c / tau over the decade 100 -> 1000). A limit whose margin
    is below theta_bar's by delta keeps D -> delta: tau D grows tenfold and the growth is about 7 once delta
    dominates c / tau_early. A final deficit <= 0 (at or above theta_bar's margin: the claim's other part judges it)
    gives 0; an early deficit <= 0 counts as 1e-300 (a later positive one then fails)."""
    D = np.asarray(deficit, dtype=np.float64)
    return np.where(D[:, -1] > 0, decade_growth(t, np.maximum(D, 1e-300)), 0.0)


def synthetic_tau(points: int = 40, end: float = 1e4) -> np.ndarray:
    return np.concatenate([[0.0], np.geomspace(1e-2, end, points - 1)])


def rising(t: np.ndarray, limit, rate: float = 1.0) -> np.ndarray:
    """limit (1 - e^{-rate t}) per seed, [S, T] for limit [S] (a quantity approaching its limit from below)."""
    return np.asarray(limit, dtype=np.float64)[:, None] * (1 - np.exp(-rate * t))[None, :]


def late_phase_series(t: np.ndarray, S: int, gamma: float = 0.1) -> dict[str, np.ndarray]:
    """log L, log nL, normalized and smoothed margins of a healthy late phase: nL falls below ln 2 at
    tau ~ 1 and log L ~ -tau after; gamma~ rises below gamma."""
    log_sum = np.tile(math.log(2.0) - t, (S, 1))
    g = np.tile(gamma * (1 - 0.5 / (1 + t)), (S, 1))
    return {"log_loss_sum": log_sum, "log_loss": log_sum - math.log(10.0), "normalized_margin": g,
            "smoothed_margin": g - 0.01 * gamma / (1 + t)}


def synthetic_run(cfg: dict, name: str, trajectory: dict, W=None, a=None) -> SyntheticRun:
    final_params = {} if W is None else {"W": np.asarray(W), "v": np.asarray(a)}
    return SyntheticRun(cfg, trajectory, final_params, name=f"synthetic-{name}")


# -- plots --------------------------------------------------------------------------------------------

def tau_axis(ax):
    ax.set(xscale="log", xlabel=r"$\tau = \ln(1+t)$  (gradient-flow time $t$)")


def decision_panel(ax, W, a, X, y, title: str, w_star=None, extent: float = 1.1):
    """2-D decision regions of f, its zero set, the neurons' directions (length ~ a_k^2 share) and the data."""
    from twolayer.theory.margin import forward

    g = np.linspace(-extent, extent, 241)
    xx, yy = np.meshgrid(g, g)
    f = forward(W, a, np.column_stack([xx.ravel(), yy.ravel()]), ALPHA).reshape(xx.shape)
    ax.contourf(xx, yy, np.sign(f), levels=[-2, 0, 2], colors=["#f4c7c3", "#c6dbef"], alpha=0.7)
    ax.contour(xx, yy, f, levels=[0], colors="k", linewidths=1.2)
    ax.scatter(*X[y > 0].T, s=12, c="C0", marker="o", label="y = +1", zorder=3)
    ax.scatter(*X[y < 0].T, s=12, c="C3", marker="x", label="y = -1", zorder=3)
    share = a**2 / max(float(np.max(a**2)), 1e-300)
    for k in range(len(a)):
        u = W[k] / max(np.linalg.norm(W[k]), 1e-300) * extent * 0.9 * share[k]
        ax.annotate("", xy=u, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="C2" if a[k] > 0 else "C1", lw=1.2))
    if w_star is not None:
        ax.plot([-extent * w_star[1], extent * w_star[1]], [extent * w_star[0], -extent * w_star[0]], "--",
                color="gray", lw=0.8, label="max-margin line")
    ax.set(xlim=(-extent, extent), ylim=(-extent, extent), aspect="equal", title=title)
