"""The broad KKT-point search of the README's lyu2021 section (Figure 1 left, spec E7): does the margin problem
of a Leaky ReLU net (alpha = 0.2) on symmetric 2-D data have KKT-margin directions with a nonlinear boundary?

    python examples/kkt_search.py            # about 3 minutes on 2 cores; prints the search record

Data: random symmetric separable sets (n = 6, 8, 12, 20; teacher margins 0.05, 0.3; 4 seeds each) and designed
sets of point pairs at 60-170 degrees (two pairs of equal or unequal norm, or three pairs); widths 3, 4, 6;
``theory.kkt.kkt_search`` with SLSQP and with least squares, 20 restarts each. Then symmetric sets in d = 3
(n = 12, 30) and d = 2 (n = 8, 40) with widths 5 and 8, 15 restarts each.
"""

from __future__ import annotations

import math
import time

import numpy as np

from twolayer.config import load_config
from twolayer.data import build_dataset
from twolayer.theory import kkt

ALPHA = 0.2


def pairs(beta_deg: float, norms=(1.0, 1.0), extra=None):
    """Two positive points at +-beta/2 (optionally a third), and their mirror images with y = -1."""
    b = math.radians(beta_deg) / 2
    P = [np.array([math.cos(b), math.sin(b)]) * norms[0], np.array([math.cos(b), -math.sin(b)]) * norms[1]]
    if extra is not None:
        P.append(np.asarray(extra, dtype=float))
    P = np.array(P)
    return np.vstack([P, -P]), np.concatenate([np.ones(len(P)), -np.ones(len(P))])


def symmetric(d: int, n: int, margin: float, seed: int):
    data = build_dataset(load_config({"data": {"kind": "symmetric_separable", "d": d, "n": n, "margin": margin,
                                               "seed": seed}}).data)
    return data.X, data.y


def search(sets, widths, restarts):
    record = {"restarts": 0, "kkt": 0, "kkt_nonlinear": 0, "best_nonlinear_residual": math.inf, "best": None}
    for name, (X, y) in sets:
        for m in widths:
            for method in ("slsqp", "lsq"):
                found = kkt.kkt_search(X, y, ALPHA, m, restarts=restarts, seed=m, method=method)
                rec = kkt.search_record(found)
                record["restarts"] += restarts
                record["kkt"] += rec["kkt"]
                record["kkt_nonlinear"] += rec["kkt_nonlinear"]
                best = rec["best_nonlinear"]
                if best and best["residual"] < record["best_nonlinear_residual"]:
                    record["best_nonlinear_residual"] = best["residual"]
                    record["best"] = f"{name}, width {m}, {method}"
    return record


def main():
    t0 = time.perf_counter()
    sets = [(f"symmetric n={n} margin={mg} seed={s}", symmetric(2, n, mg, s))
            for n in (6, 8, 12, 20) for mg in (0.05, 0.3) for s in range(4)]
    for beta in (60, 100, 140, 170):
        sets += [(f"pairs at {beta} deg", pairs(beta)), (f"pairs at {beta} deg, norms 1, 0.5", pairs(beta, (1.0, 0.5))),
                 (f"three pairs at {beta} deg", pairs(beta, extra=(0.3, 0.0)))]
    print("2-D, widths 3, 4, 6:", search(sets, (3, 4, 6), 20), f"({time.perf_counter() - t0:.0f} s)")
    more = [(f"symmetric d={d} n={n} seed={s}", symmetric(d, n, 0.05, s)) for d, n in ((3, 12), (3, 30), (2, 8), (2, 40))
            for s in range(3)]
    print("d = 2, 3, widths 5, 8:", search(more, (5, 8), 15), f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
