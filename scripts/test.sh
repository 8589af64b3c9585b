#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install what is missing, build, run every test
# (unit, numerics, end to end) through ctest; then the sanitizer job (scripts/sanitize.sh: a
# clang ASan + UBSan build, the torch-free tests under it, 15 s of fuzzing per target), which
# FTBENCH_SKIP_SANITIZE=1 leaves out for a quicker local run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
ctest --test-dir "${FTBENCH_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
if [[ "${FTBENCH_SKIP_SANITIZE:-0}" != 1 ]]; then
  scripts/sanitize.sh
fi
