"""Figs. 1-3 (§2.2, §3.3): the directional flow of eq. 4, the cones S+, S-, S_dead with the three fates
of a V+ neuron, and the flow at an activation boundary, drawn from simulated neurons (balanced small
init, exp loss with sum reduction), with the statements of their captions checked on the runs."""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import at_most, compare, holds
from twolayer.claims.falsifiers import Counterfactual, Premise, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.min2024._plots import (
    DEAD_COLOR, NEG_COLOR, POS_COLOR, circle_axes, data_arrows, shade_cones,
)
from twolayer.papers.min2024._shared import (
    COMMON, MU_NEGATIVE_TWO_CLASS, PAPER, PAPER_LR, TOY, changed, data_of, synthetic,
)
from twolayer.papers.min2024._tolerances import first_step_bound, first_step_error
from twolayer.plotting import panels
from twolayer.theory import alignment as th

FIG1_DATA = {"kind": "toy2d", "pos_angles": [20.0], "neg_angles": [120.0, 230.0]}  # x1 (+1), x2, x3 (-1)
METRICS = ["cone", "v", "neuron_weights", "activation_pattern", "cos_pos"]
ALIGN_STEP = 6000


def geometry_configs(scale: str) -> dict:  # noqa: ARG001 (seconds at both scales)
    base = {"model": COMMON["model"], "loss": {"kind": "exponential", "reduction": "sum"}}
    return {
        "fig1": {**base, "seeds": 2, "data": FIG1_DATA, "init": {"kind": "balanced", "scale": 1e-6},
                 "train": {"method": "gd", "lr": 1e-3, "steps": 2000},
                 "observe": {"schedule": "log", "points": 60, "metrics": METRICS}},
        "toy": {**base, "seeds": 4, "data": TOY, "init": {"kind": "balanced", "scale": 1e-8},
                "train": {"method": "gd", "lr": PAPER_LR, "steps": ALIGN_STEP},
                "observe": {"schedule": "log", "points": 150, "metrics": METRICS}},
    }


geometry = register(Experiment(
    id=f"{PAPER}/fig1-3-geometry", title="The directional flow, the cones and the activation boundaries (Figs. 1-3)",
    figure="Figs. 1, 2, 3 (§2.2, §3.3)",
    description=("Balanced init (eq. 3), h = 50, exp loss with sum reduction, GD. Fig. 1: x1 at 20 degrees (y = +1), x2 at "
                 "120 and x3 at 230 degrees (y = -1), init 1e-6, lr 1e-3 to t = 2: a neuron active on x1 and x2 moves "
                 "along P_w x_a with x_a = x1 - x2 (eq. 4). Figs. 2-3: TOY-A, init 1e-8, lr 2e-3 to iteration 6000 (the "
                 "alignment phase), 4 seeds: the three fates of a V+ neuron and the direction of every activation "
                 "change."),
    configs=geometry_configs))

MU_NEGATIVE = Counterfactual(
    "mu-negative", changed({"toy": {"data": {"kind": "toy2d", "pos_angles": [-60.0, 60.0, 70.0, 250.0], "neg_angles": []},
                                    "seeds": 2}}),
    "positives at -60, 60, 70 and 250 degrees, no negatives (mu < 0): a V+ neuron active on -60, 60 and 70 is pulled "
    "towards x_a where <x_1, x_a> < 0 and loses x_1, a positive point; and with no negatives S- is S_dead, so no "
    "V+ neuron starts in S- to escape it.")
RELU = Premise(
    "relu", changed({"fig1": {"model.activation": {"name": "leaky_relu", "slope": 0.5}}}),
    "leaky ReLU (slope 0.5): x3 pulls too (x_a = x1 - x2 - 0.5 x3), so the neuron does not move along P_w (x1 - x2).",
    source="eq. 4 / Fig. 1: the ReLU activation, x_a(w) = sum over the points with <x_i, w> > 0 of y_i x_i (the "
           "inactive points do not pull)")


ESCAPE_BALANCED = Premise(
    "balanced-init", changed({"toy": {"init.kind": "gaussian"}}),
    "the same seeds and scale 1e-8, Gaussian instead of balanced (nothing else changed): along x- a V+ neuron in S- "
    "follows (a, v)' = -||x-|| (v, a), a = <w_j, x-/||x-||>, so it escapes (a -> 0) only if v_j(0) > a(0), which the "
    "balanced v_j = ||w_j|| >= a guarantees; with v_j(0) < a(0), v_j crosses 0 and the neuron stays in S- as a V- "
    "neuron (measured: 43 of the 69 neurons that start in the other class's cone, V+ in S- or V- in S+, are still there at iteration 6000)",
    source="Theorem 1 / eq. 3: balanced initialization (sign(v_j) is preserved)")
ESCAPE_MU_HOLDS = Premise(
    "mu-positive", changed({"toy": {"data": MU_NEGATIVE_TWO_CLASS}}),
    "positives at -60, 60, 70 degrees with TOY-A's negatives at 240, 255 (mu = cos 135 deg < 0; S- = (165, 210] deg is "
    "not empty, so neurons do start in it): a V+ neuron in S- is still pushed along -x-, away from every negative point "
    "it is active on, so the escape does not need Assumption 1 (measured: 26 neurons start in the other class's cone, "
    "V+ in S- or V- in S+, and all 26 have left it by iteration 6000)",
    source="Assumption 1: mu > 0", holds=True)


def _unit(W):
    return W / np.linalg.norm(W, axis=-1, keepdims=True)


def fig1_neurons(run):
    """(seed, neuron, observation index k) of the neurons active on exactly x1 and x2 from 0 to k (k >= 1)."""
    X, y = data_of(run)
    W = run.seeded("neuron_weights")
    out = []
    for s in range(W.shape[0]):
        A = np.einsum("thd,nd->thn", W[s], X) > 0
        for j in range(W.shape[2]):
            if A[0, j].tolist() != [True, True, False]:
                continue
            same = np.flatnonzero(np.any(A[:, j] != A[0, j], axis=-1))
            k = int(same[0]) - 1 if same.size else len(A) - 1
            if k >= 1:
                out.append((s, j, k))
    return out


@geometry.claim("fig1-eq4-direction",
                "Fig. 1 / eq. 4: a neuron active on x1 (+1) and x2 (-1) only turns with velocity d/dt w/||w|| = "
                "(v_j/||w_j||) P_w x_a, x_a = x1 - x2 (balanced init: v_j/||w_j|| = +-1): over the first GD step its "
                "direction moves at that velocity to within GD's own deviation from the flow, a relative error of at "
                "most z / (1 - z), z = lr ||a|| < 1, a = (v_j/||w_j||) x_a, for every such neuron (at least one)",
                kind="prediction",
                tolerance_source=("derived: one GD step w -> w + lr b against the flow of u = w/||w||, a = b/||w||, z = "
                                  "lr ||a||: the step's mean velocity (u(lr) - u)/lr is off eq. 4's P_u a by at most "
                                  "z / (1 - z) of ||P_u a|| (the supremum over directions, reached as a turns "
                                  "antiparallel to u; to first order lr sqrt((u.a)^2 + |P_u a|^2/4), reported); r_i = "
                                  "y_i exp(-y_i f_i) differs from y_i by |f| ~ 1e-10 at this init"),
                falsifiers=[Synthetic("wrong-way", lambda c: _geometry_like(c, fig1_turn=-1.0),
                                      "the neuron moves along -P_w x_a")],
                premises=[RELU])
def _fig1(r: Results):
    run = r["fig1"]
    X, y = data_of(run)
    W, v, t = run.seeded("neuron_weights"), run.seeded("v"), run.trajectory["t"]
    step = float(t[1] - t[0])
    ratios, errs, first, allowed = [], [], [], []
    for s, j, _ in fig1_neurons(run):
        u0 = _unit(W[s, 0, j])
        a = v[s, 0, j] / np.linalg.norm(W[s, 0, j]) * (X[0] - X[1])
        pred = a - (a @ u0) * u0
        rate = (_unit(W[s, 1, j]) - u0) / step
        err = float(np.linalg.norm(rate - pred) / np.linalg.norm(pred))
        errs.append(err)
        first.append(step * first_step_error(u0, a))
        allowed.append(first_step_bound(step, float(np.linalg.norm(a))))
        ratios.append(err / allowed[-1])
    if not errs:
        return holds(False, "a neuron active on x1 and x2 only", 0)
    if not np.all(np.isfinite(allowed)):
        return holds(False, "a first step with lr ||a|| < 1 (where the allowance is defined)", allowed)
    worst = int(np.argmax(ratios))
    return at_most(max(ratios), 1.0, details=(f"{len(errs)} neurons; measured: the worst relative error of the first "
                                              f"step's velocity over its allowance z / (1 - z), z = lr ||a|| (step "
                                              f"{step:.3g}); that neuron's error {errs[worst]:.4g}, its first-order "
                                              f"GD term lr sqrt((u.a)^2 + |P_u a|^2/4) {first[worst]:.4g}"))


@geometry.claim("fig2-escape-S-minus",
                "Fig. 2 (1): a V+ neuron that starts inside S- is repelled by x- and escapes S-: every V+ neuron in S- at "
                "init is outside S- by iteration 6000 (the V- mirror: none stays in S+), and there is at least one",
                kind="prediction", tolerance_source="none: an exact count",
                falsifiers=[Synthetic("stays", lambda c: _geometry_like(c, stays=True), "a V+ neuron stays in S-")],
                premises=[ESCAPE_BALANCED, ESCAPE_MU_HOLDS])
def _escape(r: Results):
    run = r["toy"]
    cone, v0 = run.seeded("cone"), run.seeded("v")[:, 0]
    start = np.where(v0 > 0, cone[:, 0] == th.CONE_NEG, cone[:, 0] == th.CONE_POS)
    still = start & (cone[:, -1] == np.where(v0 > 0, th.CONE_NEG, th.CONE_POS))
    if not start.any():
        return holds(False, "a neuron starting in the other class's cone", 0)
    return compare(int(still.sum()), "==", 0, details=f"{int(start.sum())} neurons start in the other class's cone")


@geometry.claim("fig2-attracted-to-x-plus",
                "Fig. 2 (3): once in S+, a V+ neuron is constantly attracted by x+: cos(w_j, x+) never decreases after it "
                "enters S+ (to iteration 6000, the alignment phase; 1e-9 allowed for roundoff), and some neurons enter",
                kind="prediction", tolerance_source="solver: float64 roundoff (1e-9)",
                falsifiers=[Synthetic("repelled", lambda c: _geometry_like(c, repelled=True),
                                      "cos(w_j, x+) falls by 0.1 after the entry")],
                premises=[Premise("mu-positive", changed({"toy": {"data.pos_angles": [20.0, 35.0, 150.0]}}),
                                  "positives at 20, 35 and 150 degrees (the pair 20/150 has cos 130 deg < 0), negatives "
                                  "as in TOY-A: a neuron in S+ has x_a = x+ but the points pull it apart, and cos(w_j, "
                                  "x+) falls after some entries",
                                  source="Assumption 1: mu > 0 (same-label points positively correlated)")])
def _attracted(r: Results):
    run = r["toy"]
    cone, v, c = run.seeded("cone"), run.seeded("v"), run.seeded("cos_pos")
    worst, entered = 0.0, 0
    for s in range(cone.shape[0]):
        for j in range(cone.shape[2]):
            inside = np.flatnonzero((cone[s, :, j] == th.CONE_POS) & (v[s, :, j] > 0))
            if inside.size:
                entered += 1
                worst = max(worst, float(np.max(-np.diff(c[s, inside[0]:, j]), initial=0.0)))
    if not entered:
        return holds(False, "a V+ neuron in S+", 0)
    return at_most(worst, 1e-9, details=f"{entered} neurons in S+; largest decrease of cos(w_j, x+)")


def crossings(run):
    """Every activation change between consecutive observations: (seed, neuron, obs index, point, gained,
    right way), right way = a V+ neuron gains a positive point or loses a negative one (V- mirror)."""
    X, y = data_of(run)
    pat, v = run.seeded("activation_pattern").astype(bool), run.seeded("v")
    out = []
    for s, k, j, i in zip(*np.nonzero(pat[:, 1:] != pat[:, :-1])):
        gained = bool(pat[s, k + 1, j, i])
        sign = np.sign(v[s, k, j]) * y[i]
        out.append((int(s), int(j), int(k), int(i), gained, (sign > 0) == gained))
    return out


@geometry.claim("fig3-boundary-direction",
                "Fig. 3 / eq. 7: at a boundary <x_i, w_j> = 0 the flow of a V+ neuron points into <x_i y_i, w_j> > 0: "
                "every observed activation change gains a positive point or loses a negative one (the V- mirror), and "
                "at least one change is observed",
                kind="consistency", tolerance_source="none: an exact count",
                falsifiers=[Synthetic("loses-positive", lambda c: _geometry_like(c, wrong_cross=True),
                                      "a V+ neuron loses a positive point"), MU_NEGATIVE])
def _fig3(r: Results):
    changes = crossings(r["toy"])
    if not changes:
        return holds(False, "an activation change", 0)
    wrong = sum(1 for *_, right in changes if not right)
    return compare(wrong, "==", 0, details=f"{len(changes)} activation changes; count: the wrong way")


def _geometry_like(configs, *, fig1_turn: float = 1.0, stays: bool = False, repelled: bool = False,
                   wrong_cross: bool = False):
    """Synthetic runs: a balanced Fig.-1 neuron at 70 degrees turning along fig1_turn x P_w (x1 - x2); on TOY-A a V+
    neuron from S- (300 deg) to S+ (30 deg) and a V+ neuron in S+ at 0 deg; defects as named."""
    out = {}
    X, y = data_of(configs["fig1"])
    t = np.linspace(0, 1e-3, 10)
    u0 = np.array([math.cos(math.radians(70)), math.sin(math.radians(70))])
    xa = X[0] - X[1]
    d = xa - (xa @ u0) * u0
    W = np.stack([u0 + fig1_turn * tt * d for tt in t])[None, :, None, :] * 1e-6
    out["fig1"] = synthetic({**configs["fig1"], "seeds": 1}, t, name="synthetic-fig1", neuron_weights=W,
                            v=np.linalg.norm(W, axis=-1))  # balanced, v_j = ||w_j||, as the init of the claim
    Xt, yt = data_of(configs["toy"])
    T = 20
    t2 = np.linspace(0, 12, T)
    ang = np.where(np.arange(T) < 10, 300.0, 30.0)
    if stays:
        ang[:] = 300.0
    W0 = np.stack([np.cos(np.radians(ang)), np.sin(np.radians(ang))], axis=-1)
    W1 = np.broadcast_to([1.0, 0.0], (T, 2))
    Wt = np.stack([W0, W1], axis=1)[None]
    cone = th.cone_membership(Wt, Xt, yt)
    pat = th.activation_pattern(Wt, Xt).astype(np.int8)
    if wrong_cross:
        pat[0, T // 2:, 1, 0] = 0  # the S+ neuron loses x at 20 degrees
    cos = th.cosine(Wt, th.class_sums(Xt, yt)[0])
    if repelled:
        cos[0, T // 2:, 1] -= 0.1
    out["toy"] = synthetic({**configs["toy"], "seeds": 1}, t2, name="synthetic-toy", neuron_weights=Wt, cone=cone,
                           activation_pattern=pat, cos_pos=cos, v=np.ones((1, T, 2)))
    return out


# -- figures ---------------------------------------------------------------------------------------------

@geometry.plot("fig1", "Fig. 1 from a simulated neuron (seed 0): data x1 (red, y = +1), x2 and x3 (blue, y = -1); gray: "
                       "the half-space <x, w_j(0)> > 0, which holds x1 and x2; green arrow: P_w x_a with x_a = x1 - x2; "
                       "black dots: the neuron's direction w_j(t)/||w_j(t)|| over the run (it moves along P_w x_a "
                       "until it loses x2).")
def _plot1(r: Results):
    from matplotlib.patches import Wedge

    run = r["fig1"]
    X, y = data_of(run)
    fig, (ax,) = panels(1, width=3.6, height=3.6)
    found = fig1_neurons(run)
    data_arrows(ax, X, y, names=True)
    if found:
        s, j, _ = found[0]
        W = run.seeded("neuron_weights")[s, :, j]
        u = _unit(W)
        a0 = math.degrees(math.atan2(u[0, 1], u[0, 0]))
        ax.add_patch(Wedge((0, 0), 1.35, a0 - 90, a0 + 90, color=DEAD_COLOR, alpha=0.15, lw=0))
        xa = X[0] - X[1]
        p = xa - (xa @ u[0]) * u[0]
        p = 0.5 * p / np.linalg.norm(p)
        ax.plot([0, u[0, 0]], [0, u[0, 1]], color="k", lw=1.0)
        ax.annotate("", xy=u[0] + p, xytext=u[0], arrowprops=dict(arrowstyle="->", color="tab:green", lw=1.5))
        ax.text(*(u[0] + 1.1 * p), "P_w x_a", color="tab:green", fontsize=7)
        ax.plot(u[:, 0], u[:, 1], ".", color="k", ms=3)
        ax.text(*(0.55 * u[0]), "w_j", fontsize=7)
    circle_axes(ax, "eq. 4: d/dt w/||w|| ~ P_w x_a")
    return fig


def _fates(run):
    """One V+ neuron of seed 0 for each fate of Fig. 2: (1) starts in S- and leaves, (2) ends dead, (3) ends in S+."""
    cone, v = run.seeded("cone")[0], run.seeded("v")[0]
    vp = v[0] > 0
    pick = {}
    for j in np.flatnonzero(vp):
        if "escape" not in pick and cone[0, j] == th.CONE_NEG and cone[-1, j] != th.CONE_NEG:
            pick["escape"] = j
        elif "dead" not in pick and cone[0, j] != th.CONE_DEAD and cone[-1, j] == th.CONE_DEAD:
            pick["dead"] = j
        elif "pos" not in pick and cone[0, j] not in (th.CONE_POS, th.CONE_NEG) and cone[-1, j] == th.CONE_POS:
            pick["pos"] = j
    return pick


@geometry.plot("fig2", "Fig. 2 from simulation (TOY-A, seed 0): S+ (red), S- (blue) and S_dead (gray) shaded; red and "
                       "blue arrows: the data, thick arrows x+ and x-; three V+ neurons' directions over the alignment "
                       "phase (radius growing with time, circle = start, square = end): (1) starts in S- and is repelled "
                       "out of it, (2) ends in S_dead, (3) gains positive points, enters S+ and turns to x+.")
def _plot2(r: Results):
    run = r["toy"]
    X, y = data_of(run)
    fig, (ax,) = panels(1, width=3.8, height=3.8)
    shade_cones(ax, X, y, labels=True)
    data_arrows(ax, X, y)
    for c, color in zip(th.class_sums(X, y), (POS_COLOR, NEG_COLOR)):
        u = 1.3 * c / np.linalg.norm(c)
        ax.annotate("", xy=u, xytext=(0, 0), arrowprops=dict(arrowstyle="-|>", color=color, lw=2.0))
    W = run.seeded("neuron_weights")[0]
    fates = sorted(_fates(run).items(), key=lambda kv: ("escape", "dead", "pos").index(kv[0]))
    for n, (label, (_, j)) in enumerate(zip(("(1)", "(2)", "(3)"), fates)):
        u = _unit(W[:, j])
        end = 0.8 + 0.1 * n  # end radii apart, so that paths ending at the same direction stay legible
        radius = np.linspace(0.3, end, len(u))[:, None]
        ax.plot(*(u * radius).T, color=f"C{n + 2}", lw=1.2)
        ax.plot(*(u[0] * 0.3), "o", color=f"C{n + 2}", ms=4)
        ax.plot(*(u[-1] * end), "s", color=f"C{n + 2}", ms=4)
        ax.text(*(u[-1] * (end + 0.12)), label, fontsize=8, ha="center", color=f"C{n + 2}")
    circle_axes(ax, "V+ neurons under Assumption 1")
    return fig


@geometry.plot("fig3", "Fig. 3 from simulation (TOY-A): at the first observed activation change of a V+ neuron, the "
                       "boundary <x_i, w> = 0 (the line S_{x_i}^perp), the half-space <x_i y_i, w> > 0 (shaded), the "
                       "approximate flow sign(v) P_w x_a(w) on both sides of the boundary (arrows) and the neuron's "
                       "direction before and after (dots): the flow points into <x_i y_i, w> > 0 on both sides.")
def _plot3(r: Results):
    from matplotlib.patches import Wedge

    run = r["toy"]
    X, y = data_of(run)
    fig, (ax,) = panels(1, width=3.8, height=3.8)
    changes = [c for c in crossings(run) if c[0] == 0]
    data_arrows(ax, X, y, names=True)
    if changes:
        s, j, k, i, gained, _ = changes[0]
        W = run.seeded("neuron_weights")[s, :, j]
        sv = float(np.sign(run.seeded("v")[s, 0, j]))
        xi = X[i] / np.linalg.norm(X[i])
        ai = math.degrees(math.atan2(y[i] * xi[1], y[i] * xi[0]))
        ax.add_patch(Wedge((0, 0), 1.35, ai - 90, ai + 90, color=POS_COLOR if y[i] > 0 else NEG_COLOR, alpha=0.12, lw=0))
        perp = np.array([-xi[1], xi[0]])
        ax.plot([-1.35 * perp[0], 1.35 * perp[0]], [-1.35 * perp[1], 1.35 * perp[1]], color="k", lw=0.6, ls="--")
        u = _unit(W)
        ax.plot(u[:, 0], u[:, 1], ".", color="0.4", ms=2)
        ub = u[k]
        for off in np.linspace(-0.25, 0.25, 6):  # directions on both sides of the boundary near the crossing
            ang = math.atan2(ub[1], ub[0]) + off
            w = np.array([math.cos(ang), math.sin(ang)])
            flow = sv * (th.x_a(w, X, y) - (th.x_a(w, X, y) @ w) * w)
            if np.linalg.norm(flow) > 0:
                ax.annotate("", xy=w + 0.25 * flow / np.linalg.norm(flow), xytext=w,
                            arrowprops=dict(arrowstyle="->", color="tab:green", lw=1.0))
        ax.text(*(1.2 * perp), "<x_i, w> = 0", fontsize=7)
        ax.set_title(f"neuron {j}: {'gains' if gained else 'loses'} x{i + 1} (y = {int(y[i]):+d})")
    circle_axes(ax, ax.get_title() or "activation boundary")
    return fig
