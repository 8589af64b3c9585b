#!/usr/bin/env bash
# Start-to-exit latency of the torch-free commands (cost, compare, catalog, validate, plan) on the
# fixture reports. Prints the median and maximum of N runs per command, in milliseconds.
# Usage: scripts/bench_cli.sh [N] (default 50). Needs a build in ${FTBENCH_BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-50}
bin=${FTBENCH_BUILD_DIR:-build}/src/ftbench
h100=tests/fixtures/reports/h100-reference.json
mi300x=tests/fixtures/reports/mi300x-reference.json

measure() {
  local label=$1
  shift
  local samples=()
  for _ in $(seq "$n"); do
    local start end
    start=$(date +%s%N)
    "$@" > /dev/null
    end=$(date +%s%N)
    samples+=($(((end - start) / 1000)))
  done
  printf '%s\n' "${samples[@]}" | sort -n | awk -v label="$label" '
    { v[NR] = $1 } END { printf "%-34s median %6.1f ms   max %6.1f ms   (%d runs)\n", label,
      v[int((NR + 1) / 2)] / 1000, v[NR] / 1000, NR }'
}

echo "ftbench CLI latency, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -m)"
measure "cost (offer table)" "$bin" cost "$h100"
measure "cost --project-tokens 22.5M" "$bin" cost "$h100" --project-tokens 22.5M
measure "cost --format json" "$bin" cost "$h100" --format json
measure "compare (2 reports, 375 steps)" "$bin" compare "$h100" "$mi300x"
measure "compare --format json" "$bin" compare "$h100" "$mi300x" --format json
measure "catalog" "$bin" catalog
measure "validate llama3.1-8b-lora-synthetic" "$bin" validate configs/llama3.1-8b-lora-synthetic.yaml
# `ftbench plan`'s target is 100 ms (issue 18): every catalog GPU and offer.
measure "plan llama3.1-8b-lora-synthetic" "$bin" plan configs/llama3.1-8b-lora-synthetic.yaml
measure "plan ... --format json" "$bin" plan configs/llama3.1-8b-lora-synthetic.yaml --format json
