"""Seed spread of online_sgd/noise-floor:floor-scaling's statistics: 10 independent batches of 4 seeds (100-139,
independent of the checked seeds 0-3), the same configs otherwise (the teacher and the start are the checked ones;
only the SGD samples differ). Per activation: max over the three (eta, sigma) points of |floor(SGD)/floor(ODE) - 1|,
and the two floor ratios of SGD against the ODE's own.
Run from the repository root: .venv/bin/python benchmarks/spreads/issue29/noise_floor_spread.py [quick|paper]
"""
import copy
import sys
import time

import numpy as np

from spread_stats import report
from twolayer.api import run
from twolayer.papers.online_sgd.noise_floor import POINTS, floor, floor_configs, ode_floor

SCALE = sys.argv[1] if len(sys.argv) > 1 else "quick"
BATCHES = [list(range(100 + 4 * b, 104 + 4 * b)) for b in range(10)]
OUT = "/tmp/noise-floor-spread"


configs = floor_configs(SCALE)
stats = {act: {"agree": [], "eta": [], "sigma": []} for act in ("erf", "relu")}
ode = {}
for seeds in BATCHES:
    t0 = time.time()
    for act in ("erf", "relu"):
        f, th = {}, {}
        for k in POINTS:
            cfg = copy.deepcopy(configs[f"{act}-{k}"])
            cfg["seeds"] = seeds
            res = run(cfg, out=OUT)
            f[k] = floor(res)
            th[k] = ode.setdefault((act, k), ode_floor(res))
        stats[act]["agree"].append(max(abs(f[k] / th[k] - 1) for k in POINTS))
        stats[act]["eta"].append(f["e10s1"] / f["e05s1"])
        stats[act]["sigma"].append(f["e10s1"] / f["e10s05"])
    print(f"seeds {seeds[0]}-{seeds[-1]} in {time.time() - t0:.0f} s", flush=True)
print(f"== {SCALE}: noise-floor, {len(BATCHES)} batches of 4 seeds")
for act in ("erf", "relu"):
    th = {k: ode[(act, k)] for k in POINTS}
    print(f"{act}: ODE floors {[round(th[k], 6) for k in POINTS]}, ODE ratios eta {th['e10s1'] / th['e05s1']:.4f} "
          f"sigma {th['e10s1'] / th['e10s05']:.4f}")
    report(f"{act} max |floor(SGD)/floor(ODE) - 1|", stats[act]["agree"])
    report(f"{act} floor(eta 0.1)/floor(eta 0.05)", stats[act]["eta"])
    report(f"{act} floor(sigma 1)/floor(sigma 0.5)", stats[act]["sigma"])
