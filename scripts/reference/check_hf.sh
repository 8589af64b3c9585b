#!/usr/bin/env bash
# Hugging Face interop against transformers and peft themselves (issue 7), for a machine that
# has them (the GPU machines; scripts/device-check.sh runs it): a small random checkpoint in HF
# layout (tests/reference/hf_checkpoint.py: GQA, Llama 3 rope scaling, unusual eps and theta, 2
# shards), 4 LoRA steps of ftbench on it with every target and the adapter exported, then
# ftbench's logits of the base and of base + adapter (`ftbench logits`, fp32 and bf16) compared
# with LlamaForCausalLM.from_pretrained and PeftModel.from_pretrained by check_hf.py, and the
# merged export loaded by LlamaForCausalLM against the adapter's logits. Exit 0 when every
# comparison passes.
#
# Usage: scripts/reference/check_hf.sh OUT_DIR FTBENCH [PYTHON] [DEVICE]
#        (DEVICE: cuda (default), cpu; ftbench runs on `auto`)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
ftbench=$2
python=${3:-python3}
device=${4:-cuda}
ck="$out/ck"
ids="1,17,250,33,5,299,64,7;9,8,7,6,5,4,3,2"
rm -rf "$out" && mkdir -p "$out"
"$python" tests/reference/hf_checkpoint.py make "$ck" --layers 2 --dim 256 --heads 8 \
  --kv-heads 2 --ffn 512 --vocab 320 --rope-theta 500000 --rope-scaling llama3 \
  --rope-original-max-position 64 --rms-norm-eps 1e-3 --max-position 512 --shards 2
"$ftbench" run configs/ci-tiny.yaml --set backend.device=auto --set model.preset=custom \
  --set model.checkpoint="$ck" --set lora.targets=[q,k,v,o,gate,up,down,output] \
  --set lora.dropout=0 --set data.num_examples=32 --set output.adapter="$out/adapter" \
  --set output.merged="$out/merged" --set output.progress=off -o "$out/run.json" --force
status=0
for dtype in fp32 bf16; do
  torch_dtype=float32
  [[ $dtype == bf16 ]] && torch_dtype=bfloat16
  "$ftbench" logits --checkpoint "$ck" --ids "$ids" --dtype $dtype -o "$out/base-$dtype.json" \
    --force
  "$ftbench" logits --checkpoint "$ck" --adapter "$out/adapter" --ids "$ids" --dtype $dtype \
    -o "$out/adapter-$dtype.json" --force
  echo "== $dtype (transformers in $torch_dtype on $device)"
  "$python" scripts/reference/check_hf.py --checkpoint "$ck" --logits "$out/base-$dtype.json" \
    --adapter "$out/adapter" --adapter-logits "$out/adapter-$dtype.json" --device "$device" \
    --dtype $torch_dtype || status=1
  # The merged export is base + adapter as one checkpoint: transformers on it must give the
  # adapter's logits.
  "$python" scripts/reference/check_hf.py --checkpoint "$out/merged" \
    --logits "$out/adapter-$dtype.json" --device "$device" --dtype $torch_dtype || status=1
done
exit $status
