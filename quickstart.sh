#!/usr/bin/env bash
# BatchPilot quick start on Debian 12.
#   ./quickstart.sh run    install what is missing, build, launch the console
#   ./quickstart.sh test   install what is missing, build, run the whole test
#                          suite (the default preset), build the headless
#                          server (no Widgets/Charts), check the lock
#                          discipline (clang -Wthread-safety), run the
#                          engine's tests under ThreadSanitizer, then build
#                          the two .deb packages and install them in a clean
#                          Debian 12 root (packaging/check-deb.sh)
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-run}
shift || true

./packaging/install-deps.sh

# ccache: key objects without the build folder's path, so that the headless
# build below (build/headless) reuses the engine objects of build/default
# (the same sources and flags) instead of compiling them again.
export CCACHE_NOHASHDIR=true

case "$mode" in
run)
  cmake --workflow --preset default
  exec ./build/default/app/batchpilot "$@"
  ;;
test)
  ./packaging/install-llama-cpp.sh --build # llama-server for tests/integration llamacpp_server_* (~8 min once)
  cmake --workflow --preset test
  echo "== The headless server for a GPU box without a desktop (no Widgets, Charts or PDF) =="
  cmake --preset headless -DBATCHPILOT_TESTS=ON
  cmake --build build/headless -j2 --target batchpilot test_headless_build
  ctest --test-dir build/headless -R test_headless_build --output-on-failure
  echo "== Lock discipline: clang -Wthread-safety over the engine =="
  cmake --workflow --preset thread-safety
  echo "== ThreadSanitizer: engine and its tests =="
  cmake --workflow --preset tsan
  echo "== The .deb packages, installed and run in a clean Debian 12 root (~10 min) =="
  ./packaging/check-deb.sh build/default
  ;;
*)
  echo "usage: $0 run|test [batchpilot options]" >&2
  exit 2
  ;;
esac
