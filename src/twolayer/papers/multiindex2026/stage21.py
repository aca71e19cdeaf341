"""Stage 2.1 (Lemmas D.9, D.14, D.15; §5.2): the potential neurons, the tensor-power p-ODE from the alignment the
simulation actually starts the stage with, and the dense neurons' fourth moments.

For each target direction j the potential neuron is the one with the largest p = (u_{<=r})_j^2 at T_1 (u_{<=r}
the unit projection on the target subspace; T_1 = tau_2, the end of Stage 1.2). Lemma D.9 puts that maximum at
about 2 log(2m)/r (Lemma B.2's value for n uniform points), an asymptotic value: at r = 10-20 and m = 160-250 it is
1.15 (quick) and 0.62 (paper), above what m uniform directions give. The exact law of the best of m coordinates^2 of
uniform unit vectors in r dimensions is the maximum of m Beta(1/2, (r - 1)/2) draws (``best_of_m_cdf``), whose median
is 0.61 (quick) and 0.38 (paper). Lemma D.9's proof carries it to T_1 through Lemma C.6 (in-subspace directions
move by a factor 1 +- O(log d / r) in Stage 1); measured, the best alignments move up by ~8 % (the orders >= 4
already turn directions in Stage 1, orders 0 and 2 being isotropic inside the subspace), so the law is tested
between itself and itself carried by the p-ODE over [0, T_1] (``start_band_distances``). From there Lemma D.14's
p' = 2 (1 - p) sum_{j>=2} 2j sigma_hat_{2j}^2 p^j gives the time to align, and Lemma D.15 balances the dense
neurons' fourth moments E~_{S_dense} ||w||^2 w_bar_i^4 across directions (``dense_fourth_moments``).
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.integrate import solve_ivp

from twolayer.claims.checks import Check, all_of, at_least, at_most
from twolayer.claims.falsifiers import Counterfactual, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.multiindex2026 import premises as src
from twolayer.papers.multiindex2026._shared import (
    ABS, ETA, PAPER, SCALE, base_config, gd, r_of, synthetic_figure1, synthetic_run, variant,
)
from twolayer.papers.multiindex2026.balance import alternating
from twolayer.papers.multiindex2026.premises import premise
from twolayer.observe.multi_index import transition_times
from twolayer.plotting import panels
from twolayer.theory import multi_index as th

SIZES = {"quick": dict(time=40.0, points=80, seeds=2), "paper": dict(time=60.0, points=100, seeds=2)}
METRICS = ["neuron_weights", "loss_order", "loss_order_4plus", "energies"]
ALIGNED = 0.9  # the p-ODE is compared up to p = 0.9
QUANTILES = (0.1, 0.9)
KS_ALPHA = 0.05  # level of the start-law test, split over its two one-sided KS distances
FOUND = 0.99  # T_21: every direction has a neuron with w_bar_j^2 >= FOUND (as figure1 and direction-balance)
GROWN = 0.5  # a neuron counted as having left the dense set: some w_bar_j^2 >= GROWN at T_21


def stage21_configs(scale: str) -> dict[str, dict]:
    s, a = SCALE[scale], SIZES[scale]
    cfg = base_config(s, seeds=a["seeds"], points=a["points"], metrics=METRICS)
    return {"population": {**cfg, "train": gd(s["lr"], a["time"])}}


stage21 = register(Experiment(
    id=f"{PAPER}/stage21",
    title="Stage 2.1: the best starting alignment, the tensor-power p-ODE from it and the dense fourth moments",
    figure="Stage 2.1 (§5.2, Lemmas B.2, D.9, D.14, D.15)",
    description=(
        "Population GD at the Figure-1 sizes (quick d = 50, r = 10, m = 160; paper d = 100, r = 20, m = 250; "
        "lambda = 0, 2 seeds) storing the neuron weights. At T_1 = tau_2 the best in-subspace alignment p_0 of each "
        "direction is tested against the law of the best of m uniform directions (Lemmas D.9/B.2 at finite size), "
        "each direction's best neuron's p(t) is compared with Lemma D.14's p-ODE started at its own p_0 (a finding), "
        "and the other neurons' fourth moments E~ ||w||^2 w_bar_i^4 are compared across directions from T_1 to T_21 "
        "(Lemma D.15, a finding)."),
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


# -- Lemma D.9 / B.2: the law of the best start ------------------------------------------------------

def best_of_m_cdf(x, r: int, m: int) -> np.ndarray:
    """P(max of m Beta(1/2, (r - 1)/2) draws <= x): the law of the best (u_j)^2 of m uniform unit vectors in r
    dimensions (Lemma B.2's max_a (z_a)_i^2 for n = m points, exactly)."""
    return stats.beta(0.5, (r - 1) / 2).cdf(np.asarray(x, dtype=np.float64)) ** m


def pulled_back(p, T: float, h: th.HermiteSums) -> np.ndarray:
    """The starts q that the p-ODE p' = 2 (1 - p) sum_{j>=2} 2j sigma_hat_{2j}^2 p^j (Lemma D.14) carries to ``p`` in
    time ``T``: the flow run backwards, elementwise."""
    p = np.atleast_1d(np.asarray(p, dtype=np.float64))
    if T <= 0:
        return p.copy()
    sol = solve_ivp(lambda _, y: -th.alignment_rate(y, h), (0.0, float(T)), p, rtol=1e-10, atol=1e-14)
    return sol.y[:, -1]


def ks_below(u) -> float:
    """One-sided KS distance sup_x (G_n(x) - F(x)) of a sample whose values under the law F are ``u`` = F(x_k):
    how far the sample sits below (to the left of) F."""
    u = np.sort(np.asarray(u, dtype=np.float64))
    return float(np.max(np.arange(1, len(u) + 1) / len(u) - u))


def ks_above(u) -> float:
    """One-sided KS distance sup_x (F(x) - G_n(x)) of the sample with u = F(x_k): how far it sits above F."""
    u = np.sort(np.asarray(u, dtype=np.float64))
    return float(np.max(u - np.arange(len(u)) / len(u)))


def ks_critical(n: int, alpha: float = KS_ALPHA) -> float:
    """The one-sided KS distance exceeded with probability alpha/2 by n draws from the law (``stats.ksone``): the
    two one-sided tests of ``start_band_distances`` together have level alpha."""
    return float(stats.ksone.ppf(1.0 - alpha / 2, n))


def start_band_distances(p, T1, r: int, m: int, h: th.HermiteSums) -> tuple[float, float]:
    """(D_below, D_above) of the best alignments ``p`` [n] at the times ``T1`` [n]: D_below = ks_below(F(p)), F =
    ``best_of_m_cdf`` (p below the law of the best of m uniform directions: no drift), D_above = ks_above(F(q)), q
    = ``pulled_back(p, T1)`` (p above that law carried by the p-ODE over [0, T_1]: more drift than the orders >= 4
    can give)."""
    p, T1 = np.asarray(p, dtype=np.float64), np.broadcast_to(np.asarray(T1, dtype=np.float64), np.shape(p))
    q = np.empty_like(p)
    for T in np.unique(T1):
        q[T1 == T] = pulled_back(p[T1 == T], T, h)
    return ks_below(best_of_m_cdf(p, r, m)), ks_above(best_of_m_cdf(q, r, m))


def lemma_d9_band(r: int, m: int) -> tuple[float, float]:
    """Lemma D.9(a): 2 log(2m)/r (1 +- err_pot), err_pot = O(log r/log m) with the constant 1."""
    mid, err = 2 * np.log(2 * m) / r, np.log(r) / np.log(m)
    return float(mid * (1 - err)), float(mid * (1 + err))


def lemma_b2_bounds(r: int, n: int, delta: float = 0.05, C: float = 1.0) -> tuple[float, float]:
    """Lemma B.2's bounds on max_a (z_a)_i^2 for n uniform points of S^{r-1}, probability 1 - delta: (2 log(2n) -
    2 log(C sqrt(log n)) - 2 log log(1/delta))/r and (2 log(2n) + 2 log(2/delta))/r (C: 'a sufficiently large
    absolute constant', 1 here)."""
    lo = (2 * np.log(2 * n) - 2 * np.log(C * np.sqrt(np.log(n))) - 2 * np.log(np.log(1 / delta))) / r
    return float(lo), float((2 * np.log(2 * n) + 2 * np.log(2 / delta)) / r)


def start_law_inputs(run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over the seeds that reach T_1: (best p_0 at T_1, T_1, best p at t = 0), each [r x seeds]."""
    ps, ts, p0s = [], [], []
    for s in range(np.asarray(run.trajectory["neuron_weights"]).shape[0]):
        t, i1, P = alignments(run, s)
        if i1 < 0:
            continue
        ps.append(P[i1].max(0))
        ts.append(np.full(P.shape[-1], t[i1]))
        p0s.append(P[0].max(0))
    if not ps:
        return np.array([]), np.array([]), np.array([])
    return np.concatenate(ps), np.concatenate(ts), np.concatenate(p0s)


UNEQUAL_COEFFICIENTS = premise(Counterfactual(
    "unequal-coefficients",
    lambda c: {"population": variant(c["population"], seeds=2, time=20.0, points=60,
                                     data={"coefs": alternating(c["population"]["data"]["r"], 0.25)})},
    "f* = sum_j c_j sigma(x_j) with c_j alternating 1 and 1/4: T*_2 = diag(c) is no longer isotropic inside the "
    "subspace, so Stage 1.2 stretches each neuron's coordinates by their own factors and the best alignments at T_1 "
    "no longer follow the law of uniform directions (measured, quick: D_below 0.43 > 0.29; the best p_0 of the c = 1/4 "
    "directions fall to 0.22-0.54, those of c = 1 rise to 0.68-0.92)"), src.UNIT_COEFFICIENTS)
RELU = premise(Counterfactual(
    "relu-not-even",
    lambda c: {"population": variant(c["population"], seeds=2, time=20.0, points=60,
                                     model={"activation": "relu"})},
    "sigma = ReLU (not even: sigma_hat_1 = 1/2): the order-1 residual pushes every neuron along sum_j e_j during "
    "Stage 1"), src.EVEN, holds=True, why=(
    "sigma = ReLU, 2 seeds: measured, the claim still holds at quick size (T_1 = tau_2 = 12.4; D_below 0.001, "
    "D_above 2e-9 against 0.29; p_0 0.51-0.91, median 0.71, drift p_0(T_1)/max_v p_v(0) median 1.07, as with |x|): "
    "the push along sum_j e_j, common to every neuron, leaves the best coordinate of each direction where |x|'s "
    "dynamics puts it, so the law of the start does not tell an even activation from ReLU"))


@stage21.claim("best-start-law",
               "Lemmas D.9 / B.2 at finite size (the project's derived reading, not the paper's asymptotic value): "
               "Stage 1 keeps in-subspace directions (Lemma D.9's proof: (u_{<=r})_i^2(T_1) = (u_{<=r})_i^2(0) (1 +- "
               "O(log d / r))), so the best start p_0 = max_v (u_{<=r})_j^2 at T_1 = tau_2 is the best of m uniform "
               "directions in r dimensions (the max of m Beta(1/2, (r - 1)/2) draws, Lemma B.2's object at n = m), "
               "moved up by at most the tensor-power p-ODE over [0, T_1] (orders 0 and 2 act isotropically inside "
               "the subspace): the r x seeds values p_0 are neither below that law nor above the law carried by the "
               "p-ODE (two one-sided KS distances, level 0.05)",
               kind="prediction",
               falsifiers=[Synthetic("starts-below-the-law",
                                     lambda c: _synthetic_alignment(c, p0=order_statistic(
                                         c["population"]["data"]["r"], c["population"]["model"]["width"], 0.01)),
                                     "every direction's best start is the law's 1 % quantile"),
                           Synthetic("starts-above-the-p-ode",
                                     lambda c: _synthetic_alignment(c, p0=0.97),
                                     "every direction's best start is 0.97, beyond what the p-ODE reaches by T_1 "
                                     "from the law")],
               premises=[UNEQUAL_COEFFICIENTS, RELU],
               tolerance_source="derived: the one-sided Kolmogorov-Smirnov distance's 97.5 % quantile for n = r x "
                                "seeds draws (stats.ksone; 0.294 at n = 20, 0.210 at n = 40), each side at level "
                                "0.025; the r directions of a seed count as independent (Lemma B.1(c)(iv): no neuron "
                                "is the best of two directions), the band's ends from the p-ODE (no drift, all of "
                                "it)")
def _claim_start_law(r: Results) -> Check:
    run = r["population"]
    rr, m, d = r_of(run), int(run.config["model"]["width"]), int(run.config["data"]["d"])
    p, T1, p_init = start_law_inputs(run)
    if not p.size:
        return at_most([float("nan")], ks_critical(1), details="no seed reaches T_1 = tau_2")
    h = th.HermiteSums.of(ABS, K=1000)
    below, above = start_band_distances(p, T1, rr, m, h)
    d9_lo, d9_hi = lemma_d9_band(rr, m)
    b2_lo, b2_hi = lemma_b2_bounds(rr, m)
    exact = stats.kstest(best_of_m_cdf(p, rr, m), "uniform").pvalue
    in_d9 = int(np.sum((p >= d9_lo) & (p <= d9_hi)))
    return at_most([below, above], ks_critical(p.size), details=(
        f"[D_below, D_above] over n = {p.size} starts at T_1 = {', '.join(f'{x:.3g}' for x in np.unique(T1))}: "
        f"p_0 {p.min():.3f}-{p.max():.3f} (median {np.median(p):.3f}); the law of the best of m = {m} uniform "
        f"directions in r = {rr}: median {order_statistic(rr, m, 0.5):.3f}, 5-95 % ["
        f"{order_statistic(rr, m, 0.05):.3f}, {order_statistic(rr, m, 0.95):.3f}]; the drift p_0(T_1) / max_v p_v(0) "
        f"per direction {np.min(p / p_init):.3f}-{np.max(p / p_init):.3f} (median {np.median(p / p_init):.3f}; "
        f"Lemma C.6's log d / r = {np.log(d) / rr:.3f} with the constant 1); the law itself, undrifted, is rejected "
        f"by a two-sided KS test (p-value {exact:.2g}). "
        f"Lemma D.9's 2 log(2m)/r (1 +- log r/log m) = [{d9_lo:.3f}, {d9_hi:.3f}] (constant 1) holds {in_d9} of "
        f"{p.size} p_0; Lemma B.2 at delta = 0.05: lower bound {b2_lo:.3f} with C = 1 (C is an unknown 'sufficiently "
        f"large' constant; a larger C only lowers it) holds for {int(np.sum(p >= b2_lo))} of {p.size} p_0 (for "
        f"{int(np.sum(p_init >= b2_lo))} of the maxima at t = 0, the points it is about), upper bound {b2_hi:.3f} (>= "
        f"{np.max(p):.2f}, says little); B.2's premise r >~ log^2 n fails here: log^2 m = {np.log(m) ** 2:.1f} > r = "
        f"{rr}"))


# -- Lemma D.15: the dense neurons' fourth moments ---------------------------------------------------------

def lemma_omega(r: int) -> float:
    """omega = log log log r of Stage 2 (negative for r < e^e = 15.2: -0.18 at r = 10, 0.093 at r = 20)."""
    return float(np.log(np.log(np.log(r))))


def lemma_d15_error(r: int, m: int) -> float:
    """Lemma D.15's relative error in the balance of the fourth moments with the constant 1: |omega|^6 / log m
    (7.0e-6 at r = 10, m = 160; 1.2e-7 at r = 20, m = 250)."""
    return abs(lemma_omega(r)) ** 6 / float(np.log(m))


def lemma_d15_floor(r: int) -> float:
    """Lemma D.15's lower bound 1/(omega r) on E~_{S_dense} ||w||^2 w_bar_i^4 (negative, so vacuous, for r < 16)."""
    return 1.0 / (lemma_omega(r) * r)


def t21_index(W, r: int, found: float = FOUND) -> int:
    """Index of T_21, the first stored time every direction j <= r has a neuron with w_bar_j^2 >= ``found``
    (w_bar = w/||w||; W [T, m, d]), -1 when it never does."""
    W = np.asarray(W, dtype=np.float64)
    wb2 = W[..., :r] ** 2 / np.maximum(np.sum(W**2, -1, keepdims=True), 1e-300)
    hit = np.flatnonzero(np.all(wb2.max(axis=-2) >= found, axis=-1))
    return int(hit[0]) if hit.size else -1


def dense_set(P_T1) -> np.ndarray:
    """[m] bool: S_dense, the neurons that are no direction's best at T_1 (P_T1 [m, r] = (u_{<=r})_j^2 at T_1): the
    paper's S_pot,i = {v: (u_{<=r})_i^2 >= (1 - omega^{-0.01}) max_u (u_{<=r})_i^2} in the limit omega -> inf, its
    threshold being >= 1 (r = 20) or undefined (r = 10, omega < 0) at these sizes."""
    P_T1 = np.asarray(P_T1)
    dense = np.ones(P_T1.shape[0], bool)
    dense[np.argmax(P_T1, axis=0)] = False
    return dense


def dense_fourth_moments(W, dense, r: int) -> np.ndarray:
    """[T, r]: E~_{S_dense} ||w||^2 w_bar_i^4 = (1/|S_dense|) sum_{v in S_dense} ||v||^2 (v_i/||v||)^4 (Lemma D.15;
    E~_{S_dense} is the mean over S_dense, as in the proof of Lemma D.13); W [T, m, d], ``dense`` [m] bool."""
    W = np.asarray(W, dtype=np.float64)[:, np.asarray(dense)]
    n2 = np.sum(W**2, -1)
    return np.mean(W[..., :r] ** 4 / np.maximum(n2, 1e-300)[..., None], axis=1)


def balance_ratio(M4) -> np.ndarray:
    """max_i / min_i of the fourth moments M4 [..., r] (1 when balanced, Lemma D.15's ratio at its worst pair)."""
    M4 = np.asarray(M4, dtype=np.float64)
    return np.max(M4, -1) / np.min(M4, -1)


def fourth_moment_balance(run) -> list[dict]:
    """Per seed on [T_1, T_21] (to the end when T_21 is never reached): the ratio max_i/min_i of E~_{S_dense} ||w||^2
    w_bar_i^4 at t = 0 (the same neurons at initialization), at T_1, at its largest and at the end of the window;
    the smallest moment; the spread max_i - min_i of log(M4_i(end) / M4_i(T_1)) (the drift the proof bounds by
    O(omega^5/r) per unit time); |S_dense|; and how many of S_dense have some w_bar_j^2 >= 1/2 at the end."""
    out = []
    W_all = np.asarray(run.trajectory["neuron_weights"])
    rr = r_of(run)
    for s in range(W_all.shape[0]):
        t, i1, P = alignments(run, s)
        if i1 < 0:
            continue
        W = W_all[s]
        k21 = t21_index(W, rr)
        end = k21 if k21 >= i1 else len(t) - 1
        dense = dense_set(P[i1])
        M4 = dense_fourth_moments(W[i1:end + 1], dense, rr)
        ratio = balance_ratio(M4)
        drift = np.log(M4[-1] / M4[0])
        wb2 = W[end][dense, :rr] ** 2 / np.sum(W[end][dense] ** 2, -1, keepdims=True)
        out.append(dict(t1=float(t[i1]), t21=float(t[k21]) if k21 >= 0 else float("nan"), t_end=float(t[end]),
                        ratio_t0=float(balance_ratio(dense_fourth_moments(W[:1], dense, rr))[0]),
                        ratio_t1=float(ratio[0]), ratio_max=float(ratio.max()), ratio_end=float(ratio[-1]),
                        low=float(M4.min()), drift=float(drift.max() - drift.min()), dense=int(dense.sum()),
                        grown=int(np.sum(wb2.max(-1) >= GROWN))))
    return out


def _synthetic_balanced_dense(configs) -> dict:
    """``_synthetic_alignment`` (best neurons following the p-ODE from the order statistic's median) with the other
    neurons dense and fixed inside the subspace, in whole cyclic orbits of their coordinates (the rest all-equal), so
    every E~_{S_dense} ||w||^2 w_bar_i^4 is the same."""
    runs = _synthetic_alignment(configs, follow_ode=True)
    tr = dict(runs["population"].trajectory)
    cfg = configs["population"]
    r, m = cfg["data"]["r"], cfg["model"]["width"]
    rng = np.random.default_rng(1)
    W = np.array(tr["neuron_weights"])
    others = m - r
    orbits = others // r
    base = 1.0 + 0.5 * rng.uniform(size=(orbits, r))  # every coordinate^2 below the best neurons' p
    dense = np.concatenate([np.roll(base, k, axis=1) for k in range(r)] + [np.ones((others - orbits * r, r))])
    dense = dense / np.linalg.norm(dense, axis=1, keepdims=True) * np.sqrt(r)
    W[:, :, r:, :] = 0.0
    W[:, :, r:, :r] = dense[None, None]
    tr["neuron_weights"] = W
    return {"population": synthetic_run(cfg, "population", tr)}


@stage21.claim("dense-fourth-moments-balanced",
               "Lemma D.15: for T_1 <= t <= T_21, E~_{S_dense} ||w||^2 w_bar_i^4 / E~_{S_dense} ||w||^2 w_bar_j^4 = "
               "1 +- O(omega^6 / log m) and E~_{S_dense} ||w||^2 w_bar_i^4 >= 1/(omega r), omega = log log log r (the "
               "constants 1), for every pair of directions, every seed; S_dense = the neurons that are no direction's "
               "best at T_1 (the paper's threshold 1 - omega^{-0.01} is >= 1 or undefined at r = 10-20: its limit), "
               "T_21 = the first time every direction has a neuron with w_bar_j^2 >= 0.99",
               kind="finding",
               falsifiers=[Synthetic("balanced-dense-neurons", _synthetic_balanced_dense,
                                     "the dense neurons sit still in whole cyclic orbits of their coordinates: every "
                                     "fourth moment is the same")],
               tolerance_source="paper: Lemma D.15, '= 1 +- O(omega^6/log m)' and '>= 1/(omega r)' with the constants "
                                "1: |omega|^6/log m = 7.0e-6 (r = 10, m = 160) and 1.2e-7 (r = 20, m = 250); "
                                "1/(omega r) "
                                "= -0.55 (r = 10, omega < 0: vacuous) and 0.54 (r = 20)",
               explanation=(
                   "Both parts fail by orders of magnitude at r = 10-20, and not through the drift the proof bounds "
                   "alone. The ratio max_i/min_i is 1.36 (quick, |S_dense| = 150) and 1.46-1.47 (paper, 230) already"
                   " at T_1: finite-m sampling of a fourth moment, whose relative spread per direction is ~sqrt(E "
                   "z^8/(E z^4)^2 - 1)/sqrt(|S_dense|) ~ 2.3-2.7/sqrt(|S_dense|) ~ 0.2, inherited from the "
                   "initialization (1.8-2.4 at t = 0; Stage 1.2's order-2 term halves it). It then grows to 1.5-2.9 "
                   "(quick) and 5.2-6.0 (paper) by T_21 = 18-22 / 32: the proof's own rate d/dt log E~ w_bar_i^4 = "
                   "16 sigma_hat_4^2 E~ w_bar_i^6/E~ w_bar_i^4 +- O(omega^5/r) has a first term ~16 sigma_hat_4^2 "
                   "5/(r + 4) = 0.15 (r = 10) and 0.088 (r = 20), which over T_21 - T_1 = 15-29 moves the log "
                   "moments by O(1), and their spread across directions (0.37-0.87 quick, 1.66-1.69 paper) is the "
                   "ratio's growth. Behind it the dense neurons do not stay dense (Lemma D.2(2)): at T_21, 87-102 of"
                   " the 150 (quick) and 102-120 of the 230 (paper) have some w_bar_j^2 >= 1/2, because the best "
                   "start (median 0.71 / 0.41) is only ~2x a typical neuron's largest coordinate^2 (0.36 / 0.23), so"
                   " the tensor-power dynamics aligns a large share of the neurons, not one per direction. The lower"
                   " bound is vacuous at r = 10 (omega < 0); at r = 20 the smallest moment is 0.056-0.061 against "
                   "1/(omega r) = 0.54: E~ ||w||^2 w_bar_i^4 ~ alpha 3/(r(r + 2)) ~ 2.2/(r + 2) is O(1/r) with a "
                   "constant that exceeds 1/(omega r) only once omega >~ 0.46, r >~ 150."))
def _claim_dense_balance(r: Results) -> Check:
    run = r["population"]
    rr, m = r_of(run), int(run.config["model"]["width"])
    seeds = fourth_moment_balance(run)
    if not seeds:
        return at_most([float("nan")], lemma_d15_error(rr, m), details="no seed reaches T_1 = tau_2")
    lines = [f"seed {s}: T_1 {x['t1']:.3g}, T_21 {x['t21']:.3g}, |S_dense| {x['dense']}, ratio {x['ratio_t0']:.3f} "
             f"at t = 0, {x['ratio_t1']:.3f} at T_1, {x['ratio_max']:.3f} at most, {x['ratio_end']:.3f} at "
             f"{x['t_end']:.3g}; smallest moment {x['low']:.4f}; drift spread of log moments {x['drift']:.3f}; "
             f"{x['grown']} of S_dense have some w_bar_j^2 >= {GROWN} at the end" for s, x in enumerate(seeds)]
    return all_of(
        at_most([x["ratio_max"] - 1 for x in seeds], lemma_d15_error(rr, m)),
        at_least([x["low"] for x in seeds], lemma_d15_floor(rr)),
        details=(f"[max_t ratio - 1 per seed, smallest E~_{{S_dense}} ||w||^2 w_bar_i^4 per seed] against Lemma "
                 f"D.15's |omega|^6/log m = {lemma_d15_error(rr, m):.2g} and 1/(omega r) = {lemma_d15_floor(rr):.3g}; "
                 + "; ".join(lines)))


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
