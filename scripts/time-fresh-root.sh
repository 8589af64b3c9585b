#!/usr/bin/env bash
# Times one of the README's two commands as a new user on a fresh machine would run it: in a new
# root made with debootstrap (minbase: no compiler, no CMake, nothing of ftbench's), from a
# `git clone` of this checkout, as root, with CI=true (a test that skips fails). Not timed: making
# the root and the clone. Timed: the command, from its start to its end, which includes every
# package download (the root has its own, empty, package cache).
#
# Usage: scripts/time-fresh-root.sh bookworm|trixie demo|test [WORK_DIR]
#   WORK_DIR (default /var/tmp/ftbench-fresh-SUITE-COMMAND) holds the root. A WORK_DIR this
#   script made (it holds .ftbench-fresh-root) is removed and made again; any other existing
#   WORK_DIR is refused. It is left afterwards for a look (run the script again, or remove it by
#   hand: nothing is mounted in it once the script ends, the mounts being in a namespace of the
#   script's own). /usr/local/cuda, where the host has it, is bound in read-only, as on this
#   project's machines (the CUDA query module's test).
#
# Not quite a fresh machine: the root's dpkg skips fsync and leaves out documentation, man pages
# and translations (scripts/lib/debian13-root.sh, as in the CI roots), which makes the
# installs somewhat quicker than on a real new machine.
# Prints the wall, user and system time of the command, and exits with its status.
set -euo pipefail
self=$(realpath "$0")
repo=$(cd "$(dirname "$self")/.." && pwd)
suite=${1:?usage: $0 bookworm|trixie demo|test [WORK_DIR]}
command=${2:?usage: $0 bookworm|trixie demo|test [WORK_DIR]}
case "$suite" in bookworm | trixie) ;; *) echo "error: suite: bookworm or trixie, not $suite" >&2; exit 2 ;; esac
case "$command" in demo | test) ;; *) echo "error: command: demo or test, not $command" >&2; exit 2 ;; esac
work=${3:-/var/tmp/ftbench-fresh-$suite-$command}
if [[ $(id -u) -ne 0 ]]; then
  echo "error: $0 needs root (debootstrap, chroot, mounts)" >&2
  exit 1
fi

work=$(realpath -m "$work")
marker=$work/.ftbench-fresh-root
export FTBENCH_DEBIAN13_ROOT=$work/root FTBENCH_DEBIAN13_APT_CACHE=$work/apt-archives
export FTBENCH_DEBIAN13_SUITE=$suite
# shellcheck source=lib/debian13-root.sh
source "$repo/scripts/lib/debian13-root.sh"
debian13_private_mounts "$self" "$@"
# One run per WORK_DIR at a time: the lock lives beside it, not in it.
exec 8>"$work.lock"
flock -n 8 || { echo "error: another run uses $work ($work.lock)" >&2; exit 1; }
if [[ -e "$work" && ! -f "$marker" ]]; then
  echo "error: $work exists and was not made by $0 (no $marker); not removing it" >&2
  exit 1
fi
if [[ -e "$work" ]]; then
  _debian13_remove_tree "$work"
fi
mkdir -p "$work"
touch "$marker"
debian13_root_lock
debian13_root_ensure
git clone -q "$repo" "$work/checkout"
debian13_root_mount "$work/checkout" /src
if [[ -d /usr/local/cuda ]]; then
  debian13_root_bind "$(readlink -f /usr/local/cuda)" /usr/local/cuda ro
fi
echo "time-fresh-root: $suite, scripts/$command.sh, started $(date -u +%FT%TZ)"
status=0
TIMEFORMAT="time-fresh-root: $suite scripts/$command.sh: %R s wall, %U s user, %S s system"
time debian13_root_run env CI=true bash -c "cd /src && scripts/$command.sh" || status=$?
echo "time-fresh-root: exit status $status, ended $(date -u +%FT%TZ)"
exit "$status"
