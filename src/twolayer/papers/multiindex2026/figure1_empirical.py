"""Figure 1 as the paper ran it: vanilla GD on a fixed sample of n points (empirical square loss), with the
population quantities measured exactly along the way (spec §6 D.32, §5.1 'Empirical GD reference').

The claims of spec P32: the same stages in the same order and the same mass reallocation as the population
run, at times within a factor of the population run's: the measured spread of that factor over independent seeds
(mean + 3 sd: 1.66 for the Hermite-order times, 2.06 for the mass times; the spec had '2x looser time
tolerances'); the training loss below the population loss; the population loss non-increasing; and the
population-vs-training gap shrinking as n grows (three sample sizes, nested samples). The wrong worlds of
the stage-time claims are the paper's named alternatives: the empirical run from a small initialization (Stage 1.1
takes 2.6x as long) and on the correlation loss (M_irr grows by amplification instead of being displaced).
"""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import Check, all_of, compare, monotone, within
from twolayer.claims.falsifiers import Counterfactual, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.multiindex2026 import premises as src
from twolayer.papers.multiindex2026.premises import premise
from twolayer.papers.multiindex2026._shared import (
    FIG1_METRICS, PAPER, SCALE, base_config, edge_lr, gd, r_of, small, synthetic_figure1, synthetic_run, variant,
)
from twolayer.papers.multiindex2026.figure1 import (
    figure1_configs, figure1_panels, hermite_order_check, ratio02_floor, window_ratio,
)
from twolayer.observe.multi_index import first_times, transition_times
from twolayer.plotting import band, panels, positive_times

# n: the Figure-1 sample (paper: n = 50,000); samples: the two smaller nested samples of the gap claim, run to
# time_gap; one seed each (the paper shows one run); float32 (the spec's reference run used float32 X W')
EMPIRICAL = {
    "quick": dict(n=10_000, samples=(2_500, 5_000), time=60.0, time_gap=20.0, seeds=1, points=150),
    "paper": dict(n=50_000, samples=(12_500, 25_000), time=100.0, time_gap=50.0, seeds=1, points=200),
}
SAMPLE_EVERY = 4  # the losses on the sample and on the test set (forward passes over n points) every 4th point
EMPIRICAL_METRICS = [m for m in FIG1_METRICS if m not in ("symmetrized_variance", "a_hat", "b_hat")] + \
    ["loss_train", "loss_test"]
GAP_METRICS = ["loss_population", "loss_train"]
ORDER = ["loss_order", "loss_order_4plus", "energies"]  # what the transition times read
# empirical / population stage times within these factors: the worst ratio's mean + 3 sd over 6 seeds independent of
# the checked one (benchmarks/spreads/issue28/empirical_spread.py, quick), in place of the spec's 2 (P32)
STAGE_ORDER_FACTOR = 1.66  # Hermite-order times: 1.48 +- 0.06
REALLOCATION_FACTOR = 2.06  # mass times: 1.71 +- 0.11
SETTLED = 1.0  # t >= 1: twice the population claims' t >= 0.5 (Stage 1.1 over)


def empirical_configs(scale: str) -> dict[str, dict]:
    s, e = SCALE[scale], EMPIRICAL[scale]

    def emp(n, time, metrics, points):
        cfg = base_config(s, objective="empirical", n=n, n_test=10_000, seeds=e["seeds"], points=points,
                          metrics=metrics)
        sparse = [m for m in ("loss_train", "loss_test") if m in metrics and len(metrics) > 2]
        if sparse:
            cfg["observe"]["sparse"] = {"metrics": sparse, "every": SAMPLE_EVERY}
        return {**cfg, "precision": "float32", "train": gd(s["lr"], time)}

    out = {"empirical": {**emp(e["n"], e["time"], EMPIRICAL_METRICS, e["points"]), "name": f"{PAPER}-fig1-empirical"},
           "population": figure1_configs(scale)["population"]}
    for n in e["samples"]:
        out[f"n{n}"] = emp(n, e["time_gap"], GAP_METRICS, 40)
    return out


figure1_empirical = register(Experiment(
    id=f"{PAPER}/figure1-empirical",
    title="Figure 1 as the paper ran it: GD on a fixed sample (n = 50,000 at paper scale)",
    figure="Figure 1",
    description=(
        "The paper's Figure 1 trains with vanilla GD on n = 50,000 samples (d = 100, r = 20, m = 250). Here: "
        "empirical GD (float32) on a fixed nested sample, with the exact population losses by Hermite order, the "
        "masses and the aligned mass measured along the way, beside the population run of multiindex2026/figure1 "
        "(same init). Quick scale: d = 50, r = 10, m = 160, n = 10,000 to t = 60; paper scale: n = 50,000 to "
        "t = 100, one seed as in the paper. Two smaller samples (n/4 and n/2) run to t = 20 (quick) or 50 (paper) "
        "for the train/population gap."),
    configs=empirical_configs,
))


def sample_keys(r: Results) -> list[str]:
    """The empirical runs by sample size, smallest first."""
    keys = [k for k in r.runs if k.startswith("n") or k == "empirical"]
    return sorted(keys, key=lambda k: int(r[k].config["data"]["n"]))


HERMITE_TIMES = ("tau_order0", "tau_order2", "tau_order4plus")
MASS_TIMES = ("irrelevant_10pct", "all_found", "half_aligned")


def stage_times(tr: dict, r: int, keys=HERMITE_TIMES + MASS_TIMES) -> dict[str, list[float]]:
    """Per seed the stage times named by ``keys``: tau_0, tau_2, tau_4 (``transition_times``) and the
    mass-reallocation times (M_irr <= 0.1 alpha; every direction found; M_al >= alpha / 2)."""
    out = {}
    if set(keys) & set(HERMITE_TIMES):
        taus = transition_times(tr)
        out.update({k: [np.nan if x[k] is None else x[k] for x in taus] for k in HERMITE_TIMES})
    t = tr["t"]
    if "irrelevant_10pct" in keys:
        out["irrelevant_10pct"] = first_times(t, tr["mass_irrelevant"] <= 0.1 * tr["mass_total"])
    if "all_found" in keys:
        out["all_found"] = first_times(t, tr["directions_found"] >= r)
    if "half_aligned" in keys:
        out["half_aligned"] = first_times(t, tr["mass_aligned"] >= 0.5 * tr["mass_total"])
    return {k: out[k] for k in keys}


def ratios_check(r: Results, keys, factor: float) -> Check:
    """Empirical over population stage times (population: median over seeds) within [1/factor, factor]."""
    emp = stage_times(r["empirical"].trajectory, r_of(r["empirical"]), keys)
    pop = stage_times(r["population"].trajectory, r_of(r["population"]), keys)
    with np.errstate(divide="ignore", invalid="ignore"):  # a time never reached (NaN) fails below, silently
        ratios = {k: float(np.max(np.asarray(emp[k]) / np.median(pop[k]))) for k in keys}
    worst = max(ratios.values(), key=lambda x: abs(np.log(x)) if np.isfinite(x) and x > 0 else np.inf)
    check = within(np.log(list(ratios.values())), -np.log(factor), np.log(factor))
    return Check(f"within a factor {factor:g}", ratios, check.passed, None,
                 "empirical / population time: " + ", ".join(f"{k} {v:.3g}" for k, v in ratios.items())
                 + f" (worst {worst:.3g}; slack on the log scale)", check.slack)


TINY_METRICS = ORDER + ["loss_population", "mass_total", "mass_irrelevant", "directions_found", "mass_aligned"]


def tiny_population(configs: dict[str, dict]) -> dict:
    """The population run beside a wrong world: one seed to t = 40, 60 points (shared by the worlds, cached)."""
    return small(configs["population"], seeds=1, time=40.0, points=60, metrics=TINY_METRICS)


TINY_SAMPLE = premise(Counterfactual(
    "tiny-sample",
    lambda c: {"empirical": {**small(c["empirical"], seeds=1, time=40.0, points=60, metrics=TINY_METRICS),
                             "data": {**c["empirical"]["data"], "n": 400}},
               "population": tiny_population(c)},
    "n = 400 samples for m d = 8,000 parameters: GD fits the sample instead of the target, so the population loss "
    "stops falling (and rises) before the subspace and the directions are learned, and mass goes into the "
    "irrelevant directions that fit the sample."), src.SAMPLES)

# The paper's named alternatives to its setting (Section 1: 'small initialization, correlation loss, or layer-wise
# training') as wrong worlds of the empirical run, each beside ``tiny_population``
SMALL_INIT_SCALE = 0.1  # ||w_i(0)|| ~ 0.1, alpha_0 = 0.01: figure1's small-initialization world
SMALL_INIT_TIME = 45.0  # past the last empirical stage time (M_al >= alpha/2 at ~30, tau_4 at ~37, quick)
CORRELATION_TIME = 2.0  # the mass grows ~1e10 per unit time: past t = 1 (SETTLED), far from float64 overflow
MASS_METRICS = ["mass_total", "mass_irrelevant", "directions_found", "mass_aligned"]


def small_init_world(configs: dict[str, dict]) -> dict[str, dict]:
    """The empirical run (same sample, step and precision) from w_i(0) ~ N(0, SMALL_INIT_SCALE^2 I/d), one seed
    to SMALL_INIT_TIME, beside the standard-init population run."""
    return {"empirical": variant(configs["empirical"], seeds=1, time=SMALL_INIT_TIME, points=60, metrics=TINY_METRICS,
                                 init={"kind": "standard", "scale": SMALL_INIT_SCALE}),
            "population": tiny_population(configs)}


def correlation_world(configs: dict[str, dict]) -> dict[str, dict]:
    """The run trained on the correlation loss -E[f f*] (the project's correlation objective is exact, float64)
    instead of the sample's square loss, one seed to CORRELATION_TIME, beside the square-loss population run."""
    run = variant(configs["empirical"], seeds=1, time=CORRELATION_TIME, points=40, metrics=MASS_METRICS,
                  objective="population_correlation")
    return {"empirical": {**run, "precision": "float64"}, "population": tiny_population(configs)}


SMALL_INIT = Counterfactual(
    "small-initialization",
    small_init_world,
    "w_i(0) ~ N(0, 0.01 I/d) (alpha_0 = 0.01; the paper: 'under small initialization with scale alpha << 1, a "
    "two-layer learner starts with and remains at f_t << f_* during the early feature-learning phase'): Stage 1.1 "
    "takes tau_0 = ln[(r/alpha_0 - 1)(1 - sqrt(eta))/sqrt(eta)]/(4 sigma_hat_0^2 r), 0.30 instead of 0.117 (2.6x; "
    "quick, Lemma C.5's logistic), while every later stage moves by that +0.18 only.")
CORRELATION = Counterfactual(
    "correlation-loss",
    correlation_world,
    "GD on the correlation loss -E[f f*] instead of the square loss (Section 1: 'small initialization, correlation "
    "loss, or layer-wise training ... each neuron approximately amplifies its weak initial correlation with the "
    "target'): the network's output drops out of the gradient, so the mass never settles at r and M_irr grows with "
    "the rest (amplification) instead of being displaced into the subspace (competition): measured, M_irr grows "
    "from 0.78 to 4e19 by t = 2 while M_irr/alpha falls from 0.79 to 0.33 (quick, one seed; 0.39 at t = 2 with the "
    "square loss), so the rise of M_irr itself, not its share, tells the two mechanisms apart. The project has the "
    "correlation loss as an exact objective only; its gradient E[f* grad f] does not involve f, so a sample "
    "would add only sampling noise to it.")


@figure1_empirical.claim(
    "same-stage-order",
    "Empirical GD learns the loss in the same Hermite order as population GD (tau_0 < tau_2 < tau_4, tau_2/tau_0 "
    "at least the reduced dynamics' ratio and tau_4 >= tau_2 / (1 - delta_tau) as figure1:hermite-order, population "
    "losses of the empirically trained network), each tau_k within a "
    f"factor {STAGE_ORDER_FACTOR:g} of the population run's (spec §6 D.32; the paper: 'vanilla gradient descent "
    "empirically exhibits the same qualitative dynamics', Figure 1's caption 'the same qualitative stagewise behavior "
    "as ... Theorem 3.1'; the factor is the measured spread, the paper gives none)",
    kind="prediction",
    premises=[TINY_SAMPLE, premise(SMALL_INIT, src.STANDARD_INIT)],
    tolerance_source="spread: the factor 1.66 is the mean + 3 sd of the worst empirical / population ratio over 6 "
                     "seeds independent of the checked one (below), in place of the spec's '2x looser time "
                     "tolerances' (§6 D.32; it observed 1.2-1.5x). The ratios are figure1:hermite-order's (derived: the reduced dynamics' tau_2/tau_0 "
                     "less one grid step per tau and 3 seed sd; paper: Theorem 3.1's row-3 window, tau_4 >= tau_2 / "
                     "(1 - delta_tau)), in place of the spec's 10 and 5. The paper: 'vanilla gradient descent "
                     "empirically exhibits the same qualitative dynamics' (abstract), Figure 1. Spread (quick, 6 "
                     "seeds independent of the checked one, init and sample seeds 1-6; issue 28's "
                     "benchmarks/spreads/issue28/empirical_spread.py): worst ratio 1.48 +- 0.06 (max 1.54; mean + 3 "
                     "sd 1.66); tau_0 1.00, tau_2 1.15-1.21, tau_4 1.39-1.54: a systematic slowdown by the sample, not noise "
                     "around 1. No bound gives a factor: Lemma F.12's coupling error sqrt(d r^2 log d / n) is 1.4-1.9 "
                     "at these n. Paper scale (n = 50,000) uses the same factor, not measured there (its reference: "
                     "worst 1.38)")
def _claim_order(r: Results) -> Check:
    run = r["empirical"]
    tr, d = run.trajectory, run.config["data"]["d"]
    order = hermite_order_check(transition_times(tr), ratio02_floor(tr["t"], d, r_of(run)), window_ratio(d))
    return all_of(order, ratios_check(r, HERMITE_TIMES, STAGE_ORDER_FACTOR))


@figure1_empirical.claim(
    "same-reallocation",
    "The same competitive mass reallocation: the irrelevant mass is non-increasing for t >= 1, and the times at "
    "which M_irr <= 0.1 alpha, every direction is found (<u_i, e_j>^2 >= 0.99) and M_al >= alpha/2 are each within "
    f"a factor {REALLOCATION_FACTOR:g} of the population run's (spec §6 D.32; the paper's Figure 1, middle and "
    "right: 'mass shifts from irrelevant directions to the target subspace', 'mass concentrates ... onto target-aligned neurons')",
    kind="prediction",
    falsifiers=[Synthetic("irrelevant-bump", lambda c: synthetic_empirical(c, irrelevant_bump=0.5),
                          "M_irr rises by 50 % at t = 5 (a probe that the monotonicity check can trip; the run "
                          "in which M_irr rises is the correlation-loss premise)")],
    premises=[TINY_SAMPLE, premise(CORRELATION, src.SQUARE_LOSS),
              premise(SMALL_INIT, src.STANDARD_INIT, holds=True, why=(
                  "w_i(0) ~ N(0, 0.01 I/d): measured, the reallocation holds without the standard initialization "
                  "(M_irr non-increasing for t >= 1, worst step -0.040; empirical / population times: M_irr <= 0.1 "
                  "alpha 1.43, every direction found 1.66, M_al >= alpha/2 1.27; quick, one seed, 60 points): the "
                  "small init only lengthens Stage 1.1, by 0.18, before the mass is reallocated"))],
    tolerance_source="spread: the factor 2.06 is the mean + 3 sd of the worst ratio over 6 seeds independent of "
                     "the checked one (below), in place of the spec's 2 (§6 D.32), which lay 2.5 sd from the mean; the "
                     "paper's Figure 1 (middle, right) shows the reallocation for this run and gives no factor. Spread (quick, "
                     "6 seeds independent of the checked one, init and "
                     "sample seeds 1-6): worst ratio 1.71 +- 0.11 (max 1.86, every direction found; M_irr <= 0.1 alpha "
                     "1.50-1.67, M_al >= alpha/2 1.19-1.40): mean + 3 sd = 2.06. Paper scale uses the same factor (its "
                     "reference: worst 1.46)")
def _claim_reallocation(r: Results) -> Check:
    tr = r["empirical"].trajectory
    late = tr["t"] >= SETTLED
    frac = tr["mass_irrelevant"][:, -1] / tr["mass_total"][:, -1]
    return all_of(monotone(tr["mass_irrelevant"][:, late], "non-increasing", rtol=1e-3),
                  ratios_check(r, MASS_TIMES, REALLOCATION_FACTOR),
                  details=f"M_irr/alpha at the end (t = {tr['t'][-1]:g}): {', '.join(f'{x:.3g}' for x in frac)}")


@figure1_empirical.claim(
    "loss-decreases",
    "The population loss of the empirically trained network is non-increasing (spec §6 D.32: 'L monotone'; the "
    "paper's Figure 1, left, shows it falling; monotonicity is the project's reading)",
    kind="prediction",
    falsifiers=[premise(Counterfactual("above-stability-edge",
                               lambda c: {"empirical": small(c["empirical"], seeds=1, points=40, time=10.0,
                                                             metrics=["loss_population", "mass_total"],
                                                             lr=1.05 * edge_lr(c["empirical"]["data"]["r"]))},
                               "GD on the sample at 1.05 / (2 sigma_hat_0^2 r), just above the stability edge of the "
                               "collective mass mode: the mass oscillates at O(1) amplitude and the population loss "
                               "goes up and down with it (with n = 400 samples the population loss still falls to "
                               "t = 40, so overfitting alone does not break it at this size)"), src.FLOW)],
    tolerance_source="solver: rtol 1e-6 of L(0), float32 round-off of the population loss; the statement is the "
                     "spec's (§6 D.32), the paper's Figure 1 (left) shows the loss falling")
def _claim_loss(r: Results) -> Check:
    tr = r["empirical"].trajectory
    return monotone(tr["loss_population"], "non-increasing", rtol=1e-6,
                    details="rtol 1e-6 of L(0): float32 round-off of the population loss")


NOT_ON_THE_SAMPLE = premise(Counterfactual(
    "not-trained-on-the-sample",
    lambda c: {k: {**small(cfg, seeds=1, time=20.0, points=30, metrics=GAP_METRICS), "objective": "population",
                   "precision": "float64"} for k, cfg in c.items() if k != "population"},
    "GD on the population loss instead of the sample: the 'training' loss is then the loss on a sample the "
    "network never saw, an unbiased estimate of L, above or below it by sampling noise, and the gap does not "
    "shrink systematically with n."), src.EMPIRICAL_LOSS)


@figure1_empirical.claim(
    "train-below-population",
    "The training loss is below the population loss, L^ <= L, at every observed t >= 1 for every sample size, and "
    "training opens that gap: the relative gap (L - L^)/L at the end is at least 10x its size at t = 0 (the "
    "project's, from spec §6 D.32: the paper states no relation between the two)",
    kind="prediction",
    falsifiers=[Synthetic("train-above", lambda c: synthetic_empirical(c, train_gap=-0.05),
                          "the training loss is 5 % above the population loss"), NOT_ON_THE_SAMPLE],
    tolerance_source="derived: at t = 0 the relative gap is the sampling error of the mean of (f - f*)^2 over n "
                     "points, about sqrt(Var((f - f*)^2)/n)/L ~ sqrt(2/n) = 1.4-2.8 % for n = 10,000-2,500 (a "
                     "Gaussian residual; measured 0.1-2 %), so 10x its value puts the trained gap ~10 standard errors above the sampling noise "
                     "(measured 43-75 % at the end, quick); the sign needs no tolerance")
def _claim_below(r: Results) -> Check:
    gaps, opened = {}, {}
    for key in sample_keys(r):
        tr = r[key].trajectory
        ev = evaluated(tr, "loss_train")
        rel = (tr["loss_population"] - tr["loss_train"])[:, ev] / tr["loss_population"][:, ev]
        late = tr["t"][ev] >= SETTLED
        gaps[key] = float(np.min(rel[:, late]))
        opened[key] = float(np.min(rel[:, -1] - 10 * np.abs(rel[:, 0])))
    return all_of(compare(min(gaps.values()), ">=", 0.0, scale=1.0), compare(min(opened.values()), ">=", 0.0, scale=1.0),
                  details="min over t >= 1 of (L - L^)/L: " + ", ".join(f"n = {r[k].config['data']['n']}: {v:.3g}"
                                                                         for k, v in gaps.items())
                  + "; (L - L^)/L at the end minus 10x |its value at t = 0|: "
                  + ", ".join(f"n = {r[k].config['data']['n']}: {v:.3g}" for k, v in opened.items()))


def evaluated(tr: dict, name: str) -> np.ndarray:
    """[T] bool: the points at which ``name`` was evaluated (finite for every seed; observe.sparse leaves NaN)."""
    return np.all(np.isfinite(np.asarray(tr[name])), axis=0)


def gap_at(run, time: float) -> float:
    """L - L^ at ``time`` (interpolated between the points where L^ was evaluated), mean over seeds."""
    tr = run.trajectory
    sel = evaluated(tr, "loss_train")
    gap = np.mean(tr["loss_population"][:, sel] - tr["loss_train"][:, sel], axis=0)
    return float(np.interp(time, tr["t"][sel], gap))


def opened_gap(run, time: float) -> float:
    """The relative gap (L - L^)/L that training opened: its value at ``time`` (interpolated) minus its value at
    t = 0, mean over seeds."""
    tr = run.trajectory
    sel = evaluated(tr, "loss_train")
    rel = np.mean((tr["loss_population"][:, sel] - tr["loss_train"][:, sel]) / tr["loss_population"][:, sel], axis=0)
    return float(np.interp(time, tr["t"][sel], rel) - rel[0])


@figure1_empirical.claim(
    "gap-shrinks-with-n",
    "The relative population-vs-training gap that training opens, (L - L^)/L at the smaller runs' horizon minus its "
    "value at t = 0, decreases strictly as n grows, over three nested sample sizes (the project's, from spec §6 "
    "D.32; the paper's n = Theta(d^{3+c}) is a sufficient size, not a rate)",
    kind="prediction",
    falsifiers=[Synthetic("gap-grows", lambda c: synthetic_empirical(c, gap_growth=True), "the gap grows with n"),
                NOT_ON_THE_SAMPLE],
    tolerance_source="none: a strict order over three n (the spec's §6 D.32; not in the paper)")
def _claim_gap(r: Results) -> Check:
    keys = sample_keys(r)
    horizon = min(float(r[k].trajectory["t"][-1]) for k in keys)
    ns = [int(r[k].config["data"]["n"]) for k in keys]
    gaps = [opened_gap(r[k], horizon) for k in keys]
    return monotone(gaps, "decreasing",
                    details=f"t = {horizon:g}, n = {ns}: opened relative gaps {', '.join(f'{g:.3g}' for g in gaps)}; "
                            f"absolute gaps L - L^ {', '.join(f'{gap_at(r[k], horizon):.3g}' for k in keys)}")


def synthetic_empirical(configs: dict[str, dict], *, train_gap: float = 0.3, gap_growth: bool = False,
                        **defects) -> dict:
    """Ideal runs: the population run from ``synthetic_figure1``, the empirical runs the same with ``defects``
    and a training loss ``train_gap`` (relative, shrinking like 1/n) below the population loss."""
    runs = {"population": synthetic_run(configs["population"], "population", synthetic_figure1(configs["population"]))}
    n_max = max(int(c["data"]["n"]) for k, c in configs.items() if k != "population")
    for key, cfg in configs.items():
        if key == "population":
            continue
        tr = synthetic_figure1(cfg, seeds=cfg["seeds"], **defects)
        n = int(cfg["data"]["n"])
        rel = train_gap * ((n / n_max) if gap_growth else (n_max / n))
        tr["loss_train"] = tr["loss_population"] * (1 - rel * (tr["t"] > 0))
        tr["loss_test"] = tr["loss_population"].copy()
        sparse = cfg["observe"].get("sparse")
        if sparse:  # as observe.sparse records them: NaN away from every k-th point and the last
            skip = np.ones(len(tr["t"]), bool)
            skip[sorted({*range(0, len(tr["t"]), sparse["every"]), len(tr["t"]) - 1})] = False
            for name in sparse["metrics"]:
                tr[name][:, skip] = np.nan
        runs[key] = synthetic_run(cfg, key, tr)
    return runs


@figure1_empirical.plot("figure1-empirical",
                        "Figure 1 as the paper ran it: empirical GD on the fixed sample (population losses by "
                        "Hermite order, with the training loss in gray; masses; aligned vs dense mass).")
def _plot(r: Results):
    run = r["empirical"]
    tr = run.trajectory
    fig = figure1_panels(tr, f"empirical GD, n = {run.config['data']['n']:,}")
    sel = evaluated(tr, "loss_train")
    t, Ltr = positive_times(tr["t"][sel], tr["loss_train"][:, sel])
    band(fig.axes[0], t, Ltr, label="train $\\hat L$", color="gray", positive=True)
    fig.axes[0].legend()
    return fig


@figure1_empirical.plot("gap", "Left: population loss L (solid) and training loss L^ (dashed) for the three sample "
                               "sizes; right: the gap L - L^ at the smaller runs' horizon against n.")
def _plot_gap(r: Results):
    fig, (ax, ax2) = panels(2, width=4.0, height=3.0)
    keys = sample_keys(r)
    for key in keys:
        tr = r[key].trajectory
        sel = evaluated(tr, "loss_train")
        t, Lp, Lt = positive_times(tr["t"][sel], tr["loss_population"][:, sel], tr["loss_train"][:, sel])
        line = band(ax, t, Lp, label=f"n = {r[key].config['data']['n']:,}", positive=True)
        band(ax, t, Lt, color=line.get_color(), positive=True)
        ax.lines[-1].set_linestyle("--")
    ax.set(xscale="log", yscale="log", xlabel="t", ylabel="loss", title="population (solid) and train (dashed)")
    ax.legend()
    horizon = min(float(r[k].trajectory["t"][-1]) for k in keys)
    ns = [int(r[k].config["data"]["n"]) for k in keys]
    ax2.plot(ns, [gap_at(r[k], horizon) for k in keys], "o-")
    ax2.set(xscale="log", yscale="log", xlabel="n", ylabel=f"L - L^ at t = {horizon:g}", title="gap vs n")
    return fig
