#!/usr/bin/env bash
# The GPU check (issue 31, section 4): one prepared script for the first time a CUDA device is lent.
#
#   benchmarks/gpu_check.sh                 # install the CUDA extra, run on CUDA and on the CPU, compare
#   benchmarks/gpu_check.sh --cpu --tiny    # the same steps with the CPU as the "device" (make test's smoke run)
#
# 1. installs the CUDA extra (pip install -e ".[cuda]") unless --cpu or --no-install;
# 2. runs the configs of the step-speed, seed-batching and exact-flow benchmarks (benchmarks/gpu_check.py
#    measure) with JAX_PLATFORMS=cuda, then the same configs with JAX_PLATFORMS=cpu;
# 3. compares the two to each method's tolerance (GD: 1e-9 relative on the losses, 1e-8 on the parameters;
#    flow_exact at rtol 1e-8: the same events, times and states to 1e-6) and writes ONE JSON file
#    (--out, default benchmarks/gpu_check.json): checks, timings, device/CPU speed ratios, machines.
#
# Exit status: 0 when every check passes, 1 when one fails, 2 for a usage error, 3 when the CUDA extra
# cannot be installed or JAX does not see a GPU (the JSON file then says why).
# Full size: well under 10 minutes of device time on a 16-core machine with one GPU; --tiny: seconds.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
mode=cuda size=full install=1 out="$here/gpu_check.json"
python="${PYTHON:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) mode=cpu; install=0 ;;
    --tiny) size=tiny ;;
    --no-install) install=0 ;;
    --out) out="$2"; shift ;;
    --python) python="$2"; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$python" ]; then
  if [ -x "$root/.venv/bin/python" ]; then python="$root/.venv/bin/python"; else python="$(command -v python3)"; fi
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/twolayer-gpu-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
started=$(date +%s)

refuse() {  # refuse REASON: write the one JSON file with the reason, exit 3
  "$python" - "$out" "$mode" "$1" <<'EOF'
import json, sys
out, mode, reason = sys.argv[1:]
json.dump({"mode": mode, "passed": False, "error": reason}, open(out, "w"), indent=2)
EOF
  echo "gpu_check.sh: $1 (wrote $out)" >&2
  exit 3
}

note=""
if [ "$install" = 1 ]; then
  echo "gpu_check.sh: installing the CUDA extra (pip install -e \".[cuda]\")"
  if ! (cd "$root" && "$python" -m pip install --quiet -e ".[cuda]") > "$work/install.log" 2>&1; then
    tail -5 "$work/install.log" >&2
    refuse "pip install -e .[cuda] failed: $(tail -1 "$work/install.log")"
  fi
  note="pip install -e .[cuda]"
fi

measure() {  # measure SIDE JAX_PLATFORM BACKEND: the configs on one platform; full size compiles cold on each
  # side (the same work measured), tiny keeps the user's persistent cache (a smoke run)
  ( if [ "$size" = full ]; then export TWOLAYER_JAX_CACHE="$work/jax-cache-$1"; fi
    JAX_PLATFORMS="$2" "$python" "$here/gpu_check.py" measure --platform "$3" --size "$size" --prefix "$work/$1" )
}
if [ "$mode" = cuda ]; then
  echo "gpu_check.sh: measuring on CUDA ($size)"
  measure device cuda gpu || refuse "JAX found no CUDA device (JAX_PLATFORMS=cuda)"
else
  echo "gpu_check.sh: CPU mode: measuring on the CPU as the device ($size)"
  measure device cpu cpu
fi
echo "gpu_check.sh: measuring the same configs on the CPU"
measure cpu cpu cpu
status=0
"$python" "$here/gpu_check.py" compare --reference "$work/cpu" --device "$work/device" --out "$out" \
  --mode "$mode" --install "$note" || status=$?
echo "gpu_check.sh: $(( $(date +%s) - started )) s in all"
exit "$status"
