"""Figs. 18-21 (App. E): Caratheodory solutions of the ReLU gradient flow, run by the exact flow
(``method: flow_exact``), which classifies every arrival at a hyperplane <x_i, w_j> = 0 from the two
one-sided fields.

- E.3: one data point x = [1, 0], y = -1, one neuron w(0) = [0, 1], v(0) = 1 on the boundary of S_dead.
  With sigma'(0) = 0 the regular solution stays put; with a fixed sigma'(0) = a > 0 no Caratheodory
  solution exists (the field pushes w into S_dead, where it is zero): the run ends ``failed`` and says
  when, which neuron and which data point.
- E.4: the same with y = +1. With sigma'(0) = 0 the solution is not unique (stay, or leave at any t0
  along eq. 47); the regular, stay-put solution is taken and the event recorded ``nonunique``. With
  sigma'(0) = a > 0 the only solution leaves at t0 = 0 along eq. 47.
- Figs. 18-19 / eq. 46: under Assumption 1 the flow crosses every hyperplane the same way from both
  sides, so there is no sliding (Zeno) mode and each of the n h hyperplanes is crossed at most once.
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import all_of, at_most, close_to, compare, holds
from twolayer.claims.falsifiers import Premise, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.min2024._events import event_table, seed_values, timelines
from twolayer.papers.min2024._plots import DEAD_COLOR, NEG_COLOR
from twolayer.papers.min2024._shared import MU_NEGATIVE_EXACT, PAPER, changed, data_of, exact_toy, set_dotted, synthetic
from twolayer.plotting import panels

SUBGRADIENT = 0.5  # the fixed sigma'(0) = a > 0 of E.3 / E.4
SINGLE_TIME = 1.0
EQ47_RTOL = 1e-8  # flow_exact at rtol 1e-11 against solve_ivp (DOP853, rtol 1e-12) of eq. 47


def single_neuron(label: float, a: float) -> dict:
    """E.3 (label -1) / E.4 (label +1): x = [1, 0], w(0) = [0, 1], v(0) = 1, sigma'(0) = a, exp loss (sum)."""
    data = {"kind": "toy2d", "pos_angles": [0.0] if label > 0 else [], "neg_angles": [] if label > 0 else [0.0]}
    return {"data": data, "model": {"kind": "two_layer", "activation": {"name": "relu", "grad_at_zero": a}},
            "init": {"kind": "values", "W": [[0.0, 1.0]], "v": [1.0]},
            "loss": {"kind": "exponential", "reduction": "sum"},
            "train": {"method": "flow_exact", "time": SINGLE_TIME, "rtol": 1e-11, "atol": 1e-14},
            "observe": {"schedule": "log", "points": 20, "metrics": ["loss", "v", "neuron_weights"]}}


def caratheodory_configs(scale: str) -> dict:
    return {"e3-regular": single_neuron(-1.0, 0.0), "e3-subgradient": single_neuron(-1.0, SUBGRADIENT),
            "e4-regular": single_neuron(1.0, 0.0), "e4-subgradient": single_neuron(1.0, SUBGRADIENT),
            "toy": exact_toy(scale), "mu-negative": set_dotted(exact_toy("quick"), MU_NEGATIVE_EXACT)}


caratheodory = register(Experiment(
    id=f"{PAPER}/app-e-caratheodory", title="Caratheodory solutions of the ReLU gradient flow (App. E, Figs. 18-21)",
    figure="Figs. 18-21 (App. E.2-E.4, eqs. 46, 47)",
    description=("The exact ReLU flow (flow_exact) on App. E's single neuron: x = [1, 0], w(0) = [0, 1], v(0) = 1, "
                 "exponential loss (sum), y = -1 (E.3) and y = +1 (E.4), each with sigma'(0) = 0 and with a fixed "
                 "sigma'(0) = 0.5, to t = 1; TOY-A under the theory's setting (the run of fig4-14-17-activation-paths) "
                 "for eq. 46; and positives at -60, 60, 70 degrees (mu < 0, Assumption 1 broken; h = 8, 2 seeds, to "
                 "t = 12) to draw the sliding mode of Fig. 18. The E.3 run with sigma'(0) > 0 is expected to end "
                 "failed: that failure is what its claim checks."),
    configs=caratheodory_configs, may_fail=("e3-subgradient",)))

MU_POSITIVE = Premise(
    "mu-positive", changed({"toy": MU_NEGATIVE_EXACT}),
    "positives at -60, 60 and 70 degrees (mu = cos 130 deg < 0, Assumption 1 broken), h = 8, 2 seeds, to t = 12: "
    "the two one-sided fields point into a hyperplane from both sides, the neuron slides along it (Filippov weight "
    "strictly inside (0, 1): no Caratheodory solution, the Zeno behaviour of Fig. 18) and crosses it back.",
    source="Assumption 1: mu > 0 (App. E.2: eq. 46, y_i sign(v_j) <x_i, -grad_{w_j} L> > 0, rests on it)")


def _stays(run) -> tuple[float, float]:
    """The largest |w(t) - [0, 1]| and |v(t) - 1| over the observations."""
    W, v = run.seeded("neuron_weights")[0, :, 0], run.seeded("v")[0, :, 0]
    return float(np.max(np.abs(W - [0.0, 1.0]))), float(np.max(np.abs(v - 1.0)))


def _events_at_start(run) -> list[tuple[str, float, int, int]]:
    table = event_table(run)
    return [(str(k), float(t), int(j), int(i)) for k, t, j, i in zip(table["kind"], table["t"], table["neuron"],
                                                                     table["point"])]


# -- claims -------------------------------------------------------------------------------------------

@caratheodory.claim("E3-regular-solution",
                    "App. E.3 with sigma'(0) = 0: x = [1, 0], y = -1, w(0) = [0, 1], v(0) = 1 sits on the boundary of "
                    "S_dead; the regular Caratheodory solution w(t) = [0, 1], v(t) = 1 exists and is taken: the run "
                    "completes, w and v are unchanged at every observation (exactly), and the event table holds one "
                    "event, a slide at t = 0 with Filippov weight 0 (the inactive side's field, zero)",
                    kind="consistency", tolerance_source="none: exact",
                    falsifiers=[Synthetic("enters-dead", lambda c: _single_like(c, "e3-regular", drift=True),
                                          "w moves into S_dead: w(t) = [-0.1 t, 1]")])
def _e3_regular(r: Results):
    run = r["e3-regular"]
    dw, dv = _stays(run)
    ev = _events_at_start(run)
    lam = event_table(run)["lam"]
    return all_of(holds(run.status == "completed", "completed", run.status),
                  holds(max(dw, dv) == 0.0, "w(t) = w(0) and v(t) = v(0) exactly", max(dw, dv)),
                  holds(ev == [("slide", 0.0, 0, 0)] and float(lam[0]) == 0.0, "one slide at t = 0, weight 0", ev),
                  details=f"events {ev}")


@caratheodory.claim("E3-no-solution-reported",
                    "App. E.3 with a fixed sigma'(0) = a = 0.5 > 0: no Caratheodory solution exists (the neuron can "
                    "neither stay on <x, w> = 0, where sigma'(0) > 0 moves it, nor enter S_dead, where the field is "
                    "zero); the exact flow detects it: the run ends failed, its message names the time (t = 0), the "
                    "neuron (0) and the data point (0), and the event table's one row is a fail there",
                    kind="consistency", tolerance_source="none: exact",
                    falsifiers=[Synthetic("silent", lambda c: _single_like(c, "e3-subgradient"),
                                          "the run completes and records no event (the failure goes unnoticed)")])
def _e3_none(r: Results):
    run = r["e3-subgradient"]
    message = str(run.summary.get("message", ""))
    named = all(s in message for s in ("Caratheodory", "t = 0", "neuron 0", "data point 0"))
    ev = _events_at_start(run)
    return all_of(holds(run.status == "failed", "failed", run.status),
                  holds(named, "message names Caratheodory, t = 0, neuron 0, data point 0", message[:160]),
                  holds(ev == [("fail", 0.0, 0, 0)], "one fail row at t = 0, neuron 0, point 0", ev),
                  details=message.splitlines()[0][:300] if message else "no message")


@caratheodory.claim("E4-regular-solution-taken",
                    "App. E.4 with sigma'(0) = 0: y = +1, so both one-sided fields point away from <x, w> = 0 and the "
                    "Caratheodory solution is not unique (stay, or leave at any t0 along eq. 47); the regular, "
                    "stay-put solution (Definition 1) is taken: w and v unchanged at every observation (exactly), and "
                    "the event recorded non-unique at t = 0",
                    kind="consistency", tolerance_source="none: exact",
                    falsifiers=[Synthetic("irregular", lambda c: _single_like(c, "e4-regular", leave_at=0.0),
                                          "an irregular solution: the neuron leaves at once along eq. 47")])
def _e4_regular(r: Results):
    run = r["e4-regular"]
    dw, dv = _stays(run)
    ev = _events_at_start(run)
    return all_of(holds(run.status == "completed", "completed", run.status),
                  holds(max(dw, dv) == 0.0, "w(t) = w(0) and v(t) = v(0) exactly", max(dw, dv)),
                  holds(ev == [("nonunique", 0.0, 0, 0)], "one nonunique event at t = 0", ev), details=f"events {ev}")


def eq47(t, t0: float = 0.0, y: float = 1.0):
    """Eq. 47 for E.4's neuron, leaving the hyperplane at t0: z = <x, w> and v with z' = y e^{-y v z} v,
    v' = y e^{-y v z} z from (z, v) = (0, 1) (z = 0, v = 1 before t0); solve_ivp DOP853, rtol 1e-12.
    Returns (z [T], v [T]) at the times ``t``."""
    from scipy.integrate import solve_ivp

    t = np.asarray(t, dtype=np.float64)
    z, v = np.zeros_like(t), np.ones_like(t)
    after = t > t0
    if after.any():
        sol = solve_ivp(lambda _, s: [y * math.exp(-y * s[1] * s[0]) * s[1], y * math.exp(-y * s[1] * s[0]) * s[0]],
                        (t0, float(t.max())), [0.0, 1.0], method="DOP853", rtol=1e-12, atol=1e-14, t_eval=t[after])
        z[after], v[after] = sol.y
    return z, v


@caratheodory.claim("E4-eq47-solution",
                    "App. E.4 with a fixed sigma'(0) = a = 0.5 > 0: the only Caratheodory solution leaves the plane at "
                    "once (t0 = 0) and follows eq. 47: one crossing at t = 0 to the active side, and at every "
                    "observation <x, w(t)> and v(t) equal eq. 47 (solve_ivp, DOP853) to 1e-8 relative, while w_2 "
                    "stays 1",
                    kind="consistency", tolerance_source="solver: 1e-8 relative against solve_ivp (DOP853)",
                    falsifiers=[Synthetic("late-leave", lambda c: _single_like(c, "e4-subgradient", leave_at=0.2),
                                          "the neuron waits on the plane until t0 = 0.2 (another eq. 47 solution, "
                                          "not the one of sigma'(0) > 0)")])
def _e4_eq47(r: Results):
    run = r["e4-subgradient"]
    t = run.trajectory["t"]
    W, v = run.seeded("neuron_weights")[0, :, 0], run.seeded("v")[0, :, 0]
    z_ref, v_ref = eq47(t)
    rel = float(np.max(np.abs(np.concatenate([W[:, 0] - z_ref, v - v_ref])) /
                       np.maximum(np.abs(np.concatenate([z_ref, v_ref])), 1e-300)))
    ev = _events_at_start(run)
    side = list(event_table(run)["side"])
    return all_of(holds(ev == [("cross", 0.0, 0, 0)] and side == [1], "one crossing at t = 0 to the active side", ev),
                  at_most(rel, EQ47_RTOL, scale=EQ47_RTOL, details="largest relative difference from eq. 47"),
                  close_to(float(np.max(np.abs(W[:, 1] - 1.0))), 0.0, atol=1e-12, details="|w_2 - 1|"),
                  details=f"largest relative difference from eq. 47 at {len(t)} observations: {rel:.3g}")


@caratheodory.claim("eq46-each-hyperplane-once",
                    "Figs. 18-19 / eq. 46 (App. E.2): under Assumption 1 (TOY-A, balanced init) y_i sign(v_j) <x_i, "
                    "-grad_{w_j} L> > 0 on both sides of every hyperplane, so the flow never slides along one (no "
                    "Filippov weight strictly inside (0, 1), no release: no Zeno behaviour) and each pair (neuron j, "
                    "point i) changes activation at most once: at most n h crossings per seed, over the whole run",
                    kind="prediction", tolerance_source="none: exact counts",
                    falsifiers=[Synthetic("recrossing", lambda c: _toy_like(c, recross=True),
                                          "a neuron crosses x1's hyperplane and back"),
                                Synthetic("sliding", lambda c: _toy_like(c, slide=True),
                                          "a Filippov slide with weight 0.4 and its release")],
                    premises=[MU_POSITIVE])
def _eq46(r: Results):
    run = r["toy"]
    X, _ = data_of(run)
    n, h = X.shape[0], run.seeded("v").shape[-1]
    table = event_table(run)
    kinds = table["kind"]
    sliding = int(np.sum(((kinds == "slide") & (table["lam"] > 0) & (table["lam"] < 1)) | (kinds == "release")))
    repeats, most = 0, 0
    for per_seed in timelines(run):
        per = [c for tl in per_seed for c in tl.changes]
        most = max(most, len(per))
        for tl in per_seed:
            points = [c.point for c in tl.changes]
            repeats += len(points) - len(set(points))
    return all_of(compare(sliding, "==", 0, details="sliding events (0 < weight < 1) and releases"),
                  compare(repeats, "==", 0, details="second changes of a neuron-point pair"),
                  at_most(most, n * h, details=f"most changes in a seed (n h = {n * h})"),
                  details=(f"{int(np.sum(kinds != 'fail'))} events over {len(seed_values(run))} seeds; at most {most} "
                           f"pattern changes in a seed (n h = {n * h}); {sliding} sliding, {repeats} repeated"))


# -- synthetic falsifiers -----------------------------------------------------------------------------

def _single_like(configs, key: str, *, drift: bool = False, leave_at: float | None = None):
    """A synthetic single-neuron run of ``key``: the neuron stays (no event, completed) unless changed:
    ``drift`` moves w off [0, 1] into S_dead (with a slide at t = 0); ``leave_at`` follows eq. 47 from t0 =
    leave_at (with a crossing then)."""
    cfg = configs[key]
    t = np.linspace(0.0, SINGLE_TIME, 20)
    W = np.tile([0.0, 1.0], (len(t), 1, 1)).astype(float)  # [T, h, d]: a single-seed run
    v = np.ones((len(t), 1))
    rows = []
    if drift:
        W[:, 0, 0] = -0.1 * t
        rows.append((0.0, "slide"))
    if leave_at is not None:
        z, vv = eq47(t, leave_at)
        W[:, 0, 0], v[:, 0] = z, vv
        rows.append((leave_at, "cross"))
    table = {"t": np.array([r[0] for r in rows], float), "seed": np.zeros(len(rows), int),
             "neuron": np.zeros(len(rows), int), "point": np.zeros(len(rows), int),
             "kind": np.array([r[1] for r in rows], dtype="<U9"), "side": np.ones(len(rows), int),
             "lam": np.zeros(len(rows))}
    return {key: synthetic(cfg, t, name=f"synthetic-{key}",
                           summary={"event_table": table}, neuron_weights=W, v=v)}


def _toy_like(configs, *, recross: bool = False, slide: bool = False):
    """A synthetic TOY-A exact run (1 seed, 1 V+ neuron at 100 degrees, active on x1-x3): it gains nothing
    and loses nothing, except for the defects."""
    cfg = {**configs["toy"], "seeds": 1}
    X, _ = data_of(cfg)
    w = np.array([math.cos(math.radians(100)), math.sin(math.radians(100))])
    rows = [(0.5, 0, 1, 0.0)]  # (t, point, side, lam): x1's hyperplane, crossed to the active side
    if recross:
        rows.append((0.9, 0, -1, 0.0))
    if slide:
        rows += [(0.7, 3, 0, 0.4), (0.8, 3, -1, 0.0)]
    kinds = ["cross"] + (["cross"] if recross else []) + (["slide", "release"] if slide else [])
    table = {"t": np.array([r[0] for r in rows]), "seed": np.zeros(len(rows), int), "neuron": np.zeros(len(rows), int),
             "point": np.array([r[1] for r in rows]), "kind": np.array(kinds, dtype="<U9"),
             "side": np.array([r[2] for r in rows]), "lam": np.array([r[3] for r in rows])}
    T = 6
    pat = np.tile((X @ w > 0).astype(np.int8), (1, T, 1, 1))
    pat[..., 0] = 0  # x1 starts inactive
    return {"toy": synthetic(cfg, np.linspace(0, 40, T), name="synthetic-toy", summary={"event_table": table},
                             activation_pattern=pat, v=np.full((1, T, 1), 1e-8),
                             neuron_weights=np.tile(1e-8 * w, (1, T, 1, 1)))}


# -- figures ------------------------------------------------------------------------------------------

def _signed_preact(run):
    """[S, T, h, n]: y_i sign(v_j(0)) <x_i, w_j> / ||w_j|| at the observations (eq. 46's quantity, per unit norm)."""
    X, y = data_of(run)
    W = run.seeded("neuron_weights")
    s = np.sign(run.seeded("v")[:, :1])[..., None]
    return s * np.einsum("sthd,nd->sthn", W / np.linalg.norm(W, axis=-1, keepdims=True), X) * y


@caratheodory.plot("fig18-19-zeno",
                   "Figs. 18-19 from the exact flow: y_i sign(v_j) <x_i, w_j / ||w_j||> of the neuron-point pairs that "
                   "change activation (seed 0; dots: observations; crosses on the axis: event times). Right (Fig. 19, "
                   "Assumption 1, TOY-A): every pair passes through 0 once, upwards (eq. 46). Left (Fig. 18, mu < 0): "
                   "pairs go down through 0, and neurons slide along a hyperplane (flat at 0 between a slide event, "
                   "triangle, and its release): no Caratheodory solution there (the Filippov sliding solution, GD's "
                   "limit, is followed).")
def _plot_zeno(r: Results):
    fig, axes = panels(2, width=3.6, height=3.0)
    for ax, key, title in zip(axes, ("mu-negative", "toy"), ("Fig. 18: mu < 0 (Assumption 1 broken)",
                                                              "Fig. 19: TOY-A (Assumption 1)")):
        run = r[key]
        t = run.trajectory["t"]
        sp = _signed_preact(run)[0]
        table = event_table(run)
        mine = table["seed"] == seed_values(run)[0]
        pairs = sorted({(int(j), int(i)) for j, i in zip(table["neuron"][mine], table["point"][mine])})[:12]
        t_max = 1.5 * float(np.max(table["t"][mine], initial=1.0))
        keep = t <= t_max
        for k, (j, i) in enumerate(pairs):
            ax.plot(t[keep], sp[keep, j, i], ".-", ms=2, lw=0.7, color=f"C{k % 10}")
        for kind, marker in (("cross", "x"), ("slide", "v"), ("release", "^")):
            m = mine & (table["kind"] == kind) & (table["t"] <= t_max)
            ax.plot(table["t"][m], np.zeros(int(m.sum())), marker, color="k", ms=4, label=f"{kind} ({int(m.sum())})")
        ax.axhline(0, color="0.5", lw=0.6)
        ax.set_xlabel("t")
        ax.set_ylabel("y_i sign(v_j) <x_i, w_j/||w_j||>")
        ax.set_title(title, fontsize=8)
        ax.legend(fontsize=6)
    return fig


@caratheodory.plot("fig20-e3",
                   "Fig. 20 (App. E.3) from the exact flow: x = [1, 0] (blue, y = -1), S_dead = {<x, w> <= 0} (gray), the "
                   "neuron w(0) = [0, 1] on its boundary. With sigma'(0) = 0 the run stays at w(0) (black dots: every "
                   "observation); with sigma'(0) = 0.5 the field on the boundary (arrow, v y sigma'(0) x) points into "
                   "S_dead, where the field is zero: no solution, and the run's message says so (title).")
def _plot_e3(r: Results):
    fig, (ax,) = panels(1, width=3.8, height=3.6)
    ax.fill_between([-1.4, 0.0], -0.4, 1.6, color=DEAD_COLOR, alpha=0.2, lw=0)
    ax.text(-1.2, 1.45, "S_dead", fontsize=7, color="0.3")
    ax.annotate("", xy=(1.2, 0), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=NEG_COLOR, lw=1.5))
    ax.text(1.05, 0.08, "x (y = -1)", fontsize=7, color=NEG_COLOR)
    W = r["e3-regular"].seeded("neuron_weights")[0, :, 0]
    ax.plot(W[:, 0], W[:, 1], "ko", ms=4, label="sigma'(0) = 0: w(t), every observation")
    ax.annotate("", xy=(-SUBGRADIENT, 1.0), xytext=(0, 1.0), arrowprops=dict(arrowstyle="->", color="tab:orange", lw=1.5))
    ax.text(-0.75, 1.1, f"sigma'(0) = {SUBGRADIENT}: w' = -{SUBGRADIENT} x", fontsize=7, color="tab:orange")
    failed = r["e3-subgradient"]
    message = str(failed.summary.get("message", ""))
    where = message.rsplit("seed 0: ", 1)[-1].split(" (")[0] if message else "no message"
    ax.set_title(f"sigma'(0) = {SUBGRADIENT}: run {failed.status}\n{where}", fontsize=7)
    ax.set_xlim(-1.4, 1.4)
    ax.set_ylim(-0.4, 1.6)
    ax.set_aspect("equal")
    ax.legend(fontsize=6, loc="lower right")
    return fig


@caratheodory.plot("fig21-e4",
                   "Fig. 21 (App. E.4): <x, w(t)> and v(t) of E.4's neuron (y = +1). Black: the regular solution the "
                   "exact flow takes with sigma'(0) = 0 (stays at <x, w> = 0, v = 1; recorded non-unique); colored: "
                   "the irregular solutions that leave at t0 = 0, 0.3, 0.6 along eq. 47 (solve_ivp); dots: the exact "
                   "flow with sigma'(0) = 0.5, whose only solution is the one leaving at t0 = 0.")
def _plot_e4(r: Results):
    fig, (a1, a2) = panels(2, width=3.2, height=2.8)
    tt = np.linspace(0.0, SINGLE_TIME, 200)
    reg = r["e4-regular"]
    for ax, k, name in ((a1, 0, "<x, w(t)>"), (a2, 1, "v(t)")):
        values = reg.seeded("neuron_weights")[0, :, 0, 0] if k == 0 else reg.seeded("v")[0, :, 0]
        ax.plot(reg.trajectory["t"], values, "k-", lw=2, label="regular (sigma'(0) = 0)")
        for c, t0 in enumerate((0.0, 0.3, 0.6)):
            ax.plot(tt, eq47(tt, t0)[k], color=f"C{c + 1}", lw=1, label=f"eq. 47, t0 = {t0}")
        sub = r["e4-subgradient"]
        values = sub.seeded("neuron_weights")[0, :, 0, 0] if k == 0 else sub.seeded("v")[0, :, 0]
        ax.plot(sub.trajectory["t"], values, "o", color="C1", ms=3, mfc="none", label=f"sigma'(0) = {SUBGRADIENT}")
        ax.set_xlabel("t")
        ax.set_ylabel(name)
    a1.legend(fontsize=6)
    return fig

