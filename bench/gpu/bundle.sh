#!/usr/bin/env bash
# Builds what the GPU check runs, here on a development machine, so that a
# bare GPU machine (an NVIDIA driver and PyPI's torch 2.11, nothing else: no
# compiler, no Qt, no .deb) runs it at once: `bench/gpu/check.sh --prebuilt DIR`
# (docs/gpu.md).
#
#   bench/gpu/bundle.sh [OUT]        OUT defaults to build/gpu-bundle
#
# OUT/bin        batchpilot-bench and the headless batchpilot (no Widgets,
#                Charts or PDF), stripped
# OUT/lib        every shared library they and the CUDA plugin load that is
#                neither libtorch, CUDA, nor the C/C++ runtime: Qt Core,
#                Network, HttpServer, WebSockets with ICU, SQLite, PCRE2,
#                utf8proc ...; stripped
# OUT/lib/batchpilot/libbatchpilot_cuda.so   the CUDA plugin (our kernels for
#                sm_90 and PTX)
# OUT/MANIFEST   what was built from which commit, against which torch
# libtorch and the CUDA libraries are not carried: the GPU machine's torch
# wheel (site-packages/torch/lib and nvidia/) provides them; check.sh points
# the loader there. OUT must stay under 60 MiB (it travels with the working
# tree to the GPU machine); the script fails past it.
#
# Costs: one headless build in BATCHPILOT_BUNDLE_BUILD (default build/bundle),
# RelWithDebInfo as the default preset, so ccache reuses the default build's
# objects; without OpenBLAS (a 35 MB library the GPU stages do not use).
set -euo pipefail
cd "$(dirname "$0")/../.."
SRC=$(pwd)
OUT=$(realpath -m "${1:-build/gpu-bundle}")
BUILD=${BATCHPILOT_BUNDLE_BUILD:-build/bundle}
LIMIT_MIB=60
die() { echo "bundle: $*" >&2; exit 1; }

export CCACHE_NOHASHDIR=true
start=$(date +%s)
# The kernels for Hopper (H100/H200: the GPU machines this bundle is for) plus
# PTX a newer GPU's driver compiles; the default three targets (sm_80, sm_90,
# sm_100) would put the bundle past its limit. BATCHPILOT_BUNDLE_ARCH overrides.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATCHPILOT_GUI=OFF -DBATCHPILOT_TESTS=OFF \
  -DTORCH_CUDA_ARCH_LIST="${BATCHPILOT_BUNDLE_ARCH:-9.0+PTX}" -DBATCHPILOT_OPENBLAS=OFF >"$BUILD.configure.log" 2>&1 || { tail -20 "$BUILD.configure.log"; die "configure failed"; }
grep -q 'CUDA kernels: ON' "$BUILD.configure.log" || die "this libtorch or toolkit gives no CUDA kernels (see $BUILD.configure.log)"
targets=(batchpilot batchpilot-bench)
ninja -C "$BUILD" -t targets all 2>/dev/null | grep -q '^batchpilot_cuda:' && targets+=(batchpilot_cuda)
cmake --build "$BUILD" -j"${JOBS:-2}" --target "${targets[@]}"

PLUGIN=$(find "$BUILD" -name 'libbatchpilot_cuda.so' -type f | head -1)
[[ -n "$PLUGIN" ]] || die "the CUDA plugin libbatchpilot_cuda.so was not built"
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib/batchpilot"
cp "$BUILD/bench/batchpilot-bench" "$BUILD/app/batchpilot" "$OUT/bin/" 2>/dev/null ||
  cp "$BUILD/bench/batchpilot-bench" "$(find "$BUILD" -name batchpilot -type f -perm -u+x | head -1)" "$OUT/bin/"
cp "$PLUGIN" "$OUT/lib/batchpilot/"

# Every library the three load, resolved here, less what the GPU machine has:
# libtorch (its torch wheel), CUDA (the wheel's nvidia/ packages and the
# driver), and the C and C++ runtime.
TORCH_LIB=$(grep -o 'libtorch [^ ]* at [^;]*' "$BUILD.configure.log" | head -1 | sed 's/.* at //; s#/share/cmake/Torch##')/lib
[[ -d "$TORCH_LIB" ]] || TORCH_LIB=${XDG_CACHE_HOME:-$HOME/.cache}/batchpilot/torch-2.11.0/site/torch/lib
skip='^(libtorch|libc10|libgomp|libcuda|libcudart|libcupti|libcublas|libcudnn|libnccl|libcusparse|libcufft|libcurand|libcufile|libnvJitLink|libnvrtc|libnvshmem|libcusolver|libnvToolsExt|libcaffe2|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|ld-linux|libutil|libresolv|libgcc_s|libstdc\+\+|linux-vdso)'
for f in "$OUT/bin/batchpilot-bench" "$OUT/bin/batchpilot" "$OUT/lib/batchpilot/libbatchpilot_cuda.so"; do
  LD_LIBRARY_PATH="$TORCH_LIB" ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] && continue
  cp -L "$path" "$OUT/lib/$name"
done
missing=$(for f in "$OUT/bin/"* "$OUT/lib/batchpilot/"*; do LD_LIBRARY_PATH="$OUT/lib:$TORCH_LIB" ldd "$f"; done |
  grep 'not found' | sort -u || true)
[[ -z "$missing" ]] || die "libraries not found here: $missing"
chmod u+w "$OUT"/bin/* "$OUT"/lib/*.so* "$OUT"/lib/batchpilot/*
strip --strip-unneeded "$OUT"/bin/* "$OUT"/lib/*.so* "$OUT"/lib/batchpilot/*

{
  echo "BatchPilot GPU bundle"
  echo "commit   $(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$SRC" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built    $(date -u +%FT%TZ) on $(hostname)"
  echo "torch    $(grep -o 'libtorch [^ ]*' "$BUILD.configure.log" | head -1)"
  echo "arch     $(grep -m1 -o 'TORCH_CUDA_ARCH_LIST[^)]*' "$BUILD/CMakeCache.txt" | head -1 || echo default)"
  echo "files"
  (cd "$OUT" && find . -type f ! -name MANIFEST -printf '  %P  %s\n' | sort)
} >"$OUT/MANIFEST"
size_kib=$(du -sk "$OUT" | cut -f1)
echo "bundle: $OUT: $((size_kib / 1024)) MiB ($(find "$OUT" -type f | wc -l) files) in $(($(date +%s) - start)) s"
du -sh "$OUT"/bin/* "$OUT"/lib/batchpilot/* | sed 's/^/  /'
echo "  $(du -sh "$OUT/lib" --exclude=batchpilot | cut -f1)	$OUT/lib ($(ls "$OUT/lib" | grep -c '\.so') libraries)"
((size_kib <= LIMIT_MIB * 1024)) || die "the bundle is $((size_kib / 1024)) MiB, over its $LIMIT_MIB MiB limit"
