"""E1 (Theorems 4.2/4.3): on symmetric separable data gradient flow from a small balanced init reaches
the global-max-margin direction, a linear classifier f = c <w*, x> with gamma_max = (1+alpha) gamma*/4.

Falsifiers: ``ideal_runs`` builds the theory's limit (``theory.margin.predicted_limit``) as synthetic
runs, which pass every claim; each ``defect`` breaks one statement. Counterfactual runs (``_shared``)
break one assumption: a same-sign init, a flow stopped early, a large init, a frozen second layer.
"""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import all_of, at_least, at_most
from twolayer.claims.runs import initial_params, run_dataset
from twolayer.claims.falsifiers import Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.lyu2021._shared import (
    ALPHA, BOTH_SIGNS, DERIVED, FIRST_LAYER_ONLY, LATE_PHASE_REACHED, MARGIN_METRICS, NOT_SYMMETRIC, RTOL, SHORT_RUN,
    SMALL_INIT, base_config, dataset, final,
    flow_train, initial, kkt, last, late_phase_series, rising, symmetric_data, symmetric_reference, synthetic_run,
    synthetic_tau, tau, tau_axis,
)
from twolayer.plotting import band, panels

SCALE_SETTINGS = {"quick": dict(seeds=3, width=20, tau=1e4, points=60),
                  "paper": dict(seeds=10, width=20, tau=1e4, points=200)}


def symmetric_configs(scale: str) -> dict[str, dict]:
    s = SCALE_SETTINGS[scale]
    return {"flow": base_config(symmetric_data(), s["width"], {"kind": "balanced", "scale": 1e-4}, flow_train(s["tau"]),
                                MARGIN_METRICS, s["points"], seeds=s["seeds"])}


symmetric = register(Experiment(
    id="lyu2021/symmetric",
    title="Symmetric data: gradient flow converges to the global-max-margin linear classifier",
    figure="Theorems 4.2-4.3, spec E1",
    description=(
        "Linearly separable symmetric data (d = 5, n = 60 = 30 pairs x, -x, teacher margin 0.1), a width-20 "
        "Leaky ReLU net (alpha = 0.2), balanced initialization at scale 1e-4, mean logistic loss, gradient flow "
        "followed to log L ~ -1e4 by flow_log (x axis: tau = ln(1 + t)). The normalized margin approaches "
        "gamma_max = (1+alpha) gamma*/4, every neuron lies on +-w*, each sign group holds a quarter of ||theta||^2, "
        "the function becomes linear and the limit is a KKT point."),
    configs=symmetric_configs,
))


# -- falsifiers -------------------------------------------------------------------------------------

DEFECTS = ("margin", "above-max", "alignment", "mass", "ratios", "balance", "nonlinear", "kkt")


def ideal_runs(configs: dict[str, dict], defect: str | None = None) -> dict[str, SyntheticRun]:
    """The ``flow`` run as the theory predicts it: final parameters on the width-m limit of spec §2.7
    (w_k = a_k w*, a_k = s_k b_k / 2, b_k = c_k / ||c_group||, times 30), margin ratio and alignment
    rising to 1, A+ = A- = 1/4, no balancedness drift, nonlinearity falling to 0. ``defect`` (one of
    ``DEFECTS``) breaks one statement."""
    from twolayer.theory.margin import max_margin_linear, predicted_limit

    cfg = configs["flow"]
    probe = SyntheticRun(cfg)
    data, init = run_dataset(probe), initial_params(probe)
    S, m = init["v"].shape
    w_star, _ = max_margin_linear(data.X, data.y)
    limits = [predicted_limit(init["W"][s], init["v"][s], data.X, data.y, w_star) for s in range(S)]
    W, a = 30.0 * np.stack([lim[0] for lim in limits]), 30.0 * np.stack([lim[1] for lim in limits])
    t = synthetic_tau()
    ones = np.ones(S)
    traj = {"t": t, "margin_ratio": rising(t, ones), "group_mass_pos": rising(t, 0.25 * ones),
            "group_mass_neg": rising(t, 0.25 * ones), "cos_wstar": np.repeat(rising(t, ones)[:, :, None], m, axis=2),
            "balancedness": np.zeros((S, len(t), m)), "nonlinearity": np.tile(1 / (1 + t) ** 2, (S, 1)),
            "boundary_linearity": np.zeros((S, len(t))), **late_phase_series(t, S)}
    if defect == "margin":
        traj["margin_ratio"][0, -1] = 0.99
    elif defect == "above-max":
        traj["margin_ratio"][0, -1] = 1.001
    elif defect == "alignment":
        traj["cos_wstar"][0, -1, 0] = 0.99
    elif defect == "mass":
        pos = a[0] > 0
        W[0, pos], a[0, pos] = 1.2 * W[0, pos], 1.2 * a[0, pos]
    elif defect == "ratios":
        pos = np.flatnonzero(a[0] > 0)
        a[0, pos] = np.sort(a[0, pos])  # the same group mass, the weights in the wrong order
        W[0, pos] = a[0, pos, None] * w_star[None, :]
    elif defect == "balance":
        traj["balancedness"][0, :, 0] = np.linspace(0.0, 0.01, len(t))
    elif defect == "nonlinear":
        traj["nonlinearity"][0, -1] = 0.05
    elif defect == "kkt":
        rng = np.random.default_rng(0)
        W[0], a[0] = rng.normal(size=W[0].shape), rng.normal(size=m)
    elif defect is not None:
        raise ValueError(f"defect {defect!r} is not one of {DEFECTS}")
    return {"flow": synthetic_run(cfg, "flow", traj, W, a)}


def _synthetic(defect: str, why: str) -> Synthetic:
    return Synthetic(f"synthetic-{defect}", lambda configs: ideal_runs(configs, defect), why)


# -- claims -----------------------------------------------------------------------------------------

# Seed spreads (tolerance source "spread"): the paper-scale ``flow`` config run for seeds 10-19 (independent of the seeds
# the claims check: 0-9 at paper scale, 0-2 at quick scale, whose config differs only in the observation points), each
# claim's measured value per seed, mean + 3 sd (sample sd) (issue 27, in place of the spec's exploratory allowances)
SPREAD_SEEDS = "seeds 10-19 of the paper-scale flow config (tau = 1e4, width 20)"
WITHIN_GROUP_TOL = 2.94e-5  # within-group-ratios: mean 1.868e-5, sd 3.585e-6 (range 1.49e-5 ... 2.51e-5)
KKT_TOL = 1.01e-6  # kkt: NNLS residual mean 8.393e-7, sd 5.737e-8 (range 7.29e-7 ... 9.08e-7)
RATIO_ABOVE = 1e-6  # gamma <= gamma_max for every theta: a ratio above 1 + 1e-6 is a bug (solver rtol 1e-6)


@symmetric.claim("margin-ratio", "The normalized margin reaches the global max (1+alpha) gamma*/4: 0.999 <= "
                                 "gamma/gamma_max <= 1 + 1e-6 for every seed (P1; no theta exceeds the global max)",
                 kind="prediction",
                 falsifiers=[_synthetic("margin", "one seed ends at ratio 0.99"),
                             _synthetic("above-max", "one seed ends at ratio 1.001, above the global max")],
                 premises=[BOTH_SIGNS, NOT_SYMMETRIC],
                 tolerance_source="paper: Thm 4.3's limit gamma -> gamma_max, with the spec's P1 floor tightened to "
                                  "0.999 (observed 0.9992-1.0000, spec §5); the ceiling 1 + 1e-6 is the solver's rtol")
def _ratio(r: Results):
    ratio = last(r["flow"], "margin_ratio")
    return all_of(at_least(ratio, 0.999, scale=1e-3), at_most(ratio, 1 + RATIO_ABOVE, scale=RATIO_ABOVE),
                  details=f"gamma_max = (1+alpha) gamma*/4 {DERIVED}; max ratio {float(np.max(ratio)):.9f} (a ratio "
                          "above 1 would be a margin above the global max: a bug of the engine or of gamma_max)")


@symmetric.claim("neurons-on-wstar", "Every neuron aligns with sign(a_k) w*: min_k cos(w_k, s_k w*) >= 0.999 (P2)",
                 kind="prediction", falsifiers=[_synthetic("alignment", "one neuron ends at cos 0.99"), SHORT_RUN],
                 premises=[NOT_SYMMETRIC], tolerance_source="paper: Thm 4.2 'every weight vector w_k ... must be in the "
                                                            "direction of w* or -w*'; the spec's P2 floor 0.999")
def _align(r: Results):
    return at_least(np.min(last(r["flow"], "cos_wstar"), axis=-1), 0.999, scale=1e-3)


@symmetric.claim("group-mass", "Each sign group holds a quarter of ||theta||^2: A+ = A- = 1/4, ||sum_k a_k w_k|| / "
                               "||theta||^2 = 1/2 and cos(sum_k a_k w_k, w*) = 1 (P3, abs err <= 1e-6, the solver's rtol)",
                 kind="prediction", falsifiers=[_synthetic("mass", "the positive group of one seed is 1.2x too large")],
                 premises=[BOTH_SIGNS],
                 tolerance_source="solver: the limit values are exact, and the measured error is the integrator's: it "
                                  "grows with tau after tau ~ 300 (max |A+- - 1/4| 2.6e-10 at tau = 304, 7.7e-10 at "
                                  "924, 2.3e-9 at 2807, 8.4e-9 at 1e4, quick run), as accumulated error does, not "
                                  "falling as a finite-time deficit would; so the tolerance is flow_log's rtol 1e-6 "
                                  "(measured 8.4e-9 at tau = 1e4: 119x below it), in place of the spec's exploratory "
                                  "P3 5e-3")
def _mass(r: Results):
    W, a = final(r["flow"])
    w_star, _, _ = symmetric_reference(r, "flow")
    c = np.einsum("sm,smd->sd", a, W)
    sq = np.sum(W**2, axis=(1, 2)) + np.sum(a**2, axis=1)
    pos, neg = np.sum(np.where(a > 0, a**2, 0.0), axis=1) / sq, np.sum(np.where(a < 0, a**2, 0.0), axis=1) / sq
    measured = np.stack([pos, neg, np.linalg.norm(c, axis=1) / sq, c @ w_star / np.linalg.norm(c, axis=1)], axis=1)
    err = np.max(np.abs(measured - np.array([0.25, 0.25, 0.5, 1.0])), axis=1)
    return at_most(err, RTOL, details=f"solver rtol {RTOL:g}; max abs error per seed over A+, A-, ||c||/||theta||^2, "
                                      "cos(c, w*); final "
                                      f"values {np.round(measured, 5).tolist()}")


@symmetric.claim("within-group-ratios", "Within each sign group |a_k| / ||a_group|| equals c_k / ||c_group||, "
                                        "c_k = |<mu_bar, w_k(0)> + a_k(0)| (spec §2.7, P4, max err <= 2.94e-5, the "
                                        "seed spread)",
                 kind="prediction", falsifiers=[_synthetic("ratios", "one group's weights in the wrong order")],
                 premises=[SMALL_INIT],
                 tolerance_source=f"spread: mean + 3 sd of the max error over {SPREAD_SEEDS}: 1.868e-5 + 3 x 3.585e-6 "
                                  "= 2.94e-5 (the error is the finite-sigma correction of the sigma -> 0 limit formula, "
                                  "~0.2 sigma at sigma = 1e-4); the spec's P4 1e-3 was 34x looser")
def _ratios(r: Results):
    from twolayer.theory.margin import phase1_groups

    data = dataset(r, "flow")
    init = initial(r, "flow")
    _, a = final(r["flow"])
    errs = []
    for s in range(a.shape[0]):
        sign, c = phase1_groups(init["W"][s], init["v"][s], data.X, data.y)
        worst = 0.0
        for g in (1.0, -1.0):
            idx = sign == g
            if idx.any():
                share = np.abs(a[s, idx]) / np.linalg.norm(a[s, idx])
                worst = max(worst, float(np.max(np.abs(share - c[idx] / np.linalg.norm(c[idx])))))
        errs.append(worst)
    return at_most(errs, WITHIN_GROUP_TOL, details=f"{DERIVED} (limit formula of spec §2.7); max error per seed; "
                                                   f"tolerance: the seed spread over {SPREAD_SEEDS}")


@symmetric.claim("balancedness-conserved", "Gradient flow conserves ||w_k||^2 - a_k^2: max_k |beta_k(t) - beta_k(0)| "
                                           "<= 1e-3 over the run (P5, Lemma B.16)",
                 kind="consistency", falsifiers=[_synthetic("balance", "one neuron's balancedness drifts by 1e-2"),
                                                 FIRST_LAYER_ONLY],
                 tolerance_source="solver: an identity of gradient flow (Lemma B.16), held to the integrator; the "
                                  "spec's 1e-3 (P5, written for GD) is 1000x the flow_log rtol 1e-6")
def _balance(r: Results):
    b = r["flow"].seeded("balancedness")
    drift = np.max(np.abs(b - b[:, :1]), axis=(1, 2))
    return at_most(drift, 1e-3, details=f"solver rtol {RTOL:g}; max per seed; an identity of the flow: the drift "
                                        f"{float(np.max(drift)):.2g} is the integrator's error, far below the spec's "
                                        "GD tolerance")


@symmetric.claim("linear-function", "The limit is a linear function f = c <w*, x>: nonlinearity ||f_even|| / "
                                    "||f_odd|| <= 1e-3 and the boundary is a hyperplane (disagreement <= 1e-3) (Thm 4.2)",
                 kind="prediction", falsifiers=[_synthetic("nonlinear", "one seed ends at nonlinearity 0.05")],
                 premises=[BOTH_SIGNS, NOT_SYMMETRIC],
                 tolerance_source="paper: Thm 4.2 'f(x) = c <w*, x>' (NL = 0 exactly); 1e-3 is the spec's allowance")
def _linear(r: Results):
    return all_of(at_most(last(r["flow"], "nonlinearity"), 1e-3), at_most(last(r["flow"], "boundary_linearity"), 1e-3),
                  details="NL on 4096 Gaussian probe points; a single neuron would give (1-alpha)/(1+alpha) = 0.667")


@symmetric.claim("kkt", "The limit is a KKT-margin direction: NNLS KKT residual (tau = 1e-2) <= 1.01e-6 at tau = 1e4, "
                        "the seed spread (P14, Thm 3.1)",
                 kind="prediction", falsifiers=[_synthetic("kkt", "one seed ends at random parameters")],
                 premises=[LATE_PHASE_REACHED],
                 tolerance_source=f"spread: mean + 3 sd of the final NNLS residual over {SPREAD_SEEDS}: 8.393e-7 + "
                                  "3 x 5.737e-8 = 1.01e-6 (a finite-time residual: it falls with tau, e.g. 2.2e-6 at "
                                  "tau = 300 to 3.9e-7 at 1e4 on the same-sign run); the spec's P14 1e-2 was 1e4x looser")
def _kkt(r: Results):
    return at_most(kkt(r, "flow"), KKT_TOL, details=f"scipy NNLS on the final parameters (Definition B.8); tolerance: "
                                                    f"the seed spread over {SPREAD_SEEDS}")


SEARCH_WIDTHS, SEARCH_RESTARTS = (1, 2, 3), 4  # the independent search of Thm 4.2's static statement


def static_search(r: Results, key: str = "flow") -> dict:
    """Thm 4.2 without the flow: SLSQP from random starts on the margin problem (min 1/2 ||theta||^2 s.t. q_i >= 1,
    ``theory.kkt.kkt_search``) for each width in SEARCH_WIDTHS; per width the best margin over gamma_max and the
    nonlinearity of the best net."""
    from twolayer.theory.kkt import kkt_search

    def compute():
        data = dataset(r, key)
        _, _, gmax = symmetric_reference(r, key)
        rows = {}
        for m in SEARCH_WIDTHS:
            ends = kkt_search(data.X, data.y, ALPHA, m, restarts=SEARCH_RESTARTS, seed=42 + m)
            best = ends[0] if ends else None
            rows[m] = (best.margin / gmax if best else float("nan"), best.nonlinearity if best else float("nan"))
        return rows

    return r.memo(f"static-search:{key}", compute)


@symmetric.claim("global-max-static", "Theorem 4.2's static statement, against an independent search: over widths "
                                      "1, 2, 3 (SLSQP on the margin problem, 4 random starts each) no net "
                                      "exceeds gamma_max = (1+alpha) gamma*/4 (ratio <= 1 + 1e-6), the best one at "
                                      "width >= 2 reaches it (>= 1 - 1e-6) with a linear function (NL <= 1e-3), and "
                                      "the trained limit attains the same margin (>= 0.999)", kind="prediction",
                 falsifiers=[_synthetic("margin", "one seed ends at ratio 0.99")], premises=[NOT_SYMMETRIC, BOTH_SIGNS],
                 tolerance_source="solver: SLSQP ftol 1e-14 (the searched margins); the trained floor 0.999 as "
                                  "margin-ratio's")
def _static(r: Results):
    rows = static_search(r)
    ratios = np.array([rows[m][0] for m in SEARCH_WIDTHS])
    wide = [m for m in SEARCH_WIDTHS if m >= 2]
    best = max(wide, key=lambda m: rows[m][0])
    trained = last(r["flow"], "margin_ratio")
    return all_of(at_most(ratios, 1 + 1e-6, scale=1e-6), at_least(rows[best][0], 1 - 1e-6, scale=1e-6),
                  at_most(rows[best][1], 1e-3), at_least(trained, 0.999, scale=1e-3),
                  details="best margin / gamma_max per width: " +
                          ", ".join(f"m={m}: {rows[m][0]:.9f} (NL {rows[m][1]:.2g})" for m in SEARCH_WIDTHS) +
                          f"; trained {np.round(trained, 6).tolist()}; gamma_max = (1+alpha) gamma*/4 {DERIVED}")


@symmetric.plot("margins", "Normalized margin gamma and smoothed margin gamma~ relative to gamma_max = (1+alpha) gamma*/4 "
                           "against tau = ln(1 + t) (log axis, i.e. log log t); median over seeds, range shaded. "
                           "Right: group masses A+, A-, min_k cos(w_k, s_k w*) and nonlinearity NL.")
def _plot(r: Results):
    run = r["flow"]
    tr, t = run.trajectory, tau(run)
    keep = t > 0
    _, _, gmax = symmetric_reference(r, "flow")
    fig, (ax, ax2) = panels(2, width=4.2, height=3.1)
    band(ax, t[keep], tr["margin_ratio"][:, keep], label=r"$\gamma/\gamma_{max}$")
    band(ax, t[keep], tr["smoothed_margin"][:, keep] / gmax, label=r"$\tilde\gamma/\gamma_{max}$")
    ax.axhline(1.0, color="gray", ls="--", lw=0.8)
    ax.set_ylim(-0.2, 1.1)
    tau_axis(ax)
    ax.set(title="margin (symmetric data)")
    ax.legend()
    band(ax2, t[keep], tr["group_mass_pos"][:, keep], label="$A_+$")
    band(ax2, t[keep], tr["group_mass_neg"][:, keep], label="$A_-$")
    band(ax2, t[keep], tr["cos_wstar"][:, keep].min(axis=-1), label=r"$\min_k \cos(w_k, s_k w^*)$")
    band(ax2, t[keep], tr["nonlinearity"][:, keep], label="NL")
    ax2.axhline(0.25, color="gray", ls=":", lw=0.8)
    tau_axis(ax2)
    ax2.set(title="alignment, masses, linearity")
    ax2.legend()
    return fig
