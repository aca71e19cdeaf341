"""Lemma 5.3: the embedding pi_b commutes with gradient flow.

pi_b maps two-neuron parameters theta^ = (w^_1, w^_2, a^_1, a^_2), a^_1 > 0 > a^_2, to m neurons: neuron k
in K+ gets (b_k w^_1, b_k a^_1), neuron k in K- gets (b_k w^_2, b_k a^_2), with b_k > 0 and
sum_{K+} b_k^2 = sum_{K-} b_k^2 = 1 [RECON form, spec §2.7]. It preserves f (phi is 1-homogeneous), and the
lemma says phi(pi_b(theta^_0), t) = pi_b(phi(theta^_0, t)) for all t: the m-neuron flow started at the
embedding is the embedding of the two-neuron flow. Here both flows are integrated (flow_log, the same
observation times) and compared at every observation.
"""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import at_most
from twolayer.claims.falsifiers import Counterfactual, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.lyu2021._shared import (
    RTOL, base_config, flow_train, groups_data, late_phase_series, synthetic_run, tau, tau_axis, values_init,
)
from twolayer.plotting import panels

B_POS = (0.48, 0.6, 0.64)  # sum of squares 1
B_NEG = (0.6, 0.8)
SEEDS, SCALE, TAU_END, POINTS = 3, 0.5, 1e3, 40
EMBED_METRICS = ["neuron_weights", "v", "log_loss", "normalized_margin"]
TOLERANCE = 100 * RTOL  # the two solves take different steps; errors accumulate over ~1e3 units of tau


def two_neuron_init(seeds: int = SEEDS, scale: float = SCALE, d: int = 2):
    """Balanced two-neuron starts with a^_1 = ||w^_1|| > 0 > a^_2 = -||w^_2|| (fixed RNG), [S, 2, d], [S, 2]."""
    rng = np.random.default_rng(53)
    W = scale * rng.normal(size=(seeds, 2, d)) / np.sqrt(d)
    a = np.linalg.norm(W, axis=2) * np.array([1.0, -1.0])
    return W, a


def embed(W, a, b_pos=B_POS, b_neg=B_NEG):
    """pi_b: [S, 2, d], [S, 2] -> [S, m, d], [S, m] (K+ first, then K-)."""
    b = np.concatenate([b_pos, b_neg])
    src = np.array([0] * len(b_pos) + [1] * len(b_neg))
    return W[:, src] * b[None, :, None], a[:, src] * b[None, :]


def embedding_configs(scale: str) -> dict[str, dict]:  # noqa: ARG001 (seconds at both scales)
    W, a = two_neuron_init()
    We, ae = embed(W, a)
    train = flow_train(TAU_END)
    return {"two": base_config(groups_data(), 2, values_init(W, a), train, EMBED_METRICS, POINTS, seeds=SEEDS),
            "wide": base_config(groups_data(), We.shape[1], values_init(We, ae), train, EMBED_METRICS, POINTS,
                                seeds=SEEDS)}


embedding = register(Experiment(
    id="lyu2021/embedding",
    title="Lemma 5.3: the pi_b embedding of the two-neuron flow is the flow of the embedded network",
    figure="Lemma 5.3 (Phase II); spec §2.7",
    description=(
        "2-D symmetric data (n = 20). Three balanced two-neuron starts theta^_0 (scale 0.5, a^_1 > 0 > a^_2) and "
        "their embeddings pi_b(theta^_0) in width 5, b = (0.48, 0.6, 0.64) on K+ and (0.6, 0.8) on K-, both "
        "followed by flow_log to tau = 1e3 (log L ~ -1e3). At every observation the width-5 parameters equal "
        "pi_b of the two-neuron parameters to solver tolerance."),
    configs=embedding_configs,
))


def embedding_errors(r: Results) -> np.ndarray:
    """max over observations of ||theta_wide(t) - pi_b(theta^(t))|| / ||theta_wide(t)||, per seed."""
    W2, a2 = r["two"].seeded("neuron_weights"), r["two"].seeded("v")  # [S, T, 2, d], [S, T, 2]
    Ww, aw = r["wide"].seeded("neuron_weights"), r["wide"].seeded("v")
    S, T = a2.shape[:2]
    We, ae = embed(W2.reshape(S * T, 2, -1), a2.reshape(S * T, 2))
    diff = np.concatenate([(Ww.reshape(S * T, -1) - We.reshape(S * T, -1)), aw.reshape(S * T, -1) - ae], axis=1)
    size = np.concatenate([Ww.reshape(S * T, -1), aw.reshape(S * T, -1)], axis=1)
    rel = np.linalg.norm(diff, axis=1) / np.linalg.norm(size, axis=1)
    return rel.reshape(S, T).max(axis=1)


def ideal_runs(configs: dict[str, dict], error: float = 0.0) -> dict[str, SyntheticRun]:
    """A two-neuron trajectory (the start rotated and grown along a log spiral) and its exact embedding, with
    a relative ``error`` added to the wide run's first neuron from the middle of the run on."""
    W0, a0 = two_neuron_init()
    t = np.concatenate([[0.0], np.geomspace(1e-2, TAU_END, POINTS - 1)])
    grow = (1 + t)[None, :, None, None]
    W = W0[:, None] * grow
    a = a0[:, None] * grow[..., 0]
    We, ae = embed(W.reshape(-1, 2, W.shape[-1]), a.reshape(-1, 2))
    We, ae = We.reshape(SEEDS, len(t), -1, W.shape[-1]), ae.reshape(SEEDS, len(t), -1)
    We[0, len(t) // 2:, 0] *= 1 + error
    series = late_phase_series(t, SEEDS)
    return {"two": synthetic_run(configs["two"], "two", {"t": t, "neuron_weights": W, "v": a, **series}),
            "wide": synthetic_run(configs["wide"], "wide", {"t": t, "neuron_weights": We, "v": ae, **series})}


def _wrong_b(configs: dict[str, dict]) -> dict[str, dict]:
    W, a = two_neuron_init()
    We, ae = embed(W, a, b_pos=tuple(1.1 * b for b in B_POS))
    short = {k: {**cfg, "train": flow_train(30.0)} for k, cfg in configs.items()}  # both flows to tau = 30
    return {"two": short["two"], "wide": {**short["wide"], "init": values_init(We, ae)}}


WRONG_EMBEDDING = Counterfactual(
    "unnormalized-b", _wrong_b,
    "the wide net starts at pi_b' with b' = 1.1 b on K+ (sum of b_k^2 = 1.21, not 1): it is not the image of the "
    "two-neuron start, f is 1.21 f^ on the positive group, and its flow leaves pi_b of the two-neuron flow")


@embedding.claim("commutes-with-flow", "Lemma 5.3: phi(pi_b(theta^_0), t) = pi_b(phi(theta^_0, t)) at every "
                                       "observation: relative distance <= 100 x rtol (rtol 1e-6), every start",
                 kind="consistency",
                 falsifiers=[Synthetic("synthetic-1e-2-off", lambda c: ideal_runs(c, 1e-2),
                                       "the wide run's first neuron drifts 1 % off the embedding half-way"),
                             WRONG_EMBEDDING],
                 tolerance_source="solver: 100 x the flow's rtol (an identity of gradient flow, Lemma 5.3)")
def _commutes(r: Results):
    err = embedding_errors(r)
    return at_most(err, TOLERANCE, details=f"max relative distance per start {np.array2string(err, precision=3)}; "
                                           f"b = {B_POS} on K+, {B_NEG} on K-; solver rtol {RTOL:g}")


@embedding.plot("embedding", "Relative distance ||theta_wide(t) - pi_b(theta^(t))|| / ||theta_wide(t)|| against tau "
                             "for each start (log axes), and the allowed 100 x rtol.")
def _plot(r: Results):
    W2, a2 = r["two"].seeded("neuron_weights"), r["two"].seeded("v")
    Ww, aw = r["wide"].seeded("neuron_weights"), r["wide"].seeded("v")
    t = tau(r["two"])
    fig, (ax,) = panels(1, width=4.4, height=3.0)
    for s in range(a2.shape[0]):
        We, ae = embed(W2[s], a2[s])
        diff = np.concatenate([(Ww[s] - We).reshape(len(t), -1), aw[s] - ae], axis=1)
        size = np.concatenate([Ww[s].reshape(len(t), -1), aw[s]], axis=1)
        rel = np.linalg.norm(diff, axis=1) / np.linalg.norm(size, axis=1)
        keep = (t > 0) & (rel > 0)
        ax.plot(t[keep], rel[keep], label=f"start {s}")
    ax.axhline(TOLERANCE, color="gray", ls="--", lw=0.8, label="100 x rtol")
    tau_axis(ax)
    ax.set(yscale="log", ylabel="relative distance", title="Lemma 5.3")
    ax.legend(fontsize=6)
    return fig
