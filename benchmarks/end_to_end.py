"""End to end: ``twolayer reproduce --scale quick`` wall time, and how much of it is compilation.

Each measurement is a fresh process running the CLI into a fresh temporary output folder (so no run
is a cache hit), with the persistent XLA cache (``TWOLAYER_JAX_CACHE``) pointing to

- cold: an empty temporary folder (everything is traced and compiled), then
- warm: the same folder, filled by the cold run (XLA executables come from disk; tracing and
  lowering to MLIR still happen in every new process).

Compile time comes from JAX's own monitoring events, summed over the process (each XLA program is also listed
with its name and the experiment whose run compiled it, ``programs_per_experiment``; programs compiled while an
experiment's claims are evaluated, its premise ablations run or its claims probed are listed as
"EXPERIMENT (claims)", "(premises)" or "(probes)"):
``/jax/core/compile/jaxpr_trace_duration`` (tracing), ``.../jaxpr_to_mlir_module_duration``
(lowering) and ``.../backend_compile_duration`` (XLA compilation, or loading from the persistent
cache). The rest of the wall time is running, claims, figures and the report: ``phases`` splits the work as the
reproduction's ``report/summary.json`` records it (``phase_split``): the experiments' runs, their claims (with
the premise ablations' runs and the probes) and their figures (drawn after the claims, in the workers with ``--jobs``
above 1), summed over experiments (worker-seconds), and the report the parent writes at the end.
targets: issue 31's budget for ``make run`` (cold, 2 cores): 6 minutes; and compilation < 25 % of the wall time.

``--jobs N`` passes ``reproduce --jobs N`` (default 1). With more than one worker process the wall times are
what ``make run`` takes (it uses the CLI's default, the usable cores), but the compile split and the programs
cover only the parent process: JAX's monitoring events of the workers are not collected.

Run: ``.venv/bin/python benchmarks/end_to_end.py [TARGET ...] [--data-dir DIR] [--jobs N]`` (no target: every
experiment; experiments whose data are missing, e.g. MNIST, are skipped by reproduce and listed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, warn_if_busy, write_result  # noqa: E402

TRACE = "/jax/core/compile/jaxpr_trace_duration"
LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE = "/jax/core/compile/backend_compile_duration"
TARGET_WALL = 360.0  # issue 31 §3: make run (cold, 2 cores) under 6 minutes
TARGET_COMPILE = 0.25  # compilation under a quarter of the wall time

CHILD = r"""
import atexit, collections, json, sys, time
t0 = time.perf_counter()
import jax.monitoring as mon
durations, counts, events = collections.defaultdict(float), collections.Counter(), collections.Counter()
current, programs = ["(set-up)"], []
def on_duration(name, secs, **kw):
    durations[name] += secs
    counts[name] += 1
    if name == "/jax/core/compile/backend_compile_duration":
        programs.append([current[0], kw.get("fun_name", "?"), secs])
mon.register_event_duration_secs_listener(on_duration)
mon.register_event_listener(lambda name, **kw: events.update([name]))
from twolayer.cli import reproduce as cli_reproduce
started = cli_reproduce.RichProgress.run_started
def run_started(self, experiment, key):
    current[0] = experiment
    return started(self, experiment, key)
cli_reproduce.RichProgress.run_started = run_started
# after the runs, ``assemble`` evaluates each experiment's claims, runs its premise ablations and probes: programs
# compiled there belong to that experiment, not to the last run started
import importlib
engine = importlib.import_module("twolayer.claims.reproduce")  # the package exports a function of that name
def attributed(fn, phase):
    def wrapped(exp, *args, **kw):
        current[0] = f"{exp.id} ({phase})"
        return fn(exp, *args, **kw)
    return wrapped
engine.evaluate = attributed(engine.evaluate, "claims")
engine.ablate_premises = attributed(engine.ablate_premises, "premises")
engine.probe_claims = attributed(engine.probe_claims, "probes")
from twolayer.cli import main
code = main(sys.argv[2:])
report = {"exit_code": code, "seconds": time.perf_counter() - t0, "durations": dict(durations),
          "counts": dict(counts), "events": dict(events), "programs": programs}
with open(sys.argv[1], "w") as f:
    json.dump(report, f)
"""


VERDICTS = ("every claim came out as declared", "claims did not come out as declared", "no claims to check")


def verdict_line(stdout: str) -> str:
    """The reproduce verdict (``Reproduction.verdict``) from the CLI's output: the last line that holds one."""
    lines = [ln.strip() for ln in stdout.splitlines() if any(v in ln for v in VERDICTS)]
    return lines[-1] if lines else ""


def phase_split(summary: Path) -> dict:
    """Seconds by phase from a reproduction's ``summary.json``: ``runs``, ``claims`` and ``figures`` summed over its
    experiments, and ``report`` (the parent's, after the experiments; it includes the figures only where the
    reproduction did not draw them with the claims); {} when there is none."""
    if not summary.is_file():
        return {}
    doc = json.loads(summary.read_text())
    experiments = doc.get("experiments", [])

    def total(name):
        return sum(e.get(name) or 0.0 for e in experiments)

    return {"runs": total("run_seconds"), "claims": total("claim_seconds"), "figures": total("figure_seconds"),
            "report": doc.get("report_seconds") or 0.0}


def one(tmp: Path, label: str, cache: Path, targets: list[str], extra: list[str]) -> dict:
    out_dir, report = tmp / f"out-{label}", tmp / f"{label}.json"
    env = {**os.environ, "TWOLAYER_JAX_CACHE": str(cache)}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(report), "reproduce", *targets, "--scale", "quick",
                           "--out", str(out_dir), *extra], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if not report.exists():
        raise SystemExit(f"{label}: reproduce crashed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    res = json.loads(report.read_text())
    d = res["durations"]
    trace, lower, comp = d.get(TRACE, 0.0), d.get(LOWER, 0.0), d.get(COMPILE, 0.0)
    per = {}
    for experiment, name, secs in res.get("programs", []):
        row = per.setdefault(experiment, {"programs": 0, "seconds": 0.0, "names": {}})
        row["programs"] += 1
        row["seconds"] += secs
        count, total = row["names"].get(name, (0, 0.0))
        row["names"][name] = (count + 1, total + secs)
    res["programs_per_experiment"] = dict(sorted(per.items(), key=lambda kv: -kv[1]["seconds"]))
    res["phases"] = phase_split(out_dir / "report" / "summary.json")
    res.update(wall_seconds=wall, trace_seconds=trace, lower_seconds=lower, backend_compile_seconds=comp,
               compile_seconds=trace + lower + comp, compile_fraction=(trace + lower + comp) / wall,
               claims_line=verdict_line(proc.stdout),
               skipped=[ln.split(":")[0].split()[-1] for ln in proc.stdout.splitlines() if ln.startswith("skipped ")])
    return res


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("targets", nargs="*", help="experiments or papers (default: all)")
    parser.add_argument("--data-dir", default=None, help="dataset folder (MNIST IDX files) passed to reproduce")
    parser.add_argument("--jobs", type=int, default=1, help="reproduce --jobs (compile split measured only at 1)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    started, load = time.perf_counter(), load_average()
    warn_if_busy(load)
    with tempfile.TemporaryDirectory(prefix="twolayer-bench-") as tmp:
        tmp = Path(tmp)
        cache = tmp / "xla-cache"
        cache.mkdir()
        extra = (["--data-dir", args.data_dir] if args.data_dir else []) + ["--jobs", str(args.jobs)]
        runs = {"cold": one(tmp, "cold", cache, args.targets, extra)}
        runs["warm"] = one(tmp, "warm", cache, args.targets, extra)
    entry = {"targets": args.targets or "all", "scale": "quick", "data_dir": args.data_dir, "jobs": args.jobs,
             "compile_split_complete": args.jobs == 1, "runs": runs,
             "target_wall_seconds": TARGET_WALL, "target_compile_fraction": TARGET_COMPILE}
    entry["target_met"] = {k: bool(r["wall_seconds"] <= TARGET_WALL and r["compile_fraction"] < TARGET_COMPILE)
                           for k, r in runs.items()}
    print(f"end_to_end: twolayer reproduce {' '.join(args.targets) or '(all)'} --scale quick --jobs {args.jobs} "
          f"(load {load})" + ("" if args.jobs == 1 else "; compile split and programs: the parent process only"))
    for k, r in runs.items():
        print(f"  {k}: wall {r['wall_seconds']:.1f} s (exit {r['exit_code']}); compile {r['compile_seconds']:.1f} s = "
              f"{100 * r['compile_fraction']:.1f} % (trace {r['trace_seconds']:.1f}, lower {r['lower_seconds']:.1f}, "
              f"XLA {r['backend_compile_seconds']:.1f} s; {r['counts'].get(COMPILE, 0)} compilations, "
              f"persistent-cache hits {r['events'].get('/jax/compilation_cache/cache_hits', 0)}); "
              f"{r['claims_line']}; skipped {r['skipped'] or 'none'}")
        if r["phases"]:
            ph = r["phases"]
            print(f"    phases (summary.json; summed over experiments): runs {ph['runs']:.1f} s, claims with premise "
                  f"ablations and probes {ph['claims']:.1f} s, figures {ph['figures']:.1f} s; then the parent's report "
                  f"{ph['report']:.1f} s")
        print(f"    XLA programs compiled (or loaded from the cache) per experiment, most seconds first:")
        for experiment, row in list(r["programs_per_experiment"].items())[:15]:
            names = ", ".join(f"{n} x{c} {t:.1f} s" for n, (c, t) in sorted(row["names"].items(),
                                                                           key=lambda kv: -kv[1][1])[:4])
            print(f"      {experiment:<44} {row['programs']:>4} programs {row['seconds']:7.1f} s  ({names})")
    if not args.no_write:
        write_result("end_to_end", entry, started=started, load_start=load, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
