"""Seed spread of the d-sweep pair slopes (tau_2, T_conv, the C.12 integral) on seeds 100-109 (independent)."""
import sys
import numpy as np
import twolayer
from twolayer.papers.multiindex2026 import scalings as sc
from twolayer.papers.multiindex2026._shared import tau2_reduced

scale = sys.argv[1]
a = sc.SIZES[scale]
rows = []
for d in a["ds"]:
    cfg = sc._d_cfg(scale, d)
    cfg["seeds"] = list(range(100, 110))
    run = twolayer.run(cfg, out=f"/tmp/h28b/store2-{scale}")
    lam = sc.lam_of(run)
    row = {"d": d, "tau_2": np.asarray(sc.taus(run)["tau_2"]), "T_conv": np.asarray(sc.convergence_times(run)[0]),
           "I": np.asarray(sc.convergence_times(run)[1]),
           "ode": (tau2_reduced(d, a["r_fix"], lam), *sc.convergence_reduced(d, a["r_fix"], lam))}
    rows.append(row)
    print(d, "tau_2", np.round(row["tau_2"], 3), "T_conv", np.round(row["T_conv"], 3), "I", np.round(row["I"], 3), "ode", row["ode"], flush=True)
for name, i in (("tau_2", 0), ("T_conv", 1), ("I", 2)):
    for x, y in zip(rows, rows[1:]):
        L = np.log(y["d"] / x["d"])
        s = (y[name] - x[name]) / L
        print(name, x["d"], y["d"], "slope mean %.3f sd %.3f  ode %.3f" % (np.mean(s), np.std(s, ddof=1), (y["ode"][i] - x["ode"][i]) / L))
