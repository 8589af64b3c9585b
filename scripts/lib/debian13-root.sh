# Sourced, not run: a Debian 13 (trixie) root made with debootstrap, and the bind mounts to run
# commands in it. scripts/ci-debian13.sh uses it; other jobs that need trixie's packages (a CUDA
# compile job with /usr/local/cuda bound in) call the same functions:
#
#   source scripts/lib/debian13-root.sh
#   debian13_root_lock                # one job at a time in the root (apt, mounts); waits
#   debian13_root_ensure              # creates the root when missing, else reuses it
#   debian13_root_mount "$PWD" /src   # /proc, /dev, /sys, resolv.conf, the checkout; unmounted on exit
#   debian13_root_bind /usr/local/cuda /usr/local/cuda ro   # any other folder, optionally read-only
#   debian13_root_run bash -c 'cd /src && scripts/setup.sh'
#   debian13_root_install ccache      # a CI tool setup.sh does not list, when missing
#   debian13_root_run env "${debian13_ccache_env[@]}" ...   # a build through ccache
#   debian13_host_tools               # debootstrap and wget on the host (ensure calls it)
#
# The root is ${FTBENCH_DEBIAN13_ROOT:-/var/cache/ftbench/debian13-root}. It is created in
# ROOT.tmp and renamed only when debootstrap succeeded, so a killed run never leaves a half root
# that a later run would reuse. apt's downloaded packages live outside it, in
# ${FTBENCH_DEBIAN13_APT_CACHE:-ROOT.apt-archives}, bound over the root's /var/cache/apt/archives:
# a root made again does not download them again. Needs root (mount, chroot) and bash.

FTBENCH_DEBIAN13_ROOT=${FTBENCH_DEBIAN13_ROOT:-/var/cache/ftbench/debian13-root}
FTBENCH_DEBIAN13_APT_CACHE=${FTBENCH_DEBIAN13_APT_CACHE:-${FTBENCH_DEBIAN13_ROOT}.apt-archives}
FTBENCH_DEBIAN13_MIRROR=${FTBENCH_DEBIAN13_MIRROR:-http://deb.debian.org/debian}
# The suite debootstrap installs: trixie for the CI jobs; scripts/time-fresh-root.sh also makes
# bookworm roots with these functions, to time the README's commands on a fresh Debian 12.
FTBENCH_DEBIAN13_SUITE=${FTBENCH_DEBIAN13_SUITE:-trixie}

# Mount points this shell made, in the order made; unmounted in reverse.
_debian13_mounts=()

_debian13_log() { echo "debian13-root: $*" >&2; }

# Mount points at or below $1, deepest first (from /proc/self/mountinfo; octal escapes decoded).
_debian13_mounts_below() {
  local dir=$1
  awk -v d="$dir" '{ p = $5; gsub(/\\040/, " ", p); if (p == d || index(p, d "/") == 1) print p }' \
    /proc/self/mountinfo | sort -r
}

# Unmounts everything at or below $1; returns non-zero when something is still mounted there.
_debian13_umount_below() {
  local dir=$1 m
  while read -r m; do
    [[ -n "$m" ]] && umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done < <(_debian13_mounts_below "$dir")
  [[ -z "$(_debian13_mounts_below "$dir")" ]]
}

# Removes a folder that must hold no mounts: refuses (and fails) rather than delete through one.
_debian13_remove_tree() {
  local dir=$1
  if ! _debian13_umount_below "$dir"; then
    _debian13_log "refusing to delete $dir: something is still mounted below it"
    return 1
  fi
  rm -rf --one-file-system -- "$dir"
}

# Takes an exclusive lock for the rest of this shell's life (file descriptor 9), so two jobs never
# run apt in the root or unmount each other's binds at once. Waits up to
# FTBENCH_DEBIAN13_LOCK_WAIT seconds (default 3600).
debian13_root_lock() {
  mkdir -p "$(dirname "$FTBENCH_DEBIAN13_ROOT")"
  exec 9>"${FTBENCH_DEBIAN13_ROOT}.lock"
  if ! flock -w "${FTBENCH_DEBIAN13_LOCK_WAIT:-3600}" 9; then
    _debian13_log "another job holds ${FTBENCH_DEBIAN13_ROOT}.lock"
    return 1
  fi
  # Holding the lock, anything still mounted in the root is a killed run's leftover.
  if [[ -d "$FTBENCH_DEBIAN13_ROOT" ]] && ! _debian13_umount_below "$FTBENCH_DEBIAN13_ROOT"; then
    _debian13_log "cannot unmount a previous run's mounts in $FTBENCH_DEBIAN13_ROOT"
    return 1
  fi
}

# Re-runs the calling script ($1, with its arguments) in a private mount namespace of its own,
# unless it already is in one: the binds that debian13_root_mount makes then vanish with the
# job, even after a kill -9, instead of leaving the host's /dev and the checkout bound inside
# the root (where an `rm -rf` of the cache would reach them).
debian13_private_mounts() {
  [[ -n "${FTBENCH_DEBIAN13_PRIVATE_MOUNTS:-}" ]] && return 0
  export FTBENCH_DEBIAN13_PRIVATE_MOUNTS=1
  exec unshare --mount --propagation private "$@"
}

# Installs what the jobs need on the host, when missing: debootstrap (which brings wget, used for
# the CUDA job's downloads). .ci/run calls it before it starts the preparation in the background,
# so that the host's apt never runs twice at once.
debian13_host_tools() {
  command -v debootstrap >/dev/null 2>&1 && command -v wget >/dev/null 2>&1 && return 0
  _debian13_log "installing debootstrap and wget on the host"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap wget
}

# Creates the root when it is missing (installing debootstrap on the host first if need be);
# reuses it otherwise. A root is complete when it has /etc/debian_version and /usr/bin/apt-get.
debian13_root_ensure() {
  local root=$FTBENCH_DEBIAN13_ROOT tmp=${FTBENCH_DEBIAN13_ROOT}.tmp
  if [[ -x "$root/usr/bin/apt-get" && -f "$root/etc/debian_version" ]]; then
    _debian13_log "reusing $root (Debian $(cat "$root/etc/debian_version"))"
    _debian13_quick_dpkg
    return 0
  fi
  if [[ -e "$root" ]]; then
    _debian13_log "$root exists but is not a complete root; remove it by hand"
    return 1
  fi
  debian13_host_tools
  if [[ -e "$tmp" ]]; then
    _debian13_log "removing an unfinished root from an earlier run: $tmp"
    _debian13_remove_tree "$tmp" || return 1
  fi
  _debian13_log "creating $root with debootstrap ($FTBENCH_DEBIAN13_SUITE, minbase)"
  mkdir -p "$FTBENCH_DEBIAN13_APT_CACHE/partial"
  mkdir -p "$tmp/var/cache/apt/archives"
  if ! debootstrap --variant=minbase --components=main,contrib,non-free \
    --cache-dir="$FTBENCH_DEBIAN13_APT_CACHE" "$FTBENCH_DEBIAN13_SUITE" "$tmp" \
    "$FTBENCH_DEBIAN13_MIRROR"; then
    _debian13_log "debootstrap failed; removing $tmp"
    _debian13_remove_tree "$tmp" || true
    return 1
  fi
  mv -T "$tmp" "$root"
  _debian13_quick_dpkg
}

# A throwaway root: dpkg skips fsync and leaves out documentation, man pages and translations,
# a good part of the files of the packages the jobs install. Idempotent; a root made
# before this only gets it for what it installs from then on.
_debian13_quick_dpkg() {
  local cfg=$FTBENCH_DEBIAN13_ROOT/etc/dpkg/dpkg.cfg.d/ftbench-ci
  [[ -f "$cfg" ]] && return 0
  cat >"$cfg" <<'CFG'
# Written by ftbench's scripts/lib/debian13-root.sh for a CI root.
force-unsafe-io
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
CFG
}

# Binds host folder $1 at $2 inside the root ($3 = ro for read-only); the mount point is made if
# missing and the mount is undone by debian13_root_umount (run on exit by debian13_root_mount).
debian13_root_bind() {
  local src=$1 dest=$FTBENCH_DEBIAN13_ROOT$2 mode=${3:-rw}
  mkdir -p "$dest"
  mount --bind "$src" "$dest"
  _debian13_mounts+=("$dest")
  if [[ "$mode" == ro ]]; then
    mount -o remount,bind,ro "$dest"
  fi
}

# Undoes this shell's mounts, newest first. Safe to call twice.
debian13_root_umount() {
  local i m
  for ((i = ${#_debian13_mounts[@]} - 1; i >= 0; i--)); do
    m=${_debian13_mounts[i]}
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
      _debian13_log "could not unmount $m"
  done
  _debian13_mounts=()
}

# Mounts /proc, /dev (with /dev/pts and /dev/shm), /sys, apt's package cache and the checkout $1
# at $2 (default /src); copies the host's /etc/resolv.conf. Sets an EXIT trap that unmounts (a
# caller with its own EXIT trap calls debian13_root_umount from it instead); INT and TERM exit
# so that the trap runs.
debian13_root_mount() {
  local checkout=${1:?checkout folder} at=${2:-/src} root=$FTBENCH_DEBIAN13_ROOT
  trap debian13_root_umount EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  mkdir -p "$root/proc"
  mount -t proc proc "$root/proc"
  _debian13_mounts+=("$root/proc")
  debian13_root_bind /dev /dev
  debian13_root_bind /dev/pts /dev/pts
  debian13_root_bind /dev/shm /dev/shm
  debian13_root_bind /sys /sys ro
  mkdir -p "$FTBENCH_DEBIAN13_APT_CACHE/partial"
  debian13_root_bind "$FTBENCH_DEBIAN13_APT_CACHE" /var/cache/apt/archives
  debian13_root_bind "$checkout" "$at"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  _debian13_local_cas
}

# The host's own certificate authorities (/usr/local/share/ca-certificates: e.g. a proxy's that
# re-signs TLS, without which pip fails to verify PyPI), for the root's bundle:
# ca-certificates adds them when setup.sh installs it, update-ca-certificates when it is there.
_debian13_local_cas() {
  local dir=/usr/local/share/ca-certificates
  compgen -G "$dir/*.crt" >/dev/null || return 0
  mkdir -p "$FTBENCH_DEBIAN13_ROOT$dir"
  cp -L "$dir"/*.crt "$FTBENCH_DEBIAN13_ROOT$dir/"
  if [[ -x "$FTBENCH_DEBIAN13_ROOT/usr/sbin/update-ca-certificates" ]]; then
    chroot "$FTBENCH_DEBIAN13_ROOT" /usr/sbin/update-ca-certificates >/dev/null
  fi
}

# Installs the packages named (in the root) that are not installed yet: tools of the CI jobs
# themselves, such as ccache, that setup.sh does not list.
debian13_root_install() {
  local p missing=()
  for p in "$@"; do
    [[ "$(debian13_root_run dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" == \
      "install ok installed" ]] || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  _debian13_log "installing in the root: ${missing[*]}"
  debian13_root_run apt-get update -q
  debian13_root_run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends "${missing[@]}"
}

# ccache's settings for the builds in the root: paths below /src (where the jobs bind the
# checkout) hashed relative to the build folder, so that build folders of the same sources share
# objects compiled with the same flags; the precompiled headers' defines and timestamps allowed.
debian13_ccache_env=(CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=true
  CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime)

# Runs a command in the root as root, with a clean environment plus CI and any FTBENCH_* set here.
debian13_root_run() {
  local env_args=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    LANG=C.UTF-8 TERM="${TERM:-dumb}")
  local v
  for v in CI OMP_NUM_THREADS $(compgen -v FTBENCH_); do
    [[ -n "${!v+x}" ]] && env_args+=("$v=${!v}")
  done
  chroot "$FTBENCH_DEBIAN13_ROOT" /usr/bin/env -i "${env_args[@]}" "$@"
}
