"""The small-learning-rate limit: without the eta^2 term the ODE is the population gradient flow, so it agrees
with twolayer's exact Gaussian-population dynamics (``twolayer.population``: the multi-index paper's machinery)
on a case both describe: an even activation (abs), a two-layer student, orthonormal teacher directions."""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import Check, at_most
from twolayer.claims.falsifiers import Counterfactual
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.online_sgd._shared import PAPER
from twolayer.theory.online_sgd import integrate

SOLVER_TOL = 1e-6  # both solvers at rtol 1e-10: agreement to 1e-6 in every entry of Q, R and v


def population_config(scale: str) -> dict[str, dict]:
    d = {"quick": 12, "paper": 40}[scale]
    return {"flow": {
        "seeds": 2,
        "data": {"kind": "multi_index", "d": d, "r": 2, "n": 16, "n_test": 8, "activation": "abs"},
        "model": {"kind": "two_layer", "activation": "abs", "width": 3}, "init": {"kind": "standard"},
        "loss": {"kind": "square", "reduction": "mean"}, "objective": "population",
        "train": {"method": "flow", "time": 6.0, "rtol": 1e-10, "atol": 1e-12},
        "observe": {"schedule": "every", "every": 0.5, "metrics": ["Q", "R", "T", "v", "eps_g"]}}}


def finite_sample(configs: dict[str, dict]) -> dict[str, dict]:
    """The same net and init descending the empirical loss of the n = 16 training points instead (GD, lr 0.01, to the
    same t = 6: an adaptive flow stalls on the kinks of a finite sample's loss)."""
    cfg = configs["flow"]
    return {"flow": {**cfg, "objective": "empirical", "train": {"method": "gd", "lr": 0.01, "steps": 600},
                     "observe": {**cfg["observe"], "every": 50}}}


experiment = register(Experiment(
    id=f"{PAPER}/small-lr-limit",
    title="Small-lr limit: the ODE without the eta^2 term is the exact population gradient flow",
    figure="Goldt et al. 2019, Sec. 3 (eta -> 0); the multi-index paper's exact population loss",
    description=(
        "Gradient flow (method flow) on the exact population loss (objective population) of a two-layer abs net "
        "(K = 3) with an orthonormal two-direction abs target, against the order-parameter ODE without the eta^2 "
        "term at eta = 1 (Goldt time = flow time), each seed from its own initial state."),
    configs=population_config,
))


def max_gap(run) -> float:
    """max over seeds, times and entries of |flow - ODE| in Q, R and v."""
    Q, R, v, T = (np.asarray(run.seeded(k)) for k in ("Q", "R", "v", "T"))
    t = np.asarray(run.trajectory["t"])
    coefs = np.asarray(run.config["data"].get("coefs") or np.ones(T.shape[-1]))
    gaps = []
    for s in range(Q.shape[0]):
        sol = integrate(Q[s, 0], R[s, 0], v[s, 0], T[s, 0], coefs, t, activation="abs", eta=1.0, eta2=False,
                        rtol=1e-10, atol=1e-12)
        gaps.append(max(np.abs(sol.Q - Q[s]).max(), np.abs(sol.R - R[s]).max(), np.abs(sol.v - v[s]).max()))
    return float(max(gaps))


@experiment.claim("population-flow",
                  "The ODE without the eta^2 term (eta = 1) agrees with the exact population gradient flow of "
                  "twolayer to 1e-6 in every order parameter up to t = 6",
                  kind="consistency", tolerance_source="solver: both integrations at rtol 1e-10, atol 1e-12",
                  falsifiers=[Counterfactual("finite-sample", finite_sample,
                                             "GD on the empirical loss of n = 16 samples instead of the flow on the "
                                             "population loss")])
def _population(r: Results) -> Check:
    return at_most(max_gap(r["flow"]), SOLVER_TOL, details="max |flow - ODE| over seeds, times, Q, R, v")
