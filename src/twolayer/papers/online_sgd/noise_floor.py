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
AGREE = 0.3  # |floor(SGD) / floor(ODE) - 1| <= 0.3


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
                  "For erf and relu, the SGD floor agrees with the ODE's within 30 %, doubling eta doubles it "
                  "(ratio in [1.5, 2.5]) and halving sigma quarters it (ratio in [3, 5])",
                  kind="prediction",
                  tolerance_source="exploratory: the ODE's own floor ratios at these eta sigma^2 are 1.8-2.0 and "
                                   "3.8-4.0 (nonlinear corrections); the intervals add the seed spread at d = 400",
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
        checks.append(at_most([abs(f[k] / th[k] - 1) for k in POINTS], AGREE,
                              details=f"{act}: |floor(SGD)/floor(ODE) - 1|; SGD {[round(f[k], 5) for k in POINTS]}, "
                                      f"ODE {[round(th[k], 5) for k in POINTS]}"))
        checks.append(within(f["e10s1"] / f["e05s1"], 1.5, 2.5, details=f"{act}: floor(eta 0.1) / floor(eta 0.05)"))
        checks.append(within(f["e10s1"] / f["e10s05"], 3.0, 5.0, details=f"{act}: floor(sigma 1) / floor(sigma 0.5)"))
    return all_of(*checks)
