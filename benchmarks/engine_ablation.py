"""Before/after of issue 8's engine changes, in one process: each case runs with the engine as shipped
("after"), with every change that concerns it switched off ("before"), and with one change off at a time
("without_<change>").

Changes (``SWITCHES``; each is switched off by patching a module attribute while the case is traced):

- ``seed_map``: a run with ONE seed calls the method's advance (and the observables) unbatched instead
  of through ``vmap`` with a size-1 seed axis (train/loop.py);
- ``rows_dot``: for data with >= 2^16 entries the first-layer gradient ct' X is a row-major product
  (custom VJP in nets.py) instead of autodiff's dot contracting the first axes;
- ``zero_columns``: input columns that are zero in every sample are left out of both products
  (problem.support_arrays; MNIST pixels at the border);
- ``fast_arcsin``: the dual kernels use the branch-free rational arcsin (activations.arcsin) instead
  of ``jnp.arcsin``, which XLA:CPU lowers to a scalar call per element;
- ``kernel_form``: the population loss's c' kappa(U U') c has a hand-written derivative, one extra
  product instead of autodiff through the Gram matrix and the kernel (population.kernel_quadratic_form).

Cases: the MNIST-size GD step of step_speed.py (random data, n=2000, d=784, h=50, float64, 100 steps per
run), the same step on the real MNIST 0/1 pair (when its files are found), the multi-index empirical
step of multi_index_step.py (n=50,000, d=100, m=250; float32 and float64, 10 steps per run) and its
exact population step (float64, 1000 steps per run). Per-step seconds, medians of alternating repeats.

Run: ``.venv/bin/python benchmarks/engine_ablation.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, summary, warn_if_busy, write_result  # noqa: E402


@contextlib.contextmanager
def _patched(module, name: str, value):
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


def _switch_off(change: str):
    """A context manager under which ``change`` is switched off (the engine before it)."""
    import jax
    import jax.numpy as jnp

    from twolayer import activations, nets, population, problem
    from twolayer.train import loop

    return {
        "seed_map": lambda: _patched(loop, "seed_map", lambda fn, in_axes, name="mapped": jax.vmap(fn, in_axes=in_axes)),
        "rows_dot": lambda: _patched(nets, "ROWS_DOT_FAST_MIN_SIZE", 1 << 62),
        "zero_columns": lambda: _patched(problem, "ZERO_COLUMNS_MIN_FRACTION", 2.0),
        "fast_arcsin": lambda: _patched(activations, "arcsin", jnp.arcsin),
        "kernel_form": lambda: _patched(population, "kernel_quadratic_form",
                                        lambda c, U, kappa: c @ kappa(U @ U.T) @ c),
    }[change]()


SWITCHES = ("seed_map", "rows_dot", "zero_columns", "fast_arcsin", "kernel_form")


def build(make, off: tuple[str, ...]):
    """A Simulation traced and compiled with the changes in ``off`` switched off (kept compiled by it)."""
    from twolayer.train import loop

    loop.compiled_advance.cache_clear()
    loop.compiled_observe.cache_clear()
    with contextlib.ExitStack() as stack:
        for change in off:
            stack.enter_context(_switch_off(change))
        sim, run = make()
        run(sim)  # trace + compile now, with the switches set
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
    with tempfile.TemporaryDirectory(prefix="twolayer-bench-") as tmp:
        X, y, W, v = ss.make_problem(2000, 784, 50)
        pair = ss.mnist_pair_data()
        engine = ("seed_map", "rows_dot")
        cases = {
            "mnist_size_float64": (100, engine, lambda: (ss.twolayer_simulation(Path(tmp), X, y, W, v, 100),
                                                         lambda s: ss.twolayer_run(s)[0])),
            "multi_index_empirical_float32": (10, engine, lambda: (mi.simulation("empirical", "float32", 10),
                                                                   mi.run_once)),
            "multi_index_empirical_float64": (10, engine, lambda: (mi.simulation("empirical", "float64", 10),
                                                                   mi.run_once)),
            "multi_index_population_float64": (1000, ("seed_map", "fast_arcsin", "kernel_form"),
                                               lambda: (mi.simulation("population", "float64", 1000), mi.run_once)),
        }
        if pair is not None:
            Xp, yp, Wp, vp = ss.make_problem(len(pair[0]), 784, 50, data=pair)
            (Path(tmp) / "pair").mkdir()
            cases["mnist_pair_float64"] = (100, engine + ("zero_columns",), lambda: (
                ss.twolayer_simulation(Path(tmp) / "pair", Xp, yp, Wp, vp, 100), lambda s: ss.twolayer_run(s)[0]))
        out = {}
        for case, (steps, changes, make) in cases.items():
            variants = {"before": changes, "after": (), **{f"without_{c}": (c,) for c in changes}}
            sims = {k: build(make, off) for k, off in variants.items()}
            times = {k: [] for k in sims}
            for _ in range(args.repeats):
                for k, (sim, run) in sims.items():
                    times[k].append(run(sim) / steps)
            med = {k: statistics.median(t) for k, t in times.items()}
            out[case] = {"steps_per_run": steps, "changes": list(changes),
                         "step": {k: summary(t) for k, t in times.items()},
                         "speedup_after_over_before": med["before"] / med["after"],
                         "speedup_from": {c: med[f"without_{c}"] / med["after"] for c in changes}}
            print(f"{case}: " + ", ".join(f"{k} {1e3 * m:.3f} ms" for k, m in med.items())
                  + f" -> {med['before'] / med['after']:.2f}x", flush=True)
    if not args.no_write:
        write_result("engine_ablation", {"cases": out, "switches": list(SWITCHES)},
                     started=started, load_start=load, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
