"""Figs. 7-9 (App. A.2-A.3): two positive points at angle pi/2 - theta0, Gaussian init 1e-6.

The paper's statements (alignment slows as mu = sin theta0 -> 0; at mu = 0, S+ no longer collects
the neurons) are checked per seed on the neurons whose sign(v_j) never changes (Theorem 1's V+; the
init is not balanced, see ``toy``), and every neuron's entry time into S+ is checked against the
closed-form early dynamics of an unbalanced neuron (``theory.alignment.EarlyNeuron.gain_time``),
which explains the stragglers: at paper iteration 7000 (t = 14) the loss is still within 1 % of its
initial value, so which neurons are still outside S+ is decided by the early phase alone.
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import all_of, at_least, at_most, compare, holds
from twolayer.claims.falsifiers import Counterfactual, Premise, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.min2024._plots import direction_figure
from twolayer.papers.min2024._shared import (
    COMMON, CONE_METRICS, PAPER, PAPER_LR, changed, data_of, iter_index, schedule, shorter, sign_stable, synthetic,
    two_point_data,
)
from twolayer.papers.min2024._tolerances import SPREADS
from twolayer.theory import alignment as th

SNAPSHOTS = (0, 2000, 7000, 21000)
SETS = {"mu-sin0.1": 0.1, "mu-sin0.001": 0.001, "mu-0": 0.0}
EARLY_LOSS = 0.99  # early phase: L >= 0.99 L(0) (r_i within 1 % of y_i)


def two_point_configs(scale: str) -> dict:  # noqa: ARG001 (the paper's size at both scales: seconds)
    return {key: {**COMMON, "seeds": 5, "data": two_point_data(theta0),
                  "train": {"method": "gd", "lr": PAPER_LR, "steps": SNAPSHOTS[-1]},
                  "observe": {**schedule(SNAPSHOTS[-1], 120, SNAPSHOTS), "metrics": [*CONE_METRICS, "neuron_weights"]}}
            for key, theta0 in SETS.items()}


two_points = register(Experiment(
    id=f"{PAPER}/fig7-9-two-points", title="Two positive points: alignment slows as mu -> 0 (Figs. 7-9)",
    figure="Figs. 7, 8, 9 (App. A.2-A.3)",
    description=("x1 = [1, 0], x2 = [sin theta0, cos theta0] (both y = +1) with theta0 = 0.1, 0.001 and 0 (orthogonal, "
                 "mu = 0); h = 50, Gaussian init 1e-6, GD lr 2e-3, exp loss (mean), 5 seeds (the same init W0 for every "
                 "mu). Snapshots at iterations 0, 2000, 7000, 21000."),
    configs=two_point_configs))


def outside(run, iteration, neurons=None) -> np.ndarray:
    """Per seed: non-dead V+ neurons (v_j > 0) outside S+ at ``iteration`` (among ``neurons`` [S, h])."""
    i = iter_index(run, iteration)
    cone, v = run.seeded("cone")[:, i], run.seeded("v")[:, i]
    m = (v > 0) & (cone != th.CONE_POS) & (cone != th.CONE_DEAD)
    return np.sum(m if neurons is None else m & neurons, axis=-1)


def in_pos(run, iteration) -> np.ndarray:
    i = iter_index(run, iteration)
    return np.sum((run.seeded("v")[:, i] > 0) & (run.seeded("cone")[:, i] == th.CONE_POS), axis=-1)


# -- synthetic falsifier inputs ------------------------------------------------------------------

def _two_point_like(configs, *, fast_left: int = 0, slow_left: int = 3, late_left: int = 1, orth_in: int = 2,
                    orth_grow: bool = False, loss7000: float = 0.998, loss21000: float = 0.008,
                    entry_shift: float = 1.0):
    """Synthetic runs of the three data sets (2 seeds, 8 neurons, v > 0 and sign-stable except where
    said): in run ``mu-sin0.1`` ``fast_left`` neurons are outside S+ at iteration 7000, in
    ``mu-sin0.001`` ``slow_left`` at 7000 and ``late_left`` at 21000, in ``mu-0`` ``orth_in`` of 8
    are in S+ (the rest stay outside, small unless ``orth_grow``). Neuron directions follow the
    early-phase solution (entry times multiplied by ``entry_shift``)."""
    S, h = 2, 8
    out = {}
    for key, theta0 in SETS.items():
        cfg = configs[key]
        X, y = data_of(cfg)
        t = np.array(sorted({0.0, *np.geomspace(0.05, 42.0, 60), 4.0, 14.0, 42.0}))
        it = t / PAPER_LR
        cone = np.full((S, len(t), h), th.CONE_POS)
        v = np.full((S, len(t), h), 1e-6)
        w_norm = np.full((S, len(t), h), 1e-6) * np.where(t > 20, 1e3, 1.0)[None, :, None]
        if key == "mu-sin0.1":
            cone[:, it < 7000, fast_left:] = th.CONE_NONE
            cone[:, :, :fast_left] = th.CONE_NONE
        elif key == "mu-sin0.001":
            cone[:, it < 2000] = th.CONE_NONE
            cone[:, (it >= 2000) & (it < 21000), :slow_left] = th.CONE_NONE
            cone[:, :, :late_left] = th.CONE_NONE
        else:
            cone[:, :, orth_in:] = th.CONE_NONE
            if not orth_grow:
                w_norm[:, :, orth_in:] = 1e-6
            else:
                w_norm[:, :, orth_in:] *= 2.0
        # neuron weights: at 45 degrees (active on both points: no entry to check), or, with entry_shift != 1,
        # active on x1 only and entering S+ at entry_shift times the early-phase prediction
        W = np.broadcast_to(1e-6 * np.array([0.7, 0.7]), (S, len(t), h, 2)).copy()
        if entry_shift != 1.0 and key != "mu-0":
            c = th.early_rate(2, "mean")
            for j in range(h):
                w0 = 1e-6 * np.array([0.5, -0.2 - 0.05 * j])
                W[:, :, j] = w0
                tg = th.EarlyNeuron.of(w0, 1e-6, X[0], c).gain_time(X[1]) * entry_shift
                cone[:, :, j] = np.where(t < tg, th.CONE_NONE, th.CONE_POS)[None]
        loss = np.interp(t, [0.0, 14.0, 20.0, 42.0], [1.0, loss7000, 0.3, loss21000])
        out[key] = synthetic({**cfg, "seeds": S}, t, name=f"synthetic-{key}", cone=cone, v=v, w_norm=w_norm,
                             neuron_weights=W, loss=np.broadcast_to(loss, (S, len(t))).copy())
    return out


def _defect(**kw):
    return lambda configs: _two_point_like(configs, **kw)


SWAP_MU = Counterfactual(
    "mu-sin0.1-everywhere", lambda configs: {k: {**configs["mu-sin0.1"], "name": f"{configs[k]['name']}-as-sin0.1"}
                                              for k in SETS},
    "the mu = sin 0.1 data (Fig. 7) in place of every data set: alignment is as fast for 'sin 0.001' as for "
    "'sin 0.1', and the 'orthogonal' runs collect their neurons in S+.")

SWAP_STALL = Premise(
    "mu-positive", lambda configs: {"mu-sin0.001": {**configs["mu-0"], "name": f"{configs['mu-sin0.001']['name']}-as-mu0"}},
    "Assumption 1 removed: the orthogonal pair (mu = 0, Fig. 9) in place of mu = sin 0.001, nothing else changed; the "
    "neurons active on one point never gain the other, so as many are outside S+ at 21000 as at 7000.",
    source="Assumption 1 / Theorem 1: mu > 0 (same-label points positively correlated)")


# -- claims -------------------------------------------------------------------------------------------

LATE_SIGN_CHANGE_7000 = (
    "The paper's Gaussian init leaves Delta_j = v_j^2 - ||w_j||^2 < 0 for about half the neurons, and with two "
    "positive points every active neuron's v_j is pulled up, so a V- neuron with v_j(0)^2 < ||w_j(0)||^2 crosses "
    "into V+(t). While |f| << 1 its early dynamics are closed-form (theory.alignment.EarlyNeuron): with a = x_k its "
    "active point and k = c ||a|| (c = 1/2, exp loss, mean over n = 2), alpha +- v ~ e^{+-k t}, v changes sign at "
    "t0 = ln((alpha0 - v0)/(alpha0 + v0))/(2k), and it then turns at speed |v_j|/||w_j||, from 0, entering S+ when "
    "<w(t), x_m> turns positive (EarlyNeuron.gain_time). In seed 4 (mu = sin 0.1) neurons 0 and 1 start in V- "
    "(v_j(0) = -2.14e-7 and -1.91e-7, ||w_j(0)|| = 3.82e-7 and 1.60e-6, alpha0 + v0 = 3.0e-9 and 1.2e-8), change "
    "sign at t = 4.97 and 3.49 (closed form; observed by 5.19 and 3.71), and are predicted to enter S+ at t = 15.3 "
    "and 15.8, observed 15.4 and 16.7: after iteration 7000 (t = 14). So 2 V+(t) neurons are outside S+ at 7000 in "
    "that seed, where the paper's Fig. 7 text says none. Theorem 1 assumes the balanced init (Remark 1), under "
    "which no v_j changes sign; the sign-stable count (P9-outside-7000-sign-stable) passes, and the entry times of "
    "every neuron, these two included, match the closed form (P9-entry-times).")

SMALL_INIT_7000 = Premise(
    "small-init", changed({"mu-sin0.1": {"init.scale": 0.3}, "mu-sin0.001": {"init.scale": 0.3}}, every={"seeds": 2}),
    "Gaussian init 0.3 instead of 1e-6, nothing else changed: |f| ~ 1 at once, the network fits while most neurons "
    "are still between the cones, so mu = sin 0.1 leaves as many outside S+ at 7000 as sin 0.001 (measured, "
    "sign-stable: 13 and 16 for sin 0.1, 17 and 16 for sin 0.001)",
    source="Theorem 1: a small initialization scale eps")
SMALL_INIT_ORTHOGONAL = Premise(
    "small-init", changed({"mu-sin0.1": {"init.scale": 0.3}, "mu-0": {"init.scale": 0.3}}, every={"seeds": 2}),
    "Gaussian init 0.3 instead of 1e-6, nothing else changed: the network fits with its random directions, the "
    "neurons outside S+ grow as much as those inside (measured: largest outside ||w_j|| 5.5 and 4.0 times the "
    "smallest S+ one)", source="Theorem 1: a small initialization scale eps")

BALANCED_TWO_POINTS = Counterfactual(
    "balanced-init", changed({k: {"init.kind": "balanced"} for k in ("mu-sin0.1", "mu-sin0.001")}),
    "the theory's balanced init at the same scale (v_j = +-||w_j||): no v_j changes sign, V+(t) is a fixed set, and "
    "the Fig. 7/8 counts hold with the paper's sets (a world where the statement holds).")


def _p9_7000_check(r: Results, stable_only: bool):
    fast_run, slow_run = r["mu-sin0.1"], r["mu-sin0.001"]
    if stable_only:
        fast, slow = outside(fast_run, 7000, sign_stable(fast_run)), outside(slow_run, 7000, sign_stable(slow_run))
        other = f"counting every V+(t) neuron, mu=sin .1: {outside(fast_run, 7000).tolist()}"
    else:
        fast, slow = outside(fast_run, 7000), outside(slow_run, 7000)
        other = (f"sign-stable only, mu=sin .1: {outside(fast_run, 7000, sign_stable(fast_run)).tolist()}, "
                 f"mu=sin .001: {outside(slow_run, 7000, sign_stable(slow_run)).tolist()}")
    label = "sign-stable V+" if stable_only else "V+(t)"
    return all_of(compare(fast.tolist(), "==", 0), at_least(slow.tolist(), 1),
                  details=(f"non-dead {label} neurons outside S+ at 7000, per seed: mu=sin .1 {fast.tolist()}, mu=sin "
                           f".001 {slow.tolist()}; {other}"))


@two_points.claim("P9-outside-7000",
                  "Fig. 7/8 text, with the paper's set V+(t) = {j: v_j(t) > 0} (§4): at iteration 7000 no non-dead "
                  "V+(t) neuron is outside S+ when mu = sin 0.1, while with mu = sin 0.001 some still are: per seed, 0 "
                  "outside for sin 0.1 and at least 1 for sin 0.001",
                  kind="finding", tolerance_source="none: exact counts, as the paper states them",
                  explanation=LATE_SIGN_CHANGE_7000,
                  falsifiers=[Synthetic("counts-hold", _defect(), "0 outside for sin 0.1, 3 for sin 0.001"),
                              BALANCED_TWO_POINTS])
def _p9_7000(r: Results):
    return _p9_7000_check(r, stable_only=False)


@two_points.claim("P9-outside-7000-sign-stable",
                  "Fig. 7/8 text on the sign-stable neurons (the project's reading: Theorem 1's V+ is a fixed set "
                  "under its balanced init; a neuron whose v_j changes sign is outside the theorem): at iteration "
                  "7000 no non-dead sign-stable V+ neuron is outside S+ when mu = sin 0.1, while with mu = sin 0.001 "
                  "some still are: per seed, 0 outside for sin 0.1 and at least 1 for sin 0.001",
                  kind="prediction", tolerance_source="none: exact counts, as the paper states them",
                  falsifiers=[Synthetic("fast-straggler", _defect(fast_left=1), "one sin 0.1 neuron outside at 7000"),
                              Synthetic("slow-done", _defect(slow_left=0, late_left=0), "sin 0.001 done by 2000"),
                              SWAP_MU],
                  premises=[SMALL_INIT_7000])
def _p9_7000_stable(r: Results):
    return _p9_7000_check(r, stable_only=True)


LATE_OVER_EARLY = SPREADS["two-points-late-over-early"]


def late_over_early(early: np.ndarray, late: np.ndarray) -> np.ndarray:
    """Per seed: neurons outside at 21000 over those at 7000 (0 when none is left at either, inf when some appear)."""
    early, late = np.asarray(early, dtype=np.float64), np.asarray(late, dtype=np.float64)
    return np.where(early > 0, late / np.maximum(early, 1.0), np.where(late > 0, np.inf, 0.0))


@two_points.claim("P9-21000",
                  "Fig. 8: with mu = sin 0.001 alignment is slower but goes on: per seed, the non-dead V+(t) neurons "
                  "(the paper's set, v_j(t) > 0) outside S+ at iteration 21000 are at most "
                  f"{LATE_OVER_EARLY.upper():.2f} of those at 7000, the mean + 3 sd of that ratio over 10 independent "
                  "seeds of the same config (the paper's instance: several at 7000, one at 21000)",
                  kind="prediction",
                  tolerance_source=(f"spread: outside(21000) / outside(7000) = {LATE_OVER_EARLY.text()} of the same "
                                    "config (script benchmarks/spreads/issue26/spread_toy_twopoints.py, issue 26); "
                                    "mean + 3 sd, narrower "
                                    "than the former exploratory 1/2"),
                  falsifiers=[Synthetic("stalled", _defect(slow_left=3, late_left=3), "3 outside at 7000 and at 21000"),
                              SWAP_STALL])
def _p9_21000(r: Results):
    run = r["mu-sin0.001"]
    early, late = outside(run, 7000), outside(run, 21000)
    stable = sign_stable(run)
    return at_most(late_over_early(early, late).tolist(), LATE_OVER_EARLY.upper(), scale=3 * LATE_OVER_EARLY.sd,
                   details=f"per seed, V+(t): outside at 7000 {early.tolist()}, at 21000 {late.tolist()} (measured: "
                           f"their ratio; slack in units of the 3 sd above the spread's mean); sign-stable only: "
                           f"{outside(run, 7000, stable).tolist()} and {outside(run, 21000, stable).tolist()}")


@two_points.claim("P9-orthogonal",
                  "Fig. 9 (mu = 0): S+ no longer collects the non-dead V+(t) neurons (at iteration 21000 at least one stays "
                  "outside, every seed), clearly fewer neurons end in S+ than with mu = sin 0.1 (same seeds, same W0), "
                  "and only those in S+ grow their norm (every outside neuron is smaller than every S+ neuron)",
                  kind="prediction", tolerance_source="none: counts and an order of norms",
                  falsifiers=[Synthetic("orthogonal-collects", _defect(orth_in=8), "every mu = 0 neuron ends in S+"),
                              Synthetic("outside-grows", _defect(orth_grow=True), "the mu = 0 neurons outside S+ grow too"),
                              SWAP_MU],
                  premises=[SMALL_INIT_ORTHOGONAL])
def _p9_orth(r: Results):
    run = r["mu-0"]
    i = iter_index(run, 21000)
    left = outside(run, 21000)
    fewer = (in_pos(r["mu-sin0.1"], 21000) - in_pos(run, 21000))
    cone, v, wn = run.seeded("cone")[:, i], run.seeded("v")[:, i], run.seeded("w_norm")[:, i]
    ratios = []
    for s in range(cone.shape[0]):
        out_m = (v[s] > 0) & (cone[s] != th.CONE_POS) & (cone[s] != th.CONE_DEAD)
        in_m = (v[s] > 0) & (cone[s] == th.CONE_POS)
        ratios.append(float(np.max(wn[s][out_m]) / np.min(wn[s][in_m])) if out_m.any() and in_m.any() else math.inf)
    return all_of(at_least(left.tolist(), 1), at_least(fewer.tolist(), 1), at_most(ratios, 1.0),
                  details=(f"per seed: outside {left.tolist()}; in S+ for sin 0.1 minus for mu = 0: {fewer.tolist()}; "
                           f"largest outside ||w_j|| / smallest S+ ||w_j||: {np.round(ratios, 3).tolist()}"))


LOSS_DROP_7000 = SPREADS["two-points-log10-loss-drop-7000"]
LOSS_RATIO_21000 = SPREADS["two-points-loss-21000-over-7000"]
FLAT_7000 = 1.0 - 10.0 ** LOSS_DROP_7000.upper()  # L(7000)/L(0) at least this: 1 - L at most 10^(mean + 3 sd)


@two_points.claim("P9-loss",
                  "Two phases (Figs. 7-8): with mu = sin 0.001 the mean loss at iteration 7000 is still flat (|f| << 1 "
                  f"in the alignment phase: L(7000)/L(0) >= {FLAT_7000:.4f}) and by 21000 it has fallen to at most "
                  f"{LOSS_RATIO_21000.upper():.4f} L(7000) (final convergence), every seed; both limits are the mean -/+ "
                  "3 sd over 10 independent seeds of the same config (of log10(1 - L(7000)/L(0)) and of "
                  "L(21000)/L(7000))",
                  kind="prediction",
                  tolerance_source=(f"spread: log10(1 - L(7000)/L(0)) = {LOSS_DROP_7000.text()} (1 - L ~ mean y f grows "
                                    f"like eps^2 e^(2kt) times the init's random factors: log-normal) and L(21000)/L(7000) "
                                    f"= {LOSS_RATIO_21000.text()} of the same config (script "
                                    "benchmarks/spreads/issue26/spread_toy_twopoints.py, issue 26); mean -/+ 3 sd, "
                                    "narrower than the "
                                    "former exploratory 0.99 and 0.1 (the spec's calibration L(7000) ~ 0.99, L(21000) "
                                    "~ 0.008)"),
                  falsifiers=[Synthetic("fits-early", _defect(loss7000=0.5), "the loss is 0.5 at iteration 7000"),
                              Synthetic("never-fits", _defect(loss21000=0.5), "the loss is 0.5 at iteration 21000"),
                              Premise("small-init", changed({"mu-sin0.001": {"init.scale": 0.3}}, every={"seeds": 2}),
                                      "Gaussian init 0.3 instead of 1e-6, nothing else changed: |f| ~ 1 at once, so the "
                                      "loss falls from the start and there is no flat alignment phase at 7000",
                                      source="Theorem 1: a small initialization scale eps")])
def _p9_loss(r: Results):
    run = r["mu-sin0.001"]
    loss = run.seeded("loss")
    a, b = loss[:, iter_index(run, 7000)] / loss[:, 0], loss[:, iter_index(run, 21000)] / loss[:, 0]
    return all_of(at_least(a.tolist(), FLAT_7000, scale=1 - FLAT_7000),
                  at_most((b / a).tolist(), LOSS_RATIO_21000.upper(), scale=3 * LOSS_RATIO_21000.sd),
                  details=f"L(7000)/L(0) {np.round(a, 4).tolist()}; L(21000)/L(7000) {np.round(b / a, 5).tolist()}")


def entry_checks(run):
    """Per neuron active on exactly one point at init: (seed, neuron, predicted entry time into S+ by the
    early-phase solution, observed first time in S+ or inf, the observation before it, early-phase end)."""
    X, y = data_of(run)
    t, cone, v, W, loss = (run.trajectory["t"], run.seeded("cone"), run.seeded("v"), run.seeded("neuron_weights"),
                           run.seeded("loss"))
    cfg = run.config
    c = th.early_rate(len(y), cfg["loss"]["reduction"], cfg["loss"]["kind"])
    rows = []
    for s in range(v.shape[0]):
        ends = np.flatnonzero(loss[s] < EARLY_LOSS * loss[s, 0])
        end = float(t[ends[0]]) if ends.size else math.inf
        for j in range(v.shape[2]):
            A0 = W[s, 0, j] @ X.T > 0
            if A0.sum() != 1:
                continue
            k = int(np.flatnonzero(A0)[0])
            pred = th.EarlyNeuron.of(W[s, 0, j], v[s, 0, j], X[k], c).gain_time(X[1 - k])
            hits = np.flatnonzero(cone[s, :, j] == th.CONE_POS)
            obs, before = (float(t[hits[0]]), float(t[hits[0] - 1])) if hits.size else (math.inf, float(t[-1]))
            rows.append((s, j, pred, obs, before, end))
    return rows


@two_points.claim("P9-entry-times",
                  "Beyond the paper: a neuron active on one point x_k at init follows the early-phase solution "
                  "w = alpha x_k + w_perp, alpha +- v ~ e^{+-t/2} (exp loss, mean over n = 2, Gaussian init: "
                  "theory.alignment.EarlyNeuron), so it enters S+ when alpha(t) reaches -<w_perp, x_m>/<x_k, x_m>. Every "
                  "such neuron whose predicted entry falls in the early phase (L >= 0.99 L(0)) enters S+ in the "
                  "observation interval containing it (up to 1 % + 2 lr), and every other one is outside S+ until the "
                  "early phase ends (mu = 0: never)",
                  kind="prediction", tolerance_source="solver: GD against the flow's closed form, 1 % + 2 lr",
                  falsifiers=[Synthetic("entries-late", _defect(entry_shift=1.5), "every entry 1.5x later than predicted")],
                  premises=[Premise("relu", changed({"mu-sin0.1": {"model.activation": {"name": "leaky_relu", "slope": 0.5}}},
                                                    every={"seeds": 2, **shorter(7000)}),
                                    "leaky ReLU (slope 0.5): the inactive point still pulls (x_a = x_k + 0.5 x_m), so "
                                    "the neurons turn towards x_m and enter S+ far sooner than the ReLU solution says",
                                    source="the early-phase closed form (as Theorem 1): ReLU, sigma'(z) = 0 for z < 0, "
                                           "so the inactive point does not pull")])
def _entry(r: Results):
    errs, checked, never = [], 0, 0
    worst = None
    for key in r.runs:
        run = r[key]
        lr = run.config["train"]["lr"]
        for s, j, pred, obs, before, end in entry_checks(run):
            if pred <= end and math.isfinite(pred):
                err = max(0.0, before - pred, pred - obs) / (0.01 * pred + 2 * lr) if math.isfinite(obs) else math.inf
                checked += 1
            else:
                err = 0.0 if obs >= end else math.inf  # predicted after the early phase: not in S+ before its end
                never += 1
            errs.append(err)
            if worst is None or err > worst[0]:
                worst = (err, key, s, j, pred, before, obs)
    if not errs:
        return holds(False, "neurons active on one point at init", 0)
    w = worst
    off = int(np.sum(np.asarray(errs) > 1.0))
    finite = [e for e in errs if math.isfinite(e)]
    return at_most(off, 0, details=(f"measured: neurons off their predicted entry (error > 1 + 2 lr allowance); "
                                    f"{checked} entries predicted in the early phase, {never} predicted later (or "
                                    f"never); largest finite error / allowed {max(finite, default=0.0):.3g}; worst: "
                                    f"{w[1]} seed {w[2]} neuron {w[3]}, predicted {w[4]:.4g}, observed in "
                                    f"({w[5]:.4g}, {w[6]:.4g}]"))


for _key, _theta in SETS.items():
    def _plot(r: Results, key=_key):
        return direction_figure(r[key], SNAPSHOTS, key)

    two_points.plot(f"directions-{_key}", f"Neuron directions (seed 0) at iterations {SNAPSHOTS} for {_key} "
                                          f"(theta0 = {_theta}); style as Fig. 6.")(_plot)


@two_points.plot("entry-times", "Entry time into S+ of every neuron active on one point at init (all seeds, mu = sin "
                                "0.1 and sin 0.001) against the early-phase prediction; dotted: iteration 7000 (t = 14), "
                                "so the neurons above it are the stragglers of Figs. 7-8.")
def _plot_entry(r: Results):
    from twolayer.plotting import panels

    fig, (ax,) = panels(1, width=3.8, height=3.2)
    for idx, key in enumerate(("mu-sin0.1", "mu-sin0.001")):
        rows = [row for row in entry_checks(r[key]) if math.isfinite(row[2]) and math.isfinite(row[3])]
        if rows:
            ax.plot([row[2] for row in rows], [row[3] for row in rows], "o", ms=3, color=f"C{idx}", alpha=0.7, label=key)
    ax.axhline(7000 * PAPER_LR, color="gray", ls=":", lw=0.8)
    lim = ax.get_xlim()
    ax.plot(lim, lim, "k--", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="predicted entry time t", ylabel="observed entry time t",
           title="entry into S+ (Gaussian init)")
    ax.legend()
    return fig
