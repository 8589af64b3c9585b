#!/usr/bin/env bash
# The report names the BLAS that LibTorch's CPU matmul resolved to. With a LibTorch that calls a
# BLAS library (Debian's): OpenBLAS as installed, and Debian's reference BLAS when LD_LIBRARY_PATH
# puts it first, although OpenBLAS's liblapack still maps libopenblas into the process (an earlier
# reading of /proc/self/maps said "openblas" then). With one that links its BLAS in (PyPI's
# wheels; an earlier report said "unknown" there): the BLAS its build settings name, both times.
# Needs libblas3 (scripts/setup.sh installs it for the tests); skipped (77) off CI without it.
#
# Usage: tests/blas/run.sh FTBENCH WORK_DIR
set -euo pipefail
ftbench=$1
work=$2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$(dirname "$(dirname "$here")")"
reference=/usr/lib/x86_64-linux-gnu/blas
if [[ ! -e "$reference/libblas.so.3" ]]; then
  case "${CI:-}" in
    "" | 0 | [Ff][Aa][Ll][Ss][Ee]) echo "skipped: no $reference/libblas.so.3 (libblas3)"; exit 77 ;;
  esac
  echo "no $reference/libblas.so.3: scripts/setup.sh installs libblas3" >&2
  exit 1
fi
rm -rf "$work"
mkdir -p "$work"
blas() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["environment"]["software"]["blas"])' "$1"; }
spec=(configs/ci-tiny.yaml --set output.progress=off)
"$ftbench" run "${spec[@]}" -o "$work/installed.json" >"$work/installed.log" 2>&1
LD_LIBRARY_PATH=$reference "$ftbench" run "${spec[@]}" -o "$work/reference.json" \
  >"$work/reference.log" 2>&1
installed=$(blas "$work/installed.json")
got=$(blas "$work/reference.json")
# ldd's output read whole first: `ldd | grep -q` failed under pipefail when grep stopped reading
# while ldd was still writing (SIGPIPE).
libraries=$(ldd "$(dirname "$ftbench")/ftbench-bin")
if grep -Eq 'lib(open)?blas[^ ]*\.so' <<<"$libraries"; then
  # A LibTorch that calls a BLAS library (Debian's): the one the loader resolved.
  [[ "$installed" == openblas* ]] || { echo "installed BLAS read as '$installed'" >&2; exit 1; }
  [[ "$got" == "netlib reference blas" ]] ||
    { echo "with LD_LIBRARY_PATH=$reference the report says '$got'" >&2; exit 1; }
else
  # A LibTorch with its BLAS linked in (PyPI's wheels: MKL on x86): named from its build
  # settings, and no library on LD_LIBRARY_PATH changes it.
  [[ "$installed" != unknown ]] ||
    { echo "BLAS linked into LibTorch read as 'unknown'" >&2; exit 1; }
  [[ "$got" == "$installed" ]] ||
    { echo "with LD_LIBRARY_PATH=$reference the report says '$got', not '$installed'" >&2; exit 1; }
fi
echo "blas: $installed as installed, $got with LD_LIBRARY_PATH=$reference"
