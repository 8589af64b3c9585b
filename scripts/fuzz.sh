#!/usr/bin/env bash
# Builds ftbench's libFuzzer targets (fuzz/, docs/fuzzing.md) with clang, ASan and UBSan, and
# runs each for a bounded time or number of inputs, on a scratch copy of its seed corpus and
# regression inputs, so the repository is left as it was. Prints per target the inputs run
# (execs), exec/s, coverage (cov: edges, ft: features), corpus size and crashes; exits 1 when
# any target found a crash, with the path of the input that crashed.
#
#   scripts/fuzz.sh [--seconds N] [--runs N] [--max-len N] [--target NAME]... [--work DIR]
#
# --seconds N  per target (default 60, unless --runs is given); --runs N inputs per target;
# --max-len N  longest input (libFuzzer's default: the largest seed of the target);
# --target     one target (repeatable; default all: ls fuzz/corpus); --work DIR scratch
# folder (default a new one under /tmp, kept). Build folder: FTBENCH_FUZZ_BUILD_DIR
# (default build-fuzz; scripts/sanitize.sh passes its build-sanitize). Compile jobs, and
# targets fuzzed at once: FTBENCH_JOBS (default nproc).
# FTBENCH_FUZZ_SKIP_SETUP=1 skips scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=""
runs=""
max_len=""
targets=()
work=""
while (($#)); do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --max-len) max_len=$2; shift 2 ;;
    --target) targets+=("$2"); shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$seconds" && -z "$runs" ]]; then seconds=60; fi
if ((${#targets[@]} == 0)); then
  for dir in fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi

if [[ -z "${FTBENCH_FUZZ_SKIP_SETUP:-}" ]]; then scripts/setup.sh; fi
build=${FTBENCH_FUZZ_BUILD_DIR:-build-fuzz}
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  # -O1 -g, as libFuzzer's documentation advises: fast enough, readable stack traces.
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DFTBENCH_WITH_TORCH=OFF \
    -DFTBENCH_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g"
fi
cmake --build "$build" -j "${FTBENCH_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"

work=${work:-$(mktemp -d /tmp/ftbench-fuzz.XXXXXX)}
mkdir -p "$work"
# A smaller ASan quarantine and shorter allocation stacks than the defaults: twice the exec/s on
# the YAML targets (many small allocations), at the cost of a shorter use-after-free window and
# allocation traces of 5 frames. Re-run a crash input with ASAN_OPTIONS= for full traces.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16:malloc_context_size=5}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
limits=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1)
[[ -n "$seconds" ]] && limits+=("-max_total_time=$seconds")
[[ -n "$runs" ]] && limits+=("-runs=$runs")
[[ -n "$max_len" ]] && limits+=("-max_len=$max_len")

# One target: its run, then its summary line in $work/$t/summary and, when it failed, what to
# print in $work/$t/failure. libFuzzer runs one thread: FTBENCH_JOBS targets run at once (the
# machine's cores by default), each for the same time as alone.
fuzz_target() {
  local t=$1
  local exe="$build/fuzz/fuzz_$t" corpus="$work/$t/corpus" crashes="$work/$t/crashes"
  local log="$work/$t/fuzz.log"
  local dict=()
  [[ -f "fuzz/dict/$t.dict" ]] && dict=("-dict=fuzz/dict/$t.dict")
  local start_ns rc=0
  start_ns=$(date +%s%N)
  "$exe" "${limits[@]}" "${dict[@]}" -artifact_prefix="$crashes/" "$corpus" >"$log" 2>&1 || rc=$?
  local elapsed=$((($(date +%s%N) - start_ns) / 1000000000))
  local execs rate last cov ft files found
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  files=$(find "$corpus" -type f | wc -l)
  found=$(find "$crashes" -type f | wc -l)
  printf '%-14s %10s %8s %8s %7s %7s %7s %8s\n' "$t" "${execs:-?}" "$elapsed" \
    "${rate:-?}" "${cov:-?}" "${ft:-?}" "$files" "$found" >"$work/$t/summary"
  if ((rc != 0 || found > 0)); then
    {
      echo "fuzz: $t FAILED (exit $rc); the end of its log:"
      tail -40 "$log"
      find "$crashes" -type f -printf 'fuzz: crash input %p\n'
    } >"$work/$t/failure"
  fi
}

parallel=${FTBENCH_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
  rm -rf "${work:?}/$t"
  mkdir -p "$work/$t/corpus" "$work/$t/crashes"
  cp fuzz/corpus/"$t"/* "$work/$t/corpus"/
  if compgen -G "fuzz/regressions/$t/*" >/dev/null; then cp fuzz/regressions/"$t"/* "$work/$t/corpus"/; fi
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  echo "fuzz: $t (${limits[*]}), log $work/$t/fuzz.log"
  fuzz_target "$t" &
done
wait

failed=0
for t in "${targets[@]}"; do
  if [[ -f "$work/$t/failure" || ! -f "$work/$t/summary" ]]; then
    failed=1
    if [[ -f "$work/$t/failure" ]]; then cat "$work/$t/failure"; else echo "fuzz: $t did not finish"; fi
  fi
done
printf '%-14s %10s %8s %8s %7s %7s %7s %8s\n' target execs seconds exec/s cov ft corpus crashes
for t in "${targets[@]}"; do cat "$work/$t/summary" 2>/dev/null || true; done
echo "fuzz: logs, corpora and crash inputs in $work"
exit "$failed"
