"""Bitwise reference outputs of the event-driven integrator (``train/event_flow.py``): flow_exact and flow_log.

``save DIR`` runs every config of ``configs`` (engine only: ``Simulation``, the event table, and the trajectory
events refined to solver accuracy) and writes one ``DIR/NAME.npz`` each; ``check DIR`` runs them again and
compares every array with ``np.array_equal`` (NaN equal to NaN), printing the names of the arrays that differ.
A refactor of the integrator that must not change its outputs is checked by ``save`` before and ``check``
after. ``--only NAME ...`` restricts to some configs.

``time DIR`` measures the event-driven advance program of the configs of ``TIMED`` (those of
``benchmarks/exact_flow.py``: TOY-A t1 by flow_exact, lyu2021 sign-groups m2 and symmetric at quick scale by the
event-driven flow_log): tracing and lowering, program size, XLA compile time (best of ``--repeats``) and the
run over [0, train.time] in one interval (best and median of ``--repeats``), written to ``DIR/timing.json``. Run
it with ``TWOLAYER_JAX_CACHE=off`` so that the program compiles in this process.

``benchmarks/reference/event_flow/`` holds the references of the integrator before issue 24 (commit fbfee00, before
its refactor; jax 0.10.2, XLA:CPU on x86-64), which the refactored one reproduces bit for bit: ``check`` against them
on this platform; on another CPU or jax version save fresh ones before a change and check after it.

Run: ``.venv/bin/python benchmarks/event_flow_reference.py check benchmarks/reference/event_flow`` (about 3
minutes on 2 cores with a cold compilation cache), or ``save DIR`` before a change and ``check DIR`` after it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TOY = {"kind": "toy2d"}
EXACT = {"method": "flow_exact", "rtol": 1e-11, "atol": 1e-30}
METRICS = ["loss", "imbalance", "v", "w_norm"]


def _toy(train, init, *, width=8, seeds=3, points=12, metrics=METRICS, loss="exponential", reduction="sum",
         activation="relu", **extra):
    return {"name": "ref", "data": TOY, "model": {"kind": "two_layer", "activation": activation, "width": width},
            "init": init, "loss": {"kind": loss, "reduction": reduction}, "train": train,
            "observe": {"points": points, "metrics": list(metrics)}, "seeds": seeds, **extra}


def _single_neuron(files: Path, label: float, a: float) -> dict:
    """Min et al. App. E.3 (label -1) and E.4 (label +1): x = [1, 0], w(0) = [0, 1], v(0) = 1, sigma'(0) = a."""
    tag = f"{label:+g}_{a:g}"
    np.savez(files / f"data{tag}.npz", X=np.array([[1.0, 0.0]]), y=np.array([label]))
    np.savez(files / f"init{tag}.npz", W=np.array([[0.0, 1.0]]), v=np.array([1.0]))
    act = "relu" if a == 0 else {"name": "relu", "grad_at_zero": a}
    return {"name": "e34", "data": {"kind": "file", "path": str(files / f"data{tag}.npz")},
            "init": {"kind": "file", "path": str(files / f"init{tag}.npz")}, "model": {"activation": act},
            "loss": {"kind": "exponential", "reduction": "sum"},
            "train": {"method": "flow_exact", "time": 1.0, "rtol": 1e-11, "atol": 1e-14},
            "observe": {"points": 4, "metrics": ["loss"]}}


def configs(files: Path) -> dict[str, dict]:
    gauss = {"kind": "gaussian", "scale": 0.3}
    leaky = {"name": "leaky_relu", "slope": 0.2}
    late = {"data": {"kind": "separable_ball", "d": 3, "n": 24, "seed": 3},
            "model": {"kind": "two_layer", "activation": leaky, "width": 9},
            "init": {"kind": "balanced", "scale": 1e-4}, "loss": {"kind": "logistic", "reduction": "mean"},
            "train": {"method": "flow_log", "time": 20.0, "rtol": 1e-6, "atol": 1e-300, "max_solver_steps": 20000},
            "observe": {"points": 12, "metrics": ["log_loss", "normalized_margin"]}, "seeds": 2, "name": "late"}
    groups = {"data": {"kind": "symmetric_separable", "d": 2, "n": 20, "margin": 0.1, "seed": 0},
              "model": {"kind": "two_layer", "activation": leaky, "width": 2},
              "init": {"kind": "balanced", "scale": 1e-4}, "loss": {"kind": "logistic", "reduction": "mean"},
              "train": {"method": "flow_log", "time": 4000.0, "rtol": 1e-6, "atol": 1e-300, "solver": "tsit5"},
              "observe": {"schedule": "log", "points": 60, "metrics": [
                  "log_loss", "normalized_margin", "margin_ratio", "group_mass", "smoothed_margin"]},
              "seeds": 6, "name": "groups"}  # lyu2021/sign-groups m2 (quick scale), 6 seeds
    return {
        "exact_relu_gauss": _toy({**EXACT, "time": 3.0}, gauss, points=30),
        "exact_relu_balanced": _toy({**EXACT, "time": 40.0}, {"kind": "balanced", "scale": 1e-6}, points=40,
                                    metrics=METRICS + ["cone", "subnet_fit"]),
        "exact_leaky_decay_dopri5": _toy({**EXACT, "time": 4.0, "solver": "dopri5", "weight_decay": 0.05}, gauss,
                                         activation=leaky, loss="logistic", reduction="mean"),
        "exact_abs_first_dopri8": _toy({**EXACT, "time": 2.0, "solver": "dopri8", "layers": "first"}, gauss,
                                       activation="abs", loss="logistic", reduction="mean", seeds=2),
        "exact_sym_relu_f32": _toy({"method": "flow_exact", "time": 2.0, "rtol": 1e-6, "atol": 1e-12}, gauss,
                                   activation="sym_relu", precision="float32", seeds=2),
        "exact_linear": _toy({**EXACT, "time": 3.0}, gauss, activation="linear", seeds=2),
        "exact_relu_a_square": _toy({"method": "flow_exact", "time": 2.0, "rtol": 1e-9, "atol": 1e-20}, gauss,
                                    activation={"name": "relu", "grad_at_zero": 0.5}, loss="square", seeds=2),
        "e3_stay": _single_neuron(files, -1.0, 0.0),
        "e3_fail": _single_neuron(files, -1.0, 0.5),
        "e4_nonunique": _single_neuron(files, 1.0, 0.0),
        "e4_leave": _single_neuron(files, 1.0, 0.5),
        "log_leaky_slides": late,
        "log_sign_groups": groups,
        "log_relu_exponential": {**late, "model": {"kind": "two_layer", "activation": "relu", "width": 6},
                                 "loss": {"kind": "exponential", "reduction": "sum"}, "name": "late-exp",
                                 "train": {**late["train"], "time": 8.0}},
    }


def _toy_t1(rtol: float) -> dict:
    """benchmarks/exact_flow.py's toy_t1: TOY-A, width 50, balanced 1e-8, exp-sum, 4 seeds, to t = 6."""
    return {"name": "bench-toy", "data": {"kind": "toy2d"},
            "model": {"kind": "two_layer", "activation": "relu", "width": 50},
            "init": {"kind": "balanced", "scale": 1e-8}, "loss": {"kind": "exponential", "reduction": "sum"},
            "train": {"method": "flow_exact", "atol": 1e-30, "rtol": rtol, "time": 6.0},
            "observe": {"points": 60, "metrics": ["loss", "cone", "v"]}, "seeds": 4}


_LEAKY = {"name": "leaky_relu", "slope": 0.2}
_LOG_TRAIN = {"method": "flow_log", "rtol": 1e-6, "atol": 1e-300, "solver": "tsit5"}
TIMED = {
    "toy_t1_rtol1e-8": _toy_t1(1e-8),
    "toy_t1_rtol1e-10": _toy_t1(1e-10),
    "sign_groups_m2_quick": {  # lyu2021/sign-groups m2, quick scale
        "name": "bench-sg", "data": {"kind": "symmetric_separable", "d": 2, "n": 20, "margin": 0.1, "seed": 0},
        "model": {"kind": "two_layer", "activation": _LEAKY, "width": 2}, "init": {"kind": "balanced", "scale": 1e-4},
        "loss": {"kind": "logistic", "reduction": "mean"}, "train": {**_LOG_TRAIN, "time": 4000.0},
        "observe": {"schedule": "log", "points": 60, "metrics": [
            "log_loss", "normalized_margin", "margin_ratio", "group_mass", "boundary_linearity", "smoothed_margin"]},
        "seeds": 48},
    "symmetric_quick": {  # lyu2021/symmetric, quick scale
        "name": "bench-sym", "data": {"kind": "symmetric_separable", "d": 5, "n": 60, "margin": 0.1, "seed": 0},
        "model": {"kind": "two_layer", "activation": _LEAKY, "width": 20}, "init": {"kind": "balanced", "scale": 1e-4},
        "loss": {"kind": "logistic", "reduction": "mean"}, "train": {**_LOG_TRAIN, "time": 10000.0},
        "observe": {"schedule": "log", "points": 60, "metrics": [
            "log_loss", "normalized_margin", "smoothed_margin", "margin_ratio", "group_mass", "cos_wstar",
            "balancedness", "nonlinearity", "boundary_linearity", "kkt_residual"]},
        "seeds": 3},
}


def timing(cfg: dict, repeats: int) -> dict:
    """The event-driven advance program of a config, timed alone: tracing and lowering (s) and XLA compile wall and
    CPU seconds (best of ``repeats``, each from cleared caches), its size (lines of StableHLO, instructions of the
    optimized HLO), and one interval over the whole run, [0, train.time], warm (best and median of ``repeats``)."""
    import jax
    import jax.numpy as jnp

    from twolayer.config import load_config
    from twolayer.train import Simulation

    sim = Simulation(load_config(cfg))
    state = sim.initial_state()
    shape = (len(sim.seeds),)
    args = (state.params, sim.keys, jnp.asarray(state.bad), jnp.broadcast_to(sim._point(0.0), shape),
            jnp.broadcast_to(sim._point(sim.times[-1]), shape), sim.ctx, sim.hyper)
    lower_s, compile_wall, compile_cpu = [], [], []
    for _ in range(repeats):  # each time from scratch: a Lowered compiles once, jit caches its traces
        jax.clear_caches()
        started = time.perf_counter()
        lowered = sim._advance.lower(*args)
        lower_s.append(time.perf_counter() - started)
        wall, cpu = time.perf_counter(), time.process_time()
        compiled = lowered.compile()
        compile_wall.append(time.perf_counter() - wall)
        compile_cpu.append(time.process_time() - cpu)
    jax.block_until_ready(compiled(*args))
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        runs.append(time.perf_counter() - started)
    hlo = compiled.as_text() or ""
    return {"trace_lower_s": min(lower_s), "stablehlo_lines": lowered.as_text().count("\n"),
            "hlo_instructions": sum(" = " in line for line in hlo.splitlines()),
            "compile_s": min(compile_wall), "compile_cpu_s": min(compile_cpu), "compile_all_s": compile_wall,
            "run_s": min(runs), "run_median_s": float(np.median(runs)), "runs_s": runs,
            "codes": [int(c) for c in np.asarray(out[2])]}


def outputs(cfg: dict) -> dict[str, np.ndarray]:
    """Everything a run computes from the integrator: trajectory, final parameters, the event table, the
    stop codes and the trajectory events (refined to solver accuracy where the method refines)."""
    from twolayer.config import load_config
    from twolayer.events import detect_events
    from twolayer.train import Simulation

    loaded = load_config(cfg)
    sim = Simulation(loaded)
    state = sim.run(sim.initial_state())
    traj = sim.trajectory(state)
    out = {f"traj/{k}": np.asarray(v) for k, v in traj.items()}
    out.update({f"final/{k}": np.asarray(v) for k, v in sim.final_params(state).items()})
    out.update({f"events/{k}": np.asarray(v) for k, v in (sim.event_table(state) or {}).items()})
    out["code"], out["bad"] = np.asarray(state.code), np.asarray(state.bad)
    events = detect_events(traj, loaded)
    if sim.method.events is not None and sim.method.events.refine:
        from twolayer.train.event_times import refine_events

        events = refine_events(sim, state, traj, events)[0]  # (events, uncertainty)
    for k, v in (events or {}).items():
        out[f"detected/{k}"] = np.asarray([np.nan if x is None else x for x in np.ravel(v)], dtype=float)
    return out


def equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if np.issubdtype(a.dtype, np.floating):
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["save", "check", "time"])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--only", nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    args.dir.mkdir(parents=True, exist_ok=True)
    if args.action == "time":
        import json

        results = {}
        for name in args.only or TIMED:
            results[name] = timing(TIMED[name], args.repeats)
            r = results[name]
            print(f"{name}: trace+lower {r['trace_lower_s']:.2f} s, {r['stablehlo_lines']} StableHLO lines, "
                  f"{r['hlo_instructions']} HLO instructions, compile {r['compile_s']:.2f} s (CPU "
                  f"{r['compile_cpu_s']:.2f} s), run {r['run_s']:.3f} s (median {r['run_median_s']:.3f} s)", flush=True)
        (args.dir / "timing.json").write_text(json.dumps(results, indent=1))
        return 0
    files = Path(tempfile.mkdtemp(prefix="event-flow-ref-"))
    cases = configs(files)
    failures = []
    for name in args.only or cases:
        started = time.perf_counter()
        got = outputs(cases[name])
        wall = time.perf_counter() - started
        path = args.dir / f"{name}.npz"
        if args.action == "save":
            np.savez_compressed(path, **got)
            print(f"{name}: saved {len(got)} arrays ({wall:.1f} s)", flush=True)
            continue
        with np.load(path) as f:
            ref = {k: f[k] for k in f.files}
        differ = sorted(k for k in set(ref) | set(got) if k not in ref or k not in got or not equal(ref[k], got[k]))
        print(f"{name}: {'bitwise equal' if not differ else 'DIFFERS: ' + ', '.join(differ)} "
              f"({len(ref)} arrays, {wall:.1f} s)", flush=True)
        if differ:
            failures.append(name)
    if failures:
        print(f"differ: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
