"""Phase II (Theorem E.4, the step behind Lemma 5.4): the limit of the two-neuron dynamics from r theta_hat as
r -> 0, after the time shift T_2(r) = (1/lambda) ln(1/r).

theta_hat = (mu_bar, -mu_bar, 1, -1) is well-aligned (w_k along sign(a_k) mu_bar, |a_k| = ||w_k||): on symmetric data
G(w) = (1/n) sum_i y_i phi'(<w, x_i>) x_i = (1 + alpha) mu for every w (the pairs (x, 1), (-x, -1) add
phi'(z) + phi'(-z) = 1 + alpha), so near 0 the flow is theta(t) = r e^{lambda t} theta_hat with
lambda = (1 + alpha) ||mu|| / 4 for the mean logistic loss (spec §2.5 [DERIVED]). Theorem E.4: the limit
lim_{r -> 0} phi(r theta_hat, T_2(r) + s) exists for every s. Measured: theta_r(T_2(r) + s) at s in a fixed window
(recorded by ``observe.at`` on the clock tau = ln(1 + t)) for r = 1e-2, 1e-3, 1e-4 against r = 1e-6: the distance
falls with r (5.7e-6, 3.8e-8, 4.4e-9 of ||theta||: about r^2, then the solver's floor).

Premise ablation (Assumption 4.1, under which lambda is that rate): the same points without their mirror
images; G(w) then depends on w, the growth rate of the aligned start is not (1 + alpha) ||mu|| / 4, and the
shifted trajectories drift apart by ln(1/r) times the rate error. Lemma 5.4 (the m-neuron trajectory from a random
sigma-init converges to the embedded two-neuron one) needs T_12 and b from Phase I and is not checked here; its
embedding step (Lemma 5.3) is lyu2021/embedding.
"""

from __future__ import annotations

import math

import numpy as np

from twolayer.claims.checks import all_of, at_least, at_most
from twolayer.claims.falsifiers import Premise, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.lyu2021._shared import (
    ALPHA, SOURCE_SYMMETRIC, base_config, flow_train, groups_data, late_phase_series, synthetic_run, values_init,
)
from twolayer.plotting import panels

SCALES = (1e-2, 1e-3, 1e-4, 1e-6)  # r; the last is the reference
WINDOW = tuple(np.linspace(-10.0, 30.0, 9))  # s: t = T_2(r) + s (theta is O(1) there; fitted by s ~ 20)
METRICS = ["neuron_weights", "v", "log_loss", "normalized_margin"]


def _data(spec: dict):
    from twolayer.config import load_config
    from twolayer.data import build_dataset

    return build_dataset(load_config({"data": spec}).data)


def rate(spec: dict) -> float:
    """lambda = (1 + alpha) ||mu|| / 4 (theory.margin.growth_rate, the symmetric-data formula)."""
    from twolayer.theory.margin import growth_rate

    d = _data(spec)
    return growth_rate(d.X, d.y, ALPHA)


def shift(spec: dict, r: float) -> float:
    """T_2(r) = (1/lambda) ln(1/r) (Theorem E.4)."""
    return math.log(1 / r) / rate(spec)


def phase2_config(spec: dict, r: float) -> dict:
    """Gradient flow from r theta_hat, recorded at t = T_2(r) + s for s in WINDOW (tau = ln(1 + t))."""
    from twolayer.theory.margin import mu

    d = _data(spec)
    m = mu(d.X, d.y)
    m = m / np.linalg.norm(m)
    T2 = shift(spec, r)
    at = [math.log1p(T2 + s) for s in WINDOW]
    cfg = base_config(spec, 2, values_init(r * np.array([m, -m]), r * np.array([1.0, -1.0])),
                      flow_train(at[-1]), METRICS, 2)
    cfg["observe"] = {"schedule": "at", "at": [0.0, *at], "metrics": cfg["observe"]["metrics"]}
    return cfg


def run_key(r: float) -> str:
    return f"r{r:g}"


def phase2_configs(scale: str, spec: dict | None = None) -> dict[str, dict]:
    spec = spec or groups_data()
    return {run_key(r): phase2_config(spec, r) for r in SCALES}


phase2 = register(Experiment(
    id="lyu2021/phase2",
    title="Phase II (Theorem E.4): the time-shifted two-neuron trajectory has a limit as the start scale r -> 0",
    figure="Theorem E.4, Lemma 5.4 (Phase II); spec §2.6",
    description=(
        "2-D symmetric data (n = 20). Gradient flow (flow_log) from r theta_hat, theta_hat = (mu_bar, -mu_bar, 1, -1) "
        "(well-aligned, balanced), r = 1e-2, 1e-3, 1e-4 and 1e-6, recorded at t = T_2(r) + s for s = -10..30 with "
        "T_2(r) = ln(1/r) / lambda and lambda = (1 + alpha) ||mu|| / 4. Theorem E.4: phi(r theta_hat, T_2(r) + s) "
        "converges as r -> 0; measured as the distance of each r's window to the r = 1e-6 window."),
    configs=phase2_configs,
))


def window(run) -> np.ndarray:
    """theta at the window's observations (the first observation, t = 0, dropped): [T, 6]."""
    W, a = run.seeded("neuron_weights")[0], run.seeded("v")[0]
    return np.concatenate([W.reshape(W.shape[0], -1), a], axis=1)[1:]


def distances(r: Results) -> dict[float, float]:
    """max_s ||theta_r(T_2(r) + s) - theta_ref(T_2(ref) + s)|| / max_s ||theta_ref|| for every r above the reference."""
    ref = window(r[run_key(SCALES[-1])])
    scale = float(np.max(np.linalg.norm(ref, axis=1)))
    return {s: float(np.max(np.linalg.norm(window(r[run_key(s)]) - ref, axis=1)) / scale) for s in SCALES[:-1]}


def ideal_runs(configs: dict[str, dict], defect: str | None = None) -> dict[str, SyntheticRun]:
    """The limit trajectory plus an O(r^2) correction; ``drift``: the r = 1e-4 window is off by 10 %."""
    out = {}
    base = np.array([1.0, 0.5, -1.0, -0.5, 1.2, -1.2])
    for key, cfg in configs.items():
        r = float(cfg["init"]["v"][0])
        at = np.asarray(cfg["observe"]["at"])
        s = np.arange(len(at), dtype=np.float64)
        theta = base[None, :] * (1 + 0.1 * s[:, None]) * (1 + 2 * r**2)
        if defect == "drift" and key == run_key(1e-4):
            theta = theta * 1.1
        series = {k: v[0] for k, v in late_phase_series(at, 1).items()}
        out[key] = synthetic_run(cfg, key, {"t": at, "neuron_weights": theta[:, :4].reshape(len(at), 2, 2),
                                            "v": theta[:, 4:], **series})
    return out


NOT_SYMMETRIC = Premise(
    "not-symmetric", lambda _: phase2_configs("quick", {**groups_data(), "kind": "separable_ball"}),
    "the same 20 points without their mirror images (separable_ball, same seed): G(w) depends on w and the aligned "
    "start does not grow at (1 + alpha) ||mu|| / 4, so T_2(r) is off by ln(1/r) times the rate error and the "
    "shifted windows drift apart as r falls", source=SOURCE_SYMMETRIC)


@phase2.claim("trajectory-limit",
              "Theorem E.4: phi(r theta_hat, T_2(r) + s) converges as r -> 0: the distance of the window s in [-10, 30] "
              "to the r = 1e-6 window falls at every step r = 1e-2 -> 1e-3 -> 1e-4, is <= 1e-6 of ||theta|| at "
              "r = 1e-4, and its log-log slope against r is >= 1",
              kind="prediction", falsifiers=[Synthetic("synthetic-drift", lambda c: ideal_runs(c, "drift"),
                                                       "the r = 1e-4 window is 10 % off"), NOT_SYMMETRIC],
              tolerance_source="derived: a start r theta_hat off the limit's unstable manifold by O(r^2) gives a "
                               "distance of order r or smaller (slope >= 1; measured 1.56: 5.7e-6, 3.8e-8, 4.4e-9); "
                               "1e-6 is the solver's rtol, above the floor 4e-9 it reaches at r = 1e-4")
def _limit(r: Results):
    d = distances(r)
    rs = np.array(sorted(d, reverse=True))
    dist = np.array([d[x] for x in rs])
    slope = float(np.polyfit(np.log(rs), np.log(np.maximum(dist, 1e-300)), 1)[0])
    return all_of(at_most(dist[1:] / dist[:-1], 1.0), at_most(dist[-1], 1e-6), at_least(slope, 1.0),
                  details=(f"distance to the r = 1e-6 window (relative to max ||theta||): "
                           + ", ".join(f"r = {x:g}: {y:.3g}" for x, y in zip(rs, dist))
                           + f"; log-log slope {slope:.3f}; lambda = {rate(r[run_key(SCALES[-1])].config['data']):.5f}"))


@phase2.plot("phase2", "||theta_r(T_2(r) + s)|| against s for each start scale r (the curves collapse as r -> 0), "
                       "and the distance to the r = 1e-6 window against r (log-log).")
def _plot(r: Results):
    fig, (ax, ax2) = panels(2, width=3.9, height=3.0)
    for x in SCALES:
        ax.plot(WINDOW, np.linalg.norm(window(r[run_key(x)]), axis=1), marker=".", label=f"r = {x:g}")
    ax.set(xlabel=r"$s = t - T_2(r)$", ylabel=r"$\|\theta\|$", title="Theorem E.4: shifted trajectories")
    ax.legend(fontsize=6)
    d = distances(r)
    ax2.loglog(list(d), list(d.values()), "o-")
    ax2.set(xlabel="r", ylabel="distance to the r = 1e-6 window", title="convergence as r -> 0")
    return fig
