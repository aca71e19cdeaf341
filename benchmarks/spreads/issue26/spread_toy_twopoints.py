"""Issue 26: seed spread (seeds 100-109, the paper config = quick config) of fig6-toy and fig7-9-two-points."""
import sys
import numpy as np
sys.path.insert(0, "/tmp/h26")
from spread_runs import spread_results
from twolayer.papers.min2024 import two_points as tp
from twolayer.papers.min2024._shared import iter_index


def msd(name, x):
    x = np.asarray(x, float)
    print(f"{name}: values {np.round(x, 5).tolist()}  mean {x.mean():.5g} sd {x.std(ddof=1):.3g}  "
          f"mean-3sd {x.mean() - 3 * x.std(ddof=1):.5g} mean+3sd {x.mean() + 3 * x.std(ddof=1):.5g}")


def drop_profile(t, loss):
    """(second peak / top peak, highest other local max / top, min rate between the two / smaller peak)."""
    t, loss = np.asarray(t, float), np.asarray(loss, float)
    r = -np.diff(np.log(loss)) / np.diff(t)
    peaks = [k for k in range(1, r.size - 1) if r[k] >= r[k - 1] and r[k] > r[k + 1]]
    top = max(peaks, key=lambda k: r[k])
    # the distinct second peak: the highest local max with the deepest dip to the top
    best = None
    for k in peaks:
        if k == top:
            continue
        lo, hi = sorted((k, top))
        dip = r[lo:hi + 1].min() / min(r[k], r[top])
        score = r[k] * (1 - dip)
        if best is None or score > best[0]:
            best = (score, k, dip)
    _, k2, dip = best
    others = [r[k] for k in peaks if k not in (top, k2)]
    return r[k2] / r[top], (max(others) / r[top] if others else 0.0), dip, (t[top], t[k2])


r = spread_results("min2024/fig6-toy", "quick")
run = r["toy"]
loss = run.seeded("loss")
msd("toy L(end)/L(0)", loss[:, -1] / loss[:, 0])
prof = [drop_profile(run.trajectory["t"], l) for l in loss]
msd("toy second peak / top", [p[0] for p in prof])
msd("toy third peak / top", [p[1] for p in prof])
msd("toy dip / smaller peak", [p[2] for p in prof])
print("peak times (iterations)", [tuple(round(x / 2e-3) for x in p[3]) for p in prof])
from twolayer.theory import alignment as th
print("sharp_drops counts", [len(th.sharp_drops(run.trajectory["t"], l)) for l in loss])

r2 = spread_results("min2024/fig7-9-two-points", "quick")
slow = r2["mu-sin0.001"]
early, late = tp.outside(slow, 7000), tp.outside(slow, 21000)
print("two-points sin .001 outside at 7000", early.tolist(), "at 21000", late.tolist())
msd("late/early", late / early)
msd("late - early/2", late - early / 2)
L = slow.seeded("loss")
a, b = L[:, iter_index(slow, 7000)] / L[:, 0], L[:, iter_index(slow, 21000)] / L[:, 0]
msd("L(7000)/L(0)", a)
msd("1 - L(7000)/L(0)", 1 - a)
msd("log10(1 - L(7000)/L(0))", np.log10(1 - a))
msd("L(21000)/L(7000)", b / a)
fast = r2["mu-sin0.1"]
print("sin .1 outside at 7000", tp.outside(fast, 7000).tolist())
