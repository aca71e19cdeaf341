"""The one line each issue-29 spread script prints per statistic (imported by its siblings: a script's own folder is
on sys.path when it runs)."""
import numpy as np


def report(name, xs):
    """``name: mean +- sd (n), min, max; mean - 3 sd, mean + 3 sd`` of the values ``xs``."""
    a = np.asarray(xs, float)
    m, sd = a.mean(), a.std(ddof=1)
    print(f"{name}: {m:.5g} +- {sd:.3g} (n = {a.size}), min {a.min():.5g}, max {a.max():.5g}; "
          f"mean - 3 sd {m - 3 * sd:.5g}, mean + 3 sd {m + 3 * sd:.5g}", flush=True)
