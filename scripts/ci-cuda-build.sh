#!/usr/bin/env bash
# CI job: configure, compile and link the CUDA side of ftbench (ftbench_torch, ftbench-bin,
# ftbench_gpu_tests) against a CUDA build of LibTorch, on a machine without a GPU. Nothing is
# run: a CUDA build that no longer compiles or links fails here instead of on the GPU machine.
#
# What it builds against:
# - Debian 13's contrib libtorch-cuda-dev / libtorch-cuda-2.6 (2.6.0, built for CUDA 12.x) and
#   the CUDA 12 runtime libraries it links (non-free: libcudart12, libcublas12, libcublaslt12,
#   libcufft11, libcurand10, libcusolver11, libcusparse12, libnvjitlink12, libnvrtc12,
#   libnvtoolsext1; contrib: libnccl2, libgloo-cuda-0, libtensorpipe-cuda-0). They are
#   fetched with `apt-get download` and unpacked with `dpkg -x`, not installed: libtorch-cuda
#   depends on nvidia-cudnn, a package that downloads cuDNN from the vendor when installed.
#   The libraries are built with trixie's glibc and libstdc++, so the build runs inside a
#   Debian 13 root (debootstrap), where the rest of ftbench's dependencies and libtorch-cuda's
#   main-archive dependencies are installed with apt.
# - The CUDA 13 toolkit of /usr/local/cuda (nvcc, headers), bind-mounted into the root: the
#   LibTorch CMake files enable the CUDA language. CUDA::cudart is pointed at the CUDA 12
#   libcudart.so.12 (CUDA_cudart_LIBRARY), the runtime libtorch-cuda was built for, so that
#   ftbench-bin needs one CUDA runtime, not a .12 through LibTorch and a .13 of its own.
#
# Left unresolved, by design: libcudnn.so.9 (cuDNN), which no Debian package holds (nvidia-cudnn
# only downloads it). The link is not relaxed for it: a stub libcudnn.so.9 defining exactly the
# cudnn* functions that libtorch_cuda.so imports (nm -D --undefined-only) is put on the linker's
# -rpath-link path, so any other missing symbol still fails the link, and the stub never ends up
# in a binary's NEEDED or RPATH (ftbench links libtorch, not cuDNN). The script checks that.
#
# Caches, kept between runs: the .debs in FTBENCH_CUDA_DEBS (default /var/cache/ftbench/
# cuda-debs, checked against the archive's SHA-256), their unpacked tree in FTBENCH_LIBTORCH_CUDA
# (default /var/cache/ftbench/libtorch-cuda), the packages installed in the root, and the build
# folder (default build-cuda, in the working tree).
#
# Where /usr/local/cuda holds a cuDNN 9 of its own (the development VMs' does), ld would find it
# there too; the stub comes first on -rpath-link, so the result does not depend on that.
#
# Times (2026-12-02, the 2-core development VM, Debian 12 host, shared with a second ftbench
# build and three other helpers; load 4-5):
#   cold: download of the 16 .debs (1.24 GB) 24 s, dpkg -x 163 s, apt in the root 364 s (most
#     of it waiting for another job's apt lock; 33 packages of its own), configure 76 s, build
#     of the 99 steps 2644 s wall but 11 min of CPU (user+sys), so about 6-8 min on an idle
#     2-core machine; ftbench_torch and ftbench-bin share one precompiled header.
#   warm (caches and build folder present, sources unchanged): 22 s.
#   warm with an empty build folder: configure + build, as above without the downloads.
#
# The build goes through ccache, with the Debian 13 job's cache and settings (the checkout is
# bound at /src in both; scripts/lib/debian13-root.sh): the torch-free objects that job compiled
# (ftbench_core, ftbench_cli) are cache hits here. Measured in a full cold .ci/run (2026-12-02,
# a fresh 2-core AMD EPYC VM, idle but for CI): 63 of the build's 278 compiler calls were hits,
# configure 16 s, build 226 s, the job 244 s.
#
# Usage: scripts/ci-cuda-build.sh [--prepare] [extra CMake arguments]
#   --prepare  only the root, the downloads, the unpacked tree and the root's packages, no build
#              (.ci/run runs it in the background while the Debian 12 job compiles)
# Environment: FTBENCH_DEBIAN13_ROOT (default /var/cache/ftbench/debian13-root; made with
# debootstrap when missing), FTBENCH_CUDA_DEBS, FTBENCH_LIBTORCH_CUDA, CUDA_HOME (default
# /usr/local/cuda), FTBENCH_CUDA_BUILD_DIR (default build-cuda; relative to the checkout).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${FTBENCH_DEBIAN13_ROOT:-/var/cache/ftbench/debian13-root}
debs=${FTBENCH_CUDA_DEBS:-/var/cache/ftbench/cuda-debs}
tree=${FTBENCH_LIBTORCH_CUDA:-/var/cache/ftbench/libtorch-cuda}
cuda=${CUDA_HOME:-/usr/local/cuda}
build_dir=${FTBENCH_CUDA_BUILD_DIR:-build-cuda}
case "$build_dir" in
  /* | *..*)
    echo "error: FTBENCH_CUDA_BUILD_DIR: a folder inside the checkout, relative to it, not $build_dir" >&2
    exit 2
    ;;
esac

# Paths inside the root.
src_in=/src
tree_in=/run/ftbench/libtorch-cuda
cuda_in=/usr/local/cuda
libdir_in=$tree_in/usr/lib/x86_64-linux-gnu

# The contrib and non-free packages unpacked with dpkg -x (the header says why not installed).
unpacked_packages=(
  libtorch-cuda-dev libtorch-cuda-2.6 libgloo-cuda-0 libtensorpipe-cuda-0 libnccl2 libnccl-dev
  libcudart12 libcublas12 libcublaslt12 libcufft11 libcurand10 libcusolver11 libcusparse12
  libnvjitlink12 libnvrtc12 libnvrtc-builtins12.4 libnvtoolsext1
)
# Dependencies of those that no Debian package provides; anything else missing fails the link.
not_in_debian=(nvidia-cudnn libcuda1)
# ftbench's build dependencies (scripts/setup.sh's list, less what this job does not build).
build_packages=(
  cmake ninja-build g++ pkgconf libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  nlohmann-json3-dev libssl-dev libpcre2-dev libsentencepiece-dev libgtest-dev ccache
  libgloo-dev libjs-chart.js
)

# The root's functions and ccache settings, shared with scripts/ci-debian13.sh.
export FTBENCH_DEBIAN13_ROOT=$root
# shellcheck source=lib/debian13-root.sh
source "$repo/scripts/lib/debian13-root.sh"

log() { echo "ci-cuda-build: $*" >&2; }
elapsed() { echo "$((SECONDS - $1)) s"; }

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 "$@"; }

# --- Inside a private mount namespace (see the end of the file): mounts, apt, the build. ---
if [[ "${1:-}" == "--in-namespace" ]]; then
  mode=$2
  shift 2
  mounted=()
  cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}" || true; done
  }
  trap cleanup EXIT
  bind() {  # bind SOURCE TARGET [ro]
    mkdir -p "$2"
    mount --bind "$1" "$2"
    mounted+=("$2")
    [[ "${3:-}" == ro ]] && mount -o remount,bind,ro "$2"
    return 0
  }
  mkdir -p "$root/proc"
  mount -t proc proc "$root/proc"
  mounted+=("$root/proc")
  bind /dev "$root/dev" ro
  bind "$cuda" "$root$cuda_in" ro
  bind "$tree" "$root$tree_in" ro
  bind "$repo" "$root$src_in"
  [[ -s "$root/etc/resolv.conf" ]] || cp /etc/resolv.conf "$root/etc/resolv.conf"

  t=$SECONDS
  # libtorch-cuda's dependencies from trixie main: each Depends entry of the unpacked packages
  # (first alternative), less the unpacked ones and the ones no Debian package provides.
  runtime_packages=$(in_root apt-cache show --no-all-versions "${unpacked_packages[@]}" |
    sed -n 's/^Depends: //p' | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g' | sort -u |
    grep -vxF -f <(printf '%s\n' "${unpacked_packages[@]}" "${not_in_debian[@]}"))
  missing=()
  for p in "${build_packages[@]}" $runtime_packages; do
    status=$(in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "installing in the root: ${missing[*]}"
    in_root apt-get update -q
    # apt waits for a lock held by another job using the same root.
    in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      -o DPkg::Lock::Timeout=600 "${missing[@]}"
  fi
  log "root packages: $(elapsed "$t")"
  [[ "$mode" == prepare ]] && exit 0

  t=$SECONDS
  # The stub libcudnn.so.9 (the header says why): the cudnn* functions libtorch_cuda.so imports.
  stubs=$repo/$build_dir/unresolved-stubs
  mkdir -p "$stubs"
  # nm prints them versioned (cudnnCreate@libcudnn.so.9): the stub defines that version node.
  in_root nm -D --undefined-only "$libdir_in/libtorch_cuda.so" |
    awk '$1 == "U" && $2 ~ /^cudnn/ {print $2}' >"$stubs/cudnn_imports.txt"
  sed 's/@.*//; s/.*/void &(void) {}/' "$stubs/cudnn_imports.txt" >"$stubs/cudnn_stub.c"
  versions=$(sed -n 's/^[^@]*@@*//p' "$stubs/cudnn_imports.txt" | sort -u)
  : >"$stubs/cudnn_stub.map"
  for v in $versions; do echo "$v { global: *; };" >>"$stubs/cudnn_stub.map"; done
  [[ -s "$stubs/cudnn_stub.map" ]] || echo "{ global: *; };" >"$stubs/cudnn_stub.map"
  log "cuDNN left unresolved: $(wc -l <"$stubs/cudnn_imports.txt") cudnn* functions of" \
    "libtorch_cuda.so (version ${versions:-none}), satisfied at link time by a stub libcudnn.so.9"
  stubs_in=$src_in/$build_dir/unresolved-stubs
  in_root gcc -shared -fPIC -Wl,-soname,libcudnn.so.9 -Wl,--version-script,"$stubs_in/cudnn_stub.map" \
    -o "$stubs_in/libcudnn.so.9" "$stubs_in/cudnn_stub.c"

  rpath_link="$libdir_in:$tree_in/usr/lib:$src_in/$build_dir/unresolved-stubs"
  # TORCH_CUDA_ARCH_LIST: LibTorch's CMake would otherwise ask a GPU for it; nothing here is
  # compiled for the device, so any value does.
  in_root env TORCH_CUDA_ARCH_LIST=9.0 CUDACXX="$cuda_in/bin/nvcc" \
    cmake -S "$src_in" -B "$src_in/$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_PREFIX_PATH="$tree_in/usr" -DCUDAToolkit_ROOT="$cuda_in" \
    -DCUDA_cudart_LIBRARY="$libdir_in/libcudart.so.12" \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$rpath_link" \
    -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath-link,$rpath_link" \
    -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST "$@"
  log "configure: $(elapsed "$t")"

  t=$SECONDS
  in_root env "${debian13_ccache_env[@]}" cmake --build "$src_in/$build_dir" -j "$(nproc)" \
    --target ftbench_torch ftbench-bin ftbench_gpu_tests
  in_root ccache --show-stats
  log "build: $(elapsed "$t")"

  # The binaries link the CUDA 12 runtime only, and the stub nowhere.
  for exe in src/ftbench-bin tests/ftbench_gpu_tests; do
    needed=$(in_root readelf -d "$src_in/$build_dir/$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    dynamic=$(in_root readelf -d "$src_in/$build_dir/$exe")
    if grep -q 'libcudart.so.13' <<<"$needed" || grep -q 'libcudnn' <<<"$needed" ||
      grep -q 'unresolved-stubs' <<<"$dynamic"; then
      log "error: $exe links the CUDA 13 runtime or the cuDNN stub:" $needed
      exit 1
    fi
    grep -q 'libtorch_cuda.so' <<<"$needed" || {
      log "error: $exe does not link libtorch_cuda.so:" $needed
      exit 1
    }
  done
  log "ftbench-bin and ftbench_gpu_tests link libtorch_cuda.so (CUDA 12 runtime), not the stub"
  exit 0
fi

# --- On the host: the root, the downloads, the unpacked tree. ---
mode=build
if [[ "${1:-}" == --prepare ]]; then
  mode=prepare
  shift
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "error: $0 needs root (chroot, bind mounts)" >&2
  exit 1
fi
if [[ ! -x "$cuda/bin/nvcc" ]]; then
  echo "error: no CUDA toolkit in $cuda (set CUDA_HOME)" >&2
  exit 1
fi
total=$SECONDS
t=$SECONDS
# The root is made and locked as scripts/ci-debian13.sh does (scripts/lib/debian13-root.sh: made
# in ROOT.tmp and renamed when complete; the lock, on file descriptor 9 and inherited by the
# namespaced part below, keeps two jobs from running apt in the root at once).
debian13_root_lock
debian13_root_ensure
if ! grep -qs 'contrib non-free' "$root/etc/apt/sources.list"; then
  echo "deb $FTBENCH_DEBIAN13_MIRROR $FTBENCH_DEBIAN13_SUITE main contrib non-free" \
    >"$root/etc/apt/sources.list"
  chroot "$root" apt-get update -q
fi
[[ -n "$(ls "$root/var/lib/apt/lists/"*contrib*Packages 2>/dev/null)" ]] ||
  chroot "$root" apt-get update -q
log "root: $(elapsed "$t")"

t=$SECONDS
mkdir -p "$debs" "$tree"
# URL, file name, size and SHA-256 of each package, from the root's package lists.
chroot "$root" apt-get download --print-uris "${unpacked_packages[@]}" >"$debs/uris.txt.new"
mv "$debs/uris.txt.new" "$debs/uris.txt"
while read -r url file _ hash; do
  url=${url//\'/}
  hash=${hash#SHA256:}
  # $file.sha256 records a verified download, so a warm run does not hash 1.2 GB again.
  if [[ ! -f "$debs/$file" ]] || [[ "$(cat "$debs/$file.sha256" 2>/dev/null)" != "$hash" ]]; then
    log "downloading $file"
    wget -q -O "$debs/$file.part" "$url"
    [[ "$(sha256sum "$debs/$file.part" | cut -d' ' -f1)" == "$hash" ]] || {
      echo "error: $file: SHA-256 differs from the archive's" >&2
      exit 1
    }
    mv "$debs/$file.part" "$debs/$file"
    echo "$hash" >"$debs/$file.sha256"
  fi
  # One stamp per unpacked .deb: a new version of a package is unpacked over the old one.
  if [[ ! -f "$tree/.unpacked/$file" ]]; then
    log "unpacking $file"
    dpkg -x "$debs/$file" "$tree"
    mkdir -p "$tree/.unpacked"
    touch "$tree/.unpacked/$file"
  fi
done <"$debs/uris.txt"
log "packages: $(elapsed "$t")"

unshare --mount --propagation private "$0" --in-namespace "$mode" "$@"
log "total: $(elapsed "$total")"
