"""The GPU check's measurements and comparison (``benchmarks/gpu_check.sh`` runs it; issue 31, section 4).

``measure`` runs, in one process on the platform JAX_PLATFORMS names, the configs of three benchmarks and
keeps both their timings and their results (``.npz`` of final parameters and losses beside a ``.json``):

- ``step``: the GD step of ``step_speed.py`` (toy n=20, d=2, h=50; MNIST size n=2000, d=784, h=50), one
  compiled run of N steps, timed warm after a compiling run;
- ``seeds``: ``seed_batching.py``'s 1, 8 and 64 seeds of the toy in one run each;
- ``exact_flow``: ``exact_flow.py``'s TOY-A config (flow_exact, width 50, balanced init 1e-8, exp loss, sum,
  to t = 6) cold and warm, with its events, and t1 (Theorem 1) per seed;
- ``ode``: the online-SGD order-parameter ODE of ``online_sgd.py --horizon`` (issue 29: relu K = M = 10, eta = 0.5,
  both layers, eta^2 term, to Goldt time 1e4 by ROS34PW2 at rtol 1e-6), compiled on a short horizon ("cold"),
  then timed ("warm"), with its steps; its cost is 11,550 I4 tuples of 16 nodes per evaluation, which a GPU runs
  in parallel and 2 CPU cores cannot (issue 29's "seconds to t = 1e4").

``compare`` reads the CPU and the device measurement of the same configs and checks each method to its own
tolerance (``TOLERANCES``): GD is one deterministic map, so the two platforms differ only by the order of
float64 sums (relative 1e-9 on the loss after every step of the run, 1e-8 on the parameters); flow_exact
is an adaptive solve at rtol 1e-8, so states and event times agree to its tolerance (1e-6 relative) and the
events one for one; the ODE is an adaptive solve at rtol 1e-6, accurate to ~1e-4 in Q (docs/online_sgd.md: its
solution and Tsit5's differ by up to 5.5e-5 on relu K = M = 10), so Q, R and v at the save times agree to 1e-4.
It writes one JSON file: every check with its tolerance and measured difference, every timing, the
device-over-CPU speed ratios, the machine and the platform each side ran on.

``environment`` imports what the check needs (as the measurement will: numpy, scipy, jax, diffrax, pydantic,
twolayer, the three benchmarks) and records each one's version and origin, the CUDA plugin's among them, and
the carried wheels (``--wheels``) as Python finds them; it exits 1 when an import fails (the file says which).

Sizes: ``full`` (meant for under 8 minutes for both platforms on a 16-core machine with one GPU; not yet
measured on one) and ``tiny`` (a smoke run, for ``make test``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import importlib.metadata
import json
import os
import platform as _platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SIZES = {  # steps of the toy, steps at MNIST size, (n, d) at MNIST size, steps of the seed runs, exact-flow seeds,
    # the ODE's (activation, K = M, Goldt horizon)
    "full": {"toy_steps": 100_000, "mnist_steps": 100, "mnist_nd": (2000, 784), "seed_steps": 20_000,
             "seeds": (1, 8, 64), "flow_seeds": 4, "ode": ("relu", 10, 1e4)},
    "tiny": {"toy_steps": 300, "mnist_steps": 3, "mnist_nd": (200, 78), "seed_steps": 200, "seeds": (1, 4),
             "flow_seeds": 1, "ode": ("relu", 2, 10.0)},
}
TOLERANCES = {
    "gd_loss_rel": 1e-9,  # GD: relative difference of the loss at each observation
    "gd_params_rel": 1e-8,  # GD: max |difference| / max |value| of the final parameters
    "flow_exact_rel": 1e-6,  # flow_exact at rtol 1e-8: final parameters, losses and event times, relative
    "ode_abs": 1e-4,  # the online-SGD ODE at rtol 1e-6: Q, R, v at every save time, absolute
}
FLOW_RTOL = 1e-8
ODE_RTOL = 1e-6


def _timed(fn):
    import jax

    started = time.perf_counter()
    out = fn()
    jax.block_until_ready(out)
    return time.perf_counter() - started, out


def _gd_run(sim):
    state = sim.run(sim.initial_state())
    if np.any(np.asarray(state.bad) >= 0):
        raise SystemExit("a GD seed stopped early; the check would be meaningless")
    return state


def measure_step(folder: Path, size: dict, arrays: dict) -> dict:
    from step_speed import make_problem, twolayer_simulation

    out = {}
    for case, (n, d, h), steps in (("toy", (20, 2, 50), size["toy_steps"]),
                                   ("mnist_size", (*size["mnist_nd"], 50), size["mnist_steps"])):
        X, y, W, v = make_problem(n, d, h)
        sim = twolayer_simulation(folder, X, y, W, v, steps)
        first, _ = _timed(lambda: _gd_run(sim).params)
        wall, state = _timed(lambda: _gd_run(sim))
        final = sim.final_params(state)
        arrays.update({f"step.{case}.{k}": v for k, v in final.items()})
        arrays[f"step.{case}.loss"] = np.asarray(state.records["loss"], dtype=float)
        out[case] = {"n": n, "d": d, "h": h, "steps": steps, "first_call_seconds": first, "seconds": wall,
                     "us_per_step": 1e6 * wall / steps}
    return out


def measure_seeds(folder: Path, size: dict, arrays: dict) -> dict:
    from seed_batching import H, simulation

    out = {}
    for seeds in size["seeds"]:
        sim = simulation(folder, seeds, H, size["seed_steps"])
        first, _ = _timed(lambda: _gd_run(sim).params)
        wall, state = _timed(lambda: _gd_run(sim))
        final = sim.final_params(state)
        arrays.update({f"seeds.{seeds}.{k}": v for k, v in final.items()})
        arrays[f"seeds.{seeds}.loss"] = np.asarray(state.records["loss"], dtype=float)
        out[str(seeds)] = {"steps": size["seed_steps"], "first_call_seconds": first, "seconds": wall,
                           "us_per_step": 1e6 * wall / size["seed_steps"]}
    one = out[str(size["seeds"][0])]["seconds"]
    for entry in list(out.values()):
        entry["ratio_to_one_seed"] = entry["seconds"] / one
    return out


def measure_exact_flow(folder: Path, size: dict, arrays: dict) -> dict:
    import twolayer
    from exact_flow import toy_config

    cfg = toy_config({"method": "flow_exact", "atol": 1e-30, "rtol": FLOW_RTOL}, size["flow_seeds"], 6.0)
    store = folder / "flow-store"
    started = time.perf_counter()
    run = twolayer.run(cfg, out=store, force=True)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    run = twolayer.run(cfg, out=store, force=True)
    warm = time.perf_counter() - started
    final = run.final_params
    arrays.update({f"exact_flow.{k}": np.asarray(v) for k, v in final.items()})
    arrays["exact_flow.loss"] = np.asarray(run.trajectory["loss"], dtype=float)
    with np.load(run.path / "events.npz") as f:
        order = np.lexsort((f["t"], f["seed"]))
        arrays["exact_flow.event_t"] = np.asarray(f["t"], dtype=float)[order]
        arrays["exact_flow.event_seed"] = np.asarray(f["seed"])[order]
        arrays["exact_flow.event_kind"] = np.asarray(f["kind"]).astype(str)[order]
    t1 = run.summary["events"].get("t1")
    arrays["exact_flow.t1"] = np.asarray(t1 if isinstance(t1, list) else [t1], dtype=float)
    return {"config": {k: cfg[k] for k in ("model", "init", "loss", "train", "seeds")}, "status": run.summary["status"],
            "cold_seconds": cold, "warm_seconds": warm, "events": int(arrays["exact_flow.event_t"].size)}


def measure_ode(folder: Path, size: dict, arrays: dict) -> dict:
    from online_sgd import ode_state

    from twolayer.theory.online_sgd import integrate

    activation, K, horizon = size["ode"]
    Q, R, v, T, vstar = ode_state(K, K)
    times = np.concatenate([[0.0], np.geomspace(1e-2, horizon, 40)])
    kw = dict(activation=activation, eta=0.5, solver="ros34pw2", rtol=ODE_RTOL, atol=ODE_RTOL / 100)
    cold, _ = _timed(lambda: integrate(Q, R, v, T, vstar, times * 1e-6, **kw).Q)  # the same program, compiled
    warm, sol = _timed(lambda: integrate(Q, R, v, T, vstar, times, **kw))
    arrays.update({f"ode.{k}": np.asarray(getattr(sol, k)) for k in ("Q", "R", "v", "eps_g")})
    return {"activation": activation, "K": K, "M": K, "eta": 0.5, "horizon": horizon, "solver": "ros34pw2",
            "rtol": ODE_RTOL, "compile_seconds": cold, "seconds": warm, "steps": sol.steps,
            "eps_g_end": float(sol.eps_g[-1])}


PARTS = {"step": measure_step, "seeds": measure_seeds, "exact_flow": measure_exact_flow, "ode": measure_ode}


def measure(platform: str, size_name: str, prefix: Path) -> int:
    import jax

    import twolayer  # noqa: F401  (float64)
    from _common import load_average, machine_info

    backend = jax.default_backend()
    if backend != platform:
        print(f"gpu_check: asked for {platform}, JAX runs on {backend}", file=sys.stderr)
        return 3
    size = SIZES[size_name]
    entry = {"platform": backend, "devices": [str(d) for d in jax.devices()],
             "device_kinds": [getattr(d, "device_kind", None) for d in jax.devices()], "size": size_name,
             "machine": machine_info(), "load_average_start": load_average()}
    arrays: dict = {}
    with tempfile.TemporaryDirectory(prefix="twolayer-gpu-check-") as tmp:
        for name, fn in PARTS.items():
            started = time.perf_counter()
            entry[name] = fn(Path(tmp), size, arrays)
            entry[name]["part_seconds"] = time.perf_counter() - started
            print(f"  {backend}: {name} in {entry[name]['part_seconds']:.1f} s", flush=True)
            # the parts done so far, for a run stopped by the time limit (gpu_check.sh keeps them)
            prefix.with_suffix(".json").write_text(json.dumps({**entry, "complete": False}, indent=2, default=float))
    entry["complete"] = True
    entry["load_average_end"] = load_average()
    np.savez(prefix.with_suffix(".npz"), **arrays)
    prefix.with_suffix(".json").write_text(json.dumps(entry, indent=2, default=float) + "\n")
    return 0


MODULES = ("numpy", "scipy", "jax", "jaxlib", "diffrax", "equinox", "pydantic", "yaml", "threadpoolctl", "twolayer",
           "twolayer.config", "twolayer.train", "twolayer.theory.online_sgd", "_common", "step_speed", "seed_batching",
           "exact_flow", "online_sgd")
DISTRIBUTIONS = ("jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda13-pjrt", "jax-cuda12-plugin", "jax-cuda12-pjrt", "numpy",
                 "scipy", "diffrax", "equinox", "lineax", "optimistix", "jaxtyping", "pydantic", "pydantic-core",
                 "typing-extensions", "PyYAML", "threadpoolctl")


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment(out: Path, wheels: str = "") -> int:
    """Import what the check needs; write the interpreter, the versions and origins, and what is missing."""
    entry = {"python": _platform.python_version(), "executable": sys.executable,
             "pythonpath": os.environ.get("PYTHONPATH", ""), "modules": {}, "missing": {},
             "versions": {d: _version(d) for d in DISTRIBUTIONS}}
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 (every failure is a finding here)
            entry["missing"][name] = f"{type(exc).__name__}: {exc}"
        else:
            entry["modules"][name] = getattr(module, "__file__", None)
    try:  # the GPU as the driver reports it (absent on a machine without one)
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        entry["nvidia_smi"] = smi.stdout.strip() or smi.stderr.strip()
    except (OSError, subprocess.SubprocessError):
        entry["nvidia_smi"] = None
    if wheels and Path(wheels).is_dir():
        names = sorted({w.name.split("-")[0] for w in Path(wheels).glob("*.whl")})
        entry["carried"] = {n: _version(n) for n in names}
    out.write_text(json.dumps(entry, indent=2) + "\n")
    for name, why in entry["missing"].items():
        print(f"gpu_check: cannot import {name}: {why}", file=sys.stderr)
    if entry["missing"]:
        print(f"gpu_check: missing imports: {', '.join(entry['missing'])} (carry their wheels: benchmarks/README.md)",
              file=sys.stderr)
    return 1 if entry["missing"] else 0


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return float("inf")
    scale = np.maximum(np.abs(b), np.finfo(float).tiny)
    return float(np.max(np.abs(a - b) / scale)) if a.size else 0.0


def _rel_to_max(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), np.finfo(float).tiny)) if a.size else 0.0


def _abs(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def compare(reference: Path, device: Path, out: Path, mode: str, install: str, environment_file: Path | None = None,
            wall_seconds: float | None = None) -> int:
    ref, dev = (json.loads(p.with_suffix(".json").read_text()) for p in (reference, device))
    with np.load(reference.with_suffix(".npz")) as f:
        ref_arrays = {k: f[k] for k in f.files}
    with np.load(device.with_suffix(".npz")) as f:
        dev_arrays = {k: f[k] for k in f.files}
    checks = []

    def check(name, measured, tolerance, method):
        checks.append({"name": name, "method": method, "measured": measured, "tolerance": tolerance,
                       "passed": bool(measured <= tolerance)})

    steps, seed_runs = (sorted(k for k, v in ref[part].items() if isinstance(v, dict)) for part in ("step", "seeds"))
    groups = [f"step.{c}" for c in steps] + [f"seeds.{s}" for s in seed_runs]
    for group in groups:
        check(f"{group}: loss at every observation", _rel(dev_arrays[f"{group}.loss"], ref_arrays[f"{group}.loss"]),
              TOLERANCES["gd_loss_rel"], "gd")
        for leaf in ("W", "v"):
            check(f"{group}: final {leaf}", _rel_to_max(dev_arrays[f"{group}.{leaf}"], ref_arrays[f"{group}.{leaf}"]),
                  TOLERANCES["gd_params_rel"], "gd")
    tol = TOLERANCES["flow_exact_rel"]
    same_events = (np.array_equal(dev_arrays["exact_flow.event_seed"], ref_arrays["exact_flow.event_seed"])
                   and np.array_equal(dev_arrays["exact_flow.event_kind"], ref_arrays["exact_flow.event_kind"]))
    check("exact_flow: the same events (seed and kind, in time order)", 0.0 if same_events else 1.0, 0.0, "flow_exact")
    if same_events:
        check("exact_flow: event times", _rel(dev_arrays["exact_flow.event_t"], ref_arrays["exact_flow.event_t"]), tol,
              "flow_exact")
    check("exact_flow: t1 per seed", _rel(dev_arrays["exact_flow.t1"], ref_arrays["exact_flow.t1"]), tol, "flow_exact")
    check("exact_flow: loss at every observation", _rel(dev_arrays["exact_flow.loss"], ref_arrays["exact_flow.loss"]),
          tol, "flow_exact")
    for leaf in ("W", "v"):
        check(f"exact_flow: final {leaf}", _rel_to_max(dev_arrays[f"exact_flow.{leaf}"], ref_arrays[f"exact_flow.{leaf}"]),
              tol, "flow_exact")
    for leaf in ("Q", "R", "v"):
        check(f"ode: {leaf} at every save time", _abs(dev_arrays[f"ode.{leaf}"], ref_arrays[f"ode.{leaf}"]),
              TOLERANCES["ode_abs"], "online-SGD ODE")
    speed = {f"step.{c}": ref["step"][c]["seconds"] / dev["step"][c]["seconds"] for c in steps}
    speed.update({f"seeds.{s}": ref["seeds"][s]["seconds"] / dev["seeds"][s]["seconds"] for s in seed_runs})
    speed["exact_flow.warm"] = ref["exact_flow"]["warm_seconds"] / dev["exact_flow"]["warm_seconds"]
    speed["exact_flow.cold"] = ref["exact_flow"]["cold_seconds"] / dev["exact_flow"]["cold_seconds"]
    speed["ode.warm"] = ref["ode"]["seconds"] / dev["ode"]["seconds"]
    result = {
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "mode": mode,
        "install": install, "size": dev["size"], "tolerances": TOLERANCES, "checks": checks,
        "passed": all(c["passed"] for c in checks),
        "speed_ratio_cpu_seconds_over_device_seconds": speed,
        "reference": ref, "device": dev,
    }
    if environment_file is not None and environment_file.exists():
        result["environment"] = json.loads(environment_file.read_text())
    if wall_seconds is not None:
        result["wall_seconds"] = wall_seconds
    out.write_text(json.dumps(result, indent=2, default=float) + "\n")
    for c in checks:
        print(f"  {'ok  ' if c['passed'] else 'FAIL'} {c['name']}: {c['measured']:.3g} (tolerance {c['tolerance']:g})")
    for k, r in speed.items():
        print(f"  speed {k}: {dev['platform']} {r:.2f}x the CPU")
    print(f"gpu_check: {'passed' if result['passed'] else 'FAILED'}; wrote {out}")
    return 0 if result["passed"] else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure", help="run the configs on the platform JAX_PLATFORMS selects")
    m.add_argument("--platform", choices=["cpu", "gpu"], required=True, help="the backend JAX must report")
    m.add_argument("--size", choices=sorted(SIZES), default="full")
    m.add_argument("--prefix", type=Path, required=True, help="writes PREFIX.json and PREFIX.npz")
    c = sub.add_parser("compare", help="check a device measurement against the CPU one; write one JSON")
    c.add_argument("--reference", type=Path, required=True, help="PREFIX of the CPU measurement")
    c.add_argument("--device", type=Path, required=True, help="PREFIX of the device measurement")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--mode", default="cuda")
    c.add_argument("--install", default="")
    c.add_argument("--environment", type=Path, help="the file `environment` wrote, kept in the result")
    c.add_argument("--wall-seconds", type=float, help="the whole check's wall time so far, kept in the result")
    e = sub.add_parser("environment", help="import what the check needs; record versions, origins, what is missing")
    e.add_argument("--out", type=Path, required=True)
    e.add_argument("--wheels", default="", help="the folder of carried wheels, to record how each one is found")
    args = parser.parse_args(argv)
    if args.command == "measure":
        return measure(args.platform, args.size, args.prefix)
    if args.command == "environment":
        return environment(args.out, args.wheels)
    return compare(args.reference, args.device, args.out, args.mode, args.install, args.environment,
                   args.wall_seconds)


if __name__ == "__main__":
    raise SystemExit(main())
