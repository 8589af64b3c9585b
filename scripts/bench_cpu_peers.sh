#!/usr/bin/env bash
# CPU peer benchmark, like for like: ftbench against Hugging Face transformers + peft in PyTorch
# eager mode and against torchtune's LoRA model and recipe step, all on the same torch.
#
# What runs. The cpu-bench shape (configs/cpu-bench.yaml: Llama-style dim 256, 4 layers, 8 / 4
# heads, FFN 688, vocabulary 2048, sequence 256, micro-batch 8, LoRA r16 / alpha 32 on q, v, o,
# fp32, AdamW lr 1e-4 wd 0.01, clipping at 1.0; 30 steps, the first 5 left out), every token a
# label in all of them (ftbench with --set data.train_on_input=true; the references train on
# labels = input_ids), random weights, nothing downloaded:
#   ftbench         `ftbench run` of FTBENCH_BUILD_DIR (built against the venv's LibTorch, so the
#                   same torch binary as the Python references); its launcher sets
#                   OMP_WAIT_POLICY=PASSIVE and ftbench-bin the glibc malloc settings below
#   hf              scripts/reference/hf_peft_lora_step.py --device cpu: LlamaForCausalLM with SDPA
#                   attention + peft.get_peft_model + torch.optim.AdamW, as a user runs it
#   hf-equal        the same with ftbench's process settings given through the environment
#                   (OMP_WAIT_POLICY=PASSIVE and the malloc settings: EQUAL_ENV below)
#   hf-eager-equal  hf-equal with attn_implementation="eager" (a note; first repeat only)
#   torchtune       torchtune's own recipe, `tune run lora_finetune_single_device` on CPU in fp32
#                   (lora_llama3 at the spec's shape, its CEWithChunkedOutputLoss and
#                   AdamW(fused=True), batch 8 of 256-token rows, all labels), with the
#                   tokenizer, data and random checkpoint that
#                   `scripts/reference/torchtune_lora_step.py --prepare-recipe` makes; step time =
#                   tokens per step / the tokens_per_second_per_gpu it logs. As a user runs it
#   torchtune-equal the same with EQUAL_ENV
#   torchtune-loop  (not in the default list) torchtune_lora_step.py's own loop of the recipe's
#                   step on the same model, without the recipe's data loader
#   ftbench-baseline  with FTBENCH_BASELINE_BUILD_DIR set: a second ftbench build (e.g. before a
#                   change), run like ftbench right after it
# at 1 thread and at all threads (nproc): OMP_NUM_THREADS and torch.set_num_threads /
# backend.threads. One repeat runs every implementation at 1 thread, then every one at nproc
# threads; BENCH_REPEATS repeats (default 4) follow each other, so drifts of a shared machine hit
# all of them. Before and after each run the 1-minute load average (/proc/loadavg) is recorded.
# Reported: per implementation and thread count the median over the repeats of each run's median
# step time; the ratio ftbench / reference of each repeat and the median and range of those
# ratios (below 1: ftbench faster).
#
# torchtune goes into a scratch venv (TORCHTUNE_VENV, default /tmp/ftbench-torchtune-venv) that
# reuses the pinned venv's packages (torch included) through a .pth file, so torch is the same
# install; torchtune 0.6.1 and the packages it imports are installed there with --no-deps
# (python/torchtune-bench.txt, pinned with hashes), from PyPI on first use. torchao is held at
# 0.15.0: torchtune 0.6.1 imports torchao.dtypes.nf4tensor (gone in torchao 0.18) and
# torchao.quantization.int4_weight_only (gone in 0.16). BENCH_TORCHTUNE=0 leaves torchtune out.
#
# Everything is written under out/bench/peers/: one JSON per run, runs.tsv (one line a run),
# summary.md.
#
# Environment:
#   FTBENCH_BUILD_DIR  build whose src/ftbench runs (default: build-pypi)
#   FTBENCH_BASELINE_BUILD_DIR  optional second build, run as ftbench-baseline
#   PYTHON             the pinned venv's interpreter (default: .venv/bin/python)
#   BENCH_REPEATS      repeats (default 4)
#   BENCH_THREADS      thread counts (default: "1 $(nproc)")
#   BENCH_IMPLS        implementations (default: all above)
#   BENCH_STEPS, BENCH_WARMUP   steps per run and steps left out (default 30, 5)
#   BENCH_TORCHTUNE, TORCHTUNE_VENV   see above
set -euo pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BUILD_DIR="${FTBENCH_BUILD_DIR:-build-pypi}"
FTBENCH="$BUILD_DIR/src/ftbench"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
REPEATS="${BENCH_REPEATS:-4}"
THREADS=(${BENCH_THREADS:-1 $(nproc)})
STEPS="${BENCH_STEPS:-30}"
WARMUP="${BENCH_WARMUP:-5}"
SPEC="configs/cpu-bench.yaml"
OUT_DIR="out/bench/peers"
TORCHTUNE_VENV="${TORCHTUNE_VENV:-/tmp/ftbench-torchtune-venv}"
TORCHTUNE_REQUIREMENTS="$ROOT/python/torchtune-bench.txt"
# What ftbench sets for itself (the launcher, and mallopt in ftbench-bin's main), for the
# "-equal" runs.
EQUAL_ENV=(OMP_WAIT_POLICY=PASSIVE MALLOC_MMAP_THRESHOLD_=33554432
  MALLOC_TRIM_THRESHOLD_=2147483647 MALLOC_TOP_PAD_=67108864)
# Unset for the "as a user runs it" runs and for ftbench (which sets its own).
CLEAR_ENV=(-u OMP_WAIT_POLICY -u MALLOC_MMAP_THRESHOLD_ -u MALLOC_TRIM_THRESHOLD_
  -u MALLOC_TOP_PAD_ -u GLIBC_TUNABLES)

BASELINE_DIR="${FTBENCH_BASELINE_BUILD_DIR:-}"
default_impls="ftbench${BASELINE_DIR:+ ftbench-baseline} hf hf-equal hf-eager-equal"
default_impls+=" torchtune torchtune-equal"
IMPLS=(${BENCH_IMPLS:-$default_impls})
if [[ "${BENCH_TORCHTUNE:-1}" == 0 ]]; then
  IMPLS=($(printf '%s\n' "${IMPLS[@]}" | grep -v '^torchtune'))
fi

die() {
  echo "bench_cpu_peers: $*" >&2
  exit 1
}
[[ -x "$FTBENCH" ]] || die "$FTBENCH not found (build it, or set FTBENCH_BUILD_DIR)"
if [[ -n "$BASELINE_DIR" && ! -x "$BASELINE_DIR/src/ftbench" ]]; then
  die "$BASELINE_DIR/src/ftbench not found (FTBENCH_BASELINE_BUILD_DIR)"
fi
[[ -x "$PYTHON" ]] || die "$PYTHON not found (scripts/python-env.sh makes the venv)"

TORCH_VERSION="$("$PYTHON" -c 'import torch; print(torch.__version__)')"
mkdir -p "$OUT_DIR"
spec_json="$OUT_DIR/spec.json"
"$FTBENCH" validate "$SPEC" --json --set data.train_on_input=true >"$spec_json"

wants_torchtune=0
for impl in "${IMPLS[@]}"; do
  [[ "$impl" == torchtune* ]] && wants_torchtune=1
done
if ((wants_torchtune)); then
  tt_python="$TORCHTUNE_VENV/bin/python"
  if ! "$tt_python" -c 'import torchtune' 2>/dev/null; then
    echo "== torchtune: making $TORCHTUNE_VENV" >&2
    # The pinned venv's own base interpreter: the .pth below puts that venv's compiled packages
    # (torch) on the path, which only the same Python version can load.
    "$("$PYTHON" -c 'import sys; print(sys._base_executable)')" -m venv "$TORCHTUNE_VENV"
    site="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    tt_site="$("$tt_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$site" >"$tt_site/zz-ftbench-venv.pth"
    "$tt_python" -m pip install -q --no-deps --require-hashes -r "$TORCHTUNE_REQUIREMENTS"
  fi
  tt_torch="$("$tt_python" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
  [[ "$tt_torch" == "$TORCH_VERSION" ]] ||
    die "torchtune venv has torch $tt_torch, not $TORCH_VERSION"
  recipe_dir="$ROOT/$OUT_DIR/torchtune-recipe"
  rm -rf "$recipe_dir"
  "$tt_python" scripts/reference/torchtune_lora_step.py --spec "$spec_json" --steps "$STEPS" \
    --warmup "$WARMUP" --prepare-recipe "$recipe_dir" >"$OUT_DIR/torchtune-prepare.log" 2>&1 ||
    die "torchtune recipe inputs failed, see $OUT_DIR/torchtune-prepare.log"
fi

load1() { cut -d' ' -f1 /proc/loadavg; }
runs_tsv="$OUT_DIR/runs.tsv"
printf 'repeat\tthreads\timpl\tmedian_step_s\tmean_step_s\tload1_before\tload1_after\tfile\n' \
  >"$runs_tsv"

# run_one REPEAT THREADS IMPL: one run, one line of runs.tsv.
run_one() {
  local i="$1" t="$2" impl="$3"
  local out="$OUT_DIR/$impl-t$t-r$i.json" log="$OUT_DIR/$impl-t$t-r$i.log"
  local -a envs=(env "${CLEAR_ENV[@]}" OMP_NUM_THREADS="$t")
  local -a cmd
  case "$impl" in
    ftbench | ftbench-baseline)
      local bin="$FTBENCH"
      [[ "$impl" == ftbench-baseline ]] && bin="$BASELINE_DIR/src/ftbench"
      cmd=("$bin" run "$SPEC" --force -o "$out" --set output.progress=off
        --set data.train_on_input=true --set backend.threads="$t"
        --set train.max_steps="$STEPS" --set train.timing_warmup_steps="$WARMUP") ;;
    hf | hf-equal | hf-eager-equal)
      local attn=sdpa
      [[ "$impl" == hf-eager-equal ]] && attn=eager
      cmd=("$PYTHON" scripts/reference/hf_peft_lora_step.py --spec "$spec_json" --device cpu
        --threads "$t" --attn "$attn" --steps "$STEPS" --warmup "$WARMUP" --out "$out") ;;
    torchtune | torchtune-equal)
      # The recipe takes its threads from OMP_NUM_THREADS; its log becomes the JSON below.
      local run_dir="$recipe_dir/$impl-t$t-r$i"
      cmd=("$TORCHTUNE_VENV/bin/tune" run lora_finetune_single_device
        --config "$recipe_dir/config.yaml" "output_dir=$run_dir"
        "checkpointer.output_dir=$run_dir" "metric_logger.log_dir=$run_dir/logs") ;;
    torchtune-loop)
      cmd=("$tt_python" scripts/reference/torchtune_lora_step.py --spec "$spec_json"
        --threads "$t" --steps "$STEPS" --warmup "$WARMUP" --out "$out") ;;
    *) die "unknown implementation $impl" ;;
  esac
  [[ "$impl" == *-equal ]] && envs+=("${EQUAL_ENV[@]}")
  local before after
  before="$(load1)"
  echo "== repeat $i/$REPEATS, $t thread(s): $impl (load $before)" >&2
  "${envs[@]}" "${cmd[@]}" >"$log" 2>&1 || die "$impl failed, see $log"
  after="$(load1)"
  if [[ "$impl" == torchtune || "$impl" == torchtune-equal ]]; then
    recipe_logs=("$run_dir"/logs/log_*.txt)
    "$tt_python" scripts/reference/torchtune_lora_step.py --spec "$spec_json" --warmup "$WARMUP" \
      --read-recipe-log "${recipe_logs[0]}" --out "$out" >/dev/null
  fi
  "$PYTHON" - "$out" "$i" "$t" "$impl" "$before" "$after" >>"$runs_tsv" <<'EOF'
import json, sys
path, i, t, impl, before, after = sys.argv[1:]
r = json.load(open(path))
s = r["summary"]["step_seconds"] if "summary" in r else {
    "median": r["median_step_seconds"], "mean": r["mean_step_seconds"]}
print(f"{i}\t{t}\t{impl}\t{s['median']:.4f}\t{s['mean']:.4f}\t{before}\t{after}\t{path}")
EOF
  tail -n 1 "$runs_tsv" >&2
}

started="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
for ((i = 1; i <= REPEATS; i++)); do
  for t in "${THREADS[@]}"; do
    for impl in "${IMPLS[@]}"; do
      [[ "$impl" == hf-eager-equal && $i -gt 1 ]] && continue
      run_one "$i" "$t" "$impl"
    done
  done
done
finished="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"

commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
dirty="$(git status --porcelain -- src 2>/dev/null)"
cpu_model="$(lscpu | sed -n 's/^Model name:[[:space:]]*//p')"
cpu_model=${cpu_model%%$'\n'*}
"$PYTHON" - "$runs_tsv" >"$OUT_DIR/summary.md" <<EOF
import csv, json, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
ft_files = [r["file"] for r in rows if r["impl"] == "ftbench"]
libtorch = "?"
if ft_files:
    libtorch = json.load(open(ft_files[0]))["environment"]["software"]["libtorch_version"]
print("# ftbench against transformers + peft and torchtune, CPU, like for like")
print()
print("- runs: $started to $finished")
print("- machine: $cpu_model, nproc $(nproc)")
print(f"- commit: $commit${dirty:+ (src modified)}; "
      f"ftbench build: $BUILD_DIR (LibTorch {libtorch})")
print("- torch (references): $TORCH_VERSION")
if "$BASELINE_DIR":
    print("- ftbench-baseline: $BASELINE_DIR")
print("- $SPEC, data.train_on_input=true, $STEPS steps, $WARMUP left out; repeats: $REPEATS")
print()
print("| threads | impl | median step s (median of runs) | runs | "
      "ftbench / this, median (range) | load1 during runs |")
print("|---|---|---|---|---|---|")
by = {}
for r in rows:
    by.setdefault((r["threads"], r["impl"]), []).append(r)
for (t, impl), rs in by.items():
    med = statistics.median(float(r["median_step_s"]) for r in rs)
    runs = ", ".join(f"{float(r['median_step_s']):.3f}" for r in rs)
    loads = [float(r[k]) for r in rs for k in ("load1_before", "load1_after")]
    ratio = ""
    if impl != "ftbench":
        ft = {r["repeat"]: float(r["median_step_s"]) for r in by.get((t, "ftbench"), [])}
        q = [ft[r["repeat"]] / float(r["median_step_s"]) for r in rs if r["repeat"] in ft]
        if q:
            ratio = f"**{statistics.median(q):.3f}** ({min(q):.3f}-{max(q):.3f})"
    print(f"| {t} | {impl} | {med:.4f} | {runs} | {ratio} | {min(loads):.2f}-{max(loads):.2f} |")
EOF
cat "$OUT_DIR/summary.md"
