#!/usr/bin/env bash
# BatchPilot quick start on Debian 12.
#   ./quickstart.sh run    install what is missing, build, launch the console
#   ./quickstart.sh test   install what is missing, build, run the whole test
#                          suite (the default preset), build the headless
#                          server (no Widgets/Charts), check the lock
#                          discipline (clang -Wthread-safety), run the
#                          engine's threaded suites under ThreadSanitizer
#                          (tests/CMakeLists.txt names them), then build
#                          the two .deb packages and install them in a clean
#                          Debian 12 root (packaging/check-deb.sh)
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-run}
shift || true

# Each phase's wall time, printed as it ends and as a table at the end (also
# when a phase fails), so that a slow or cut-off CI run says where its time
# went.
PHASES=()
phase_name=""
phase_start=$SECONDS
phase() {
  if [[ -n "$phase_name" ]]; then
    PHASES+=("$(printf '%6d s  %s' $((SECONDS - phase_start)) "$phase_name")")
    printf '== [%d s] done: %s (%d s)\n' "$SECONDS" "$phase_name" $((SECONDS - phase_start))
  fi
  phase_name=$1
  phase_start=$SECONDS
  [[ -z "$phase_name" ]] || printf '== [%d s] %s\n' "$SECONDS" "$phase_name"
}
timings() {
  local rc=$?
  [[ ${#PHASES[@]} -gt 0 || -n "$phase_name" ]] || return 0
  [[ -z "$phase_name" ]] || PHASES+=("$(printf '%6d s  %s (%s)' $((SECONDS - phase_start)) "$phase_name" \
    "$([[ $rc -eq 0 ]] && echo ended || echo "failed, exit $rc")")")
  printf '\n== quickstart.sh %s: wall time by phase (%d s in all)\n' "$mode" "$SECONDS"
  printf '%s\n' "${PHASES[@]}"
}

phase "install what is missing (packaging/install-deps.sh)"
./packaging/install-deps.sh

# ccache: key objects without the build folder's path, so that the headless
# build below (build/headless) reuses the engine objects of build/default
# (the same sources and flags) instead of compiling them again.
export CCACHE_NOHASHDIR=true

case "$mode" in
run)
  phase "build (cmake --workflow --preset default)"
  cmake --workflow --preset default
  phase ""
  exec ./build/default/app/batchpilot "$@"
  ;;
test)
  trap timings EXIT
  phase "llama-server for tests/integration llamacpp_server_* (packaging/install-llama-cpp.sh --build, 8-13 min once)"
  ./packaging/install-llama-cpp.sh --build
  phase "build and run the whole suite (cmake --workflow --preset test)"
  cmake --workflow --preset test
  phase "the headless server for a GPU box without a desktop (no Widgets, Charts or PDF)"
  cmake --preset headless -DBATCHPILOT_TESTS=ON
  cmake --build build/headless -j2 --target batchpilot test_headless_build
  ctest --test-dir build/headless -R test_headless_build --output-on-failure
  phase "lock discipline: clang -Wthread-safety over the engine's locks"
  cmake --workflow --preset thread-safety
  phase "ThreadSanitizer: the engine's threaded suites"
  cmake --workflow --preset tsan
  phase "the .deb packages, installed and run in a clean Debian 12 root (gzip-packed, ~5 min)"
  ./packaging/check-deb.sh build/default --fast-pack
  phase ""
  ;;
*)
  echo "usage: $0 run|test [batchpilot options]" >&2
  exit 2
  ;;
esac
