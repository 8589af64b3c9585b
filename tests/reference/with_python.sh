#!/bin/sh
# Runs a Python test script with FTBENCH_PYTHON, the interpreter of the pinned virtual environment
# (scripts/python-env.sh), which ctest passes in the environment. Without it: exit 77 (skipped),
# except on CI (docs/ci.md, "Skips and CI": CI set to a non-empty value other than 0 and false, in
# any case), where that is a failure.
#
# Usage: tests/reference/with_python.sh SCRIPT [ARGS...]
if [ -n "$FTBENCH_PYTHON" ] && [ -x "$FTBENCH_PYTHON" ]; then
  exec "$FTBENCH_PYTHON" "$@"
fi
ci=$(printf '%s' "${CI:-}" | tr '[:upper:]' '[:lower:]')
if [ -n "$ci" ] && [ "$ci" != 0 ] && [ "$ci" != false ]; then
  echo "error: FTBENCH_PYTHON (${FTBENCH_PYTHON:-unset}) is not an interpreter on CI:" \
    "scripts/python-env.sh makes the environment" >&2
  exit 1
fi
echo "skipped: FTBENCH_PYTHON (${FTBENCH_PYTHON:-unset}) is not an interpreter" \
  "(scripts/python-env.sh makes it)"
exit 77
