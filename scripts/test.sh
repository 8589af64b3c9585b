#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install what is missing, build, run every test
# (unit, numerics, end to end) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
ctest --test-dir "${FTBENCH_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
