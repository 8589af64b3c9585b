#!/usr/bin/env bash
# Configures and builds ftbench (Release, Ninja) in ${FTBENCH_BUILD_DIR:-build}.
#
# Usage: scripts/build.sh [--target NAME]... [extra CMake arguments]
# --target builds only those targets (and what they need); without it, everything.
#
# Through ccache where it is installed (scripts/setup.sh installs it), with paths hashed relative
# to the checkout: a second build folder of the same sources (CI's PyPI job,
# scripts/ci-pypi-torch.sh) gets the torch-free objects compiled here from the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=$PWD
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
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
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  ${configure_args[@]+"${configure_args[@]}"}
cmake --build "$build_dir" -j "$(nproc)" ${targets[@]:+--target "${targets[@]}"}
