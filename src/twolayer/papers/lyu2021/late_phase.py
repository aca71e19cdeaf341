"""E8 (Lyu & Li 2020, Theorem 3.1's late phase): in EVERY run of every lyu2021 experiment, once n L < ln 2
the smoothed margin gamma~ = -log(expm1(n L)) / ||theta||^2 never decreases, and gamma~ <= gamma.

The experiment's runs are the runs of all other lyu2021 experiments (their configs, unchanged, so
``reproduce`` finds them in the store): the check covers every run by construction, the
assumption-broken one included (the theorem holds for any homogeneous net on separable data).
"""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import at_least, holds
from twolayer.claims.falsifiers import Premise, Synthetic, SyntheticRun
from twolayer.claims.registry import EXPERIMENTS, Experiment, Results, register
from twolayer.papers.lyu2021._shared import (
    LATE_METRICS, LN_LN2, base_config, late_phase_series, symmetric_data, synthetic_run,
)
from twolayer.plotting import panels

LATE_ID = "lyu2021/late-phase"
STEP_TOL = 1e-6  # spec P13: steps >= -1e-6 |gamma~| (integrator error)


def source_experiments() -> list[Experiment]:
    return [EXPERIMENTS.get(i) for i in EXPERIMENTS if i.startswith("lyu2021/") and i != LATE_ID]


def late_configs(scale: str) -> dict[str, dict]:
    return {f"{exp.name}/{key}": cfg for exp in source_experiments() for key, cfg in exp.run_configs(scale).items()}


late_phase = register(Experiment(
    id=LATE_ID,
    title="Late phase: the smoothed margin never decreases once n L < ln 2, in every lyu2021 run",
    figure="Theorem 3.1 (Lyu & Li 2020); spec E8",
    description=(
        "Every run of every other lyu2021 experiment (the same configs, found in the store): gradient flow or GD "
        "on symmetric, hinted and non-symmetric data, small and large inits, widths 2 to 20. Once the summed "
        "loss n L falls below ln 2 (every point classified with margin), the smoothed normalized margin "
        "gamma~ = -log(expm1(n L)) / ||theta||^2 must be non-decreasing (steps >= -1e-6 |gamma~|, integrator "
        "error) and at most the normalized margin gamma = q_min / ||theta||^2."),
    configs=late_configs,
))


def late_steps(run) -> tuple[float, float, int]:
    """(worst relative step of gamma~, largest (gamma~ - gamma) / |gamma|, late observations) over seeds."""
    logsum = run.seeded("log_loss_sum")
    smooth, normal = run.seeded("smoothed_margin"), run.seeded("normalized_margin")
    worst_step, worst_excess, count = np.inf, -np.inf, 0
    for s in range(logsum.shape[0]):
        late = logsum[s] < LN_LN2
        g, q = smooth[s][late], normal[s][late]
        count += int(late.sum())
        if len(g) > 1:
            worst_step = min(worst_step, float(np.min(np.diff(g) / np.maximum(np.abs(g[1:]), 1e-300))))
        if len(g):
            worst_excess = max(worst_excess, float(np.max((g - q) / np.maximum(np.abs(q), 1e-300))))
    return worst_step, worst_excess, count


def ideal_runs(configs: dict[str, dict], defect: str | None = None) -> dict[str, SyntheticRun]:
    """Every run with a healthy late phase (gamma~ rising below gamma); ``dip``: gamma~ of one seed of the
    first run drops by 1 % once; ``above``: gamma~ exceeds gamma at one point."""
    out = {}
    t = np.concatenate([[0.0], np.geomspace(1e-2, 1e3, 39)])
    for i, (key, cfg) in enumerate(configs.items()):
        S = len(cfg["seeds"]) if isinstance(cfg.get("seeds"), list) else (cfg.get("seeds") or 1)
        series = late_phase_series(t, S)
        if i == 0 and defect == "dip":
            series["smoothed_margin"][0, 30:] *= 1 - 1e-2
        if i == 0 and defect == "above":
            series["smoothed_margin"][0, 30] = 1.01 * series["normalized_margin"][0, 30]
        if cfg.get("seeds") is None:
            series = {k: v[0] for k, v in series.items()}
        out[key] = synthetic_run(cfg, key.replace("/", "-"), {"t": t, **series})
    return out


def _sgd_config() -> dict:
    cfg = base_config(symmetric_data(), 4, {"kind": "balanced", "scale": 3.0},
                      {"method": "sgd", "lr": 1.0, "steps": 400, "batch_size": 1}, list(LATE_METRICS), 2, seeds=2)
    cfg["observe"] = {"schedule": "every", "every": 1, "metrics": list(LATE_METRICS)}
    cfg["name"] = "lyu2021-counterfactual"
    return cfg


# The premise of Theorem 3.1 (and of Lyu & Li 2020's monotone smoothed margin) that the dynamics are gradient flow,
# removed: the run of the former counterfactual, unchanged (400 SGD steps, 2 seeds, width 4; seconds)
SOURCE_FLOW = ("Theorem 3.1 (Sec. 3): 'Gradient flow with logistic loss is defined by the following differential "
               "inclusion ... For homogeneous neural networks, if L(theta(0)) < ln 2 / n, then L(theta(t)) -> 0, ...' "
               "(the smoothed margin is non-decreasing along that flow, Lyu & Li 2020)")
SGD = Premise(
    "sgd-batch-1", lambda configs: {"sgd/late": _sgd_config()},
    "SGD with one point per step (lr 1) from init scale 3 (the late phase at once), observed every step: not "
    "gradient flow; each step fits one point and the smoothed margin falls by up to 30x its size", source=SOURCE_FLOW)


@late_phase.claim("smoothed-margin-monotone",
                  "In every run, once n L < ln 2: the smoothed margin gamma~ never decreases (every step >= -1e-6 "
                  "|gamma~|) (P13, E8; Lyu & Li 2020, Theorem 3.1)", kind="prediction",
                  falsifiers=[Synthetic("synthetic-dip", lambda c: ideal_runs(c, "dip"),
                                        "gamma~ of one seed drops by 1 % once"), SGD],
                  tolerance_source="solver: steps >= -1e-6 |gamma~| (the spec's P13 integrator allowance, flow_log "
                                   "rtol 1e-6; the tau = 1e5 continuations of sign-groups run at rtol 1e-8, since at "
                                   "1e-6 their accumulated error dips gamma~ by 1.06e-6 of itself and at 1e-8 not at all)")
def _monotone(r: Results):
    rows = {key: late_steps(run) for key, run in r.runs.items()}
    late = {k: v for k, v in rows.items() if v[2] > 1}
    steps = [v[0] for v in late.values()]
    never = sorted(k for k, v in rows.items() if v[2] <= 1)
    worst = min(late, key=lambda k: late[k][0]) if late else "-"
    return at_least(steps, -STEP_TOL, scale=STEP_TOL,
                    details=f"{len(late)} runs reach the late phase (worst relative step {min(steps, default=np.nan):.3g} "
                            f"in {worst}); no late phase in {len(never)} run(s): {', '.join(never) or 'none'}")


@late_phase.claim("smoothed-below-normalized",
                  "In every run, once n L < ln 2: gamma~ <= gamma (an identity: n L >= l(q_min) for every theta)",
                  kind="consistency",
                  falsifiers=[Synthetic("synthetic-above", lambda c: ideal_runs(c, "above"),
                                        "gamma~ exceeds gamma by 1 % at one observation")],
                  tolerance_source="solver: 1e-12 relative (the two margins are computed from the same theta)")
def _below(r: Results):
    rows = {key: late_steps(run) for key, run in r.runs.items()}
    excess = [v[1] for v in rows.values() if v[2] > 1]
    worst = max(excess, default=-np.inf)
    # gamma~ <= gamma holds for any theta (n L >= l(q_min)): an identity of the observables, with no slack to report
    return holds(worst <= 1e-12, "gamma~ <= gamma", f"max (gamma~ - gamma)/gamma {worst:.3g}",
                 details=f"{len(excess)} runs reach the late phase; holds for every theta, not only on the flow")


@late_phase.plot("steps", "Per run: the worst relative step of the smoothed margin after n L < ln 2 (symlog axis; the "
                          "dashed line is the allowed -1e-6) and the number of late-phase observations.")
def _plot(r: Results):
    rows = {key: late_steps(run) for key, run in r.runs.items() if late_steps(run)[2] > 1}
    fig, (ax,) = panels(1, width=6.4, height=0.22 * max(len(rows), 4) + 1.0)
    keys = sorted(rows)
    ax.barh(range(len(keys)), [rows[k][0] for k in keys], color="C0")
    ax.axvline(-STEP_TOL, color="gray", ls="--", lw=0.8)
    ax.set_xscale("symlog", linthresh=1e-7)
    ax.set(yticks=range(len(keys)), xlabel=r"worst relative step of $\tilde\gamma$ (symlog; allowed $\geq -10^{-6}$)",
           title="smoothed margin in the late phase")
    ax.set_yticklabels(keys, fontsize=6)
    return fig
