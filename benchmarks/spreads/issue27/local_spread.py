"""Seed spread of local-convergence:converges-back's 'stays close' statistic max_t d(t) / d(0) (and max_t d - d(0))
over independent starts: rng seeds 100-119 (one start each; the checked runs draw from rng 11 / 12), the SAME
config otherwise (perturbation 0.1 / 0.05, q_min = 12, tau and points of the scale). Usage: local_spread.py quick|paper"""
import sys, numpy as np
from twolayer.api import run
from twolayer.papers.lyu2021 import local_convergence as lc
from twolayer.papers.lyu2021._shared import base_config, flow_train, groups_data, values_init
from twolayer.theory.margin import max_margin_linear

scale = sys.argv[1]
s = lc.SCALE_SETTINGS[scale]
seeds = list(range(100, 120))
for kind in ("global", "same-sign"):
    Ws, As = zip(*(lc.starts(kind, 1, rng_seed=k) for k in seeds))
    W, a = np.concatenate(Ws), np.concatenate(As)
    cfg = base_config(groups_data(), W.shape[1], values_init(W, a), flow_train(s["tau"]), lc.LOCAL_METRICS, s["points"],
                      seeds=len(seeds))
    cfg["name"] = f"h27-local-spread-{kind}-{scale}"
    rr = run(cfg, out="/tmp/h27/local-spread")
    traj = rr.trajectory
    _, w_star = lc._w_star()
    d = lc.set_distance(traj["neuron_weights"], traj["v"], w_star, kind)   # [S, T]
    ratio = d.max(axis=1) / d[:, 0]
    excess = d.max(axis=1) - d[:, 0]
    print(f"{scale} {kind}: start d {np.round(d[:, 0], 4).tolist()}")
    print(f"  max/start {np.round(ratio, 9).tolist()}")
    print(f"  mean {ratio.mean():.9f} sd {ratio.std(ddof=1):.3g} mean+3sd {ratio.mean() + 3 * ratio.std(ddof=1):.9f}; "
          f"max excess {excess.max():.3g}; argmax index {np.argmax(d, axis=1).tolist()}; end/start "
          f"{np.round(d[:, -1] / d[:, 0], 3).tolist()}")
    # smallest step of d between observations, relative: is d monotone?
    steps = np.diff(d, axis=1)
    print(f"  largest increase of d between observations {steps.max():.3g}")
