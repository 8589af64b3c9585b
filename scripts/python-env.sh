#!/usr/bin/env bash
# Creates (or brings up to date) the virtual environment of ftbench's Python references and tools
# from one pinned requirements file: PyPI's torch, transformers, peft, tokenizers, sentencepiece,
# numpy (python/requirements.txt, every package pinned with its hashes). Nothing is installed into
# the system Python. scripts/setup.sh calls it (not with --demo); tests find the environment's
# interpreter through CMake's FTBENCH_PYTHON (default: .venv/bin/python).
#
# Quick when nothing changed: the environment records what it was made from (.ftbench-made-from:
# the SHA-256 of the requirements, the interpreter and its version), and is made again, from
# scratch, when that differs, so that no package of an older pin is left behind. A failed install
# leaves no record: the next run starts over.
#
# Usage: scripts/python-env.sh [--requirements FILE] [--venv DIR]
# Environment: FTBENCH_VENV (default .venv, relative to the checkout), FTBENCH_VENV_PYTHON (the
# interpreter the environment is made with; default /usr/bin/python3, Debian's, whose venv module
# comes with the python3-venv package), PIP_* as pip reads them (a cache, a mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=python/requirements.txt
venv=${FTBENCH_VENV:-.venv}
while (($#)); do
  case "$1" in
    --requirements) requirements=${2:?--requirements needs a file}; shift 2 ;;
    --venv) venv=${2:?--venv needs a folder}; shift 2 ;;
    *)
      echo "usage: scripts/python-env.sh [--requirements FILE] [--venv DIR]" >&2
      exit 2
      ;;
  esac
done
base_python=${FTBENCH_VENV_PYTHON:-/usr/bin/python3}
log() { echo "python-env: $*"; }

if [[ ! -f "$requirements" ]]; then
  echo "python-env: no requirements file $requirements" >&2
  exit 2
fi
case "$(realpath -m "$venv")" in
  / | /usr | /usr/* | /etc | /etc/* | /root | /home | "$HOME" | "$(pwd)")
    echo "python-env: refusing $venv as the environment's folder (it is removed when remade)" >&2
    exit 2
    ;;
esac
if [[ ! -x "$base_python" ]]; then
  echo "python-env: no interpreter $base_python (set FTBENCH_VENV_PYTHON)" >&2
  exit 1
fi
# What the environment is made from: the requirements and the interpreter (another machine's or
# root's Python, say Debian 13's in scripts/ci-debian13.sh, needs an environment of its own).
want="$(sha256sum "$requirements" | cut -d' ' -f1) $("$base_python" -c \
  'import os, sys; print(os.path.realpath(sys.executable), sys.version.split()[0])')"
stamp=$venv/.ftbench-made-from
if [[ -x "$venv/bin/python" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]] &&
  "$venv/bin/python" -c 'import sys' 2>/dev/null; then
  log "$venv is up to date with $requirements"
  exit 0
fi
if ! "$base_python" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "python-env: $base_python cannot make a virtual environment with pip: on Debian," \
    "install python3-venv (scripts/setup.sh does)" >&2
  exit 1
fi
started=$SECONDS
[[ -e "$venv" ]] && log "remaking $venv: made from other requirements, or incomplete"
rm -rf -- "$venv"
"$base_python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input)
# The system's certificate bundle rather than pip's own: it also holds the authority of a proxy
# that re-signs TLS, where the machine has one (Debian's update-ca-certificates puts it there).
if [[ -z "${PIP_CERT:-}" && -f /etc/ssl/certs/ca-certificates.crt ]]; then
  pip+=(--cert /etc/ssl/certs/ca-certificates.crt)
fi
# Every package pinned with its hashes: pip refuses one missing from the file, or one whose
# download differs from the hash.
log "installing $requirements into $venv"
"${pip[@]}" install --quiet --progress-bar off --require-hashes -r "$requirements"
echo "$want" >"$stamp"
log "$venv ready in $((SECONDS - started)) s: $("$venv/bin/python" -c '
import importlib.metadata as m
names = ["torch", "transformers", "peft", "tokenizers", "sentencepiece", "numpy"]
found = []
for n in names:
    try:
        found.append(f"{n} {m.version(n)}")
    except m.PackageNotFoundError:
        pass
print(", ".join(found))')"
