"""Online SGD (issue 29): SGD steps per second of method ``online_sgd`` against a naive PyTorch loop at d = 1000,
and the time of the order-parameter ODE against the SGD run that draws the same curve.

- twolayer: a teacher-student config (erf, K = M = 2, both layers, batch 1, float64) through ``load_config`` and
  ``Simulation``; every step draws a fresh x ~ N(0, I_d) and its teacher label inside one compiled while_loop,
  ``seeds`` batched by vmap. One warm-up run compiles; the timed runs reuse the program.
- PyTorch (when importable): the script a researcher writes: leaf tensors, a Python loop that draws x with
  torch.randn, computes the teacher label, backward, and the SGD update in place under no_grad (the update
  torch.optim.SGD makes; the optimizer class itself is not used because it imports torch._dynamo, which needs
  sympy), one seed.
- ODE: ``theory.online_sgd.integrate`` of the same setting to the same Goldt time (compiled once, timed after).
- ODE speed (``--ode-only`` runs only this): erf K = M = 10 and relu K = M = 4 (eta = 0.5, both layers), the fast
  vector field (``field="distinct"``: entries by broadcasting, I4 once per distinct tuple) against the direct
  transcription (``field="blocks"``, the path before): the time of one evaluation, of a whole integration to
  t = 1e3 (both fields, the before/after ratio of one run) and of the fast field to t = 1e4 (the issue's target).
  A third field, ``field="interpolation"``, is the fast one with the general I4 (relu: the interpolation integral
  instead of the orthant reduction), the before of that change.

- Time to a horizon (``--horizon 1e4 [--cases relu:4,relu:10,...] [--eval-only relu:10] [--solvers
  tsit5,ros34pw2] [--rtol 1e-6] [--label ...]``): for each activation and K = M, one evaluation of every field the
  imported checkout has and the default field's integration to the horizon by each solver, with its step count, and
  the ratio and the differences of each solver's solution against the first's. The script imports whichever
  ``twolayer`` is on the path, so ``PYTHONPATH=<old checkout>/src`` times the before in the same session.

Medians of ``--repeats`` are printed and stored in benchmarks/results.json under "online_sgd".
Run: ``.venv/bin/python benchmarks/online_sgd.py [--repeats 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, warn_if_busy, write_result  # noqa: E402

D, K, M, ETA = 1000, 2, 2, 1.0


def sgd_config(steps: int, seeds: int) -> dict:
    return {"name": "bench-online", "seeds": seeds,
            "data": {"kind": "teacher_student", "d": D, "teacher_width": M, "activation": "erf", "n": 16},
            "model": {"kind": "two_layer", "activation": "erf", "width": K}, "init": {"kind": "standard"},
            "loss": {"kind": "square", "reduction": "mean"},
            "train": {"method": "online_sgd", "lr": ETA / D, "steps": steps},
            "observe": {"schedule": "every", "every": steps, "metrics": ["Q", "R", "T", "v"]}}


def time_twolayer(steps: int, seeds: int, repeats: int) -> list[float]:
    from twolayer.config import load_config
    from twolayer.train import Simulation

    sim = Simulation(load_config(sgd_config(steps, seeds)))
    sim.run(sim.initial_state())  # compile
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        sim.run(sim.initial_state())
        out.append(time.perf_counter() - started)
    return out


def time_torch(steps: int, repeats: int) -> list[float] | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_default_dtype(torch.float64)
    gen = torch.Generator().manual_seed(0)
    Ws = torch.randn(M, D, generator=gen) / D ** 0.5
    W = (torch.randn(K, D, generator=gen) / D ** 0.5).requires_grad_()
    v = (torch.randn(K, generator=gen) / K ** 0.5).requires_grad_()
    lr = ETA / D
    g = lambda x: torch.erf(x / 2 ** 0.5)  # noqa: E731
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(steps):
            x = torch.randn(1, D, generator=gen)
            y = g(x @ Ws.T).sum(dim=1)
            loss = 0.5 * ((g(x @ W.T) @ v - y) ** 2).mean()
            loss.backward()
            with torch.no_grad():
                for p in (W, v):
                    p -= lr * p.grad
                    p.grad = None
        out.append(time.perf_counter() - started)
    return out


def time_ode(goldt_time: float, repeats: int) -> list[float]:
    from twolayer.theory.online_sgd import integrate

    rng = np.random.default_rng(0)
    W, Ws = rng.normal(size=(K, D)) / np.sqrt(D), np.linalg.qr(rng.normal(size=(D, M)))[0].T
    args = (W @ W.T, W @ Ws.T, rng.normal(size=K) / np.sqrt(K), Ws @ Ws.T, np.ones(M), np.linspace(0, goldt_time, 41))
    integrate(*args, activation="erf", eta=ETA)  # compile
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        integrate(*args, activation="erf", eta=ETA)
        out.append(time.perf_counter() - started)
    return out


def ode_state(K: int, M: int):
    rng = np.random.default_rng(0)
    W, Ws = rng.normal(size=(K, D)) / np.sqrt(D), np.linalg.qr(rng.normal(size=(D, M)))[0].T
    return W @ W.T, W @ Ws.T, rng.normal(size=K) / np.sqrt(K), Ws @ Ws.T, np.ones(M)


def time_ode_speed(activation: str, K: int, repeats: int, ratio_time: float, long_time: float | None,
                   fields: tuple[str, ...] | None = None) -> dict:
    """Per-evaluation and per-integration seconds of the vector fields (module docstring): every field of ``FIELDS``,
    or the ``fields`` named (they must include "distinct", "interpolation" and "blocks", which the ratios compare)."""
    import jax
    import jax.numpy as jnp

    from twolayer.theory.online_sgd import FIELDS, integrate

    timed = {name: vf for name, vf in FIELDS.items() if fields is None or name in fields}
    Q, R, v, T, vstar = ode_state(K, K)
    y = {"Q": jnp.asarray(Q), "R": jnp.asarray(R), "v": jnp.asarray(v)}
    out = {"activation": activation, "K": K, "M": K, "eta": 0.5}
    for name, vf in timed.items():
        out[f"{name}_eval_ms"] = eval_ms(vf, y, T, vstar, activation)
    horizons = {"ratio": ratio_time, "long": long_time}
    out["horizons"] = horizons
    for label, t1 in horizons.items():
        if t1 is None:
            continue
        times = np.concatenate([[0.0], np.geomspace(1e-2, t1, 40)])
        for name in (timed if label == "ratio" else ("distinct",)):
            integrate(Q, R, v, T, vstar, times, activation=activation, eta=0.5, field=name)  # compile
            runs = []
            for _ in range(repeats):
                started = time.perf_counter()
                integrate(Q, R, v, T, vstar, times, activation=activation, eta=0.5, field=name)
                runs.append(time.perf_counter() - started)
            out[f"{name}_to_t{t1:g}_seconds"] = runs
    ratio = f"to_t{ratio_time:g}_seconds"
    out["eval_speedup"] = out["blocks_eval_ms"] / out["distinct_eval_ms"]
    out["i4_eval_speedup"] = out["interpolation_eval_ms"] / out["distinct_eval_ms"]
    out["i4_integrate_speedup"] = (statistics.median(out[f"interpolation_{ratio}"])
                                   / statistics.median(out[f"distinct_{ratio}"]))
    out["integrate_speedup"] = statistics.median(out[f"blocks_{ratio}"]) / statistics.median(out[f"distinct_{ratio}"])
    return out


def eval_ms(vf, y, T, vstar, activation: str, calls: int = 20, rounds: int = 5) -> float:
    """Milliseconds of one compiled evaluation of the field ``vf`` (eta = 0.5, eta^2 term, both layers): the best of
    ``rounds`` means over ``calls`` calls (the best, as the machine is shared)."""
    import jax
    import jax.numpy as jnp

    f = jax.jit(lambda y: vf(y, jnp.asarray(T), jnp.asarray(vstar), 0.5, 0.0, 1.0, activation=activation))
    jax.block_until_ready(f(y))
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            r = f(y)
        jax.block_until_ready(r)
        best = min(best, (time.perf_counter() - started) / calls * 1e3)
    return best


def time_to_horizon(cases: list[tuple[str, int]], horizon: float, eval_only: set, solvers: tuple[str, ...] = ("tsit5",),
                    rtol: float = 1e-8) -> list[dict]:
    """For each (activation, K = M): one evaluation of every field this checkout has (``FIELDS``) and, unless the case
    is in ``eval_only``, the default field's integration to Goldt time ``horizon`` by each of ``solvers`` (eta = 0.5,
    both layers, eta^2 term, ``rtol``, atol = rtol / 100; compiled first on the save times scaled by 1e-6, then one
    timed run), with the solver's step count and, from the second solver on, the largest difference of Q and the
    largest relative difference of eps_g (where eps_g > 1e-6, above the quadrature floor) from the first solver's
    solution at the 41 save times. Runs against whichever ``twolayer`` is imported, so the same script times an
    older checkout (PYTHONPATH=its src) in the same session (an older checkout knows only "tsit5")."""
    import jax.numpy as jnp

    from twolayer.theory.online_sgd import FIELDS, integrate

    out = []
    for activation, K in cases:
        Q, R, v, T, vstar = ode_state(K, K)
        y = {"Q": jnp.asarray(Q), "R": jnp.asarray(R), "v": jnp.asarray(v)}
        e = {"activation": activation, "K": K, "M": K, "eta": 0.5, "horizon": horizon, "rtol": rtol,
             "eval_ms": {name: eval_ms(vf, y, T, vstar, activation) for name, vf in FIELDS.items()
                         if name != "blocks" or K <= 4}, "solvers": {}}
        print(f"{activation} K = M = {K}: one evaluation "
              + ", ".join(f"{n} {ms:.3g} ms" for n, ms in e["eval_ms"].items()), flush=True)
        first = None
        for solver in ([] if (activation, K) in eval_only else solvers):
            times = np.concatenate([[0.0], np.geomspace(1e-2, horizon, 40)])
            kw = dict(activation=activation, eta=0.5, rtol=rtol, atol=rtol / 100,
                      **({} if solver == "tsit5" else {"solver": solver}))
            integrate(Q, R, v, T, vstar, times * 1e-6, **kw)  # compile: the same program, a short horizon
            started, cpu = time.perf_counter(), time.process_time()
            sol = integrate(Q, R, v, T, vstar, times, **kw)
            r = {"seconds": time.perf_counter() - started,
                 "cpu_seconds": time.process_time() - cpu,  # this process only: less sensitive to a shared machine
                 "steps": getattr(sol, "steps", None), "eps_g_end": float(sol.eps_g[-1])}
            line = (f"  {solver}, rtol {rtol:g}, to t = {horizon:g}: {r['seconds']:.3g} s "
                    f"({r['cpu_seconds']:.3g} s CPU), {r['steps']} steps, eps_g {r['eps_g_end']:.3g}")
            if first is None:
                first = (solver, sol, r["seconds"])
            else:
                above = first[1].eps_g > 1e-6
                r["against"] = first[0]
                r["max_abs_Q_difference"] = float(np.abs(sol.Q - first[1].Q).max())
                r["max_rel_eps_g_difference"] = float(np.max(np.abs(sol.eps_g - first[1].eps_g)[above]
                                                             / first[1].eps_g[above]))
                r["speedup"] = first[2] / r["seconds"]
                line += (f"; {r['speedup']:.3g}x {first[0]}, max |dQ| {r['max_abs_Q_difference']:.2g}, "
                         f"max |d eps_g| / eps_g {r['max_rel_eps_g_difference']:.2g}")
            e["solvers"][solver] = r
            print(line, flush=True)
        out.append(e)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    ap.add_argument("--ode-only", action="store_true", help="only the ODE speed (fast against direct field)")
    ap.add_argument("--horizon", type=float, default=None,
                    help="only the time to this Goldt time for --cases (each field's evaluation, the default field's "
                         "integration)")
    ap.add_argument("--cases", default="erf:4,erf:10,relu:4,relu:10,abs:4,abs:10", help="activation:K list")
    ap.add_argument("--eval-only", default="", help="cases (activation:K) timed per evaluation only")
    ap.add_argument("--label", default="", help="a name stored with the --horizon result (e.g. the checkout)")
    ap.add_argument("--solvers", default="tsit5", help="--horizon: integrators of theory.online_sgd.SOLVERS, compared "
                                                          "with the first")
    ap.add_argument("--rtol", type=float, default=1e-8, help="--horizon: the solvers' rtol (atol = rtol / 100)")
    args = ap.parse_args(argv)
    started, load = time.perf_counter(), load_average()
    warn_if_busy(load)
    if args.horizon is not None:
        parse = lambda text: [(c.split(":")[0], int(c.split(":")[1])) for c in text.split(",") if c]  # noqa: E731
        cases = time_to_horizon(parse(args.cases), args.horizon, set(parse(args.eval_only)),
                                tuple(args.solvers.split(",")), args.rtol)
        write_result("online_sgd_ode_horizon", {"label": args.label, "cases": cases}, started=started,
                     load_start=load, argv=argv)
        return 0
    speed = [time_ode_speed("erf", 10, 1 if args.quick else args.repeats, 1e2 if args.quick else 1e3,
                            None if args.quick else 1e4),
             time_ode_speed("relu", 4, 1 if args.quick else args.repeats, 1e2 if args.quick else 1e3,
                            None if args.quick else 1e4)]
    for e in speed:
        line = (f"ODE {e['activation']} K = M = {e['K']}: one evaluation {e['blocks_eval_ms']:.3g} ms -> "
                f"{e['distinct_eval_ms']:.3g} ms ({e['eval_speedup']:.2f}x; the general I4 "
                f"{e['interpolation_eval_ms']:.3g} ms, {e['i4_eval_speedup']:.2f}x); integration "
                f"{e['integrate_speedup']:.2f}x (against the general I4 {e['i4_integrate_speedup']:.2f}x)")
        long = e["horizons"]["long"]
        if long is not None:
            line += f"; fast field to t = {long:g}: {statistics.median(e[f'distinct_to_t{long:g}_seconds']):.3g} s"
        print(line)
    if args.ode_only:
        write_result("online_sgd_ode_speed", {"cases": speed}, started=started, load_start=load, argv=argv)
        return 0
    steps = 20_000 if args.quick else 100_000
    torch_steps = 2_000 if args.quick else 10_000
    tl1 = time_twolayer(steps, 1, args.repeats)
    tl8 = time_twolayer(steps, 8, args.repeats)
    th = time_torch(torch_steps, args.repeats)
    ode = time_ode(steps / D, args.repeats)
    rate1, rate8 = steps / statistics.median(tl1), 8 * steps / statistics.median(tl8)
    entry = {"d": D, "K": K, "M": M, "eta": ETA, "steps": steps,
             "twolayer_steps_per_s_1_seed": rate1, "twolayer_seed_steps_per_s_8_seeds": rate8,
             "twolayer_seconds": tl1, "twolayer_8_seeds_seconds": tl8,
             "ode_seconds_same_curve": ode, "ode_over_sgd_time": statistics.median(ode) / statistics.median(tl1),
             "ode_speed": speed}
    print(f"online SGD d={D}: twolayer {rate1:,.0f} steps/s (1 seed), {rate8:,.0f} seed-steps/s (8 seeds batched)")
    if th is not None:
        trate = torch_steps / statistics.median(th)
        entry.update(torch_steps=torch_steps, torch_seconds=th, torch_steps_per_s=trate, speedup=rate1 / trate)
        print(f"  naive PyTorch {trate:,.0f} steps/s: twolayer is {rate1 / trate:.1f}x")
    else:
        entry["torch"] = "not importable: skipped"
        print("  PyTorch is not importable here: skipped")
    print(f"  ODE to the same Goldt time t = {steps / D:g}: {statistics.median(ode):.3f} s against "
          f"{statistics.median(tl1):.3f} s of SGD ({entry['ode_over_sgd_time']:.3g}x)")
    write_result("online_sgd", entry, started=started, load_start=load, argv=argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
