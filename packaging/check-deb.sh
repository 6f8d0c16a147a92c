#!/usr/bin/env bash
# Builds the BatchPilot .deb, installs it on this machine, checks that it
# works, and removes it again (docs/packaging.md).
#
#   packaging/check-deb.sh [BUILD_DIR]
#
# BUILD_DIR defaults to build/deb (configured here with the tests off); an
# existing build directory (e.g. build/report) is reused as it is, which
# saves a full compile. Needs root (or sudo) for apt/dpkg, and the packages
# of packaging/install-deps.sh. Checks, in order:
#   1. cpack -G DEB builds the package; its Depends come from dpkg-shlibdeps
#   2. apt installs it (resolving the Depends)
#   3. the installed files: binaries, .desktop, icon, metainfo, sample trace
#      + credit; desktop-file-validate and appstreamcli validate pass on the
#      installed copies
#   4. `batchpilot --version`, `batchpilot-bench --help`
#   5. a headless smoke request: batchpilot --headless --port 0 --model
#      builtin:echo --db TMP/t.sqlite, read its `listening on` line, POST
#      /v1/infer with curl, stop it with SIGTERM (graceful: exit code 0)
#   6. the installed binary records that session and writes its report
#      (PDF via the offscreen platform plugin, HTML, JSON); the sample
#      trace imports
# and finally removes the package (also on failure). Exit code 0 when every
# check passed.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(realpath -m "${1:-$SRC/build/deb}") # absolute: apt takes a .deb path only as ./x or /x
JOBS=${JOBS:-2}
SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"

step() { printf '\n== %s\n' "$*"; }
ok() { printf '   ok: %s\n' "$*"; }
die() { printf '   FAILED: %s\n' "$*" >&2; exit 1; }

if dpkg-query -W -f='${Status}' batchpilot 2>/dev/null | grep -q "install ok installed"; then
  die "a batchpilot package is already installed; this script installs and removes its own, so remove that one first"
fi

step "build and package ($BUILD)"
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATCHPILOT_TESTS=OFF
fi
cmake --build "$BUILD" -j"$JOBS"
rm -f "$BUILD"/batchpilot_*.deb
(cd "$BUILD" && cpack -G DEB)
DEB=$(ls "$BUILD"/batchpilot_*.deb)
ok "$DEB ($(du -h "$DEB" | cut -f1))"
dpkg-deb --field "$DEB" Package Version Architecture Depends | sed 's/^/   /'
dpkg-deb --contents "$DEB" | awk '{print "   " $6}' | grep -v '/$'

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  local rc=$?
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if dpkg-query -W -f='${Status}' batchpilot 2>/dev/null | grep -q "installed"; then
    step "remove the package"
    $SUDO apt-get purge -y -qq batchpilot >/dev/null && ok "batchpilot purged"
  fi
  rm -rf "$WORK"
  if [[ $rc -eq 0 ]]; then printf '\ncheck-deb: all checks passed\n'; else printf '\ncheck-deb: FAILED\n' >&2; fi
}
trap cleanup EXIT

step "install"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$DEB" >/dev/null
dpkg-query -W -f='   ok: installed ${Package} ${Version}\n' batchpilot

step "installed files"
for f in /usr/bin/batchpilot /usr/bin/batchpilot-bench /usr/share/applications/batchpilot.desktop \
         /usr/share/icons/hicolor/scalable/apps/batchpilot.svg \
         /usr/share/metainfo/io.batchpilot.BatchPilot.metainfo.xml \
         /usr/share/batchpilot/traces/azure_llm_conv_2023.csv /usr/share/batchpilot/traces/README; do
  [[ -f "$f" ]] || die "missing $f"
  ok "$f"
done
grep -q "CC-BY 4.0" /usr/share/batchpilot/traces/README || die "the trace's credit line is missing"
desktop-file-validate /usr/share/applications/batchpilot.desktop && ok "desktop-file-validate"
appstreamcli validate --no-net /usr/share/metainfo/io.batchpilot.BatchPilot.metainfo.xml >/dev/null \
  && ok "appstreamcli validate --no-net"

step "batchpilot --version"
VERSION=$(cd "$WORK" && batchpilot --version)
echo "   $VERSION"
[[ "$VERSION" == batchpilot\ * ]] || die "unexpected --version output"
batchpilot-bench --help >/dev/null 2>&1 && ok "batchpilot-bench --help" || die "batchpilot-bench --help failed"

step "headless smoke request"
DB="$WORK/t.sqlite"
batchpilot --headless --port 0 --model builtin:echo --db "$DB" >"$WORK/out" 2>"$WORK/err" &
SERVER_PID=$!
URL=""
for _ in $(seq 1 600); do # up to 60 s
  URL=$(grep -o 'listening on http://[^ ]*' "$WORK/out" | head -1 | cut -d' ' -f3 || true)
  [[ -n "$URL" ]] && break
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$URL" ]]; then
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
  if grep -q "REST endpoint" "$WORK/err"; then
    printf '   NOT RUN: this build has no REST endpoint yet:\n' >&2
    sed 's/^/     /' "$WORK/err" >&2
    die "headless smoke request not possible"
  fi
  sed 's/^/     /' "$WORK/err" >&2
  die "no 'listening on' line from batchpilot --headless"
fi
ok "listening on $URL"
REPLY=$(curl -sS --max-time 30 -w '\n%{http_code}' -H 'Content-Type: application/json' \
        -d '{"text": "hello batchpilot", "max_new_tokens": 5}' "$URL/v1/infer")
CODE=$(tail -1 <<<"$REPLY")
BODY=$(head -n -1 <<<"$REPLY")
echo "   POST /v1/infer -> $CODE $BODY"
[[ "$CODE" == 200 ]] || die "POST /v1/infer answered $CODE"
grep -q '"timing"' <<<"$BODY" || die "no timing in the answer"
kill -TERM "$SERVER_PID"
RC=0
wait "$SERVER_PID" || RC=$?
SERVER_PID=""
[[ $RC -eq 0 ]] || die "batchpilot --headless exited with $RC after SIGTERM"
ok "stopped gracefully (exit 0)"

step "the installed binary reports the recorded session"
batchpilot sessions --db "$DB" | sed 's/^/   /'
for ext in pdf html json; do
  (cd "$WORK" && env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM \
     batchpilot report last -o "$WORK/report.$ext" --db "$DB") | sed 's/^/   /'
done
head -c 5 "$WORK/report.pdf" | grep -q '%PDF-' || die "report.pdf is not a PDF"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["headline"]["completed"] >= 1, d["headline"]' \
  "$WORK/report.json" && ok "report.json counts the smoke request"
batchpilot import-trace /usr/share/batchpilot/traces/azure_llm_conv_2023.csv --db "$DB" | sed 's/^/   /'
