#!/usr/bin/env bash
# Fetches llama.cpp from a package registry, pinned: the llama.cpp source that
# PyPI's `llama-cpp-python` sdist vendors (0.3.36, llama.cpp build b1-0c1e570),
# checked against its sha256 and unpacked into a cache folder, the way
# install-torch.sh caches libtorch. Nothing is downloaded from anywhere else.
#
# What uses it:
#   - the real-server tests and benchmarks: llama.cpp's own `llama-server` is
#     the ground truth the remote calibration, simulation and tuning are
#     checked against (docs/remote.md);
#   - the CPU step's yardstick: `llama-batched-bench` on the same weights
#     (bench/, docs/benchmarks.md);
#   - `convert_hf_to_gguf.py` and `gguf-py`, which turn a Hugging Face folder
#     into the GGUF file both of those load.
#
#   install-llama-cpp.sh            fetch and unpack only (a few seconds when cached)
#   install-llama-cpp.sh --build    also build llama-server and llama-batched-bench
#                                   (CPU only; once, several minutes on 2 cores)
#   install-llama-cpp.sh --print-dir    print the unpacked llama.cpp folder and exit
#
# Idempotent: each step checks a stamp and returns at once when done.
#   BATCHPILOT_LLAMA_CPP_HOME  where to unpack (default ~/.cache/batchpilot/llama-cpp-python-0.3.36)
set -euo pipefail

VERSION=0.3.36
SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
HOME_DIR=${BATCHPILOT_LLAMA_CPP_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/batchpilot/llama-cpp-python-$VERSION}
SRC="$HOME_DIR/src/vendor/llama.cpp"
BUILD="$HOME_DIR/build"

die() { echo "install-llama-cpp: $*" >&2; exit 1; }

mode=fetch
case "${1:-}" in
"") ;;
--build) mode=build ;;
--print-dir) mode=print ;;
*) die "usage: $0 [--build|--print-dir]" ;;
esac

fetch_stamp="$HOME_DIR/.unpacked"
if [[ ! -f "$fetch_stamp" || "$(cat "$fetch_stamp")" != "$SHA256" ]]; then
  python3 -m pip --version >/dev/null 2>&1 || die "pip is missing: install python3-pip"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "install-llama-cpp: downloading llama-cpp-python $VERSION's sdist (77 MB) from PyPI" >&2
  python3 -m pip download -q --no-deps --no-binary :all: --dest "$tmp" "llama-cpp-python==$VERSION" ||
    die "could not download llama-cpp-python $VERSION from PyPI"
  file="$tmp/llama_cpp_python-$VERSION.tar.gz"
  [[ -f "$file" ]] || die "pip downloaded no llama_cpp_python-$VERSION.tar.gz"
  echo "$SHA256  $file" | sha256sum --quiet -c - || die "$(basename "$file") does not match its pinned sha256"
  rm -rf "$HOME_DIR/src"
  mkdir -p "$HOME_DIR/src"
  tar xzf "$file" -C "$HOME_DIR/src" --strip-components=1
  [[ -f "$SRC/CMakeLists.txt" ]] || die "the sdist holds no vendor/llama.cpp"
  echo "$SHA256" >"$fetch_stamp"
fi

if [[ "$mode" == print ]]; then
  echo "$SRC"
  exit 0
fi

if [[ "$mode" == build ]]; then
  build_stamp="$BUILD/.built"
  want="$SHA256 llama-server llama-batched-bench"
  if [[ ! -f "$build_stamp" || "$(cat "$build_stamp")" != "$want" ]]; then
    echo "install-llama-cpp: building llama-server and llama-batched-bench (CPU, once; a few minutes)" >&2
    start=$(date +%s)
    launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    # CPU only, no network client (the server is pointed at local files), no
    # tests or examples beyond the two tools used here.
    cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
      -DGGML_CUDA=OFF -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
      -DBUILD_SHARED_LIBS=OFF >"$HOME_DIR/configure.log" 2>&1 ||
      die "configuring llama.cpp failed; see $HOME_DIR/configure.log"
    cmake --build "$BUILD" -j"${BATCHPILOT_JOBS:-2}" --target llama-server llama-batched-bench \
      >"$HOME_DIR/build.log" 2>&1 || die "building llama.cpp failed; see $HOME_DIR/build.log"
    echo "$want" >"$build_stamp"
    echo "install-llama-cpp: built in $(($(date +%s) - start)) s: $BUILD/bin" >&2
  fi
fi
echo "install-llama-cpp: llama.cpp (llama-cpp-python $VERSION) in $SRC" >&2
