"""Theorem 4.3's limit sigma_init -> 0 (issue 27, section 4): the margin ratio gamma / gamma_max at four init scales,
on two symmetric datasets and two Leaky-ReLU slopes, with the trend toward 1 fitted.

Theorem 4.3 is "lim_{sigma -> 0} lim_{t -> infinity}": at a finite sigma nothing is promised, and at a finite clock
tau the ratio sits below 1 by a floor that does not depend on sigma (4.3e-4 at tau = 1e3 on the d = 5 data, measured
for sigma = 1e-2 and 1e-4 alike). Measured at quick scale before this experiment (6 seeds, width 10, tau = 1e3, d = 5):
the median deficit 1 - gamma/gamma_max is 1.2e-2 (sigma = 3), 7e-4 (1), 4.6e-4 (0.3) and 4.3e-4 (1e-2, 1e-4) at
alpha = 0.2, and 2e-2, 1.6e-3, 5.7e-4, 4.3e-4, 4.3e-4 at alpha = 0.5: the deficit falls as sigma falls, down to the
finite-tau floor.

Claims: the deficit never grows as sigma falls (median over seeds, per dataset and slope, beyond two standard errors
over seeds), the log-log slope of the deficit above the smallest scale's against sigma (the trend, fitted by least
squares over the larger scales) is positive, and the smallest scale's floor falls as O(ln tau / tau) (the inner limit
t -> infinity; at tau = 1e3 the deficit is 0.70 of that bound's growth on every quick row, as 1/tau gives). The premise
ablation puts every neuron in one sign group: the ratio goes to 2 alpha/(1+alpha), so its floor stays (growth 5.4).

Quick scale runs three of the four (dataset, slope) rows: its cost is one compiled program per data shape and slope
(5 programs, 304 s cold at load 8-11 -> 3 programs, 108 s at load 5-7; 95 -> 70 s of CPU); paper runs all four.
"""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import all_of, at_least, at_most
from twolayer.claims.falsifiers import Premise, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.lyu2021._shared import (
    SOURCE_BOTH_SIGNS, base_config, flow_train, groups_data, last, late_phase_series, symmetric_data, synthetic_run,
    synthetic_tau, tau, decade_growth, decade_start,
)
from twolayer.plotting import panels

SCALES = (1.0, 0.6, 0.3, 1e-3)
ALPHAS = (0.2, 0.5)
DATASETS = {"d5": symmetric_data(), "d2": groups_data()}
FULL_GRID = tuple((name, alpha) for name in DATASETS for alpha in ALPHAS)
# quick: three of the four (dataset, slope) rows, each a compiled program of its own (data shape x activation;
# 10-20 s to trace even from a warm compilation cache, 40-70 s cold at load 10): both slopes on d = 2, the paper's
# alpha = 0.2 on d = 5; the one-sign-group premise runs at the quick seed count, so it shares d2-a0.2's program
SCALE_SETTINGS = {"quick": dict(width=6, seeds=3, tau=1e3, points=20,
                                grid=(("d5", 0.2), ("d2", 0.2), ("d2", 0.5))),
                  "paper": dict(width=10, seeds=8, tau=1e3, points=40, grid=FULL_GRID)}
METRICS = ["margin_ratio", "normalized_margin"]


def run_key(data: str, alpha: float, sigma: float) -> str:
    return f"{data}-a{alpha:g}-s{sigma:g}"


def sigma_config(data: dict, alpha: float, sigma: float, s: dict, signs=None) -> dict:
    init = {"kind": "balanced", "scale": sigma}
    if signs is not None:
        init["signs"] = list(signs)
    cfg = base_config(data, s["width"], init, flow_train(s["tau"]), METRICS, s["points"], seeds=s["seeds"])
    cfg["model"]["activation"] = {"name": "leaky_relu", "slope": alpha}
    return cfg


def sigma_configs(scale: str) -> dict[str, dict]:
    s = SCALE_SETTINGS[scale]
    return {run_key(name, alpha, sigma): sigma_config(DATASETS[name], alpha, sigma, s)
            for name, alpha in s["grid"] for sigma in SCALES}


sigma_limit = register(Experiment(
    id="lyu2021/sigma-limit",
    title="Theorem 4.3's limit sigma -> 0: the margin ratio approaches 1 as the init scale falls",
    figure="Theorem 4.3 (lim over sigma_init -> 0)",
    description=(
        "Symmetric separable data in d = 5 (n = 60) and d = 2 (n = 20), Leaky-ReLU slopes alpha = 0.2 and 0.5 "
        "(quick: d = 5 at alpha = 0.2 only), balanced init at scales 1, 0.6, 0.3 and 1e-3, flow_log to tau = 1e3. Per dataset and slope, the median "
        "deficit 1 - gamma/gamma_max (gamma_max = (1+alpha) gamma*/4) never grows as sigma falls, and its fitted "
        "log-log trend against sigma, above the smallest scale's finite-tau floor, is positive."),
    configs=sigma_configs,
))


def deficits(r: Results) -> dict[tuple[str, float], np.ndarray]:
    """{(dataset, alpha): median deficit 1 - gamma/gamma_max per scale, in SCALES order (largest first)}, for the
    (dataset, alpha) rows whose runs are complete."""
    return {row: np.array([float(np.median(d)) for d in per_seed]) for row, per_seed in seed_deficits(r).items()}


def seed_deficits(r: Results) -> dict[tuple[str, float], list[np.ndarray]]:
    """{(dataset, alpha): [final deficit 1 - gamma/gamma_max of every seed] per scale, in SCALES order}."""
    out = {}
    for name, alpha in FULL_GRID:
        keys = [run_key(name, alpha, sigma) for sigma in SCALES]
        if all(k in r.runs for k in keys):
            out[(name, alpha)] = [1 - np.asarray(last(r[k], "margin_ratio"), dtype=np.float64) for k in keys]
    return out


def step_excess(per_seed: list[np.ndarray]) -> float:
    """The largest rise of the median deficit from one scale to the next smaller one, less two standard errors
    of that step (std over seeds / sqrt(S) at each scale, in quadrature: the seed spread, measured): > 0 when
    the deficit grows as sigma falls by more than its seeds scatter."""
    med = [float(np.median(d)) for d in per_seed]
    se = [float(np.std(d, ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0 for d in per_seed]
    return max(med[i + 1] - med[i] - 2 * np.hypot(se[i], se[i + 1]) for i in range(len(med) - 1))


def floor_decay(run) -> tuple[float, float, float]:
    """At the smallest scale, whether the finite-tau floor goes to 0 as O(1/tau) (Theorem 4.3's inner
    t -> infinity limit): with log L = -tau + o(1) on flow_log's clock, q_min = tau + O(log n) and ||theta||^2
    grows linearly in tau once the direction settles, so 1 - gamma/gamma_max = c / tau + o(1 / tau) near a
    KKT-margin direction, up to a log factor. Returns (growth, tau_early, tau_end): growth =
    [tau D](tau_end) / [tau D](tau_early) / (ln tau_end / ln tau_early) for the median deficit D, tau_early the
    observation nearest tau_end / 10; <= 1 for an O(ln tau / tau) floor, about 10 for a deficit that stays (a
    non-global KKT direction, one sign group)."""
    t = np.asarray(tau(run), dtype=np.float64)
    ratio = np.asarray(run.trajectory["margin_ratio"], dtype=np.float64)  # [S, T]
    return float(decade_growth(t, np.median(1 - ratio, axis=0))), float(t[decade_start(t)]), float(t[-1])


def trend(deficit: np.ndarray) -> float:
    """The least-squares slope of log(deficit - floor) against log sigma over the scales above the smallest, with
    floor = the smallest scale's deficit (the finite-tau floor): > 0 when the deficit falls with sigma."""
    excess = deficit[:-1] - deficit[-1]
    if np.any(excess <= 0):
        return float("-inf")
    return float(np.polyfit(np.log(SCALES[:-1]), np.log(excess), 1)[0])


def ideal_runs(configs: dict[str, dict], defect: str | None = None) -> dict[str, SyntheticRun]:
    """Ratios 1 - 0.4 / tau - 1e-3 sigma late (a finite-tau floor falling as 1/tau plus a linear approach in sigma);
    ``flat``: the ratio 0.999 at every scale of one dataset and slope (no trend in sigma, a floor that stays)."""
    t = synthetic_tau(end=1e3)
    out = {}
    for key, cfg in configs.items():
        S, sigma = cfg["seeds"], cfg["init"]["scale"]
        ratio = 1 - 0.4 / np.maximum(t, 1.0) - 1e-3 * sigma
        if defect == "flat" and key.startswith("d5-a0.2-"):
            ratio = np.full_like(t, 0.999)
        series = np.tile(ratio * (1 - np.exp(-t)), (S, 1))
        out[key] = synthetic_run(cfg, key, {"t": t, "margin_ratio": series, **late_phase_series(t, S)})
    return out


def _one_sign_group(configs: dict[str, dict]) -> dict[str, dict]:
    s = SCALE_SETTINGS["quick"]
    return {run_key("d2", 0.2, sigma): sigma_config(groups_data(), 0.2, sigma, s, signs=[1] * s["width"])
            for sigma in SCALES}


ONE_SIGN_GROUP = Premise(
    "one-sign-group", _one_sign_group,
    "every a_k > 0 at init (d = 2 data, alpha = 0.2, 3 seeds, the same four scales): the flow ends on the one-neuron "
    "direction with ratio 2 alpha/(1+alpha) = 1/3 at every sigma, a deficit 2/3 with no trend", source=SOURCE_BOTH_SIGNS)


@sigma_limit.claim("deficit-falls-with-sigma",
                   "Theorem 4.3's sigma -> 0 limit of the t -> infinity margin ratio: per (dataset, slope) row (paper: "
                   "d = 5 and d = 2 at alpha = 0.2 and 0.5; quick: d = 2 at both, d = 5 at 0.2; at least two datasets "
                   "and two slopes), the median deficit 1 - gamma/gamma_max never grows as sigma falls from 1 to 1e-3 "
                   "(by more than two standard errors over seeds), its fitted log-log trend against sigma (above the "
                   "smallest scale's floor) is positive, and at sigma = 1e-3 the floor left at tau = 1e3 is a "
                   "finite-time one: tau times the deficit does not grow over the last decade of tau by more than "
                   "the log factor (1 - gamma/gamma_max = O(ln tau / tau) near a KKT-margin direction)",
                   kind="prediction", falsifiers=[Synthetic("synthetic-flat", lambda c: ideal_runs(c, "flat"),
                                                            "one dataset and slope ends at 0.999 at every scale")],
                   premises=[ONE_SIGN_GROUP],
                   tolerance_source="derived: steps within two standard errors over seeds (measured per run); trend "
                                    "> 0 (the theorem's direction, no rate); floor O(ln tau / tau) from log L = -tau "
                                    "and ||theta||^2 linear in tau (floor_decay)")
def _deficit(r: Results):
    rows = seed_deficits(r)
    if not rows:
        return at_most(float("inf"), 0.0, details="no complete set of scales")
    medians = {row: np.array([float(np.median(d)) for d in per_seed]) for row, per_seed in rows.items()}
    steps = [step_excess(per_seed) for per_seed in rows.values()]
    slopes = [trend(d) for d in medians.values()]
    floors = {row: floor_decay(r[run_key(row[0], row[1], SCALES[-1])]) for row in rows}
    return all_of(at_least(len({name for name, _ in rows}), 2), at_least(len({alpha for _, alpha in rows}), 2),
                  at_most(steps, 0.0), at_least(slopes, 0.0), at_most([g for g, _, _ in floors.values()], 1.0),
                  details="; ".join(f"{name} alpha {alpha:g}: deficit " + ", ".join(f"{x:.3g}" for x in d) +
                                    f" at sigma {', '.join(f'{s:g}' for s in SCALES)}; slope {trend(d):.2f}; "
                                    f"largest step less 2 SE {step_excess(rows[(name, alpha)]):.2g}; floor growth "
                                    "{:.3g} (tau {:g} -> {:g})".format(*floors[(name, alpha)])
                                    for (name, alpha), d in medians.items()))


@sigma_limit.plot("deficit", "Median deficit 1 - gamma/gamma_max against the init scale sigma (log-log), per dataset "
                             "and Leaky-ReLU slope, at tau = 1e3; the flat part is the finite-tau floor.")
def _plot(r: Results):
    fig, (ax,) = panels(1, width=4.4, height=3.2)
    for (name, alpha), d in deficits(r).items():
        ax.plot(SCALES, np.maximum(d, 1e-12), "o-", label=f"{name}, alpha {alpha:g}")
    ax.set(xscale="log", yscale="log", xlabel=r"init scale $\sigma$", ylabel=r"$1 - \gamma/\gamma_{max}$",
           title="Theorem 4.3: sigma -> 0")
    ax.invert_xaxis()
    ax.legend(fontsize=6)
    return fig
