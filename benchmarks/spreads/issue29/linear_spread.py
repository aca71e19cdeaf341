"""Seed spread of online_sgd/linear-closed-form:closed-form: 10 batches of 4 independent seeds (100-139), the same
config otherwise. The statistic is the claim's: sqrt(d) max over a batch's seeds and times of |eps_g(SGD) - closed
form|, relative to the largest closed-form eps_g.
Run from the repository root: .venv/bin/python benchmarks/spreads/issue29/linear_spread.py [quick|paper]
"""
import copy
import sys
import time

import numpy as np

from twolayer.api import run
from twolayer.papers.online_sgd.linear import closed_form_gap, linear_configs

SCALE = sys.argv[1] if len(sys.argv) > 1 else "quick"
OUT = f"/tmp/linear-spread-{SCALE}"
cfg0 = linear_configs(SCALE)["linear"]
xs = []
for b in range(10):
    t0 = time.time()
    cfg = copy.deepcopy(cfg0)
    cfg["seeds"] = list(range(100 + 4 * b, 104 + 4 * b))
    gap, scale = closed_form_gap(run(cfg, out=OUT))
    xs.append(float(np.sqrt(cfg["data"]["d"]) * gap / scale))
    print(f"batch {b}: {xs[-1]:.4g} ({time.time() - t0:.0f} s)", flush=True)
a = np.asarray(xs)
print(f"{SCALE} sqrt(d) max |eps_g(SGD) - closed form| / max eps_g: {a.mean():.4g} +- {a.std(ddof=1):.3g} (n = "
      f"{a.size}), min {a.min():.4g}, max {a.max():.4g}; mean + 3 sd {a.mean() + 3 * a.std(ddof=1):.4g}", flush=True)
