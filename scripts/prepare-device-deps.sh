#!/usr/bin/env bash
# Run HERE, on a Debian 12 machine with apt: fetch the Debian packages ftbench builds against
# (everything but LibTorch) and unpack them into .deps/root, an ignored folder that travels with
# the working tree to a GPU machine without a package manager. There, scripts/device-build.sh
# builds against it and the LibTorch of the installed PyTorch (docs: README "On a cloud
# GPU", ../shared/design/LIBTORCH.md section 12).
#
# Usage: scripts/prepare-device-deps.sh [DEST]      (DEST: default .deps, relative to the
#                                                   repository's root)
# Writes DEST/root (the unpacked packages) and DEST/MANIFEST (package, version, per line).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.deps}

# Headers, CMake configs and shared libraries. The runtime libraries of the -dev packages come
# too, so the built programs run where the GPU machine's system lacks them; their RPATH points
# here. libssl3: the image's own libcrypto would do, but carrying it removes the doubt.
# libgloo-dev: its headers, for c10d's Gloo group (the wheels ship none).
packages=(
  libyaml-cpp-dev libyaml-cpp0.7
  nlohmann-json3-dev
  libfmt-dev libfmt9
  libspdlog-dev libspdlog1.10
  libcli11-dev
  libgtest-dev libgmock-dev
  libssl-dev libssl3
  libpcre2-dev libpcre2-8-0
  libsentencepiece-dev libsentencepiece0 libprotobuf-lite32
  libgloo-dev
  libjs-chart.js          # Chart.js, compiled into the HTML report (ftbench report --html)
)

if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
  echo "error: apt-get and dpkg are needed (run this on the Debian 12 development machine)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# _apt cannot write into a root-only temporary folder; download as the caller.
(cd "$tmp" && apt-get download -o APT::Sandbox::User=root "${packages[@]}")
# It removes $dest/root: refuse a destination that is a system folder.
dest_abs=$(realpath -m "$dest")
case "$dest_abs" in
  / | /usr | /usr/* | /etc | /etc/* | /root | /home | "$HOME")
    echo "error: $dest: refusing a system folder as the destination (give e.g. .deps)" >&2
    exit 2
    ;;
esac
rm -rf "$dest/root"
mkdir -p "$dest/root"
: >"$dest/MANIFEST.tmp"
for deb in "$tmp"/*.deb; do
  dpkg -x "$deb" "$dest/root"
  printf '%s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
    >>"$dest/MANIFEST.tmp"
done
sort "$dest/MANIFEST.tmp" >"$dest/MANIFEST"
rm "$dest/MANIFEST.tmp"
# What is not needed to build or run: documentation, man pages, sources.
rm -rf "$dest/root/usr/share/doc" "$dest/root/usr/share/man" "$dest/root/usr/share/lintian" \
  "$dest/root/usr/src"
# gloo: the headers alone. c10d's Gloo group is compiled into LibTorch, whose wheels ship no gloo
# headers; linking Debian's libgloo beside LibTorch's own copy is asking for trouble.
find "$dest/root" -name 'libgloo*' \( -type f -o -type l \) -delete
# Static archives but GoogleTest's (the build links the shared libraries).
find "$dest/root" -name '*.a' ! -name 'libgtest*' ! -name 'libgmock*' -delete
echo "unpacked ${#packages[@]} packages into $dest/root ($(du -sh "$dest/root" | cut -f1)); list: $dest/MANIFEST"
