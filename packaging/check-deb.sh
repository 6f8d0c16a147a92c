#!/usr/bin/env bash
# Builds the BatchPilot .deb packages, lints them, installs them in a CLEAN
# Debian 12 root that this script makes itself (packaging/make-debian-root.sh:
# debootstrap's minimal base system and nothing else), and checks there that
# the programs run: a machine that never built BatchPilot, with only what the
# packages carry and declare (docs/packaging.md).
#
#   packaging/check-deb.sh [BUILD_DIR] [--drop-lib NAME] [--keep-root] [--reuse-debs] [--fast-pack]
#
# BUILD_DIR defaults to build/deb (configured here with the tests off); an
# existing build directory (e.g. build/default) is reused as it is, which
# saves a full compile. --drop-lib NAME deletes /usr/lib/batchpilot/NAME in the
# root after the install, to show that the checks fail when a library the
# package should carry is missing. --keep-root leaves the root for a look.
# --reuse-debs checks the packages a previous run left in BUILD_DIR instead of
# building and packing again (xz: 5-10 min here). --fast-pack packs with gzip
# instead of the release's xz (same files, about 1.5x the size, a minute
# instead of 5-10): the CI check (quickstart.sh test) uses it, since what it
# checks is the package's contents and dependencies, not its compression.
# Needs root (or sudo): debootstrap, chroot and mounts. Costs, on 2 cores
# with the build done: packing ~1 min, the root ~1 min the first time (then a
# cached tarball, seconds), apt in the root ~1 min (about 60 MB of Debian's
# packages: Qt, SQLite, OpenBLAS ...), the checks ~1 min.
#
# Checks, in order:
#   1. cpack -G DEB builds `batchpilot` (and `batchpilot-cuda` in a CUDA
#      build); its Depends come from dpkg-shlibdeps, less the libraries it
#      carries in /usr/lib/batchpilot
#   2. lintian reports no error and no warning on either (info tags printed)
#   3. the files (extracted, not installed on this machine): binaries and
#      their RUNPATH, the carried libtorch, desktop files, sample trace and
#      credit, configs, copyright, changelog, manual pages (man --warnings),
#      desktop-file-validate and appstreamcli on the shipped copies
#   4. a clean Debian 12 root; apt installs the packages there, resolving
#      the Depends from Debian's mirror
#   5. in the root: no library of either binary is missing (ldd);
#      `batchpilot --version`, `batchpilot-bench --version`; bash completes
#      the subcommands
#   6. in the root: `batchpilot-bench profile` on the CPU (builtin:tiny-decoder:
#      libtorch's CPU path runs)
#   7. in the root: `batchpilot --headless --model builtin:tiny-decoder`,
#      a POST /v1/infer sent from this machine (the root shares its network),
#      SIGTERM, graceful exit; with batchpilot-cuda installed and no GPU, the
#      start-up says the engine runs on the CPU
#   8. in the root: the recorded session's report as PDF (offscreen), HTML
#      and JSON; `import-trace --sample` and a virtual-clock replay
# The root is removed at the end (also on failure). Exit code 0 when every
# check passed.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=""
DROP_LIB=""
KEEP_ROOT=0
REUSE_DEBS=0
FAST_PACK=0
while [[ $# -gt 0 ]]; do
  case "$1" in
  --drop-lib) DROP_LIB=${2:?--drop-lib needs a library name}; shift 2 ;;
  --keep-root) KEEP_ROOT=1; shift ;;
  --reuse-debs) REUSE_DEBS=1; shift ;;
  --fast-pack) FAST_PACK=1; shift ;;
  -*) echo "usage: $0 [BUILD_DIR] [--drop-lib NAME] [--keep-root] [--reuse-debs] [--fast-pack]" >&2; exit 2 ;;
  *) BUILD=$1; shift ;;
  esac
done
BUILD=$(realpath -m "${BUILD:-$SRC/build/deb}")
JOBS=${JOBS:-2}
SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"

step() { printf '\n== %s\n' "$*"; }
ok() { printf '   ok: %s\n' "$*"; }
die() { printf '   FAILED: %s\n' "$*" >&2; exit 1; }
BEGIN=$(date +%s)

step "build and package ($BUILD)"
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATCHPILOT_TESTS=OFF
fi
if [[ $REUSE_DEBS -eq 1 && -n "$(ls "$BUILD"/batchpilot_*.deb 2>/dev/null)" ]]; then
  echo "   (--reuse-debs: the packages already in $BUILD, not built again)"
else
  cmake --build "$BUILD" -j"$JOBS"
  rm -f "$BUILD"/batchpilot*_*.deb
  PACK_ARGS=()
  [[ $FAST_PACK -eq 0 ]] || PACK_ARGS=(-D CPACK_DEBIAN_COMPRESSION_TYPE=gzip)
  (cd "$BUILD" && cpack -G DEB "${PACK_ARGS[@]}" >"$BUILD/cpack.log" 2>&1) || { tail -30 "$BUILD/cpack.log"; die "cpack failed"; }
fi
DEB=$(ls "$BUILD"/batchpilot_*.deb)
CUDA_DEB=$(ls "$BUILD"/batchpilot-cuda_*.deb 2>/dev/null || true)
for deb in $DEB $CUDA_DEB; do
  ok "$(basename "$deb") ($(du -h "$deb" | cut -f1); installed $(dpkg-deb --field "$deb" Installed-Size) KiB)"
  dpkg-deb --field "$deb" Package Version Architecture Depends | sed 's/^/   /'
done
ok "packed in $(($(date +%s) - BEGIN)) s"

step "lintian $(lintian --version | awk '{print $2}')"
for deb in $DEB $CUDA_DEB; do
  # Errors (E:) and warnings (W:) fail; info tags (I:) are shown but pass;
  # overridden tags (packaging/debian/lintian-overrides, each with its reason)
  # are listed with O:. (lintian's own --fail-on counts shown overrides too.)
  LINT=$(lintian --allow-root --display-info --show-overrides "$deb" 2>&1) || true
  [[ -z "$LINT" ]] || sed 's/^/   /' <<<"$LINT"
  ! grep -qE '^(E|W): ' <<<"$LINT" || die "lintian reports errors or warnings on $(basename "$deb")"
  ok "$(basename "$deb"): $(grep -c '^E:' <<<"$LINT" || true) errors, $(grep -c '^W:' <<<"$LINT" || true) warnings"
done

WORK=$(mktemp -d)
ROOT="$WORK/root"
SERVER_PID=""
MOUNTS=()
cleanup() {
  local rc=$?
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do $SUDO umount -l "${MOUNTS[i]}" 2>/dev/null || true; done
  if [[ $KEEP_ROOT -eq 1 ]]; then
    echo "   the root is kept in $ROOT"
  else
    $SUDO rm -rf "$WORK"
  fi
  if [[ $rc -eq 0 ]]; then
    printf '\ncheck-deb: all checks passed (%d s)\n' $(($(date +%s) - BEGIN))
  else
    printf '\ncheck-deb: FAILED\n' >&2
  fi
}
trap cleanup EXIT

step "the package's files (extracted here, not installed)"
X="$WORK/x"
dpkg-deb -x "$DEB" "$X"
for f in usr/bin/batchpilot usr/bin/batchpilot-bench usr/lib/batchpilot/libtorch_cpu.so usr/lib/batchpilot/libc10.so \
         usr/share/applications/batchpilot.desktop usr/share/icons/hicolor/scalable/apps/batchpilot.svg \
         usr/share/metainfo/io.batchpilot.BatchPilot.metainfo.xml \
         usr/share/batchpilot/traces/azure_llm_conv_2023.csv usr/share/batchpilot/traces/README \
         usr/share/batchpilot/configs/default.json usr/share/batchpilot/configs/bucketed-azure.json \
         usr/share/doc/batchpilot/copyright usr/share/doc/batchpilot/changelog.gz \
         usr/share/doc/batchpilot/README.md usr/share/man/man1/batchpilot.1.gz \
         usr/share/man/man1/batchpilot-bench.1.gz usr/share/bash-completion/completions/batchpilot \
         usr/share/bash-completion/completions/batchpilot-bench; do
  [[ -f "$X/$f" ]] || die "missing /$f"
done
ok "binaries, data, docs, manual pages and completions present"
for bin in batchpilot batchpilot-bench; do
  RUNPATH=$(readelf -d "$X/usr/bin/$bin" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
  [[ "$RUNPATH" == '$ORIGIN/../lib/batchpilot' ]] || die "$bin has RUNPATH '$RUNPATH'"
  NEEDED=$(readelf -d "$X/usr/bin/$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -E 'torch|c10|cuda' | paste -sd' ' -)
  ok "$bin: RUNPATH $RUNPATH; libtorch NEEDED: $NEEDED"
  grep -qE 'libtorch_cuda|libc10_cuda|libcudnn|libcublas' <<<"$NEEDED" && die "$bin links the CUDA half of libtorch"
done
ok "carried: $(cd "$X/usr/lib/batchpilot" && ls | paste -sd' ' -) ($(du -sh "$X/usr/lib/batchpilot" | cut -f1))"
grep -q "CC-BY 4.0" "$X/usr/share/batchpilot/traces/README" || die "the trace's credit line is missing"
COPYRIGHT="$X/usr/share/doc/batchpilot/copyright"
grep -q "^License: CC-BY-4.0" "$COPYRIGHT" && grep -q "Splitwise" "$COPYRIGHT" \
  || die "the copyright file lacks the trace's license or attribution"
grep -q "^Files: usr/lib/batchpilot/libtorch" "$COPYRIGHT" || die "the copyright file does not cover the carried libtorch"
ok "copyright: $(grep -c '^Files:' "$COPYRIGHT") Files paragraphs, licenses $(grep -E '^License: ' "$COPYRIGHT" | sort -u | cut -d' ' -f2 | paste -sd' ' -)"
CHANGELOG_VERSION=$(zcat "$X/usr/share/doc/batchpilot/changelog.gz" | dpkg-parsechangelog -l- -S Version)
[[ "$CHANGELOG_VERSION" == "$(dpkg-deb --field "$DEB" Version)" ]] || die "changelog version $CHANGELOG_VERSION is not the package's"
ok "changelog.gz: latest entry $CHANGELOG_VERSION"
for page in batchpilot batchpilot-bench; do
  WARNINGS=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$X/usr/share/man/man1/$page.1.gz" 2>&1 >/dev/null)
  [[ -z "$WARNINGS" ]] || { sed 's/^/     /' <<<"$WARNINGS"; die "man $page: warnings"; }
  ok "man $page renders without a warning"
done
desktop-file-validate "$X/usr/share/applications/batchpilot.desktop" && ok "desktop-file-validate"
appstreamcli validate --no-net "$X/usr/share/metainfo/io.batchpilot.BatchPilot.metainfo.xml" >/dev/null \
  && ok "appstreamcli validate --no-net"

step "a clean Debian 12 root"
$SUDO "$SRC/packaging/make-debian-root.sh" "$ROOT"
for m in proc dev; do
  if [[ $m == proc ]]; then $SUDO mount -t proc proc "$ROOT/proc"; else $SUDO mount --bind /dev "$ROOT/dev"; fi
  MOUNTS+=("$ROOT/$m")
done
# A command in the root, with a clean environment (nothing of this machine's).
ROOT_ENV=(/usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8)
inroot() { $SUDO chroot "$ROOT" "${ROOT_ENV[@]}" "$@"; }
ok "$(inroot sh -c 'echo "Debian $(cat /etc/debian_version), $(dpkg-query -W | wc -l) packages"'); /usr/lib/batchpilot: $(inroot sh -c 'test -e /usr/lib/batchpilot && echo present || echo absent')"

step "apt installs the package(s) in the root"
mkdir -p "$ROOT/tmp/debs"
cp $DEB $CUDA_DEB "$ROOT/tmp/debs/"
INSTALL=(/tmp/debs/"$(basename "$DEB")")
[[ -z "$CUDA_DEB" ]] || INSTALL+=(/tmp/debs/"$(basename "$CUDA_DEB")")
start=$(date +%s)
inroot apt-get update -qq >"$WORK/apt.log" 2>&1 || { tail "$WORK/apt.log"; die "apt-get update failed in the root"; }
inroot env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${INSTALL[@]}" bash-completion \
  >>"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log"; die "apt could not install the package in a clean root"; }
inroot dpkg-query -W -f='   ok: installed ${Package} ${Version} (${Installed-Size} KiB)\n' batchpilot ${CUDA_DEB:+batchpilot-cuda}
ok "$(grep -c '^Unpacking' "$WORK/apt.log" || true) packages unpacked in $(($(date +%s) - start)) s"
if [[ -n "$DROP_LIB" ]]; then
  [[ -e "$ROOT/usr/lib/batchpilot/$DROP_LIB" ]] || die "--drop-lib: /usr/lib/batchpilot/$DROP_LIB is not in the package"
  $SUDO rm -f "$ROOT/usr/lib/batchpilot/$DROP_LIB"
  echo "   (--drop-lib: removed /usr/lib/batchpilot/$DROP_LIB; the checks below must now fail)"
fi

step "in the root: libraries, versions, completion"
for bin in batchpilot batchpilot-bench; do
  MISSING=$(inroot ldd /usr/bin/$bin | grep 'not found' || true)
  [[ -z "$MISSING" ]] || { sed 's/^/     /' <<<"$MISSING"; die "$bin: libraries missing in a clean root"; }
  ok "$bin: every library found ($(inroot ldd /usr/bin/$bin | grep -c '=>') loaded)"
done
VERSION=$(inroot batchpilot --version) || die "batchpilot --version failed"
BENCH_VERSION=$(inroot batchpilot-bench --version) || die "batchpilot-bench --version failed"
echo "   $VERSION / $BENCH_VERSION"
[[ "$VERSION" == batchpilot\ * ]] || die "unexpected --version output"
[[ "$BENCH_VERSION" == "batchpilot-bench ${VERSION#batchpilot }" ]] || die "batchpilot-bench --version differs"
COMPLETED=$(inroot bash -c '
  source /usr/share/bash-completion/bash_completion
  _completion_loader batchpilot
  COMP_WORDS=(batchpilot ""); COMP_CWORD=1; COMP_LINE="batchpilot "; COMP_POINT=${#COMP_LINE}
  $(complete -p batchpilot | sed -E "s/.*-F ([^ ]+).*/\1/")
  echo "${COMPREPLY[*]}"')
echo "   bash: batchpilot <TAB> -> $COMPLETED"
grep -qw import-trace <<<"$COMPLETED" || die "bash completion does not offer the subcommands"

step "in the root: batchpilot-bench profile on the CPU"
inroot batchpilot-bench profile --model builtin:tiny-decoder --device cpu --threads 1 --batches 1,4 --lengths 16 \
  --new-tokens 4 --warmup 1 --repeats 1 --json /tmp/profile.json >"$WORK/profile.log" 2>&1 \
  || { tail -20 "$WORK/profile.log"; die "batchpilot-bench profile failed in the root"; }
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); c=p["cells"]; assert len(c)==2 and all(x["tokens_per_s"]>0 for x in c), c; print("   ok: %d cells, %s" % (len(c), ", ".join("batch %d %.0f tok/s" % (x["batch"], x["tokens_per_s"]) for x in c)))' \
  "$ROOT/tmp/profile.json" || die "the profile's JSON is not what it should be"

step "in the root: headless serving, a request from outside"
DB=/tmp/t.sqlite
# Not through inroot(): a function in the background is a subshell, and the
# SIGTERM below must reach the server (chroot and env exec it, sudo relays).
$SUDO chroot "$ROOT" "${ROOT_ENV[@]}" batchpilot --headless --port 0 --model builtin:tiny-decoder --device auto --db $DB >"$WORK/out" 2>"$WORK/err" &
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
  sed 's/^/     /' "$WORK/err" >&2
  die "no 'listening on' line from batchpilot --headless"
fi
ok "listening on $URL"
grep -iE 'device|cuda' "$WORK/out" "$WORK/err" | head -3 | sed 's/^[^:]*:/   start-up: /' || true
REPLY=$(curl -sS --max-time 60 -w '\n%{http_code}' -H 'Content-Type: application/json' \
        -d '{"text": "hello batchpilot", "max_new_tokens": 5}' "$URL/v1/infer")
CODE=$(tail -1 <<<"$REPLY")
BODY=$(head -n -1 <<<"$REPLY")
echo "   POST /v1/infer -> $CODE ${BODY:0:200}"
[[ "$CODE" == 200 ]] || die "POST /v1/infer answered $CODE"
grep -q '"timing"' <<<"$BODY" || die "no timing in the answer"
kill -TERM "$SERVER_PID"
RC=0
wait "$SERVER_PID" || RC=$?
SERVER_PID=""
[[ $RC -eq 0 ]] || die "batchpilot --headless exited with $RC after SIGTERM"
ok "stopped gracefully (exit 0)"

step "in the root: the recorded session's report, the bundled sample"
inroot batchpilot sessions --db $DB | sed 's/^/   /'
for ext in pdf html json; do
  inroot batchpilot report last -o /tmp/report.$ext --db $DB | sed 's/^/   /'
done
head -c 5 "$ROOT/tmp/report.pdf" | grep -q '%PDF-' || die "report.pdf is not a PDF"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["headline"]["completed"] >= 1, d["headline"]' \
  "$ROOT/tmp/report.json" && ok "report.json counts the smoke request"
inroot batchpilot import-trace --sample --db $DB | sed 's/^/   /'
SOURCE=$(inroot batchpilot traces --json --db $DB | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["source_path"])')
[[ "$SOURCE" == /usr/share/batchpilot/traces/azure_llm_conv_2023.csv ]] || die "imported from $SOURCE"
ok "imported from $SOURCE"
inroot batchpilot replay 1 --trace --virtual --model builtin:echo --db $DB 2>/dev/null \
  | grep -E '^(replay session|requests|mean batch size)' | sed 's/^/   /'
