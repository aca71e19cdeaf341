"""Seed spread of online_sgd/plateau-length:length-over-eta: 10 batches of independent seeds (as many a batch as
the claim has; SGD seeds from 100, and the initial first layers drawn as the experiment draws them, from rng seeds
100-109 in place of 7), the same configs otherwise. The statistic is the claim's: the fitted exponent of the median
escape time over a batch's seeds against eta.
Run from the repository root: .venv/bin/python benchmarks/spreads/issue29/plateau_length_spread.py [quick|paper]
"""
import copy
import sys
import time

import numpy as np

from twolayer.api import run
from twolayer.papers.online_sgd.plateau import INIT_SCALE
from twolayer.papers.online_sgd.plateau_length import ETAS, SEEDS, escape_times, exponent, length_configs

SCALE = sys.argv[1] if len(sys.argv) > 1 else "quick"
OUT = f"/tmp/plateau-length-spread-{SCALE}"
S = SEEDS[SCALE]
configs = length_configs(SCALE)
slopes = []
for b in range(10):
    t0 = time.time()
    W = None
    medians = []
    for eta in ETAS:
        cfg = copy.deepcopy(configs[f"eta{eta:g}"])
        d = cfg["data"]["d"]
        if W is None:
            W = INIT_SCALE * np.random.default_rng(100 + b).normal(size=(S, 2, d)) / np.sqrt(d)
        cfg["seeds"] = list(range(100 + S * b, 100 + S * (b + 1)))
        cfg["init"] = {"kind": "values", "W": W.tolist(), "v": [[1.0, 1.0]] * S}
        medians.append(float(np.median(escape_times(run(cfg, out=OUT))[0])))
    slopes.append(exponent(ETAS, medians))
    print(f"batch {b}: exponent {slopes[-1]:.4f}, median t_esc {np.round(medians, 2).tolist()} "
          f"({time.time() - t0:.0f} s)", flush=True)
a = np.asarray(slopes)
print(f"{SCALE} fitted exponent of t_esc against eta: {a.mean():.4f} +- {a.std(ddof=1):.4f} (n = {a.size}), min "
      f"{a.min():.4f}, max {a.max():.4f}; 3 sd {3 * a.std(ddof=1):.4f}", flush=True)
