"""Spread of the empirical/population stage-time ratios at quick scale over seeds independent of the checked one
(data.seed and init seed k = 1..K; the checked run is data seed 0, init seed 0)."""
import copy, sys, time
import numpy as np
from twolayer.api import run
from twolayer.claims import get
from twolayer.papers.multiindex2026.figure1_empirical import (HERMITE_TIMES, MASS_TIMES, TINY_METRICS, stage_times)

K = int(sys.argv[1]) if len(sys.argv) > 1 else 6
OUT = "/tmp/emp-base"
exp = get("multiindex2026/figure1-empirical")
c = exp.run_configs("quick")
pop = run(c["population"], out=OUT)
P = stage_times(pop.trajectory, 10)
rows = []
for k in range(1, K + 1):
    cfg = copy.deepcopy(c["empirical"])
    cfg["seeds"] = [k]
    cfg["data"] = {**cfg["data"], "seed": k}
    cfg["observe"] = {"schedule": "log", "points": cfg["observe"]["points"], "metrics": TINY_METRICS}
    cfg["name"] = "spread-empirical"
    t0 = time.time()
    e = run(cfg, out="/tmp/emp-spread/store")
    E = stage_times(e.trajectory, 10)
    ratio = {key: float(E[key][0] / np.median(P[key])) for key in HERMITE_TIMES + MASS_TIMES}
    worst_h = max(abs(np.log(ratio[key])) for key in HERMITE_TIMES)
    worst_m = max(abs(np.log(ratio[key])) for key in MASS_TIMES)
    rows.append((np.exp(worst_h), np.exp(worst_m)))
    print(k, f"{time.time() - t0:.1f}s", {key: round(v, 3) for key, v in ratio.items()},
          f"worst hermite {np.exp(worst_h):.3f} mass {np.exp(worst_m):.3f}", flush=True)
a = np.array(rows)
for i, name in enumerate(("hermite (same-stage-order)", "mass (same-reallocation)")):
    m, s = a[:, i].mean(), a[:, i].std(ddof=1)
    print(f"{name}: worst ratio {m:.3f} +- {s:.3f} (n = {len(a)}), max {a[:, i].max():.3f}, mean + 3 sd {m + 3 * s:.3f}")
