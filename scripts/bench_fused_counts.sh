#!/usr/bin/env bash
# The fused blocks counted on a CPU (docs/benchmarks.md): ops and bytes a step, before
# (FTBENCH_FUSED_BLOCKS=0) and after, from the profiler (ftbench run --profile-steps) on two
# shapes: configs/cpu-bench.yaml as it is (fp32: the CPU's one-pass kernels) and the same model
# with the GPU recipe's settings (bf16 base and adapters, LoRA dropout 0.05, full activation
# checkpointing), which takes the ATen path a GPU takes. Counts (calls, FLOPs, leaf input bytes)
# do not depend on the machine's load; the times printed beside them do.
#
# Usage: scripts/bench_fused_counts.sh [OUT_DIR]   (FTBENCH_BUILD_DIR: build)
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:-out/fused-counts}
build=${FTBENCH_BUILD_DIR:-build}
mkdir -p "$out"
common=(--set train.max_steps=5 --set train.timing_warmup_steps=2 --set backend.threads=1
        --set output.progress=off --profile-steps 4,5 --force)
recipe=(--set model.dtype=bf16 --set lora.dtype=bf16 --set lora.dropout=0.05
        --set model.activation_checkpointing=full)
for shape in cpu-bench recipe; do
  extra=()
  [[ $shape == recipe ]] && extra=("${recipe[@]}")
  for fused in 0 1; do
    OMP_NUM_THREADS=1 FTBENCH_FUSED_BLOCKS=$fused "$build/src/ftbench" run configs/cpu-bench.yaml \
      "${common[@]}" "${extra[@]}" -o "$out/$shape-fused$fused.json" >"$out/$shape-fused$fused.log" 2>&1
  done
done
python3 - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
def load(name):
    r = json.load(open(f"{out}/{name}.json"))
    p = r["profile"]
    steps = p["last_step"] - p["first_step"] + 1
    rows = list(csv.DictReader(open(p["ops_table"])))
    calls = sum(int(x["calls"]) for x in rows)
    return r, p, steps, rows, calls
print("| shape | fused blocks | op calls a step | leaf input MB a step | profiler GFLOP a step | peak tensor MB | op self ms a step | step s (median, timed) |")
print("|---|---|---|---|---|---|---|---|")
for shape in ("cpu-bench", "recipe"):
    for fused in (0, 1):
        r, p, steps, rows, calls = load(f"{shape}-fused{fused}")
        print(f"| {shape} | {'on' if fused else 'off'} | {calls / steps:.0f} | "
              f"{p['leaf_input_bytes'] / steps / 1e6:.1f} | {p['flops'] / steps / 1e9:.2f} | "
              f"{r['memory']['peak_allocated_bytes'] / 1e6:.2f} | "
              f"{p['op_self_seconds'] / steps * 1e3:.0f} | {r['summary']['step_seconds']['median']:.4f} |")
print()
for shape in ("cpu-bench", "recipe"):
    _, _, s0, before, _ = load(f"{shape}-fused0")
    _, _, s1, after, _ = load(f"{shape}-fused1")
    b = {x["name"]: int(x["calls"]) / s0 for x in before}
    a = {x["name"]: int(x["calls"]) / s1 for x in after}
    diff = sorted(((a.get(n, 0) - b.get(n, 0), n) for n in set(a) | set(b)), key=lambda t: t[0])
    print(f"{shape}: calls a step, the largest changes (after - before):",
          ", ".join(f"{n} {d:+.0f}" for d, n in diff[:8] + diff[-4:] if d))
PY
