"""Reduced stage ODEs overlaid on the simulation (§5, App. C-D; spec §6 C.23, C.26).

Stage 1 (the logistic mass of Stage 1.1 and the beta-ODE of Stage 1.2) is compared on a run with the spec's
step lr = 0.002 (P23: at the Figure-1 step lr 4 sigma_hat_0^2 r = 0.5, and GD's Euler error in the fast mass
transient is 4.5 % at quick scale, 9.6 % at paper scale); Stage 2.2 (the (a_hat, b_hat)-ODE of eq. 23) on the
Figure-1 runs (cache hits).
"""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import Check, all_of, at_most
from twolayer.claims.falsifiers import Counterfactual, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.multiindex2026 import premises as src
from twolayer.papers.multiindex2026.premises import premise
from twolayer.papers.multiindex2026._shared import (
    ABS, FINE_LR, PAPER, SCALE, base_config, d_of, gd, hermite_sums, lam_of, r_of, synthetic_figure1, synthetic_run,
    variant,
)
from twolayer.papers.multiindex2026.figure1 import figure1_configs
from twolayer.observe.multi_index import transition_times
from twolayer.plotting import band, panels, positive_times
from twolayer.theory import multi_index as th

STAGE1_TIME = 5.0  # the beta-ODE is compared up to t = 5 (spec P26), the logistic up to t = 0.3 (P23)
LOGISTIC_TIME = 0.3
STAGE1_METRICS = ["mass_total", "mass_subspace", "mass_irrelevant", "beta1", "beta2"]
AB_START = 2.0  # the Stage 2.2 ODE starts at AB_START x T_21


def overlay_configs(scale: str) -> dict[str, dict]:
    s = SCALE[scale]
    fine = base_config(s, points=120, metrics=STAGE1_METRICS)
    fig1 = figure1_configs(scale)
    return {"population": fig1["population"], "population-wd": fig1["population-wd"],
            "fine": {**fine, "name": f"{PAPER}-overlays-fine", "train": gd(FINE_LR, STAGE1_TIME)}}


overlays = register(Experiment(
    id=f"{PAPER}/overlays",
    title="Reduced stage ODEs overlaid on the simulation",
    figure="beyond the paper (§5, App. C-D)",
    description=(
        "Stage 1.1: total mass against the logistic law; Stage 1.2: subspace and irrelevant mass against the "
        "'full' reduced beta-ODE started from the initial beta_1, beta_2 (both on a run at the spec's lr = 0.002, "
        "to t = 5); Stage 2.1: the worst-covered direction against the tensor-power p-ODE; Stage 2.2: the "
        "per-direction aligned mass a_hat and dense mass b_hat (means over directions) against the balanced "
        "(a_hat, b_hat)-ODE of eq. (23), with and without weight decay (Figure-1 runs, cache hits)."),
    configs=overlay_configs,
))


COARSE_STEP = premise(Counterfactual(
    "figure1-step",
    lambda c: {"fine": {**c["fine"], "train": gd(SCALE["quick"]["lr"], STAGE1_TIME)}},
    "GD at the Figure-1 step lr = 0.02 instead of 0.002: lr 4 sigma_hat_0^2 r = 0.5, and the Euler error in the "
    "fast Stage 1.1 transient is 4.5 % in alpha and 7 % in M_sub at quick scale."), src.FLOW)


def synthetic_stage1(configs: dict[str, dict], rate: float = 1.0, form: str = "full") -> dict:
    """The fine run as the exact reduced dynamics: the beta-ODE (``form``, default the full one) from beta_1 =
    beta_2 = 1/d, with its time stretched by ``rate`` (1: ideal)."""
    cfg = configs["fine"]
    d, r, S = cfg["data"]["d"], cfg["data"]["r"], cfg["seeds"]
    t = np.concatenate([[0.0], np.geomspace(FINE_LR, STAGE1_TIME, 119)])
    b1, b2 = th.beta_ode(t * rate, 1.0 / d, 1.0 / d, d, r, 0.0, hermite_sums("abs"), form)
    M_sub, M_irr = r * b1, (d - r) * b2

    def seeded(x):
        return np.tile(x, (S, 1))

    return {"fine": synthetic_run(cfg, "fine", {
        "t": t, "mass_total": seeded(M_sub + M_irr), "mass_subspace": seeded(M_sub), "mass_irrelevant": seeded(M_irr),
        "beta1": seeded(b1), "beta2": seeded(b2)})}


def logistic_error(d: int, r: int, lr: float = FINE_LR, t_max: float = LOGISTIC_TIME) -> tuple[float, float]:
    """The two error terms of Lemma C.5's logistic for t <= t_max from the standard init (alpha_0 = 1, beta_1 =
    beta_2 = 1/d), each as max_t |alpha - logistic| / logistic: GD's step at ``lr`` (``stage11_mass_gd``), and the
    '± O(r/d)' in the rate, the order-2 terms 4 s2 (r beta_1 (1 - beta_1) - (d - r) beta_2^2) of the total mass's rate
    that the logistic drops (the 'full' beta-ODE's alpha = r beta_1 + (d - r) beta_2, Lemma C.10)."""
    h = hermite_sums("abs")
    steps = int(round(t_max / lr))
    t = np.arange(steps + 1) * lr
    logistic = th.stage11_mass(t, 1.0, r, 0.0, h)
    b1, b2 = th.beta_ode(t, 1.0 / d, 1.0 / d, d, r, 0.0, h, "full")
    gd_err = float(np.max(np.abs(th.stage11_mass_gd(steps, lr, 1.0, r, 0.0, h) - logistic) / logistic))
    order2 = float(np.max(np.abs(r * b1 + (d - r) * b2 - logistic) / logistic))
    return gd_err, order2


@overlays.claim("logistic-mass",
                "Stage 1.1: with lr <= 0.002 the total mass follows the logistic law alpha_eq/(1 + (alpha_eq/alpha_0 "
                "- 1) exp(-4 sigma_hat_0^2 alpha_eq t)) for t <= 0.3 within its two error terms, GD's step at lr = "
                "0.002 and Lemma C.5's '± O(r/d)' (the order-2 terms of the mass's rate), added (1.71 % quick, 2.94 % "
                "paper; spec §6 C.23, P23)",
                kind="prediction",
                falsifiers=[Synthetic("mass-10-percent-faster", lambda c: synthetic_stage1(c, rate=1.1),
                                      "the dynamics run 10 % faster than the reduced ODE"), COARSE_STEP],
                tolerance_source="derived: the logistic's two error terms for t <= 0.3 at lr = 0.002, each computed "
                                 "and added (logistic_error): GD's map alpha -> alpha (1 + lr 2 sigma_hat_0^2 (r - "
                                 "alpha))^2 is 0.54 % (d = 50, r = 10) and 2.15 % (d = 100, r = 20) off the logistic, "
                                 "the order-2 terms that Lemma C.5's '± O(r/d)' stands for (the full beta-ODE, Lemma "
                                 "C.10) 1.17 % and 0.79 %; the finite-m and order->=4 terms are not included. In place "
                                 "of the spec's 3 %. Spread (12 seeds quick, issue 28): 0.88 % +- 0.045 % (max 0.94 %); "
                                 "paper reference 1.52 %")
def _claim_logistic(r: Results) -> Check:
    run = r["fine"]
    tr, h = run.trajectory, hermite_sums("abs")
    early = tr["t"] <= LOGISTIC_TIME
    errs = []
    for s in range(tr["mass_total"].shape[0]):
        pred = th.stage11_mass(tr["t"][early], float(tr["mass_total"][s, 0]), r_of(run), 0.0, h)
        errs.append(float(np.max(np.abs(tr["mass_total"][s, early] - pred) / pred)))
    gd_err, order2 = logistic_error(d_of(run), r_of(run))
    return at_most(max(errs), gd_err + order2,
                   details=f"max relative error over t <= {LOGISTIC_TIME:g} and seeds, lr = {run.config['train']['lr']:g}; "
                           f"allowed: GD's step at lr = {FINE_LR:g} {gd_err:.3g} + the order-2 terms {order2:.3g}")


def beta_overlay(run, t_max: float = STAGE1_TIME, form: str = "full"):
    """Per seed ``(sel, r beta_1, (d - r) beta_2)``: the beta-ODE in ``form`` (default the 'full' Lemma C.10 form,
    which also covers Stage 1.1) started from the simulation's initial beta_1, beta_2, on the stored times
    ``t[sel]`` <= t_max."""
    tr, h = run.trajectory, hermite_sums("abs")
    d, rr = d_of(run), r_of(run)
    sel = np.flatnonzero(tr["t"] <= t_max)
    out = []
    for s in range(tr["beta1"].shape[0]):
        b1, b2 = th.beta_ode(tr["t"][sel], float(tr["beta1"][s, 0]), float(tr["beta2"][s, 0]), d, rr, lam_of(run),
                             h, form)
        out.append((sel, rr * b1, (d - rr) * b2))
    return out


def beta_errors(run, form: str = "full") -> tuple[list[float], list[float]]:
    """Per seed the max relative errors over t <= STAGE1_TIME of the beta-ODE in ``form`` against M_sub, M_irr."""
    tr = run.trajectory
    sub_errs, irr_errs = [], []
    for s, (sel, sub, irr) in enumerate(beta_overlay(run, form=form)):
        sub_errs.append(float(np.max(np.abs(sub - tr["mass_subspace"][s, sel]) / tr["mass_subspace"][s, sel])))
        irr_errs.append(float(np.max(np.abs(irr - tr["mass_irrelevant"][s, sel]) / tr["mass_irrelevant"][s, sel])))
    return sub_errs, irr_errs


# the beta-ODE against the subspace and the irrelevant mass, t <= 5: max relative errors' mean + 3 sd over seeds
# 100-109 (benchmarks/spreads/issue28/beta_ode_spread.py), by scale, in place of the spec's 3 % and 10 %
BETA_TOLERANCES = {"quick": (0.0202, 0.103), "paper": (0.0246, 0.0653)}


@overlays.claim("beta-ode-tracks",
                "Stage 1.2: the reduced beta-ODE of the appendix (eq. 9-10, which keeps the irrelevant coordinates' "
                "own order-2 term -2 sigma_hat_2^2 beta_2; with lambda = 0 it equals the 'full' Lemma C.10 form, "
                "which also covers Stage 1.1) started from the initialization tracks the simulated subspace mass "
                "within 2.02 % (quick) / 2.46 % (paper) and the irrelevant mass within 10.3 % / 6.53 % up to t = 5, "
                "at lr <= 0.002 (spec §6 C.26: 3 % and 10 %)",
                kind="prediction",
                falsifiers=[Synthetic("mass-10-percent-faster", lambda c: synthetic_stage1(c, rate=1.1),
                                      "the dynamics run 10 % faster than the reduced ODE"), COARSE_STEP],
                tolerance_source="spread: the max relative errors' mean + 3 sd over seeds 100-109, independent of the "
                                 "checked ones (benchmarks/spreads/issue28/beta_ode_spread.py): M_sub 1.71 % +- 0.11 %, "
                                 "M_irr 8.73 % +- 0.54 % (quick, d = 50, r = 10); 2.40 % +- 0.02 %, 5.86 % +- 0.22 % "
                                 "(paper, d = 100, r = 20), in place of the spec's 3 % and 10 % (§6 C.26; 10 % lay "
                                 "inside quick's 3 sd). The errors are systematic (their sd is 1-6 % of their mean), so "
                                 "this holds the ODE to its measured accuracy, and the falsifiers (GD at the Figure-1 "
                                 "step, dynamics 10 % faster) to it; eq. (9)-(10)'s error terms, eps_1 = O(log d / r) "
                                 "and eps_2 = O(1/r) in the rates, have no constants, so no bound follows. Across the "
                                 "scales M_irr's error falls 0.67x from r = 10 to 20 (O(log d / r) alone: 0.59x), while "
                                 "M_sub's rises 1.4x with GD's own step error at lr 0.002 (the logistic's 0.54 % -> "
                                 "2.15 %, logistic-mass)")
def _claim_beta(r: Results) -> Check:
    sub_errs, irr_errs = beta_errors(r["fine"])
    sub_tol, irr_tol = BETA_TOLERANCES[r.scale]
    return all_of(at_most(max(sub_errs), sub_tol), at_most(max(irr_errs), irr_tol),
                  details=f"max relative error over t <= {STAGE1_TIME:g} per seed: M_sub "
                          f"{', '.join(f'{x:.3g}' for x in sub_errs)}, M_irr {', '.join(f'{x:.3g}' for x in irr_errs)}")


@overlays.claim("beta-ode-main-text",
                "Section 5.2's two-dimensional beta-ODE (main text: beta_1' = 2 beta_1(-lambda + 2 sigma_hat_0^2 (r - r "
                "beta_1 - (d - r) beta_2) + 2 sigma_hat_2^2 (1 - beta_1)), beta_2' = 2 beta_2(-lambda + 2 sigma_hat_0^2 "
                "(r - r beta_1 - (d - r) beta_2))) started from the initialization tracks the simulated subspace and "
                "irrelevant masses up to t = 5, at lr <= 0.002, as closely as the appendix form (eq. 9-10) does on the "
                "same run and seed",
                kind="finding",
                falsifiers=[Synthetic("follows-the-main-text-ode", lambda c: synthetic_stage1(c, form="main"),
                                      "the fine run is the main-text ODE itself")],
                tolerance_source="derived: the appendix form's own error on the same run and seed (max over t <= 5 of "
                                 "|M - M_ode| / M, M_sub and M_irr; 1.65 % +- 0.10 % and 8.45 % +- 0.55 % over 12 seeds "
                                 "quick): eq. (9)-(10) and Section 5.2 describe the same Stage 1.2 with the same "
                                 "eps_1, eps_2, so the main text's form has no error budget beyond the appendix's. In "
                                 "place of beta-ode-tracks' 3 % / 10 %. Spread (12 seeds quick, issue 28): main text "
                                 "11.6 % +- 0.27 % (M_sub) and 37.6 % +- 0.58 % (M_irr): the finding stands by > 30 sd",
                explanation=(
                    "The main text drops the irrelevant coordinates' own order-2 residual: in Stage 1.2's per-coordinate "
                    "rate 2 sigma_hat_2^2 (1{i <= r} - E~ w_i^2) the term -2 sigma_hat_2^2 beta_2 of an irrelevant "
                    "coordinate is kept by the appendix (eq. 10: -sigma_hat_2^2 (1 - beta_1 + beta_2)) and by Lemma "
                    "C.10, not by Section 5.2. Right after Stage 1.1 beta_2 ~ r/d, so the dropped term is 2 sigma_hat_2^2 "
                    "r/d = 0.13 at d/r = 5, as large as the subspace's advantage at first: the main-text ODE keeps too "
                    "much irrelevant mass. Quick (d = 50, r = 10): the main-text form is 11.2-11.6 % off in M_sub and "
                    "37.5-38.5 % in M_irr, the appendix form 1.7 % and 8.4-9.1 %; the time T_conv at which "
                    "sigma_hat_0^2 (d - r) beta_2 / ((sigma_hat_0^2 r + sigma_hat_2^2) beta_1) <= 1/r is 10.4 (main), "
                    "8.2 (appendix) and 7.5 in the simulation (lambda = 0). The issue's paper-scale numbers are 11.5 % and "
                    "34 % (main) against 2.4 % and 6.1 % (appendix)."))
def _claim_beta_main(r: Results) -> Check:
    sub_errs, irr_errs = beta_errors(r["fine"], "main")
    sub_app, irr_app = beta_errors(r["fine"], "appendix")
    parts = [at_most(m, a) for m, a in zip(sub_errs + irr_errs, sub_app + irr_app)]
    return all_of(*parts, details=f"main-text form against the appendix form, max relative error over t <= "
                                  f"{STAGE1_TIME:g} per seed: M_sub {', '.join(f'{x:.3g}' for x in sub_errs)} (appendix "
                                  f"{', '.join(f'{x:.3g}' for x in sub_app)}), M_irr "
                                  f"{', '.join(f'{x:.3g}' for x in irr_errs)} (appendix "
                                  f"{', '.join(f'{x:.3g}' for x in irr_app)})")


def ab_overlay(run, start: float = AB_START) -> list[tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
    """Per seed ``(sel, a_ode, b_ode)``: the balanced Stage 2.2 ODE (eq. 23, S = r (a + b)) on the stored times
    ``t[sel]`` from ``start`` x T_21 (T_21: first time every direction has a neuron with <u_i, w*_j>^2 >=
    data.found_threshold, spec §4.7) to the end, started at the simulated direction means of a_hat and b_hat
    there; None for a seed that never finds every direction."""
    tr, h = run.trajectory, hermite_sums(run.config["model"]["activation"])
    rr, out = r_of(run), []
    for s in range(tr["a_hat"].shape[0]):
        hit = np.flatnonzero(tr["directions_found"][s] >= rr)
        if not hit.size:
            out.append(None)
            continue
        i0 = int(np.searchsorted(tr["t"], start * tr["t"][hit[0]]))
        if i0 >= len(tr["t"]) - 1:
            out.append(None)
            continue
        sel = np.arange(i0, tr["t"].shape[0])
        a, b = th.ab_ode(tr["t"][sel], float(tr["a_hat"][s, i0].mean()), float(tr["b_hat"][s, i0].mean()),
                         rr, lam_of(run), h)
        out.append((sel, a, b))
    return out


def ab_errors(run, start: float = AB_START) -> tuple[list[float], list[float]]:
    """Per seed max_t |a_hat - a_ode| / a_ode and |b_hat - b_ode| / b_ode (direction means) from ``start`` x T_21
    to the end (inf for a seed that never finds every direction)."""
    tr, ea, eb = run.trajectory, [], []
    for s, fit in enumerate(ab_overlay(run, start)):
        if fit is None:
            ea.append(float("inf"))
            eb.append(float("inf"))
            continue
        sel, a, b = fit
        ea.append(float(np.max(np.abs(tr["a_hat"][s, sel].mean(-1) - a) / a)))
        eb.append(float(np.max(np.abs(tr["b_hat"][s, sel].mean(-1) - b) / b)))
    return ea, eb


SINGLE_INDEX = premise(Counterfactual(
    "single-index-target",
    lambda c: {k: variant(c[k], seeds=1, time=40.0, points=80, data={"r": 1},
                          metrics=["a_hat", "b_hat", "directions_found"]) for k in ("population", "population-wd")},
    "r = 1 (a single-index target): the direction is found during Stage 1.2, while the irrelevant mass is still being "
    "displaced, so the mass the aligned neurons gain comes from the irrelevant coordinates as well as from the dense "
    "in-subspace mass b_hat, which eq. (23) does not count (S = r (a_hat + b_hat) omits it)."), src.R_LARGE)


def lemma_d18_err(r: int) -> float:
    """eq. (23)'s error term err = O(omega^4 / r) in the rates of a_hat and b_hat, with the constant 1, omega = log
    log log r (1.1e-4 at r = 10, 3.7e-6 at r = 20)."""
    return abs(float(np.log(np.log(np.log(r))))) ** 4 / r


def ab_tolerance(run, start: float = AB_START) -> float:
    """The relative error eq. (23) allows from ``start`` x T_21 to the end: its rate error 2 err (``lemma_d18_err``)
    integrated over the window, exp(2 err (t_end - start T_21)) - 1 (the longest window over seeds, no feedback),
    plus GD's Euler error of eq. (23) at the run's lr (``ab_euler_error``)."""
    tr, rr = run.trajectory, r_of(run)
    spans = [tr["t"][-1] - tr["t"][sel[0]] for sel, _, _ in filter(None, ab_overlay(run, start))]
    return float(np.expm1(2 * lemma_d18_err(rr) * max(spans, default=0.0))) + ab_euler_error(run, start)


AB_TOL_SOURCE = ("derived: eq. (23) as printed, 'a_hat' = 2 a_hat(... ± err)', err = O(omega^4/r) (Lemma D.18's "
                 "proof) with the constant 1, omega = log log log r: err = 1.1e-4 (r = 10) and 3.7e-6 (r = 20), "
                 "integrated over the window, exp(2 err Delta t) - 1, plus GD's Euler error of eq. (23) at the run's lr "
                 "(ab_tolerance: about 1.1 % quick, 0.06 % paper)")


@overlays.claim("ab-ode-tracks",
                "Stage 2.2 (eq. 23, Lemma D.18): once the aligned groups have formed (from 2 T_21, T_21 the first time "
                "every direction is found), the balanced (a_hat, b_hat)-ODE started from the simulated means over "
                "directions tracks the simulated aligned mass a_hat and dense mass b_hat to the end, within eq. (23)'s "
                "error term and GD's step, with lambda = 0 and lambda = r lambda_0 (from T_21 itself: ab-ode-from-t21)",
                kind="finding",
                falsifiers=[Synthetic("follows-eq-23-from-2-t21", lambda c: synthetic_ab(c),
                                      "a_hat and b_hat are eq. (23) itself from 2 T_21")],
                tolerance_source=AB_TOL_SOURCE,
                explanation=(
                    "From 2 T_21 the simulation's direction means are within a few % of eq. (23) in a_hat but not "
                    "within its stated error, and b_hat is far off: quick (r = 10, 3 seeds) a_hat 1.5-1.9 % (lambda = "
                    "0; 1.7-2.2 % with weight decay; 12 seeds 1.47 % +- 0.66 %) and b_hat 18-29 % (22-32 %), against "
                    "1.33 % (1.39 %) that err = omega^4/r = 1.1e-4 over the 53-62 time units allows with GD's step: "
                    "the O()'s constant would have to be >= 1.4-1.6 for a_hat and >= 22-23 for b_hat; at paper scale "
                    "(r = 20, err = 3.7e-6; the reference's a_hat 1.16 %, b_hat 7.8-20 %) about 25 and 450. Eq. (23) "
                    "is the balanced form: it drops the O(r sqrt(eps_dir)) term of the line before it (eps_dir = "
                    "m^-Theta(1), not small at m = 160-250), and at finite m the directions' a_hat differ (Lemma D.19's "
                    "spread, 0.29-0.81 of 2 Delta_0 after T_21), so the mean over directions need not follow the ODE "
                    "of the mean; which of the two dominates is not separated here. The former 3 % (the project's, on "
                    "a_hat only) held at both scales and was too narrow at 3 sd over 12 seeds (mean + 3 sd 3.45 %)."))
def _claim_ab(r: Results) -> Check:
    parts, lines = [], []
    for key in ("population", "population-wd"):
        ea, eb = ab_errors(r[key])
        tol = ab_tolerance(r[key])
        parts += [at_most(ea, tol), at_most(eb, tol)]
        lines.append(f"{key}: a_hat {', '.join(f'{x:.3g}' for x in ea)}, b_hat {', '.join(f'{x:.3g}' for x in eb)} "
                     f"(allowed {tol:.3g})")
    at_t21 = {key: ab_errors(r[key], 1.0) for key in ("population", "population-wd")}
    fmt21 = "; ".join(f"{k}: a {max(e[0]):.3g}, b {max(e[1]):.3g}" for k, e in at_t21.items())
    return all_of(*parts, details="max relative error from 2 T_21 to the end per seed: " + "; ".join(lines)
                  + f". From T_21: {fmt21}")


def _ab_follows(configs):
    """Figure-1 runs whose a_hat, b_hat follow eq. (23) exactly from T_21 (a world where the statement holds)."""
    runs = {}
    for key in ("population", "population-wd"):
        cfg = configs[key]
        tr = synthetic_figure1(cfg)
        run = synthetic_run(cfg, key, tr)
        for s, fit in enumerate(ab_overlay(run, 1.0)):
            sel, a, b = fit
            tr["a_hat"][s, sel] = a[:, None]
            tr["b_hat"][s, sel] = b[:, None]
        runs[key] = synthetic_run(cfg, key, tr)
    return runs


@overlays.claim("ab-ode-from-t21",
                "Stages 2.2-2.3 (eq. 23, Lemma D.18): from T_21, the end of Stage 2.1 (every direction found), the "
                "balanced (a_hat, b_hat)-ODE started from the simulated means over directions tracks the aligned mass "
                "a_hat and the dense mass b_hat to the end within eq. (23)'s error term and GD's step, with lambda = 0 "
                "and lambda = r lambda_0",
                kind="finding",
                falsifiers=[Synthetic("follows-eq-23", _ab_follows, "a_hat and b_hat are eq. (23) itself from T_21")],
                tolerance_source=AB_TOL_SOURCE + ", over the window from T_21. In place of the project's 3 % (a_hat) "
                                 "and 10 % (b_hat), which 12 of 12 seeds failed (quick, lambda = 0: a_hat 6.9 % +- 2.5 "
                                 "%, b_hat 31.9 % +- 6.5 %)",
                explanation=(
                    "From T_21 the simulation runs ahead of eq. (23): a_hat by 6-14 % and b_hat by 30-45 % at quick "
                    "scale (the issue's paper-scale numbers: 7 % and 26-30 %), while integrating eq. (23) by explicit "
                    "Euler at the run's lr changes it by 1e-4 (a_hat) and 5e-4 (b_hat), so the gap is the model's, "
                    "not GD's. Eq. (23) fixes the aligned groups G_j at T_21 (the paper's 'G_i be the neurons aligned "
                    "with e_i at the end of Stage 2.1'); at finite m, neurons keep joining them after T_21 (the "
                    "aligned count doubles between T_21 and 2 T_21), a flow of mass from b_hat to a_hat that the ODE "
                    "does not have; in the theorem's regime the potential neurons are m^{o(1)} and all align by T_21. "
                    "ab-ode-tracks checks the same ODE from 2 T_21, once the groups have formed (a_hat within 1.5-2.2 "
                    "%), a window chosen by the project, not the paper."))
def _claim_ab_t21(r: Results) -> Check:
    parts, lines = [], []
    for key in ("population", "population-wd"):
        ea, eb = ab_errors(r[key], 1.0)
        tol = ab_tolerance(r[key], 1.0)
        parts += [at_most(ea, tol), at_most(eb, tol)]
        lines.append(f"{key}: a_hat {', '.join(f'{x:.3g}' for x in ea)}, b_hat {', '.join(f'{x:.3g}' for x in eb)} "
                     f"(allowed {tol:.3g})")
    return all_of(*parts, details="max relative error from T_21 to the end per seed: " + "; ".join(lines))


def ab_euler_error(run, start: float = 1.0) -> float:
    """The GD discretization error of eq. (23) at the run's lr: max relative difference between explicit Euler
    at step lr and the exact solution (LSODA), from ``start`` x T_21 to the end, seed 0 (a_hat and b_hat)."""
    fit = ab_overlay(run, start)[0]
    if fit is None:
        return float("nan")
    sel, a_ode, b_ode = fit
    tr, h, rr, lam, lr = (run.trajectory, hermite_sums(run.config["model"]["activation"]), r_of(run), lam_of(run),
                          run.config["train"]["lr"])
    a, b = float(tr["a_hat"][0, sel[0]].mean()), float(tr["b_hat"][0, sel[0]].mean())
    ks = np.rint(tr["t"][sel] / lr).astype(np.int64)
    A, B = np.empty(len(ks)), np.empty(len(ks))
    j, k = 0, ks[0]
    while j < len(ks):
        if k == ks[j]:
            A[j], B[j] = a, b
            j += 1
            continue
        common = -lam + 2 * h.s0 * (rr - rr * (a + b)) + 2 * h.s2 * (1 - a - b)
        a, b = a + lr * 2 * a * (common + 2 * h.s4p * (1 - a)), b + lr * 2 * b * common
        k += 1
    return float(max(np.max(np.abs(A - a_ode) / a_ode), np.max(np.abs(B - b_ode) / b_ode)))


def synthetic_ab(configs: dict[str, dict], ahead: float = 0.0) -> dict:
    """Figure-1 runs whose a_hat, b_hat follow eq. (23) from 2 T_21 (a_hat ``ahead`` above it)."""
    runs = {}
    for key in ("population", "population-wd"):
        cfg = configs[key]
        tr = synthetic_figure1(cfg)
        run = synthetic_run(cfg, key, tr)
        for s, fit in enumerate(ab_overlay(run)):
            sel, a, b = fit
            tr["a_hat"][s, sel] = (a * (1 + ahead))[:, None]
            tr["b_hat"][s, sel] = b[:, None]
        runs[key] = synthetic_run(cfg, key, tr)
    return runs


@overlays.plot("overlays", "Panel 1: total mass (solid) vs the logistic Stage 1.1 law (dashed), lr = 0.002. Panel 2: "
                           "subspace and irrelevant mass (solid) vs the full beta-ODE from the initialization "
                           "(dashed), lr = 0.002. Panel 3: worst-covered direction min_j max_i u_ij^2 (solid) vs the "
                           "Stage 2.1 p-ODE started at t = tau_2 from the simulated value (dashed). Panel 4: aligned "
                           "mass a_hat and dense mass b_hat per direction (means over directions; solid lambda = 0, "
                           "dotted lambda = r lambda_0) vs the balanced Stage 2.2 ODE of eq. (23) started at T_21 "
                           "(thin dashed) and at 2 T_21 (dashed).")
def _plot_overlays(r: Results):
    fine, run = r["fine"], r["population"]
    h = hermite_sums("abs")
    fig, (a1, a2, a3, a4) = panels(4, width=3.6, height=2.9)
    tf = fine.trajectory
    t, M = positive_times(tf["t"], tf["mass_total"])
    band(a1, t, M, label="simulation")
    a1.plot(t, th.stage11_mass(t, float(tf["mass_total"][0, 0]), r_of(fine), 0.0, h), "--", color="black",
            label="logistic")
    a1.set(xscale="log", xlabel="t", ylabel="total mass", title="Stage 1.1 (lr 0.002)")
    a1.legend()
    sel, sub, irr = beta_overlay(fine)[0]
    a2.plot(tf["t"], tf["mass_subspace"][0], color="C0", label="subspace (sim.)")
    a2.plot(tf["t"][sel], sub, "--", color="C0", label="beta-ODE")
    a2.plot(tf["t"], tf["mass_irrelevant"][0], color="C1", label="irrelevant (sim.)")
    a2.plot(tf["t"][sel], irr, "--", color="C1")
    a2.set(xlabel="t", ylabel="mass", title="Stage 1.2 (seed 0, lr 0.002)")
    a2.legend()
    tr = run.trajectory
    t = tr["t"]
    band(a3, t, tr["direction_alignment_min"], label="simulation")
    taus = [x["tau_order2"] for x in transition_times(tr) if x["tau_order2"] is not None]
    if taus:  # Stage 2.1 starts once the subspace is learned (T_1 ~ tau_2): p-ODE from the value there
        i0 = int(np.searchsorted(t, float(np.median(taus))))
        p0 = float(np.median(tr["direction_alignment_min"][:, i0]))
        a3.plot(t[i0:], th.alignment_ode(t[i0:], p0, th.HermiteSums.of(ABS, K=1000)), "--", color="black",
                label="p-ODE from t = tau_2")
    a3.set(xlabel="t", ylabel=r"$\min_j \max_i \bar u_{ij}^2$", title="Stage 2.1 (worst direction)")
    a3.legend()
    for key, style in (("population", "-"), ("population-wd", ":")):
        trk = r[key].trajectory
        lab = "lambda = 0" if key == "population" else "lambda = r lambda_0"
        a4.plot(trk["t"], trk["a_hat"][0].mean(-1), style, color="C0", label=f"a_hat ({lab})")
        a4.plot(trk["t"], trk["b_hat"][0].mean(-1), style, color="C1", label=f"b_hat ({lab})")
        for start, width in ((1.0, 0.6), (AB_START, 1.0)):
            fit = ab_overlay(r[key], start)[0]
            if fit is None:
                continue
            sel, a, b = fit
            a4.plot(trk["t"][sel], a, "--", color="black", linewidth=width)
            a4.plot(trk["t"][sel], b, "--", color="gray", linewidth=width)
    a4.set(xlabel="t", ylabel="mass per direction", title="Stage 2.2 (seed 0; dashed: ODE)")
    a4.legend(fontsize=6)
    return fig
