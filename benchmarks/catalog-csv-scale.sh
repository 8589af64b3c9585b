#!/usr/bin/env bash
# Time and peak memory of `ftbench catalog` and `ftbench plan` with a large SkyPilot catalog CSV:
# generates one (benchmarks/skypilot_csv_gen.py, nothing downloaded), then runs each command
# N times under /usr/bin/time and prints wall seconds and maximum resident set size. docs/
# benchmarks.md ("A large SkyPilot catalog") records the figures. Not a test: nothing is
# asserted.
#
# Usage: benchmarks/catalog-csv-scale.sh FTBENCH [ROWS] [N] [MIX]   (ROWS default 531000, N 3,
# MIX cpu or gpu: skypilot_csv_gen.py says what each holds)
set -euo pipefail
ftbench=$(realpath "$1")
rows=${2:-531000}
n=${3:-3}
mix=${4:-cpu}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
csv="$work/aws/vms.csv"
mkdir -p "$work/aws"
python3 benchmarks/skypilot_csv_gen.py "$csv" "$rows" "$mix" >/dev/null
echo "ftbench with a SkyPilot CSV: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "file: $(($(wc -l <"$csv") - 1)) rows ($mix mix), $(stat -c %s "$csv") bytes"

measure() {
  local label=$1
  shift
  for i in $(seq "$n"); do
    /usr/bin/time -f "%e %M %x" -o "$work/time" "$@" >"$work/out" 2>"$work/err" || true
    read -r seconds kib status <"$work/time"
    printf '%-10s run %d: %6.2f s  %7.1f MiB max RSS  exit %s  (%d lines out, %d err)\n' \
      "$label" "$i" "$seconds" "$(echo "$kib / 1024" | bc -l)" "$status" \
      "$(wc -l <"$work/out")" "$(wc -l <"$work/err")"
  done
}

measure catalog "$ftbench" catalog --catalog "$csv"
measure plan "$ftbench" plan configs/llama3.1-8b-lora-synthetic.yaml --catalog "$csv"
