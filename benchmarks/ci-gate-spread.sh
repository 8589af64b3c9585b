#!/usr/bin/env bash
# Run-to-run spread of the CI smoke gate's figures: runs the smoke spec (configs/ci-tiny.yaml
# for 4 epochs: 32 steps, 30 measured) N times in a row and prints, per figure the gate holds,
# the median, the smallest and largest run and their largest deviation from the median. With
# --load, two busy loops hold both cores while it runs (a noisy neighbour). docs/ci.md gives
# the figures measured and the bounds chosen from them.
#
# Usage: benchmarks/ci-gate-spread.sh FTBENCH OUT_DIR [N] [--load]
set -euo pipefail
ftbench=$1
out=$2
n=${3:-10}
load=${4:-}
cd "$(dirname "$0")/.."
mkdir -p "$out"
pids=()
if [[ "$load" == --load ]]; then
  for _ in 1 2; do (while :; do :; done) & pids+=($!); done
fi
trap '[[ ${#pids[@]} -gt 0 ]] && kill "${pids[@]}" 2>/dev/null || true' EXIT
for i in $(seq 1 "$n"); do
  "$ftbench" run configs/ci-tiny.yaml --set train.epochs=4 --set output.progress=off \
    -o "$out/run-$i.json" --force >"$out/run-$i.log" 2>&1
done
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3
"$python" - "$out" "$n" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
rows = {"step median (s)": [], "tokens/s": [], "time to first step (s)": [],
        "allocator peak (B)": [], "host RSS peak (B)": [], "smoothed final loss": []}
for i in range(1, n + 1):
    r = json.load(open(f"{out}/run-{i}.json"))
    s = r["summary"]
    rows["step median (s)"].append(s["step_seconds"]["median"])
    rows["tokens/s"].append(s["tokens_per_second"]["real"])
    rows["time to first step (s)"].append(r["timing"]["time_to_first_step_seconds"])
    rows["allocator peak (B)"].append(r["memory"]["peak_allocated_bytes"])
    rows["host RSS peak (B)"].append(r["memory"]["peak_rss_bytes"])
    rows["smoothed final loss"].append(s["loss"]["mean_last"])
print(f"{'figure':26} {'median':>14} {'min':>14} {'max':>14} {'worst dev':>10}")
for name, v in rows.items():
    m = statistics.median(v)
    worst = max(abs(x - m) for x in v)
    rel = f"{100 * worst / m:.1f}%" if m else "-"
    print(f"{name:26} {m:14.6g} {min(v):14.6g} {max(v):14.6g} {rel:>10}")
PY
