"""Stage 2.1 (Lemmas D.9, D.14; §5.2): the potential neurons and the tensor-power p-ODE, from the alignment the
simulation actually starts the stage with.

For each target direction j the potential neuron is the one with the largest p = (u_{<=r})_j^2 at T_1 (u_{<=r}
the unit projection on the target subspace; T_1 = tau_2, the end of Stage 1.2). Lemma D.9 puts that maximum at
about 2 log(m)/r (Lemma B.2's 2 log(2m)/r for n uniform points), an asymptotic value: at r = 10-20 and m = 160-250
it is 1.0-1.15 (quick) and 0.55-0.62 (paper), above what m uniform directions give. The exact law of the best of
m coordinates^2 of uniform unit vectors in r dimensions is the maximum of m Beta(1/2, (r - 1)/2) draws (Stage 1.2
keeps in-subspace directions close to their initial ones), whose median is 0.61 (quick) and 0.38 (paper).
From there Lemma D.14's p' = 2 (1 - p) sum_{j>=2} 2j sigma_hat_{2j}^2 p^j gives the time to align.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from twolayer.claims.checks import Check, at_most
from twolayer.claims.falsifiers import Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.multiindex2026._shared import ABS, ETA, PAPER, SCALE, base_config, gd, r_of, synthetic_run
from twolayer.observe.multi_index import transition_times
from twolayer.plotting import panels
from twolayer.theory import multi_index as th

SIZES = {"quick": dict(time=40.0, points=80, seeds=2), "paper": dict(time=60.0, points=100, seeds=2)}
METRICS = ["neuron_weights", "loss_order", "loss_order_4plus", "energies"]
ALIGNED = 0.9  # the p-ODE is compared up to p = 0.9
QUANTILES = (0.1, 0.9)


def stage21_configs(scale: str) -> dict[str, dict]:
    s, a = SCALE[scale], SIZES[scale]
    cfg = base_config(s, seeds=a["seeds"], points=a["points"], metrics=METRICS)
    return {"population": {**cfg, "train": gd(s["lr"], a["time"])}}


stage21 = register(Experiment(
    id=f"{PAPER}/stage21",
    title="Stage 2.1: the best starting alignment and the tensor-power p-ODE from it",
    figure="Stage 2.1 (§5.2, Lemmas D.9, D.14)",
    description=(
        "Population GD at the Figure-1 sizes (quick d = 50, r = 10, m = 160; paper d = 100, r = 20, m = 250; "
        "lambda = 0, 2 seeds) storing the neuron weights. At T_1 = tau_2 the best in-subspace alignment p_0 of each "
        "direction is reported beside the law of the best of m uniform directions and 2 log(m)/r; each direction's "
        "best neuron's p(t) is compared with Lemma D.14's p-ODE started at its own p_0 (a finding)."),
    configs=stage21_configs,
))


def alignments(run, s: int) -> tuple[np.ndarray, int, np.ndarray]:
    """(t, index of T_1 = tau_2, p [T, m, r] = (u_{<=r})_j^2) of seed ``s``."""
    tr = run.trajectory
    t, rr = tr["t"], r_of(run)
    tau2 = transition_times(tr, ETA)[s]["tau_order2"]
    i1 = int(np.flatnonzero(t == tau2)[0]) if tau2 is not None else -1
    sub = np.asarray(tr["neuron_weights"][s])[..., :rr]
    return t, i1, sub**2 / np.maximum(np.sum(sub**2, -1, keepdims=True), 1e-300)


def best_start(run) -> list[np.ndarray]:
    """Per seed the best p_0 of each direction at T_1 [r]."""
    out = []
    for s in range(np.asarray(run.trajectory["neuron_weights"]).shape[0]):
        t, i1, P = alignments(run, s)
        out.append(P[i1].max(0) if i1 >= 0 else np.full(r_of(run), np.nan))
    return out


def order_statistic(r: int, m: int, q: float) -> float:
    """The q-quantile of the largest of m independent Beta(1/2, (r - 1)/2) draws (u_j^2 of a uniform unit vector)."""
    return float(stats.beta(0.5, (r - 1) / 2).ppf(q ** (1.0 / m)))


def pode_ratios(run) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per seed and direction: (time for that direction's best neuron at T_1 to reach p = 0.9, after T_1) over the
    p-ODE's time from its p_0 (NaN when it never does within the run), and the grid's part of that ratio: the
    first stored time with p >= 0.9 lies up to one grid interval after the crossing, (t_k - t_{k-1}) / T_ode."""
    h = th.HermiteSums.of(ABS, K=1000)
    out, grid = [], []
    for s in range(np.asarray(run.trajectory["neuron_weights"]).shape[0]):
        t, i1, P = alignments(run, s)
        ratios, steps = [], []
        for j in range(P.shape[-1]):
            best = int(np.argmax(P[i1, :, j]))
            p = P[:, best, j]
            hit = np.flatnonzero((p >= ALIGNED) & (t >= t[i1]))
            p0 = float(p[i1])
            if not hit.size or p0 >= ALIGNED:
                ratios.append(np.nan)
                steps.append(np.nan)
                continue
            T = th.alignment_time(p0, h, ALIGNED)
            ratios.append((t[hit[0]] - t[i1]) / T)
            steps.append((t[hit[0]] - t[max(hit[0] - 1, i1)]) / T)
        out.append(np.asarray(ratios))
        grid.append(np.asarray(steps))
    return out, grid


def lemma_d14_error(r: int) -> float:
    """Lemma D.14's relative error in the p-ODE's rate with the constant 1: |omega|^5 / r, omega = log log log r
    (-0.18 at r = 10, 0.093 at r = 20: 2e-5 and 3.5e-7)."""
    return abs(float(np.log(np.log(np.log(r))))) ** 5 / r


def _synthetic_alignment(configs, *, p0: float | None = None, follow_ode: bool = False) -> dict:
    """Neuron weights whose best alignment per direction at T_1 is the order statistic's median (or ``p0``), and
    whose best neurons follow the p-ODE from there (``follow_ode``) or stay put."""
    from twolayer.papers.multiindex2026._shared import synthetic_figure1

    cfg = configs["population"]
    S, m, d, r = cfg["seeds"], cfg["model"]["width"], cfg["data"]["d"], cfg["data"]["r"]
    tr = synthetic_figure1(cfg, points=400)
    t = tr["t"]
    tau2 = transition_times(tr, ETA)[0]["tau_order2"]
    start = order_statistic(r, m, 0.5) if p0 is None else p0
    h = th.HermiteSums.of(ABS, K=1000)
    after = t >= tau2
    p = np.full(len(t), start)
    if follow_ode:
        p[after] = th.alignment_ode(t[after] - tau2, start, h)
    rng = np.random.default_rng(0)
    W = rng.normal(size=(S, len(t), m, d)) * 0.3 / np.sqrt(d)
    W[..., :r] = 0.0  # the other neurons outside the subspace (their p is 0)
    for j in range(r):  # neuron j is direction j's best: weight sqrt(p) on e_j, the rest spread over the subspace
        rest = np.sqrt((1 - p) / (r - 1))
        vec = np.tile(rest[:, None], (1, r))
        vec[:, j] = np.sqrt(p)
        W[:, :, j, :r] = vec[None]
        W[:, :, j, r:] = 0.0
    tr["neuron_weights"] = W
    return {"population": synthetic_run(cfg, "population", tr)}


@stage21.claim("p-ode-from-start",
               "Lemma D.14 / §5.2: a potential neuron's alignment follows p' = 2 (1 - p) sum_{j>=2} 2j "
               "sigma_hat_{2j}^2 p^j from its value at T_1: for every direction the best neuron at T_1 reaches p = "
               "0.9 in the time the p-ODE takes from its measured p_0, within the grid's bracket of the crossing and "
               "Lemma D.14's error term, every seed",
               kind="finding",
               falsifiers=[Synthetic("follows-the-p-ode", lambda c: _synthetic_alignment(c, follow_ode=True),
                                     "the best neurons follow the p-ODE from the order statistic's median")],
               tolerance_source="derived: the crossing is read on the stored grid, so the measured time is up to one "
                                "grid interval (t_k - t_{k-1}) after it (per direction, 0.06-0.2 of T_ode here); Lemma "
                                "D.14's error term '+- O(omega^5 / r)' in the rate with the constant 1, omega = log log "
                                "log r, is 2e-5 (r = 10) and 3.5e-7 (r = 20), in place of the project's 25 %",
               explanation=(
                   "The best neurons align 1.25-2.1x slower than the p-ODE from their own start at r = 10 (quick, "
                   "m = 160: p_0 = 0.48-0.86) and 1.2-1.6x slower at r = 20 (paper, m = 250: p_0 median 0.41, against "
                   "Lemma D.9's 2 log(m)/r = 0.55 and B.2's 2 log(2m)/r = 0.62; the best of m uniform directions has "
                   "median 0.38). The p-ODE keeps only the target's order-4 tensor; the dense neurons "
                   "carry almost all the mass alpha ~ r spread over the subspace, and their own T_4 contracts to "
                   "T_4[v^4] ~ alpha E<u, v>^4 = 3 alpha/(r(r + 2)) ~ 3/(r + 2) = 0.25 against the target's T*_4[v^4] "
                   "~ p^2 ~ 0.5 (r = 10): the driving residual T*_4 - T_4 is about half the p-ODE's, a correction O(1/r) with "
                   "the constant 3 that Lemma D.14's '+- O(omega^5/r)' hides and that is not small at r = 10-20."))
def _claim_pode(r: Results) -> Check:
    run = r["population"]
    ratios, grid = pode_ratios(run)
    flat = np.concatenate(ratios)
    rr, m = r_of(run), int(run.config["model"]["width"])
    excess = np.abs(flat - 1.0) - np.concatenate(grid)  # beyond the grid's bracket
    lo, mid, hi = (order_statistic(rr, m, q) for q in (QUANTILES[0], 0.5, QUANTILES[1]))
    starts = best_start(run)
    return at_most(excess.tolist(), lemma_d14_error(rr), details=(
        "|ratio - 1| less the grid's part, per direction, against Lemma D.14's |omega|^5/r; "
        "time to p = 0.9 over the p-ODE's, per direction: "
        + "; ".join(f"seed {s}: {', '.join(f'{x:.2f}' for x in v)}" for s, v in enumerate(ratios))
        + f". The starts p_0 at T_1: {'; '.join(f'{p.min():.3f}-{p.max():.3f} (median {np.median(p):.3f})' for p in starts)}"
        f"; the best of m = {m} uniform directions in r = {rr}: median {mid:.3f}, 10-90 % [{lo:.3f}, {hi:.3f}]; Lemma "
        f"D.9's 2 log(m)/r = {2 * np.log(m) / rr:.3f} and Lemma B.2's 2 log(2m)/r = {2 * np.log(2 * m) / rr:.3f} (its upper "
        f"bound (2 log(2m) + 2 log(2/delta))/r = {(2 * np.log(2 * m) + 2 * np.log(40)) / rr:.3f} at delta = 0.05, near or "
        "above 1, says nothing at this size)"))


@stage21.plot("p-ode", "Each direction's best neuron at T_1: p(t) = (u_{<=r})_j^2 (solid, seed 0) against the p-ODE "
                       "from its own p_0 (dashed); the dotted line is 0.9.")
def _plot(r: Results):
    run = r["population"]
    fig, (ax,) = panels(1, width=4.4, height=3.2)
    t, i1, P = alignments(run, 0)
    if i1 < 0:
        return fig
    h = th.HermiteSums.of(ABS, K=1000)
    for j in range(P.shape[-1]):
        best = int(np.argmax(P[i1, :, j]))
        line, = ax.plot(t[i1:], P[i1:, best, j], linewidth=0.8)
        ax.plot(t[i1:], th.alignment_ode(t[i1:] - t[i1], float(P[i1, best, j]), h), "--", color=line.get_color(),
                linewidth=0.8)
    ax.axhline(ALIGNED, color="gray", linestyle=":")
    ax.set(xlabel="t", ylabel="p = (u_{<=r})_j^2", title="Stage 2.1: best neurons vs the p-ODE")
    return fig
