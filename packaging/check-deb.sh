#!/usr/bin/env bash
# Builds the BatchPilot .deb, lints it, installs it on this machine, checks
# that it works, and removes it again (docs/packaging.md).
#
#   packaging/check-deb.sh [BUILD_DIR]
#
# BUILD_DIR defaults to build/deb (configured here with the tests off); an
# existing build directory (e.g. build/default) is reused as it is, which
# saves a full compile. Needs root (or sudo) for apt/dpkg, and the packages
# of packaging/install-deps.sh (lintian, help2man among them). Checks, in
# order:
#   1. cpack -G DEB builds the package; its Depends come from dpkg-shlibdeps
#   2. lintian reports no error and no warning (info tags are printed)
#   3. apt installs it (resolving the Depends)
#   4. the installed files: binaries, .desktop, icon, metainfo, sample trace
#      + credit, example configs, copyright (DEP-5), changelog, manual pages
#      (rendered by man without a warning), bash completion;
#      desktop-file-validate and appstreamcli validate the installed copies
#   5. `batchpilot --version`, `batchpilot-bench --version`; bash completes
#      the subcommands through bash-completion's loader
#   6. a headless smoke request: batchpilot --headless --port 0 --model
#      builtin:echo --db TMP/t.sqlite, read its `listening on` line, POST
#      /v1/infer with curl, stop it with SIGTERM (graceful: exit code 0)
#   7. the installed binary records that session and writes its report
#      (PDF via the offscreen platform plugin, HTML, JSON); `import-trace
#      --sample` imports the installed sample trace
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

step "lintian $(lintian --version | awk '{print $2}')"
# --fail-on error,warning: info tags (I:) are shown but pass; overridden
# tags (packaging/debian/lintian-overrides, if any) are listed with O:.
LINT=$(lintian --fail-on error,warning --display-info --show-overrides "$DEB" 2>&1 | grep -v '^running with root') \
  || { sed 's/^/   /' <<<"$LINT"; die "lintian reports errors or warnings"; }
[[ -z "$LINT" ]] || sed 's/^/   /' <<<"$LINT"
ok "lintian: $(grep -c '^E:' <<<"$LINT" || true) errors, $(grep -c '^W:' <<<"$LINT" || true) warnings"

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
         /usr/share/batchpilot/traces/azure_llm_conv_2023.csv /usr/share/batchpilot/traces/README \
         /usr/share/batchpilot/configs/default.json /usr/share/batchpilot/configs/bucketed-azure.json \
         /usr/share/doc/batchpilot/copyright /usr/share/doc/batchpilot/changelog.gz \
         /usr/share/doc/batchpilot/README.md /usr/share/man/man1/batchpilot.1.gz \
         /usr/share/man/man1/batchpilot-bench.1.gz /usr/share/bash-completion/completions/batchpilot \
         /usr/share/bash-completion/completions/batchpilot-bench; do
  [[ -f "$f" ]] || die "missing $f"
  ok "$f"
done
grep -q "CC-BY 4.0" /usr/share/batchpilot/traces/README || die "the trace's credit line is missing"
grep -q "^License: CC-BY-4.0" /usr/share/doc/batchpilot/copyright && grep -q "Splitwise" /usr/share/doc/batchpilot/copyright \
  || die "the copyright file lacks the trace's license or attribution"
ok "copyright: $(grep -c '^Files:' /usr/share/doc/batchpilot/copyright) Files paragraphs, licenses $(grep -E '^License: ' /usr/share/doc/batchpilot/copyright | sort -u | cut -d' ' -f2 | paste -sd' ')"
CHANGELOG_VERSION=$(zcat /usr/share/doc/batchpilot/changelog.gz | dpkg-parsechangelog -l- -S Version)
[[ "$CHANGELOG_VERSION" == "$(dpkg-query -W -f='${Version}' batchpilot)" ]] \
  || die "changelog version $CHANGELOG_VERSION is not the package's"
ok "changelog.gz: latest entry $CHANGELOG_VERSION"
for page in batchpilot batchpilot-bench; do
  WARNINGS=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l /usr/share/man/man1/$page.1.gz 2>&1 >/dev/null)
  [[ -z "$WARNINGS" ]] || { sed 's/^/     /' <<<"$WARNINGS"; die "man $page: warnings"; }
  ok "man $page: $(MANWIDTH=80 man -l /usr/share/man/man1/$page.1.gz 2>/dev/null | grep -E '^(NAME|SYNOPSIS|DESCRIPTION|OPTIONS|FILES|SEE ALSO|[A-Z ]+)$' | paste -sd, -)"
done
desktop-file-validate /usr/share/applications/batchpilot.desktop && ok "desktop-file-validate"
appstreamcli validate --no-net /usr/share/metainfo/io.batchpilot.BatchPilot.metainfo.xml >/dev/null \
  && ok "appstreamcli validate --no-net"

step "batchpilot --version"
VERSION=$(cd "$WORK" && batchpilot --version)
echo "   $VERSION"
[[ "$VERSION" == batchpilot\ * ]] || die "unexpected --version output"
BENCH_VERSION=$(batchpilot-bench --version)
echo "   $BENCH_VERSION"
[[ "$BENCH_VERSION" == "batchpilot-bench ${VERSION#batchpilot }" ]] || die "batchpilot-bench --version differs"
batchpilot-bench --help >/dev/null 2>&1 && ok "batchpilot-bench --help" || die "batchpilot-bench --help failed"
# The completion as bash-completion loads it on first use (by command name).
COMPLETED=$(cd "$WORK" && bash -c '
  source /usr/share/bash-completion/bash_completion
  _completion_loader batchpilot
  COMP_WORDS=(batchpilot ""); COMP_CWORD=1; COMP_LINE="batchpilot "; COMP_POINT=${#COMP_LINE}
  $(complete -p batchpilot | sed -E "s/.*-F ([^ ]+).*/\1/")
  echo "${COMPREPLY[*]}"')
echo "   bash: batchpilot <TAB> -> $COMPLETED"
grep -qw import-trace <<<"$COMPLETED" || die "bash completion does not offer the subcommands"

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

step "first run: import the bundled sample"
(cd "$WORK" && batchpilot import-trace --sample --db "$DB") | sed 's/^/   /'
SOURCE=$(batchpilot traces --json --db "$DB" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["source_path"])')
[[ "$SOURCE" == /usr/share/batchpilot/traces/azure_llm_conv_2023.csv ]] || die "imported from $SOURCE"
ok "imported from $SOURCE"
(cd "$WORK" && batchpilot replay 1 --trace --virtual --model builtin:echo --db "$DB" 2>/dev/null) \
  | grep -E '^(replay session|requests|mean batch size)' | sed 's/^/   /'
