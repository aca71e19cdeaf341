"""The symmetric plateau (Saad & Solla 1995, Sec. IV; Biehl et al. 1996): an erf soft committee machine
(K = M = 2, first layer, v = v* = 1) started with small, nearly equal overlaps first learns the teacher's mean
and sits at the symmetric fixed point of the ODEs, whose height ``theory.online_sgd.symmetric_plateau`` gives,
before the students specialize."""

from __future__ import annotations

import numpy as np

from twolayer.claims.checks import Check, all_of, at_most
from twolayer.claims.falsifiers import Premise, Synthetic, SyntheticRun
from twolayer.claims.registry import Experiment, Results, register
from twolayer.papers.online_sgd._shared import PAPER, config, eta_of, ode_of
from twolayer.theory.online_sgd import symmetric_plateau

DIMS = {"quick": 300, "paper": 2000}
INIT_SCALE = 0.3  # student rows of norm ~0.3: Q(0) ~ 0.09 I
# |plateau of SGD / height - 1| for every seed: mean + 3 sd of its largest value over 4 seeds, measured on 10 batches
# of independent seeds and initial layers at quick scale (benchmarks/spreads/issue29/plateau_spread.py)
AGREE = 0.0818
NEAR = 0.1  # the plateau window: times where the ODE's eps_g is within 10 % of the height


def plateau_configs(scale: str, **data) -> dict[str, dict]:
    d = DIMS[scale]
    cfg = config(d, K=2, M=2, eta=1.0, time=60.0, seeds=4, layers="first", points=61, **data)
    rng = np.random.default_rng(7)
    W = INIT_SCALE * rng.normal(size=(4, 2, d)) / np.sqrt(d)
    cfg["init"] = {"kind": "values", "W": W.tolist(), "v": [[1.0, 1.0]] * 4}
    return {"erf": cfg}


experiment = register(Experiment(
    id=f"{PAPER}/plateau",
    title="The symmetric plateau: SGD sits at the height of the ODE's symmetric fixed point",
    figure="Saad & Solla 1995, Fig. 2 (the plateau of the soft committee machine)",
    description=(
        "Erf soft committee machine (K = M = 2, v = 1 fixed, eta = 1), online SGD at d = 300 (quick) or 2000 (paper) "
        "from small random first layers. The symmetric fixed point is found by integrating the symmetrized initial "
        "state and refining by Newton; its eps_g is the plateau height, the largest eigenvalue of the Jacobian "
        "the escape rate (plateau length (1/rate) ln(delta_escape/delta0))."),
    configs=plateau_configs,
))


def plateau_value(run) -> tuple[list[float], float, float]:
    """(median SGD eps_g over each seed's plateau window, the symmetric height, the escape rate)."""
    eps = np.asarray(run.seeded("eps_g"))
    Q, R, v, T = (np.asarray(run.seeded(k)) for k in ("Q", "R", "v", "T"))
    out, height, rate = [], np.nan, np.nan
    for s in range(eps.shape[0]):
        p = symmetric_plateau(Q[s, 0], R[s, 0], v[s, 0], T[s, 0], np.ones(T.shape[-1]), activation="erf",
                              eta=eta_of(run), layers="first")
        height, rate = p.height, p.rate
        ode = ode_of(run, s).eps_g
        window = np.abs(ode / p.height - 1) <= NEAR
        out.append(float(np.median(eps[s][window])) if window.any() else float("nan"))
    return out, height, rate


def synthetic_plateau(configs: dict[str, dict]) -> dict:
    """Runs that follow the ODE from the configs' own initial state with eps_g 40 % above it."""
    from twolayer.data.teacher_student import TeacherStudentParams, teacher_directions
    from twolayer.theory.online_sgd import integrate

    runs = {}
    for key, cfg in configs.items():
        steps, every, lr = cfg["train"]["steps"], cfg["observe"]["every"], cfg["train"]["lr"]
        step = np.append(np.arange(0, steps, every), steps)
        t = step * lr
        ws = teacher_directions(TeacherStudentParams(**cfg["data"]))
        parts = {k: [] for k in ("Q", "R", "T", "v", "eps_g")}
        for W, v in zip(np.asarray(cfg["init"]["W"]), np.asarray(cfg["init"]["v"])):
            sol = integrate(W @ W.T, W @ ws.T, v, ws @ ws.T, np.ones(len(ws)), t / (lr * cfg["data"]["d"]),
                            activation="erf", eta=lr * cfg["data"]["d"], layers="first")
            for k, val in (("Q", sol.Q), ("R", sol.R), ("v", sol.v), ("eps_g", 1.4 * sol.eps_g),
                           ("T", np.broadcast_to(ws @ ws.T, (len(t), len(ws), len(ws))))):
                parts[k].append(val)
        runs[key] = SyntheticRun(cfg, {"t": t, "step": step, **{k: np.stack(v) for k, v in parts.items()}},
                                 name=f"synthetic-{key}")
    return runs


@experiment.claim("plateau-height",
                  "While the ODE sits on its plateau, SGD's eps_g (median over the window, each seed) is the "
                  "symmetric fixed point's height within the seed spread",
                  kind="prediction",
                  tolerance_source="spread: the largest |SGD plateau / height - 1| over 4 seeds is 0.0475 +- 0.0114 "
                                   "(mean +- sd over 10 batches of independent SGD seeds 100-139 and first layers "
                                   "drawn from rng seeds 100-109, quick, d = 300; per seed 0.026 +- 0.019, max "
                                   "0.061; benchmarks/spreads/issue29/plateau_spread.py): mean + 3 sd = 0.0818, in "
                                   "place of the exploratory 15 %; used at paper scale too (d = 2000: smaller "
                                   "fluctuations)",
                  falsifiers=[Synthetic("above-the-plateau", synthetic_plateau, "eps_g 40 % above the ODE's")],
                  premises=[Premise("anisotropic-inputs", lambda c: plateau_configs("quick", spectrum_decay=1.5),
                                    "inputs with a power-law covariance (eigenvalues ~ i^-1.5, trace d)",
                                    source="Saad & Solla 1995, Sec. II: inputs with i.i.d. zero-mean unit-variance "
                                           "components")])
def _height(r: Results) -> Check:
    values, height, rate = r.memo("plateau", lambda: plateau_value(r["erf"]))
    return all_of(at_most([abs(v / height - 1) for v in values], AGREE,
                          details=f"|SGD plateau / height - 1| per seed; height {height:.4g}, escape rate {rate:.4g} "
                                  f"(plateau length (1/rate) ln(delta_escape/delta0))"))
