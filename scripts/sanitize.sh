#!/usr/bin/env bash
# The sanitizer job of CI (scripts/test.sh runs it after the normal build; docs/fuzzing.md):
# one clang build in ${FTBENCH_SANITIZE_BUILD_DIR:-build-sanitize}, torch-free, with ASan and
# UBSan (fatal) and the libFuzzer targets; then the torch-free unit tests and the fuzz corpus
# replays under the sanitizers (ctest -L core), and a short fuzz pass of every target reusing
# the same build. FTBENCH_FUZZ_SECONDS sets the fuzz time per target (default 15).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FTBENCH_SANITIZE_BUILD_DIR:-build-sanitize}
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DFTBENCH_WITH_TORCH=OFF \
    -DFTBENCH_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g"
fi
# What `ctest -L core` runs and the fuzz targets; not the e2e tests nor the GPU query checks.
targets=(ftbench_core_tests ftbench ftbench_fake_gpu_query)
for dir in fuzz/corpus/*/; do
  targets+=("fuzz_$(basename "$dir")" "fuzz_replay_$(basename "$dir")")
done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -L core
FTBENCH_FUZZ_BUILD_DIR=$build FTBENCH_FUZZ_SKIP_SETUP=1 \
  scripts/fuzz.sh --seconds "${FTBENCH_FUZZ_SECONDS:-15}"
