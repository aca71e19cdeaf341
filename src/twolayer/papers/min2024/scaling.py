"""Beyond the paper: the alignment time t1 on random separable data (``separable_cap``) over a grid
of mu and n, against Theorem 1's t1 = 16 log n / (min{zeta, xi} sqrt(mu) X_min)."""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import all_of, at_most, bound, holds, within
from twolayer.claims.falsifiers import Premise, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.min2024._shared import COMMON, PAPER, THEOREM1_EPS, data_of, reported, synthetic
from twolayer.plotting import panels
from twolayer.theory import alignment as th

GRID = {"quick": dict(mus=(0.15, 0.35, 0.7), ns=(8, 32), seeds=4, d=10),
        "paper": dict(mus=(0.05, 0.1, 0.2, 0.4, 0.7), ns=(8, 16, 32, 64, 128), seeds=8, d=20)}
EPS, LR, TIME = 1e-14, 2e-3, 20.0


def key_of(mu, n):
    return f"mu{mu:g}-n{n}"


def scaling_configs(scale: str) -> dict:
    s = GRID[scale]
    return {key_of(mu, n): {
        "seeds": s["seeds"], "model": COMMON["model"],
        "data": {"kind": "separable_cap", "n": n, "d": s["d"], "mu": mu, "seed": 1},
        "init": {"kind": "balanced", "scale": EPS}, "loss": {"kind": "exponential", "reduction": "mean"},
        "train": {"method": "gd", "lr": LR, "time": TIME},
        "observe": {"schedule": "log", "points": 150, "metrics": ["cone", "v", "w_norm", "loss"]}}
        for mu in s["mus"] for n in s["ns"]}


scaling = register(Experiment(
    id=f"{PAPER}/alignment-scaling", title="Alignment time t1 against mu and n (beyond the paper)",
    figure="Theorem 1, t1 = O(log n / sqrt(mu))",
    description=("separable_cap data (unit norms, d = 10 quick / 20 paper) over a grid of target mu and n (the measured mu "
                 "of each data set is at least its target), balanced init 1e-14, exp loss with mean reduction, GD lr 2e-3; "
                 "t1 = first time every V+ neuron is in S+ u S_dead and every V- in S- u S_dead, reported in sum time "
                 "(t / n). The law t1 ~ mu^-b (one intercept per n) is fitted by least squares, for the measured t1 and "
                 "for the theorem's bound."),
    configs=scaling_configs))


def _median(x) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.median(x[~np.isnan(x)])) if np.any(~np.isnan(x)) else math.nan


def table(r: Results):
    rows = []
    for key, run in r.runs.items():
        X, y = data_of(run)
        mu, n = th.separability(X, y), X.shape[0]
        t1 = np.array([np.nan if x is None else x for x in np.atleast_1d(run.summary["events"]["t1"])], dtype=float)
        tg = np.array([np.inf if x is None else x for x in np.atleast_1d(run.summary["events"]["norm_growth"])], dtype=float)
        m = min(th.zeta1(X, y), th.xi(X, y).value)
        limit = 16 * math.log(n) / (m * math.sqrt(mu) * np.linalg.norm(X, axis=1).min())
        rows.append(dict(key=key, mu=mu, n=n, bound=limit, t1=_median(th.sum_time(t1, n=n, reduction="mean")),
                         growth=_median(th.sum_time(tg, n=n, reduction="mean")), missing=int(np.sum(np.isnan(t1)))))
    return rows


def _table(r: Results):
    return r.memo("table", lambda: table(r))


def mu_exponent(rows, value: str) -> float:
    """b of the least-squares law log(value) = c_n - b log(mu) (one intercept per n)."""
    ns = sorted({x["n"] for x in rows})
    A = np.array([[-math.log(x["mu"])] + [float(x["n"] == n) for n in ns] for x in rows])
    return float(np.linalg.lstsq(A, np.log([x[value] for x in rows]), rcond=None)[0][0])


def _scaling_like(configs, *, law: float = 0.3, growth_first: bool = False, missing: bool = False, times: float = 1.0):
    """Synthetic grid runs whose t1 (sum time) is times * log(n) mu^-law / 20 per seed; growth at 10x t1
    (or at t1 / 2 with ``growth_first``); ``missing``: one seed never aligns."""
    out = {}
    for key, cfg in configs.items():
        X, y = data_of(cfg)
        mu, n = th.separability(X, y), X.shape[0]
        S = cfg["seeds"]
        t1 = times * math.log(n) * mu ** -law / 20 * n  # run time (mean loss: sum time x n)
        ev = {"t1": [None if missing and s == 0 else t1 for s in range(S)],
              "norm_growth": [t1 / 2 if growth_first else 10 * t1] * S}
        out[key] = synthetic(cfg, [0.0, t1], name=f"synthetic-{key}", summary={"events": ev},
                             loss=np.ones((S, 2)))
    return out


def _defect(**kw):
    return lambda configs: _scaling_like(configs, **kw)


BALANCED_INIT = Premise(
    "balanced-init", lambda configs: {k: {**c, "init": {"kind": "gaussian", "scale": c["init"]["scale"]}}
                                      for k, c in configs.items()},
    "the same grid, seeds and scale 1e-14, Gaussian instead of balanced (nothing else changed): a neuron's direction "
    "moves at |v_j|/||w_j|| times eq. 4's speed, a factor drawn per neuron, and v_j can change sign, so t1 is set by "
    "the slowest factor, not by the data's mu (measured: the median t1 at n = 32 grows from mu = 0.35 to 0.7, 0.340 "
    "-> 0.367; the fitted exponent is 0.26 +- 0.35, against 0.50 +- 0.14 balanced)",
    source="Theorem 1 / eq. 3: balanced initialization, v_j(0) = +-||w_j(0)||")


@scaling.claim("t1-before-growth",
               "Every grid point aligns (t1 observed for every seed) before the norms grow (t1 < norm-growth "
               "onset)" + THEOREM1_EPS,
               kind="prediction", tolerance_source="none: an order of two events",
               falsifiers=[Synthetic("growth-first", _defect(growth_first=True), "the norms grow at t1 / 2"),
                           Synthetic("never-aligns", _defect(missing=True), "one seed per grid point never aligns")],
               premises=[Premise("small-init", lambda configs: {k: {**c, "seeds": 2, "init": {**c["init"], "scale": 1e-2}}
                                                                for k, c in configs.items()},
                                 "balanced init 1e-2 instead of 1e-14 (nothing else changed): t1 is still reached, but "
                                 "at the smallest mu and n the norms grow half-way to O(1) before it",
                                 source="Theorem 1: a small initialization scale eps")])
def _before_growth(r: Results):
    rows = _table(r)
    missing = sum(x["missing"] for x in rows)
    gaps = [(x["growth"] - x["t1"]) / x["growth"] if math.isfinite(x["growth"]) else 1.0 for x in rows]
    late = [x["key"] for x, g in zip(rows, gaps) if not g > 0]
    return holds(missing == 0 and not late, "t1 observed and before growth",
                 {"seeds without t1": missing, "grid points aligned after growth": late or "none"},
                 slack=-math.inf if missing else min(gaps))


@scaling.claim("t1-ordered-in-mu",
               "P11 on random data: at each n, the measured t1 (median over seeds) decreases strictly as the measured "
               "separability mu grows" + THEOREM1_EPS,
               kind="prediction", tolerance_source="none: an order",
               falsifiers=[Synthetic("increasing", _defect(law=-0.5), "t1 ~ mu^0.5: slower at larger mu")],
               premises=[BALANCED_INIT])
def _ordered(r: Results):
    seen = {}
    for x in sorted(_table(r), key=lambda x: x["mu"]):
        seen.setdefault(x["n"], []).append(float(x["t1"]))
    gaps = [(a - b) / a for v in seen.values() for a, b in zip(v, v[1:])]
    ok = bool(gaps) and all(g > 0 for g in gaps)
    return holds(ok, "decreasing in mu at every n", {f"n={n}": np.round(v, 4).tolist() for n, v in seen.items()},
                 slack=min(gaps) if gaps else None, details="mu increasing")


def mu_exponent_ci(r: Results) -> tuple[float, float, int]:
    """b of the least-squares law log t1 = c_n - b log(mu) over every seed of every grid point (one intercept per
    n), its 95 % half-width (Student t, from the residuals) and the number of points."""
    from scipy import stats

    xs, ys, ns = [], [], []
    for run in r.runs.values():
        X, y = data_of(run)
        mu, n = th.separability(X, y), X.shape[0]
        for t1 in np.atleast_1d(run.summary["events"]["t1"]):
            if t1 is not None and math.isfinite(float(t1)) and float(t1) > 0:
                xs.append(-math.log(mu))
                ys.append(math.log(float(th.sum_time(float(t1), n=n, reduction="mean"))))
                ns.append(n)
    levels = sorted(set(ns))
    A = np.array([[x] + [float(m == u) for u in levels] for x, m in zip(xs, ns)])
    dof = len(ys) - A.shape[1]
    if dof < 2:
        return math.nan, math.inf, len(ys)
    coef = np.linalg.lstsq(A, np.asarray(ys), rcond=None)[0]
    s2 = float(np.sum((np.asarray(ys) - A @ coef) ** 2)) / dof
    se = math.sqrt(s2 * float(np.linalg.inv(A.T @ A)[0, 0]))
    return float(coef[0]), float(stats.t.ppf(0.975, dof) * se), len(ys)


CI_HALF_WIDTH = 0.15  # "narrow": the exponent known to +-0.15 (95 %), a third of the headline 1/2


@scaling.claim("t1-mu-exponent",
               "Theorem 1's scaling, as an empirical extrapolation (the theorem needs eps <= e^-2067): fitting log t1 = "
               "c_n - b log(mu) over every seed and grid point gives an exponent b whose 95 % interval is narrow "
               "(half-width <= 0.15) and lies inside (0, b_bound], b_bound the same fit of the theorem's bound 16 log "
               "n/(min{zeta, xi} sqrt(mu) X_min) on the same data: t1 grows as mu falls, no faster than the theorem "
               "allows; the paper's headline O(log n/sqrt(mu)) is b = 1/2 (reported beside it)",
               kind="prediction", tolerance_source="spread: the 95 % interval of the fit over the seeds and grid points",
               falsifiers=[Synthetic("steep", _defect(law=3.0), "t1 ~ mu^-3"), Synthetic("inverted", _defect(law=-0.3),
                                                                                           "t1 ~ mu^0.3")],
               premises=[BALANCED_INIT])
def _exponent(r: Results):
    rows = _table(r)
    if any(not math.isfinite(x["t1"]) for x in rows):
        return holds(False, "t1 at every grid point", [x["key"] for x in rows if not math.isfinite(x["t1"])])
    b, half, n = mu_exponent_ci(r)
    b_bound = mu_exponent(rows, "bound")
    return all_of(within([b - half, b + half], 0.0, b_bound), at_most(half, CI_HALF_WIDTH),
                  details=(f"b = {b:.3g} +- {half:.3g} (95 %, {n} seed-points; the paper's headline 1/2 is "
                           f"{abs(b - 0.5) / max(half, 1e-12):.2g} half-widths away); b_bound = {b_bound:.3g}"))


@scaling.claim("t1-below-bound",
               "Theorem 1: measured t1 <= 16 log n / (min{zeta, xi} sqrt(mu) X_min) (sum time; zeta1 and a Monte-Carlo "
               "xi, both >= the exact constants, so the bound used is never looser than the theorem's)" + THEOREM1_EPS,
               kind="bound", tolerance_source="derived: Theorem 1's t1 = 16 log n/(min{zeta, xi} sqrt(mu) X_min)",
               falsifiers=[Synthetic("slow", _defect(times=1e5), "t1 1e5 times the law")])
@reported
def _below(r: Results):
    rows = _table(r)
    return bound(max(float(x["t1"] / x["bound"]) for x in rows), "<=", 1.0,
                 details="max over the grid of measured t1 / bound")


@scaling.plot("t1", "Measured t1 (sum time, median over seeds) against mu for each n (log-log), with the fitted law "
                    "mu^-b (solid) and Theorem 1's bound 16 log n/(min{zeta, xi} sqrt(mu) X_min) (dashed, same colour). "
                    "Typical t1 falls with n in sum time, because ||x_a(w)|| grows like the number of active points.")
def _plot(r: Results):
    rows = _table(r)
    fig, (ax,) = panels(1, width=4.2, height=3.2)
    b = mu_exponent(rows, "t1") if all(math.isfinite(x["t1"]) for x in rows) else math.nan
    for idx, n in enumerate(sorted({x["n"] for x in rows})):
        sel = sorted((x for x in rows if x["n"] == n), key=lambda x: x["mu"])
        mu = np.array([x["mu"] for x in sel])
        ax.plot(mu, [x["t1"] for x in sel], "o", color=f"C{idx}", label=f"n = {n}")
        ax.plot(mu, [x["bound"] for x in sel], "--", color=f"C{idx}", lw=0.8)
        if math.isfinite(b):
            c = np.exp(np.mean(np.log([x["t1"] for x in sel]) + b * np.log(mu)))
            ax.plot(mu, c * mu ** -b, "-", color=f"C{idx}", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="mu", ylabel="t1 (sum time)", title=f"alignment time (fit b = {b:.2f})")
    ax.legend(fontsize=7)
    return fig
