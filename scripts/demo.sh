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
# Its own report (reports/ci-tiny.json) is replaced on a rerun; with arguments (say -o FILE) an
# existing file is kept unless they include --force.
if (($#)); then
  "${FTBENCH_BUILD_DIR:-build}"/src/ftbench run configs/ci-tiny.yaml "$@"
else
  "${FTBENCH_BUILD_DIR:-build}"/src/ftbench run configs/ci-tiny.yaml --force
fi
