#!/usr/bin/env bash
# CPU benchmark: ftbench (C++ LibTorch) against the plain PyTorch eager reference
# (scripts/reference/llama_lora_step.py) on the same model, LoRA setup and step
# (configs/cpu-bench.yaml: 30 steps, the first 5 left out of the timing summary).
#
# The two are run alternately BENCH_REPEATS times (default 3) so that drifts in machine load
# hit both. Everything is written under out/bench/.
#
# Environment:
#   FTBENCH_BUILD_DIR  build directory holding src/ftbench (default: build)
#   BENCH_REPEATS      number of ftbench/python pairs (default: 3)
#   OMP_NUM_THREADS    threads for both (default: nproc)
#   PYTHON             interpreter with torch (default: /usr/bin/python3)
set -euo pipefail
export LC_NUMERIC=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BUILD_DIR="${FTBENCH_BUILD_DIR:-build}"
FTBENCH="$BUILD_DIR/src/ftbench"
REPEATS="${BENCH_REPEATS:-3}"
PYTHON="${PYTHON:-/usr/bin/python3}"
SPEC="configs/cpu-bench.yaml"
OUT_DIR="out/bench"
STEPS=30
WARMUP=5

if [[ -z "${OMP_NUM_THREADS:-}" ]]; then
  OMP_NUM_THREADS="$(nproc)"
fi
export OMP_NUM_THREADS

if [[ ! -x "$FTBENCH" ]]; then
  echo "error: $FTBENCH not found or not executable (build it, or set FTBENCH_BUILD_DIR)" >&2
  exit 1
fi

mkdir -p "$OUT_DIR"

TORCH_VERSION="$("$PYTHON" -c 'import torch; print(torch.__version__)')"
CPU_MODEL="$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"

# json_get FILE KEY.PATH -> value
json_get() {
  "$PYTHON" -c '
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[k]
print(v)
' "$1" "$2"
}

declare -a FT_MEDIAN FT_TPS PY_MEDIAN PY_TPS PP_MEDIAN PP_TPS PE_MEDIAN PE_TPS
# What ftbench sets for itself (launcher.cpp, run/host_allocator.cpp), given to Python through
# the environment so the last comparison is on equal terms.
EQUAL_ENV=(OMP_WAIT_POLICY=PASSIVE MALLOC_MMAP_THRESHOLD_=33554432
  MALLOC_TRIM_THRESHOLD_=2147483647 MALLOC_TOP_PAD_=67108864)

# run_python TAG ENV... : the reference with the given environment changes; sets REPLY_* vars.
run_python() {
  local tag="$1" i="$2"
  shift 2
  local report="$OUT_DIR/$tag-r$i.json"
  echo "== run $i/$REPEATS: $tag" >&2
  env "$@" "$PYTHON" scripts/reference/llama_lora_step.py \
    --steps "$STEPS" --warmup "$WARMUP" --threads "$OMP_NUM_THREADS" \
    --json-out "$report" > "$OUT_DIR/$tag-r$i.log" 2>&1 || {
    echo "error: python reference failed, see $OUT_DIR/$tag-r$i.log" >&2
    exit 1
  }
  REPLY_MEDIAN="$(json_get "$report" median_step_seconds)"
  REPLY_TPS="$(json_get "$report" tokens_per_second)"
}

for ((i = 1; i <= REPEATS; i++)); do
  ft_report="$OUT_DIR/ftbench-cpu-bench-r$i.json"
  echo "== run $i/$REPEATS: ftbench" >&2
  "$FTBENCH" run "$SPEC" --force -o "$ft_report" --set output.progress=off \
    > "$OUT_DIR/ftbench-cpu-bench-r$i.log" 2>&1 || {
    echo "error: ftbench failed, see $OUT_DIR/ftbench-cpu-bench-r$i.log" >&2
    exit 1
  }
  FT_MEDIAN[i]="$(json_get "$ft_report" summary.step_seconds.median)"
  FT_TPS[i]="$(json_get "$ft_report" summary.tokens_per_second.padded)"

  # As a user runs it (OpenMP's default wait policy), and with the launcher's setting.
  run_python python-eager "$i" -u OMP_WAIT_POLICY
  PY_MEDIAN[i]="$REPLY_MEDIAN"
  PY_TPS[i]="$REPLY_TPS"
  run_python python-eager-passive "$i" OMP_WAIT_POLICY=PASSIVE
  PP_MEDIAN[i]="$REPLY_MEDIAN"
  PP_TPS[i]="$REPLY_TPS"
  run_python python-eager-equal "$i" "${EQUAL_ENV[@]}"
  PE_MEDIAN[i]="$REPLY_MEDIAN"
  PE_TPS[i]="$REPLY_TPS"
done

summary="$OUT_DIR/summary.md"
{
  echo "# ftbench vs Python eager, CPU"
  echo
  echo "- date: $(date -u)"
  echo "- CPU: ${CPU_MODEL:-unknown}"
  echo "- nproc: $(nproc)"
  echo "- OMP_NUM_THREADS: $OMP_NUM_THREADS"
  echo "- torch (python): $TORCH_VERSION"
  echo "- spec: $SPEC ($STEPS steps, $WARMUP warm-up), repeats: $REPEATS"
  echo
  echo "| run | impl | median step s | tokens/s | ftbench / this |"
  echo "|---|---|---|---|---|"
  ratios=()
  ratios_passive=()
  ratios_equal=()
  ratio() { "$PYTHON" -c 'import sys; print(f"{float(sys.argv[1]) / float(sys.argv[2]):.3f}")' "$1" "$2"; }
  for ((i = 1; i <= REPEATS; i++)); do
    r1="$(ratio "${FT_MEDIAN[i]}" "${PY_MEDIAN[i]}")"
    r2="$(ratio "${FT_MEDIAN[i]}" "${PP_MEDIAN[i]}")"
    ratios+=("$r1")
    ratios_passive+=("$r2")
    r3="$(ratio "${FT_MEDIAN[i]}" "${PE_MEDIAN[i]}")"
    ratios_equal+=("$r3")
    printf '| %d | ftbench | %.4f | %.1f | |\n' "$i" "${FT_MEDIAN[i]}" "${FT_TPS[i]}"
    printf '| %d | python eager | %.4f | %.1f | %s |\n' "$i" "${PY_MEDIAN[i]}" "${PY_TPS[i]}" "$r1"
    printf '| %d | python eager, OMP_WAIT_POLICY=PASSIVE | %.4f | %.1f | %s |\n' "$i" \
      "${PP_MEDIAN[i]}" "${PP_TPS[i]}" "$r2"
    printf '| %d | python eager, same OpenMP and malloc settings as ftbench | %.4f | %.1f | %s |\n' \
      "$i" "${PE_MEDIAN[i]}" "${PE_TPS[i]}" "$r3"
  done
  median() { "$PYTHON" -c 'import statistics, sys; print(f"{statistics.median(map(float, sys.argv[1:])):.3f}")' "$@"; }
  echo
  echo "median ftbench/python step-time ratio: $(median "${ratios[@]}") (below 1: ftbench faster)"
  echo "median ftbench/python-passive step-time ratio: $(median "${ratios_passive[@]}")"
  echo "median ftbench/python-equal-settings step-time ratio: $(median "${ratios_equal[@]}")"
} | tee "$summary"
