"""E7 and Figure 1 (left): KKT-margin directions that are not the global max, and whether their boundary is
linear. Theorem 3.1 only promises a KKT-margin direction; the paper's Figure 1 (left) shows one with a
nonlinear decision boundary (its data and net are unknown, spec A7).

``theory.kkt.kkt_search`` (SLSQP on the margin problem (P), and least squares on its KKT system, from random
starts; each end point verified by the Clarke NNLS residual and the boundary-linearity check) runs on two
2-D datasets at config time: the symmetric data of the sign-group experiment (the paper's kind of data)
and 8 non-symmetric separable points. On the symmetric data every verified KKT point the random restarts find
has a linear boundary (the global max, margin ratio 1, and the one-neuron direction, 1/3; the search record is in
the figure): they never land exactly on a kink, and the nonlinear KKT points of symmetric data are kinked
(lyu2021/kkt-symmetric finds one by a complete face census); on the non-symmetric data the search finds KKT
directions with nonlinear boundaries. The runs
start gradient flow in the late phase ON the KKT directions found (scaled to q_min = 50): a KKT direction
is a fixed point of the direction dynamics up to the log-slow re-weighting of the support points, so
theta/||theta|| stays where it started while the flow trains (||theta||^2 grows about 6x and log L falls about 250
by tau = 300: the claim reads the trained state, so a run frozen at its start fails it). Counterfactual: the same
starts perturbed off the KKT direction move. Premise ablation (Theorem 3.1's n L < ln 2): the same non-symmetric
KKT directions scaled to q_min = 0.01, where every point still pulls, move by 0.46-0.49.

How far a start on a KKT direction theta_bar moves is predicted (``stationary_offset``): at a fixed norm rho the
direction flow is projected gradient ascent of the smoothed margin gamma~(u; rho) on the unit sphere, so from
theta_bar it heads for the maximizer u*(rho) nearby, where the support points' margins differ by the O(1) amounts
that make their loss weights e^{-q_i} match the KKT multipliers; ||u*(rho) - theta_bar|| = c / q_min (measured:
q_min x D constant to 3 digits for q_min = 50 ... 300), so as the flow trains the target recedes to theta_bar.
"""

from __future__ import annotations

import functools

import numpy as np

from twolayer.claims.checks import all_of, at_least, at_most
from twolayer.claims.falsifiers import Counterfactual, Premise, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.lyu2021._shared import (
    ALPHA, RTOL, base_config, dataset, decision_panel, flow_train, groups_data, late_phase_series, synthetic_run, tau,
    tau_axis, values_init,
)
from twolayer.plotting import panels

NONSYM_DATA = {"kind": "separable_ball", "d": 2, "n": 8, "margin": 0.1, "seed": 2}
SEARCH = {"quick": dict(restarts=12), "paper": dict(restarts=40)}
WIDTH, Q_START, TAU_END, POINTS = 3, 50.0, 300.0, 30
KKT_METRICS = ["neuron_weights", "v", "log_loss", "normalized_margin", "kkt_residual", "boundary_linearity"]


def _data(spec: dict):
    from twolayer.config import load_config
    from twolayer.data import build_dataset

    return build_dataset(load_config({"data": spec}).data)


@functools.lru_cache(maxsize=8)
def search(which: str, restarts: int):
    """The verified candidates of kkt_search (both methods, width 3) on ``symmetric`` or ``nonsymmetric`` data."""
    from twolayer.theory.kkt import kkt_search

    data = _data(groups_data() if which == "symmetric" else NONSYM_DATA)
    found = []
    for method in ("slsqp", "lsq"):
        found += kkt_search(data.X, data.y, ALPHA, WIDTH, restarts=restarts, seed=7, method=method)
    return tuple(found)


def picks(which: str, restarts: int) -> list:
    """Distinct verified KKT points with no kinks: per distinct (margin, linear) class its first member in a fixed
    order (least squares on the KKT system before SLSQP, as it solves to 1e-16 where SLSQP stops at 1e-13-1e-8;
    then by restart), an SLSQP one refined to rounding by ``theory.kkt.polish``, and neurons on a common ray
    given equal shares (``theory.kkt.same_ray_canonical``: the solver's stopping point on that flat family moves
    by 1e-3 under a 1-ulp change of the data); on the non-symmetric data the nonlinear ones first. Not the
    smallest residual: among the least-squares points those are all rounding (1e-16), so that choice, and the
    start's run name, changed between machines."""
    from twolayer.theory.kkt import polish, same_ray_canonical

    best = {}
    ordered_search = sorted(search(which, restarts), key=lambda c: (c.method != "lsq", c.restart))
    for c in ordered_search:
        if not c.kkt or c.kinks:
            continue
        best.setdefault((round(c.margin, 6), c.linear_boundary), c)

    data = _data(groups_data() if which == "symmetric" else NONSYM_DATA)
    ordered = sorted(best.values(), key=lambda c: (c.linear_boundary, -c.margin))
    out = []
    for c in ordered[:3]:
        c = c if c.method == "lsq" else polish(c, data.X, data.y, ALPHA)
        out.append(same_ray_canonical(c, data.X, data.y, ALPHA))
    return out


def start_config(data: dict, chosen: list, *, perturb: float = 0.0, q_start: float = Q_START) -> dict:
    """flow_log from every chosen KKT point (one seed each), scaled to q_min = ``q_start`` (Q_START); ``perturb``
    moves each start by that relative distance in a fixed random direction first."""
    from twolayer.theory.margin import forward

    d = _data(data)
    rng = np.random.default_rng(5)
    Ws, As = [], []
    for c in chosen:
        W, a = np.array(c.W), np.array(c.a)
        q = float(np.min(d.y * forward(W, a, d.X, ALPHA)))
        while perturb:  # a random direction that keeps every point classified (q_min > 0)
            dW, da = rng.normal(size=W.shape), rng.normal(size=a.shape)
            size = np.sqrt(np.sum(dW**2) + np.sum(da**2)) / np.sqrt(np.sum(W**2) + np.sum(a**2))
            Wp, ap = W + perturb * dW / size, a + perturb * da / size
            q = float(np.min(d.y * forward(Wp, ap, d.X, ALPHA)))
            if q > 0:
                W, a = Wp, ap
                break
        Ws.append(W * np.sqrt(q_start / q))
        As.append(a * np.sqrt(q_start / q))
    return base_config(data, WIDTH, values_init(np.array(Ws), np.array(As)), flow_train(TAU_END), KKT_METRICS, POINTS,
                       seeds=len(chosen))


def kkt_configs(scale: str) -> dict[str, dict]:
    restarts = SEARCH[scale]["restarts"]
    return {"symmetric": start_config(groups_data(), picks("symmetric", restarts)),
            "nonsymmetric": start_config(NONSYM_DATA, picks("nonsymmetric", restarts))}


kkt_directions = register(Experiment(
    id="lyu2021/kkt-directions",
    title="KKT-margin directions that are not global max; Figure 1 (left): linear and nonlinear boundaries",
    figure="Theorem 3.1, Figure 1 (left); spec E7",
    description=(
        "A KKT-point search (theory.kkt.kkt_search: SLSQP on the margin problem and least squares on its KKT "
        "system, random restarts, each end point verified by its Clarke KKT residual and the boundary-linearity "
        "check), width 3, on the 2-D symmetric data of lyu2021/sign-groups and on 8 non-symmetric separable "
        "points. Gradient flow is then started in the late phase (q_min = 50) on each distinct verified KKT "
        "direction without kinks (the symmetric data: the global max and the one-neuron direction, both with "
        "linear boundaries; the non-symmetric data: directions with nonlinear boundaries), flow_log to "
        "tau = 300: a KKT direction is a fixed point of the direction dynamics."),
    configs=kkt_configs,
))


def direction_drift(run) -> np.ndarray:
    """max over time of ||theta(t)/||theta(t)|| - theta(0)/||theta(0)|||, per seed."""
    W, a = run.seeded("neuron_weights"), run.seeded("v")
    theta = np.concatenate([W.reshape(W.shape[0], W.shape[1], -1), a], axis=2)
    unit = theta / np.linalg.norm(theta, axis=2, keepdims=True)
    return np.max(np.linalg.norm(unit - unit[:, :1], axis=2), axis=1)


def margin_change(run) -> np.ndarray:
    g = run.seeded("normalized_margin")
    return np.max(np.abs(g - g[:, :1]), axis=1) / np.abs(g[:, 0])


def ideal_runs(configs: dict[str, dict], defect: str | None = None) -> dict[str, SyntheticRun]:
    """Every start stays on its direction while the norm grows; ``drift``: one start turns by 0.1."""
    out = {}
    t = np.concatenate([[0.0], np.geomspace(1e-2, TAU_END, POINTS - 1)])
    for key, cfg in configs.items():
        W0, a0 = np.asarray(cfg["init"]["W"]), np.asarray(cfg["init"]["v"])
        S = len(a0)
        grow = np.sqrt(1 + t)
        W = W0[:, None] * grow[None, :, None, None]
        a = a0[:, None] * grow[None, :, None]
        if defect == "drift" and key == "nonsymmetric":
            turn = np.linspace(0, 0.1, len(t))
            W[0] = W[0] + turn[:, None, None] * np.linalg.norm(W0[0]) * np.roll(W0[0], 1, axis=0) / np.linalg.norm(W0[0])
        g = np.full((S, len(t)), 0.05)
        out[key] = synthetic_run(cfg, key, {"t": t, "neuron_weights": W, "v": a, **late_phase_series(t, S),
                                            "normalized_margin": g})
    return out


def _perturbed(configs: dict[str, dict]) -> dict[str, dict]:
    restarts = SEARCH["quick"]["restarts"]
    return {"nonsymmetric": start_config(NONSYM_DATA, picks("nonsymmetric", restarts)[:2], perturb=0.3)}


OFF_KKT = Counterfactual(
    "off-kkt-start", _perturbed,
    "the non-symmetric starts moved 0.3 off their KKT directions: not a fixed point, the direction moves on to "
    "a KKT direction (Thm 3.1)")


Q_EARLY = 0.01  # q_min of the premise ablation: every q_i <= ~0.1, so n L ~ n ln 2 > ln 2 (8 points)


def _before_late_phase(configs: dict[str, dict]) -> dict[str, dict]:
    restarts = SEARCH["quick"]["restarts"]
    return {"nonsymmetric": start_config(NONSYM_DATA, picks("nonsymmetric", restarts)[:2], q_start=Q_EARLY)}


NOT_LATE = Premise(
    "not-late-phase", _before_late_phase,
    "the same non-symmetric KKT directions scaled to q_min = 0.01 instead of 50: n L is about n ln 2 > ln 2, every "
    "point pulls with weight ~1/2 (not only the support vectors), so the direction is not a fixed point",
    source="Theorem 3.1: 'For homogeneous neural networks, if L(theta(0)) < ln 2 / n, then L(theta(t)) -> 0, "
           "||theta(t)||_2 -> +inf, and theta(t)/||theta(t)||_2 converges to a KKT-margin direction'")


def late_phase_progress(run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per seed: the smallest relative step of ||theta||^2 between observations (d||theta||^2/dt = (4/n) sum_i
    (-l'(q_i)) q_i > 0 once every q_i > 0, 2-homogeneity), ||theta(tau_end)||^2 / ||theta(0)||^2, and the fall of
    log L from the first observation to the last."""
    log_loss = run.seeded("log_loss")
    W, a = run.seeded("neuron_weights"), run.seeded("v")
    sq = np.sum(W.reshape(W.shape[0], W.shape[1], -1) ** 2, axis=2) + np.sum(a**2, axis=2)
    return np.min(np.diff(sq, axis=1) / sq[:, 1:], axis=1), sq[:, -1] / sq[:, 0], log_loss[:, 0] - log_loss[:, -1]


def _log_softplus_neg(z: np.ndarray) -> np.ndarray:
    """ln softplus(-z) = ln ln(1 + e^{-z}), stable for large z (-z + ln(1 - e^{-z}/2 + ...))."""
    z = np.asarray(z, dtype=np.float64)
    big = z > 30.0
    out = np.empty_like(z)
    out[big] = -z[big] + np.log1p(-0.5 * np.exp(-z[big]))
    out[~big] = np.log(np.log1p(np.exp(-z[~big])))
    return out


def smoothed_margin_ascent(theta, X, y, m: int, rho_sq: float, *, tol: float = 1e-11) -> np.ndarray:
    """u*(rho): from the unit direction ``theta`` (flattened (W, a), width m), projected gradient ascent on the unit
    sphere of gamma~(u; rho) = -ln sum_i softplus(-rho^2 q_i(u)) / rho^2 (the mean logistic loss at norm rho, as a
    margin) to its stationary point: du/ds = (I - u u^T) sum_i w_i grad q_i(u), w_i = sigma(-rho^2 q_i) /
    sum_j softplus(-rho^2 q_j). This is the direction flow of gradient flow at a frozen norm (d theta/dt = -grad L
    has tangential part (rho / n) sum_i sigma(-q_i) grad q_i(u)); integrated (LSODA) until the tangential gradient
    is below ``tol``."""
    from scipy.integrate import solve_ivp

    from twolayer.theory.kkt import margins, margins_jacobian

    def tangent(_, u):
        u = u / np.linalg.norm(u)
        z = rho_sq * margins(u, X, y, ALPHA, m)
        log_w = -np.logaddexp(0.0, z) - np.logaddexp.reduce(_log_softplus_neg(z))
        g = np.exp(log_w) @ margins_jacobian(u, X, y, ALPHA, m)
        return g - (g @ u) * u

    u = np.asarray(theta, dtype=np.float64) / np.linalg.norm(theta)
    for span in (1e3, 1e4, 1e5, 1e6):
        u = solve_ivp(tangent, (0.0, span), u, method="LSODA", rtol=1e-10, atol=1e-13).y[:, -1]
        u = u / np.linalg.norm(u)
        if np.linalg.norm(tangent(0.0, u)) <= tol:
            break
    return u


def stationary_offset(W, a, X, y, q_start: float = Q_START) -> tuple[float, float]:
    """The quasi-static prediction for gradient flow started on the KKT direction theta_bar = (W, a) at q_min =
    ``q_start``: (||u* - theta_bar||, (gamma(theta_bar) - gamma(u*)) / gamma(theta_bar)) with u* =
    ``smoothed_margin_ascent`` at rho^2 = q_start / gamma(theta_bar). At a KKT point the target u*(rho) is O(1 /
    q_min) from theta_bar (the support points' margins split by ln(mu_i / mu_j), mu the multipliers) and recedes as
    q_min grows in the late phase (q_min ~ tau, Thm 3.1), so the direction's largest move and the margin's largest
    change are those of the start's scale: the flow chases a target that comes back toward where it started."""
    from twolayer.theory.kkt import margins

    W, a = np.asarray(W, dtype=np.float64), np.asarray(a, dtype=np.float64)
    theta = np.concatenate([W.ravel(), a])
    u_bar = theta / np.linalg.norm(theta)
    m = len(a)
    gamma_bar = float(np.min(margins(u_bar, X, y, ALPHA, m)))
    u = smoothed_margin_ascent(u_bar, X, y, m, q_start / gamma_bar)
    gamma_u = float(np.min(margins(u, X, y, ALPHA, m)))
    return float(np.linalg.norm(u - u_bar)), (gamma_bar - gamma_u) / gamma_bar


@functools.lru_cache(maxsize=8)
def predicted_offsets(which: str, restarts: int) -> tuple:
    """Per KKT pick of ``picks(which, restarts)``: (unit direction theta_bar, predicted largest drift, predicted
    largest relative margin change) at q_min = Q_START (``stationary_offset``)."""
    data = _data(groups_data() if which == "symmetric" else NONSYM_DATA)
    out = []
    for c in picks(which, restarts):
        theta = np.concatenate([np.ravel(c.W), np.ravel(c.a)])
        out.append((theta / np.linalg.norm(theta), *stationary_offset(c.W, c.a, data.X, data.y)))
    return tuple(out)


def start_predictions(run, which: str, scale: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per seed of ``run``: the prediction (drift, margin change) of the verified KKT pick nearest to the seed's
    recorded start direction (the picks of ``scale`` and of the quick search, which the counterfactuals start from),
    and the distance of the start to that pick (rounding, ~1e-10, for the experiment's own starts)."""
    W, a = run.seeded("neuron_weights"), run.seeded("v")
    theta0 = np.concatenate([W[:, 0].reshape(W.shape[0], -1), a[:, 0]], axis=1)
    unit0 = theta0 / np.linalg.norm(theta0, axis=1, keepdims=True)
    table = predicted_offsets(which, SEARCH[scale]["restarts"]) + predicted_offsets(which, SEARCH["quick"]["restarts"])
    table = [row for row in table if len(row[0]) == unit0.shape[1]]
    drift, change, off = [], [], []
    for u in unit0:
        dist = [np.linalg.norm(u - row[0]) for row in table]
        k = int(np.argmin(dist))
        drift.append(table[k][1])
        change.append(table[k][2])
        off.append(dist[k])
    return np.array(drift), np.array(change), np.array(off)


@kkt_directions.claim("stationary-on-kkt", "Theorem 3.1 from a verified KKT-margin direction (n L < ln 2): the flow "
                                           "trains (L -> 0 and ||theta|| -> infinity: ||theta||^2 never falls between "
                                           "observations (steps >= -1e-9 of it) and at least doubles by tau_end, and log L "
                                           "ends >= 50 below its start) while theta/||theta|| moves no farther, and its "
                                           "normalized margin changes no more, than the quasi-static prediction at the "
                                           "start's scale (the smoothed margin's maximizer u*(rho_0) nearby, O(1 / "
                                           "q_min) away), every start (linear and nonlinear boundaries, no kinks: the "
                                           "kinked nonlinear point of lyu2021/kkt-symmetric leaves)",
                      kind="prediction",
                      falsifiers=[Synthetic("synthetic-drift", lambda c: ideal_runs(c, "drift"),
                                            "one non-symmetric start turns by 0.1"), OFF_KKT, NOT_LATE],
                      tolerance_source="derived: at a frozen norm the direction flow is projected gradient ascent of "
                                       "the smoothed margin, so from theta_bar the flow heads for its maximizer "
                                       "u*(rho), which is c / q_min from theta_bar (c constant to 3 digits for q_min "
                                       "= 50 ... 300) and recedes as q_min ~ tau grows: drift <= ||u*(rho_0) - "
                                       "theta_bar|| and margin change <= (gamma(theta_bar) - gamma(u*)) / "
                                       "gamma(theta_bar), per start, plus the integrator's rtol 1e-6 "
                                       "(stationary_offset; quick: predicted drift 1.2e-3 "
                                       "- 4.7e-3, measured 0.52-0.88 of it; margin 0.43-0.52 %, measured 0.85-0.88 of "
                                       "it), in place of the exploratory 2e-2 and 1 %; the doubling and the fall of "
                                       "log L are derived: from q_min = 50, q_min ~ tau in the late phase, so "
                                       "||theta||^2 grows about tau_end / 50 = 6x and log L falls about 250; -1e-9 is "
                                       "the integrator's rounding (rtol 1e-6 on theta, steps of 1e-21 early)")
def _stationary(r: Results):
    parts, rows = [], []
    for key in sorted(r.runs):
        drift, dg = direction_drift(r[key]), margin_change(r[key])
        pred_drift, pred_change, off = start_predictions(r[key], key, r.scale)
        step, growth, fall = late_phase_progress(r[key])
        # measured over predicted; the integrator's rtol is added to the prediction (a start whose prediction is 0,
        # a single support point, may still move by the solver's error)
        parts += [at_most(drift / (pred_drift + RTOL), 1.0), at_most(dg / (pred_change + RTOL), 1.0),
                  at_least(step, -1e-9), at_least(growth, 2.0), at_least(fall, 50.0)]
        rows.append(f"{key}: drift {np.array2string(drift, precision=5)} against the predicted "
                    f"{np.array2string(pred_drift, precision=5)}, margin change {np.array2string(dg, precision=5)} "
                    f"against {np.array2string(pred_change, precision=5)} (start {np.array2string(off, precision=1)} "
                    f"from its KKT pick), smallest relative ||theta||^2 step {np.array2string(step, precision=2)}, "
                    f"||theta||^2 growth {np.array2string(growth, precision=3)}, log L fall "
                    f"{np.array2string(fall, precision=4)}")
    return all_of(*parts, details="; ".join(rows))


def _record_text(which: str, restarts: int) -> str:
    from twolayer.theory.kkt import search_record

    rec = search_record(list(search(which, restarts)))
    best = rec["best_nonlinear"]
    return (f"{which} data: {2 * restarts} restarts, {rec['kkt']} verified KKT points ({rec['kkt_linear']} linear, "
            f"{rec['kkt_nonlinear']} nonlinear); " +
            (f"best nonlinear-boundary end point: residual {best['residual']:.2g}" if best else
             "no end point with a nonlinear boundary"))


@kkt_directions.plot("figure1-left", "Figure 1 (left) analogue, in the paper's layout (data, decision regions, "
                                     "boundary in black, neuron directions: green a_k > 0, orange a_k < 0, length ~ "
                                     "a_k^2): KKT-margin directions found by the search, with their margin and Clarke "
                                     "KKT residual. Symmetric data (left two): the global max and the one-neuron "
                                     "direction, both linear; non-symmetric data (right): a KKT direction with a "
                                     "nonlinear boundary. The search record is in the footnote.")
def _plot(r: Results):
    from twolayer.theory.margin import max_margin_linear

    restarts = SEARCH[r.scale]["restarts"]
    shown = [("symmetric", c) for c in picks("symmetric", restarts)[:2]] + \
            [("nonsymmetric", c) for c in picks("nonsymmetric", restarts)[:1]]
    fig, axes = panels(max(len(shown), 1), width=3.3, height=3.4)
    for ax, (which, c) in zip(np.atleast_1d(axes), shown):
        data = dataset(r, which)
        w_star = max_margin_linear(data.X, data.y)[0]
        kind = "linear" if c.linear_boundary else f"nonlinear ({c.boundary_dev:.0f} deg off)"
        decision_panel(ax, c.W, c.a, data.X, data.y, f"{which}: margin {c.margin:.4f}\n{kind}, KKT res {c.residual:.0e}",
                       w_star)
    fig.supxlabel("\n".join(_record_text(w, restarts) for w in ("symmetric", "nonsymmetric")), fontsize=6)
    return fig


@kkt_directions.plot("stationary", "Direction drift ||theta(t)/||theta(t)|| - theta(0)/||theta(0)||| against tau for "
                                   "every start on a KKT direction (log axes); dashed, in the start's colour: its "
                                   "predicted largest drift ||u*(rho_0) - theta_bar|| (stationary_offset).")
def _plot_drift(r: Results):
    fig, (ax,) = panels(1, width=4.4, height=3.0)
    for key in sorted(r.runs):
        W, a = r[key].seeded("neuron_weights"), r[key].seeded("v")
        theta = np.concatenate([W.reshape(W.shape[0], W.shape[1], -1), a], axis=2)
        unit = theta / np.linalg.norm(theta, axis=2, keepdims=True)
        dist = np.linalg.norm(unit - unit[:, :1], axis=2)
        predicted = start_predictions(r[key], key, r.scale)[0]
        t = tau(r[key])
        for s in range(len(dist)):
            keep = (t > 0) & (dist[s] > 0)
            (line,) = ax.plot(t[keep], dist[s, keep], label=f"{key} {s}")
            ax.axhline(predicted[s], color=line.get_color(), ls="--", lw=0.8)
    tau_axis(ax)
    ax.set(yscale="log", ylabel="direction drift", title="flow started on KKT directions")
    ax.legend(fontsize=6)
    return fig

