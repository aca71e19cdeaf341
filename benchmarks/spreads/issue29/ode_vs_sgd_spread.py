"""Seed spread of online_sgd/ode-vs-sgd's statistics: 10 batches of independent seeds, as many a batch as the claim
checks (``ode_vs_sgd.SEEDS``: quick 16, seeds 100-259; paper 8, 100-179), the same configs otherwise (each seed draws
its own initial weights and samples). tracks-ode: sqrt(d) max |SGD - ODE| at the largest d, the largest over a
batch's seeds (the claim's statistic) and per seed; deviation-exponent: the fitted exponent of the mean deviation
against d, per batch (the claim's own ``fitted_exponent``).
Run from the repository root: .venv/bin/python benchmarks/spreads/issue29/ode_vs_sgd_spread.py [quick|paper]
"""
import copy
import sys
import time

import numpy as np

from spread_stats import report
from twolayer.api import run
from twolayer.papers.online_sgd._shared import deviation
from twolayer.papers.online_sgd.ode_vs_sgd import CASES, SEEDS, fitted_exponent, ode_configs

SCALE_NAME = sys.argv[1] if len(sys.argv) > 1 else "quick"
S = SEEDS[SCALE_NAME]
BATCHES = [list(range(100 + S * b, 100 + S * (b + 1))) for b in range(10)]
OUT = f"/tmp/ode-vs-sgd-spread-{SCALE_NAME}"


configs = ode_configs(SCALE_NAME)
scaled = {case: [] for case in CASES}
worst = {case: [] for case in CASES}
slopes = {case: [] for case in CASES}
for seeds in BATCHES:
    t0 = time.time()
    for case in CASES:
        keys = sorted((k for k in configs if k.startswith(case + "-")), key=lambda k: int(k.rsplit("-d", 1)[1]))
        dims = np.array([int(k.rsplit("-d", 1)[1]) for k in keys])
        devs = []
        for k in keys:
            cfg = copy.deepcopy(configs[k])
            cfg["seeds"] = seeds
            devs.append(deviation(run(cfg, out=OUT)))
        devs = np.stack(devs)
        scaled[case] += list(np.sqrt(dims[-1]) * devs[-1])
        worst[case].append(float(np.sqrt(dims[-1]) * devs[-1].max()))
        slopes[case].append(fitted_exponent(dims, devs)[0])
    print(f"seeds {seeds[0]}-{seeds[-1]} in {time.time() - t0:.0f} s", flush=True)
print(f"== {SCALE_NAME}: ode-vs-sgd, {len(BATCHES)} batches of {S} seeds")
for case in CASES:
    report(f"{case} sqrt(d) max |SGD - ODE| at the largest d, the largest over a batch", worst[case])
    report(f"{case} sqrt(d) max |SGD - ODE| at the largest d, per seed", scaled[case])
    report(f"{case} fitted exponent per batch", slopes[case])
