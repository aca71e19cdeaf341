"""E6 (Theorem 6.2, Definition 6.1 [RECON], Figure 1 right): on hinted data gradient flow from a tiny
init converges to a linear-boundary classifier with margin gamma^+/2, which is sub-optimal.

The data pre-checks of spec E6 (mu^+ classifies every point, A.3, A.5, w^+ = w*) look only at the
data: they are tests (tests/experiments/test_lyu2021_data.py), not claims.

The best margin of any linear-boundary classifier on the data, gamma_lin, is computed by
``theory.margin.linear_family_margin``: every net with all neurons on +-v (unit v) and a share p of
||theta||^2/2 on +v has gamma = min((p + alpha(1-p))/2 m_+(v), (alpha p + 1 - p)/2 m_-(v)) (spec §2.8);
the optimum over p is closed form, v is searched on a 7200-angle grid refined by a bounded scalar
search, with w*, w^+, w^- added as candidates. ``theory.kkt.linear_boundary_search`` (a constrained
search over general nets whose boundary is a line) finds no linear-boundary net above it
(tests/experiments/test_lyu2021_kkt.py).
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import all_of, at_least, at_most, compare, holds
from twolayer.claims.runs import run_dataset
from twolayer.claims.falsifiers import Counterfactual, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.lyu2021._shared import (
    ALPHA, RECON, base_config, dataset, decision_panel, final, flow_train, last, late_phase_series, replace_runs,
    rising, synthetic_run, synthetic_tau, tau, tau_axis,
)
from twolayer.plotting import band, panels

SCALE_SETTINGS = {"quick": dict(width=20, tau=12.0, points=60, seeds=3, large_seeds=8),
                  "paper": dict(width=20, tau=100.0, points=200, seeds=3, large_seeds=10)}
HINT_DATA = {"kind": "hinted", "base": {"kind": "separable_ball", "d": 2, "n": 20, "margin": 0.1, "seed": 0},
             "H": 1000.0, "K": 1.0, "eps_scale": ALPHA / 4, "precheck_slope": ALPHA}
HINT_METRICS = ["log_loss", "normalized_margin", "group_mass", "nonlinearity", "boundary_linearity"]
SENSITIVITY_TAU = 6.0  # the escaped run slides along kinks later on (explicit steps crawl): it stops at tau = 6


def hinted_config(sigma: float, tau: float, width: int, seeds, points: int) -> dict:
    return base_config(HINT_DATA, width, {"kind": "balanced", "scale": sigma}, flow_train(tau), HINT_METRICS, points,
                       seeds=seeds)


def hinted_configs(scale: str) -> dict[str, dict]:
    s = SCALE_SETTINGS[scale]
    return {"small": hinted_config(1e-30, s["tau"], s["width"], s["seeds"], s["points"]),
            "sensitivity": hinted_config(1e-6, min(s["tau"], SENSITIVITY_TAU), s["width"], s["seeds"], s["points"]),
            "large": hinted_config(1.0, s["tau"], s["width"], s["large_seeds"], s["points"])}


hinted = register(Experiment(
    id="lyu2021/hinted",
    title="Hinted data: gradient flow converges to a linear classifier with a sub-optimal margin",
    figure="Theorem 6.2, Definition 6.1 [RECON], Figure 1 (right); spec E6",
    description=(
        "20 random separable points in 2-D plus the three hint points of Definition 6.1 as reconstructed in the "
        "spec (H w*, eps w* +- K w_perp with H = 1000, K = 1, eps = alpha gamma*_S/4), width 20, balanced init. "
        "From init scale 1e-30 the positive neurons align with mu^+ and the net converges to the one-neuron "
        "direction w^+: a linear boundary with margin gamma^+/2, equal to the best margin of any linear-boundary "
        "classifier (all neurons on +-v, spec §2.8) and far below a nonlinear certificate built from "
        "|<w_perp, x>|. The spec observed that init scale 1e-6 is not small enough (the run escapes to a "
        "nonlinear classifier); a large init (scale 1) finds a nonlinear net with a larger margin in every seed."),
    configs=hinted_configs,
))


def references(r: Results, key: str = "small") -> dict:
    """gamma^+ (w^+), the best linear-boundary margin gamma_lin (and its v) and the nonlinear certificate."""
    from twolayer.theory.margin import certificate_margin, linear_family_margin, one_neuron_margin

    def compute():
        data = dataset(r, key)
        w_plus, g_plus = one_neuron_margin(data.X, data.y, ALPHA, +1)
        family, v = linear_family_margin(data.X, data.y, ALPHA)
        cert, r2 = certificate_margin(data.X, data.y, ALPHA, np.asarray(data.info["w_star"]),
                                      np.asarray(data.info["w_perp"]))
        return {"w_plus": w_plus, "gamma_plus": g_plus, "linear": family, "linear_v": v, "certificate": cert,
                "cert_r2sq": r2}

    return r.memo(f"hint-refs:{key}", compute)


def over_gamma_plus(r: Results, key: str) -> np.ndarray:
    """Final normalized margin over gamma^+/2, per seed."""
    return last(r[key], "normalized_margin") / (references(r, key)["gamma_plus"] / 2)


# -- falsifiers -------------------------------------------------------------------------------------

def ideal_runs(configs: dict[str, dict], defect: str | None = None) -> dict[str, SyntheticRun]:
    """The runs as the spec observed them: small -> margin rising to 0.995 gamma^+/2 on a linear boundary
    with a negative share of 1e-30; sensitivity -> margin 5 gamma^+/2 with 5 % negative share; large ->
    margin 6 gamma^+/2, nonlinear boundary. ``defect``: ``margin`` (small ends at 1.01 gamma^+/2),
    ``boundary`` (small has 4 crossings), ``above-linear`` (small ends 1 % above gamma_lin), ``large``
    (one large seed at 1.5 gamma^+/2), ``no-escape`` (one sensitivity seed stays linear)."""
    from twolayer.theory.margin import linear_family_margin, one_neuron_margin

    cfg0 = configs["small"]
    data = run_dataset(SyntheticRun(cfg0))
    g_half = one_neuron_margin(data.X, data.y, ALPHA, +1)[1] / 2
    g_lin = linear_family_margin(data.X, data.y, ALPHA)[0]
    t = synthetic_tau(end=12.0)
    shape = {"small": (0.995, 1e-30, 2, 0.01), "sensitivity": (5.0, 0.05, 4, 180.0), "large": (6.0, 0.2, 4, 180.0)}
    out = {}
    for key, cfg in configs.items():
        S = cfg["seeds"]
        ratio, neg, crossings, dev = shape[key]
        final_ratio = np.full(S, ratio)
        cross = np.full(S, float(crossings))
        if key == "small" and defect == "margin":
            final_ratio[0] = 1.01
        if key == "small" and defect == "above-linear":
            final_ratio[0] = 1.01 * g_lin / g_half
        if key == "small" and defect == "boundary":
            cross[0] = 4.0
        if key == "large" and defect == "large":
            final_ratio[0] = 1.5
        negs = np.full(S, neg)
        if key == "sensitivity" and defect == "no-escape":
            final_ratio[0], negs[0] = 0.99, 1e-20
        traj = {"t": t, **late_phase_series(t, S, gamma=g_half), "normalized_margin": rising(t, final_ratio * g_half),
                "group_mass_neg": np.repeat(negs[:, None], len(t), axis=1),
                "group_mass_pos": np.repeat(0.5 - negs[:, None], len(t), axis=1),
                "boundary_crossings": np.repeat(cross[:, None], len(t), axis=1),
                "boundary_dev": np.where(cross[:, None] == 2, dev, 180.0) * np.ones((S, len(t)))}
        traj["smoothed_margin"] = traj["normalized_margin"] - 1e-3 * g_half / (1 + t)
        out[key] = synthetic_run(cfg, key, traj)
    return out


def _synthetic(defect: str, why: str) -> Synthetic:
    return Synthetic(f"synthetic-{defect}", lambda configs: ideal_runs(configs, defect), why)


LARGE_AS_SMALL = Counterfactual(
    "init-1", replace_runs(small=hinted_config(1.0, SENSITIVITY_TAU, 8, 2, 30)),
    "init scale 1 instead of 1e-30 (Thm 6.2 is a sigma -> 0 statement): no small-init phase; the negative neurons "
    "keep 17-43 % of ||theta||^2, the boundary is not a line, and the margin leaves gamma^+/2 (about 10x above it, "
    "above every linear-boundary classifier's, where the seed has already fitted the data)")
TINY_AS_LARGE = Counterfactual(
    "init-1e-30-as-large", replace_runs(large=hinted_config(1e-30, SENSITIVITY_TAU, 8, 2, 30)),
    "init scale 1e-30 in place of 1: the flow stays on the linear one-neuron direction (margin ~gamma^+/2)")
TINY_AS_SENSITIVITY = Counterfactual(
    "init-1e-30-as-sensitivity", replace_runs(sensitivity=hinted_config(1e-30, SENSITIVITY_TAU, 8, 2, 30)),
    "init scale 1e-30 in place of 1e-6: nothing escapes")


# -- claims -----------------------------------------------------------------------------------------

@hinted.claim("margin-gamma-plus", "From init scale 1e-30 the normalized margin tends to gamma^+/2 from below: "
                                   "gamma/(gamma^+/2) in [0.97, 1.0005] for every seed (P11)", kind="prediction",
              falsifiers=[_synthetic("margin", "one seed ends at 1.01 gamma^+/2"), LARGE_AS_SMALL])
def _margin(r: Results):
    ratio = over_gamma_plus(r, "small")
    # below: the distance to 0.97 in units of the allowed 3 % shortfall; above: to 1.0005 in units of the 5e-4
    # integrator allowance over the limit (the theory approaches it from below)
    return all_of(at_least(ratio, 0.97, scale=0.03), at_most(ratio, 1.0005, scale=5e-4),
                  details=f"gamma^+ = {references(r)['gamma_plus']:.6g} of {{(x_i^+, y_i)}}; {RECON}")


@hinted.claim("linear-boundary", "The limit has a linear boundary: exactly 2 sign changes on the circle, "
                                 "|angle between them - 180 deg| <= 0.5 deg, and the negative group's share of "
                                 "||theta||^2 <= 1e-6 (P11)", kind="prediction",
              falsifiers=[_synthetic("boundary", "one seed has 4 sign changes"), LARGE_AS_SMALL])
def _linear(r: Results):
    run = r["small"]
    return all_of(compare(last(run, "boundary_crossings").astype(int), "==", 2), at_most(last(run, "boundary_dev"), 0.5),
                  at_most(last(run, "group_mass_neg"), 1e-6), details=RECON)


@hinted.claim("suboptimal", "Sub-optimal margin (Thm 6.2): the learned margin reaches gamma_lin, the best margin of "
                            "any linear-boundary classifier on the data (0.97 gamma_lin <= gamma <= gamma_lin), while a "
                            "nonlinear net (the certificate) beats the learned margin by a factor >= 2 (P12)",
              kind="prediction",
              falsifiers=[_synthetic("above-linear", "one seed ends 1 % above gamma_lin"), LARGE_AS_SMALL])
def _suboptimal(r: Results):
    ref = references(r)
    learned = last(r["small"], "normalized_margin")
    share = learned / ref["linear"]
    # the learned margin attains gamma_lin (gamma^+/2 = gamma_lin on these data); that no linear-boundary net
    # exceeds gamma_lin is part of gamma_lin's definition (a check without slack); the sub-optimality is the
    # certificate's factor over the learned margin
    return all_of(at_least(share, 0.97, scale=0.03),
                  holds(bool(np.all(share <= 1 + 1e-6)), "gamma <= gamma_lin", f"max gamma / gamma_lin {share.max():.7f}"),
                  at_least(ref["certificate"] / learned, 2.0),
                  details=f"learned {np.round(learned, 6).tolist()}, gamma^+/2 {ref['gamma_plus'] / 2:.6g}, "
                          f"gamma_lin {ref['linear']:.6g} (all neurons on +-v, v = {np.round(ref['linear_v'], 4).tolist()}; "
                          f"max over v and the mass split, spec §2.8), certificate {ref['certificate']:.6g} "
                          f"(r2^2 = {ref['cert_r2sq']:.3g}); {RECON}")


@hinted.claim("large-init-nonlinear", "A large initialization (scale 1) finds, in every seed, a net with a nonlinear "
                                      "boundary whose margin exceeds gamma^+/2 by a factor >= 2 (spec E6 observation)",
              kind="prediction", falsifiers=[_synthetic("large", "one seed ends at 1.5 gamma^+/2"), TINY_AS_LARGE])
def _large(r: Results):
    run = r["large"]
    linear = (last(run, "boundary_crossings") == 2) & (last(run, "boundary_dev") <= 0.5)
    return all_of(at_least(over_gamma_plus(r, "large"), 2.0), compare(int(linear.sum()), "==", 0),
                  details=f"every seed; {int(linear.sum())} of {len(linear)} seeds end with a linear boundary; the spec "
                          "observed 8-10x with large-init GD (not a theorem)")


@hinted.claim("sensitivity", "Sensitivity to the init scale (spec observation, not a theorem): from scale 1e-6 every "
                             "seed escapes the linear limit (margin > 1.5 gamma^+/2 or negative share > 1e-3)",
              kind="prediction", falsifiers=[_synthetic("no-escape", "one seed stays linear"), TINY_AS_SENSITIVITY])
def _sensitivity(r: Results):
    ratio, neg = over_gamma_plus(r, "sensitivity"), last(r["sensitivity"], "group_mass_neg")
    # how far each seed is past the nearer of its two escape thresholds, in units of the threshold
    escape = np.maximum((ratio - 1.5) / 1.5, (neg - 1e-3) / 1e-3)
    return at_least(escape, 0.0, scale=1.0,
                    details=f"margin / (gamma^+/2) {np.round(ratio, 3).tolist()}, negative share {neg.tolist()}; the "
                            "theorem is a sigma -> 0 statement; Phase I must last long enough for positive neurons "
                            "in the wrong half-space to rotate")


@hinted.plot("figure1-right", "Figure 1 (right) analogue: hinted data (the hint point H w* lies far outside, at "
                              "distance H = 1000), decision regions and boundary of the small-init limit (left, a line "
                              "perpendicular to w^+ = w*), the nonlinear certificate (middle) and the best large-init "
                              "net (right); dashed: the max-margin linear separator.")
def _plot_fig1_right(r: Results):
    ref = references(r)
    data = dataset(r, "small")
    X, y = data.X, data.y
    w_star, w_perp = np.asarray(data.info["w_star"]), np.asarray(data.info["w_perp"])
    fig, axes = panels(3, width=3.3, height=3.1)
    W, a = final(r["small"])
    decision_panel(axes[0], W[0], a[0], X, y, "small init (1e-30): linear", w_star, extent=1.3)
    r2 = math.sqrt(ref["cert_r2sq"])
    r1 = math.sqrt(0.25 - ref["cert_r2sq"])
    Wc = np.array([r1 * w_star, -r1 * w_star, r2 * w_perp, -r2 * w_perp])
    ac = np.array([r1, -r1, r2, r2])
    decision_panel(axes[1], Wc, ac, X, y, "nonlinear certificate", w_star, extent=1.3)
    Wl, al = final(r["large"])
    ratios = over_gamma_plus(r, "large")
    best = int(np.argmax(ratios))
    decision_panel(axes[2], Wl[best], al[best], X, y, f"large init (1): margin {ratios[best]:.1f} x gamma^+/2", w_star,
                   extent=1.3)
    axes[0].legend(loc="lower left", fontsize=6)
    return fig


@hinted.plot("margins", "Normalized margin against tau = ln(1 + t) for init scales 1e-30, 1e-6 and 1 (median over "
                        "seeds, range shaded), with gamma^+/2, the best linear-boundary margin and the certificate.")
def _plot_margins(r: Results):
    ref = references(r)
    fig, (ax,) = panels(1, width=4.6, height=3.2)
    for key, label in (("small", "init 1e-30"), ("sensitivity", "init 1e-6"), ("large", "init 1")):
        t = tau(r[key])
        keep = t > 0
        band(ax, t[keep], r[key].trajectory["normalized_margin"][:, keep], label=label)
    ax.axhline(ref["gamma_plus"] / 2, color="gray", ls="--", lw=0.8, label=r"$\gamma^+/2$")
    ax.axhline(ref["linear"], color="gray", ls="-.", lw=0.8, label="best linear boundary")
    ax.axhline(ref["certificate"], color="gray", ls=":", lw=0.8, label="nonlinear certificate")
    top = 1.3 * max(ref["certificate"], float(np.nanmax(r["large"].trajectory["normalized_margin"])))
    ax.set_ylim(-0.2 * top, top)
    tau_axis(ax)
    ax.set(ylabel=r"$\gamma(\theta)$", title="hinted data: margin over time")
    ax.legend(fontsize=6)
    return fig
