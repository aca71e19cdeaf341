#!/usr/bin/env bash
# The GPU check (issue 31, section 4): one prepared script for the first time a CUDA device is lent.
#
#   benchmarks/gpu_check.sh                 # install the CUDA extra, run on CUDA and on the CPU, compare
#   benchmarks/gpu_check.sh --preinstalled --time-limit 480   # on a lent machine with no network (README)
#   benchmarks/gpu_check.sh --cpu --tiny    # the same steps with the CPU as the "device" (make test's smoke run)
#
# 1. installs the CUDA extra (pip install -e ".[cuda]") unless --cpu, --no-install or --preinstalled;
#    --preinstalled uses the JAX already installed for --python (default python3, e.g. the lent GPU image's
#    jax with its CUDA plugin): nothing is fetched; the wheels in --wheels DIR (default .whl/ at the
#    repository root, when there) go into a temporary folder with pip --no-index --no-deps --target, and
#    the project runs from src/ (PYTHONPATH=src:that folder), uninstalled;
# 2. records the environment (python, jax, jaxlib, the CUDA plugin, numpy, scipy, diffrax, pydantic, ... and
#    where each came from) and stops when something the check imports is missing;
# 3. runs the configs of the step-speed, seed-batching and exact-flow benchmarks and the online-SGD ODE
#    (benchmarks/gpu_check.py measure) with JAX_PLATFORMS=cuda, then the same configs with JAX_PLATFORMS=cpu;
# 4. compares the two to each method's tolerance (GD: 1e-9 relative on the losses, 1e-8 on the parameters;
#    flow_exact at rtol 1e-8: the same events, times and states to 1e-6; the ODE at rtol 1e-6: Q, R, v to 1e-4)
#    and writes ONE JSON file
#    (--out; default $OUT/gpu_check.json when OUT is set, else benchmarks/gpu_check.json): checks, timings,
#    device/CPU speed ratios, machines, environment.
#
# Options: --cpu, --tiny, --no-install, --preinstalled, --wheels DIR, --python PY, --out FILE,
#   --time-limit SECONDS (each measurement runs under the time left; past it the JSON file says so and keeps
#   the parts measured so far), --preflight-only (steps 1-2 alone: the JSON file holds the environment).
# Exit status: 0 when every check passes, 1 when one fails, 2 for a usage error, 3 when the check could not
# run (the CUDA extra or the wheels could not be installed, an import is missing, JAX does not see a GPU, the
# time limit ran out): the JSON file then says why.
# Full size: meant to fit 8 minutes of a 16-core machine with one GPU (not yet measured); --tiny: a minute.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
mode=cuda size=full install=1 preinstalled=0 preflight_only=0 out="" wheels="" time_limit=""
python="${PYTHON:-}"
usage() { echo "gpu_check.sh: $1 (see --help)" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) mode=cpu; install=0 ;;
    --tiny) size=tiny ;;
    --no-install) install=0 ;;
    --preinstalled) preinstalled=1; install=0 ;;
    --preflight-only) preflight_only=1 ;;
    --wheels) [ $# -ge 2 ] || usage "--wheels needs a folder"; wheels="$2"; shift ;;
    --time-limit) [ $# -ge 2 ] || usage "--time-limit needs seconds"; time_limit="$2"; shift ;;
    --out) [ $# -ge 2 ] || usage "--out needs a file"; out="$2"; shift ;;
    --python) [ $# -ge 2 ] || usage "--python needs an interpreter"; python="$2"; shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) usage "unknown argument $1" ;;
  esac
  shift
done
if [ -n "$time_limit" ] && ! [[ "$time_limit" =~ ^[0-9]+$ && "$time_limit" -gt 0 ]]; then
  usage "--time-limit takes a whole number of seconds, not $time_limit"
fi
if [ -n "$wheels" ] && [ "$preinstalled" = 0 ]; then usage "--wheels goes with --preinstalled"; fi
if [ -n "$wheels" ] && [ ! -d "$wheels" ]; then usage "--wheels $wheels is not a folder"; fi
if [ -z "$out" ]; then
  if [ -n "${OUT:-}" ]; then out="$OUT/gpu_check.json"; else out="$here/gpu_check.json"; fi
fi
if [ -z "$python" ]; then
  if [ "$preinstalled" = 0 ] && [ -x "$root/.venv/bin/python" ]; then python="$root/.venv/bin/python"
  else python="$(command -v python3)"; fi
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/twolayer-gpu-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
note=""

last() { grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -1 || true; }  # last FILE: its last line that is not blank
refuse() {  # refuse REASON: write the one JSON file with the reason (and what was measured), exit 3
  "$python" - "$out" "$mode" "$1" "$note" "$work" <<'EOF'
import json, sys
from pathlib import Path
out, mode, reason, install, work = sys.argv[1:]
result = {"mode": mode, "passed": False, "error": reason, "install": install}
for key, name in (("environment", "environment.json"), ("partial_device", "device.json"), ("partial_reference", "cpu.json")):
    try:
        result[key] = json.loads((Path(work) / name).read_text())
    except (OSError, ValueError):
        pass
for name in ("install.log", "environment.err", "device.err", "cpu.err"):  # the end of what each step printed
    try:
        lines = (Path(work) / name).read_text(errors="replace").splitlines()
    except OSError:
        continue
    if lines:
        result.setdefault("stderr_tail", {})[name] = "\n".join(lines[-40:])
Path(out).write_text(json.dumps(result, indent=2) + "\n")
EOF
  echo "gpu_check.sh: $1 (wrote $out)" >&2
  exit 3
}

if [ "$install" = 1 ]; then
  echo "gpu_check.sh: installing the CUDA extra (pip install -e \".[cuda]\")"
  if ! (cd "$root" && "$python" -m pip install --quiet -e ".[cuda]") > "$work/install.log" 2>&1; then
    tail -5 "$work/install.log" >&2
    refuse "pip install -e .[cuda] failed: $(tail -1 "$work/install.log")"
  fi
  note="pip install -e .[cuda]"
fi
if [ "$preinstalled" = 1 ]; then
  if [ -z "$wheels" ] && [ -d "$root/.whl" ]; then wheels="$root/.whl"; fi
  site="$work/site"
  mkdir -p "$site"
  note="preinstalled JAX of $python; project from $root/src (PYTHONPATH)"
  shopt -s nullglob
  carried=()
  if [ -n "$wheels" ]; then carried=("$wheels"/*.whl); fi
  shopt -u nullglob
  if [ "${#carried[@]}" -gt 0 ]; then
    echo "gpu_check.sh: installing ${#carried[@]} carried wheels from $wheels (no index, no dependencies)"
    if ! "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "${carried[@]}" > "$work/install.log" 2>&1; then
      tail -5 "$work/install.log" >&2
      refuse "pip install --no-index of the wheels in $wheels failed: $(tail -1 "$work/install.log")"
    fi
    note="$note; ${#carried[@]} wheels from $wheels"
  else
    note="$note; no wheels carried"
  fi
  export PYTHONPATH="$root/src:$site${PYTHONPATH:+:$PYTHONPATH}"
fi

echo "gpu_check.sh: recording the environment ($python)"
if ! JAX_PLATFORMS=cpu "$python" "$here/gpu_check.py" environment --out "$work/environment.json" \
    --wheels "$wheels" 2> "$work/environment.err"; then
  cat "$work/environment.err" >&2
  refuse "the check's imports failed under $python: $(last "$work/environment.err")"
fi
if [ "$preflight_only" = 1 ]; then
  "$python" - "$out" "$mode" "$note" "$work/environment.json" <<'EOF'
import json, sys
from pathlib import Path
out, mode, install, env = sys.argv[1:]
result = {"mode": mode, "preflight_only": True, "passed": True, "install": install,
          "environment": json.loads(Path(env).read_text())}
Path(out).write_text(json.dumps(result, indent=2) + "\n")
EOF
  echo "gpu_check.sh: environment recorded, no measurement (--preflight-only); wrote $out"
  exit 0
fi

measure() {  # measure SIDE JAX_PLATFORM BACKEND: the configs on one platform; full size compiles cold on each
  # side (the same work measured), tiny keeps the user's persistent cache (a smoke run)
  local limit=() rc=0
  if [ -n "$time_limit" ]; then
    local left=$(( started + time_limit - $(date +%s) - 10 ))
    [ "$left" -gt 0 ] || return 124
    limit=(timeout --kill-after=10 "$left")
  fi
  ( if [ "$size" = full ]; then export TWOLAYER_JAX_CACHE="$work/jax-cache-$1"; fi
    JAX_PLATFORMS="$2" ${limit[@]+"${limit[@]}"} "$python" "$here/gpu_check.py" measure --platform "$3" --size "$size" \
      --prefix "$work/$1" ) 2> "$work/$1.err" || rc=$?
  cat "$work/$1.err" >&2
  return "$rc"
}
why() {  # why WHERE SIDE RC: the reason a measurement stopped (the side's stderr: stderr_tail in the JSON file)
  if [ "$3" = 124 ] || [ "$3" = 137 ]; then echo "ran past --time-limit $time_limit s while measuring on $1 (partial_* keep the parts done)"
  else echo "the measurement on $1 failed (exit $3): $(last "$work/$2.err")"; fi
}
rc=0
if [ "$mode" = cuda ]; then
  echo "gpu_check.sh: measuring on CUDA ($size)"
  measure device cuda gpu || rc=$?
  if [ "$rc" != 0 ]; then
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then refuse "$(why CUDA device "$rc")"; fi
    refuse "JAX found no CUDA device (JAX_PLATFORMS=cuda) or $(why CUDA device "$rc")"
  fi
else
  echo "gpu_check.sh: CPU mode: measuring on the CPU as the device ($size)"
  measure device cpu cpu || rc=$?
  [ "$rc" = 0 ] || refuse "$(why "the CPU (as the device)" device "$rc")"
fi
echo "gpu_check.sh: measuring the same configs on the CPU"
measure cpu cpu cpu || rc=$?
[ "$rc" = 0 ] || refuse "$(why "the CPU (the reference)" cpu "$rc")"
status=0
"$python" "$here/gpu_check.py" compare --reference "$work/cpu" --device "$work/device" --out "$out" \
  --mode "$mode" --install "$note" --environment "$work/environment.json" \
  --wall-seconds "$(( $(date +%s) - started ))" || status=$?
echo "gpu_check.sh: $(( $(date +%s) - started )) s in all"
exit "$status"
