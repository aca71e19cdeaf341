"""Beyond the paper: the paper's schedule (App. A.2, Stage 2.3), weight decay switched off after Stage 2.2,
against plain GD with weight decay (method ``gd_paper``, ``twolayer.train.gd_paper``)."""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import Check, all_of, at_most, close_to
from twolayer.claims.falsifiers import Counterfactual, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.multiindex2026 import premises as src
from twolayer.papers.multiindex2026.premises import premise
from twolayer.papers.multiindex2026._shared import (
    LAMBDA0, PAPER, SCALE, base_config, gd, hermite_sums, lam_paper, r_of, small, synthetic_run,
)
from twolayer.plotting import band, panels, positive_times
from twolayer.theory import multi_index as th

# paper: t = 250, since at r = 20 the one-sided Stage 2.2 test fires only at t = 183-198 (b_hat/a_hat decays at
# 4 sigma_hat_{>=4}^2 (1 - a*) = 0.0069), too late for the loss to fall 10x by t = 200 (0.055 on one seed)
SIZES = {"quick": dict(d=24, r=6, m=48, seeds=2, time=200.0), "paper": dict(d=100, r=20, m=250, seeds=2, time=250.0)}
METRICS = ["loss_population", "mass_total", "mass_aligned"]


def schedule_configs(scale: str) -> dict[str, dict]:
    s, a = SCALE[scale], SIZES[scale]
    out = {}
    for method in ("gd", "gd_paper"):
        cfg = base_config(s, d=a["d"], r=a["r"], m=a["m"], seeds=a["seeds"], metrics=METRICS)
        out[method] = {**cfg, "train": {**gd(s["lr"], a["time"], a["r"] * LAMBDA0), "method": method}}
    out["gd_paper-rule"] = {**out["gd_paper"], "train": {**out["gd_paper"]["train"], **PAPER_RULE}}
    return out


PAPER_RULE = {"boost_rule": "paper"}  # the set fixed at T_21, boosted for log(m)/gamma (App. A.2, Lemma D.17)


schedule = register(Experiment(
    id=f"{PAPER}/schedule",
    title="The paper's schedule: weight decay lambda = r lambda_0 switched off after Stage 2.2",
    figure="beyond the paper (App. A.2, Stage 2.3)",
    description=(
        "Plain GD with weight decay lambda = r lambda_0 stalls at the plateau (1 - a*)^2 (E_0 + E_{>=2}); method "
        "gd_paper detects the end of Stage 2.2 from the weights (every direction found, dense mass per direction "
        "<= 0.02, aligned mass >= a* - 0.02), switches lambda off and the loss then goes to 0 (Stage 2.3). Its "
        "gamma = m window on aligned neurons opens only while a direction's aligned mass is below 0.5/r (the "
        "method's defaults; README, 'Method gd_paper'); a third run uses the paper's own boost rule (the aligned set "
        "fixed at T_21, boosted for log(m)/gamma)."),
    configs=schedule_configs,
))


def synthetic_schedule(configs: dict[str, dict], switch: bool = True) -> dict:
    """GD at the plateau, and both gd_paper runs leaving it for 1e-3 of it after t = 100 (``switch``) or not."""
    runs = {}
    for key, cfg in configs.items():
        r, lam, T = cfg["data"]["r"], cfg["train"]["weight_decay"], cfg["train"]["lr"] * cfg["train"]["steps"]
        plateau = th.plateau_loss(r, lam, hermite_sums("abs"))
        t = np.linspace(0.0, T, 50)
        loss = plateau + 10.0 * np.exp(-t / 5.0)
        if key.startswith("gd_paper") and switch:
            loss = np.where(t > 100, plateau * 1e-3, loss)
        runs[key] = synthetic_run(cfg, key, {"t": t, "loss_population": np.tile(loss, (cfg["seeds"], 1))})
    return runs


EPS_FRACTION = 0.01  # Theorem 3.1's target error eps = 0.01 E_{>=4} (spec §4.7 eps_target, as theorem31-table)


def eps_target(run) -> float:
    """eps = 0.01 E_{>=4}, E_{>=4} = (r/2) sum_{k>=4} sigma_hat_k^2 (the target's energy above order 2)."""
    return EPS_FRACTION * 0.5 * r_of(run) * hermite_sums("abs").s4p


@schedule.claim("plateau-then-switch",
                "GD with lambda stays at the plateau (1 - a*)^2 (E_0 + E_{>=2}) (within 2 % at the end, t = 200 quick, "
                "250 paper), while the paper's schedule ends at or below Theorem 3.1's eps = 0.01 E_{>=4}",
                kind="prediction",
                falsifiers=[Synthetic("never-switches", lambda c: synthetic_schedule(c, switch=False),
                                      "gd_paper stays on the plateau"),
                            premise(Counterfactual("weight-decay-never-off",
                                           lambda c: {"gd": small(c["gd"], seeds=1, points=20),
                                                      "gd_paper": {**small(c["gd_paper"], seeds=1, points=20),
                                                                   "train": {**c["gd"]["train"]}}},
                                           "gd_paper's switch removed (plain GD in its place): nothing takes lambda "
                                           "off, so the loss stays on the plateau"), src.WEIGHT_DECAY_OFF)],
                tolerance_source="derived: the plateau (1 - a*)^2 (E_0 + E_{>=2}) is where f = a* f*; 2 % allows the "
                                 "dense mass left at t = 200 (b_hat/a_hat decays at 4 sigma_hat_{>=4}^2 (1 - a*)); paper: "
                                 "Theorem 3.1, 'for any given target error eps > e^{-log^2 r}' the schedule reaches L <= "
                                 "eps; eps = 0.01 E_{>=4} as theorem31-table:reaches-epsilon (4.5e-3 at r = 20, 4.2x "
                                 "below the project's former 0.1 x plateau; at r = 6 the theorem's floor 0.040 is above "
                                 "the plateau 0.016, so there eps = 1.35e-3 is stricter than the theorem)")
def _claim_schedule(r: Results) -> Check:
    run = r["gd"]
    plateau = th.plateau_loss(r_of(run), lam_paper(run), hermite_sums("abs"))
    return all_of(close_to(r["gd"].trajectory["loss_population"][:, -1].tolist(), plateau, rtol=0.02),
                  at_most(float(np.max(r["gd_paper"].trajectory["loss_population"][:, -1])), eps_target(run)),
                  details=f"plateau {plateau:.4g}; eps = 0.01 E_>=4 = {eps_target(run):.4g}")


@schedule.claim("paper-rule-switches",
                "With the paper's own boost rule (App. A.2: gamma = m on the set fixed at T_21, here the aligned "
                "neurons, for T_21 <= t <= T_21 + log(m)/gamma) the schedule also ends at or below Theorem 3.1's eps = "
                "0.01 E_{>=4}",
                kind="prediction",
                falsifiers=[Synthetic("never-switches", lambda c: synthetic_schedule(c, switch=False),
                                      "the paper-rule run stays on the plateau"),
                            premise(Counterfactual("weight-decay-never-off",
                                           lambda c: {"gd_paper-rule": small(c["gd"], seeds=1, points=20)},
                                           "the schedule removed (plain GD with lambda = r lambda_0 in its place): "
                                           "nothing takes lambda off, so the loss stays on the plateau"),
                                    src.WEIGHT_DECAY_OFF)],
                tolerance_source="paper: Theorem 3.1, 'for any given target error eps > e^{-log^2 r}' the schedule "
                                 "reaches L <= eps (Stage 2.3); eps = 0.01 E_{>=4} as theorem31-table:reaches-epsilon "
                                 "(replaces the project's 0.1 x plateau: 4.2x stricter at r = 20, 1.2x at r = 6)")
def _claim_paper_rule(r: Results) -> Check:
    run = r["gd_paper-rule"]
    plateau = th.plateau_loss(r_of(run), lam_paper(run), hermite_sums("abs"))
    tr = run.trajectory
    return at_most(float(np.max(tr["loss_population"][:, -1])), eps_target(run),
                   details=f"plateau {plateau:.4g}; eps = 0.01 E_>=4 = {eps_target(run):.4g}; boost_rule "
                           f"{run.config['train'].get('boost_rule')}")


@schedule.plot("schedule", "Population loss of GD with weight decay (stalls at the dotted plateau) and of the paper's "
                           "schedule (weight decay switched off after Stage 2.2).")
def _plot_schedule(r: Results):
    fig, (ax,) = panels(1, width=4.4, height=3.2)
    for key, label in (("gd", "GD, lambda = r lambda_0"), ("gd_paper", "paper schedule (gd_paper)"),
                       ("gd_paper-rule", "gd_paper, the paper's boost rule")):
        if key not in r.runs:
            continue
        tr = r[key].trajectory
        t, L = positive_times(tr["t"], tr["loss_population"])
        band(ax, t, L, label=label, positive=True)
    run = r["gd"]
    ax.axhline(th.plateau_loss(r_of(run), lam_paper(run), hermite_sums("abs")), color="gray", linestyle=":",
               label="plateau")
    ax.set(xscale="log", yscale="log", xlabel="t", ylabel="population loss", title="schedule vs plain GD")
    ax.legend()
    return fig
