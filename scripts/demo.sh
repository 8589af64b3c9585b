#!/usr/bin/env bash
# One command on a fresh Debian 12 or 13 machine: install what is missing for ftbench alone
# (scripts/setup.sh --demo: no test, fuzz or GPU-module packages), build only the two programs
# the demo runs, and run the small default config (configs/ci-tiny.yaml) on the CPU, printing the
# summary. The tests are off in this configuration; scripts/test.sh turns them back on in the same
# build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --demo
scripts/build.sh --target ftbench --target ftbench-bin -DFTBENCH_BUILD_TESTS=OFF
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
"${FTBENCH_BUILD_DIR:-build}"/src/ftbench run configs/ci-tiny.yaml --force "$@"
