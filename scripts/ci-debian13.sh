#!/usr/bin/env bash
# CI job: ftbench on Debian 13 (trixie: LibTorch 2.6, nlohmann-json 3.11.3, g++ 14, clang 19) on
# a Debian host, in a root made with debootstrap (scripts/lib/debian13-root.sh: made once in
# /var/cache/ftbench/debian13-root, reused after). Inside it runs the project's own commands on
# this checkout, bound at /src: scripts/setup.sh, scripts/build.sh into build-debian13, and
# ctest for the whole suite with CI=true, so a skip for something missing is a failure
# (README.md, "Skips and CI").
#
# The torch sources are compiled without the precompiled header here
# (CMAKE_DISABLE_PRECOMPILE_HEADERS=ON): a file that uses a LibTorch name without including its
# header (at::NoGradGuard without <ATen/core/grad_mode.h>) compiles through the PCH but fails
# here. The sanitizer job (scripts/sanitize.sh) runs on Debian 12 only.
#
# Needs root (mount, chroot; re-runs itself through sudo otherwise) and the network to
# deb.debian.org and npm. Arguments are passed to ctest (e.g. -R report).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -ne 0 ]]; then
  exec sudo --preserve-env=CI,FTBENCH_DEBIAN13_ROOT,FTBENCH_DEBIAN13_APT_CACHE "$0" "$@"
fi
source scripts/lib/debian13-root.sh

build_dir=build-debian13
started=$SECONDS
phase() { echo "ci-debian13: $1 ($((SECONDS - started)) s so far)"; }

debian13_root_lock
debian13_root_ensure
phase "root ready"
debian13_root_mount "$PWD" /src

debian13_root_run bash -c 'cd /src && scripts/setup.sh'
phase "packages ready"
debian13_root_run env FTBENCH_BUILD_DIR="$build_dir" bash -c \
  'cd /src && scripts/build.sh -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON'
phase "built"
debian13_root_run env CI=true OMP_NUM_THREADS="$(nproc)" \
  ctest --test-dir "/src/$build_dir" --output-on-failure -j "$(nproc)" "$@"
phase "tests passed"
