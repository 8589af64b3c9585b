#!/usr/bin/env bash
# Tokenizer conformance: ftbench's tokenizer.json BPE against @huggingface/tokenizers (JavaScript).
#
# Usage: tests/conformance/run.sh FTBENCH_BINARY [WORK_DIR]
# WORK_DIR (default: conformance/ next to the binary's build folder) holds the npm install and
# the generated files. Exit 0: all ids equal; 1: mismatches or a failed install; 77: skipped
# because node or npm is missing, except on CI, where a missing tool is a failure. On CI means
# (README.md, "Skips and CI"; the same rule as tests/ci_env.h): CI is set to a non-empty
# value other than 0 and false (any case).
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 FTBENCH_BINARY [WORK_DIR]" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ftbench="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
if [[ ! -x "$ftbench" ]]; then
  echo "error: $1 is not an executable" >&2
  exit 1
fi
work="${2:-$(dirname "$(dirname "$ftbench")")/conformance}"

ci="${CI:-}"
ci="${ci,,}"
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    if [[ -n "$ci" && "$ci" != 0 && "$ci" != false ]]; then
      echo "error: $tool is required for the tokenizer conformance test on CI" >&2
      exit 1
    fi
    echo "skipped: $tool not found (install Node.js 18+ to run the tokenizer conformance test)"
    exit 77
  fi
done

# Install the pinned package once per lock file; reinstall when package files change.
npm_dir="$work/npm"
mkdir -p "$npm_dir"
if ! cmp -s "$here/package-lock.json" "$npm_dir/package-lock.json" ||
    [[ ! -d "$npm_dir/node_modules/@huggingface/tokenizers" ]]; then
  cp "$here/package.json" "$here/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
# Run from the install folder so `import "@huggingface/tokenizers"` resolves there.
cp "$here/tokenizer_conformance.mjs" "$npm_dir/"
exec node "$npm_dir/tokenizer_conformance.mjs" --ftbench "$ftbench" --workdir "$work/files" \
  --bench-mb "${FTBENCH_CONFORMANCE_BENCH_MB:-1}"
