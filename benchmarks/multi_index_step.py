"""Multi-index paper: one empirical GD step (n = 50,000 samples) vs one exact population GD step.

Mean-field net f(x) = (1/m) sum_i ||w_i||^2 |w_i.x / ||w_i|||, m = 250, d = 100, target
f*(x) = sum_{j<=20} |x_j|, square loss, standard init, GD lr = 0.01 with time scale m (paper eq. 3).

- empirical: ``objective: empirical`` on n = 50,000 Gaussian samples; its cost is the two
  [n, d] x [d, m] products per step. Measured in float32 (the precision of the paper's empirical runs'
  products) and in float64 (the engine default).
- population: ``objective: population``, the exact Gaussian expectation through the closed-form
  dual kernel of |.| (population.py; spec §2.4): O(m^2 d) per step, independent of n; float64 (the
  engine default, compared with the float32 empirical step for the target) and float32.

Each timed call is a whole ``sim.run`` (observing only the loss at the start and the end), divided
by its step count; the configurations alternate repeat by repeat. target: population >= 100x faster.

Run: ``.venv/bin/python benchmarks/multi_index_step.py [--repeats 5] [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, summary, warn_if_busy, write_result  # noqa: E402

D, R, M, N, LR = 100, 20, 250, 50_000, 0.01


def simulation(objective: str, precision: str, steps: int):
    from twolayer.config import load_config
    from twolayer.train import Simulation

    return Simulation(load_config({
        "name": f"bench-multi-index-{objective}", "seed": 0,
        "data": {"kind": "multi_index", "d": D, "r": R, "n": N if objective == "empirical" else 200, "n_test": 200},
        "model": {"kind": "mean_field", "activation": "abs", "width": M},
        "init": {"kind": "standard"},
        "loss": {"kind": "square", "reduction": "mean"},
        "objective": objective,
        "train": {"method": "gd", "lr": LR, "steps": steps},
        "observe": {"schedule": "at", "at": [0], "metrics": ["loss"]},
        "precision": precision,
    }))


def run_once(sim) -> float:
    import jax

    started = time.perf_counter()
    state = sim.run(sim.initial_state())
    jax.block_until_ready(state.params)
    if np.any(np.asarray(state.bad) >= 0):
        raise SystemExit("a run diverged; the timing would be meaningless")
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer steps per timed run")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    import twolayer  # noqa: F401

    started, load = time.perf_counter(), load_average()
    warn_if_busy(load)
    emp_steps, pop_steps = (2, 100) if args.quick else (10, 1000)
    cases = {"empirical_float32": ("empirical", "float32", emp_steps),
             "empirical_float64": ("empirical", "float64", emp_steps),
             "population_float64": ("population", "float64", pop_steps),
             "population_float32": ("population", "float32", pop_steps)}
    sims = {k: simulation(*v) for k, v in cases.items()}
    first = {k: run_once(s) for k, s in sims.items()}
    times = {k: [] for k in sims}
    for _ in range(args.repeats):
        for k, s in sims.items():
            times[k].append(run_once(s) / cases[k][2])
    step = {k: statistics.median(v) for k, v in times.items()}
    pop = step["population_float64"]
    entry = {"d": D, "r": R, "m": M, "n": N, "lr": LR,
             "steps_per_run": {k: v[2] for k, v in cases.items()},
             "step": {k: {**summary(v), "first_call_seconds": first[k]} for k, v in times.items()},
             "speedup_population_over_empirical_float32": step["empirical_float32"] / pop,
             "speedup_population_over_empirical_float64": step["empirical_float64"] / pop,
             "speedup_population_float32_over_empirical_float32": step["empirical_float32"] / step["population_float32"],
             "target_speedup": 100.0}
    entry["target_met"] = entry["speedup_population_over_empirical_float32"] >= 100.0
    print(f"multi_index_step (d={D}, r={R}, m={M}, n={N}; seconds per GD step, medians of {args.repeats}; load {load})")
    for k, s in step.items():
        print(f"  {k:<20} {1e3 * s:10.3f} ms/step")
    print(f"  population speed-up: {entry['speedup_population_over_empirical_float32']:.0f}x over empirical float32, "
          f"{entry['speedup_population_over_empirical_float64']:.0f}x over float64; in float32 both: "
          f"{entry['speedup_population_float32_over_empirical_float32']:.0f}x")
    if not args.no_write:
        write_result("multi_index_step", entry, started=started, load_start=load, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
