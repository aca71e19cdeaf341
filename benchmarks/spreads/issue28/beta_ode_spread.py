"""Spread of overlays:beta-ode-tracks (and of beta-ode-main-text's main-text form): the max relative errors over
t <= 5 of the reduced beta-ODE (appendix eq. 9-10 / Lemma C.10's 'full' form, and Section 5.2's main-text form)
against the simulated subspace and irrelevant masses, on the overlays' fine run (lr 0.002) with seeds 100-109
(independent of the checked ones), one seed at a time through the claim's own helper.
Run from the repository root: .venv/bin/python benchmarks/spreads/issue28/beta_ode_spread.py [quick|paper]
"""
import copy
import sys
import time
from types import SimpleNamespace

import numpy as np

from twolayer.api import run
from twolayer.claims import get
from twolayer.papers.multiindex2026.overlays import beta_errors

SCALE = sys.argv[1] if len(sys.argv) > 1 else "quick"
SEEDS = list(range(100, 110))


def report(name, xs):
    a = np.asarray(xs, float)
    m, sd = a.mean(), a.std(ddof=1)
    print(f"{name}: {m:.5g} +- {sd:.3g} (n = {a.size}), min {a.min():.5g}, max {a.max():.5g}; mean + 3 sd "
          f"{m + 3 * sd:.5g}", flush=True)


cfg = copy.deepcopy(get("multiindex2026/overlays").run_configs(SCALE)["fine"])
cfg["seeds"] = SEEDS
t0 = time.time()
res = run(cfg, out="/tmp/beta-ode-spread")
print(f"== {SCALE}: overlays fine run (d = {cfg['data']['d']}, r = {cfg['data']['r']}), seeds {SEEDS[0]}-{SEEDS[-1]}, "
      f"{time.time() - t0:.1f}s", flush=True)
for form in ("full", "main"):
    sub, irr = [], []
    for s in range(len(SEEDS)):
        one = SimpleNamespace(config=res.config, trajectory={k: (v[s:s + 1] if np.ndim(v) and k != "t" else v)
                                                             for k, v in res.trajectory.items()})
        a, b = beta_errors(one, form)
        sub.append(a[0])
        irr.append(b[0])
    report(f"{form}: M_sub max relative error", sub)
    report(f"{form}: M_irr max relative error", irr)
