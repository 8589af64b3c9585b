#!/usr/bin/env bash
# The README's torchrun lines, run as written with the real launcher: PyTorch's own torchrun from
# the pinned virtual environment (FTBENCH_PYTHON's folder), its elastic agent hosting the store,
# two ranks on c10d's Gloo group. Each `torchrun ...` line of README.md's code blocks is run
# verbatim in a scratch folder that holds what the line names relative to the checkout
# (build/src/ftbench: the binary under test; configs/), then its report is checked: completed, 2
# ranks, launched by torchrun, on Gloo.
#
# ftbench must be built against that environment's own LibTorch (CI's PyPI job; tests/CMakeLists.txt
# registers the test only then): torchrun's agent serves the job's store in its own version's
# protocol, which another LibTorch may not speak (1.13's client cannot join a 2.x store).
#
# Usage: tests/train/dist/torchrun/run.sh FTBENCH_BINARY WORK_DIR
# Environment: FTBENCH_PYTHON (the virtual environment's interpreter; its folder has torchrun).
# Exit 0: every line ran and its report holds; 1: a failure; 77: skipped, no torchrun (on CI a
# failure instead: docs/ci.md, "Skips and CI").
set -euo pipefail
if (($# != 2)); then
  echo "usage: $0 FTBENCH_BINARY WORK_DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
ftbench=$(realpath "$1")
work=$2
ci=${CI:-}
ci=${ci,,}
on_ci() { [[ -n "$ci" && "$ci" != 0 && "$ci" != false ]]; }

python=${FTBENCH_PYTHON:-}
torchrun=""
[[ -n "$python" ]] && torchrun=$(dirname "$python")/torchrun
if [[ -z "$torchrun" || ! -x "$torchrun" ]]; then
  if on_ci; then
    echo "error: no torchrun next to FTBENCH_PYTHON (${python:-unset}) on CI:" \
      "scripts/python-env.sh makes the environment" >&2
    exit 1
  fi
  echo "skipped: no torchrun next to FTBENCH_PYTHON (${python:-unset})"
  exit 77
fi

mapfile -t lines < <(awk '/^```/ {block = !block; next} block && /^torchrun / {print}' \
  "$repo/README.md")
if ((${#lines[@]} == 0)); then
  echo "error: README.md has no torchrun line in a code block" >&2
  exit 1
fi

# Whether ftbench's LibTorch is the environment's torch (the part before any "+cu132").
libtorch=$("$ftbench" devices --json | "$python" -c 'import json, sys; print(json.load(sys.stdin)["libtorch"]["version"])')
torch_version=$("$python" -c 'import importlib.metadata as m; print(m.version("torch").split("+")[0])')
if [[ "$libtorch" != "$torch_version" ]]; then
  echo "error: ftbench is built against LibTorch $libtorch, torchrun belongs to PyTorch" \
    "$torch_version: the test needs the two the same" >&2
  exit 1
fi
echo "ftbench's LibTorch $libtorch; torchrun's PyTorch $torch_version"

status=0
n=0
for line in "${lines[@]}"; do
  n=$((n + 1))
  command=${line%%#*}  # the line's own comment is not part of the command
  dir=$work/line$n
  rm -rf "$dir"
  mkdir -p "$dir/build/src"
  ln -s "$ftbench" "$dir/build/src/ftbench"
  ln -s "$repo/configs" "$dir/configs"
  echo "== README: $command"
  # torchrun from the environment first on PATH, as the README's reader has it; a free port
  # for its rendezvous (--standalone picks one when the line says so).
  if ! (cd "$dir" && PATH="$(dirname "$torchrun"):$PATH" OMP_NUM_THREADS=1 \
    timeout 240 bash -c "$command" >"$dir/torchrun.log" 2>&1); then
    echo "FAILED: exit code above 0; its output:"
    tail -40 "$dir/torchrun.log"
    status=1
    continue
  fi
  reports=$(find "$dir/reports" -name '*.json' 2>/dev/null || true)
  report=${reports%%$'\n'*}
  if [[ -z "$report" ]]; then
    echo "FAILED: no report under $dir/reports"
    tail -40 "$dir/torchrun.log"
    status=1
    continue
  fi
  if ! "$python" - "$report" "$command" <<'EOF'; then
import json, re, sys
report = json.load(open(sys.argv[1]))
want = int(re.search(r"--nproc[-_]per[-_]node[ =](\d+)", sys.argv[2]).group(1))
d = report.get("distributed") or {}
found = (report["run"]["status"], report["run"]["world_size"], d.get("launch"), d.get("backend"))
print(f"report: status {found[0]}, world size {found[1]}, launch {found[2]}, backend {found[3]}")
if found != ("completed", want, "torchrun", "gloo"):
    sys.exit(f"expected ('completed', {want}, 'torchrun', 'gloo')")
EOF
    status=1
  fi
done
exit "$status"
