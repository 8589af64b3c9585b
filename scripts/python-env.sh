#!/usr/bin/env bash
# Creates (or brings up to date) the virtual environment of ftbench's Python references and tools
# from one pinned requirements file: PyPI's torch, transformers, peft, tokenizers, sentencepiece,
# numpy, and MLCommons' mlperf-logging and xmlschema for format checks (python/requirements.txt,
# every package pinned with its hashes). Nothing is installed into
# the system Python. scripts/setup.sh calls it (not with --demo); tests find the environment's
# interpreter through CMake's FTBENCH_PYTHON (default: .venv/bin/python).
#
# Quick when nothing changed: the environment records what it was made from (.ftbench-made-from:
# the SHA-256 of the requirements, the interpreter and its minor version), and is made again, from
# scratch, when that differs, so that no package of an older pin is left behind. It is marked
# made only once every pinned package is there at its pinned version (so a pip told to install
# elsewhere, PIP_TARGET or PIP_PREFIX, fails here): a failed or interrupted install leaves no
# mark, and the next run starts over. Only a folder that is a virtual environment (it holds
# pyvenv.cfg) or empty is ever removed; anything else at the path is refused.
#
# Usage: scripts/python-env.sh [--requirements FILE] [--venv DIR]   (relative to the current
#        folder)
# Environment: FTBENCH_VENV (the folder without --venv; default .venv; relative to the checkout),
# FTBENCH_VENV_PYTHON (the interpreter the environment is made with; default /usr/bin/python3,
# Debian's, whose venv module comes with the python3-venv package), PIP_* as pip reads them (a
# cache, a mirror, a certificate bundle; those that would install elsewhere are left out).
set -euo pipefail
usage() {
  echo "usage: scripts/python-env.sh [--requirements FILE] [--venv DIR]" >&2
  exit 2
}
requirements=""
venv=""
while (($#)); do
  case "$1" in
    --requirements) (($# >= 2)) || usage; requirements=$(realpath -m -- "$2"); shift 2 ;;
    --venv) (($# >= 2)) || usage; venv=$(realpath -m -- "$2"); shift 2 ;;
    *) usage ;;
  esac
done
checkout=$(cd "$(dirname "$0")/.." && pwd)
cd "$checkout"
[[ -n "$requirements" ]] || requirements=$checkout/python/requirements.txt
[[ -n "$venv" ]] || venv=$(realpath -m -- "${FTBENCH_VENV:-.venv}")
base_python=${FTBENCH_VENV_PYTHON:-/usr/bin/python3}
log() { echo "python-env: $*"; }

if [[ ! -f "$requirements" ]]; then
  echo "python-env: no requirements file $requirements" >&2
  exit 2
fi
# A folder that holds the checkout, or a system folder, is never the environment's.
if [[ "$checkout/" == "$venv/"* ]]; then
  echo "python-env: refusing $venv: it holds the checkout ($checkout)" >&2
  exit 2
fi
case "$venv" in
  / | /usr | /usr/* | /etc | /etc/* | /bin | /bin/* | /lib | /lib/* | /sbin | /sbin/* | /root | \
    /home | "${HOME:-/root}")
    echo "python-env: refusing $venv as the environment's folder (it is removed when remade)" >&2
    exit 2
    ;;
esac
if [[ ! -x "$base_python" ]]; then
  echo "python-env: no interpreter $base_python (set FTBENCH_VENV_PYTHON)" >&2
  exit 1
fi
# What the environment is made from: the requirements and the interpreter (another machine's or
# root's Python, say Debian 13's in scripts/ci-debian13.sh, needs an environment of its own; a
# point release of the same one does not).
want="$(sha256sum "$requirements" | cut -d' ' -f1) $("$base_python" -c \
  'import os, sys; print(os.path.realpath(sys.executable), "%d.%d" % sys.version_info[:2])')"
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
if [[ -e "$venv" || -L "$venv" ]]; then
  if [[ -d "$venv" && ! -L "$venv" && ( -f "$venv/pyvenv.cfg" || -z "$(ls -A "$venv")" ) ]]; then
    log "remaking $venv: made from other requirements or another Python, or incomplete"
    if ! rm -rf -- "$venv"; then
      echo "python-env: cannot remove $venv (made by another user? sudo scripts/setup.sh makes" \
        "it as the user who called sudo)" >&2
      exit 1
    fi
  else
    echo "python-env: refusing to replace $venv: it is not a virtual environment (no" \
      "pyvenv.cfg) and not empty; give another --venv or FTBENCH_VENV" >&2
    exit 2
  fi
fi
mkdir -p "$(dirname "$venv")"
if [[ ! -w "$(dirname "$venv")" ]]; then
  echo "python-env: cannot write in $(dirname "$venv")" >&2
  exit 1
fi
started=$SECONDS
"$base_python" -m venv "$venv"
# pip told to install somewhere else than the environment would leave it empty.
pip=(env -u PIP_TARGET -u PIP_PREFIX -u PIP_ROOT -u PIP_USER -u PIP_DRY_RUN
  "$venv/bin/python" -m pip --disable-pip-version-check --no-input)
# The system's certificate bundle rather than pip's own: it also holds the authority of a proxy
# that re-signs TLS, where the machine has one (Debian's update-ca-certificates puts it there).
if [[ -z "${PIP_CERT:-}" && -f /etc/ssl/certs/ca-certificates.crt ]]; then
  pip+=(--cert /etc/ssl/certs/ca-certificates.crt)
fi
# Every package pinned with its hashes: pip refuses one missing from the file, or one whose
# download differs from the hash.
log "installing $requirements into $venv"
"${pip[@]}" install --quiet --progress-bar off --require-hashes -r "$requirements"
# Every pin there at its version, or no mark.
"$venv/bin/python" - "$requirements" <<'EOF'
import importlib.metadata as metadata, re, sys
wrong = []
for line in open(sys.argv[1]):
    m = re.match(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?==([^\s;\\]+)", line)
    if not m:
        continue
    name, version = m.group(1), m.group(3)
    try:
        found = metadata.version(name)
    except metadata.PackageNotFoundError:
        found = None
    if found != version and (found or "").split("+")[0] != version:
        wrong.append(f"{name} {found or 'missing'} (pinned {version})")
if wrong:
    sys.exit("python-env: the environment does not hold what the requirements pin: "
             + ", ".join(wrong) + " (a PIP_* setting or pip.conf sending the install elsewhere?)")
EOF
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
