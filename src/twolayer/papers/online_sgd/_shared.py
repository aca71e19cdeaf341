"""What the online-SGD experiments share: the paper record, sizes per scale, the teacher-student config builder,
and the order-parameter ODE of a run (each seed from its own initial state) with its deviation from the run."""

from __future__ import annotations

import numpy as np

from twolayer.claims.falsifiers import SyntheticRun
from twolayer.claims.registry import register_paper
from twolayer.theory.online_sgd import integrate

PAPER = "online_sgd"
register_paper(PAPER, "Online SGD in high dimension: order-parameter ODEs with the eta^2 term",
               "Saad & Solla, Phys. Rev. E 52 (1995); Biehl & Schwarze, J. Phys. A 28 (1995); Goldt, Advani, Saxe, "
               "Krzakala, Zdeborova, NeurIPS 2019 (arXiv:1906.08632)")

SCALE = {
    "quick": {"dims": (100, 200, 400), "seeds": 4, "time": 8.0, "points": 17},
    "paper": {"dims": (500, 1000, 2000, 4000), "seeds": 8, "time": 20.0, "points": 41},
}


def config(d: int, *, K: int = 2, M: int = 2, eta: float = 1.0, time: float = 8.0, seeds: int = 4,
           activation: str = "erf", noise: float = 0.0, layers: str = "both", batch: int = 1, points: int = 17,
           method: str = "online_sgd", **data) -> dict:
    """A teacher-student run: online SGD with Goldt et al.'s learning rate eta (twolayer's lr = eta / d) to Goldt
    time ``time`` (samples per dimension), observed at ``points`` evenly spaced times."""
    steps = int(round(time * d))
    every = max(1, steps // (points - 1))
    train = {"method": method, "lr": eta / d, "steps": steps, "layers": layers, "batch_size": batch}
    return {
        "seeds": seeds,
        "data": {"kind": "teacher_student", "d": d, "teacher_width": M, "activation": activation, "noise": noise,
                 "n": data.pop("n", 64), "teacher": "orthogonal", **data},
        "model": {"kind": "two_layer", "activation": activation, "width": K},
        "init": {"kind": "standard"},
        "loss": {"kind": "square", "reduction": "mean"},
        "train": train,
        "observe": {"schedule": "every", "every": every, "metrics": ["Q", "R", "T", "v", "eps_g"]},
    }


def eta_of(run) -> float:
    """Goldt et al.'s eta = lr * d."""
    return float(run.config["train"]["lr"]) * int(run.config["data"]["d"])


def ode_of(run, seed: int, *, eta2: bool = True):
    """The ODE solution started at the run's initial order parameters of ``seed`` (index), at the run's
    observation times (Goldt time t / eta), with the run's activation, layers, batch and label noise."""
    cfg = run.config
    tr = run.trajectory
    vstar = np.asarray(cfg["data"].get("teacher_weights") or np.ones(int(cfg["data"]["teacher_width"])))
    eta = eta_of(run)
    Q, R, v, T = (np.asarray(run.seeded(k))[seed] for k in ("Q", "R", "v", "T"))
    return integrate(Q[0], R[0], v[0], T[0], vstar, np.asarray(tr["t"]) / eta, activation=cfg["model"]["activation"],
                     eta=eta, layers=cfg["train"]["layers"], eta2=eta2, noise=float(cfg["data"]["noise"]),
                     batch=int(cfg["train"].get("batch_size") or 1), rtol=1e-7, atol=1e-9)


def deviation(run, *, eta2: bool = True) -> np.ndarray:
    """[S]: max over time of max |SGD - ODE| over the entries of Q, R and v, each seed against its own ODE."""
    out = []
    Q, R, v = (np.asarray(run.seeded(k)) for k in ("Q", "R", "v"))
    for s in range(Q.shape[0]):
        sol = ode_of(run, s, eta2=eta2)
        out.append(max(np.abs(sol.Q - Q[s]).max(), np.abs(sol.R - R[s]).max(), np.abs(sol.v - v[s]).max()))
    return np.asarray(out)


def synthetic_from_ode(cfg: dict, key: str, shift: float = 0.0, eta2: bool = True) -> SyntheticRun:
    """A hand-made run whose order parameters are the ODE's from an identity-like start, plus ``shift`` on R at every
    time after the first (a run that leaves the ODE by ``shift``)."""
    d, K, M = cfg["data"]["d"], cfg["model"]["width"], cfg["data"]["teacher_width"]
    rng = np.random.default_rng(0)
    S = cfg["seeds"]
    eta = cfg["train"]["lr"] * d
    steps, every = cfg["train"]["steps"], cfg["observe"]["every"]
    step = np.append(np.arange(0, steps, every), steps)
    t = step * cfg["train"]["lr"]
    out = {k: [] for k in ("Q", "R", "v", "T")}
    for _ in range(S):
        W = rng.normal(size=(K, d)) / np.sqrt(d)
        Q0, R0 = W @ W.T, W[:, :M].copy()  # teacher: the first M basis vectors (T = I)
        v0 = rng.normal(size=K) / np.sqrt(K)
        sol = integrate(Q0, R0, v0, np.eye(M), np.ones(M), t / eta, activation=cfg["model"]["activation"], eta=eta,
                        layers=cfg["train"]["layers"], eta2=eta2, noise=cfg["data"]["noise"],
                        batch=cfg["train"]["batch_size"])
        R = sol.R.copy()
        R[1:] += shift
        for k, val in (("Q", sol.Q), ("R", R), ("v", sol.v), ("T", np.broadcast_to(np.eye(M), (len(t), M, M)))):
            out[k].append(val)
    traj = {"t": t, "step": step, **{k: np.stack(v) for k, v in out.items()}}
    return SyntheticRun(cfg, traj, name=f"synthetic-{key}")
