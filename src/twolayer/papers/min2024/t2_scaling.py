"""Theorem 1's fitting time t2 = Theta((1/n) log(1/(sqrt(h) eps))) over eps and n (issue 26, section 2).

Balanced init over ten decades of eps (1e-3 to 1e-13; the paper scale twelve, to 1e-15), random separable data
(``separable_cap``, mu >= 0.35) at several n, exp loss with sum reduction (the theory's time), GD lr 1e-3. After the
alignment the S+ (S-) neurons grow like ||w_j||^2 ~ e^{2 ||x+|| t} and f_+ ~ sum_j ||w_j||^2 reaches 1/4 from eps^2,
so t2 = t2^+ v t2^- is affine in ln(1/eps) with slope 1/min(||x+||, ||x-||): the theorem's (1/n) log(1/eps), with n
entering through ||x+-|| ~ n+- sqrt(mu). Theorem 1 is stated for eps <= e^-2067, which no float reaches: these are
empirical extrapolations of the theorem to the representable scales.
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import all_of, at_most, close_to, within
from twolayer.claims.falsifiers import Counterfactual, Premise, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.min2024._shared import COMMON, PAPER, data_of, synthetic
from twolayer.plotting import panels
from twolayer.theory import alignment as th

EPS = {"quick": (1e-3, 1e-5, 1e-7, 1e-9, 1e-11, 1e-13), "paper": (1e-3, 1e-4, 1e-5, 1e-7, 1e-9, 1e-11, 1e-13, 1e-15)}
NS = {"quick": (8, 32), "paper": (8, 16, 32, 64)}
SEEDS = {"quick": 3, "paper": 6}
LR, TIME, MU, D = 1e-3, 24.0, 0.35, 10
SLOPE_RTOL = 0.05  # the affine law's slope against 1/min ||x+-||: 5 % for the alignment phase folded into the offset
EPS_NOTE = ("Theorem 1 is stated for eps <= e^-2067, unreachable in floats: an empirical extrapolation of the theorem "
            "to eps = 1e-3 ... 1e-13")


def key_of(n: int, eps: float) -> str:
    return f"n{n}-eps{eps:g}"


def t2_configs(scale: str) -> dict:
    return {key_of(n, eps): {
        "seeds": SEEDS[scale], "model": COMMON["model"], "data": {"kind": "separable_cap", "n": n, "d": D, "mu": MU, "seed": 1},
        "init": {"kind": "balanced", "scale": eps}, "loss": {"kind": "exponential", "reduction": "sum"},
        "train": {"method": "gd", "lr": LR, "time": TIME},
        "observe": {"schedule": "log", "points": 200, "metrics": ["loss", "cone", "v", "subnet_fit"]}}
        for n in NS[scale] for eps in EPS[scale]}


t2_scaling = register(Experiment(
    id=f"{PAPER}/t2-scaling", title="Theorem 1's fitting time t2 over eps and n",
    figure="Theorem 1, t2 = Theta((1/n) log(1/(sqrt(h) eps)))",
    description=("separable_cap data (d = 10, target mu 0.35, data seed 1) at n = 8 and 32 (paper: 8, 16, 32, 64), "
                 "balanced init eps = 1e-3 ... 1e-13 (paper: to 1e-15), h = 50, exp loss with sum reduction, GD lr 1e-3 "
                 "to t = 24. t2 = max(t2+, t2-), t2+- the first time the S+- subnetwork's output exceeds 1/4 on its "
                 "class (the summary's event). " + EPS_NOTE + "."),
    configs=t2_configs))


def table(r: Results) -> dict[int, dict]:
    """Per n: the eps values, t2 per seed [eps, S] (NaN where never), the predicted slope 1/min(||x+||, ||x-||)."""
    out: dict[int, dict] = {}
    for key, run in r.runs.items():
        X, y = data_of(run)
        n = X.shape[0]
        xp, xn = th.class_sums(X, y)
        row = out.setdefault(n, {"eps": [], "t2": [], "predicted": 1 / min(np.linalg.norm(xp), np.linalg.norm(xn)),
                                 "n_min": int(min(np.sum(y > 0), np.sum(y < 0)))})
        row["eps"].append(float(run.config["init"]["scale"]))
        row["t2"].append([math.nan if v is None else float(v) for v in np.atleast_1d(run.summary["events"]["t2"])])
    for row in out.values():
        order = np.argsort(row["eps"])[::-1]
        row["eps"] = np.asarray(row["eps"])[order]
        row["t2"] = np.asarray(row["t2"], dtype=float)[order]
    return out


def slope_fit(eps, t2) -> tuple[float, float, float]:
    """Least squares t2 = a + b ln(1/eps) over every seed: (b, its 95 % half-width, the largest residual over the
    t2 range)."""
    from scipy import stats

    x = np.repeat(np.log(1 / np.asarray(eps)), t2.shape[1])
    yv = t2.reshape(-1)
    A = np.stack([np.ones_like(x), x], axis=1)
    coef = np.linalg.lstsq(A, yv, rcond=None)[0]
    res = yv - A @ coef
    dof = len(yv) - 2
    se = math.sqrt(float(np.sum(res**2)) / dof * float(np.linalg.inv(A.T @ A)[1, 1])) if dof > 0 else math.inf
    return float(coef[1]), float(stats.t.ppf(0.975, dof) * se) if dof > 0 else math.inf, \
        float(np.max(np.abs(res)) / max(np.ptp(yv), 1e-300))


def _t2_like(configs, *, slope: float = 1.0, power: float = 1.0, same_slope: bool = False):
    """Synthetic runs whose t2 follows the law times ``slope`` (and ln(1/eps)^``power``); ``same_slope``: the slope
    of n = 8 at every n (no 1/n)."""
    out = {}
    for key, cfg in configs.items():
        X, y = data_of(cfg)
        xp, xn = th.class_sums(X, y)
        b = slope / min(np.linalg.norm(xp), np.linalg.norm(xn)) if not same_slope else 0.54 * slope
        S = cfg["seeds"]
        t2 = 0.3 + b * math.log(1 / cfg["init"]["scale"]) ** power / math.log(1e3) ** (power - 1)
        out[key] = synthetic(cfg, [0.0, t2], name=f"synthetic-{key}", summary={"events": {"t2": [t2] * S}},
                             loss=np.ones((S, 2)))
    return out


LOGISTIC = Premise(
    "exp-loss", lambda configs: {k: {**c, "loss": {"kind": "logistic", "reduction": "sum"}, "seeds": 2}
                                 for k, c in configs.items() if k.startswith(f"n{max(NS['quick'])}-")
                                 and c["init"]["scale"] in (1e-3, 1e-7, 1e-11)},
    "the logistic loss in place of the exponential (n = 32, three eps): its slope at 0 is 1/2, so the residuals "
    "r_i = y_i/2 halve every growth rate and t2's slope in ln(1/eps) doubles",
    source="Theorem 1: the exponential loss (the theorem's loss; its rate constants use l'(0) = -1)")


@t2_scaling.claim("t2-log-eps",
                  "Theorem 1: t2 = Theta((1/n) log(1/(sqrt(h) eps))): at every n, t2 over every seed is affine in "
                  "ln(1/eps) over its eps range (ten decades quick, twelve at paper scale: 1e-3 ... 1e-15; largest "
                  "residual <= 5 % of the t2 range) and its slope, with its 95 % "
                  "interval, equals 1/min(||x+||, ||x-||) (the growth rate of the S+- subnetworks after the alignment; "
                  "||x+-|| ~ n+- sqrt(mu) is how n enters) to within 5 %. " + EPS_NOTE,
                  kind="prediction", tolerance_source="derived: the linearized growth e^{2 ||x+-|| t}; 5 % for the "
                                                      "alignment phase folded into the offset, plus the fit's interval",
                  falsifiers=[Synthetic("slow", lambda c: _t2_like(c, slope=1.3), "t2's slope 30 % above the law"),
                              Synthetic("curved", lambda c: _t2_like(c, power=2.0), "t2 ~ ln(1/eps)^2"), LOGISTIC])
def _log_eps(r: Results):
    rows = table(r)
    checks, parts = [], []
    for n, row in sorted(rows.items()):
        if np.any(np.isnan(row["t2"])):
            return at_most(float(np.mean(np.isnan(row["t2"]))), 0.0,
                           details=f"n = {n}: fraction of (eps, seed) runs that never reached t2 (the run is too short)")
        b, half, resid = slope_fit(row["eps"], row["t2"])
        ratio = b / row["predicted"]
        allowed = SLOPE_RTOL + half / row["predicted"]
        checks += [within(ratio, 1 - allowed, 1 + allowed), at_most(resid, 0.05)]
        parts.append(f"n = {n}: slope {b:.4g} +- {half:.2g} vs 1/min||x+-|| = {row['predicted']:.4g} (ratio "
                     f"{ratio:.4f}); largest residual {resid:.3g} of the range; eps {row['eps'][0]:g} ... "
                     f"{row['eps'][-1]:g}")
    return all_of(*checks, details="; ".join(parts))


def _mean_time(configs):
    out = {}
    for k, c in configs.items():
        if c["init"]["scale"] in (1e-3, 1e-7, 1e-11):
            n = c["data"]["n"]
            out[k] = {**c, "seeds": 2, "loss": {"kind": "exponential", "reduction": "mean"},
                      "train": {**c["train"], "lr": LR * n, "time": TIME * n}}
    return out


def exponent_fit(n_min, slopes, half_widths=None) -> tuple[float, float, float]:
    """q of slopes ~ n_min^-q by least squares in log-log: (q, the error propagated from the slopes' relative errors
    (each moves ln slope by at most hw / slope + SLOPE_RTOL, t2-log-eps's allowance of a slope against the law, and
    the fitted q by sum_i |w_i| (hw_i / slope_i + SLOPE_RTOL), w_i = (x_i - x_bar) / sum (x - x_bar)^2, x = ln n_min;
    0 without half-widths), the regression's own 95 % half-width (inf with 2 points))."""
    from scipy import stats

    x, y = np.log(np.asarray(n_min, dtype=float)), np.log(np.maximum(np.asarray(slopes, dtype=float), 1e-300))
    fit = stats.linregress(x, y)
    w = (x - x.mean()) / np.sum((x - x.mean()) ** 2)
    rel = np.zeros_like(x) if half_widths is None else np.asarray(half_widths) / np.exp(y) + SLOPE_RTOL
    spread = float(stats.t.ppf(0.975, len(x) - 2) * fit.stderr) if len(x) > 2 else math.inf
    return -float(fit.slope), float(np.sum(np.abs(w) * rel)), spread


@t2_scaling.claim("t2-n-exponent",
                  "Theorem 1's 1/n: the fitted slopes of t2 in ln(1/eps) fall with the class size like n_min^-q, n_min = "
                  "min(n+, n-) (the theorem's n for balanced classes), with the exponent the theorem's rate gives on "
                  "these data: q equals q_geo, the exponent of 1/min(||x+||, ||x-||) over the same n (1 up to how the "
                  "data's geometry, its mu and mean correlation, changes with n), within the error the slopes' "
                  "allowances propagate; q's own 95 % interval and its distance to 1 are reported. " + EPS_NOTE,
                  kind="prediction",
                  tolerance_source="derived: each slope's error against the law (its 95 % half-width plus "
                                   "t2-log-eps's 5 %) propagated through the log-log least squares, in place of the "
                                   "exploratory q in [0.8, 1.2]. Paper scale (n = 8 ... 64): q = 0.970 (regression "
                                   "interval +-0.043: 1 inside), q_geo = 0.974",
                  falsifiers=[Synthetic("no-1-over-n", lambda c: _t2_like(c, same_slope=True), "the same slope at every n"),
                              Counterfactual("mean-loss-time", _mean_time,
                                             "the mean loss (time n x the sum loss's; lr and the horizon n x larger, "
                                             "the same steps): the 1/n of the sum over samples is gone, q ~ 0")],
                  premises=[Premise("balanced-init", lambda configs: {
                      k: {**c, "init": {**c["init"], "kind": "gaussian"}, "seeds": 2} for k, c in configs.items()},
                      "a Gaussian init of the same scales (nothing else changed, 2 seeds): t2 still grows like "
                      "ln(1/eps) / min(||x+||, ||x-||), so q follows q_geo (measured: slopes 0.5394 and 0.0734 "
                      "against 0.5389 and 0.0729, q = 0.959 against q_geo 0.962)",
                      source="Theorem 1 / eq. 3: balanced initialization, v_j(0) = +-||w_j(0)||", holds=True)])
def _n_exponent(r: Results):
    rows = table(r)
    ns = sorted(rows)
    if len(ns) < 2:
        return close_to(math.nan, 1.0, atol=math.nan, details=f"needs at least two n, got {ns}")
    fits = [slope_fit(rows[n]["eps"], rows[n]["t2"]) for n in ns]
    slopes, hws = [f[0] for f in fits], [f[1] for f in fits]
    nmin = [rows[n]["n_min"] for n in ns]
    predicted = [float(rows[n]["predicted"]) for n in ns]
    q, allowance, spread = exponent_fit(nmin, slopes, hws)  # a flat t2 (slope <= 0) gives no q near q_geo
    q_geo = exponent_fit(nmin, predicted)[0]
    return close_to(q, q_geo, atol=allowance,
                    details=f"n {ns}, n_min {nmin}, slopes {np.round(slopes, 4).tolist()} (95 % half-widths "
                            f"{np.round(hws, 5).tolist()}), predicted 1/min||x+-|| {np.round(predicted, 4).tolist()}; q = "
                            f"{q:.4f} +- {allowance:.3g} (propagated), regression 95 % half-width {spread:.3g}, q_geo = "
                            f"{q_geo:.4f}, |q - 1| = {abs(q - 1):.3f}")


@t2_scaling.plot("t2", "t2 (sum time; dots: seeds) against ln(1/eps) for each n, with the law t2 = a + ln(1/eps) / "
                       "min(||x+||, ||x-||) (dashed, a fitted).")
def _plot(r: Results):
    fig, (ax,) = panels(1, width=4.2, height=3.2)
    for idx, (n, row) in enumerate(sorted(table(r).items())):
        x = np.log(1 / row["eps"])
        for s in range(row["t2"].shape[1]):
            ax.plot(x, row["t2"][:, s], "o", ms=3, color=f"C{idx}", label=f"n = {n}" if s == 0 else None)
        a = float(np.nanmean(row["t2"] - row["predicted"] * x[:, None]))
        ax.plot(x, a + row["predicted"] * x, "--", color=f"C{idx}", lw=0.8)
    ax.set(xlabel="ln(1/eps)", ylabel="t2 (sum time)", title="Theorem 1's t2")
    ax.legend(fontsize=7)
    return fig
