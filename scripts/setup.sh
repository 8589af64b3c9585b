#!/usr/bin/env bash
# Installs what ftbench needs from Debian packages, and only what is missing: quick and
# harmless when everything is there. The same list serves Debian 12 (bookworm: LibTorch 1.13,
# clang 14) and Debian 13 (trixie: LibTorch 2.6, clang 19); only clang's runtime is named by
# version, and that version is read from the clang package installed or offered.
# scripts/test.sh (what CI runs on a fresh machine) calls it, so everything a test would
# otherwise skip for is here: on CI such a skip is a failure (docs/ci.md, "Skips and CI").
#
# Without --demo it also makes the virtual environment of the Python references
# (scripts/python-env.sh: PyPI's torch, transformers, peft, tokenizers, sentencepiece, pinned in
# python/requirements.txt), as the calling user, never as root and never in the system Python.
#
# Usage: scripts/setup.sh [--demo | --packages | --python]
#   (none)      everything: building ftbench, its tests, the sanitizer and fuzz builds (test.sh)
#   --demo      only what building and running ftbench and ftbench-bin needs (scripts/demo.sh)
#   --packages  everything but the virtual environment
#   --python    only the virtual environment (scripts/test.sh makes it while the build compiles:
#               it mostly waits on the network)
set -euo pipefail

profile=all
usage="usage: scripts/setup.sh [--demo | --packages | --python]"
if (($# > 1)); then
  echo "$usage" >&2
  exit 2
fi
case "${1:-}" in
  "") ;;
  --demo) profile=demo ;;
  --packages) profile=packages ;;
  --python) profile=python ;;
  *)
    echo "$usage" >&2
    exit 2
    ;;
esac

# The virtual environment of the references, as the calling user (never as root under sudo).
python_env() {
  local scripts_dir
  scripts_dir=$(dirname "$0")
  if [[ $(id -u) -eq 0 && -n "${SUDO_USER:-}" && "$SUDO_USER" != root ]]; then
    # `sudo scripts/setup.sh`: the environment belongs to the user who called sudo, not to root.
    sudo -u "$SUDO_USER" --preserve-env=FTBENCH_VENV,FTBENCH_VENV_PYTHON "$scripts_dir/python-env.sh"
  else
    "$scripts_dir/python-env.sh"
  fi
}
if [[ "$profile" == python ]]; then
  python_env
  exit 0
fi

# What building and running ftbench needs (both profiles).
packages=(
  cmake ninja-build g++ git
  libtorch-dev            # LibTorch, CPU: 1.13 on Debian 12, 2.6 on Debian 13
  libopenblas0-pthread    # without it LibTorch runs on reference BLAS, ~20x slower
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libssl-dev              # SHA-256 of the spec (OpenSSL EVP)
  libpcre2-dev            # Unicode regex for BPE pre-tokenization (tokenizer.json)
  libsentencepiece-dev    # SentencePiece .model tokenizers (Llama 2)
  libgloo-dev             # the gloo headers c10d's Gloo group needs (jobs of several processes);
                          # libtorch-dev ships none
  pkg-config
  ccache                  # scripts/build.sh compiles through it: CI's builds share objects
  libjs-chart.js          # Chart.js, embedded in the HTML report (ftbench report --html)
)
# What only the tests, the sanitizer build and fuzzing need (not --demo).
test_packages=(
  libgtest-dev
  sentencepiece           # spm_train, for a test that loads a model next to LibTorch
  python3                 # tests of the device check's scripts (standard library only)
  python3-venv            # scripts/python-env.sh: the virtual environment of the references,
  ca-certificates         # ... whose pip checks PyPI's certificate against the system's bundle
  python3-numpy           # tests/reference: the NumPy Llama the Hugging Face interop is checked against
  chromium                # the HTML report's browser test (tests/browser), headless
  python3-yaml            # tests/gate/ci_examples.sh reads docs/examples' CI files as YAML
  unzip                   # ... and runs their steps, which unzip GitLab's artifacts
  libblas3                # the reference BLAS: tests/blas checks the report names it when used
  clang                   # the sanitizer build and libFuzzer targets (scripts/fuzz.sh), with
                          # its runtime libclang-rt-N-dev, added below
)
# The HIP runtime, so that libftbench_hip_query.so (src/device/query_modules) is built and its test runs on
# every machine, GPU or not; Debian packages it for amd64 only. hipcc comes with it for HIP
# work; ftbench's module is host code and needs none. The CUDA module's toolkit is not from
# here: these machines have CUDA 13 in /usr/local/cuda (a CUDA build of LibTorch needs it too).
# ROCm SMI's header, against which the module's declarations of the library (opened with dlopen
# for board power) are checked at compile time.
if [[ "$(dpkg --print-architecture)" == "amd64" ]]; then
  test_packages+=(libamdhip64-dev hipcc librocm-smi-dev)
fi
if [[ "$profile" == all || "$profile" == packages ]]; then
  packages+=("${test_packages[@]}")
fi

installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

# clang's major version: from the installed clang package's dependency on clang-N (no network),
# else from the archive's (14 on Debian 12, 19 on Debian 13); empty when apt knows no clang.
clang_major() {
  local depends
  if installed clang; then
    depends=$(dpkg-query -W -f='${Depends}' clang)
  else
    depends=$(apt-cache show --no-all-versions clang 2>/dev/null | sed -n 's/^Depends: //p')
  fi
  local versions
  versions=$(sed -n 's/^clang-\([0-9][0-9]*\).*/\1/p' <<<"$depends")
  echo "${versions%%$'\n'*}"
}

as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    echo "setup: needs root for: $*; run it as root or install sudo" >&2
    exit 1
  fi
}

if [[ "$profile" == all || "$profile" == packages ]]; then
  major=$(clang_major)
  if [[ -z "$major" ]]; then
    # A fresh machine whose apt has no package lists yet.
    as_root apt-get update -q
    updated=1
    major=$(clang_major)
  fi
  if [[ -z "$major" ]]; then
    echo "setup: apt offers no clang package" >&2
    exit 1
  fi
  packages+=("libclang-rt-$major-dev")
fi

missing=()
for p in "${packages[@]}"; do
  [[ "$p" == \#* ]] && continue
  installed "$p" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  [[ -n "${updated:-}" ]] || as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
else
  echo "setup: all packages present"
fi

# LibTorch links libblas.so.3; make sure the alternative points at OpenBLAS.
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
alt=libblas.so.3-$multiarch
want=/usr/lib/$multiarch/openblas-pthread/libblas.so.3
if [[ "$(update-alternatives --query "$alt" 2>/dev/null | sed -n 's/^Value: //p')" != "$want" ]]; then
  echo "setup: pointing $alt at OpenBLAS"
  as_root update-alternatives --set "$alt" "$want"
fi

if [[ "$profile" == all ]]; then
  python_env
fi
