"""Figs. 12, 13 (App. A.5): SGD on MNIST 1 vs 0, two phases with both layers, none with the first only.

The paper's two metrics, changes in neuron norms N = sum_j 2 <-grad_{w_j} L, w_j> and in directions
D = sum_j ||P_{w_j}(-grad_{w_j} L)|| / ||w_j||, are compared as rates: rho = (N / ||W||_F^2) / (D / h),
the relative growth rate of the norms over the turning rate of one neuron (dimensionless). rho is
small while the neurons turn and O(1) once they point along their x_a (rho ~ 2 cot of the angle to
x_a for either scheme), so the two schemes differ in WHEN the neurons have turned: with both layers
trained (speed |v_j| ~ 1e-6) they turn while the loss is flat, then grow; with v_j = +-1 fixed (speed
1) they turn and fit at once.
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import all_of, at_least, at_most
from twolayer.claims.falsifiers import Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.min2024._shared import COMMON, PAPER, PAPER_LR, schedule, synthetic
from twolayer.papers.min2024.mnist import SCALE as MNIST_SCALE, mnist_requirement
from twolayer.plotting import panels

SGD_SCALE = {"quick": dict(lr=1e-2, time=12.0), "paper": dict(lr=PAPER_LR, time=40.0)}
EARLY_LOSS = 0.99  # the loss still within 1 % of its initial value


def sgd_configs(scale: str) -> dict:
    s, m = SGD_SCALE[scale], MNIST_SCALE[scale]
    steps = int(round(s["time"] / s["lr"]))
    base = {**COMMON, "seed": 0, "precision": m["precision"],
            "data": {"kind": "mnist_pair", "digits": [1, 0], "split": m["split"]},
            "observe": {**schedule(steps, 80), "metrics": ["loss", "w_norm", "norm_change", "direction_change"]}}
    return {"both": {**base, "train": {"method": "sgd", "batch_size": 2000, "lr": s["lr"], "steps": steps}},
            "first": {**base, "init": {"kind": "gaussian_signs", "scale": 1e-6},
                      "train": {"method": "sgd", "batch_size": 2000, "lr": s["lr"], "steps": steps, "layers": "first"}}}


sgd = register(Experiment(
    id=f"{PAPER}/fig12-13-sgd", title="SGD on MNIST 0/1: two phases with both layers, none with the first only",
    figure="Figs. 12, 13 (App. A.5)",
    description=("MNIST 1 vs 0, SGD with batch 2000 (reshuffled each epoch, last partial batch kept), exp loss (mean). "
                 "Both layers: Gaussian init 1e-6. First layer only: W ~ N(0, 1e-12), v_j = +-1 fixed. Metrics on the "
                 "full batch at each observation: changes in norms N = sum_j 2<-grad_{w_j} L, w_j> and in directions "
                 "D = sum_j ||P_{w_j}(-grad_{w_j} L)||/||w_j||; rho = (N/||W||_F^2)/(D/h) compares them as rates."),
    configs=sgd_configs, requires=mnist_requirement))


def rho(run) -> np.ndarray:
    """(N / ||W||_F^2) / (D / h): relative norm growth rate over the turning rate of one neuron."""
    tr = run.trajectory
    fro2 = np.sum(tr["w_norm"] ** 2, axis=-1)
    h = tr["w_norm"].shape[-1]
    return (np.abs(tr["norm_change"]) / fro2) / (tr["direction_change"] / h)


def turned(run) -> tuple[float, float]:
    """(paper iteration at which rho first reaches 1, the loss there relative to its initial value)."""
    tr = run.trajectory
    hits = np.flatnonzero(rho(run) >= 1.0)
    if not hits.size:
        return math.inf, math.nan
    k = int(hits[0])
    return float(tr["t"][k] / PAPER_LR), float(tr["loss"][k] / tr["loss"][0])


def _sgd_like(configs, *, both_turn_at=900.0, both_fits=2600.0, first_turn_at=5.0, first_fits=4.0, final=0.02):
    """Synthetic runs: rho rises through 1 at ``*_turn_at`` iterations, the loss leaves 1 at ``*_fits``."""
    out = {}
    for key, turn, fit in (("both", both_turn_at, both_fits), ("first", first_turn_at, first_fits)):
        cfg = configs[key]
        it = np.concatenate([[0.0], np.geomspace(1, 6000, 80)])
        h = 50
        r = 0.02 * (it + 1) / (turn + 1) * 50  # rho = 1 at it = turn
        fro2 = np.full(len(it), 50e-12)
        d = np.full(len(it), 2.0)
        n = r * fro2 * d / h
        loss = np.where(it < fit, 1.0, final)
        out[key] = synthetic(cfg, it * PAPER_LR, name=f"synthetic-{key}", loss=loss,
                             w_norm=np.full((len(it), h), 1e-6), norm_change=n, direction_change=d)
    return out


def _defect(**kw):
    return lambda configs: _sgd_like(configs, **kw)


@sgd.claim("P19-two-phase", "P19 / Fig. 12: with both layers trained the neurons turn before the norms grow: when rho "
                            "= (N/||W||_F^2)/(D/h) first reaches 1 (the turning is done, the norms take over) the loss is "
                            "still within 1 % of its initial value, and the loss then falls by at least half",
           kind="prediction", tolerance_source="exploratory",
           falsifiers=[Synthetic("fits-while-turning", _defect(both_fits=100.0), "the loss falls at iteration 100, while "
                                                                                  "rho is still 0.1")])
def _two_phase(r: Results):
    it, loss = turned(r["both"])
    final = float(r["both"].trajectory["loss"][-1] / r["both"].trajectory["loss"][0])
    return all_of(at_least(loss, EARLY_LOSS, scale=1 - EARLY_LOSS), at_most(final, 0.5),
                  details=f"rho reaches 1 at paper iteration {it:.4g} with L/L(0) = {loss:.4g}; final L/L(0) {final:.3g}")


@sgd.claim("P19-first-layer", "P19 / Fig. 13: with only the first layer trained (v = +-1 fixed) there is no separate "
                              "alignment phase: by the time rho first reaches 1 the loss has already fallen by more than "
                              "1 %, and both schemes reach a small loss (final L <= 0.1 L(0))",
           kind="prediction", tolerance_source="exploratory",
           falsifiers=[Synthetic("separated", _defect(first_fits=3000.0), "the first-layer loss stays at 1 until "
                                                                           "iteration 3000, long after rho = 1"),
                       Synthetic("no-fit", _defect(final=0.5), "both losses end at 0.5")])
def _first_layer(r: Results):
    it, loss = turned(r["first"])
    finals = [float(r[k].trajectory["loss"][-1] / r[k].trajectory["loss"][0]) for k in ("both", "first")]
    return all_of(at_most(loss, EARLY_LOSS, tolerance=0.0, scale=1 - EARLY_LOSS) if math.isfinite(loss) else
                  at_most(math.inf, EARLY_LOSS), at_most(finals, 0.1),
                  details=f"rho reaches 1 at paper iteration {it:.4g} with L/L(0) = {loss:.4g}; final L/L(0) both, "
                          f"first: {np.round(finals, 4).tolist()}")


@sgd.plot("changes", "Changes in neuron norms |N| and directions D against paper iteration, with the loss; left both "
                     "layers (Fig. 12), right first layer only (Fig. 13). Log axes; dotted: rho (N/||W||_F^2)/(D/h), "
                     "with the first iteration where it reaches 1 marked.")
def _plot(r: Results):
    fig, axes = panels(2, width=3.8, height=3.0)
    for ax, key in zip(axes, ("both", "first")):
        tr = r[key].trajectory
        it = tr["t"][1:] / PAPER_LR
        ax.plot(it, np.abs(tr["norm_change"][1:]), label="norm change |N|")
        ax.plot(it, tr["direction_change"][1:], label="direction change D")
        ax.plot(it, tr["loss"][1:], label="loss")
        ax.plot(it, rho(r[key])[1:], ":", color="k", label="rho")
        t_turn, _ = turned(r[key])
        if math.isfinite(t_turn):
            ax.axvline(max(t_turn, it[0]), color="gray", lw=0.6)
        ax.set(xscale="log", yscale="log", xlabel="iteration", title="both layers" if key == "both" else "first layer only")
        ax.legend(fontsize=7)
    return fig
