"""Fig. 6 (App. A.1): TOY-A under the paper's Gaussian (unbalanced) init.

The init is not balanced (|v_j(0)| and ||w_j(0)|| are independent), so about a fifth of the
neurons change the sign of v_j on the way: Theorem 1 speaks about fixed sets V+ and V-, so its
statements are checked on the neurons whose sign never changes, and the sign changes themselves
are checked against the closed-form early dynamics of an unbalanced neuron
(``theory.alignment.EarlyNeuron``): a saddle, whose escape time grows without bound as
alpha0 + v0 -> 0. At paper scale one such neuron (seed 4, neuron 49: v_j(0) = -1.23e-7,
||w_j(0)|| = 5.69e-7, alpha0 + v0 = 2.6e-9) changes sign only at t = 11.5 (predicted 11.51) and
never aligns: the other neurons fit the data first and its residual exp(-f(x_i)) vanishes.
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import at_most, compare, holds
from twolayer.claims.falsifiers import Counterfactual, Premise, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.min2024._plots import direction_figure, directions_gif
from twolayer.papers.min2024._shared import (
    COMMON, CONE_METRICS, PAPER, PAPER_LR, THEOREM1_EPS, TOY, changed, data_of, schedule, shorter, sign_stable,
    synthetic, t1_indices,
)
from twolayer.papers.min2024._tolerances import SPREADS
from twolayer.observe.alignment import aligned
from twolayer.theory import alignment as th

SNAPSHOTS = (0, 4000, 40000)
EARLY_LOSS = 0.99  # the early phase: L >= 0.99 L(0), so r_i = y_i exp(-y_i f_i) is within 1 % of y_i


def toy_configs(scale: str) -> dict:  # noqa: ARG001 (the paper's 5 seeds at both scales: seconds)
    seeds = 5
    return {"toy": {**COMMON, "seeds": seeds, "data": TOY,
                    "train": {"method": "gd", "lr": PAPER_LR, "steps": SNAPSHOTS[-1]},
                    "observe": {**schedule(SNAPSHOTS[-1], 150, SNAPSHOTS), "metrics": [*CONE_METRICS, "neuron_weights"]}}}


toy = register(Experiment(
    id=f"{PAPER}/fig6-toy", title="Toy 2-D data: alignment, then growth (Fig. 6)", figure="Fig. 6 (App. A.1)",
    description=("TOY-A (positives at 20, 35, 50 degrees, negatives at 240, 255 degrees, unit norm; mu = cos 55 deg), "
                 "h = 50, Gaussian init 1e-6 on both layers (not balanced), GD lr 2e-3, exponential loss with mean "
                 "reduction (spec default). Neuron directions at iterations 0, 4000 (end of alignment) and 40000. "
                 "Theorem 1's V+ and V- are fixed sets; with this init about 20 % of the neurons change sign(v_j), "
                 "so the theorem's statements are checked on the sign-stable neurons and the sign changes against "
                 "the closed-form saddle of an unbalanced neuron."),
    configs=toy_configs))

# -- falsifier inputs --------------------------------------------------------------------------------

EARLY_SMALL_INIT = Premise(
    "small-init", changed({"toy": {"init.scale": 0.3, "seeds": 2, **shorter(4000)}}),
    "Gaussian init 0.3 (|f| ~ 1 at once): the network fits before (and without) the alignment phase; no early "
    "saddle dynamics (r_i = y_i only while |f| << 1), and the loss is never flat.",
    source="the early-phase closed form (theory.alignment.EarlyNeuron; Lemma 1's regime): |f| << 1, i.e. a small "
           "initialization scale")
MU_POSITIVE = Premise(
    "mu-positive", changed({"toy": {"data.pos_angles": [20.0, 35.0, 150.0]}}, every={"seeds": 2}),
    "positives at 20, 35 and 150 degrees (the pair 20/150 has cos 130 deg < 0), negatives as in TOY-A, nothing else "
    "changed: no cone collects every positive point, the S+ neurons cannot fit the 150-degree point, and the loss is "
    "still 5x above the bound at iteration 40000 (measured: L/L(0) = 0.025 and 0.023 in seeds 0 and 1)",
    source="Assumption 1 / Theorem 1 (final convergence): mu > 0 (same-label points positively correlated)")
SMALL_INIT_FITS = Premise(
    "small-init", changed({"toy": {"init.scale": 1e-2, "seeds": 2}}),
    "Gaussian init 1e-2 instead of 1e-6, nothing else changed: the network fits sooner, without a long alignment "
    "phase (measured: L/L(0) = 0.0032 in both seeds, below the bound)",
    source="Theorem 1: a small initialization scale eps", holds=True)


SMALL_INIT_OUTSIDE = Premise(
    "small-init", changed({"toy": {"init.scale": 0.1, "seeds": 2, **shorter(4000)}}),
    "Gaussian init 0.1 instead of 1e-6 (|f| ~ 0.1 at once; at 0.01 and 0.03 the claim still holds, 0.05 is the first "
    "scanned scale where it does not): the network fits while some neurons are still between the cones, their "
    "residuals vanish and they stay there, so no seed reaches the aligned state (measured: 7 of the 75 sign-stable "
    "neurons outside S+ u S_dead or S- u S_dead at iteration 4000, a defined count)",
    source="Theorem 1: initialization scale eps small enough")


def _toy_like(configs, *, T: int = 40, flip_at: float | None = None, stuck: bool = False, growth: float = 30.0,
              loss_final: float = 1e-3, drops: int = 2, dead_own: bool = False, flip_rich: bool = False):
    """A synthetic TOY-A run (2 seeds, 4 neurons) that passes every claim without a defect: neuron 0
    (v > 0) goes from 'none' to S+, neuron 1 (v < 0) from 'none' to S-, neuron 2 is dead, neuron 3
    changes sign at the saddle time its init predicts. Defects: ``flip_at`` (neuron 3 changes sign
    then instead), ``stuck`` (neuron 0 never leaves 'none'), ``growth`` (norm-growth time),
    ``loss_final``, ``drops`` (number of sharp loss decreases), ``dead_own`` (neuron 0 active on a
    positive point at init ends dead), ``flip_rich`` (neuron 3 starts with v^2 > ||w||^2)."""
    cfg = configs["toy"]
    X, y = data_of(cfg)
    S, h = 2, 4
    t = np.concatenate([[0.0], np.geomspace(0.05, 80.0, T - 1)])
    W = np.zeros((S, T, h, 2))
    v = np.zeros((S, T, h))
    cone = np.full((S, T, h), th.CONE_NONE)
    ang = np.deg2rad
    W[:, :, 0] = [math.cos(ang(100)), math.sin(ang(100))]  # active on 50 degrees only: 'none'
    W[:, :, 1] = [math.cos(ang(300)), math.sin(ang(300))]
    W[:, :, 2] = [math.cos(ang(145)), math.sin(ang(145))]  # S_dead
    v[:, :, 0], v[:, :, 1], v[:, :, 2] = 1e-6, -1e-6, 1e-6
    cone[:, :, 2] = th.CONE_DEAD
    k1 = T // 3
    cone[:, k1:, 0] = th.CONE_DEAD if dead_own else th.CONE_POS
    if stuck:
        cone[:, :, 0] = th.CONE_NONE
    cone[:, k1:, 1] = th.CONE_NEG
    # neuron 3: active on x at 50 degrees only (a = x_50), alpha0 + v0 small and positive, v0 < 0
    a = X[2]
    w0 = 1e-6 * (0.2 * a + np.array([-a[1], a[0]]))
    v0 = -0.15e-6 if not flip_rich else -2e-6
    e = th.EarlyNeuron.of(w0, v0, a, th.early_rate(5, "mean"))
    t_flip = e.sign_change_time() if flip_at is None else flip_at
    if not math.isfinite(t_flip):
        t_flip = 2.0
    W[:, :, 3] = w0
    v[:, :, 3] = np.where(t < t_flip, v0, -v0)
    cone[:, :, 3] = np.where(t < t_flip, th.CONE_NONE, th.CONE_POS)[None]
    loss = np.where(t < growth, 1.0, loss_final)
    if drops >= 2:
        loss = 1.0 / (1 + np.exp((t - growth) * 2)) * 0.5 + 0.5 / (1 + np.exp((t - 1.6 * growth) * 2)) + loss_final
    elif drops == 1:
        loss = 1.0 / (1 + np.exp((t - growth) * 2)) + loss_final
    w_norm = np.linalg.norm(W, axis=-1) * np.where(t >= growth, 1e6, 1.0)[None, :, None]
    growth_t = float(t[np.searchsorted(t, growth)])
    run = synthetic({**cfg, "seeds": S}, t, summary={"events": {"norm_growth": [growth_t] * S}},
                    cone=cone, v=v, neuron_weights=W, w_norm=w_norm, loss=np.broadcast_to(loss, (S, T)).copy())
    return {"toy": run}


def _defect(**kw):
    return lambda configs: _toy_like(configs, **kw)


# -- claims ---------------------------------------------------------------------------------------------

def _directional_check(run, stable_only: bool):
    """The aligned state t1 over the neurons counted (all: Theorem 1's V+(t) and V-(t) by the sign of v_j at each
    time, as the paper counts them; or only the sign-stable ones) and, at t1, no counted neuron that activated a
    point of its own class at init is dead."""
    X, y = data_of(run)
    stable = sign_stable(run)
    counted = stable if stable_only else np.ones_like(stable)
    t = run.trajectory["t"]
    cone, v, W = run.seeded("cone"), run.seeded("v"), run.seeded("neuron_weights")
    flipped = [int(np.sum(~stable[s])) for s in range(len(stable))]
    ok_end = aligned(cone[:, -1], v[:, -1])
    stragglers = {f"seed {s}": np.flatnonzero(~ok_end[s]).tolist() for s in range(len(stable)) if np.any(~ok_end[s])}
    context = (f"sign changes of v_j per seed {flipped}; neurons outside their V+(t)/V-(t) set at the end (t = "
               f"{t[-1]:.4g}): {stragglers or 'none'}")
    idx = t1_indices(run, counted)
    missing = [s for s, i in enumerate(idx) if i is None]
    # a seed that never reaches the aligned state counts its neurons outside their sets at the end (>= 1 by definition)
    outside = sum(int(np.sum(counted[s] & ~ok_end[s])) for s in missing)
    bad, total = 0, 0
    for s, i in enumerate(idx):
        total += int(counted[s].sum())
        if i is None:
            continue
        pre0 = W[s, 0] @ X.T  # [h, n]
        own = np.where(v[s, i] > 0, (pre0[:, y > 0] > 0).any(axis=1), (pre0[:, y < 0] > 0).any(axis=1))
        bad += int(np.sum(own & counted[s] & (cone[s, i] == th.CONE_DEAD)))
    t1 = [None if i is None else round(float(t[i]) / PAPER_LR) for i in idx]
    return compare(bad + outside, "==", 0, details=(
        f"{total} {'sign-stable neurons' if stable_only else 'neurons of V+(t), V-(t)'} counted over seeds; t1 per seed "
        f"(iterations; None: never aligned) {t1}; count: neurons outside their set at the end in the seeds that never "
        f"align ({outside}) plus neurons active on their own class at init but dead at t1 ({bad}); {context}"))


LATE_SIGN_CHANGE = (
    "Under the paper's Gaussian init |v_j(0)| and ||w_j(0)|| are independent, so Delta_j = v_j^2 - ||w_j||^2 < 0 for "
    "about half the neurons and v_j can cross 0. While |f| << 1 and the pattern is fixed a neuron follows the "
    "closed form w = alpha a/||a|| + w_perp, alpha +- v ~ e^{+-k t} (k = c ||x_a||, c = 1/n for the mean loss): a "
    "saddle, where v changes sign at t0 = ln((alpha0 - v0)/(alpha0 + v0))/(2k) and the direction then turns at speed "
    "|v_j|/||w_j||, which starts from 0. When alpha0 + v0 is tiny t0 is late and the neuron joins V+(t) with no time "
    "left to turn: at paper scale seed 4, neuron 49 (v_j(0) = -1.23e-7, ||w_j(0)|| = 5.69e-7, alpha0 + v0 = 2.6e-9) "
    "changes sign only at t = 11.5 (closed form 11.51), after the other neurons have fitted the data, its residual "
    "exp(-y_i f(x_i)) has vanished and it never reaches S+ (its seed never reaches the aligned state over V+(t), "
    "V-(t)). Theorem 1 assumes the balanced init (Remark 1), where v_j never crosses 0 (P2), so the theorem is not "
    "contradicted; the paper's Fig. 6 reading of it under a Gaussian init is, for that one neuron. The sign-stable "
    "version (directional-convergence-sign-stable) and the closed-form sign-change times (sign-change-saddle) pass.")

BALANCED_TOY = Counterfactual(
    "balanced-init", changed({"toy": {"init.kind": "balanced", "seeds": 2}}),
    "the theory's balanced init at the same scale 1e-6 (v_j = +-||w_j||): Delta_j = 0, no v_j crosses 0, so V+(t) "
    "and V-(t) are fixed sets and the paper's count is the theorem's (a world where the statement holds).")


@toy.claim("directional-convergence",
           "Theorem 1 as Fig. 6b reads it, with the neuron sets the paper counts (§4, Remark 1): V+(t) = {j: v_j(t) > "
           "0} and V-(t) = {j: v_j(t) < 0}. Every seed reaches the aligned state t1 (every neuron of V+(t) in S+ u "
           "S_dead and of V-(t) in S- u S_dead), and at t1 every neuron that activated a point of its own class at "
           "init is in its own cone, not dead" + THEOREM1_EPS,
           kind="finding", tolerance_source="none: an exact count", explanation=LATE_SIGN_CHANGE,
           falsifiers=[Synthetic("paper-sets-hold", _defect(), "every neuron aligns, the late sign change included"),
                       BALANCED_TOY])
def _directional(r: Results):
    return _directional_check(r["toy"], stable_only=False)


@toy.claim("directional-convergence-sign-stable",
           "Theorem 1 (Fig. 6b) on the sign-stable neurons only (the project's reading: Theorem 1's V+ and V- are "
           "fixed sets under its balanced init, and a neuron whose v_j changes sign is outside the theorem): every "
           "seed reaches the aligned state t1 over them, and at t1 every such neuron that activated a point of its "
           "own class at init is in its own cone, not dead" + THEOREM1_EPS,
           kind="prediction", tolerance_source="none: an exact count",
           falsifiers=[Synthetic("never-leaves-none", _defect(stuck=True),
                                 "a sign-stable V+ neuron stays outside S+ u S_dead for the whole run"),
                       Synthetic("own-class-dead", _defect(dead_own=True),
                                 "a V+ neuron active on a positive point at init ends in S_dead")],
           premises=[SMALL_INIT_OUTSIDE])
def _directional_stable(r: Results):
    return _directional_check(r["toy"], stable_only=True)


def _sign_changes(run):
    """Per neuron whose v_j changes sign with its activation pattern fixed until then, in the early
    phase: (seed, neuron, observed bracket (t_a, t_b], predicted time, v0, ||w0||), plus the counts
    of sign changes left out (pattern changed first, or after the early phase)."""
    X, y = data_of(run)
    t, v, W, loss = run.trajectory["t"], run.seeded("v"), run.seeded("neuron_weights"), run.seeded("loss")
    cfg = run.config
    c = th.early_rate(len(y), cfg["loss"]["reduction"], cfg["loss"]["kind"])
    rows, pattern_moved, late = [], 0, 0
    for s in range(v.shape[0]):
        for j in range(v.shape[2]):
            changed_at = np.flatnonzero(np.sign(v[s, :, j]) != np.sign(v[s, 0, j]))
            if not changed_at.size:
                continue
            k = int(changed_at[0])
            A = W[s, :k + 1, j] @ X.T > 0
            if not np.all(A == A[0]) or not A[0].any():
                pattern_moved += 1
                continue
            if loss[s, k] < EARLY_LOSS * loss[s, 0]:
                late += 1
                continue
            e = th.EarlyNeuron.of(W[s, 0, j], v[s, 0, j], (A[0] * y) @ X, c)
            rows.append((s, j, float(t[k - 1]), float(t[k]), e.sign_change_time(), float(v[s, 0, j]),
                         float(np.linalg.norm(W[s, 0, j]))))
    return rows, pattern_moved, late


@toy.claim("sign-change-saddle",
           "Beyond the paper (its experiments' unbalanced init): while |f| << 1 and its activation pattern is fixed, a "
           "neuron follows w = alpha a/||a|| + w_perp with alpha +- v ~ e^{+-k t}, k = c ||x_a|| (c = 1/n for the mean "
           "loss), so v_j changes sign at t0 = ln((alpha0 - v0)/(alpha0 + v0)) / (2k): every such sign change is "
           "observed in the observation interval that contains t0, up to 1 % + 2 lr (GD vs flow)",
           kind="prediction", tolerance_source="solver: GD against the flow's closed form, 1 % + 2 lr",
           falsifiers=[Synthetic("late-flip", _defect(flip_at=15.0), "a neuron changes sign at t = 15, three times its t0 = 4.9")],
           premises=[EARLY_SMALL_INIT])
def _saddle(r: Results):
    run = r["toy"]
    rows, moved, late = _sign_changes(run)
    if not rows:
        return holds(False, "at least one early sign change to check", 0,
                     details=f"{moved} changed pattern first, {late} after the early phase")
    lr = run.config["train"]["lr"]
    errs = [max(0.0, a - p, p - b) / (0.01 * p + 2 * lr) if math.isfinite(p) else math.inf for _, _, a, b, p, _, _ in rows]
    worst = max(errs)
    slowest = max(rows, key=lambda row: row[3])
    return at_most(worst, 1.0, details=(f"{len(rows)} sign changes checked ({moved} changed their pattern first, {late} "
                                        f"after the early phase); distance of t0 from the observed interval over the "
                                        f"allowed 1 % + 2 lr (worst); slowest: seed {slowest[0]} neuron {slowest[1]}, "
                                        f"v0 = {slowest[5]:.3g}, ||w0|| = {slowest[6]:.3g}, t0 = {slowest[4]:.4g} in "
                                        f"({slowest[2]:.4g}, {slowest[3]:.4g}]"))


@toy.claim("sign-change-needs-imbalance",
           "Conservation of Delta_j = v_j^2 - ||w_j||^2 (P1): v_j can only cross 0 where Delta_j = -||w_j||^2 < 0, so "
           "every neuron whose v_j changes sign started with v_j(0)^2 < ||w_j(0)||^2",
           kind="consistency", tolerance_source="none: an exact count",
           falsifiers=[Synthetic("rich-flip", _defect(flip_rich=True),
                                 "a neuron with v_j(0)^2 > ||w_j(0)||^2 changes sign")])
def _needs_imbalance(r: Results):
    run = r["toy"]
    v, W = run.seeded("v"), run.seeded("neuron_weights")
    flipped = ~sign_stable(run)
    rich = v[:, 0] ** 2 >= np.sum(W[:, 0] ** 2, axis=-1)
    return compare(int(np.sum(flipped & rich)), "==", 0,
                   details=f"{int(flipped.sum())} sign changes; count: with v_j(0)^2 >= ||w_j(0)||^2")


@toy.claim("alignment-before-growth",
           "Alignment precedes norm growth, on the sign-stable neurons (counted over V+(t) and V-(t), seed 4 of the "
           "paper scale never aligns: the finding directional-convergence): they reach the aligned state t1 before "
           "||W||_F^2 reaches sqrt(||W(0)||_F^2) (half-way, in log scale, from the init scale to O(1)), every "
           "seed" + THEOREM1_EPS,
           kind="prediction", tolerance_source="none: an order of two events",
           falsifiers=[Synthetic("growth-first", _defect(growth=0.06), "the norms grow at t = 0.06, before t1")],
           premises=[Premise("small-init", changed({"toy": {"init.scale": 1e-2, "seeds": 2}}),
                             "Gaussian init 1e-2 instead of 1e-6 (nothing else changed), large enough that the norms "
                             "reach half-way (in log scale) to O(1) within the alignment time, small enough that t1 is "
                             "still reached: the growth starts before t1 in a seed",
                             source="Theorem 1: a small initialization scale eps")])
def _order(r: Results):
    run = r["toy"]
    t = run.trajectory["t"]
    t1 = [math.inf if i is None else float(t[i]) for i in t1_indices(run, sign_stable(run))]
    tg = [math.inf if x is None else x for x in run.summary["events"]["norm_growth"]]
    gaps = [(b - a) / b if math.isfinite(b) and b > 0 else -math.inf for a, b in zip(t1, tg)]
    return holds(all(a < b for a, b in zip(t1, tg)), "t1 (sign-stable neurons) < norm growth onset, every seed",
                 {"t1": t1, "norm_growth": tg}, slack=min(gaps))


FINAL_LOSS = SPREADS["toy-final-loss"]


@toy.claim("loss-to-zero",
           "After alignment the loss goes to 0 (Fig. 6c, 'before it gets close to zero'): the final mean loss, relative "
           f"to its initial value 1, is at most {FINAL_LOSS.upper():.4g} in every seed, the mean + 3 sd of L(40000)/L(0) "
           "over 10 independent seeds of the same config",
           kind="prediction",
           tolerance_source=(f"spread: L(40000)/L(0) = {FINAL_LOSS.text()} of the same config (script "
                             "benchmarks/spreads/issue26/spread_toy_twopoints.py, issue 26); mean + 3 sd, narrower "
                             "than the former "
                             "exploratory 0.05"),
           falsifiers=[Synthetic("loss-stays", _defect(loss_final=0.5, drops=1), "the loss ends at 0.5"),
                       Counterfactual("init-1e-20", changed({"toy": {"init.scale": 1e-20, "seeds": 2}}),
                                      "Gaussian init 1e-20: the alignment and growth phases last ~ln(1/eps) (3.3x "
                                      "longer than at 1e-6), so at iteration 40000 the loss is still about half of "
                                      "L(0): the claim depends on the dynamics' log(1/eps) time scale")],
           premises=[MU_POSITIVE, SMALL_INIT_FITS])
def _loss(r: Results):
    loss = r["toy"].seeded("loss")
    return at_most((loss[:, -1] / loss[:, 0]).tolist(), FINAL_LOSS.upper(), scale=3 * FINAL_LOSS.sd,
                   details="L(40000)/L(0) per seed; slack in units of the 3 sd above the spread's mean")


@toy.claim("two-sharp-decreases",
           "Fig. 6 remark (after Boursier et al. 2022): after alignment the loss has two sharp decreases (the S+ and "
           "the S- subnetworks fit their classes in turn): every seed shows exactly two peaks of the decrease rate "
           "-d log L/dt of at least 0.2 x its maximum, separated by a dip below half the smaller peak",
           kind="prediction",
           tolerance_source=("none: a count of peaks; 'sharp' is a peak of -d log L/dt of at least 0.2 x its maximum "
                             "and two peaks are 'distinct' when the rate dips below half the smaller one between them "
                             "(the half-maximum convention); on 10 independent seeds (100-109) of the same config the "
                             "counts do not hinge on them: second peak / top 0.620 +- 0.018, dip / smaller peak 0.275 "
                             "+- 0.037 (mean +- sd), next local maximum ~1e-10 of the top (script "
                             "benchmarks/spreads/issue26/spread_toy_twopoints.py, issue 26). Thresholds at mean -/+ 3 "
                             "sd (0.568, 0.386) "
                             "are not used: checked seed 3 has a dip of 0.407, which a 10-seed sd does not cover"),
           falsifiers=[Synthetic("one-drop", _defect(drops=1), "a single sigmoidal decrease of the loss"),
                       Counterfactual("symmetric-classes", changed({"toy": {"data.neg_angles": [200.0, 215.0, 230.0],
                                                                            "seeds": 2}}),
                                      "negatives at 200, 215, 230 degrees, the mirror of the positives: ||x-|| = "
                                      "||x+||, so the S+ and S- subnetworks grow at one rate and fit together, in a "
                                      "single decrease")],
           premises=[Premise("small-init", SMALL_INIT_FITS.change,
                             "Gaussian init 1e-2 instead of 1e-6, nothing else changed: the S+ and S- subnetworks "
                             "start to fit before either has aligned and grown alone, and the loss falls in one "
                             "decrease (measured: one peak of -d log L/dt, at iteration 4912 and 4574 in seeds 0 and "
                             "1)", source="the Fig. 6 remark (after Boursier et al. 2022): small initialization")])
def _drops(r: Results):
    run = r["toy"]
    drops = [th.sharp_drops(run.trajectory["t"], loss) for loss in run.seeded("loss")]
    return compare([len(d) for d in drops], "==", 2,
                   details=f"drop times (paper iterations) per seed: {[[round(x / PAPER_LR) for x in d] for d in drops]}")


# -- figures --------------------------------------------------------------------------------------------

@toy.plot("directions", "Neuron directions (seed 0) at iterations 0, 4000, 40000: lines are w_j/||w_j|| scaled by "
                        "log ||w_j|| (red v_j > 0, blue v_j < 0); arrows are data (red +1, blue -1); shading: S+ red, "
                        "S- blue, S_dead gray. Right: loss and stable rank.")
def _plot(r: Results):
    return direction_figure(r["toy"], SNAPSHOTS, "TOY-A")


@toy.plot("animation", "Animated GIF of the neuron directions of seed 0 over all observations, written next to the "
                       "run (directions.gif in its run directory); the still shows the final frame.")
def _gif(r: Results):
    run = r["toy"]
    directions_gif(run, run.path / "directions.gif")
    return direction_figure(run, (SNAPSHOTS[-1],), "final")


@toy.plot("sign-changes", "Sign changes of v_j under the Gaussian init (all seeds): observed time of the change "
                          "against the early-phase saddle prediction t0 = ln((alpha0 - v0)/(alpha0 + v0))/(2k); the "
                          "diagonal is equality. Labelled: the slowest change.")
def _plot_saddle(r: Results):
    from twolayer.plotting import panels

    rows, _, _ = _sign_changes(r["toy"])
    fig, (ax,) = panels(1, width=3.6, height=3.2)
    if rows:
        pred = np.array([row[4] for row in rows])
        lo, hi = np.array([row[2] for row in rows]), np.array([row[3] for row in rows])
        ax.errorbar(pred, 0.5 * (lo + hi), yerr=0.5 * (hi - lo), fmt="o", ms=3, color="C0", lw=0.8)
        g = np.geomspace(max(pred.min(), 1e-3) / 2, pred.max() * 2, 20)
        ax.plot(g, g, "k--", lw=0.8)
        s = max(rows, key=lambda row: row[3])
        ax.annotate(f"seed {s[0]}, neuron {s[1]}", (s[4], s[3]), fontsize=7)
    ax.set(xscale="log", yscale="log", xlabel="predicted t0 (saddle)", ylabel="observed sign change of v_j",
           title="unbalanced init: sign changes")
    return fig
