"""Run the whole benchmark suite, one fresh process per benchmark; each writes its key of results.json.

``make bench`` runs this. ``--quick`` passes ``--quick`` to the benchmarks that have it (a smoke run);
``--only NAME ...`` selects benchmarks. The exit status is non-zero if any benchmark failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# name -> (script and its arguments, accepts --quick)
SUITE = {
    "step_speed": ("step_speed.py", True),
    "matmul_bound": ("matmul_bound.py", True),
    "seed_batching": ("seed_batching.py", True),
    "seed_batching_sgd": ("seed_batching.py --sgd", True),
    "multi_index_step": ("multi_index_step.py", True),
    "margin_flow": ("margin_flow.py", False),
    "end_to_end": ("end_to_end.py", False),
    "engine_ablation": ("engine_ablation.py", False),
    "exact_flow": ("exact_flow.py", True),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="+", choices=sorted(SUITE), default=None)
    args = parser.parse_args(argv)
    failed = []
    for name in args.only or SUITE:
        script, has_quick = SUITE[name]
        script, *extra = script.split()
        cmd = [sys.executable, str(HERE / script), *extra, *(["--quick"] if args.quick and has_quick else [])]
        print(f"== {name}: {' '.join(cmd)} (load average {os.getloadavg()[0]:.2f})", flush=True)
        started = time.perf_counter()
        code = subprocess.run(cmd).returncode
        print(f"== {name}: exit {code}, {time.perf_counter() - started:.1f} s", flush=True)
        if code != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
