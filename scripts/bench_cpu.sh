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

declare -a FT_MEDIAN FT_TPS PY_MEDIAN PY_TPS

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

  py_report="$OUT_DIR/python-eager-r$i.json"
  echo "== run $i/$REPEATS: python eager reference" >&2
  "$PYTHON" scripts/reference/llama_lora_step.py \
    --steps "$STEPS" --warmup "$WARMUP" --threads "$OMP_NUM_THREADS" \
    --json-out "$py_report" > "$OUT_DIR/python-eager-r$i.log" 2>&1 || {
    echo "error: python reference failed, see $OUT_DIR/python-eager-r$i.log" >&2
    exit 1
  }
  PY_MEDIAN[i]="$(json_get "$py_report" median_step_seconds)"
  PY_TPS[i]="$(json_get "$py_report" tokens_per_second)"
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
  echo "| run | impl | median step s | tokens/s | ftbench/python step time |"
  echo "|---|---|---|---|---|"
  ratios=()
  for ((i = 1; i <= REPEATS; i++)); do
    ratio="$("$PYTHON" -c 'import sys; print(f"{float(sys.argv[1]) / float(sys.argv[2]):.3f}")' \
      "${FT_MEDIAN[i]}" "${PY_MEDIAN[i]}")"
    ratios+=("$ratio")
    printf '| %d | ftbench | %.4f | %.1f | %s |\n' "$i" "${FT_MEDIAN[i]}" "${FT_TPS[i]}" "$ratio"
    printf '| %d | python-eager | %.4f | %.1f | |\n' "$i" "${PY_MEDIAN[i]}" "${PY_TPS[i]}"
  done
  echo
  echo "median ftbench/python step-time ratio: $("$PYTHON" -c \
    'import statistics, sys; print(f"{statistics.median(map(float, sys.argv[1:])):.3f}")' \
    "${ratios[@]}") (below 1: ftbench faster)"
} | tee "$summary"
