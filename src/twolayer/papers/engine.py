"""Built-in engine checks: conservation laws of two-layer training (no paper needed).

For f(x) = sum_j v_j relu(w_j . x), the per-neuron imbalance Delta_j = v_j^2 - ||w_j||^2 is
conserved by gradient flow; one GD step changes it by exactly lr^2 (g_v^2 - ||g_w||^2), so up to a
fixed time t = lr k the drift is O(lr) (O(lr^2) per step, t / lr steps). With balanced
initialization (Delta_j = 0) gradient flow keeps |v_j| = ||w_j||, so no v_j changes sign.

Every claim states its kind and its falsifiers: a synthetic run set with one defect
(``synthetic_conservation``, which passes every claim without a defect) and a small counterfactual
run that breaks the ingredient the claim rests on (only the first layer trained, weight decay, an
unbalanced initialization).
"""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import Check, at_most, close_to, compare, monotone
from twolayer.claims.falsifiers import Counterfactual, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register, register_paper
from twolayer.plotting import band, panels, positive_times
from twolayer.train.methods import METHODS

register_paper("engine", "Engine checks", "Conservation laws of two-layer gradient training (built into twolayer).")

# quick: seconds on 2 cores; paper: the Min et al. Fig. 7 size (h = 50, scale 1e-6, t = 42).
SCALE_SETTINGS = {
    "quick": dict(seeds=4, width=20, init_scale=1e-3, time=40.0, lrs=(0.04, 0.02, 0.01), points=60,
                  rtol=1e-8, atol=1e-10),
    "paper": dict(seeds=8, width=50, init_scale=1e-6, time=42.0, lrs=(4e-3, 2e-3, 1e-3), points=200,
                  rtol=1e-10, atol=1e-16),
}
METRICS = ["loss", "accuracy", "w_norm", "v", "imbalance"]


def _lr_key(lr: float) -> str:
    return f"gd-lr{lr:g}"


def conservation_configs(scale: str) -> dict[str, dict]:
    s = SCALE_SETTINGS[scale]
    base = {
        "seeds": s["seeds"],
        "data": {"kind": "two_points", "angle": float(np.pi / 2 - 0.1), "labels": [1, 1]},
        "model": {"kind": "two_layer", "activation": "relu", "width": s["width"]},
        "init": {"kind": "balanced", "scale": s["init_scale"]},
        "loss": {"kind": "exponential", "reduction": "sum"},
        "observe": {"schedule": "log", "points": s["points"], "metrics": METRICS},
    }
    configs = {_lr_key(lr): {**base, "train": {"method": "gd", "lr": lr, "steps": int(round(s["time"] / lr))}}
               for lr in s["lrs"]}
    configs["flow"] = {**base, "train": {"method": "flow", "time": s["time"], "rtol": s["rtol"], "atol": s["atol"]}}
    return configs


conservation = register(Experiment(
    id="engine/conservation",
    title="Conservation of the per-neuron imbalance under gradient flow and GD",
    figure="built-in (setting of Min et al. 2024, Fig. 7)",
    description=(
        "Two points at angle pi/2 - 0.1 with positive labels, a ReLU network with balanced small "
        "initialization and exponential loss, trained by gradient flow and by GD at three learning "
        "rates to the same time t. Gradient flow conserves Delta_j = v_j^2 - ||w_j||^2 for every "
        "neuron; GD changes it by lr^2 (g_v^2 - ||g_w||^2) per step, so the drift at a fixed time "
        "halves when lr halves. The loss never increases, and under gradient flow no output weight "
        "changes sign."),
    configs=conservation_configs,
))


def _gd_keys(r: Results) -> list[str]:
    return sorted((k for k in r.runs if k.startswith("gd-")), key=lambda k: -r[k].config["train"]["lr"])


def _drift(run) -> np.ndarray:
    """|Delta_j(t) - Delta_j(0)| per seed, time and neuron: [S, T, h]."""
    imb = run.trajectory["imbalance"]
    return np.abs(imb - imb[:, :1])


def _scale(run) -> float:
    """The largest per-neuron size max(v_j^2, ||w_j||^2) over seeds, times and neurons."""
    tr = run.trajectory
    return float(max(np.max(tr["v"] ** 2), np.max(tr["w_norm"] ** 2)))


# -- falsifiers --------------------------------------------------------------------------------

def synthetic_conservation(configs: dict[str, dict], *, flow_drift: float = 0.0, gd_power: float = 1.0,
                           loss_bump: float = 0.0, flip: bool = False, S: int = 3, T: int = 30,
                           h: int = 5) -> dict[str, SyntheticRun]:
    """Runs shaped like the engine/conservation runs (keys and learning rates of ``configs``): a
    loss falling like 2 exp(-t/5), |v_j| = ||w_j|| constant, and an imbalance drift growing linearly
    in t, of size ``flow_drift`` under flow and 1e-3 (lr / 0.01)^gd_power under GD. Without a defect
    every claim passes; each defect violates one statement: ``flow_drift`` > rtol, ``gd_power`` != 1,
    ``loss_bump`` > 0 (the loss rises half-way) or ``flip`` (one v_j changes sign under flow)."""
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 40.0, T)
    loss = np.tile(2.0 * np.exp(-t / 5.0), (S, 1))
    loss[:, T // 2] *= 1.0 + loss_bump
    w = np.abs(rng.normal(size=(S, 1, h))) + 0 * t[None, :, None]
    v = np.sign(rng.normal(size=(S, 1, h))) * w
    ramp = (t / t[-1])[None, :, None] * np.ones((S, 1, h))

    def trajectory(drift, v):
        return {"t": t, "loss": loss, "v": v, "w_norm": w, "imbalance": v ** 2 - w ** 2 + drift * ramp}

    runs = {}
    for key, cfg in configs.items():
        if METHODS.get(cfg["train"]["method"]).continuous:  # a flow: no learning rate, no GD drift
            v_flow = v.copy()
            if flip:
                v_flow[0, T // 2:, 0] *= -1
            runs[key] = SyntheticRun(cfg, trajectory(flow_drift, v_flow), name=f"synthetic-{key}")
        else:
            lr = cfg["train"]["lr"]
            runs[key] = SyntheticRun(cfg, trajectory(1e-3 * (lr / 0.01) ** gd_power, v), name=f"synthetic-{key}")
    return runs


def _defect(**defect):
    return lambda configs: synthetic_conservation(configs, **defect)


def _changed(section: str, **values):
    """A counterfactual change: set ``section.key = value`` in every config (2 seeds, to stay small)."""
    def change(configs):
        for cfg in configs.values():
            cfg[section] = {**cfg[section], **values}
            cfg["seeds"] = 2
        return configs
    return change


FIRST_LAYER_ONLY = Counterfactual(
    "first-layer-only", _changed("train", layers="first"),
    "With v_j frozen the identity d(v_j^2)/dt = d||w_j||^2/dt behind the conservation law is gone: Delta_j drifts "
    "by the growth of ||w_j||^2, by the same amount at every lr.")
WEIGHT_DECAY = Counterfactual(
    "weight-decay", _changed("train", weight_decay=5.0),
    "GD then descends L + (lambda/2)||theta||^2, not L: a decay rate 5 above the growth rate near the origin "
    "shrinks the network, so f falls back to 0 and the loss rises toward n.")
GAUSSIAN_INIT = Counterfactual(
    "gaussian-init", lambda configs: {"flow": {**configs["flow"], "init": {"kind": "gaussian", "scale": 1e-3}}},
    "An unbalanced init (v_j and w_j independent N(0, 1e-6)) has Delta_j(0) != 0: a neuron with |v_j| << ||w_j|| "
    "and v_j < 0 is pushed through 0 by dv_j/dt = sum_i r_i relu(<w_j, x_i>) >= 0 (positive labels).")


@conservation.claim("flow-conserves-imbalance",
                    "Gradient flow conserves v_j^2 - ||w_j||^2 for every neuron, to solver tolerance "
                    "(max drift relative to the largest neuron size max(v_j^2, ||w_j||^2))",
                    kind="consistency",
                    tolerance_source="solver: the integrator's rtol (1e-8 quick, 1e-10 paper), its relative error "
                                     "per step on the state",
                    falsifiers=[Synthetic("flow-drift", _defect(flow_drift=1e-5),
                                          "Delta_j drifts by 1e-5 (relative) under flow, 1000x the solver rtol."),
                                FIRST_LAYER_ONLY])
def _flow_conserves(r: Results):
    run = r["flow"]
    rel = float(np.max(_drift(run)) / _scale(run))
    rtol = run.config["train"]["rtol"]
    return at_most(rel, rtol, details=f"solver rtol {rtol:g}")


@conservation.claim("gd-drift-order-lr",
                    "GD changes the imbalance by lr^2 (g_v^2 - ||g_w||^2) per step, so its drift at a "
                    "fixed time is O(lr): halving lr halves the drift in the limit, i.e. the order log2(drift(2 lr) / "
                    "drift(lr)) of the finest pair of learning rates is 1 within its Richardson error estimate, the "
                    "change from the coarser pair's order",
                    kind="consistency",
                    tolerance_source="derived: the successive-estimate (Richardson) error of an observed order of "
                                     "convergence, |p(finest pair) - p(coarser pair)|, in place of the exploratory "
                                     "[0.9, 1.1] on a fit over all three (quick: orders 0.941 and 0.994)",
                    falsifiers=[Synthetic("drift-order-2", _defect(gd_power=2.0), "drift ~ lr^2"),
                                Synthetic("drift-order-half", _defect(gd_power=0.5), "drift ~ lr^0.5"),
                                FIRST_LAYER_ONLY])
def _gd_drift_order(r: Results):
    keys = _gd_keys(r)
    lrs = np.array([r[k].config["train"]["lr"] for k in keys])
    drift = np.array([np.max(_drift(r[k])[:, -1]) for k in keys])
    orders = np.log(drift[:-1] / drift[1:]) / np.log(lrs[:-1] / lrs[1:])  # coarse to fine
    ratios = ", ".join(f"{a:g}->{b:g}: {d1 / d2:.3f}" for a, b, d1, d2 in zip(lrs, lrs[1:], drift, drift[1:]))
    error = float(abs(orders[-1] - orders[-2]))
    return close_to(float(orders[-1]), 1.0, atol=error,
                    details=f"final max drift {', '.join(f'{d:.3g}' for d in drift)}; ratios {ratios}; orders "
                            f"{', '.join(f'{p:.4f}' for p in orders)} (coarse to fine); allowed: their change")


def _loss_rise_allowed(run) -> float:
    """The rise of log L between observations that is not a rise of the dynamics: the solver's rtol for a flow, the
    round-off of two computed sums of n exponential losses, 2 (n + 2) eps, for GD."""
    train = run.config["train"]
    if METHODS.get(train["method"]).continuous:
        return float(train["rtol"])
    n = len(run.config["data"]["labels"])  # two_points: one label per point
    return 2 * (n + 2) * float(np.finfo(np.float64).eps)


@conservation.claim("loss-non-increasing",
                    "The training loss is non-increasing along gradient flow and along GD at every "
                    "learning rate (worst step of log(loss) between observation points; allowed: a rise within "
                    "the round-off of two computed losses for GD, within the solver's rtol for the flow)",
                    kind="consistency",
                    tolerance_source="derived: GD's losses are exact up to float64 round-off, 2 (n + 2) eps relative "
                                     "for a sum of n exponentials (f ~ 0 at this init); the flow's state carries the "
                                     "solver's relative error rtol, in place of the exploratory 1e-9 for every run",
                    falsifiers=[Synthetic("loss-bump", _defect(loss_bump=0.5), "the loss rises by 50 % half-way"),
                                WEIGHT_DECAY])
def _loss_monotone(r: Results):
    # log L is non-increasing iff L is; its steps are relative changes, comparable across runs
    checks = {key: monotone(np.log(run.trajectory["loss"]), "non-increasing", atol=_loss_rise_allowed(run))
              for key, run in r.runs.items()}
    key, worst = max(checks.items(), key=lambda kv: kv[1].measured)
    return Check(worst.predicted, worst.measured, all(c.passed for c in checks.values()), worst.tolerance,
                 f"worst run: {key}; {worst.details}; step of log(loss)", min(c.slack for c in checks.values()))


@conservation.claim("flow-preserves-signs",
                    "With balanced initialization gradient flow preserves sign(v_j) of every neuron "
                    "(|v_j| = ||w_j|| at all times, so v_j cannot cross 0): a conservation law of the flow, so a "
                    "consistency check of the integrator (it holds for a net that does not move as well)",
                    kind="consistency", tolerance_source="none: an exact count",
                    falsifiers=[Synthetic("sign-flip", _defect(flip=True), "one v_j changes sign half-way"),
                                GAUSSIAN_INIT])
def _flow_signs(r: Results):
    v = r["flow"].trajectory["v"]
    flips = int(np.sum(np.any(np.sign(v) != np.sign(v[:, :1]), axis=1)))
    return compare(flips, "==", 0, details=f"{v.shape[0]} seeds x {v.shape[2]} neurons")


_COLORS = {"flow": "black"}


def _label(r: Results, key: str) -> str:
    return "gradient flow" if key == "flow" else f"GD lr={r[key].config['train']['lr']:g}"


@conservation.plot("loss", "Training loss against time t = lr * step (log-log); median over seeds, "
                           "min-max range shaded.")
def _plot_loss(r: Results):
    fig, (ax,) = panels(1, width=4.4, height=3.2)
    for key in [*_gd_keys(r), "flow"]:
        t, loss = positive_times(r[key].trajectory["t"], r[key].trajectory["loss"])
        band(ax, t, loss, label=_label(r, key), color=_COLORS.get(key))
    ax.set(xscale="log", yscale="log", xlabel="t", ylabel="loss", title="loss")
    ax.legend()
    return fig


@conservation.plot("imbalance", "Left: max over neurons of |Delta_j(t) - Delta_j(0)| against t, median "
                                "over seeds with the min-max range shaded. Right: final drift against lr "
                                "(one point per seed, per neuron max), with a slope-1 guide; gradient flow "
                                "as a dotted line.")
def _plot_imbalance(r: Results):
    fig, (ax, ax2) = panels(2, width=4.0, height=3.2)
    for key in [*_gd_keys(r), "flow"]:
        t, drift = positive_times(r[key].trajectory["t"], _drift(r[key]).max(axis=2))
        band(ax, t, drift, label=_label(r, key), color=_COLORS.get(key), positive=True)
    ax.set(xscale="log", yscale="log", xlabel="t", ylabel=r"$\max_j |\Delta_j(t)-\Delta_j(0)|$",
           title="imbalance drift")
    ax.legend()
    keys = _gd_keys(r)
    lrs = np.array([r[k].config["train"]["lr"] for k in keys])
    finals = np.array([_drift(r[k])[:, -1].max(axis=-1) for k in keys])  # [lr, seed]
    for i in range(finals.shape[1]):
        ax2.plot(lrs, finals[:, i], "o", color="C0", alpha=0.6, markersize=4, label="GD (per seed)" if i == 0 else None)
    guide = finals.max(axis=1)[-1] * lrs / lrs[-1]
    ax2.plot(lrs, guide, "--", color="gray", label="slope 1")
    flow = _drift(r["flow"])[:, -1].max()
    if flow > 0:
        ax2.axhline(flow, color="black", linestyle=":", label="gradient flow")
    ax2.set(xscale="log", yscale="log", xlabel="lr", ylabel="final drift", title="drift at fixed t vs lr")
    ax2.legend()
    return fig
