"""GD steps per second: twolayer's compiled engine vs a naive PyTorch eager loop.

Two-layer ReLU net f(x) = sum_j v_j relu(w_j . x), exponential loss (mean), float64, full-batch
GD with lr = 1e-3, both layers trained, on a toy problem (n=20, d=2, h=50) and an MNIST-pair-sized
one (n=2000, d=784, h=50); random data X ~ N(0, I/d), y = +-1, fixed seeds; init N(0, 0.1^2).
A third case, ``mnist_pair``, runs the same step on the real MNIST 0/1 pair (test split, centred,
n=2115, d=784) when the IDX files are found (``TWOLAYER_DATA``): a quarter of its pixel columns are
zero in every image, and twolayer's GD leaves them out of both products (``problem.support_arrays``).

- twolayer is driven exactly as a user drives it: a config dict (data and init from `.npz` files)
  through ``load_config`` and ``Simulation``; ``sim.run(sim.initial_state())`` runs all N steps in
  one compiled while_loop and observes the loss at the start and the end only. One warm-up run
  compiles; the timed runs must not recompile (checked through the jit cache size).
- PyTorch is the way a research script is written: leaf tensors with requires_grad, torch.optim.SGD,
  a Python loop of zero_grad / forward / backward / step, default threading.
- Both measurements alternate repeat by repeat in the same process, so both see the same machine
  load; medians and the ratio twolayer/torch are printed and written to benchmarks/results.json
  (under the key "step_speed"; other benchmarks' entries are kept).
- Correctness: from the same init and data, the losses after 50 steps must agree to 1e-10
  relative, else the script exits with status 1.
- Diagnostics (toy case, skip with --skip-diagnostics): the engine with its per-step finiteness
  check patched out, and a bare jax.lax.fori_loop GD with no engine around it, to show what the
  engine's per-step bookkeeping costs.

Run: ``make bench`` or ``.venv/bin/python benchmarks/step_speed.py [--repeats 7] [--quick]``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results.json"
LR = 1e-3
INIT_STD = 0.1
CHECK_STEPS = 50
CHECK_RTOL = 1e-10

# name, n, d, h, twolayer steps per timed run, torch steps per timed repeat, torch warm-up steps
CASES = [
    ("toy", 20, 2, 50, 100_000, 2_000, 200),
    ("mnist_size", 2000, 784, 50, 100, 300, 20),
    ("mnist_pair", 2115, 784, 50, 100, 300, 20),  # the real 0/1 test-split pair; skipped without MNIST files
]


def mnist_pair_data():
    """The MNIST 0/1 pair (test split, centred, n = 2115) as twolayer builds it, or None without the files.
    278 of its 784 pixel columns are zero in every image; twolayer's GD drops them, a plain loop does not."""
    from twolayer.config import load_config
    from twolayer.data import build_dataset
    from twolayer.data.mnist import available

    if available(splits=("test",)) is None:
        return None
    cfg = load_config({"name": "bench-mnist", "data": {"kind": "mnist_pair", "digits": [0, 1], "split": "test"},
                       "model": {"kind": "two_layer", "activation": "relu", "width": 1},
                       "train": {"method": "gd", "lr": LR, "steps": 1}})
    ds = build_dataset(cfg.data)
    return np.asarray(ds.X, dtype=np.float64), np.asarray(ds.y, dtype=np.float64)


def make_problem(n: int, d: int, h: int, seed: int = 0, data=None):
    """Random data X ~ N(0, I/d), y = +-1 (or the given ``data``), and a N(0, INIT_STD^2) init."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    if data is not None:
        X, y = data
    W = INIT_STD * rng.standard_normal((h, d))
    v = INIT_STD * rng.standard_normal(h)
    return X, y, W, v


# -- twolayer -------------------------------------------------------------------------------------
def twolayer_simulation(folder: Path, X, y, W, v, steps: int):
    from twolayer.config import load_config
    from twolayer.train import Simulation

    data, init = folder / "data.npz", folder / "init.npz"
    np.savez(data, X=X, y=y)
    np.savez(init, W=W, v=v)
    cfg = load_config({
        "name": "bench",
        "data": {"kind": "file", "path": str(data)},
        "model": {"kind": "two_layer", "activation": "relu", "width": int(W.shape[0])},
        "init": {"kind": "file", "path": str(init)},
        "loss": {"kind": "exponential", "reduction": "mean"},
        "train": {"method": "gd", "lr": LR, "steps": steps},
        "observe": {"schedule": "at", "at": [0], "metrics": ["loss"]},
        "precision": "float64",
    })
    return Simulation(cfg)


def twolayer_run(sim):
    """One user-level run: all steps, observed at the start and the end; returns (seconds, state)."""
    import jax

    started = time.perf_counter()
    state = sim.run(sim.initial_state())
    jax.block_until_ready(state.params)
    seconds = time.perf_counter() - started
    if np.any(np.asarray(state.bad) >= 0) or state.index != len(sim.points):
        raise SystemExit(f"twolayer run stopped early (bad={state.bad}); the timing would be meaningless")
    return seconds, state


def jit_cache_size(sim) -> int | None:
    size = getattr(sim._advance, "_cache_size", None)  # private JAX API; diagnostics only
    return size() if callable(size) else None


# -- PyTorch --------------------------------------------------------------------------------------
class TorchGD:
    """The naive research-script loop: autograd, an optimizer, a Python loop."""

    def __init__(self, X, y, W, v):
        import torch

        self.torch = torch
        self.X, self.y = torch.tensor(X), torch.tensor(y)
        self.W0, self.v0 = torch.tensor(W), torch.tensor(v)
        self.W = self.W0.clone().requires_grad_(True)
        self.v = self.v0.clone().requires_grad_(True)
        self.opt = torch.optim.SGD([self.W, self.v], lr=LR)

    def loss(self):
        return self.torch.exp(-self.y * (self.torch.relu(self.X @ self.W.T) @ self.v)).mean()

    def reset(self):
        with self.torch.no_grad():
            self.W.copy_(self.W0)
            self.v.copy_(self.v0)

    def train(self, steps: int) -> float:
        started = time.perf_counter()
        for _ in range(steps):
            self.opt.zero_grad()
            loss = self.loss()
            loss.backward()
            self.opt.step()
        return time.perf_counter() - started


# -- measurements ---------------------------------------------------------------------------------
def agreement(folder: Path, X, y, W, v) -> dict:
    """Losses (and parameters) after CHECK_STEPS steps of twolayer and of the PyTorch loop."""
    sim = twolayer_simulation(folder, X, y, W, v, CHECK_STEPS)
    _, state = twolayer_run(sim)
    ours = float(state.records["loss"][-1][0])
    final = sim.final_params(state)
    ref = TorchGD(X, y, W, v)
    ref.train(CHECK_STEPS)
    with ref.torch.no_grad():
        theirs = float(ref.loss())
        params = {"W": ref.W.numpy(), "v": ref.v.numpy()}
    rel = abs(ours - theirs) / abs(theirs)
    param_rel = max(float(np.max(np.abs(final[k] - params[k])) / np.max(np.abs(params[k]))) for k in params)
    return {"steps": CHECK_STEPS, "loss_twolayer": ours, "loss_torch": theirs, "loss_rel_diff": rel,
            "params_max_rel_diff": param_rel, "ok": bool(rel <= CHECK_RTOL)}


def bench_case(name, n, d, h, tl_steps, torch_steps, torch_warmup, repeats, folder: Path, data=None) -> dict:
    X, y, W, v = make_problem(n, d, h, data=data)
    check = agreement(folder, X, y, W, v)

    sim = twolayer_simulation(folder, X, y, W, v, tl_steps)
    first_s, _ = twolayer_run(sim)  # compiles
    second_s, _ = twolayer_run(sim)
    cache_after_warmup = jit_cache_size(sim)
    ref = TorchGD(X, y, W, v)
    ref.train(torch_warmup)

    tl_times, torch_times = [], []
    for _ in range(repeats):  # alternate, so both see the same background load
        tl_times.append(twolayer_run(sim)[0])
        ref.reset()
        torch_times.append(ref.train(torch_steps))
    cache_after = jit_cache_size(sim)
    if cache_after_warmup is not None and cache_after != cache_after_warmup:
        raise SystemExit(f"{name}: the timed runs recompiled (jit cache {cache_after_warmup} -> {cache_after})")

    tl_med, torch_med = statistics.median(tl_times), statistics.median(torch_times)
    tl_rate, torch_rate = tl_steps / tl_med, torch_steps / torch_med
    tl_best, torch_best = tl_steps / min(tl_times), torch_steps / min(torch_times)
    return {
        "case": name, "n": n, "d": d, "h": h,
        "twolayer": {
            "steps_per_run": tl_steps, "repeats": repeats, "seconds": tl_times, "median_seconds": tl_med,
            "steps_per_second": tl_rate, "us_per_step": 1e6 / tl_rate, "best_steps_per_second": tl_best,
            "first_call_seconds": first_s, "second_call_seconds": second_s,
            "jit_cache_size": cache_after,
        },
        "torch": {
            "steps_per_repeat": torch_steps, "warmup_steps": torch_warmup, "repeats": repeats,
            "seconds": torch_times, "median_seconds": torch_med, "steps_per_second": torch_rate,
            "us_per_step": 1e6 / torch_rate, "best_steps_per_second": torch_best,
        },
        "ratio_twolayer_over_torch": tl_rate / torch_rate,  # of the medians
        "ratio_of_best": tl_best / torch_best,
        "agreement": check,
    }


def diagnostics(folder: Path, repeats: int, steps: int) -> dict:
    """Toy case, alternating repeat by repeat: the engine as shipped (steps in chunks checked once each), the
    engine checking every step (``discrete_advance`` without ``absorbing``: the loop before issue 31), the
    engine with no finiteness check at all, and a bare ``jax.lax.fori_loop`` GD. Wall and CPU seconds."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    import twolayer.train.gd as gd_module
    import twolayer.train.methods as methods
    from twolayer.train.loop import compiled_advance

    X, y, W, v = make_problem(20, 2, 50)
    shipped = twolayer_simulation(folder, X, y, W, v, steps)
    twolayer_run(shipped)
    original_advance, original_finite = gd_module.discrete_advance, methods.tree_all_finite
    try:  # each variant is traced at its first run, right below its patch
        gd_module.discrete_advance = lambda step, init_aux, **_: methods.discrete_advance(step, init_aux)
        compiled_advance.cache_clear()
        per_step = twolayer_simulation(folder, X, y, W, v, steps)
        twolayer_run(per_step)
        methods.tree_all_finite = lambda tree: jnp.asarray(True)
        compiled_advance.cache_clear()
        unchecked = twolayer_simulation(folder, X, y, W, v, steps)
        twolayer_run(unchecked)
    finally:
        gd_module.discrete_advance, methods.tree_all_finite = original_advance, original_finite
        compiled_advance.cache_clear()
    same = all(np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(twolayer_run(shipped)[1].params),
                                                    jax.tree_util.tree_leaves(twolayer_run(per_step)[1].params)))

    Xj, yj = jnp.asarray(X), jnp.asarray(y)

    def loss(p):
        return jnp.mean(jnp.exp(-yj * (jax.nn.relu(Xj @ p["W"].T) @ p["v"])))

    @jax.jit
    def bare(p, count):
        def body(_, q):
            g = jax.grad(loss)(q)
            return {k: q[k] - LR * g[k] for k in q}
        return lax.fori_loop(0, count, body, p)

    p0 = {"W": jnp.asarray(W), "v": jnp.asarray(v)}
    count = jnp.asarray(steps)
    jax.block_until_ready(bare(p0, count))

    variants = {"engine": lambda: twolayer_run(shipped), "engine_per_step_check": lambda: twolayer_run(per_step),
                "engine_without_finiteness_check": lambda: twolayer_run(unchecked),
                "bare_fori_loop": lambda: jax.block_until_ready(bare(p0, count))}
    times = {key: [] for key in variants}
    cpu = {key: [] for key in variants}
    for _ in range(repeats):
        for key, fn in variants.items():
            wall, used = clocked(fn)
            times[key].append(wall)
            cpu[key].append(used)
    out = {"case": "toy", "steps_per_run": steps, "repeats": repeats, "chunked_equals_per_step_bitwise": same}
    for key, ts in times.items():
        med = statistics.median(ts)
        out[key] = {"seconds": ts, "median_seconds": med, "steps_per_second": steps / med,
                    "us_per_step": 1e6 * med / steps, "cpu_seconds": cpu[key],
                    "cpu_us_per_step": 1e6 * statistics.median(cpu[key]) / steps}
    out["ratio_per_step_check_over_engine"] = [b / a for a, b in zip(times["engine"], times["engine_per_step_check"])]
    return out


def clocked(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call: the CPU figure is what a busy machine
    disturbs least (other tenants take wall time, not this process's CPU time)."""
    wall, used = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - used


USER_STEPS = (20_000, 420_000)  # the short and the long run of the user path: 5 log-spaced observations each


def user_path(folder: Path, repeats: int, scale: int = 1) -> dict:
    """The toy step as a user meets it: ``twolayer.run`` (what ``twolayer run CONFIG`` calls: the run store,
    lock, checkpoints, observations, summary) of a long and a short run with 5 log-spaced observations,
    forced to recompute; the per-step cost is their difference over the extra steps, so start-up, compile
    and per-run costs cancel. Alternates with ``Simulation.run`` of the same extra steps (the engine path)."""
    import twolayer

    X, y, W, v = make_problem(20, 2, 50)
    short, long = (s // scale for s in USER_STEPS)
    extra = long - short
    configs = {}
    for steps in (short, long):
        sim_cfg = twolayer_simulation(folder, X, y, W, v, steps).cfg.resolved()
        sim_cfg.update(name=f"user-{steps}", observe={"schedule": "log", "points": 5, "metrics": ["loss"]})
        configs[steps] = sim_cfg
    engine = twolayer_simulation(folder, X, y, W, v, extra)
    store = folder / "store"

    def api_run(steps):
        return twolayer.run(configs[steps], out=store, force=True, progress=lambda done, total, t: None)

    for steps in (short, long):
        api_run(steps)
    twolayer_run(engine)
    rows = {"short": [], "long": [], "engine": []}
    for _ in range(repeats):
        rows["short"].append(clocked(lambda: api_run(short)))
        rows["long"].append(clocked(lambda: api_run(long)))
        rows["engine"].append(clocked(lambda: twolayer_run(engine)))
    out = {"steps": {"short": short, "long": long, "extra": extra}, "observations": 5, "repeats": repeats,
           "seconds": {k: [w for w, _ in v] for k, v in rows.items()},
           "cpu_seconds": {k: [c for _, c in v] for k, v in rows.items()}}
    for label, index in (("wall", 0), ("cpu", 1)):
        diff = [b[index] - a[index] for a, b in zip(rows["short"], rows["long"])]
        eng = [e[index] for e in rows["engine"]]
        out[label] = {"twolayer_run_us_per_step": 1e6 * statistics.median(diff) / extra,
                      "twolayer_run_best_us_per_step": 1e6 * min(diff) / extra,
                      "engine_us_per_step": 1e6 * statistics.median(eng) / extra,
                      "engine_best_us_per_step": 1e6 * min(eng) / extra,
                      "ratio_twolayer_run_over_engine": statistics.median([d / e for d, e in zip(diff, eng)])}
    return out


def machine_info(with_torch: bool = True) -> dict:
    """The shared machine description plus PyTorch's version and threading (when it is used)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import machine_info as common_machine_info

    info = {**common_machine_info(), "torch": None, "torch_num_threads": None, "torch_num_interop_threads": None,
            "load_average_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}
    if with_torch:
        import torch

        info.update(torch=torch.__version__, torch_num_threads=torch.get_num_threads(),
                    torch_num_interop_threads=torch.get_num_interop_threads())
    return info


def write_results(entry: dict) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import store_entry

    store_entry("step_speed", entry)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats per measurement (median)")
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run, noisier)")
    parser.add_argument("--skip-diagnostics", action="store_true", help="skip the engine-overhead variants")
    parser.add_argument("--no-write", action="store_true", help="do not update benchmarks/results.json")
    parser.add_argument("--no-torch", action="store_true",
                        help="leave out the PyTorch cases: only the toy engine variants against the bare fori_loop "
                             "and the `twolayer run` path (what a machine without torch can measure)")
    parser.add_argument("--skip-user-path", action="store_true", help="skip the `twolayer run` path")
    args = parser.parse_args(argv)

    if not args.no_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("PyTorch is needed for the baseline: pip install -e '.[bench]' (or make bench), or run with "
                  "--no-torch", file=sys.stderr)
            return 2
    import twolayer  # noqa: F401  (enables float64 in JAX)

    info = machine_info(with_torch=not args.no_torch)
    print(f"step_speed: GD steps/s, two-layer ReLU, exponential loss (mean), float64, lr={LR}, "
          f"init N(0, {INIT_STD}^2)")
    print(f"machine: {info['cpu_count']} CPUs ({info['cpus_usable']} usable), {info['cpu_model']}; "
          f"jax {info['jax']} ({info['jax_backend']}), torch {info['torch']} "
          f"({info['torch_num_threads']} threads, default), load average {info['load_average_start']}")

    load = info["load_average_start"]
    if load and info["cpu_count"] and load[0] > 0.5 * info["cpu_count"]:
        print(f"WARNING: the machine is busy before the benchmark starts (1-min load average {load[0]:.1f} on "
              f"{info['cpu_count']} CPUs); medians are contended, the torch loop (OpenMP) more so than "
              f"twolayer; compare the best-of figures too")
    started = time.perf_counter()
    cases = []
    with tempfile.TemporaryDirectory(prefix="twolayer-bench-") as tmp:
        folder = Path(tmp)
        for name, n, d, h, tl_steps, torch_steps, torch_warmup in ([] if args.no_torch else CASES):
            if args.quick:
                tl_steps, torch_steps = max(tl_steps // 10, 10), max(torch_steps // 10, 10)
            data = mnist_pair_data() if name == "mnist_pair" else None
            if name == "mnist_pair" and data is None:
                print(f"  {name}: skipped (no MNIST test split found; set TWOLAYER_DATA)")
                continue
            result = bench_case(name, n, d, h, tl_steps, torch_steps, torch_warmup, args.repeats, folder, data)
            cases.append(result)
            tl, tr, ag = result["twolayer"], result["torch"], result["agreement"]
            print(f"  {name}: twolayer {tl['steps_per_run']} steps/run, first call {tl['first_call_seconds']:.3f} s "
                  f"(compile + run), second {tl['second_call_seconds']:.3f} s, timed median "
                  f"{tl['median_seconds']:.3f} s, jit cache size {tl['jit_cache_size']}; torch "
                  f"{tr['steps_per_repeat']} steps/repeat, median {tr['median_seconds']:.3f} s")
            print(f"  {name}: after {ag['steps']} steps loss twolayer {ag['loss_twolayer']:.17g}, torch "
                  f"{ag['loss_torch']:.17g}, rel diff {ag['loss_rel_diff']:.2e} (params {ag['params_max_rel_diff']:.2e})"
                  f" -> {'OK' if ag['ok'] else 'MISMATCH'}")
        diag = None
        if not args.skip_diagnostics:
            diag = diagnostics(folder, args.repeats, 10_000 if args.quick else 100_000)
        user = None
        if not args.skip_user_path:
            user = user_path(folder, args.repeats, scale=10 if args.quick else 1)

    print()
    print(f"medians of {args.repeats} alternating repeats (best of {args.repeats} in brackets)")
    header = (f"{'case':<12} {'n':>5} {'d':>4} {'h':>3} {'twolayer steps/s':>26} {'torch steps/s':>22} "
              f"{'ratio twolayer/torch':>22}")
    print(header)
    print("-" * len(header))
    for r in cases:
        tl, tr = r["twolayer"], r["torch"]
        print(f"{r['case']:<12} {r['n']:>5} {r['d']:>4} {r['h']:>3} "
              f"{tl['steps_per_second']:>13,.1f} [{tl['best_steps_per_second']:>10,.1f}] "
              f"{tr['steps_per_second']:>10,.1f} [{tr['best_steps_per_second']:>9,.1f}] "
              f"{r['ratio_twolayer_over_torch']:>13.1f}x [{r['ratio_of_best']:>5.1f}x]")
    if diag is not None:
        print()
        print(f"diagnostics (toy, {diag['steps_per_run']} steps/run, median of {diag['repeats']}):")
        base, base_cpu = diag["engine"]["us_per_step"], diag["engine"]["cpu_us_per_step"]
        for key in ("engine", "engine_per_step_check", "engine_without_finiteness_check", "bare_fori_loop"):
            us, cpu = diag[key]["us_per_step"], diag[key]["cpu_us_per_step"]
            print(f"  {key:<34} {diag[key]['steps_per_second']:>12,.0f} steps/s  {us:6.2f} us/step"
                  f"  ({us / base:.2f} of engine); CPU {cpu:6.2f} us/step ({cpu / base_cpu:.2f})")
        print(f"  per-step check / engine, repeat by repeat: median "
              f"{statistics.median(diag['ratio_per_step_check_over_engine']):.2f}; chunked and per-step final "
              f"parameters bitwise equal: {diag['chunked_equals_per_step_bitwise']}")
    if user is not None:
        print()
        steps = user["steps"]
        print(f"`twolayer run` path (toy, twolayer.run of {steps['long']:,} minus {steps['short']:,} steps, "
              f"{user['observations']} log-spaced observations, median of {user['repeats']}):")
        for label in ("wall", "cpu"):
            u = user[label]
            print(f"  {label:>4}: twolayer run {u['twolayer_run_us_per_step']:6.2f} us/step "
                  f"(best {u['twolayer_run_best_us_per_step']:.2f}), Simulation.run {u['engine_us_per_step']:6.2f} "
                  f"(best {u['engine_best_us_per_step']:.2f}), ratio {u['ratio_twolayer_run_over_engine']:.2f}")
        toy = next((r for r in cases if r["case"] == "toy"), None)
        if toy is not None:
            print(f"  twolayer run vs torch eager: {toy['torch']['us_per_step'] / user['wall']['twolayer_run_us_per_step']:.1f}x")

    info["load_average_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    wall = time.perf_counter() - started
    print(f"\nload average at end {info['load_average_end']}; benchmark wall time {wall:.1f} s")
    entry = {
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "python benchmarks/step_speed.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "settings": {"lr": LR, "init_std": INIT_STD, "loss": "exponential/mean", "activation": "relu",
                     "precision": "float64", "method": "gd", "layers": "both", "quick": args.quick},
        "machine": info, "cases": cases, "diagnostics": diag, "user_path": user, "wall_seconds": wall,
    }
    if not args.no_write:
        write_results(entry)
        print(f"wrote {RESULTS}")
    bad = [r["case"] for r in cases if not r["agreement"]["ok"]]
    if bad:
        print(f"FAIL: twolayer and torch disagree beyond {CHECK_RTOL:g} relative on {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
