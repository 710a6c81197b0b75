#!/usr/bin/env bash
# The GPU check (README, "GPU check"): on a fresh GPU machine, install the carried wheels
# (.gpu-wheels/wheels, `make gpu-wheels`) into a scratch folder ahead of the machine's own
# packages, then run scripts/gpu_check.py: the gpu tests, the labkit vs TRL benchmark and lab 51's
# GPU branch, each phase time-limited, every figure into $OUT/gpu_check.json.
#
#   bash scripts/gpu_check.sh [--cpu] [--only tests,benchmark]
#
# --cpu: a dry run on this CPU at tiny sizes (nothing installed; what needs CUDA is skipped and
# said so). $OUT (set by the device tool) defaults to ./gpu-check-out; $PYTHON to python3.
set -u
cd "$(dirname "$0")/.."
started=$(date +%s)
mode=gpu
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) mode=cpu ;;
    --only) only="$2"; shift ;;
    *) echo "unknown argument $1: use --cpu and/or --only PHASES" >&2; exit 2 ;;
  esac
  shift
done
PY=${PYTHON:-python3}
OUT=${OUT:-$PWD/gpu-check-out}
export GPU_CARRY=${GPU_CARRY:-.gpu-wheels}
if [ -f "$GPU_CARRY/carry.tar.xz" ]; then  # make gpu-wheels packs wheels/ and the tokenizer
  unpacked=/tmp/labkit-gpu-carry
  rm -rf "$unpacked" && mkdir -p "$unpacked" && tar -xJf "$GPU_CARRY/carry.tar.xz" -C "$unpacked"
  export GPU_CARRY=$unpacked
fi
CARRY=$GPU_CARRY
SITE=${GPU_CHECK_SITE:-/tmp/labkit-gpu-site}
mkdir -p "$OUT"
log="$OUT/gpu_check.log"
echo "gpu_check $mode, $(date -u +%FT%TZ), $PY" > "$log"

pip_install() {  # pip_install TARGET [pip flags]: the carried wheels, offline, no dependencies
  local target=$1
  shift
  rm -rf "$target"
  timeout 120 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target "$target" "$@" "$CARRY"/wheels/*.whl >> "$log" 2>&1
}

install_wheels() {  # prints what happened, for the results file
  if ! ls "$CARRY"/wheels/*.whl > /dev/null 2>&1; then
    echo "no $CARRY/wheels/*.whl: run make gpu-wheels here and name $CARRY in carry"
    return
  fi
  if [ "$mode" = cpu ]; then  # this machine's own packages run; the wheels are only checked
    local scratch
    scratch=$(mktemp -d)
    if pip_install "$scratch" --python-version 3.12 --implementation cp --only-binary=:all: \
        --platform manylinux_2_28_x86_64; then
      echo "checked: the carried wheels install for CPython 3.12 (not used on this CPU)"
    else
      echo "the carried wheels do not install for CPython 3.12 (gpu_check.log)"
    fi
    rm -rf "$scratch"
    return
  fi
  if ! pip_install "$SITE"; then
    echo "pip install of the carried wheels failed (gpu_check.log); the machine's packages run"
    return
  fi
  if ! PYTHONPATH="$SITE" "$PY" -c "import transformers" >> "$log" 2>&1; then
    rm -rf "$SITE"/transformers "$SITE"/transformers-*.dist-info
    echo "installed $(ls "$CARRY"/wheels | wc -l) wheels; the carried transformers did not" \
      "import here (gpu_check.log), so the machine's own transformers runs"
    return
  fi
  echo "installed $(ls "$CARRY"/wheels | wc -l) wheels from $CARRY/wheels into $SITE"
}

install=$(install_wheels)
echo "install: $install" | tee -a "$log"
if [ -d "$SITE" ] && [ "$mode" = gpu ]; then
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
# labkit from this tree (no install), the pytest plugin and the benchmarks' shared helpers
export PYTHONPATH="$PWD:$PWD/scripts:$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export LABKIT_RUNS="${LABKIT_RUNS:-/tmp/labkit-gpu-check-runs}"
exec "$PY" scripts/gpu_check.py --mode "$mode" --out "$OUT" --started "$started" \
  --install "$install" --only "$only"
