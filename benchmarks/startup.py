"""Start-up cost: ``import twolayer``, ``twolayer --help`` and ``twolayer list`` against ``import jax``.

Each command runs in a fresh Python process, alternating with the ``import jax`` baseline so both see the
same machine load; the ratio of medians (and of best-ofs) is the figure. ``twolayer list`` is timed twice:
cold (no experiment manifest cached, so every experiment module is imported) and warm (the manifest that
the first call wrote). Targets (issue 15): ``--help`` at most 0.6 s; ``import twolayer`` and a warm
``twolayer list`` at most 1.3x ``import jax``.

    python benchmarks/startup.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, summary, warn_if_busy, write_result  # noqa: E402

PY = sys.executable
CLI = str(Path(PY).with_name("twolayer"))


def wall(cmd: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    started, load = time.perf_counter(), load_average()
    warn_if_busy(load)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        env = {**os.environ, "TWOLAYER_CACHE": os.path.join(tmp, "cache"), "JAX_PLATFORMS": "cpu"}
        cases = {
            "import_jax": [PY, "-c", "import jax"],
            "import_twolayer": [PY, "-c", "import twolayer"],
            "help": [CLI, "--help"],
            "list_warm": [CLI, "list", "--out", out],
        }
        cold_env = {**env, "TWOLAYER_CACHE": os.path.join(tmp, "cold")}
        times: dict[str, list[float]] = {name: [] for name in [*cases, "list_cold"]}
        wall(cases["list_warm"], env)  # writes the manifest the warm runs read
        for _ in range(args.repeats):
            for name, cmd in cases.items():
                times[name].append(wall(cmd, env))
            times["list_cold"].append(wall(cases["list_warm"], cold_env))
            for cached in Path(cold_env["TWOLAYER_CACHE"]).glob("experiments-*.json"):
                cached.unlink()
    entry = {name: summary(ts) for name, ts in times.items()}
    base, best = entry["import_jax"]["median_seconds"], entry["import_jax"]["best_seconds"]
    ratios = {name: {"median_ratio": e["median_seconds"] / base, "best_ratio": e["best_seconds"] / best}
              for name, e in entry.items() if name != "import_jax"}
    entry["ratios_to_import_jax"] = ratios
    for name, e in entry.items():
        if name == "ratios_to_import_jax":
            continue
        r = ratios.get(name, {"median_ratio": 1.0, "best_ratio": 1.0})
        print(f"{name:16s} median {e['median_seconds']:.3f} s  best {e['best_seconds']:.3f} s  "
              f"x import jax: {r['median_ratio']:.2f} (best-of {r['best_ratio']:.2f})")
    write_result("startup", entry, started=started, load_start=load, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
