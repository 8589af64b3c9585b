#!/usr/bin/env bash
# Configures and builds ftbench (Release, Ninja) in ${FTBENCH_BUILD_DIR:-build}.
#
# Usage: scripts/build.sh [--target NAME]... [extra CMake arguments]
# --target builds only those targets (and what they need); without it, everything.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${FTBENCH_BUILD_DIR:-build}
targets=()
configure_args=()
while (($#)); do
  if [[ "$1" == --target ]]; then
    targets+=("${2:?--target needs a name}")
    shift 2
  else
    configure_args+=("$1")
    shift
  fi
done
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${configure_args[@]}"
cmake --build "$build_dir" -j "$(nproc)" ${targets[@]:+--target "${targets[@]}"}
