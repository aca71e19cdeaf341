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


def synthetic_figure2(configs: dict[str, dict], *, speed: float = 1.0, kappa: float = 1.0) -> dict:
    """Runs whose (p, q) are eq. (6) itself from Figure 2's start (ideal), with the competition ``kappa`` or the
    time ``speed`` changed as defects."""
    runs = {}
    for key, cfg in configs.items():
        r, T, S = cfg["data"]["r"], cfg["train"]["lr"] * cfg["train"]["steps"], cfg["seeds"]
        t = np.concatenate([[0.0], np.geomspace(cfg["train"]["lr"], T, 199)])
        lam = cfg["train"]["weight_decay"] / (2.0 * hermite_sums("abs").s2)
        p, q = th.competitive_ode(t * time_map() * speed, FIG2["p0"], FIG2["q0"], FIG2["A"], FIG2["B"], kappa, lam)
        runs[key] = synthetic_run(cfg, key, {"t": t, "mass_subspace": np.tile(r * p, (S, 1)),
                                             "mass_irrelevant": np.tile(r * q, (S, 1)),
                                             "mass_total": np.tile(r * (p + q), (S, 1))})
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
    sel = (s >= window[0]) & (s <= window[1])
    return [float(-np.polyfit(s[sel], np.log(q[k, sel] / p[k, sel]), 1)[0]) for k in range(p.shape[0])]


@figure2.claim("decay-rate",
               "Near the stable point q/p decays like exp(-kappa lambda s/(A + kappa)): the network's fitted rate on "
               "s in [250, 500] is within 1 % of eq. (6)'s from the same start and within 5 % of kappa lambda/(A + "
               "kappa) = 0.0090909 (eq. 6 itself is 4.1 % above it on this window, still approaching p_lambda)",
               kind="prediction",
               falsifiers=[Synthetic("weaker-advantage", lambda c: synthetic_figure2(c, kappa=0.5),
                                     "kappa = 0.5 halves the rate"), ORDER4],
               tolerance_source="exploratory: 1 % and 5 %; derived parts: eq. (6) itself is 4.2 % above the asymptotic "
                                "rate on this window, and GD's step moves the fitted rate by 7e-5 (lr 0.04) and 4e-5 "
                                "(lr 0.02) relative, so 1 % is 140x the step's effect (measured 4e-5)")
def _claim_rate(r: Results) -> Check:
    run = r["symmetrized"]
    rates = decay_rate(run)
    s, _, _ = pq(run)
    sel = (s >= RATE_WINDOW[0]) & (s <= RATE_WINDOW[1])
    ode = [float(-np.polyfit(s[sel], np.log(Q[sel] / P[sel]), 1)[0]) for P, Q in ode_from(run)]
    pred = th.competitive_decay_rate(FIG2["A"], FIG2["B"], FIG2["kappa"], FIG2["lam"])
    return all_of(close_to([a / b for a, b in zip(rates, ode)], 1.0, rtol=0.01), close_to(rates, pred, rtol=0.05),
                  details=f"fitted rates {', '.join(f'{x:.6f}' for x in rates)}; eq. (6) from the same start "
                          f"{', '.join(f'{x:.6f}' for x in ode)}")


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
