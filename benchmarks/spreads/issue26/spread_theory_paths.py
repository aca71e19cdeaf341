"""Issue 26: seed spread (seeds 100-109) of theory-balanced (P10-refined-alignment) and
fig4-14-17-activation-paths (gd-event-times-first-order), quick and paper configs."""
import sys
import numpy as np
sys.path.insert(0, "/tmp/h26")
from spread_runs import spread_results
from twolayer.papers.min2024 import activation_paths as ap, theory
from twolayer.papers.min2024._shared import iter_index
from twolayer.theory import alignment as th


def msd(name, x):
    x = np.asarray(x, float)
    print(f"{name}: values {np.round(x, 5).tolist()}  mean {x.mean():.5g} sd {x.std(ddof=1):.3g}  "
          f"mean-3sd {x.mean() - 3 * x.std(ddof=1):.5g} mean+3sd {x.mean() + 3 * x.std(ddof=1):.5g}")


for scale in sys.argv[1:]:
    print("=== scale", scale)
    r = spread_results("min2024/theory-balanced", scale, keys={"balanced"})
    run = r["balanced"]
    i = iter_index(run, theory.ALIGN_STEP)
    cone, v, c = run.seeded("cone")[:, i], run.seeded("v")[:, i], run.seeded("cos_pos")[:, i]
    m = (cone == th.CONE_POS) & (v > 0)
    per_seed = [float(np.min(c[s][m[s]])) for s in range(len(c))]
    msd("P10 1 - min cos per seed", 1 - np.array(per_seed))
    msd("P10 log10(1 - min cos) per seed", np.log10(1 - np.array(per_seed)))
    print("P10 claim on seeds 100-109:", theory._p10(r))

    rp = spread_results("min2024/fig4-14-17-activation-paths", scale)
    chk = ap._gd_order(rp)
    print("gd order claim on 100-109:", chk.measured, chk.details[:400])
    # per-seed fitted order
    orders, kappas = [], []
    for s in range(len(rp["exact"].seeded("v"))):
        means = []
        for lr in ap.GD_LRS:
            exact, gd = rp["exact"], rp[ap.gd_key(lr)]
            window = float(gd.trajectory["t"][-1])
            gd_t = ap.gd_changes(gd, lr)
            errs = []
            for tl in ap.timelines(exact)[s]:
                seen = set()
                for ch in tl.changes:
                    if ch.point in seen or ch.t > ap.MATCH_BEFORE * window:
                        continue
                    seen.add(ch.point)
                    hit = gd_t.get((tl.seed, tl.neuron, ch.point))
                    if hit is not None:
                        errs.append(hit - ch.t)
            means.append(float(np.mean(np.abs(errs))))
        kappas.append([mm / lr for mm, lr in zip(means, ap.GD_LRS)])
        orders.append(float(np.polyfit(np.log(ap.GD_LRS), np.log(means), 1)[0]))
    msd("per-seed fitted order", orders)
    print("per-seed mean|dt|/lr at lr 4e-3, 2e-3, 1e-3:", np.round(kappas, 3).tolist())
