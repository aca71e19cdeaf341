"""Shared helpers of the benchmark scripts: timing, machine description, results.json updates.

Every benchmark writes one key of ``benchmarks/results.json`` (other keys are kept), with the
timings of every repeat, the medians, the machine and the load average at start and end.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results.json"


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    """``(seconds, result)`` of one call; JAX results are blocked on before the clock stops."""
    import jax

    started = time.perf_counter()
    out = fn(*args, **kwargs)
    jax.block_until_ready(out)
    return time.perf_counter() - started, out


def summary(seconds: list[float]) -> dict:
    """Every repeat, the median and the best."""
    return {"seconds": list(seconds), "median_seconds": statistics.median(seconds), "best_seconds": min(seconds),
            "repeats": len(seconds)}


def load_average() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def machine_info() -> dict:
    import jax
    import jaxlib
    import numpy as np

    cpu_model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = None
    return {"cpu_count": os.cpu_count(), "cpus_usable": usable, "cpu_model": cpu_model,
            "platform": platform.platform(), "python": platform.python_version(), "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "jax_backend": jax.default_backend(),
            "jax_devices": [str(d) for d in jax.devices()], "numpy": np.__version__}


def write_result(key: str, entry: dict, *, started: float, load_start, argv=None) -> None:
    """Store ``entry`` (plus command, machine, load averages, wall time) under ``key``."""
    entry = {**entry, "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])]),
             "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
             "machine": {**machine_info(), "load_average_start": load_start, "load_average_end": load_average()},
             "wall_seconds": time.perf_counter() - started}
    store_entry(key, entry)


def store_entry(key: str, entry: dict) -> None:
    """Replace ``key`` in results.json, keeping the other benchmarks' entries (atomic write)."""
    results = {}
    if RESULTS.exists():
        try:
            results = json.loads(RESULTS.read_text())
        except json.JSONDecodeError:
            results = {}
    results[key] = entry
    tmp = RESULTS.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(results, indent=2, sort_keys=True, default=float) + "\n")
    os.replace(tmp, RESULTS)


def warn_if_busy(load) -> None:
    cpus = os.cpu_count() or 1
    if load and load[0] > 0.5 * cpus:
        print(f"WARNING: the machine is busy (1-min load average {load[0]:.1f} on {cpus} CPUs): medians are "
              f"contended; compare the best-of figures too", flush=True)
