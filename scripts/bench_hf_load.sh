#!/usr/bin/env bash
# Checkpoint load throughput (docs/benchmarks.md, "Hugging Face checkpoint load"): writes a
# random ~1 GB bf16 Llama checkpoint in Hugging Face layout (tests/reference/hf_checkpoint.py,
# 2 shards), then runs one training step on it with `ftbench run` and prints the report's
# weights section. Each case runs twice: "cold" after the files were evicted from the page cache
# (posix_fadvise DONTNEED, no root needed; a file another process holds mapped stays cached),
# "warm" right after. The disk's own sequential read of the same files, cold, is printed first
# as the yardstick.
#
# Usage: scripts/bench_hf_load.sh [BUILD_DIR] [WORK_DIR]   (defaults: build, /tmp/ftbench-hfload)
# Needs Debian's /usr/bin/python3 with numpy, and ~5 GB free in WORK_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=${2:-/tmp/ftbench-hfload}
py=/usr/bin/python3
ftbench="$build/src/ftbench"
[[ -x "$ftbench" ]] || ftbench="$build/ftbench"
[[ -x "$ftbench" ]] || { echo "no ftbench in $build" >&2; exit 2; }

mkdir -p "$work"
ck="$work/ck-1gb"
if [[ ! -f "$ck/config.json" ]]; then
  echo "writing the checkpoint to $ck ..."
  # 8 layers of dim 2048 (GQA 16/8 heads, FFN 5632) and an untied 32,000-token vocabulary:
  # 508,594,176 parameters, 1,017,188,352 bytes of tensor data in bf16.
  "$py" tests/reference/hf_checkpoint.py make "$ck" --layers 8 --dim 2048 --heads 16 \
    --kv-heads 8 --ffn 5632 --vocab 32000 --rope-theta 500000 --dtype bfloat16 --shards 2 \
    --max-position 4096 --seed 1
fi
du -b "$ck"/*.safetensors

evict() {
  "$py" - "$ck" <<'EOF'
import os, sys
for name in os.listdir(sys.argv[1]):
    path = os.path.join(sys.argv[1], name)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
EOF
}

evict
echo "disk, cold sequential read of the shards:"
"$py" - "$ck" <<'EOF'
import os, sys, time
total, start = 0, time.perf_counter()
for name in sorted(os.listdir(sys.argv[1])):
    if name.endswith(".safetensors"):
        with open(os.path.join(sys.argv[1], name), "rb", buffering=0) as f:
            while True:
                chunk = f.read(16 << 20)
                if not chunk:
                    break
                total += len(chunk)
seconds = time.perf_counter() - start
print(f"  {total} bytes in {seconds:.3f} s = {total / seconds / 1e6:.0f} MB/s")
EOF

for dtype in bf16 fp32; do
  for cache in cold warm; do
    [[ $cache == cold ]] && evict
    report="$work/load-$dtype-$cache.json"
    "$ftbench" run configs/ci-tiny.yaml --force -o "$report" \
      --set model.preset=custom --set model.checkpoint="$ck" --set model.dtype=$dtype \
      --set data.num_examples=8 --set data.seq_len=32 --set data.min_tokens=16 \
      --set data.max_tokens=32 --set train.micro_batch_size=1 --set train.grad_accum_steps=1 \
      --set train.max_steps=1 --set train.timing_warmup_steps=0 --set train.loss_window=1 \
      --set lora.targets=[q,v] --set output.progress=off >/dev/null 2>"$work/log-$dtype-$cache"
    "$py" - "$report" "$dtype" "$cache" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
w = r["weights"]
phase = next(p for p in r["timing"]["phases"] if p["name"] == "weight_load")
print(f"  ftbench {sys.argv[3]:>4}, bf16 -> {sys.argv[2]}: {w['tensors']} tensors, {w['bytes']} bytes "
      f"in {w['seconds']:.3f} s = {w['bytes_per_second'] / 1e6:.0f} MB/s "
      f"(weight_load phase {phase['seconds']:.3f} s, process peak RSS by its end "
      f"{((phase.get('memory') or {}).get('peak_rss_bytes') or 0) / 1e9:.2f} GB)")
EOF
  done
done
