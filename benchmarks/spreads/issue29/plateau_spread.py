"""Seed spread of online_sgd/plateau:plateau-height: 10 batches of 4 independent seeds (SGD seeds 100-139 and
initial first layers drawn as the experiment draws them, from rng seeds 100-109 in place of 7), the same config
otherwise. The statistic is the claim's: max over a batch's seeds of |SGD plateau / height - 1|.
Run from the repository root: .venv/bin/python benchmarks/spreads/issue29/plateau_spread.py [quick|paper]
"""
import copy
import sys
import time

import numpy as np

from twolayer.api import run
from twolayer.papers.online_sgd.plateau import INIT_SCALE, plateau_configs, plateau_value

SCALE = sys.argv[1] if len(sys.argv) > 1 else "quick"
OUT = f"/tmp/plateau-spread-{SCALE}"

cfg0 = plateau_configs(SCALE)["erf"]
d = cfg0["data"]["d"]
worst, each = [], []
for b in range(10):
    t0 = time.time()
    cfg = copy.deepcopy(cfg0)
    cfg["seeds"] = list(range(100 + 4 * b, 104 + 4 * b))
    W = INIT_SCALE * np.random.default_rng(100 + b).normal(size=(4, 2, d)) / np.sqrt(d)
    cfg["init"] = {"kind": "values", "W": W.tolist(), "v": [[1.0, 1.0]] * 4}
    values, height, rate = plateau_value(run(cfg, out=OUT))
    dev = [abs(v / height - 1) for v in values]
    each += dev
    worst.append(max(dev))
    print(f"batch {b}: {np.round(dev, 4).tolist()}, height {height:.5g} ({time.time() - t0:.0f} s)", flush=True)
for name, xs in (("max over a batch's 4 seeds", worst), ("per seed", each)):
    a = np.asarray(xs)
    print(f"{SCALE} |SGD plateau / height - 1|, {name}: {a.mean():.4g} +- {a.std(ddof=1):.3g} (n = {a.size}), max "
          f"{a.max():.4g}; mean + 3 sd {a.mean() + 3 * a.std(ddof=1):.4g}", flush=True)
