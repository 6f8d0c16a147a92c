#!/usr/bin/env bash
# Makes a clean Debian 12 (bookworm) root in a folder: the minimal base system
# (debootstrap --variant=minbase) and nothing else, so that a package installed
# there gets exactly what its Depends bring. packaging/check-deb.sh installs
# the .deb into one to prove that it runs on a machine that never built it.
#
#   make-debian-root.sh DIR     DIR must not exist or be empty
#
# debootstrap (Debian's package) downloads about 40 MB from the Debian mirror
# in /etc/apt/sources.list(.d) once; the result is cached as a tarball
# (~/.cache/batchpilot/debian12-minbase.tar, about 200 MB unpacked), and every
# later root is unpacked from it in a few seconds. Needs root (debootstrap,
# chroot).
#   BATCHPILOT_DEBIAN_MIRROR   the mirror (default: the first deb.debian.org-style
#                              URI of this machine's apt sources, else deb.debian.org)
set -euo pipefail

die() { echo "make-debian-root: $*" >&2; exit 1; }
[[ $# -eq 1 ]] || die "usage: $0 DIR"
DIR=$1
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap and chroot)"
command -v debootstrap >/dev/null || die "debootstrap is missing (packaging/install-deps.sh installs it)"
if [[ -e "$DIR" && -n "$(ls -A "$DIR" 2>/dev/null)" ]]; then
  die "$DIR exists and is not empty"
fi

CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/batchpilot
TARBALL="$CACHE/debian12-minbase.tar"
mirror=${BATCHPILOT_DEBIAN_MIRROR:-}
if [[ -z "$mirror" ]]; then
  mirror=$(grep -rhoE '^(URIs:|deb) +http[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d 2>/dev/null |
    awk '{print $2}' | head -1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi

if [[ ! -f "$TARBALL" ]]; then
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$CACHE/debootstrap.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "make-debian-root: debootstrap --variant=minbase bookworm from $mirror (once, about a minute)" >&2
  start=$(date +%s)
  debootstrap --variant=minbase bookworm "$tmp/root" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
    { tail -20 "$tmp/debootstrap.log" >&2; die "debootstrap failed"; }
  rm -rf "$tmp/root/var/cache/apt/archives/"*.deb
  tar -C "$tmp/root" -cf "$tmp/root.tar" .
  mv "$tmp/root.tar" "$TARBALL"
  echo "make-debian-root: cached $TARBALL ($(du -h "$TARBALL" | cut -f1), $(($(date +%s) - start)) s)" >&2
fi

mkdir -p "$DIR"
tar -C "$DIR" -xf "$TARBALL"
# The network as this machine sees it (the root shares its network namespace).
cp /etc/resolv.conf "$DIR/etc/resolv.conf"
echo "deb $mirror bookworm main" >"$DIR/etc/apt/sources.list"
echo "make-debian-root: clean Debian $(cat "$DIR/etc/debian_version") root in $DIR" >&2
