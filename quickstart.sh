#!/usr/bin/env bash
# BatchPilot quick start on Debian 12.
#   ./quickstart.sh run    install what is missing, build, launch the console
#   ./quickstart.sh test   install what is missing, build, run the whole test
#                          suite (the default preset), check the lock
#                          discipline (clang -Wthread-safety), then run the
#                          engine's tests under ThreadSanitizer
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-run}
shift || true

./packaging/install-deps.sh

case "$mode" in
run)
  cmake --workflow --preset default
  exec ./build/default/app/batchpilot "$@"
  ;;
test)
  cmake --workflow --preset test
  echo "== Lock discipline: clang -Wthread-safety over the engine =="
  cmake --workflow --preset thread-safety
  echo "== ThreadSanitizer: engine and its tests =="
  cmake --workflow --preset tsan
  ;;
*)
  echo "usage: $0 run|test [batchpilot options]" >&2
  exit 2
  ;;
esac
