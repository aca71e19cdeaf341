"""Seed batching: wall time of 1, 8 and 64 seeds in ONE run (toy problem), as ratios to 1 seed.

Toy problem as in step_speed.py: two-layer ReLU, n=20, d=2, h=50, float64, exponential loss (mean),
full-batch GD, lr = 1e-3, 20,000 steps, observed at the start and the end. The data come from a file;
each seed draws its own Gaussian init (scale 0.1). Every timed call is ``sim.run(sim.initial_state())``
after one compiling warm-up; the seed counts alternate repeat by repeat, and each timed run follows an
untimed run of the same configuration (measured back to back after a 64-seed or width-3200 run, the
1-seed run took twice as long as on its own).

Reference ("arithmetic bound"): ONE seed of width 64 x 50 = 3200 does the same arithmetic as 64
seeds of width 50 (all products and elementwise work are 64x larger), so its wall time is what
perfect batching could reach on this CPU. target: 64 seeds <= 4x 1 seed.

``--sgd``: the same with mini-batch SGD (batch 1) on n = 800 samples, where each epoch draws a permutation of the
800: over batched seeds the step counter is batched, and a plain ``lax.cond`` on it became a select that drew every
seed's permutation at every step (before the fix, 2 seeds cost 8x 1 seed on the online-SGD noise-floor runs).

Run: ``.venv/bin/python benchmarks/seed_batching.py [--repeats 5] [--quick] [--sgd]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, summary, warn_if_busy, write_result  # noqa: E402

N, D, H, LR = 20, 2, 50, 1e-3
SEEDS = (1, 8, 64)


SGD_N = 800


def simulation(folder: Path, seeds: int, width: int, steps: int, sgd: bool = False):
    from twolayer.config import load_config
    from twolayer.train import Simulation

    n = SGD_N if sgd else N
    data = folder / f"toy-{n}.npz"
    if not data.exists():
        rng = np.random.default_rng(0)
        np.savez(data, X=rng.standard_normal((n, D)) / np.sqrt(D), y=rng.choice(np.array([-1.0, 1.0]), size=n))
    train = {"method": "sgd", "lr": LR, "steps": steps, "batch_size": 1} if sgd else {"method": "gd", "lr": LR,
                                                                                        "steps": steps}
    return Simulation(load_config({
        "name": "bench-seeds", "seeds": seeds,
        "data": {"kind": "file", "path": str(data)},
        "model": {"kind": "two_layer", "activation": "relu", "width": width},
        "init": {"kind": "gaussian", "scale": 0.1},
        "loss": {"kind": "exponential", "reduction": "mean"},
        "train": train,
        "observe": {"schedule": "at", "at": [0], "metrics": ["loss"]},
        "precision": "float64",
    }))


def run_once(sim) -> float:
    import jax

    started = time.perf_counter()
    state = sim.run(sim.initial_state())
    jax.block_until_ready(state.params)
    if np.any(np.asarray(state.bad) >= 0) or state.index != len(sim.points):
        raise SystemExit("a seed stopped early; the timing would be meaningless")
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2,000 steps instead of 20,000")
    parser.add_argument("--sgd", action="store_true", help=f"mini-batch SGD (batch 1) on n = {SGD_N} instead of GD")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    import twolayer  # noqa: F401

    started, load = time.perf_counter(), load_average()
    warn_if_busy(load)
    steps = 2_000 if args.quick else 20_000
    with tempfile.TemporaryDirectory(prefix="twolayer-bench-") as tmp:
        sims = {f"seeds_{s}": simulation(Path(tmp), s, H, steps, args.sgd) for s in SEEDS}
        sims["one_seed_width_3200"] = simulation(Path(tmp), 1, H * SEEDS[-1], steps, args.sgd)
        first = {k: run_once(s) for k, s in sims.items()}  # compiles
        times = {k: [] for k in sims}
        for _ in range(args.repeats):
            for k, s in sims.items():
                run_once(s)  # settle: right after a wide run, a 1-seed run measured 2x slow (thread pool, caches)
                times[k].append(run_once(s))
    med = {k: statistics.median(v) for k, v in times.items()}
    method = "sgd (batch 1)" if args.sgd else "gd"
    entry = {"n": SGD_N if args.sgd else N, "d": D, "h": H, "steps": steps, "lr": LR, "precision": "float64",
             "method": method,
             "runs": {k: {**summary(v), "first_call_seconds": first[k], "us_per_step": 1e6 * med[k] / steps}
                      for k, v in times.items()},
             "ratio_to_one_seed": {k: med[k] / med["seeds_1"] for k in med},
             "target_ratio_64": 4.0}
    entry["target_met"] = entry["ratio_to_one_seed"]["seeds_64"] <= 4.0
    print(f"seed_batching (toy n={entry['n']}, d={D}, h={H}, {steps} {method} steps; medians of {args.repeats}; "
          f"load {load})")
    for k in times:
        print(f"  {k:<22} {med[k]:8.3f} s  {1e6 * med[k] / steps:8.2f} us/step  ratio to 1 seed "
              f"{entry['ratio_to_one_seed'][k]:6.2f}x")
    if not args.no_write:
        write_result("seed_batching_sgd" if args.sgd else "seed_batching", entry, started=started, load_start=load, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
