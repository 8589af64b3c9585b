#!/usr/bin/env bash
# Tokenizer conformance: `ftbench tokenize` against Hugging Face's tokenizers (the Rust library,
# PyPI's `tokenizers`) on tokenizer.json BPE, and against PyPI's `sentencepiece` on .model files
# (tokenizer_conformance.py says what is compared).
#
# Usage: tests/conformance/run.sh FTBENCH_BINARY [WORK_DIR]
# WORK_DIR (default: conformance/ next to the binary's build folder) holds the generated files.
# The interpreter: FTBENCH_PYTHON (ctest passes CMake's FTBENCH_PYTHON, the interpreter of
# scripts/python-env.sh's virtual environment), else bin/python of that environment, FTBENCH_VENV
# (default .venv, relative to the checkout). Exit 0: all ids equal; 1: mismatches; 77: skipped
# because the interpreter or its tokenizers / sentencepiece is missing, except on CI, where that
# is a failure. On CI means (docs/ci.md, "Skips and CI"; the same rule as tests/ci_env.h): CI is
# set to a non-empty value other than 0 and false (any case).
# FTBENCH_CONFORMANCE_BENCH_MB (default 1): megabytes of text for the throughput lines.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 FTBENCH_BINARY [WORK_DIR]" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$(dirname "$here")")"
ftbench="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
if [[ ! -x "$ftbench" ]]; then
  echo "error: $1 is not an executable" >&2
  exit 1
fi
work="${2:-$(dirname "$(dirname "$ftbench")")/conformance}"

venv="${FTBENCH_VENV:-.venv}"
[[ "$venv" == /* ]] || venv="$root/$venv"
python="${FTBENCH_PYTHON:-$venv/bin/python}"
if [[ ! -x "$python" ]]; then
  ci="${CI:-}"
  ci="${ci,,}"
  if [[ -n "$ci" && "$ci" != 0 && "$ci" != false ]]; then
    echo "error: the tokenizer conformance test needs $python on CI (FTBENCH_PYTHON;" \
      "scripts/python-env.sh makes the environment)" >&2
    exit 1
  fi
  echo "skipped: no $python (FTBENCH_PYTHON; scripts/python-env.sh makes the environment)"
  exit 77
fi

# Nothing is downloaded at run time; the Rust library's own threads stay off (it warns when a
# process forks after using them, and one thread is what the throughput line compares).
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec "$python" "$here/tokenizer_conformance.py" --ftbench "$ftbench" --workdir "$work" \
  --bench-mb "${FTBENCH_CONFORMANCE_BENCH_MB:-1}"
