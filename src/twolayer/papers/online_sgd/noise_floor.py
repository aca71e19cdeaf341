"""The asymptotic generalization error with label noise: the eta^2 term keeps SGD at a floor proportional to
eta sigma^2 at small eta (Goldt et al. 2019, Sec. 4, 'the asymptotic error ... scales as eta sigma^2'), for erf
and relu students. K = M = 1, both layers, started at the teacher, so that only the floor is measured."""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import Check, all_of, at_most, within
from twolayer.claims.falsifiers import Premise, Synthetic
from twolayer.claims.registry import Experiment, Results, register
from twolayer.claims.falsifiers import SyntheticRun
from twolayer.data.teacher_student import TeacherStudentParams, teacher_directions
from twolayer.papers.online_sgd._shared import PAPER, config, ode_of

POINTS = {"e05s1": (0.05, 1.0), "e10s1": (0.1, 1.0), "e10s05": (0.1, 0.5)}  # (eta, sigma)
DIMS = {"quick": 400, "paper": 2000}
TIME = 80.0  # Goldt time; the floor is averaged over its second half
# The seed spread at quick scale (benchmarks/spreads/issue29/noise_floor_spread.py: 10 batches of 4 seeds, 100-139,
# independent of the checked 0-3; the teacher and the start are the checked ones, only the SGD samples differ):
# mean + 3 sd of max over the points of |floor(SGD) / floor(ODE) - 1|, and 3 sd of each ratio of SGD floors.
AGREE = {"erf": 0.0462, "relu": 0.0515}  # 0.0174 +- 0.0096 and 0.0262 +- 0.0084
RATIO_3SD = {("erf", "eta"): 0.0426, ("erf", "sigma"): 0.0447,  # sd 0.0142, 0.0149
             ("relu", "eta"): 0.0864, ("relu", "sigma"): 0.153}  # sd 0.0288, 0.0511
RATIOS = {"eta": ("e10s1", "e05s1", "floor(eta 0.1) / floor(eta 0.05)"),
          "sigma": ("e10s1", "e10s05", "floor(sigma 1) / floor(sigma 0.5)")}


def floor_configs(scale: str, **changes) -> dict[str, dict]:
    d = DIMS[scale]
    out = {}
    for act in ("erf", "relu"):
        for key, (eta, sigma) in POINTS.items():
            cfg = config(d, K=1, M=1, eta=eta, time=TIME, seeds=4, activation=act, noise=sigma, points=33, **changes)
            w = teacher_directions(TeacherStudentParams(**cfg["data"]))
            cfg["init"] = {"kind": "values", "W": w.tolist(), "v": [1.0]}
            out[f"{act}-{key}"] = cfg
    return out


experiment = register(Experiment(
    id=f"{PAPER}/noise-floor",
    title="Noise floor: eps_g(infinity) proportional to eta sigma^2 (erf and relu)",
    figure="Goldt et al. 2019, Sec. 4 (asymptotic error with label noise)",
    description=(
        "K = M = 1 erf and relu students started at the teacher, label noise sigma, online SGD at (eta, sigma) = "
        "(0.05, 1), (0.1, 1), (0.1, 0.5), d = 400 (quick) or 2000 (paper), to Goldt time 80. The floor (eps_g "
        "averaged over seeds and the second half of the run) is the ODE's and scales like eta sigma^2."),
    configs=floor_configs,
))


def floor(run, values=None) -> float:
    """eps_g averaged over seeds and the second half of the observation times."""
    eps = np.asarray(run.seeded("eps_g")) if values is None else values
    return float(np.mean(eps[..., eps.shape[-1] // 2:]))


def ode_floor(run) -> float:
    return floor(run, np.stack([ode_of(run, s).eps_g for s in range(np.asarray(run.seeded("Q")).shape[0])]))


def synthetic_floor(configs: dict[str, dict]) -> dict:
    """Runs whose floor does not depend on eta (the same eps_g = 0.02 sigma^2 at both learning rates)."""
    runs = {}
    for key, cfg in configs.items():
        steps, every = cfg["train"]["steps"], cfg["observe"]["every"]
        step = np.append(np.arange(0, steps, every), steps)
        sigma = cfg["data"]["noise"]
        S = cfg["seeds"]
        eps = np.full((S, len(step)), 0.02 * sigma ** 2)
        traj = {"t": step * cfg["train"]["lr"], "step": step, "eps_g": eps, "Q": np.ones((S, len(step), 1, 1)),
                "R": np.ones((S, len(step), 1, 1)), "T": np.ones((S, len(step), 1, 1)), "v": np.ones((S, len(step), 1))}
        runs[key] = SyntheticRun(cfg, traj, name=f"synthetic-{key}")
    return runs


def _multi_pass(configs):
    """Every run as multi-pass SGD on a fixed sample of n = 2d points, with 2 of its 4 seeds (the conformance test's
    and reproduce's ablation runs take 6 x 0.3-0.6 M steps: half the seeds halve their cost; the floors it measures
    are off by far more than the seed spread)."""
    out = {}
    for k, cfg in configs.items():
        d = cfg["data"]["d"]
        out[k] = {**cfg, "seeds": 2, "data": {**cfg["data"], "n": 2 * d}, "train": {**cfg["train"], "method": "sgd"}}
    return out


@experiment.claim("floor-scaling",
                  "For erf and relu, the SGD floor agrees with the ODE's, and its ratios when eta doubles and when sigma "
                  "halves are the ODE's (proportional to eta sigma^2 up to the ODE's own nonlinear corrections), "
                  "each within the seed spread",
                  kind="prediction",
                  tolerance_source="spread: mean + 3 sd over 10 batches of 4 independent seeds (100-139) of the same "
                                   "configs at quick scale (benchmarks/spreads/issue29/noise_floor_spread.py): "
                                   "max |floor(SGD)/floor(ODE) - 1| 0.0174 +- 0.0096 (erf), 0.0262 +- 0.0084 (relu); "
                                   "each SGD ratio within 3 sd of the ODE's own (2.094 and 3.688 erf, 1.993 and "
                                   "3.648 relu; sd 0.014, 0.015 erf, 0.029, 0.051 relu). In place of the exploratory "
                                   "30 %, [1.5, 2.5] and [3, 5]; used at paper scale too, where d = 2000 averages "
                                   "more steps per unit of time",
                  falsifiers=[Synthetic("eta-independent", synthetic_floor, "a floor 0.02 sigma^2 at every eta")],
                  premises=[Premise("multi-pass-sgd", _multi_pass,
                                    "multi-pass SGD on a fixed sample of n = 2d points: the error is the sample's "
                                    "overfitting, not the eta^2 term's floor",
                                    source="Goldt et al. 2019, Sec. 2: 'online learning, where each sample is used "
                                           "only once'")])
def _floor(r: Results) -> Check:
    checks = []
    for act in ("erf", "relu"):
        f = {k: floor(r[f"{act}-{k}"]) for k in POINTS}
        th = {k: r.memo(f"ode-floor-{act}-{k}", lambda k=k: ode_floor(r[f"{act}-{k}"])) for k in POINTS}
        checks.append(at_most([abs(f[k] / th[k] - 1) for k in POINTS], AGREE[act],
                              details=f"{act}: |floor(SGD)/floor(ODE) - 1|; SGD {[round(f[k], 5) for k in POINTS]}, "
                                      f"ODE {[round(th[k], 5) for k in POINTS]}"))
        for name, (num, den, label) in RATIOS.items():
            ode_ratio, spread = th[num] / th[den], RATIO_3SD[(act, name)]
            checks.append(within(f[num] / f[den], ode_ratio - spread, ode_ratio + spread,
                                 details=f"{act}: {label}, the ODE's {ode_ratio:.4f} (proportional: "
                                         f"{2 if name == 'eta' else 4})"))
    return all_of(*checks)
