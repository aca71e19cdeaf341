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

from twolayer.claims.checks import all_of, at_least, at_most, bound, compare, holds
from twolayer.claims.runs import run_dataset
from twolayer.claims.falsifiers import Counterfactual, Premise, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register
from twolayer.observe.margin import CIRCLE_GRID
from twolayer.papers.lyu2021._shared import (
    ALPHA, LN_LN2, RECON, RTOL, base_config, dataset, decade_start, decision_panel, deficit_growth, final, flow_train,
    last, late_phase_series, replace_runs, rising, synthetic_run, synthetic_tau, tau, tau_axis,
)
from twolayer.plotting import band, panels

SCALE_SETTINGS = {"quick": dict(width=20, tau=12.0, points=60, seeds=3, large_seeds=8, sensitivity_seeds=2),
                  "paper": dict(width=20, tau=100.0, points=200, seeds=3, large_seeds=10, sensitivity_seeds=3)}
HINT_DATA = {"kind": "hinted", "base": {"kind": "separable_ball", "d": 2, "n": 20, "margin": 0.1, "seed": 0},
             "H": 1000.0, "K": 1.0, "eps_scale": ALPHA / 4, "precheck_slope": ALPHA}
HINT_METRICS = ["log_loss", "normalized_margin", "group_mass", "nonlinearity", "boundary_linearity"]
COUNTERFACTUAL_TAU = 6.0  # the small counterfactual runs stop at tau = 6


def hinted_config(sigma: float, tau: float, width: int, seeds, points: int) -> dict:
    return base_config(HINT_DATA, width, {"kind": "balanced", "scale": sigma}, flow_train(tau), HINT_METRICS, points,
                       seeds=seeds)


def hinted_configs(scale: str) -> dict[str, dict]:
    s = SCALE_SETTINGS[scale]
    return {"small": hinted_config(1e-30, s["tau"], s["width"], s["seeds"], s["points"]),
            # judged at a fitted state (issue 27): the same clock as the small run; every seed has n L < ln 2 by tau ~ 11
            "sensitivity": hinted_config(1e-6, s["tau"], s["width"], s["sensitivity_seeds"], s["points"]),
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
        "nonlinear classifier); followed to a fitted state, most init-1e-6 seeds return toward the linear limit "
        "(the finding 'sensitivity'); a large init (scale 1) finds a nonlinear net with a larger margin in every "
        "seed."),
    configs=hinted_configs,
))


def references(r: Results, key: str = "small") -> dict:
    """gamma^+ (w^+), the best linear-boundary margin gamma_lin (and its v) and the nonlinear certificate."""
    from twolayer.theory.margin import certificate_margin, linear_family_margin, one_neuron_margin

    def compute():
        data = dataset(r, key)
        w_plus, g_plus = one_neuron_margin(data.X, data.y, ALPHA, +1)
        family, v = linear_family_margin(data.X, data.y, ALPHA)
        cert, r2 = (certificate_margin(data.X, data.y, ALPHA, np.asarray(data.info["w_star"]),
                                       np.asarray(data.info["w_perp"])) if "w_perp" in data.info
                    else (float("nan"), float("nan")))  # the certificate is built from the hints (not-hinted premise)
        return {"w_plus": w_plus, "gamma_plus": g_plus, "linear": family, "linear_v": v, "certificate": cert,
                "cert_r2sq": r2}

    return r.memo(f"hint-refs:{key}", compute)


def over_gamma_plus(r: Results, key: str) -> np.ndarray:
    """Final normalized margin over gamma^+/2, per seed."""
    return last(r[key], "normalized_margin") / (references(r, key)["gamma_plus"] / 2)


def margin_resolution(X, y, w_plus, gamma_plus: float, rtol: float = RTOL, *, support_rtol: float = 1e-9) -> float:
    """The integrator's resolution of gamma / (gamma^+/2) on the limit w^+: rtol max_{i in S} ||x_i|| / (gamma^+/2),
    S the support vectors of {(x_i^+, y_i)} (y_i <w^+, x_i^+> within ``support_rtol`` of gamma^+). flow_log keeps
    each step's error below rtol (|theta_j| + 1e-3 rms(theta)), so ||delta theta|| <~ rtol ||theta||; as
    ||grad q_i(theta)|| <= ||x_i|| ||theta|| (q_i = y_i sum_k a_k phi(<w_k, x_i>), |phi'| <= 1), the normalized margin
    q_min / ||theta||^2 moves by at most ||x_i|| rtol where point i holds the minimum. The direction flow contracts
    onto w^+, so the error does not pile up: measured on the hinted small runs (3 seeds, tau 12-24), the gap
    |1 - gamma/(gamma^+/2)| scales with rtol (max 2.1e-4, 1.3e-5, 1.1e-6 at rtol 1e-6, 1e-7, 1e-8; this bound
    3.8e-4, 3.8e-5, 3.8e-6)."""
    Xp = np.where((np.asarray(y) > 0)[:, None], X, ALPHA * np.asarray(X))
    q = np.asarray(y) * (Xp @ np.asarray(w_plus))
    support = q <= gamma_plus * (1 + support_rtol)
    return float(rtol * np.max(np.linalg.norm(np.asarray(X)[support], axis=1)) / (gamma_plus / 2))


def limit_gap_rule(t: np.ndarray, ratio: np.ndarray, log_loss_sum: np.ndarray, resolution: float) -> np.ndarray:
    """Per seed, min(|1 - ratio(tau_end)| / resolution, growth): <= 1 when the gap to the limit gamma^+/2 is within
    the integrator's resolution at tau_end, or, where the seed is in the late phase (n L < ln 2) already at the start
    of the last decade of tau, its gap is a finite-time gap (``_shared.deficit_growth``: tau x gap grows over the
    decade by at most ln tau_end / ln tau_early, the late phase's O(ln tau / tau)). ratio, log_loss_sum: [S, T]."""
    gap = np.abs(1.0 - np.asarray(ratio, dtype=np.float64))
    late_early = np.asarray(log_loss_sum)[:, decade_start(np.asarray(t))] < LN_LN2
    growth = np.where(late_early, deficit_growth(t, gap), np.inf)
    return np.minimum(gap[:, -1] / resolution, growth)


# -- falsifiers -------------------------------------------------------------------------------------

def ideal_runs(configs: dict[str, dict], defect: str | None = None) -> dict[str, SyntheticRun]:
    """The runs as the theory has them: small -> margin rising to gamma^+/2 (gap e^-12 at tau = 12) on a linear
    boundary with a negative share of 1e-30; sensitivity -> margin 5 gamma^+/2 with 5 % negative share; large ->
    margin 6 gamma^+/2, nonlinear boundary. ``defect``: ``margin`` (small ends at 1.01 gamma^+/2),
    ``boundary`` (small has 4 crossings), ``above-certificate`` (small ends 1 % above the certificate's margin), ``large``
    (one large seed at 0.98 gamma^+/2), ``returning`` (one sensitivity seed ends at 0.93 gamma^+/2 while its negative
    share falls from 7 % to 4.7 %, as the quick seeds do), ``linear`` (one sensitivity seed at 0.99 gamma^+/2 with a
    share falling from 1e-20)."""
    from twolayer.theory.margin import certificate_margin, one_neuron_margin

    cfg0 = configs["small"]
    data = run_dataset(SyntheticRun(cfg0))
    g_half = one_neuron_margin(data.X, data.y, ALPHA, +1)[1] / 2
    g_cert = certificate_margin(data.X, data.y, ALPHA, np.asarray(data.info["w_star"]), np.asarray(data.info["w_perp"]))[0]
    t = synthetic_tau(end=12.0)
    shape = {"small": (1.0, 1e-30, 2, 0.01), "sensitivity": (5.0, 0.05, 4, 180.0), "large": (6.0, 0.2, 4, 180.0)}
    out = {}
    for key, cfg in configs.items():
        S = cfg["seeds"]
        ratio, neg, crossings, dev = shape[key]
        final_ratio = np.full(S, ratio)
        cross = np.full(S, float(crossings))
        if key == "small" and defect == "margin":
            final_ratio[0] = 1.01
        if key == "small" and defect == "above-certificate":
            final_ratio[0] = 1.01 * g_cert / g_half
        if key == "small" and defect == "boundary":
            cross[0] = 4.0
        if key == "large" and defect == "large":
            final_ratio[0] = 0.98
        negs = np.repeat(np.full(S, neg)[:, None], len(t), axis=1)
        if key == "sensitivity" and defect in ("returning", "linear"):
            final_ratio[0] = 0.93 if defect == "returning" else 0.99
            negs[0] = (0.07 if defect == "returning" else 1e-20) / (1 + 0.04 * t)  # falling since the fit (tau ~ 1)
        traj = {"t": t, **late_phase_series(t, S, gamma=g_half), "normalized_margin": rising(t, final_ratio * g_half),
                "group_mass_neg": negs, "group_mass_pos": 0.5 - negs,
                "boundary_crossings": np.repeat(cross[:, None], len(t), axis=1),
                "boundary_dev": np.where(cross[:, None] == 2, dev, 180.0) * np.ones((S, len(t)))}
        traj["smoothed_margin"] = traj["normalized_margin"] - 1e-3 * g_half / (1 + t)
        out[key] = synthetic_run(cfg, key, traj)
    return out


def _synthetic(defect: str, why: str) -> Synthetic:
    return Synthetic(f"synthetic-{defect}", lambda configs: ideal_runs(configs, defect), why)


LARGE_AS_SMALL = Premise(
    "init-1", replace_runs(small=hinted_config(1.0, COUNTERFACTUAL_TAU, 8, 2, 30)),
    "init scale 1 instead of 1e-30 (Thm 6.2 is a sigma -> 0 statement): no small-init phase; the negative neurons "
    "keep 17-43 % of ||theta||^2, the boundary is not a line, and the margin leaves gamma^+/2 (about 10x above it, "
    "above every linear-boundary classifier's, where the seed has already fitted the data)",
    source="Thm 6.2: 'gradient flow with small initialization converges to a linear classifier' (sigma_init -> 0)")
NOT_HINTED = Premise(
    "not-hinted", lambda configs: {"large": {**configs["large"], "data": HINT_DATA["base"]}},
    "the large-init run on the 20 base points without the three hint points of Definition 6.1 (nothing else "
    "changed): the hints are what make every linear-boundary classifier sub-optimal. Measured at quick scale: the "
    "claim still holds there (8 of 8 seeds nonlinear, 1.16-1.26 x that data's gamma_lin = 2.22 gamma^+/2, against "
    "12.7-12.9 x gamma_lin with the hints): a large init beats every linear boundary without the hints too",
    holds=True,
    source="Definition 6.1 / Thm 6.2: 'for any linearly separable dataset, we can add 3 extra data points so that "
           "every linear classifier has suboptimal margin'")
TINY_AS_LARGE = Counterfactual(
    "init-1e-30-as-large", replace_runs(large=hinted_config(1e-30, COUNTERFACTUAL_TAU, 8, 2, 30)),
    "init scale 1e-30 in place of 1: the flow stays on the linear one-neuron direction (margin ~gamma^+/2)")


# -- claims -----------------------------------------------------------------------------------------

@hinted.claim("margin-gamma-plus", "From init scale 1e-30 the normalized margin tends to gamma^+/2 from below (Thm "
                                   "6.2, P11): every seed ends no higher than gamma^+/2 plus the integrator's "
                                   "resolution eps = rtol max_sv ||x_i|| / (gamma^+/2), and its gap |1 - gamma / "
                                   "(gamma^+/2)| is within eps at tau_end or, in the late phase, a finite-time gap "
                                   "(O(ln tau / tau): tau x gap grows over the last decade of tau by at most ln "
                                   "tau_end / ln tau_early)", kind="prediction",
              falsifiers=[_synthetic("margin", "one seed ends at 1.01 gamma^+/2")], premises=[LARGE_AS_SMALL],
              tolerance_source="solver: eps = rtol max_sv ||x_i|| / (gamma^+/2) = 3.8e-4 (rtol 1e-6, support "
                               "vectors the two hints eps w* +- K w_perp, ||x|| = 1; margin_resolution): the late-phase "
                               "gap is the integrator's, it scales with rtol (max 2.1e-4, 1.3e-5, 1.1e-6 at rtol 1e-6, "
                               "1e-7, 1e-8, 3 seeds, tau 12-24: the quick small config rerun to tau 30, "
                               "benchmarks/spreads/issue27/hinted_gap.py) "
                               "and does not fall with "
                               "tau (paper scale 2e-5 - 2e-4 from tau 11 to 100); the finite-time alternative is derived "
                               "(the late phase's O(ln tau / tau), as nonsymmetric-general:margin-gamma-plus); in place "
                               "of the spec's exploratory P11 window [0.97, 1.0005]")
def _margin(r: Results):
    run = r["small"]
    ref = references(r)
    data = dataset(r, "small")
    eps = margin_resolution(data.X, data.y, ref["w_plus"], ref["gamma_plus"])
    series = run.seeded("normalized_margin") / (ref["gamma_plus"] / 2)
    ratio = series[:, -1]
    rule = limit_gap_rule(tau(run), series, run.seeded("log_loss_sum"), eps)
    # above: the distance to 1 + eps in units of eps; the gap rule: <= 1 (gap within eps, or a finite-time gap)
    return all_of(at_most(ratio, 1.0 + eps, scale=eps), at_most(rule, 1.0),
                  details=f"gamma/(gamma^+/2) at tau {tau(run)[-1]:g}: {np.round(ratio, 7).tolist()}, gap "
                          f"{np.array2string(np.abs(1 - ratio), precision=3)} against eps = {eps:.3g}; gamma^+ = "
                          f"{ref['gamma_plus']:.6g} of {{(x_i^+, y_i)}}; {RECON}")


CIRCLE_STEP = 360.0 / CIRCLE_GRID  # degrees between the points of boundary_linearity's circle: boundary_dev's resolution


@hinted.claim("linear-boundary", "The limit has a linear boundary (Thm 6.2): exactly 2 sign changes on the circle, "
                                 "|angle between them - 180 deg| within one step of the 7200-point circle (0.05 deg), "
                                 "and the negative group's share of ||theta||^2 below the solver's rtol 1e-6 (P11); an "
                                 "uninformative bound: both hold by many decades",
              kind="bound", falsifiers=[_synthetic("boundary", "one seed has 4 sign changes")], premises=[LARGE_AS_SMALL],
              tolerance_source="derived: the metric's resolution (boundary_dev is a multiple of the circle's 0.05 deg "
                               "step: one step is the least deviation it can show) and the solver's rtol 1e-6 relative "
                               "to ||theta|| (a smaller share is below what flow_log resolves); in place of the spec's "
                               "exploratory 0.5 deg and 1e-6 (observed 1e-14 deg and 1e-34 at init 1e-30, whose negative "
                               "neurons never grow)")
def _linear(r: Results):
    run = r["small"]
    crossings = last(run, "boundary_crossings").astype(int)
    # the slack is the bounds' (log10 of allowance over measured): the count of crossings is exact and has none
    return all_of(holds(bool(np.all(crossings == 2)), "2 sign changes", crossings.tolist()),
                  bound(np.maximum(last(run, "boundary_dev"), 1e-300), "<=", CIRCLE_STEP),
                  bound(np.maximum(last(run, "group_mass_neg"), 1e-300), "<=", RTOL),
                  details=f"{RECON}; the negative group starts at init scale 1e-30 and Phase I shrinks it further: the "
                          "share bound says little")


@hinted.claim("suboptimal", "Sub-optimal margin (Thm 6.2): the learned margin stays below the margin of a nonlinear "
                            "net (the certificate of spec P12), hence below the global max: gamma < gamma_cert "
                            "<= gamma_max", kind="bound",
              falsifiers=[_synthetic("above-certificate", "one seed ends 1 % above the certificate's margin")],
              premises=[LARGE_AS_SMALL],
              tolerance_source="derived: the certificate is a feasible net, so gamma_cert <= gamma_max; no tolerance")
def _suboptimal(r: Results):
    ref = references(r)
    learned = last(r["small"], "normalized_margin")
    # that the learned margin reaches gamma_lin = gamma^+/2 is margin-gamma-plus's claim; this one is the gap to the
    # nonlinear certificate (slack log10(gamma_cert / gamma))
    return bound(np.maximum(learned, 1e-300), "<", ref["certificate"],
                 details=f"learned {np.round(learned, 6).tolist()}, gamma^+/2 {ref['gamma_plus'] / 2:.6g}, best "
                         f"linear-boundary margin gamma_lin {ref['linear']:.6g} (all neurons on +-v, v = "
                         f"{np.round(ref['linear_v'], 4).tolist()}; spec §2.8), certificate {ref['certificate']:.6g} "
                         f"(r2^2 = {ref['cert_r2sq']:.3g}); {RECON}")


@hinted.claim("large-init-nonlinear", "A large initialization (scale 1) finds, in every seed, a net with a nonlinear "
                                      "boundary whose margin exceeds gamma_lin, the best margin of any linear-boundary "
                                      "classifier (= gamma^+/2 on these data): the linear limit of Thm 6.2 is not where "
                                      "a large init goes (spec E6 observation)",
              kind="prediction", falsifiers=[_synthetic("large", "one seed ends at 0.98 gamma^+/2, a linear-boundary "
                                                                 "margin"), TINY_AS_LARGE],
              premises=[NOT_HINTED],
              tolerance_source="derived: gamma_lin (theory.margin.linear_family_margin: every net whose neurons lie on "
                               "+-v, optimized over v and the split; the constrained search kkt.linear_boundary_search "
                               "finds none above it) is the margin no linear-boundary classifier exceeds, so a margin "
                               "above it needs a nonlinear boundary; in place of the factor 2 read off the spec's E6 "
                               "observation (8-10x with large-init GD; measured 12.7-12.9x at paper scale)")
def _large(r: Results):
    run = r["large"]
    linear = (last(run, "boundary_crossings") == 2) & (last(run, "boundary_dev") <= 0.5)
    g_lin = references(r, "large")["linear"]
    return all_of(at_least(last(run, "normalized_margin") / g_lin, 1.0, scale=1.0), compare(int(linear.sum()), "==", 0),
                  details=f"every seed; margin / gamma_lin (gamma_lin = {g_lin:.6g}, gamma^+/2 = "
                          f"{references(r, 'large')['gamma_plus'] / 2:.6g}); {int(linear.sum())} of {len(linear)} "
                          "seeds end with a linear boundary; the spec observed 8-10x gamma^+/2 with large-init GD (not "
                          "a theorem)")


def escape_record(r: Results, key: str = "sensitivity") -> dict:
    """Per seed of run ``key``: fitted (n L < ln 2 at the end), the final normalized and smoothed margins over
    gamma_lin (the best margin of any linear-boundary classifier, = gamma^+/2 on these data), the negative
    group's share of ||theta||^2 when the seed first fitted and at the end, and whether it escaped the linear
    limit for good: fitted, and its smoothed margin above gamma_lin (in the late phase gamma~ never decreases
    and gamma >= gamma~ (Lyu & Li 2020, ``late-phase``), so the margin stays above every linear-boundary
    classifier's from then on) or its negative share not below the share it had when it fitted (the negative
    neurons hold their ground: the spec's own escape marker, "1.6 -> 6 % and still rising")."""
    run = r[key]
    logsum = run.seeded("log_loss_sum")
    late = logsum < LN_LN2
    fitted = late[:, -1]
    first = np.where(late.any(axis=1), np.argmax(late, axis=1), logsum.shape[1] - 1)
    share = run.seeded("group_mass_neg")
    rows = np.arange(len(share))
    g_lin = references(r, key)["linear"]
    smooth = run.seeded("smoothed_margin")[:, -1] / g_lin
    held = share[:, -1] >= share[rows, first]
    return {"fitted": fitted, "tau_fit": tau(run)[first], "margin": last(run, "normalized_margin") / g_lin,
            "smoothed": smooth, "share_fit": share[rows, first], "share_end": share[:, -1], "held": held,
            "escaped": fitted & ((smooth > 1.0) | held)}


@hinted.claim("sensitivity",
              "Sensitivity to the init scale (spec E6 observation, not in the paper: 'with sigma_init = 1e-6 the run "
              "escapes'): from init scale 1e-6 every seed escapes the linear limit for good: fitted (n L < ln 2), "
              "its smoothed margin above gamma_lin = gamma^+/2 (then it stays above every linear-boundary "
              "classifier's) or its negative share not falling since it fitted",
              kind="finding",
              falsifiers=[Synthetic("spec-escape", ideal_runs, "the spec's observation: every init-1e-6 seed at "
                                                               "margin 5 gamma^+/2 with a 5 % negative share that "
                                                               "holds: the statement holds there"),
                          Counterfactual("init-1-as-sensitivity", lambda configs: {"sensitivity": configs["large"]},
                                         "init scale 1 in place of 1e-6 (the experiment's own quick large-init runs, "
                                         "8 seeds to tau = 12): every seed fits with a nonlinear margin ~11 "
                                         "gamma^+/2, a lasting escape in real runs: the statement holds there")],
              tolerance_source="derived: gamma_lin bounds the margin of every linear-boundary classifier, and gamma "
                               ">= gamma~ never decreases in the late phase (Lyu & Li 2020), so gamma~ > gamma_lin is "
                               "an escape for good; the share rule has no threshold (not below its value at the fit)",
              explanation=(
                  "Theorem 6.2 is a sigma -> 0 statement; the spec saw sigma = 1e-6 escape (margin 0.02-0.04 >> "
                  "gamma^+/2, negative share 2-50 %, 'still rising'). Followed to a fitted state the escape is "
                  "partly a transient: the negative share peaks before the fit (7-18 % at quick scale) and falls "
                  "from then on while the margin stays below gamma^+/2. Quick scale (tau = 12, 2 seeds): both fit "
                  "at tau = 10.2, margin 0.93 and 0.90 of gamma^+/2, share 7.1 -> 4.6 % and 9.9 -> 6.2 % since the "
                  "fit: neither escapes. Paper reference (tau = 100, 3 seeds): two seeds at 0.991 and 0.987 of "
                  "gamma^+/2 with shares fallen to 0.57 % and 0.79 % (1.6 % and 2.2 % at tau = 30): on their way "
                  "back to the linear limit, as the theorem has it already at 1e-6; the third escapes for good "
                  "(12.4 x gamma^+/2, share 36 %). So 1e-6 is small enough for Theorem 6.2 in most seeds, not in all."))
def _sensitivity(r: Results):
    rec = escape_record(r)
    t = tau(r["sensitivity"])
    escaped = rec["escaped"]
    # measured: per seed, how far past the nearer escape rule it ends (smoothed margin over gamma_lin minus 1, or the
    # share's relative change since the fit): >= 0 is an escape
    past = np.where(rec["fitted"], np.maximum(rec["smoothed"] - 1.0, rec["share_end"] / np.maximum(rec["share_fit"],
                                                                                                     1e-300) - 1.0),
                    -1.0)
    return all_of(compare(int((~escaped).sum()), "==", 0), at_least(past, 0.0, scale=1.0),
                  details=f"at tau = {t[-1]:g}: {int(escaped.sum())} of {len(escaped)} seeds escaped for good; fitted "
                          f"{rec['fitted'].tolist()} (first at tau {np.round(rec['tau_fit'], 2).tolist()}); margin / "
                          f"gamma_lin {np.round(rec['margin'], 3).tolist()}, smoothed {np.round(rec['smoothed'], 3).tolist()}; "
                          f"negative share at the fit {np.round(rec['share_fit'], 4).tolist()} -> at the end "
                          f"{np.round(rec['share_end'], 4).tolist()}; gamma_lin = gamma^+/2 = "
                          f"{references(r, 'sensitivity')['linear']:.6g}")


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
