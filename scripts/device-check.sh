#!/usr/bin/env bash
# The GPU check, as one prepared script for a GPU machine (issue 5): build against the installed
# PyTorch, run the tests, measure achievable GEMM throughput, run the 8B LoRA recipe for a few
# steps with ftbench, run the same model, LoRA and batch in PyTorch eager with transformers +
# peft, and put both side by side. Everything lands in $OUT (default out/device-check).
# Budget: about 10 minutes on an H200; each stage has its own time limit and a failed stage does
# not stop the later ones that do not need it.
#
# Usage: scripts/device-check.sh        (env: OUT, STEPS (12), WARMUP (3), PYTHON (python3))
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out/device-check}
steps=${STEPS:-12}
warmup=${WARMUP:-3}
python=${PYTHON:-python3}
mkdir -p "$out"
build=${FTBENCH_BUILD_DIR:-build-gpu}
ftbench="$build/src/ftbench"
status=0
t_start=$(date +%s)

stage() {  # stage NAME LIMIT_SECONDS COMMAND...: runs it, logs to $out/NAME.log, reports
  local name=$1 limit=$2
  shift 2
  local t0 rc
  t0=$(date +%s)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  printf '%-12s rc=%-3s %4ss  (%s)\n' "$name" "$rc" "$(($(date +%s) - t0))" "$out/$name.log" |
    tee -a "$out/stages.txt"
  [[ $rc -eq 0 ]] || { status=1; tail -20 "$out/$name.log"; }
  return "$rc"
}

{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 ||
    rocm-smi --showproductname 2>&1 || true
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  git rev-parse HEAD 2>/dev/null || true
} >"$out/machine.txt" 2>&1
: >"$out/stages.txt"

stage build 360 scripts/device-build.sh || { echo "build failed"; exit 1; }
# Every test of the suite but the tokenizer conformance (needs Node.js and npm, CPU CI runs it).
stage tests 150 ctest --test-dir "$build" -j 8 -E tokenizer_conformance --output-on-failure
stage gemm 100 "$ftbench" gemm --device auto --dtype bf16,fp8,fp16,tf32,fp32 --max-seconds 75 \
  -o "$out/gemm.json" --force

# Hugging Face interop against transformers and peft (issue 7; scripts/reference/check_hf.sh).
stage hf 150 scripts/reference/check_hf.sh "$out/hf" "$ftbench" "$python"

# The recipe with every example exactly seq_len tokens and every token a label, so that the
# reference can run the very same batch shape and loss work.
recipe=(configs/llama3.1-8b-lora-synthetic.yaml --set train.max_steps="$steps"
        --set train.timing_warmup_steps="$warmup" --set data.length_distribution=fixed
        --set data.max_tokens=2048 --set data.train_on_input=true)
"$ftbench" validate "${recipe[@]}" --json >"$out/spec.json" 2>"$out/validate.log" || status=1
gemm_arg=()
[[ -s "$out/gemm.json" ]] && gemm_arg=(--gemm "$out/gemm.json")
stage ftbench 240 "$ftbench" run "${recipe[@]}" "${gemm_arg[@]}" -o "$out/ftbench.json" --force
stage reference 240 "$python" scripts/reference/hf_peft_lora_step.py --spec "$out/spec.json" \
  --steps "$steps" --warmup "$warmup" --out "$out/reference.json"
if [[ -s "$out/ftbench.json" && -s "$out/reference.json" ]]; then
  "$python" scripts/reference/device_check_summary.py "$out/ftbench.json" "$out/reference.json" \
    | tee "$out/summary.txt"
  "$python" scripts/reference/device_check_summary.py --json "$out/ftbench.json" \
    "$out/reference.json" >"$out/summary.json"
fi
echo "device check: $(($(date +%s) - t_start)) s, status $status; files in $out"
exit "$status"
