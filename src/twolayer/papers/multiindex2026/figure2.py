"""Figure 2: the competitive ODE of eq. (6), compared with the network dynamics it describes.

    p' = p(-lambda + A(1 - p - Bq) + kappa(1 - p)),   q' = q(-lambda + A(1 - p - Bq))     (eq. 6)

Section 5.2 maps Stage 1.2 onto it: p = beta_1 (subspace mass / r), q = (d - r) beta_2 / r (irrelevant mass /
r), A = 2 sigma_hat_0^2 r, B = 1, kappa = 2 sigma_hat_2^2, time doubled (spec §4.1). Figure 2's parameters
A = 10, B = kappa = 1, lambda = 0.1 are exactly those of a mean-field network with sigma = |x| cut at Hermite
order 2 (sigma_2 = sigma_hat_0 + sigma_hat_2 h_2, so that Stage 1.2 is the whole dynamics) and r = 5 target
directions, in the time s = 4 sigma_hat_2^2 t = (4/pi) t and with weight decay lambda = 0.1 x 2 sigma_hat_2^2
= 0.2/pi: then A = sigma_hat_0^2 r / sigma_hat_2^2 = 2r = 10, kappa = 1. Figure 2's start (p, q) = (0.01, 0.5)
(spec §5.2) is a Gaussian init of scale 0.1 in d = 255 (p0 = 0.1^2, q0 = (d - r) 0.1^2 / r). The network is
the symmetrized one (GD on ``population_symmetrized2``: Section 5 analyses the symmetrized network, for
which eq. 6 is the reduction up to the balance of the r relevant coordinates at finite m and the dropped
beta_2 self-term); the actual network (``population_hermite2``) is drawn beside it.
"""

from __future__ import annotations

import functools

import numpy as np

from twolayer.claims.checks import Check, all_of, at_most, close_to
from twolayer.claims.falsifiers import Counterfactual, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.multiindex2026 import premises as src
from twolayer.papers.multiindex2026.premises import premise
from twolayer.papers.multiindex2026._shared import PAPER, hermite_sums, synthetic_run
from twolayer.plotting import panels
from twolayer.theory import multi_index as th

FIG2 = dict(A=10.0, B=1.0, kappa=1.0, lam=0.1, p0=0.01, q0=0.5, horizon=500.0)
# quick: lr 0.04 (eq. 6 vs the network: 2.7 % in p, 3.9 % in q; 1.8 % and 2.7 % at lr 0.02) and no actual network
NET = {"quick": dict(d=255, r=5, m=64, seeds=2, lr=0.04, init_scale=0.1, points=200, actual=False),
       "paper": dict(d=255, r=5, m=128, seeds=2, lr=0.02, init_scale=0.1, points=300, actual=True)}
FIG2_METRICS = ["mass_total", "mass_subspace", "mass_irrelevant"]
FOLLOW_TOL = 0.05  # eq. (6) vs the symmetrized network: relative, p and q (see the claim)
RATE_WINDOW = (250.0, 500.0)  # q/p decay rate fitted on this window of s


def time_map() -> float:
    """s = c t with c = 4 sigma_hat_2^2 (= 4/pi for |x|): the time of eq. (6) in Figure 2's units."""
    return 4.0 * hermite_sums("abs").s2


def net_lambda(lam_ode: float) -> float:
    """The network's weight decay for eq. (6)'s lambda: lambda_net = 2 sigma_hat_2^2 lambda (= 0.2/pi at 0.1)."""
    return 2.0 * hermite_sums("abs").s2 * lam_ode


def figure2_configs(scale: str) -> dict[str, dict]:
    c = NET[scale]
    T = FIG2["horizon"] / time_map()

    def net(objective, lam_ode):
        return {"seeds": c["seeds"],
                "data": {"kind": "multi_index", "d": c["d"], "r": c["r"], "n": 200, "n_test": 200},
                "model": {"kind": "mean_field", "activation": "abs", "width": c["m"]},
                "init": {"kind": "gaussian", "scale": c["init_scale"]},
                "loss": {"kind": "square", "reduction": "mean"}, "objective": objective,
                "train": {"method": "gd", "lr": c["lr"], "steps": int(round(T / c["lr"])),
                          "weight_decay": net_lambda(lam_ode)},
                "observe": {"schedule": "log", "points": c["points"], "metrics": list(FIG2_METRICS)},
                "precision": "float64"}

    out = {"symmetrized": net("population_symmetrized2", FIG2["lam"]),
           "symmetrized-lambda0": net("population_symmetrized2", 0.0)}
    if c["actual"]:
        out["actual"] = net("population_hermite2", FIG2["lam"])
    return out


figure2 = register(Experiment(
    id=f"{PAPER}/figure2",
    title="Competitive dynamics: the Lotka-Volterra-type ODE of eq. (6) and the network it describes (Figure 2)",
    figure="Figure 2",
    description=(
        "p' = p(-lambda + A(1 - p - Bq) + kappa(1 - p)), q' = q(-lambda + A(1 - p - Bq)) with A = 10, B = kappa = 1, "
        "lambda = 0.1 from (p, q) = (0.01, 0.5), and the network it describes: the symmetrized mean-field network "
        "with sigma = |x| cut at Hermite order 2 and r = 5, d = 255 (Gaussian init of scale 0.1), where p = subspace "
        "mass / r, q = irrelevant mass / r, s = (4/pi) t and lambda_net = 0.2/pi give exactly these A, B, kappa, "
        "lambda and this start (module docstring). The competitor q grows first, then p takes over; (p, q) -> "
        "(1 - lambda/(A + kappa), 0) with q/p decaying at rate kappa lambda/(A + kappa); with lambda = 0, "
        "q ~ (A + kappa)/(A B kappa s). Quick: m = 64, 2 seeds, lr 0.04; paper: m = 128, 2 seeds, lr 0.02, and the "
        "actual network beside it; horizon s = 500."),
    configs=figure2_configs,
))


def pq(run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(s, p [S, T], q [S, T]) of a run: s = (4/pi) t, p = subspace mass / r, q = irrelevant mass / r."""
    tr, r = run.trajectory, int(run.config["data"]["r"])
    return tr["t"] * time_map(), tr["mass_subspace"] / r, tr["mass_irrelevant"] / r


def ode_lambda(run) -> float:
    return float(run.config["train"]["weight_decay"]) / (2.0 * hermite_sums("abs").s2)


def ode_from(run) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per seed eq. (6) on the run's times s, started at the run's (p, q) at t = 0 (the matching start)."""
    s, p, q = pq(run)
    return [th.competitive_ode(s, float(p[k, 0]), float(q[k, 0]), FIG2["A"], FIG2["B"], FIG2["kappa"], ode_lambda(run))
            for k in range(p.shape[0])]


def follow_errors(run) -> tuple[float, float]:
    """Max over seeds and times of |p - p_ode| / p_ode and |q - q_ode| / q_ode."""
    _, p, q = pq(run)
    ep, eq = 0.0, 0.0
    for k, (P, Q) in enumerate(ode_from(run)):
        ep = max(ep, float(np.max(np.abs(p[k] - P) / P)))
        eq = max(eq, float(np.max(np.abs(q[k] - Q) / Q)))
    return ep, eq


def masses_gd(steps: int, h: float, M0, Q0, n: int, keep, lam: float, A: float = FIG2["A"], B: float = FIG2["B"],
              kappa: float = FIG2["kappa"]) -> tuple[np.ndarray, np.ndarray]:
    """(p [N, K], q [N, K]) at the steps ``keep`` of GD on the symmetrized network with sigma_2 (``population_
    symmetrized2``), exactly: its loss is s0/2 (alpha - r)^2 + s2/2 (sum_l (M_l - 1)^2 + Q^2/n) in the masses M_l =
    (1/m) sum_i w_il^2 of the r relevant coordinates (target basis) and Q = (1/m) sum_i sum_{l > r} w_il^2 of the n =
    d - r irrelevant ones, so GD multiplies every w_il by a factor of its coordinate's alone (one factor for all the
    irrelevant ones): M_l -> M_l (1 + h G_l/2)^2, G_l = -lam + A(1 - p - Bq) + kappa (1 - M_l), and Q -> Q (1 + h
    (G - Q/n)/2)^2, G = -lam + A(1 - p - Bq), with p = sum_l M_l / r, q = Q/r, h = 4 sigma_hat_2^2 lr (s units).
    Eq. (6) is its flow (h -> 0) with balanced M_l (M_l = p) and without the irrelevant self-term Q/n = (r/n) q;
    ``competitive_gd`` is the balanced map without the self-term. ``M0`` [N, r], ``Q0`` [N]."""
    M, Q = np.array(M0, dtype=np.float64, ndmin=2), np.array(Q0, dtype=np.float64, ndmin=1)
    r, keep = M.shape[1], np.asarray(keep, dtype=int)
    P, Qs = np.empty((M.shape[0], keep.size)), np.empty((M.shape[0], keep.size))
    order = np.argsort(keep, kind="stable")
    j = 0
    for k in range(int(keep.max()) + 1):
        p, q = M.sum(1) / r, Q / r
        while j < keep.size and keep[order[j]] == k:
            P[:, order[j]], Qs[:, order[j]] = p, q
            j += 1
        if k == steps or j == keep.size:
            break
        common = -lam + A * (1.0 - p - B * q)
        M = M * (1.0 + 0.5 * h * (common[:, None] + kappa * (1.0 - M))) ** 2
        Q = Q * (1.0 + 0.5 * h * (common - Q / n)) ** 2
    return P, Qs


def synthetic_figure2(configs: dict[str, dict], *, speed: float = 1.0, kappa: float = 1.0) -> dict:
    """Runs whose (p, q) are the symmetrized network's exact balanced map (``masses_gd`` from Figure 2's start with
    balanced M_l: eq. (6) with GD's step and the self-term (r/n) q) on a log grid of steps (ideal), with the
    competition ``kappa`` or the time ``speed`` (the step h in s units times ``speed``) changed as defects."""
    runs = {}
    for key, cfg in configs.items():
        r, d, S = cfg["data"]["r"], cfg["data"]["d"], cfg["seeds"]
        lr, steps = cfg["train"]["lr"], int(cfg["train"]["steps"])
        keep = np.unique(np.concatenate([[0], np.round(np.geomspace(1, steps, 199)).astype(int)]))
        lam = cfg["train"]["weight_decay"] / (2.0 * hermite_sums("abs").s2)
        p, q = masses_gd(steps, time_map() * lr * speed, np.full((1, r), FIG2["p0"]), np.array([r * FIG2["q0"]]),
                         d - r, keep, lam, kappa=kappa)
        runs[key] = synthetic_run(cfg, key, {"t": keep * lr, "mass_subspace": np.tile(r * p[0], (S, 1)),
                                             "mass_irrelevant": np.tile(r * q[0], (S, 1)),
                                             "mass_total": np.tile(r * (p[0] + q[0]), (S, 1))})
    return runs


ORDER4 = premise(Counterfactual(
    "order-4-kept",
    lambda c: {"symmetrized": {**c["symmetrized"], "objective": "population_symmetrized4", "seeds": 1,
                               "model": {**c["symmetrized"]["model"], "width": 16},
                               "train": {**c["symmetrized"]["train"], "lr": 0.04}}},
    "sigma cut at order 4 instead of 2 (m = 16, one seed, to stay small): the order-4 term adds direction "
    "learning and a second advantage 2 sigma_hat_4^2 (1 - ...) to the subspace coordinates, so the two-mass "
    "competition is no longer all there is: the competitor dies faster (q/p rate +26 %, q 86 % below eq. 6 at "
    "s = 500; with lambda = 0, s q = 0.42 instead of 1.1)."), src.ORDER2_LEADS)


ORDER4_BOTH = premise(Counterfactual(
    "order-4-kept",
    lambda c: {"symmetrized": ORDER4.change(c)["symmetrized"],
               "symmetrized-lambda0": {**ORDER4.change(c)["symmetrized"],
                                       "train": {**ORDER4.change(c)["symmetrized"]["train"], "weight_decay": 0.0}}},
    ORDER4.why + " Both runs (lambda = 0.1 and lambda = 0)."), src.ORDER2_LEADS)
NO_WEIGHT_DECAY = premise(Counterfactual(
    "no-weight-decay",
    lambda c: {"symmetrized": c["symmetrized-lambda0"]},
    "lambda = 0 in place of Figure 2's 0.1 (the same network, the figure's lambda = 0 run): (p, q) -> (1, 0), not "
    "(1 - lambda/(A + kappa), 0), and q dies algebraically."), src.WEIGHT_DECAY)


@figure2.claim("follows-ode",
               "The subspace and irrelevant masses of the symmetrized network follow eq. (6) from the matching start "
               "(p, q at t = 0) within 5 % relative, for s <= 500, with lambda = 0.1 and lambda = 0 (the remaining "
               "error is the imbalance of the r relevant coordinates at finite m and GD's step: at m = 64 the "
               "largest error, in q, is 2.7 % at lr 0.02 and 3.9 % at lr 0.04; the actual network is 10 % off)",
               kind="prediction",
               falsifiers=[Synthetic("twice-the-advantage", lambda c: synthetic_figure2(c, kappa=2.0),
                                     "the subspace's advantage kappa is 2 instead of 1"), ORDER4_BOTH],
               tolerance_source="derived: GD's step alone, eq. (6) through the map p -> p (1 + h G_p/2)^2, q -> q (1 + "
                                "h G_q/2)^2 with h = 4 sigma_hat_2^2 lr, is 2.7 % (p) / 4.0 % (q) off eq. (6) for s <= "
                                "500 at the quick lr 0.04 and 1.4 % / 1.9 % at the paper's 0.02 (the network: 2.6-2.7 % "
                                "/ 3.9 %, quick), so 5 % leaves 1 % for the finite-m imbalance of the relevant "
                                "coordinates")
def _claim_follows(r: Results) -> Check:
    errs = {key: follow_errors(r[key]) for key in ("symmetrized", "symmetrized-lambda0")}
    worst = max(max(e) for e in errs.values())
    actual = follow_errors(r["actual"]) if "actual" in r.runs else (float("nan"), float("nan"))
    return at_most(worst, FOLLOW_TOL, details="max relative error (p, q): " + "; ".join(
        f"{k}: {e[0]:.3g}, {e[1]:.3g}" for k, e in errs.items())
        + f"; the actual (non-symmetrized) network, not claimed: {actual[0]:.3g}, {actual[1]:.3g}")


@figure2.claim("equilibrium",
               "The network's (p, q) approach eq. (6)'s stable point (p_lambda, 0), p_lambda = 1 - lambda/(A + "
               "kappa) = 0.990909: at s = 500, |p - p_lambda| <= 2e-4 and q <= 1e-3 (eq. 6 from the same start: "
               "1.0e-4 and 1.1e-4), lambda = 0.1",
               kind="prediction",
               falsifiers=[Synthetic("weaker-advantage", lambda c: synthetic_figure2(c, kappa=0.5),
                                     "kappa = 0.5: p -> 1 - lambda/(A + 0.5) = 0.9905 and q decays at half the rate"),
                           NO_WEIGHT_DECAY],
               tolerance_source="derived: eq. (6) from the same start is 1.0e-4 from p_lambda and has q = 1.1e-4 at s = "
                                "500; 2e-4 and 1e-3 allow 2x and 9x that")
def _claim_eq(r: Results) -> Check:
    _, p, q = pq(r["symmetrized"])
    pl, _ = th.competitive_equilibrium(FIG2["A"], FIG2["B"], FIG2["kappa"], FIG2["lam"])
    return all_of(close_to(p[:, -1].tolist(), pl, atol=2e-4), at_most(float(np.max(q[:, -1])), 1e-3),
                  details=f"p_lambda = {pl:.6f}")


def decay_rate(run, window=RATE_WINDOW) -> list[float]:
    """Per seed the fitted rate of -log(q/p) against s on ``window``."""
    s, p, q = pq(run)
    return fitted_rates(s, p, q, window).tolist()


def fitted_rates(s, p, q, window=RATE_WINDOW) -> np.ndarray:
    """The fitted rate of -log(q/p) against s on ``window``, for every row of p and q ([N, T] or [T])."""
    sel = (s >= window[0]) & (s <= window[1])
    y = np.log(np.atleast_2d(q)[:, sel] / np.atleast_2d(p)[:, sel])
    return -np.polyfit(s[sel], y.T, 1)[0]


def q_slope(self_term: float = 0.0) -> float:
    """c in -d/ds log(q/p) = kappa lambda/(A + kappa) + c q near (p_lambda, 0): with q' = q(G - self_term q),
    d/ds log(q/p) = -kappa (1 - p) - self_term q and the quasi-static 1 - p = (lambda + A B q)/(A + kappa) (p'
    = 0), so c = kappa A B/(A + kappa) + self_term (self_term = r/n for the symmetrized network, 0 for eq. 6)."""
    return FIG2["kappa"] * FIG2["A"] * FIG2["B"] / (FIG2["A"] + FIG2["kappa"]) + self_term


def asymptotic_rates(s, p, q, self_term: float = 0.0, window=RATE_WINDOW) -> np.ndarray:
    """The window's estimate of the asymptotic rate kappa lambda/(A + kappa): the fitted slope of -log(q/p) - c
    int_0^s q ds' (``q_slope``, trapezoid on the grid) on ``window``, for every row of p and q."""
    from scipy.integrate import cumulative_trapezoid

    p, q = np.atleast_2d(p), np.atleast_2d(q)
    y = -np.log(q / p) - q_slope(self_term) * cumulative_trapezoid(q, s, axis=-1, initial=0.0)
    sel = (s >= window[0]) & (s <= window[1])
    return np.polyfit(s[sel], y[:, sel].T, 1)[0]


IMBALANCE_DRAWS = 2000  # independent initializations (seeds from 100, not the runs' 0, 1) for the imbalance term
IMBALANCE_SEED = 100
IMBALANCE_QUANTILES = (0.001, 0.999)


@functools.lru_cache(maxsize=16)
def _rate_offsets(m: int, d: int, r: int, scale: float, lr: float, steps: int, lam: float, s: tuple) -> dict:
    s = np.asarray(s)
    h, n, sc2 = time_map() * lr, d - r, scale**2
    keep = np.minimum(np.round(s / h).astype(int), steps)
    p0, q0 = sc2, n * sc2 / r  # the init's expected p, q (Figure 2's start at scale 0.1, d = 255)
    P, Q = masses_gd(steps, h, np.full((1, r), p0), np.array([r * q0]), n, keep, lam)
    Po, Qo = th.competitive_ode(s, p0, q0, FIG2["A"], FIG2["B"], FIG2["kappa"], lam)
    rng = np.random.default_rng(IMBALANCE_SEED)
    M0 = sc2 * rng.chisquare(m, size=(IMBALANCE_DRAWS, r)) / m  # M_l(0) = (1/m) sum_i w_il^2, w_il ~ N(0, scale^2)
    Q0 = sc2 * rng.chisquare(m * n, size=IMBALANCE_DRAWS) / m
    Pd, Qd = masses_gd(steps, h, M0, Q0, n, keep, lam)
    Pb, Qb = masses_gd(steps, h, np.repeat(M0.mean(1, keepdims=True), r, 1), Q0, n, keep, lam)
    out = {}
    for name, fit, kw in (("rate", fitted_rates, {}), ("asymptotic", asymptotic_rates, {"self_term": r / n})):
        bias = float(fit(s, P, Q, **kw)[0] / (fitted_rates(s, Po, Qo)[0] if name == "rate"
                                              else asymptotic_rates(s, Po, Qo)[0]) - 1.0)
        imbalance = fit(s, Pd, Qd, **kw) / fit(s, Pb, Qb, **kw) - 1.0
        lo, hi = np.quantile(imbalance, IMBALANCE_QUANTILES)
        out[name] = (bias, float(lo), float(hi))
    return out


def rate_offsets(run) -> dict[str, tuple[float, float, float]]:
    """{"rate": (bias, lo, hi), "asymptotic": (bias, lo, hi)}: the derived relative difference between the network
    and eq. (6) from the same start, from ``masses_gd`` on the run's grid, of the fitted q/p rate (``fitted_rates``)
    and of the asymptotic-rate estimate (``asymptotic_rates``, the network's with self_term r/n, eq. 6's without):
    ``bias`` = the balanced map (GD's step and, in the rate, the self-term) against eq. (6) from the init's expected
    start; [lo, hi] = the 0.1 % and 99.9 % quantiles of the imbalance term (the map from M_l(0) = scale^2 chi^2_m / m,
    independent draws, against the balanced map from the same total) over ``IMBALANCE_DRAWS`` initializations. The
    network's difference is bias + its own imbalance term."""
    c = run.config
    s, _, _ = pq(run)
    return _rate_offsets(int(c["model"]["width"]), int(c["data"]["d"]), int(c["data"]["r"]),
                         float(c["init"]["scale"]), float(c["train"]["lr"]), int(c["train"]["steps"]),
                         ode_lambda(run), tuple(np.round(s, 12).tolist()))


def offset_bound(offsets: tuple[float, float, float]) -> float:
    """|bias| + the imbalance term's larger quantile: the derived bound on |network / eq. (6) - 1|."""
    bias, lo, hi = offsets
    return abs(bias) + max(abs(lo), abs(hi))


@figure2.claim("decay-rate",
               "Near the stable point q/p decays like exp(-kappa lambda s/(A + kappa)): the network's fitted rate on "
               "s in [250, 500] equals eq. (6)'s from the same start up to the derived difference of GD's step, eq. "
               "(6)'s dropped self-term (r/n) q of the irrelevant mass and the finite-m imbalance of the r relevant "
               "coordinates (relative, 5.7e-5 at the quick lr 0.04 and m = 64, 3.2e-5 at the paper's lr 0.02 and m "
               "= 128); both are 4.1-4.5 % above kappa lambda/(A + kappa) = 0.0090909 on this window (still "
               "approaching p_lambda), and with the competitor's remaining mass taken out (-d/ds log(q/p) = kappa "
               "lambda/(A + kappa) + (kappa A B/(A + kappa) + r/n) q near (p_lambda, 0)) the network's rate is "
               "kappa lambda/(A + kappa) within eq. (6)'s own residual of that correction plus GD's step (1.9e-4 "
               "quick, 7.5e-5 paper)",
               kind="prediction",
               falsifiers=[Synthetic("weaker-advantage", lambda c: synthetic_figure2(c, kappa=0.5),
                                     "kappa = 0.5 halves the rate"), ORDER4],
               tolerance_source="derived: the symmetrized sigma_2 network is exactly the GD map of the masses M_l "
                                "of the r relevant coordinates and Q of the irrelevant ones (masses_gd, equal to "
                                "the network to 1e-12), whose flow with balanced M_l and without the self-term "
                                "(r/n) q is eq. (6). Rate: |the balanced map's / eq. (6)'s - 1| (GD's step and "
                                "the self-term: +2.7e-5 at lr 0.04, -1.5e-5 at lr 0.02) plus the 99.9 % quantile "
                                "of the imbalance term over 2000 independent initializations (seeds from 100; "
                                ">= 0, 3.0e-5 at m = 64, 1.7e-5 at m = 128). Asymptotic rate: eq. (6)'s own "
                                "residual of the q-correction on the run's grid from the run's start (the "
                                "quasi-static lag and the trapezoid, 5e-5 quick, 7e-6 paper) plus the same "
                                "map-against-eq. (6) bound for the corrected estimate (GD's step 1.3e-4 / 6.8e-5; "
                                "the imbalance < 1e-7)")
def _claim_rate(r: Results) -> Check:
    run = r["symmetrized"]
    rates = decay_rate(run)
    s, p, q = pq(run)
    ode = ode_from(run)
    ode_rates = [float(fitted_rates(s, P, Q)[0]) for P, Q in ode]
    pred = th.competitive_decay_rate(FIG2["A"], FIG2["B"], FIG2["kappa"], FIG2["lam"])
    off = rate_offsets(run)
    tol = offset_bound(off["rate"])
    n_over = int(run.config["data"]["r"]) / (int(run.config["data"]["d"]) - int(run.config["data"]["r"]))
    asym = asymptotic_rates(s, p, q, self_term=n_over)
    ode_asym = [float(asymptotic_rates(s, P, Q)[0]) for P, Q in ode]
    tol2 = max(abs(o / pred - 1.0) + (o / pred) * offset_bound(off["asymptotic"]) for o in ode_asym)
    diffs = [a / b - 1.0 for a, b in zip(rates, ode_rates)]
    bias, lo, hi = off["rate"]

    def pct(xs):
        return ", ".join(f"{100 * (x / pred - 1):.2f}" for x in xs)

    return all_of(close_to([a / b for a, b in zip(rates, ode_rates)], 1.0, rtol=tol),
                  close_to(asym.tolist(), pred, rtol=tol2),
                  details=f"fitted rates {', '.join(f'{x:.6f}' for x in rates)}; eq. (6) from the same start "
                          f"{', '.join(f'{x:.6f}' for x in ode_rates)} (relative differences "
                          f"{', '.join(f'{x:+.3g}' for x in diffs)}; derived: GD's step and the self-term "
                          f"{bias:+.3g}, the imbalance term in [{lo:.3g}, {hi:.3g}] (0.1-99.9 %), so the network's "
                          f"difference lies in [{bias + lo:+.3g}, {bias + hi:+.3g}], tolerance {tol:.3g}); "
                          f"uncorrected the window's rates are {pct(rates)} % above kappa lambda/(A + kappa) (eq. 6: "
                          f"{pct(ode_rates)} %); corrected for the competitor's mass "
                          f"{', '.join(f'{x / pred - 1:+.3g}' for x in asym)} (eq. 6: "
                          f"{', '.join(f'{x / pred - 1:+.3g}' for x in ode_asym)}; GD's step "
                          f"{off['asymptotic'][0]:+.3g}), tolerance {tol2:.3g}")


@figure2.claim("lambda0-law",
               "Without weight decay the competitor dies only algebraically: s q(s) -> (A + kappa)/(A B kappa) = 1.1; "
               "the network's s q at s = 500 is within 5 % of 1.1 (eq. 6 from Figure 2's start: 1.12)",
               kind="prediction",
               falsifiers=[Synthetic("twice-the-advantage", lambda c: synthetic_figure2(c, kappa=2.0),
                                     "kappa = 2: s q -> (A + 2)/(2 A) = 0.6"), ORDER4_BOTH],
               tolerance_source="derived: eq. (6) from Figure 2's start has s q(500) = 1.12, 2 % above the limit 1.1; "
                                "5 % allows the network's finite-m error besides")
def _claim_law(r: Results) -> Check:
    s, _, q = pq(r["symmetrized-lambda0"])
    law = (FIG2["A"] + FIG2["kappa"]) / (FIG2["A"] * FIG2["B"] * FIG2["kappa"])
    return close_to((s[-1] * q[:, -1]).tolist(), law, rtol=0.05, details=f"s = {s[-1]:.4g}")


def figure2_solution():
    t = np.concatenate([np.linspace(0, 10, 201)[:-1], np.linspace(10, 2000.0, 3981)])
    p, q = th.competitive_ode(t, FIG2["p0"], FIG2["q0"], FIG2["A"], FIG2["B"], FIG2["kappa"], FIG2["lam"])
    return t, p, q


@figure2.plot("figure2", "Left: p, q and p + Bq of eq. (6) against s (lambda = 0.1; lines) with the symmetrized "
                         "network (dots) and the actual network (crosses), median over seeds. Right: q/p on a log "
                         "scale with the predicted late slope exp(-kappa lambda s/(A + kappa)) (dashed), and the "
                         "lambda = 0 solution's q vs (A + kappa)/(A B kappa s) (dotted) with the lambda = 0 network "
                         "(dots).")
def _plot_fig2(r: Results):
    t, p, q = r.memo("fig2", figure2_solution)
    fig, (a1, a2) = panels(2, width=4.0, height=3.0)
    show = t <= 100
    a1.plot(t[show], p[show], label="p (aligned)", color="C0")
    a1.plot(t[show], q[show], label="q (competitor)", color="C1")
    a1.plot(t[show], (p + FIG2["B"] * q)[show], ":", color="black", label="p + Bq")
    for key, marker in (("symmetrized", "o"), ("actual", "x")):
        if key not in r.runs:
            continue
        s, ps, qs = pq(r[key])
        keep = (s <= 100) & (np.arange(len(s)) % 6 == 0)
        a1.plot(s[keep], np.median(ps, 0)[keep], marker, color="C0", markersize=3, label=f"{key} network")
        a1.plot(s[keep], np.median(qs, 0)[keep], marker, color="C1", markersize=3)
    a1.set(xlabel="s", ylabel="value", title="competitive ODE, lambda = 0.1")
    a1.legend(fontsize=7)
    a2.plot(t, q / p, label="q/p (lambda = 0.1)")
    rate = th.competitive_decay_rate(FIG2["A"], FIG2["B"], FIG2["kappa"], FIG2["lam"])
    i = np.searchsorted(t, 1000.0)
    a2.plot(t, (q / p)[i] * np.exp(-rate * (t - t[i])), "--", color="gray", label="exp(-kappa lambda s/(A+kappa))")
    t0 = t[t > 0]
    _, q0 = th.competitive_ode(t, FIG2["p0"], FIG2["q0"], FIG2["A"], FIG2["B"], FIG2["kappa"], 0.0)
    a2.plot(t, q0, label="q (lambda = 0)")
    a2.plot(t0, 1.1 / t0, ":", color="black", label="1.1/s")
    for key, color in (("symmetrized", "C0"), ("symmetrized-lambda0", "C2")):
        if key in r.runs:
            s, ps, qs = pq(r[key])
            keep = np.arange(len(s)) % 8 == 0
            ratio = qs / ps if key == "symmetrized" else qs
            a2.plot(s[keep], np.median(ratio, 0)[keep], "o", color=color, markersize=3)
    a2.set(yscale="log", ylim=(1e-12, 2), xlabel="s", title="decay of the competitor")
    a2.legend(fontsize=7)
    return fig
