"""Before/after of issue 8's engine changes, in one process: each case runs with the engine as shipped
and with a change switched off.

- ``seed_map``: a run with ONE seed calls the method's advance (and the observables) unbatched instead
  of through ``vmap`` with a size-1 seed axis (train/loop.py);
- ``rows_dot``: for data with >= 2^16 entries the first-layer gradient ct' X is a row-major product
  (custom VJP in nets.py) instead of autodiff's dot contracting the first axes.

"before" = both off (the engine before issue 8), "after" = both on. Cases: the MNIST-size GD step of
step_speed.py (n=2000, d=784, h=50, float64, 100 steps per run) and the multi-index empirical step of
multi_index_step.py (n=50,000, d=100, m=250; float32 and float64, 10 steps per run). Per-step seconds,
medians of alternating repeats.

Run: ``.venv/bin/python benchmarks/engine_ablation.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, summary, warn_if_busy, write_result  # noqa: E402


def build(make, seed_map_on: bool, rows_dot_on: bool):
    """A Simulation traced and compiled with the given switches (kept compiled by the Simulation)."""
    import jax

    from twolayer import nets
    from twolayer.train import loop

    saved_map, saved_min = loop.seed_map, nets.ROWS_DOT_FAST_MIN_SIZE
    if not seed_map_on:
        loop.seed_map = lambda fn, in_axes: jax.vmap(fn, in_axes=in_axes)
    if not rows_dot_on:
        nets.ROWS_DOT_FAST_MIN_SIZE = 1 << 62
    loop.compiled_advance.cache_clear()
    loop.compiled_observe.cache_clear()
    try:
        sim, run = make()
        run(sim)  # trace + compile now, with the switches set
    finally:
        loop.seed_map, nets.ROWS_DOT_FAST_MIN_SIZE = saved_map, saved_min
        loop.compiled_advance.cache_clear()
        loop.compiled_observe.cache_clear()
    return sim, run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    import twolayer  # noqa: F401
    import multi_index_step as mi
    import step_speed as ss

    started, load = time.perf_counter(), load_average()
    warn_if_busy(load)
    variants = {"before": (False, False), "seed_map_only": (True, False), "rows_dot_only": (False, True),
                "after": (True, True)}
    with tempfile.TemporaryDirectory(prefix="twolayer-bench-") as tmp:
        X, y, W, v = ss.make_problem(2000, 784, 50)
        cases = {
            "mnist_size_float64": (100, lambda: (ss.twolayer_simulation(Path(tmp), X, y, W, v, 100),
                                                 lambda s: ss.twolayer_run(s)[0])),
            "multi_index_empirical_float32": (10, lambda: (mi.simulation("empirical", "float32", 10), mi.run_once)),
            "multi_index_empirical_float64": (10, lambda: (mi.simulation("empirical", "float64", 10), mi.run_once)),
        }
        out = {}
        for case, (steps, make) in cases.items():
            sims = {k: build(make, *sw) for k, sw in variants.items()}
            times = {k: [] for k in sims}
            for _ in range(args.repeats):
                for k, (sim, run) in sims.items():
                    times[k].append(run(sim) / steps)
            med = {k: statistics.median(t) for k, t in times.items()}
            out[case] = {"steps_per_run": steps, "step": {k: summary(t) for k, t in times.items()},
                         "speedup_after_over_before": med["before"] / med["after"]}
            print(f"{case}: " + ", ".join(f"{k} {1e3 * m:.2f} ms" for k, m in med.items())
                  + f" -> {med['before'] / med['after']:.2f}x", flush=True)
    if not args.no_write:
        write_result("engine_ablation", {"cases": out, "switches": {k: {"seed_map": a, "rows_dot": b}
                                                                    for k, (a, b) in variants.items()}},
                     started=started, load_start=load, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
