#!/usr/bin/env bash
# Data parallel on one machine: configs/cpu-bench.yaml at micro-batch 4 x accumulation 2 (the
# effective batch 8 of the spec) as one process on one core (backend.threads 1), one process on
# every core, as 2 ranks (`ftbench run --nproc-per-node 2`, Gloo over 127.0.0.1, the cores
# shared between them), and as 2 ranks with the frozen base split between them
# (distributed.shard_base node), in turn BENCH_REPEATS times (default 3). Prints, per run, the
# median step, tokens/s, the share of the step blocked in collectives (distributed
# .collective_share, gathers included), the share spent waiting for the split base's gathers,
# the step skew, the frozen base rank 0 holds, its peak resident memory, and the loss of the
# last step (which must agree).
# Reports go to out/bench-dp/. Not a test: nothing here asserts a time.
#
# Environment:
#   FTBENCH_BUILD_DIR  build directory holding src/ftbench (default: build)
#   BENCH_REPEATS      repetitions of the pair (default: 3)
#   PYTHON             interpreter for reading the reports (default: /usr/bin/python3)
set -euo pipefail
export LC_NUMERIC=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
FTBENCH="${FTBENCH_BUILD_DIR:-build}/src/ftbench"
REPEATS="${BENCH_REPEATS:-3}"
PYTHON="${PYTHON:-/usr/bin/python3}"
OUT="out/bench-dp"
mkdir -p "$OUT"
JOB=(configs/cpu-bench.yaml --set train.micro_batch_size=4 --set train.grad_accum_steps=2
     --set output.progress=off --force)

for ((i = 1; i <= REPEATS; ++i)); do
  "$FTBENCH" run "${JOB[@]}" --set backend.threads=1 -o "$OUT/core-$i.json" >/dev/null \
    2>"$OUT/core-$i.log"
  "$FTBENCH" run "${JOB[@]}" -o "$OUT/one-$i.json" >/dev/null 2>"$OUT/one-$i.log"
  "$FTBENCH" run --nproc-per-node 2 "${JOB[@]}" -o "$OUT/two-$i.json" >/dev/null \
    2>"$OUT/two-$i.log"
  "$FTBENCH" run --nproc-per-node 2 "${JOB[@]}" --set distributed.shard_base=node \
    -o "$OUT/split-$i.json" >/dev/null 2>"$OUT/split-$i.log"
done

"$PYTHON" - "$OUT" "$REPEATS" <<'PY'
import json, sys
out, repeats = sys.argv[1], int(sys.argv[2])
print(f"{'run':<9}{'ranks':>6}{'threads':>8}{'step p50 s':>12}{'tokens/s':>10}"
      f"{'in collectives':>16}{'gather wait':>13}{'skew s':>9}{'base MB':>9}{'peak RSS MB':>13}"
      f"{'last loss':>12}")
for i in range(1, repeats + 1):
    for name in ("core", "one", "two", "split"):
        r = json.load(open(f"{out}/{name}-{i}.json"))
        d = r.get("distributed") or {}
        rank0 = (d.get("ranks") or [{}])[0]
        wall = sum(s["wall_seconds"] for s in rank0.get("steps", [])) or 1.0
        wait = rank0.get("gather_wait_seconds", 0.0) / wall
        base = rank0.get("base_bytes")
        base_mb = f"{base / 1e6:.1f}" if base is not None else "-"
        rss = rank0.get("peak_rss_bytes") or r["memory"].get("peak_rss_bytes") or 0
        threads = r["segments"][-1].get("intra_op_threads")
        print(f"{name + '-' + str(i):<9}{r['run']['world_size']:>6}{threads:>8}"
              f"{r['summary']['step_seconds']['median']:>12.4f}"
              f"{r['summary']['tokens_per_second']['real']:>10.0f}"
              f"{100 * d.get('collective_share', 0.0):>15.1f}%{100 * wait:>12.1f}%"
              f"{d.get('step_skew_seconds', 0.0):>9.4f}{base_mb:>9}{rss / 2**20:>13.1f}"
              f"{r['steps'][-1]['loss']:>12.6f}")
PY
