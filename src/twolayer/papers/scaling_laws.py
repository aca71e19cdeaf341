"""Example sweeps: the papers' scaling laws as grids of runs, each drawn as a phase diagram with its
theory overlay (``twolayer.sweep.phase.THEORIES``) and checked by a claim.

Each experiment is a sweep file (``SWEEPS[name][scale]``, the same YAML ``twolayer sweep`` reads):
its points are the experiment's configs (keys ``p000``, ...), and the figures and claims read the
results table ``twolayer.sweep.runs_table`` builds from the stored runs, exactly as ``twolayer
plot`` reads ``results.parquet``.

Falsifiers: synthetic sweeps (``synthetic_sweep``: summaries whose events or final values follow
another law) and counterfactual sweeps that keep every swept key and change one ingredient the law
rests on (the loss, the symmetry of the data, the initialization scale, the weight decay), so the
table the claim reads has the same rows.
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import Check, all_of, at_least, monotone, ordered, within
from twolayer.claims.falsifiers import Counterfactual, Premise, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register, register_paper
from twolayer.sweep.phase import THEORIES, phase_figure
from twolayer.sweep import experiment_configs, runs_table

PAPER = "sweeps"
register_paper(PAPER, "Scaling laws as sweeps (phase diagrams)",
               "Grids of runs over separability, sample size, initialization scale, width and target rank, "
               "with the theory of the three papers overlaid (twolayer sweep / twolayer plot).")

# A symmetric pair x, -x (labels +1, -1): mu = (1/n) sum y_i x_i = x, ||mu|| = 1; with leaky ReLU slope
# alpha the Phase-I rate is lambda = (1 + alpha) ||mu|| / 4 (Lyu et al. 2021, symmetric data).
SYMMETRIC_PAIR = {"kind": "two_points", "angle": math.pi, "labels": [1, -1]}
ALPHA = 0.2
LEAKY = {"name": "leaky_relu", "slope": ALPHA}

SWEEPS: dict[str, dict[str, dict]] = {
    "fit-time": {
        scale: {
            "name": f"{PAPER}-fit-time-{scale}",
            "base": {
                "data": SYMMETRIC_PAIR, "model": {"kind": "two_layer", "activation": LEAKY, "width": width},
                "init": {"kind": "balanced", "scale": 1e-3}, "loss": {"kind": "logistic", "reduction": "mean"},
                "train": {"method": "gd", "lr": 0.05, "steps": steps},
                "observe": {"schedule": "every", "every": 2, "metrics": ["loss", "log_loss"]},
            },
            "grid": {"init.scale": scales}, "seeds": seeds,
        }
        for scale, width, steps, scales, seeds in (
            ("quick", 8, 1400, [1e-2, 1e-3, 1e-4, 1e-5, 1e-6], 4),
            ("paper", 20, 2400, [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10], 8),
        )
    },
    "success-width": {
        scale: {
            "name": f"{PAPER}-success-width-{scale}",
            "base": {
                "data": SYMMETRIC_PAIR, "model": {"kind": "two_layer", "activation": LEAKY, "width": 2},
                "init": {"kind": "gaussian", "scale": 1e-3}, "loss": {"kind": "logistic", "reduction": "mean"},
                "train": {"method": "gd", "lr": 0.05, "steps": 2000},
                "observe": {"schedule": "log", "points": 30, "metrics": ["loss", "group_mass", "normalized_margin"]},
            },
            "grid": {"model.width": widths}, "seeds": seeds,
        }
        for scale, widths, seeds in (("quick", [1, 2, 3, 4, 6], 64), ("paper", [1, 2, 3, 4, 5, 6, 8], 256))
    },
}

SUCCESS_MASS = 0.01  # both sign groups hold at least 1 % of ||theta||^2 (both tend to 1/4 on success)
# On the symmetric pair (x, +1), (-x, -1) with ||x|| = 1, a net whose output weights share one sign reaches a
# normalized margin of at most alpha/2 (one side is fitted through the leaky slope: a alpha |w| / (a^2 + |w|^2));
# the global max-margin direction reaches (1 + alpha)/4 (Thm 4.2, gamma* = 1). Success: the trained net's margin
# exceeds the midpoint, which no one-group net can.
ONE_GROUP_MARGIN = ALPHA / 2
GLOBAL_MARGIN = (1 + ALPHA) / 4
SUCCESS_MARGIN = (ONE_GROUP_MARGIN + GLOBAL_MARGIN) / 2
WILSON_Z = 2.576  # 99 % two-sided


def _sweep(name: str):
    return lambda scale: experiment_configs(SWEEPS[name][scale])


def _table(r: Results, name: str):
    return r.memo("table", lambda: runs_table(SWEEPS[name][r.scale], r.runs))


def _configs(r: Results):
    by_id = {run.path.name: run for run in r.runs.values()}
    return lambda run_id: by_id[run_id].config if run_id in by_id else None


def synthetic_sweep(configs: dict[str, dict], *, events=None, final=None) -> dict[str, SyntheticRun]:
    """Synthetic runs of a sweep's points (keys ``p000``...): per seed, ``events(config, seed)`` and
    ``final(config, seed)`` give the summary's event times and final metric values (dicts)."""
    runs = {}
    for key, cfg in configs.items():
        seeds = list(range(cfg["seeds"])) if isinstance(cfg.get("seeds"), int) else list(cfg.get("seeds") or [0])
        per_seed = {"events": [events(cfg, s) if events else {} for s in seeds],
                    "final": [final(cfg, s) if final else {} for s in seeds]}
        summary = {"seeds": seeds, **{part: {name: [row[name] for row in rows] for name in (rows[0] if rows else {})}
                                        for part, rows in per_seed.items()}}
        runs[key] = SyntheticRun(cfg, {}, summary=summary, name=f"synthetic-{key}")
    return runs


def _each(change):
    """A counterfactual change applied to every point config (swept keys untouched)."""
    def apply(configs):
        for cfg in configs.values():
            change(cfg)
        return configs
    return apply


# -- fit time against the initialization scale (Lyu et al. 2021) ----------------------------------

fit_time = register(Experiment(
    id=f"{PAPER}/fit-time",
    title="Fit time against the initialization scale (margins paper, Phase I)",
    figure="Lyu et al. 2021, Thm E.4 (T2(r) = ln(1/r) / lambda); spec E2",
    description=(
        "A symmetric pair x, -x (||mu|| = 1), leaky ReLU alpha = 0.2, mean logistic loss, balanced init of scale "
        "sigma, GD lr 0.05 observed every 2 steps. t_fit is the first t with L < ln 2 / 2 (event fit_time). "
        "Near the origin the dynamics are linear with rate lambda = (1 + alpha) ||mu|| / 4 = 0.3, so "
        "t_fit = ln(1/sigma) / lambda + O(1): the slope of t_fit against ln(1/sigma)/lambda is 1."),
    configs=_sweep("fit-time"),
))


def _set_loss(kind: str):
    def change(cfg):
        cfg["loss"] = {**cfg["loss"], "kind": kind}
    return change


def gd_fit_slope(lr: float, lam: float) -> float:
    """The slope of GD's t_fit against ln(1/sigma)/lambda: near the origin GD multiplies the growing direction by (1 +
    lr lambda) per step, so it needs ln(1/sigma)/ln(1 + lr lambda) steps, t = lr times that: slope lr lambda /
    ln(1 + lr lambda) (1.0075 at lr 0.05, lambda 0.3; 1 for the flow)."""
    return lr * lam / math.log1p(lr * lam)


def grid_slope_error(x: np.ndarray, grid: float) -> float:
    """The largest change of a least-squares slope over ``x`` when every y moves by at most ``grid`` (an event found
    on an observation grid of spacing ``grid``): grid sum |x - mean| / sum (x - mean)^2."""
    dx = np.asarray(x, dtype=np.float64) - np.mean(x)
    return float(grid * np.sum(np.abs(dx)) / np.sum(dx**2))


@fit_time.claim("slope-one-over-lambda",
                "The fitted slope of t_fit (median over seeds) against ln(1/sigma)/lambda, lambda = (1+alpha)||mu||/4, "
                "is GD's lr lambda / ln(1 + lr lambda) (1 for the flow; 1.0075 at lr 0.05), within what the "
                "observation grid can move a least-squares slope",
                kind="prediction",
                tolerance_source="derived: t_fit is found on the observation grid (lr x every = 0.1), so each median "
                                 "is off by less than one spacing, and the slope by at most spacing x sum|x - mean| / "
                                 "sum (x - mean)^2 over x = ln(1/sigma)/lambda (0.0078 quick), in place of the "
                                 "spec's exploratory 1 +- 3 % (P6); quick measures 1.00778 against 1.00748",
                falsifiers=[Synthetic("slope-two", lambda configs: synthetic_sweep(
                                configs, events=lambda cfg, s: {"fit_time": 2 * math.log(1 / cfg["init"]["scale"]) / 0.3
                                                                + 5.0 + 0.1 * s}),
                                      "t_fit = 2 ln(1/sigma)/lambda + 5: twice the predicted slope"),
                            Counterfactual("exponential-loss", _each(_set_loss("exponential")),
                                           "lambda = (1+alpha)||mu||/4 carries the logistic loss's -l'(0) = 1/2; the "
                                           "exponential loss has -l'(0) = 1, so Phase I runs twice as fast and the "
                                           "slope is about 1/2")])
def _fit_slope(r: Results) -> Check:
    df = _table(r, "fit-time")
    data_slope = _theory_fit(r, df, "init.scale", "event.fit_time", "fit_time")
    cfg = next(iter(r.runs.values())).config
    lam = (1 + ALPHA) / 4
    lr = cfg["train"]["lr"]
    x = np.log(1 / np.unique(df["init.scale"].to_numpy(float))) / lam
    allowed = grid_slope_error(x, lr * cfg["observe"]["every"])
    predicted = gd_fit_slope(lr, lam)
    return within(data_slope["slope"], predicted - allowed, predicted + allowed,
                  details=f"predicted {predicted:.5f} +- {allowed:.2g} (the grid); intercept c = {data_slope['c']:.3g} "
                          f"(t units); lambda = {lam:g}")


def _theory_fit(r: Results, df, x: str, metric: str, theory: str) -> dict:
    from twolayer.sweep.phase import aggregate

    data = aggregate(df, [x], metric, "median", _configs(r))
    _, fitted = THEORIES.get(theory).predict(data.inputs, data.column("center"))
    return fitted


@fit_time.plot("fit-time", "t_fit against sigma (log axis): median over seeds with the min-max band; dashed: "
                           "ln(1/sigma)/lambda + c with only c fitted.")
def _plot_fit(r: Results):
    fig, _ = phase_figure(_table(r, "fit-time"), x="init.scale", metric="fit_time", keys=["init.scale"],
                          theory="fit_time", configs=_configs(r))
    return fig


# -- success probability against the width (Lyu et al. 2021, Cor. 4.4) -------------------------

success = register(Experiment(
    id=f"{PAPER}/success-width",
    title="Probability of reaching the global-max-margin solution against the width",
    figure="Lyu et al. 2021, Cor. 4.4 (success probability 1 - 2^-(m-1))",
    description=(
        "The symmetric pair with m neurons, Gaussian init of scale 1e-3 (a_k and w_k independent), mean logistic "
        "loss, GD to t = 100. A run succeeds when the trained net's normalized margin exceeds "
        f"{SUCCESS_MARGIN:g}, midway between the most a net with one sign group can reach (alpha/2 = "
        f"{ONE_GROUP_MARGIN:g}) and the global max (1 + alpha)/4 = {GLOBAL_MARGIN:g} (Thm 4.2): a property of the "
        "trained state, not of the init, whose group masses are a fair coin too. Near the origin neuron k joins "
        "the group sign(a_k + <mu_bar, w_k>), a fair coin, so the run fails with probability 2 * 2^-m."),
    configs=_sweep("success-width"),
))


def _success_table(r: Results):
    """The sweep's table with ``success`` (the final normalized margin above ``SUCCESS_MARGIN``) and
    ``both_groups`` (both sign groups hold at least ``SUCCESS_MASS`` of ||theta||^2 at the end)."""
    df = _table(r, "success-width").copy()
    df["success"] = (df["final.normalized_margin"] > SUCCESS_MARGIN).astype(float)
    df["both_groups"] = (np.minimum(df["final.group_mass_pos"], df["final.group_mass_neg"]) >= SUCCESS_MASS).astype(float)
    return df


def _trained(success: bool) -> dict:
    """The final values of a trained run that reached the global max-margin direction, or stayed in one group."""
    return ({"group_mass_pos": 0.25, "group_mass_neg": 0.25, "normalized_margin": GLOBAL_MARGIN} if success else
            {"group_mass_pos": 0.5, "group_mass_neg": 0.0, "normalized_margin": ONE_GROUP_MARGIN})


def _coin_flip_masses(cfg, seed):
    """Half the seeds reach the global max margin, half stay in one group: success 1/2 at every m."""
    return _trained(seed % 2 == 0)


def _untrained(cfg, seed):
    """The state at initialization: both sign groups hold mass with the init's fair-coin odds (A+ and A- near 1/6
    each when both are present), but the net fits nothing yet (normalized margin near 0)."""
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], cfg["model"]["width"])
    both = bool((signs > 0).any() and (signs < 0).any())
    return {"group_mass_pos": 1 / 6 if both or signs[0] > 0 else 0.0,
            "group_mass_neg": 1 / 6 if both or signs[0] < 0 else 0.0, "normalized_margin": 0.01 * float(rng.normal())}


UNTRAINED = Synthetic("untrained", lambda configs: synthetic_sweep(configs, final=_untrained),
                      "the runs frozen at their initialization: sign groups with the same fair-coin odds, no margin")


def _success_decreasing(cfg, seed):
    """Success at seeds below 64 (1 - m/8): the fraction falls with the width m."""
    return _trained(seed < cfg["seeds"] * (1 - cfg["model"]["width"] / 8))


def _same_sign_init(cfg):
    # balanced init with every a_k(0) = +||w_k(0)|| (the width is the swept key, so the sign list follows it)
    cfg["init"] = {"kind": "balanced", "scale": cfg["init"]["scale"], "signs": [1] * cfg["model"]["width"]}


SAME_SIGN = Counterfactual(
    "same-sign-init", _each(_same_sign_init),
    "1 - 2^-(m-1) is the chance that a random init puts neurons in both groups (neuron k joins sign(a_k + "
    "<mu_bar, w_k>), a fair coin). With every a_k(0) = +||w_k(0)|| every neuron joins the + group: success 0 at "
    "every width.")


@success.claim("one-minus-two-to-the-one-minus-m",
               "At every width m >= 2 the predicted success probability 1 - 2^-(m-1) lies in the 99 % Wilson "
               "interval of the measured success fraction (m = 1 is one sign group by construction: see the tests); "
               f"success: the trained net's normalized margin exceeds {SUCCESS_MARGIN:g}, which no net with one "
               "sign group reaches",
               kind="prediction",
               tolerance_source="spread: the 99 % Wilson interval of a binomial fraction over the seeds of each width "
                                "(the margin threshold is derived: midway between alpha/2 and (1 + alpha)/4)",
               falsifiers=[Synthetic("coin-flip", lambda configs: synthetic_sweep(configs, final=_coin_flip_masses),
                                     "success 1/2 at every width"),
                           UNTRAINED, SAME_SIGN])
def _success_claim(r: Results) -> Check:
    df = _success_table(r)
    measured, outside, slacks = {}, [], []
    for m, group in df[df["model.width"] >= 2].groupby("model.width"):
        p, lo, hi = _wilson(group["success"].to_numpy(), WILSON_Z)
        predicted = 1 - 2.0 ** (-(m - 1))
        measured[int(m)] = round(p, 4)
        slacks.append(within(predicted, lo, hi).slack)
        if not lo - 1e-12 <= predicted <= hi + 1e-12:
            outside.append(f"m={m}: {predicted:.3f} not in [{lo:.3f}, {hi:.3f}]")
    seeds = int(df.groupby("model.width").size().min())
    agree = float(np.mean(df["success"] == df["both_groups"]))
    details = "; ".join([*outside, f"margins: {_margin_summary(df)}; both sign groups alive at the end in the same "
                         f"runs as success: {agree:.1%}"])
    # slack: how deep inside its interval the prediction lies (1 at the centre, 0 at an end), worst width
    return Check({int(m): round(1 - 2.0 ** (-(m - 1)), 4) for m in measured}, measured, not outside,
                 f"99% Wilson interval, {seeds} seeds per width", details, min(slacks))


def _margin_summary(df) -> str:
    q = df.groupby("model.width")["final.normalized_margin"].median()
    return ", ".join(f"m={int(m)} median {v:.3f}" for m, v in q.items())


def _wilson(v: np.ndarray, z: float) -> tuple[float, float, float]:
    n, p = v.size, float(np.mean(v))
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return p, center - half, center + half


@success.claim("success-grows-with-width",
               "The success fraction grows with the width: from one width to the next it falls by no more than "
               "sampling allows (when it falls, the two 99 % Wilson intervals overlap), and at the largest width it "
               "lies above the smallest width >= 2 beyond sampling (their 99 % Wilson intervals are disjoint)",
               kind="prediction",
               tolerance_source="spread: the 99 % Wilson interval of a binomial fraction over the seeds of each width, "
                                "in place of the former 0.1 allowed per step and 0.9 at the largest width",
               falsifiers=[Synthetic("decreasing", lambda configs: synthetic_sweep(configs, final=_success_decreasing),
                                     "the success fraction falls from 1 to 1/4 as m grows"),
                           UNTRAINED, SAME_SIGN])
def _success_grows(r: Results) -> Check:
    df = _success_table(r)
    bands = {int(m): _wilson(g["success"].to_numpy(), WILSON_Z)
             for m, g in df[df["model.width"] >= 2].groupby("model.width")}
    widths = sorted(bands)
    # a fall between consecutive widths is sampling only while the later interval's top reaches the earlier's bottom
    falls = [bands[b][2] - bands[a][1] for a, b in zip(widths, widths[1:])]
    low, high = bands[widths[0]], bands[widths[-1]]
    gain = high[1] - low[2]  # > 0: the largest width's interval lies above the smallest's
    return all_of(at_least(min(falls), 0.0, details="worst step: the later 99 % Wilson top minus the earlier bottom"),
                  at_least(gain, 0.0, details=f"m = {widths[-1]}'s Wilson bottom minus m = {widths[0]}'s top"),
                  details="fractions " + ", ".join(f"m={m}: {bands[m][0]:.3f} [{bands[m][1]:.3f}, {bands[m][2]:.3f}]"
                                                   for m in widths))


@success.plot("success", "Success fraction against the width (Wilson 95 % band over seeds); dashed: 1 - 2^-(m-1).")
def _plot_success(r: Results):
    fig, _ = phase_figure(_success_table(r), x="model.width", metric="success", keys=["model.width"], agg="fraction",
                          theory="success_probability", configs=_configs(r))
    return fig


# -- alignment time against separability and sample size (Min et al. 2024) -------------------------

SWEEPS["alignment-time"] = {
    scale: {
        "name": f"{PAPER}-alignment-time-{scale}",
        "base": {
            "data": {"kind": "separable_cap", "n": 8, "d": d, "mu": 0.35, "seed": 1},
            "model": {"kind": "two_layer", "activation": "relu", "width": 50},
            "init": {"kind": "balanced", "scale": 1e-14}, "loss": {"kind": "exponential", "reduction": "mean"},
            "train": {"method": "gd", "lr": 2e-3, "time": 20.0},
            "observe": {"schedule": "log", "points": 150, "metrics": ["cone", "v", "loss"]},
        },
        "grid": {"data.mu": mus, "data.n": ns}, "seeds": seeds,
    }
    for scale, d, mus, ns, seeds in (("quick", 10, [0.15, 0.35, 0.7], [8, 32], 4),
                                     ("paper", 20, [0.05, 0.1, 0.2, 0.4, 0.7], [8, 16, 32, 64, 128], 8))
}

alignment = register(Experiment(
    id=f"{PAPER}/alignment-time",
    title="Alignment time t1 against the separability mu and the sample size n",
    figure="Min et al. 2024, Theorem 1 (t1 = O(log n / sqrt(mu)))",
    description=(
        "separable_cap data (unit norms) over a grid of mu and n, ReLU width 50, balanced init 1e-14, exponential "
        "loss with mean reduction, GD lr 2e-3 to t = 20. t1 (event t1) is the first time every neuron with v_j > 0 "
        "is in S+ or S_dead and every neuron with v_j < 0 in S- or S_dead. Theorem 1 bounds t1 by 16 log n / (min{zeta, xi} sqrt(mu) X_min) in sum-loss time (n times "
        "longer in mean-loss time); the overlay fits the constant C of C log(n)/sqrt(mu) with mu measured on the "
        "data (Assumption 1) and reports the fitted log-log slope against it (1 if the bound's form were tight). "
        "The bound is loose in n: in these runs t1 (mean-loss time) does not grow like n log n, so the claim "
        "checks only the mu dependence."),
    configs=_sweep("alignment-time"),
))


def _gaussian_init(cfg):
    cfg["init"] = {"kind": "gaussian", "scale": cfg["init"]["scale"]}


def _moderate_init(cfg):
    cfg["init"] = {**cfg["init"], "scale": 0.1}


def _leaky(cfg):
    cfg["model"] = {**cfg["model"], "activation": {"name": "leaky_relu", "slope": 0.2}}


BALANCED_INIT = Premise(
    "balanced-init", _each(_gaussian_init),
    "the same scale, Gaussian instead of balanced (|v_j| != ||w_j||): a neuron's direction moves at |v_j|/||w_j|| "
    "times eq. 4's speed and v_j can change sign, so the alignment time no longer follows the data's mu (measured: "
    "the median t1 grows from mu = 0.35 to 0.7 at n = 32)",
    source="Theorem 1: balanced initialization, v_j(0) = +-||w_j(0)||")


@alignment.claim("t1-decreases-with-mu",
                 "At every n, the median t1 over seeds decreases as the separability mu grows (Theorem 1: "
                 "t1 = O(log n / sqrt(mu)))",
                 kind="prediction", tolerance_source="none: an order",
                 falsifiers=[Synthetic("t1-grows-with-mu", lambda configs: synthetic_sweep(
                                 configs, events=lambda cfg, s: {"t1": 10.0 * math.sqrt(cfg["data"]["mu"]) + 0.01 * s}),
                                       "t1 = 10 sqrt(mu): slower alignment on better separated data"),
                             BALANCED_INIT,
                             Premise("small-init", _each(_moderate_init),
                                     "init scale 0.1 instead of 1e-14 (measured: t1 still falls with mu, exponents "
                                     "-0.16 and -0.42; from 0.5 the aligned state is not reached at all)",
                                     source="Theorem 1: eps = O(exp(-n log n / sqrt(mu)) / sqrt(h))", holds=True),
                             Premise("relu", _each(_leaky),
                                     "Leaky ReLU (slope 0.2) instead of ReLU (measured: t1 still falls with mu, "
                                     "exponents -0.24 and -0.32)",
                                     source="Theorem 1: the ReLU activation", holds=True)])
def _t1_mu(r: Results) -> Check:
    df = _table(r, "alignment-time")
    med = df.groupby(["data.n", "data.mu"])["event.t1"].median().unstack("data.n")  # rows: mu
    checks = [monotone(med[n].to_numpy(), "decreasing") for n in med.columns]
    exps = {int(n): float(np.polyfit(np.log(med.index.to_numpy(float)), np.log(med[n].to_numpy()), 1)[0])
            for n in med.columns}
    return all_of(*checks, details="fitted exponent of t1 in mu per n: "
                  + ", ".join(f"n={n}: {e:.2f}" for n, e in exps.items()) + " (the bound's -1/2 is an upper-bound rate)")


@alignment.plot("t1-lines", "t1 against mu (log axis), one line per n: median over seeds with the min-max band; "
                            "dashed: C log(n)/sqrt(mu) (mean-loss time, so times n) with C fitted per n.")
def _plot_t1_lines(r: Results):
    fig, _ = phase_figure(_table(r, "alignment-time"), x="data.mu", metric="t1", keys=["data.mu", "data.n"],
                          theory="alignment_time", configs=_configs(r))
    return fig


@alignment.plot("t1-heatmap", "Median t1 over (mu, n); dashed contours: the fitted C log(n)/sqrt(mu) law.")
def _plot_t1_heatmap(r: Results):
    fig, _ = phase_figure(_table(r, "alignment-time"), x="data.mu", y="data.n", metric="t1",
                          keys=["data.mu", "data.n"], theory="alignment_time", configs=_configs(r))
    return fig


# -- Hermite transition times against the target rank r (multi-index paper) ------------------------

SWEEPS["transitions-r"] = {
    scale: {
        "name": f"{PAPER}-transitions-r-{scale}",
        "base": {
            "data": {"kind": "multi_index", "d": d, "r": 4, "n": 200, "n_test": 200, "activation": "abs"},
            "model": {"kind": "mean_field", "activation": "abs", "width": m},
            "init": {"kind": "standard"}, "loss": {"kind": "square", "reduction": "mean"}, "objective": "population",
            "train": {"method": "gd", "lr": 0.02, "time": time},
            "observe": {"schedule": "log", "points": 100,
                        "metrics": ["loss_population", "loss_order", "loss_order_4plus", "energies"]},
        },
        "grid": {"data.r": rs}, "seeds": seeds,
    }
    for scale, d, m, rs, time, seeds in (("quick", 24, 48, [2, 4, 6, 8], 60.0, 2),
                                         ("paper", 100, 250, [5, 10, 15, 20], 150.0, 3))
}

transitions = register(Experiment(
    id=f"{PAPER}/transitions-r",
    title="Hermite transition times against the target rank r",
    figure="multi-index paper, Stages 1-2 (T_11 = O(log r / r), T_2 - T_1 = O(r / log m))",
    description=(
        "Mean-field |x| network (width m) on the orthogonal multi-index target with exact population GD, lr 0.02, "
        "over the rank r. tau_0, tau_2, tau_4+ (event hermite_transitions) are the first times the loss of "
        "Hermite order 0, 2 and >= 4 falls below 10 % of its energy. The theory orders them tau_0 < tau_2 < tau_4+ "
        "and has the last stage last O(r / log m); the overlay fits C r / log m and reports the log-log slope "
        "(large finite-size corrections are expected at these sizes, spec 002 §4)."),
    configs=_sweep("transitions-r"),
))


def _heavy_weight_decay(cfg):
    # lambda = r lambda_0 with lambda_0 = 1 > sigma_hat_0^2 = 2/pi (Prop. C.12 assumes 0 < lambda_0 < sigma_hat_0^2)
    cfg["train"] = {**cfg["train"], "weight_decay": float(cfg["data"]["r"])}


def _out_of_order(cfg, seed):
    r = cfg["data"]["r"]
    return {"tau_order0": 0.1, "tau_order2": 5.0 * r, "tau_order4plus": 2.0 * r}


@transitions.claim("hermite-order",
                   "At every r and seed the transitions happen in Hermite order, tau_0 < tau_2 < tau_4+, and the "
                   "median tau_4+ grows with r",
                   kind="prediction", tolerance_source="none: an order",
                   falsifiers=[Synthetic("order-4-first", lambda configs: synthetic_sweep(configs, events=_out_of_order),
                                         "the order->=4 component is learned before the order-2 one"),
                               Counterfactual("weight-decay-above-sigma0", _each(_heavy_weight_decay),
                                              "With lambda_0 = 1 > sigma_hat_0^2 = 2/pi the decay holds the mass far "
                                              "below r (Stage 1.1 alone: alpha_eq = r (1 - lambda_0 / (2 sigma_hat_0^2)) "
                                              "= 0.21 r), so L_0 stays at 37-54 % of E_0 (quick) and tau_0, and every "
                                              "transition after it, never happens")])
def _transitions_order(r: Results) -> Check:
    df = _table(r, "transitions-r")
    t0, t2, t4 = (df[f"event.tau_{k}"].to_numpy(float) for k in ("order0", "order2", "order4plus"))
    ordered_ok = bool(np.all(np.isfinite(t4)) and np.all(t0 < t2) and np.all(t2 < t4))
    med = df.groupby("data.r")["event.tau_order4plus"].median()
    grows = monotone(med.to_numpy(), "increasing")
    slope = float(np.polyfit(np.log(med.index.to_numpy(float)), np.log(med.to_numpy()), 1)[0])
    per_row = [ordered({"tau_0": a, "tau_2": b, "tau_4+": c}, ["tau_0", "tau_2", "tau_4+"]) for a, b, c in zip(t0, t2, t4)]
    order = Check("tau_0 < tau_2 < tau_4+", f"{int(np.sum((t0 < t2) & (t2 < t4)))} of {len(df)} in order",
                  ordered_ok, slack=min(c.slack for c in per_row))
    return all_of(order, grows, details=f"log-log slope of median tau_4+ in r: {slope:.2f} (theory: 1 at fixed m)")


@transitions.plot("tau4-vs-r", "tau_4+ against r: median over seeds with the min-max band; dashed: C r / log m, "
                               "C fitted.")
def _plot_tau4(r: Results):
    fig, _ = phase_figure(_table(r, "transitions-r"), x="data.r", metric="tau_order4plus", keys=["data.r"],
                          theory="transition_time", configs=_configs(r))
    return fig
