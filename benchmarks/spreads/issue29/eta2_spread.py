"""Seed spread of online_sgd/eta2-term:eta2-matters: 10 batches of independent seeds (as many a batch as the claim
checks, or the second argument; from seed 100), the same configs otherwise. The statistic is the claim's: sqrt(d) times the median over a batch's seeds of the largest |SGD - ODE|
in time, for the small and the large eta, against the ODE with and without the eta^2 term; and sqrt(d) times the
median of how far the term moves the ODE (``ode_gap``).
Run from the repository root: .venv/bin/python benchmarks/spreads/issue29/eta2_spread.py [quick|paper] [SEEDS]
"""
import copy
import sys
import time

import numpy as np

from twolayer.api import run
from twolayer.papers.online_sgd._shared import deviation
from twolayer.papers.online_sgd.eta2_term import ETAS, SEEDS, eta2_configs, ode_gap

SCALE = sys.argv[1] if len(sys.argv) > 1 else "quick"
OUT = f"/tmp/eta2-spread-{SCALE}"
configs = eta2_configs(SCALE)
S = int(sys.argv[2]) if len(sys.argv) > 2 else SEEDS[SCALE]
stats = {(k, e): [] for k in ETAS for e in (True, False)}
gaps = {k: [] for k in ETAS}
for b in range(10):
    t0 = time.time()
    for k in ETAS:
        cfg = copy.deepcopy(configs[k])
        cfg["seeds"] = list(range(100 + S * b, 100 + S * (b + 1)))
        res = run(cfg, out=OUT)
        d = cfg["data"]["d"]
        for e in (True, False):
            stats[k, e].append(float(np.sqrt(d) * np.median(deviation(res, eta2=e))))
        gaps[k].append(float(np.sqrt(d) * np.median(ode_gap(res))))
    print(f"batch {b} in {time.time() - t0:.0f} s", flush=True)
for k, xs in gaps.items():
    a = np.asarray(xs)
    print(f"{SCALE} eta = {ETAS[k]}: sqrt(d) median max |full ODE - ODE without the term| {a.mean():.4g} +- "
          f"{a.std(ddof=1):.3g} (n = {a.size}), min {a.min():.4g}, max {a.max():.4g}", flush=True)
for (k, e), xs in stats.items():
    a = np.asarray(xs)
    print(f"{SCALE} eta = {ETAS[k]} {'with' if e else 'without'} the eta^2 term: sqrt(d) median deviation "
          f"{a.mean():.4g} +- {a.std(ddof=1):.3g} (n = {a.size}), min {a.min():.4g}, max {a.max():.4g}; "
          f"mean - 3 sd {a.mean() - 3 * a.std(ddof=1):.4g}, mean + 3 sd {a.mean() + 3 * a.std(ddof=1):.4g}", flush=True)
