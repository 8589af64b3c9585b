#!/usr/bin/env bash
# ctest runpath_entries: every run-time search path entry of the given programs and modules is an
# absolute folder or starts with $ORIGIN. An empty entry (CMake leaves one at the end of the
# build RPATH of a target it also installs, room for the install-time rewrite) or a relative one
# is searched from the current folder, where a planted library would be loaded into ftbench.
#
# Usage: tests/cmake/runpath_check.sh ELF...
set -euo pipefail
status=0
for file in "$@"; do
  paths=$(readelf -d "$file" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p')
  if [[ -z "$paths" ]]; then
    echo "ok: $file: none"
    continue
  fi
  bad=()
  rest=$paths
  while :; do
    entry=${rest%%:*}
    [[ "$entry" == /* || "$entry" == '$ORIGIN'* ]] || bad+=("${entry:-<empty>}")
    [[ "$rest" == *:* ]] || break
    rest=${rest#*:}
  done
  if ((${#bad[@]})); then
    echo "FAILED: $file: search path [$paths] holds ${bad[*]}: searched from the current folder"
    status=1
  else
    echo "ok: $file: $paths"
  fi
done
exit "$status"
