"""Theorem A.7 [RECON] (the general non-symmetric case behind Theorem 6.2): on separable data meeting
Assumptions A.2, A.3, A.5 (and A.6), gradient flow from a small init converges to the one-positive-neuron
max-margin direction along w^+, with normalized margin gamma^+/2.

The data (``imbalanced_separable``: 16 positives near the boundary, 8 negatives far from it, 2-D) are
drawn until the assumptions hold as the spec reconstructs them (spec §2.5, App. A; their statements lost
their display math): A.2 [RECON, operational form] mu^+ classifies every point, y_i <mu^+, x_i> > 0 (the
positive neurons that align with mu^+ in Phase I then sit where G(w) = <mu^+, w>/2 is linear); A.3
||mu^+|| > ||mu^-||; A.5 every support vector of {(x_i^+, y_i)} has y_i = +1 (the sufficient condition the
paper gives); A.6 (non-branching start) cannot be checked numerically and is assumed. The data test
(tests/experiments/test_lyu2021_data.py) checks them; ``details`` report them for the run's data.
"""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import all_of, at_least, at_most
from twolayer.claims.runs import run_dataset
from twolayer.claims.falsifiers import Counterfactual, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.lyu2021._shared import (
    ALPHA, base_config, dataset, final, flow_train, last, late_phase_series, replace_runs, rising, synthetic_run,
    synthetic_tau, tau, tau_axis,
)
from twolayer.plotting import band, panels

SCALE_SETTINGS = {"quick": dict(seeds=4, tau=500.0, points=40), "paper": dict(seeds=10, tau=500.0, points=120)}
A7_DATA = {"kind": "imbalanced_separable", "d": 2, "n_pos": 16, "n_neg": 8, "margin_pos": 0.05, "margin_neg": 0.4,
           "seed": 0, "check_slope": ALPHA}
A7_METRICS = ["log_loss", "normalized_margin", "group_mass", "boundary_linearity", "kkt_residual"]
WIDTH, SIGMA = 8, 1e-30  # the theorem is a sigma -> 0 statement; at 1e-12 the negative share is still ~1e-3


def a7_config(data: dict, sigma: float, tau_end: float, seeds: int, points: int, width: int = WIDTH) -> dict:
    return base_config(data, width, {"kind": "balanced", "scale": sigma}, flow_train(tau_end), A7_METRICS, points,
                       seeds=seeds)


def a7_configs(scale: str) -> dict[str, dict]:
    s = SCALE_SETTINGS[scale]
    return {"flow": a7_config(A7_DATA, SIGMA, s["tau"], s["seeds"], s["points"])}


a7 = register(Experiment(
    id="lyu2021/nonsymmetric-general",
    title="Non-symmetric data meeting A.2-A.5: convergence to the one-positive-neuron direction w^+ (gamma^+/2)",
    figure="Theorem A.7 [RECON], Appendix A; spec §3",
    description=(
        "24 separable points in 2-D, not symmetric: 16 positives with teacher margin > 0.05 and 8 negatives with "
        "margin > 0.4, drawn until A.2 (mu^+ classifies every point), A.3 (||mu^+|| > ||mu^-||) and A.5 (the "
        "support vectors of {(x^+, y)} are all positive) hold; width 8, balanced init 1e-30, flow_log to tau = 500. "
        "Theorem A.7 predicts the limit direction of one positive neuron along w^+, the max-margin separator of "
        "{(x_i^+, y_i)} (x^+ = x for y = +1, alpha x for y = -1): every positive neuron on w^+, the negative "
        "neurons' share of ||theta||^2 vanishing, normalized margin gamma^+/2, a linear boundary."),
    configs=a7_configs,
))


def references(r: Results, key: str = "flow") -> dict:
    from twolayer.theory.margin import hinted_prechecks, one_neuron_margin

    def compute():
        data = dataset(r, key)
        w_plus, g_plus = one_neuron_margin(data.X, data.y, ALPHA, +1)
        return {"w_plus": w_plus, "gamma_plus": g_plus, "checks": hinted_prechecks(data.X, data.y, ALPHA)}

    return r.memo(f"a7-refs:{key}", compute)


def _assumptions(r: Results) -> str:
    c = references(r)["checks"]
    return (f"data: A.2 mu^+ classifies every point: {c['mu_plus_classifies_all']}; A.3 ||mu^+|| = "
            f"{c['mu_plus_norm']:.4f} > ||mu^-|| = {c['mu_minus_norm']:.4f}: {c['A3_mu_plus_larger']}; A.5 support "
            f"vectors of (x^+, y) positive: {c['A5_support_vectors_positive']}; A.6 assumed; gamma^+ = "
            f"{c['gamma_plus']:.5g} [RECON]")


# -- falsifiers -------------------------------------------------------------------------------------

def ideal_runs(configs: dict[str, dict], defect: str | None = None) -> dict[str, SyntheticRun]:
    """The limit of Theorem A.7 for every seed: positive neurons on w^+, negative ones at share 1e-12, margin
    rising to 0.9995 gamma^+/2. ``margin``: one seed ends at 1.1 gamma^+/2; ``negative``: one seed keeps a
    negative share of 1e-2; ``direction``: one positive neuron ends 5 degrees off w^+."""
    from twolayer.theory.margin import one_neuron_margin

    cfg = configs["flow"]
    data = run_dataset(SyntheticRun(cfg))
    w_plus, g_plus = one_neuron_margin(data.X, data.y, ALPHA, +1)
    S, m = cfg["seeds"], cfg["model"]["width"]
    t = synthetic_tau(end=500.0)
    signs = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    a = np.where(signs > 0, 10.0, -1e-5) * np.ones((S, m))
    W = np.abs(a)[:, :, None] * np.sign(a)[:, :, None] * w_plus[None, None, :]
    ratio = np.full(S, 0.9995)
    neg = np.full(S, 1e-12)
    if defect == "margin":
        ratio[0] = 1.1
    if defect == "negative":
        neg[0] = 1e-2
    if defect == "direction":
        c, s = np.cos(np.deg2rad(5.0)), np.sin(np.deg2rad(5.0))
        W[0, 0] = np.abs(a[0, 0]) * np.array([c * w_plus[0] - s * w_plus[1], s * w_plus[0] + c * w_plus[1]])
    traj = {"t": t, **late_phase_series(t, S, gamma=g_plus / 2), "normalized_margin": rising(t, ratio * g_plus / 2),
            "group_mass_neg": np.repeat(neg[:, None], len(t), axis=1)}
    traj["smoothed_margin"] = traj["normalized_margin"] - 1e-3 * g_plus / (1 + t)
    return {"flow": synthetic_run(cfg, "flow", traj, W, a)}


def _synthetic(defect: str, why: str) -> Synthetic:
    return Synthetic(f"synthetic-{defect}", lambda configs: ideal_runs(configs, defect), why)


ASSUMPTIONS_BROKEN = Counterfactual(
    "A3-A5-broken", replace_runs(flow=a7_config({"kind": "separable_ball", "d": 5, "n": 60, "margin": 0.1, "seed": 0},
                                                SIGMA, 100.0, 2, 20)),
    "the non-symmetric data of lyu2021/theorem4-nonsymmetric (||mu^+|| < ||mu^-||, support vectors of both signs): "
    "A.3 and A.5 fail and the flow ends on a nonlinear classifier whose margin is far above gamma^+/2")
LARGE_INIT = Counterfactual(
    "large-init", replace_runs(flow=a7_config(A7_DATA, 1.0, 100.0, 2, 20)),
    "init scale 1 (Theorem A.7 is a sigma -> 0 statement): the negative neurons keep a large share of ||theta||^2")


# -- claims -----------------------------------------------------------------------------------------

@a7.claim("margin-gamma-plus", "Theorem A.7: the normalized margin tends to gamma^+/2 from below: gamma / (gamma^+/2) "
                               "in [0.97, 1.0005], every seed", kind="prediction",
          falsifiers=[_synthetic("margin", "one seed ends at 1.1 gamma^+/2"), ASSUMPTIONS_BROKEN],
          tolerance_source="exploratory: the window [0.97, 1.0005] of hinted:margin-gamma-plus (spec P11)")
def _margin(r: Results):
    ratio = last(r["flow"], "normalized_margin") / (references(r)["gamma_plus"] / 2)
    return all_of(at_least(ratio, 0.97, scale=0.03), at_most(ratio, 1.0005, scale=5e-4), details=_assumptions(r))


@a7.claim("one-positive-neuron", "Theorem A.7: the limit is one positive neuron along w^+: every neuron with a_k > 0 "
                                 "ends within cos >= 0.999 of w^+, and the negative neurons' share of ||theta||^2 is "
                                 "<= 1e-4, every seed", kind="prediction",
          falsifiers=[_synthetic("direction", "one positive neuron ends 5 degrees off w^+"),
                      _synthetic("negative", "one seed keeps a negative share of 1e-2"), LARGE_INIT],
          tolerance_source="exploratory: cos >= 0.999 (spec P2's) and a negative share <= 1e-4 (observed <= 5e-6)")
def _direction(r: Results):
    W, a = final(r["flow"])
    w_plus = references(r)["w_plus"]
    cos = (W @ w_plus) / np.maximum(np.linalg.norm(W, axis=2), 1e-300)
    worst = np.array([np.min(cos[s][a[s] > 0]) if np.any(a[s] > 0) else -1.0 for s in range(len(a))])
    neg = last(r["flow"], "group_mass_neg")
    return all_of(at_least(worst, 0.999, scale=1e-3), at_most(neg, 1e-4),
                  details=f"min cos(w_k, w^+) over positive neurons per seed {np.round(worst, 6).tolist()}; negative "
                          f"share {neg.tolist()}; cos(w^+, w*) = {references(r)['checks']['cos_wplus_wstar']:.6f}")


@a7.plot("a7", "Left: normalized margin over gamma^+/2 against tau = ln(1 + t) (median over seeds, range shaded); "
               "right: the negative neurons' share of ||theta||^2 (log axis).")
def _plot(r: Results):
    fig, (ax, ax2) = panels(2, width=3.9, height=3.0)
    run = r["flow"]
    t = tau(run)
    keep = t > 0
    g = references(r)["gamma_plus"] / 2
    band(ax, t[keep], run.seeded("normalized_margin")[:, keep] / g, label=r"$\gamma / (\gamma^+/2)$")
    ax.axhline(1.0, color="gray", ls="--", lw=0.8)
    ax.set_ylim(-0.2, 1.1)
    tau_axis(ax)
    ax.set(title="margin (Theorem A.7)")
    band(ax2, t[keep], run.seeded("group_mass_neg")[:, keep], label="negative share", positive=True)
    tau_axis(ax2)
    ax2.set(yscale="log", title=r"$A_-$")
    return fig
