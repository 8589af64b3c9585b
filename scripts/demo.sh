#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install what is missing, build, and run the small
# default config (configs/ci-tiny.yaml) on the CPU, printing the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
build/src/ftbench run configs/ci-tiny.yaml --force "$@"
