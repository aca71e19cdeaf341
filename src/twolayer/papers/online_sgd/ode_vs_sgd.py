"""The SGD order parameters follow the ODE, with a deviation that shrinks like 1/sqrt(d) (Goldt et al. 2019,
Sec. 3 and Fig. 2; Saad & Solla 1995), for an erf student with K = M = 2 and an over-parameterized relu student
(K = 3 > M = 2)."""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import Check, all_of, at_most, within
from twolayer.claims.falsifiers import Counterfactual, Premise, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.online_sgd._shared import PAPER, SCALE, config, deviation, synthetic_from_ode

CASES = {"erf": {"activation": "erf", "K": 2, "M": 2, "eta": 1.0},
         "relu": {"activation": "relu", "K": 3, "M": 2, "eta": 0.5}}
# The seed spread at quick scale (benchmarks/spreads/issue29/ode_vs_sgd_spread.py: 10 batches of 16 independent seeds,
# 100-259, the same configs otherwise). tracks-ode: deviation <= C / sqrt(d) for every seed, C = mean + 3 sd of the
# largest sqrt(d) max |SGD - ODE| over a batch's seeds at d = 400 (2.26 +- 0.58 erf, 2.51 +- 0.65 relu).
# deviation-exponent: the fitted exponent within 3 sd of the theory's -1/2 (sd 0.133 erf, 0.085 relu; means -0.55
# and -0.57).
TRACK_CONSTANT = {"erf": 3.99, "relu": 4.45}
SLOPE_3SD = {"erf": 0.399, "relu": 0.255}
SLOPE = -0.5


# seeds per run: at quick scale 16, not SCALE's 4: with 4 the fitted exponent's seed spread (sd 0.22 over d = 100..400,
# benchmarks/spreads/issue29/ode_vs_sgd_spread.py) cannot tell -1/2 from 0 at 3 sd; the 16 seeds run batched
SEEDS = {"quick": 16, "paper": SCALE["paper"]["seeds"]}


def ode_configs(scale: str, **changes) -> dict[str, dict]:
    s = SCALE[scale]
    out = {}
    for case, p in CASES.items():
        for d in s["dims"]:
            out[f"{case}-d{d}"] = config(d, K=p["K"], M=p["M"], eta=p["eta"], activation=p["activation"],
                                         time=s["time"], seeds=SEEDS[scale], points=s["points"], **changes)
    return out


def _with(change):
    """A counterfactual of the quick-scale configs: every config changed by ``change(cfg) -> cfg``."""
    return lambda configs: {k: change(dict(v)) for k, v in configs.items()}


def _anisotropic(cfg):
    return {**cfg, "data": {**cfg["data"], "spectrum_decay": 1.5}}


def _multi_pass(cfg):
    d = cfg["data"]["d"]
    return {**cfg, "data": {**cfg["data"], "n": d // 2}, "train": {**cfg["train"], "method": "sgd"}}


ISOTROPIC = Premise("anisotropic-inputs", _with(_anisotropic),
                    "inputs with a power-law covariance (eigenvalues ~ i^-1.5, trace d): the ODE's Gaussian "
                    "integrals assume x ~ N(0, I_d)",
                    source="Goldt et al. 2019, Sec. 2: 'inputs x drawn i.i.d. from the standard normal distribution'")
ONE_PASS = Premise("multi-pass-sgd", _with(_multi_pass),
                   "multi-pass SGD (method sgd, batch 1) on a fixed sample of n = d/2 points instead of fresh samples",
                   source="Goldt et al. 2019, Sec. 2: 'online learning, where each sample is used only once'")

experiment = register(Experiment(
    id=f"{PAPER}/ode-vs-sgd",
    title="Online SGD follows the order-parameter ODE; deviation ~ 1/sqrt(d)",
    figure="Goldt et al. 2019, Fig. 2 (theory and simulation overlaid)",
    description=(
        "Online SGD (one fresh Gaussian sample per step, lr = eta/d in twolayer's parametrization) of an erf "
        "student (K = M = 2, eta = 1, both layers) and an over-parameterized relu student (K = 3, M = 2, eta = 0.5) "
        "against the ODE started from each seed's initial order parameters, at d = 100, 200, 400 (quick) or "
        "500..4000 (paper). The largest |SGD - ODE| over time and over the entries of Q, R and v shrinks like "
        "1/sqrt(d)."),
    configs=ode_configs,
))


def deviations(r: Results, case: str) -> tuple[np.ndarray, np.ndarray]:
    """(dims [D], deviations [D, S]) of one case."""
    keys = sorted((k for k in r.runs if k.startswith(case + "-")), key=lambda k: int(k.rsplit("-d", 1)[1]))
    dims = np.array([int(k.rsplit("-d", 1)[1]) for k in keys])
    return dims, np.stack([r.memo(f"dev-{k}", lambda k=k: deviation(r[k])) for k in keys])


def fitted_exponent(dims, devs, boot: int = 400) -> tuple[float, float, float]:
    """The least-squares slope of log(mean over seeds of the deviation) against log d, and its 5-95 % interval
    under resampling the seeds (bootstrap, ``boot`` draws)."""
    x = np.log(dims)
    slope = float(np.polyfit(x, np.log(devs.mean(axis=1)), 1)[0])
    rng = np.random.default_rng(0)
    S = devs.shape[1]
    draws = [np.polyfit(x, np.log(devs[:, rng.integers(0, S, S)].mean(axis=1)), 1)[0] for _ in range(boot)]
    return slope, float(np.quantile(draws, 0.05)), float(np.quantile(draws, 0.95))


def synthetic(shift_of_d):
    """Runs that follow the ODE except for an offset ``shift_of_d(d)`` on R."""
    return lambda configs: {k: synthetic_from_ode(cfg, k, shift=shift_of_d(cfg["data"]["d"]))
                            for k, cfg in configs.items()}


@experiment.claim("tracks-ode",
                  "At the largest d, every seed's SGD order parameters (Q, R, v) stay within C/sqrt(d) of the ODE "
                  "started at its initial state, for the erf (K = M = 2) and the relu (K = 3 > M = 2) student",
                  kind="prediction",
                  tolerance_source="spread: O(1) overlaps of d coordinates fluctuate by O(1/sqrt d) (Goldt et al. "
                                   "2019, Sec. 3), and C is mean + 3 sd of the largest sqrt(d) max |SGD - ODE| over "
                                   "16 seeds at d = 400, over 10 batches of independent seeds 100-259 (quick; "
                                   "benchmarks/spreads/issue29/ode_vs_sgd_spread.py): 2.26 +- 0.58 erf, 2.51 +- 0.65 "
                                   "relu, so C = 3.99 and 4.45 (per seed 1.18 +- 0.47 and 1.54 +- 0.51); in place of "
                                   "the exploratory 3, which 1 seed in 160 exceeded. Used at paper scale too (8 seeds, "
                                   "d = 4000: the reference's largest is 1.41 erf, 2.24 relu)",
                  falsifiers=[Synthetic("offset-0.3", synthetic(lambda d: 0.3), "R leaves the ODE by 0.3")],
                  premises=[ISOTROPIC, ONE_PASS])
def _tracks(r: Results) -> Check:
    checks = []
    for case in CASES:
        dims, devs = deviations(r, case)
        checks.append(at_most(devs[-1], TRACK_CONSTANT[case] / np.sqrt(dims[-1]),
                              details=f"{case}: max |SGD - ODE| at d = {dims[-1]} per seed"))
    return all_of(*checks)


@experiment.claim("deviation-exponent",
                  "The deviation |SGD - ODE| (mean over seeds) falls like d^p with p = -1/2: the fitted exponent "
                  "lies within 3 sd of the seed spread of -1/2 for both students (5-95 % seed-bootstrap interval in "
                  "details)",
                  kind="prediction",
                  tolerance_source="spread: the fitted exponent over 10 batches of 16 independent seeds (100-259, "
                                   "quick, d = 100..400; benchmarks/spreads/issue29/ode_vs_sgd_spread.py) is -0.551 "
                                   "+- 0.133 (erf) and -0.570 +- 0.085 (relu): -1/2 +- 3 sd, [-0.899, -0.101] and "
                                   "[-0.755, -0.245], in place of the exploratory [-0.85, -0.15]; with the former 4 "
                                   "seeds the sd was 0.22 (erf) and 3 sd could not tell -1/2 from 0, so quick runs 16. "
                                   "Used at paper scale too (d = 500..4000, 8 seeds; the reference's -0.585 and -0.524)",
                  falsifiers=[Synthetic("constant-offset", synthetic(lambda d: 0.2), "a d-independent offset of 0.2")],
                  premises=[ISOTROPIC, ONE_PASS])
def _exponent(r: Results) -> Check:
    checks = []
    for case in CASES:
        dims, devs = deviations(r, case)
        slope, lo, hi = fitted_exponent(dims, devs)
        checks.append(within(slope, SLOPE - SLOPE_3SD[case], SLOPE + SLOPE_3SD[case], details=f"{case}: exponent {slope:.3f}, seed-bootstrap 5-95 % "
                                                          f"[{lo:.3f}, {hi:.3f}] over d = {[int(x) for x in dims]}"))
    return all_of(*checks)


@experiment.plot("order-parameters", "Q, R and v of online SGD (thin: seeds) against the ODE (dashed), erf K = M = 2 "
                                     "at the largest d; Goldt time k/d")
def _figure(r: Results):
    import matplotlib.pyplot as plt

    from twolayer.papers.online_sgd._shared import eta_of, ode_of

    key = max((k for k in r.runs if k.startswith("erf-")), key=lambda k: int(k.rsplit("-d", 1)[1]))
    run = r[key]
    t = np.asarray(run.trajectory["t"]) / eta_of(run)
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    names = (("R", "R_in (student-teacher)"), ("Q", "Q_ik (student-student)"), ("v", "v_i (second layer)"))
    for s in range(np.asarray(run.seeded("Q")).shape[0]):
        sol = ode_of(run, s)
        for ax, (name, label) in zip(axes, names):
            sim = np.asarray(run.seeded(name))[s].reshape(len(t), -1)
            th = getattr(sol, name).reshape(len(t), -1)
            for j in range(sim.shape[1]):
                line, = ax.plot(t, sim[:, j], lw=0.8, alpha=0.7)
                ax.plot(t, th[:, j], "--", color=line.get_color(), lw=1.2)
            ax.set_title(label)
            ax.set_xlabel("t = samples / d")
    fig.suptitle(f"online SGD (solid) vs ODE (dashed), d = {run.config['data']['d']}")
    fig.tight_layout()
    return fig
