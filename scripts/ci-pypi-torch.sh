#!/usr/bin/env bash
# CI job: ftbench built against the LibTorch inside PyPI's PyTorch wheel, the LibTorch GPU users
# build against, with the script a GPU user runs (scripts/device-build.sh), on a CPU machine.
#   current       torch of python/requirements.txt (the current release, .venv): every program,
#                 then the whole suite through ctest with CI=true (a skip is a failure).
#   gpu-machines  torch 2.11.0 of python/torch-2.11.txt (the version on the lent GPU machines,
#                 .venv-torch2.11): the programs (ftbench, ftbench-bin, the GPU query modules)
#                 and the GPU tests, the targets scripts/device-check.sh builds first, then
#                 configs/ci-tiny.yaml, its report checked; the build folder is one a GPU session
#                 can carry (docs/ci.md). The other test programs, whose sources the 2.15.0 build
#                 has just compiled and run, are left out (the whole build took 360 s on 2
#                 cores, this one 198 s, 2026-12-06).
# Both are CUDA builds (PyPI's Linux wheels are): the CUDA side of ftbench compiles and links
# against them, nvcc from the toolkit in /usr/local/cuda; at run time the CUDA libraries are the
# wheel's own nvidia-* packages (device-build.sh says why), and without a GPU LibTorch reports
# none and the programs run on the CPU.
#
# The builds go through ccache (CCACHE_BASEDIR = the checkout), like scripts/test.sh's, so the
# torch-free objects the Debian 12 job compiled are cache hits here, and the second build's too.
#
# Usage: scripts/ci-pypi-torch.sh [--prepare] [current|gpu-machines]...   (default: both)
#   --prepare  only the virtual environments (downloads and unpacking), no build: .ci/run runs it
#              in the background while the Debian 12 job compiles
# Environment: FTBENCH_CCACHE_DIR (default: ccache's own), CUDA_HOME (default /usr/local/cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
prepare=0
if [[ "${1:-}" == --prepare ]]; then
  prepare=1
  shift
fi
variants=("$@")
((${#variants[@]})) || variants=(current gpu-machines)
log() { echo "ci-pypi-torch: $*"; }

# variant -> requirements, environment, build folder
declare -A requirements=([current]=python/requirements.txt [gpu-machines]=python/torch-2.11.txt)
declare -A venvs=([current]=${FTBENCH_VENV:-.venv} [gpu-machines]=.venv-torch2.11)
declare -A builds=([current]=build-pypi [gpu-machines]=build-gpu)
for v in "${variants[@]}"; do
  if [[ -z "${requirements[$v]:-}" ]]; then
    echo "usage: scripts/ci-pypi-torch.sh [--prepare] [current|gpu-machines]..." >&2
    exit 2
  fi
done

for v in "${variants[@]}"; do
  t=$SECONDS
  scripts/python-env.sh --requirements "${requirements[$v]}" --venv "${venvs[$v]}"
  log "$v: environment ready ($((SECONDS - t)) s)"
done
((prepare)) && exit 0

cuda=${CUDA_HOME:-/usr/local/cuda}
if [[ ! -x "$cuda/bin/nvcc" ]]; then
  echo "ci-pypi-torch: no nvcc in $cuda: PyPI's CUDA wheels need the CUDA toolkit to configure" \
    "(set CUDA_HOME)" >&2
  exit 1
fi
export CUDACXX=$cuda/bin/nvcc
# No GPU here, so LibTorch's CMake files cannot ask one for its architecture; nothing is compiled
# for the device, any value does.
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$repo
  [[ -n "${FTBENCH_CCACHE_DIR:-}" ]] && export CCACHE_DIR=$FTBENCH_CCACHE_DIR
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  ccache --zero-stats >/dev/null
fi

for v in "${variants[@]}"; do
  build=${builds[$v]}
  python=${venvs[$v]}/bin/python
  t=$SECONDS
  targets=""  # every target
  [[ "$v" == gpu-machines ]] && targets="ftbench ftbench_gpu_tests"
  FTBENCH_BUILD_TARGETS=$targets PYTHON=$python FTBENCH_BUILD_DIR=$build \
    scripts/device-build.sh -DFTBENCH_BUILD_TESTS=ON \
    -DFTBENCH_PYTHON="$(realpath -m -- "${venvs[current]}")/bin/python" "${launcher[@]}"
  ((${#launcher[@]})) && ccache --show-stats | sed -n '/Hits\|Misses\|hit rate/p'
  log "$v: built in $((SECONDS - t)) s"
  # PyPI's Linux wheels are CUDA builds: the CUDA side must have been compiled and linked.
  dynamic=$(readelf -d "$build/src/ftbench-bin")
  if ! grep -q 'libtorch_cuda.so' <<<"$dynamic"; then
    log "error: $build/src/ftbench-bin does not link libtorch_cuda.so: not a CUDA build"
    exit 1
  fi
  t=$SECONDS
  if [[ "$v" == current ]]; then
    CI=${CI:-true} OMP_NUM_THREADS=$(nproc) \
      ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
    log "$v: ctest passed in $((SECONDS - t)) s"
  else
    report=$build/ci-tiny.json
    OMP_NUM_THREADS=$(nproc) "$build/src/ftbench" run configs/ci-tiny.yaml \
      --set output.progress=off -o "$report" --force
    "$python" - "$report" "$python" <<'EOF'
import json, subprocess, sys
report = json.load(open(sys.argv[1]))
torch_version = subprocess.run([sys.argv[2], "-c", "import torch; print(torch.__version__)"],
                               capture_output=True, text=True, check=True).stdout.strip()
libtorch = report["environment"]["software"]["libtorch_version"]
status = report["run"]["status"]
print(f"ci-tiny on LibTorch {libtorch}: {status}, loss {report['summary']['loss']['final']}")
if status != "completed" or not torch_version.startswith(libtorch.split("+")[0]):
    sys.exit(f"expected a completed run on the wheel's LibTorch {torch_version}")
EOF
    log "$v: ci-tiny ran in $((SECONDS - t)) s"
  fi
done
