#!/usr/bin/env bash
# CI job: ftbench on Debian 13 (trixie: LibTorch 2.6, nlohmann-json 3.11.3, g++ 14, clang 19) on
# a Debian host, in a root made with debootstrap (scripts/lib/debian13-root.sh: made once in
# /var/cache/ftbench/debian13-root, reused after). Inside it runs the project's own commands on
# this checkout, bound at /src: scripts/setup.sh, scripts/build.sh into build-debian13, and
# ctest for the whole suite with CI=true, so a skip for something missing is a failure
# (docs/ci.md, "Skips and CI").
#
# The torch sources are compiled without the precompiled header here
# (CMAKE_DISABLE_PRECOMPILE_HEADERS=ON): a file that uses a LibTorch name without including its
# header (at::NoGradGuard without <ATen/core/grad_mode.h>) compiles through the PCH but fails
# here. The sanitizer job (scripts/sanitize.sh) runs on Debian 12 only.
#
# The build is at -O1 rather than Release's -O3 (NDEBUG kept): this job has to compile and pass,
# not to be fast, and without the PCH most of a file's time is LibTorch's headers. Measured
# 2026-12-08 on the project's 2-core VM, one file at a time in the root: tests/report/report_test.cpp
# 30.3 s at -O3, 18.4 s at -O1; src/model/hf/torch/peft_adapter.cpp 19.6 s and 16.9 s;
# src/run/torch/components.cpp 17.6 s and 16.0 s. The whole build: see docs/ci.md, "Timings".
#
# The Python references' virtual environment (scripts/python-env.sh, python/requirements.txt) is
# made with Debian 13's own Python in the root, at /opt/ftbench-venv (FTBENCH_VENV), not in the
# checkout, whose .venv belongs to the host's Python; it is kept with the root.
#
# Needs root (mount, chroot; re-runs itself through sudo otherwise) and the network to
# deb.debian.org and PyPI. /usr/local/cuda, where the host has it, is bound in read-only for the
# CUDA query module. Arguments are passed to ctest (e.g. -R report).
#
# --prepare: only the root and the packages (setup.sh, ccache), no build: .ci/run runs it in the
# background while the Debian 12 job compiles, so that the downloads and dpkg's work overlap it.
#
# The build goes through ccache (the cache in the root, /root/.cache/ccache, kept with it;
# CCACHE_BASEDIR=/src, where the checkout is bound), so a rerun recompiles only what changed.
#
# Measured 2026-12-02 on this project's 2-core VM (Intel Xeon, 24 GiB, Debian 12 host) while four
# other helpers' builds shared it (load average 12 to 15), so far slower than the machine alone:
# - cold: debootstrap 283 s; setup.sh in the fresh root 450 s (632 packages, 477 MB fetched in
#   47 s; about 350 of the packages are npm's node-* dependencies);
# - warm (root and packages there): setup.sh 4 s;
# - the build from an empty build-debian13 without PCH, measured in two pieces (one run stopped
#   and resumed): about 33 min for 77 of 201 steps, then 42 min for the rest (user CPU of the
#   second piece and the tests together 25 min); for comparison the Debian 12 PCH build of the
#   same tree on the host, under the same load, took 78 min wall, 21 min user CPU;
# - ctest (944 tests, -j 2, tokenizer_conformance included): 740 s under that load; 418 s later
#   the same day with load average 4 to 6 (all 944 passed, 5 skipped: the 3 GPU tests, one that
#   root defeats, one that needs the de_DE.UTF-8 locale; the same 5 as on Debian 12).
# Measured again 2026-12-02 in a full cold .ci/run on a freshly booted 2-core VM (AMD EPYC,
# nothing cached, idle but for CI; the root and packages prepared in the background during the
# Debian 12 job): this job 1364 s, of which ctest (993 tests) 350 s. With the build folder and
# ccache warm and a few sources changed: 510 s, most of it ctest.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
if [[ $(id -u) -ne 0 ]]; then
  # Every argument (--prepare too) and every FTBENCH_* setting goes along.
  keep=CI,OMP_NUM_THREADS$(compgen -v FTBENCH_ | sed 's/^/,/' | tr -d '\n')
  exec sudo --preserve-env="$keep" "$self" "$@"
fi
source scripts/lib/debian13-root.sh
# The binds below live in a mount namespace of this job's own: a killed job leaves none behind.
debian13_private_mounts "$self" "$@"
prepare_only=0
if [[ "${1:-}" == --prepare ]]; then
  prepare_only=1
  shift
fi

build_dir=build-debian13
# Inside the root (debian13_root_run passes FTBENCH_* on).
export FTBENCH_VENV=/opt/ftbench-venv
started=$SECONDS
phase() { echo "ci-debian13: $1 ($((SECONDS - started)) s so far)"; }

debian13_root_lock
debian13_root_ensure
phase "root ready"
debian13_root_mount "$PWD" /src
# The CUDA toolkit, for the CUDA query module and its ctest (cuda_query_module), as on Debian 12.
if [[ -d /usr/local/cuda ]]; then
  debian13_root_bind "$(readlink -f /usr/local/cuda)" /usr/local/cuda ro
fi

debian13_root_run bash -c 'cd /src && scripts/setup.sh'
debian13_root_install ccache
phase "packages ready"
((prepare_only)) && exit 0
debian13_root_run env "${debian13_ccache_env[@]}" FTBENCH_BUILD_DIR="$build_dir" bash -c \
  'cd /src && scripts/build.sh -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON \
     "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
     -DCMAKE_CXX_COMPILER_LAUNCHER=ccache && ccache --show-stats'
phase "built"
debian13_root_run env CI=true OMP_NUM_THREADS="$(nproc)" \
  ctest --test-dir "/src/$build_dir" --output-on-failure -j "$(nproc)" "$@"
phase "tests passed"
