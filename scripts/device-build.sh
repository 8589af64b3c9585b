#!/usr/bin/env bash
# Builds ftbench on a GPU machine that has PyTorch but no package manager: LibTorch comes from
# the installed PyTorch (torch.utils.cmake_prefix_path), everything else from .deps/root, the
# Debian packages that scripts/prepare-device-deps.sh unpacked on the development machine (or
# from the system, where it has them: a Docker image with apt, docker/*.Dockerfile).
#
# Usage: scripts/device-build.sh [extra CMake arguments]
# Environment: PYTHON (default python3), FTBENCH_BUILD_DIR (default build-gpu), FTBENCH_DEPS
# (default .deps/root), FTBENCH_BUILD_TARGETS (default: every target), CUDACXX (default: nvcc on
# PATH, else /usr/local/cuda/bin/nvcc), TORCH_CUDA_ARCH_LIST (default: the visible GPU's, else
# 9.0), PYTORCH_ROCM_ARCH (default: the GPUs rocm_agent_enumerator lists, else gfx942;
# scripts/lib/rocm-arch.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
build_dir=${FTBENCH_BUILD_DIR:-build-gpu}
deps=${FTBENCH_DEPS:-.deps/root}

if ! "$python" -c 'import torch' 2>/dev/null; then
  echo "error: $python cannot import torch; set PYTHON to the interpreter that has PyTorch" >&2
  exit 1
fi
# One value a line: a path may hold spaces.
mapfile -t facts < <("$python" -c '
import os, torch
print(torch.__version__, torch.utils.cmake_prefix_path, int(torch._C._GLIBCXX_USE_CXX11_ABI),
      torch.version.cuda or "-", getattr(torch.version, "hip", None) or "-",
      os.path.join(os.path.dirname(torch.__file__), "lib"), sep="\n")')
if ((${#facts[@]} != 6)); then
  echo "error: $python did not say what its torch is (${facts[*]})" >&2
  exit 1
fi
torch_version=${facts[0]} torch_prefix=${facts[1]} cxx11_abi=${facts[2]}
cuda_version=${facts[3]} hip_version=${facts[4]} torch_lib=${facts[5]}
echo "PyTorch $torch_version (CUDA $cuda_version, HIP $hip_version), C++11 ABI $cxx11_abi"
echo "LibTorch CMake files: $torch_prefix"
# Debian's libraries (yaml-cpp, spdlog, fmt...) use the C++11 ABI; a LibTorch built with the old
# one cannot link against them.
if [[ "$cxx11_abi" != 1 ]]; then
  echo "error: this PyTorch was built with _GLIBCXX_USE_CXX11_ABI=0; the carried Debian" \
    "libraries use the C++11 ABI. Use a PyTorch >= 2.7 wheel, or libraries built with ABI 0." >&2
  exit 1
fi

prefix="$torch_prefix"
# This torch's CMake files, named: a build folder configured before against another LibTorch
# keeps that one's Torch_DIR and Caffe2_DIR in its cache otherwise.
args=(-DTorch_DIR="$torch_prefix/Torch" -DCaffe2_DIR="$torch_prefix/Caffe2")
# The wheel's TorchConfig.cmake looks for its libraries with find_library(... PATHS
# <wheel>/lib), which searches the system's folders first: where a LibTorch is installed there
# too (Debian's libtorch-dev), it takes that one's. Name the wheel's, under the cache names
# TorchConfig.cmake uses.
for library in torch:TORCH_LIBRARY c10:c10_LIBRARY c10_cuda:C10_CUDA_LIBRARY \
  c10_hip:c10_hip_LIBRARY torch_hip:torch_hip_LIBRARY kineto:kineto_LIBRARY; do
  [[ -e "$torch_lib/lib${library%%:*}.so" ]] && args+=(-D"${library#*:}=$torch_lib/lib${library%%:*}.so")
done
# The programs' run-time search path: LibTorch's folder (and below, the CUDA libraries' and the
# carried packages'), set whole at configure time (CMAKE_BUILD_WITH_INSTALL_RPATH). CMake's own
# build RPATH for a target it also installs ends in an empty entry (room for the install-time
# rewrite), which the loader reads as the current folder: a library planted there would be loaded.
rpath=("$torch_lib")
if [[ -d "$deps/usr" ]]; then
  deps_abs=$(cd "$deps" && pwd)
  rpath+=("$deps_abs/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)")
  prefix="$prefix;$deps_abs/usr"
  args+=(-DOPENSSL_ROOT_DIR="$deps_abs/usr")
  echo "dependencies: $deps_abs ($(wc -l <"$(dirname "$deps_abs")/MANIFEST" 2>/dev/null || echo '?') packages)"
  # The carried packages' .pc files say prefix=/usr: pkg-config would hand out the machine's own
  # headers and libraries (on the H200 image, another SentencePiece, whose headers compiled
  # against the carried library gave wrong token ids). Look for them on CMAKE_PREFIX_PATH.
  args+=(-DFTBENCH_NO_PKG_CONFIG=ON)
else
  echo "dependencies: the system's ($deps not found)"
fi

if [[ "$cuda_version" != "-" ]]; then
  # The wheel's Caffe2Config enables the CUDA language, so nvcc is needed to configure.
  if [[ -z "${CUDACXX:-}" ]]; then
    CUDACXX=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    export CUDACXX
  fi
  if [[ ! -x "$CUDACXX" ]]; then
    echo "error: no nvcc ($CUDACXX); install the CUDA toolkit $cuda_version or set CUDACXX" >&2
    exit 1
  fi
  if [[ -z "${TORCH_CUDA_ARCH_LIST:-}" ]]; then
    TORCH_CUDA_ARCH_LIST=$("$python" -c '
import torch
if torch.cuda.is_available():
    major, minor = torch.cuda.get_device_capability(0)
    print(f"{major}.{minor}")
else:
    print("9.0")')
    export TORCH_CUDA_ARCH_LIST
  fi
  echo "nvcc: $CUDACXX; TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST"
  # The CUDA libraries the programs link (the runtime, NVRTC): the ones LibTorch itself loads. A
  # PyPI wheel's libtorch_cuda.so finds its CUDA libraries through its RPATH in the wheel's
  # nvidia-* packages (site-packages/nvidia/cu13/lib for CUDA 13), the versions it was built and
  # tested with; the toolkit nvcc belongs to may be older (CUDA 13.0 in /usr/local/cuda against
  # the 13.2 of torch 2.15), and a runtime older than the one LibTorch was built for lacks its
  # newer functions. Left to CMake, CUDA::cudart and NVRTC are the toolkit's: a program would load
  # those first, for LibTorch too (one libcudart.so.13 per process), and the toolkit's folder on
  # its RPATH would hand the linker the toolkit's older NCCL for libtorch_cuda.so.
  for cuda_lib in cudart nvrtc; do
    # ldd's output read whole first: awk's exit would leave ldd writing into a closed pipe.
    libraries=$(ldd "$torch_lib/libtorch_cuda.so" 2>/dev/null)
    resolved=$(awk -v lib="lib$cuda_lib.so" 'index($1, lib) == 1 && $3 ~ /^\// {print $3; exit}' \
      <<<"$libraries")
    if [[ -n "$resolved" ]]; then
      args+=(-DCUDA_${cuda_lib}_LIBRARY="$(realpath "$resolved")")
      rpath+=("$(dirname "$(realpath "$resolved")")")
      # LibTorch's cuda.cmake caches NVRTC once more, under a name of its own.
      [[ "$cuda_lib" == nvrtc ]] && args+=(-DCUDA_NVRTC_LIB="$(realpath "$resolved")")
      echo "CUDA $cuda_lib: $resolved (the one libtorch_cuda.so loads)"
    else
      echo "CUDA $cuda_lib: the toolkit's (libtorch_cuda.so names none that ldd resolves)"
    fi
  done
fi

if [[ "$hip_version" != "-" ]]; then
  # shellcheck source=lib/rocm-arch.sh
  source scripts/lib/rocm-arch.sh
  PYTORCH_ROCM_ARCH=$(ftbench_rocm_arch)
  export PYTORCH_ROCM_ARCH
  echo "PYTORCH_ROCM_ARCH=$PYTORCH_ROCM_ARCH"
fi

rpath_list=$(printf '%s;' "${rpath[@]}")
args+=(-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON -DCMAKE_INSTALL_RPATH="${rpath_list%;}")
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  "${args[@]}" "$@"
target_args=()
# shellcheck disable=SC2206  # a list of target names, split on spaces
[[ -n "${FTBENCH_BUILD_TARGETS:-}" ]] && target_args=(--target ${FTBENCH_BUILD_TARGETS})
cmake --build "$build_dir" -j "$(nproc)" "${target_args[@]}"
echo "built: $build_dir/src/ftbench ($("$build_dir/src/ftbench" devices 2>/dev/null |
  sed -n 's/^libtorch: /LibTorch /p'))"
