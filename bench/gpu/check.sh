#!/usr/bin/env bash
# The GPU check (docs/gpu.md): a fixed set of figures on the first GPU, each
# stage under its own time limit, all within one budget (default 360 s,
# counted from the first stage), so that the whole check fits one short loan
# of a GPU machine, its start included.
#
#   bench/gpu/check.sh --prebuilt DIR [OUT] [--device cuda|cpu] [--no-llama]
#   bench/gpu/check.sh [OUT] [--no-llama]          builds here first (needs a
#                                                  compiler, CMake, SQLite headers)
#
# --prebuilt DIR runs what bench/gpu/bundle.sh built on a development machine:
# the machine needs only an NVIDIA driver and PyPI's torch 2.11, whose lib/
# (and nvidia/ packages) provide libtorch and CUDA; no compiler, .deb or Qt.
# --device cpu walks every stage on the CPU with small shapes (what a
# development machine can check: everything but the GPU itself).
#
# Stages, with their limits (seconds; on an H100/H200 most end well before):
#   device-check   45  the paged-attention ops and tokens against the CPU
#   bandwidth      20  the device's copy bandwidth (the floor of a memory-bound step)
#   profile-bf16   45  tiny-decoder --preset gpt2, bf16, batch 1..128, 128-token
#                      prompts, 64 new tokens: the decode step and the offline ceiling
#   llama-profile  50  Llama-3-8B's shape, bf16, random weights: the step at batch 1, 8, 64
#   load           60  none, dynamic (16, 64, 128), continuous at 1/3, 2/3, 1 of the
#                      ceiling's rate; goodput at TTFT <= 500 ms, TPOT <= 50 ms
#   llama-load     50  dynamic@64 vs continuous at 1/2, 1, 3/2 of the Llama ceiling
#   fidelity       40  the simulator against real replays on this device
#   saturation     20  continuous at 1.5x the ceiling: served / offline
#   profile-fp32   20  the gpt2 preset in float32 (batch 1, 8, 64)
#   hf-baseline    30  transformers generate() on GPT-2's shape, when transformers is
#                      installed (last: the figure it gives is a comparison, not a target)
# Writes OUT/summary.txt, OUT/summary.json and every stage's JSON and log.
#   BATCHPILOT_CHECK_BUDGET_S=S  stop starting stages after S seconds (default 360)
#   BATCHPILOT_DEBS=DIR          (build mode) .deb files to unpack when the system lacks
#                                libsqlite3-dev / nlohmann-json3-dev
#   BATCHPILOT_GPU_BUILD=DIR     (build mode) the build folder (default build/gpu)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=gpu-check
PREBUILT=""
DEVICE=cuda
NO_LLAMA=0
while [[ $# -gt 0 ]]; do
  case "$1" in
  --prebuilt) PREBUILT=${2:?--prebuilt needs the bundle folder}; shift 2 ;;
  --device) DEVICE=${2:?--device needs cuda or cpu}; shift 2 ;;
  --no-llama) NO_LLAMA=1; shift ;;
  -*) echo "usage: $0 [--prebuilt DIR] [OUT] [--device cuda|cpu] [--no-llama]" >&2; exit 2 ;;
  *) OUT=$1; shift ;;
  esac
done
[[ "$DEVICE" == cuda || "$DEVICE" == cpu ]] || { echo "check: --device is cuda or cpu" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
BUDGET=${BATCHPILOT_CHECK_BUDGET_S:-360}
BEGIN=""
say() { echo "[$(date +%T)] $*" | tee -a "$SUMMARY"; }
# stage NAME LIMIT_S COMMAND...: runs it with its output in OUT/NAME.log, for
# at most LIMIT_S seconds and never past the budget (which starts at the
# first stage: setting up the machine is not the check's time)
stage() {
  local name=$1 limit=$2
  shift 2
  local start=$(date +%s)
  [[ -n "$BEGIN" ]] || BEGIN=$start
  local left=$((BUDGET - (start - BEGIN)))
  if ((left < 10)); then
    say "$name: skipped, the budget is spent"
    return 99
  fi
  ((limit > left)) && limit=$left
  say "$name: start (limit ${limit} s)"
  timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  say "$name: exit $rc after $(($(date +%s) - start)) s"
  tail -n 25 "$OUT/$name.log" | sed "s/^/  $name| /"
  return $rc
}

PY=${PYTHON:-python3}
if [[ "$DEVICE" == cuda ]]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv >"$OUT/gpu.csv" 2>&1
  say "GPU: $(tail -n 1 "$OUT/gpu.csv")"
else
  say "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores (--device cpu: small shapes)"
fi

if [[ -n "$PREBUILT" ]]; then
  # --- prebuilt: the bundle's binaries on this machine's torch ------------------
  DIR=$(cd "$PREBUILT" && pwd) || { say "no bundle at $PREBUILT"; exit 1; }
  B="$DIR/bin/batchpilot-bench"
  [[ -x "$B" ]] || { say "$B is missing: run bench/gpu/bundle.sh on a development machine"; exit 1; }
  TORCH_LIB=${BATCHPILOT_TORCH_LIB:-$($PY -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)}
  if [[ -z "$TORCH_LIB" ]]; then # a development machine: the wheel install-torch.sh unpacked
    TORCH_LIB=${XDG_CACHE_HOME:-$HOME/.cache}/batchpilot/torch-2.11.0/site/torch/lib
  fi
  [[ -f "$TORCH_LIB/libtorch_cpu.so" ]] || { say "no libtorch in '$TORCH_LIB' (set BATCHPILOT_TORCH_LIB)"; exit 1; }
  # libtorch's own libraries find CUDA through their RUNPATH (../../nvidia/*/lib);
  # the plugin links the CUDA runtime directly, so the loader gets those folders too.
  NV=$(ls -d "$TORCH_LIB"/../../nvidia/*/lib 2>/dev/null | paste -sd: -)
  export LD_LIBRARY_PATH="$DIR/lib:$TORCH_LIB${NV:+:$NV}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export BATCHPILOT_CUDA_PLUGIN="$DIR/lib/batchpilot/libbatchpilot_cuda.so"
  say "prebuilt: $(sed -n 2p "$DIR/MANIFEST" 2>/dev/null); torch lib $TORCH_LIB"
  "$B" --version >/dev/null || { say "the bundle's batchpilot-bench does not start here"; exit 1; }
else
  # --- build here (a machine with a compiler and CMake) ---------------------------
  TORCH_PREFIX=$($PY -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') || {
    say "no python torch: cannot build"; exit 1; }
  BUILD=${BATCHPILOT_GPU_BUILD:-build/gpu}
  PREFIXES="$TORCH_PREFIX"
  EXTRA=()
  if [[ -n "${BATCHPILOT_DEBS:-}" && -d "$BATCHPILOT_DEBS" ]]; then
    ROOT=/tmp/batchpilot-debs
    mkdir -p "$ROOT"
    for f in "$BATCHPILOT_DEBS"/*.deb; do dpkg -x "$f" "$ROOT"; done
    PREFIXES="$PREFIXES;$ROOT/usr"
    EXTRA+=(-DSQLite3_INCLUDE_DIR="$ROOT/usr/include"
            -DSQLite3_LIBRARY="$(ls "$ROOT"/usr/lib/x86_64-linux-gnu/libsqlite3.so | head -1)")
    export LD_LIBRARY_PATH="$ROOT/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  say "building in $BUILD (not counted in the budget)"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBATCHPILOT_CONSOLE=OFF -DBATCHPILOT_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PREFIXES" "${EXTRA[@]}" >"$OUT/configure.log" 2>&1 || { say "configure failed"; exit 1; }
  cmake --build "$BUILD" -j "$(nproc)" >"$OUT/build.log" 2>&1 || { say "build failed"; exit 1; }
  B="$BUILD/bench/batchpilot-bench"
  TORCH_LIB="$TORCH_PREFIX"
fi
say "torch: $TORCH_LIB${PREBUILT:+ (prebuilt bundle)}"

# --- the shapes: a GPU's, or small ones that walk every stage on a CPU -------------
if [[ "$DEVICE" == cuda ]]; then
  TINY=(--model builtin:tiny-decoder --preset gpt2 --device cuda)
  BATCHES=1,2,4,8,16,32,64,128; LEN=128; NEW=64; DTYPE=bfloat16; SLO="ttft=500ms,tpot=50ms"
  LLAMA=(--model hf-config:resources/configs/hf/llama-3-8b/config.json --device cuda --dtype bfloat16)
  LLAMA_BATCHES=1,8,64; MIB=2048; DURATION=2
else
  # Small enough that a loaded 2-core machine ends every stage in its limit:
  # the point here is to walk the stages and the summary, not the figures.
  TINY=(--model builtin:tiny-decoder --preset small --device cpu)
  BATCHES=1,4,16; LEN=32; NEW=8; DTYPE=float32; SLO="ttft=2s,tpot=500ms"
  LLAMA=(--model hf:tests/fixtures/hf/llama --device cpu --dtype float32)
  LLAMA_BATCHES=1,4; MIB=256; DURATION=1
fi
# The load stages' rates (fractions of the ceiling) and the fidelity replays.
if [[ "$DEVICE" == cuda ]]; then
  LOAD_FACTORS=(0.3333 0.6667 1); LLAMA_FACTORS=(0.5 1 1.5); FIDELITY=(--seconds 2)
else
  LOAD_FACTORS=(0.5); LLAMA_FACTORS=(0.5); FIDELITY=(--preset test --seconds 1 --configs 2)
fi

# --- correctness first ---------------------------------------------------------------
stage device-check 45 "$B" device-check --device "$DEVICE" --json "$OUT/device_check.json"
stage bandwidth 20 "$B" bandwidth --device "$DEVICE" --mib "$MIB" --repeats 10 --json "$OUT/bandwidth.json"

# --- the ceiling -----------------------------------------------------------------------
profile() { # profile NAME LIMIT DTYPE BATCHES
  stage "profile-$1" "$2" "$B" profile "${TINY[@]}" --dtype "$3" --batches "$4" --lengths "$LEN" --new-tokens "$NEW" \
    --warmup 1 --repeats 2 --quiet --json "$OUT/profile_$3.json"
}
profile bf16 45 "$DTYPE" "$BATCHES"
if ((NO_LLAMA == 0)); then
  stage llama-profile 50 "$B" profile "${LLAMA[@]}" --batches "$LLAMA_BATCHES" --lengths "$LEN" --new-tokens "$NEW" \
    --warmup 1 --repeats 1 --quiet --json "$OUT/llama_profile.json"
fi

# --- serving: goodput at the SLO, and served / offline at saturation ---------------------
rates() { # rates PROFILE_JSON NEW FACTORS...: requests/s at those fractions of the profile's ceiling
  $PY - "$@" <<'EOF'
import json, sys
try:
    p = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(0)
best = max(c["tokens_per_s"] for c in p["cells"]) / float(sys.argv[2])
print(",".join(str(max(0.1, round(best * float(f), 1))) for f in sys.argv[3:]))
EOF
}
RATE_LIST=$(rates "$OUT/profile_$DTYPE.json" "$NEW" "${LOAD_FACTORS[@]}")
RATE_SAT=$(rates "$OUT/profile_$DTYPE.json" "$NEW" 1.5)
say "profile ceiling rates: load ${RATE_LIST:-?} req/s, saturation ${RATE_SAT:-?}"
for n in 16 64 128; do
  echo "{\"policy\": \"dynamic\", \"max_batch_size\": $n, \"max_queue_delay_us\": 5000, \"queue_capacity\": 100000}" \
    >"$OUT/dynamic-$n.json"
done
LOAD_COMMON=("${TINY[@]}" --dtype "$DTYPE" --length "$LEN" --max-new-tokens "$NEW" --slo "$SLO" --warmup 1
  --duration "$DURATION" --drain 2 --queue 100000 --ceiling "$OUT/profile_$DTYPE.json" --max-num-seqs 256
  --max-num-batched-tokens 2048 --prefill-chunk 512)
if [[ -n "$RATE_LIST" ]]; then
  stage load 60 "$B" load "${LOAD_COMMON[@]}" \
    --compare none,"$OUT/dynamic-16.json","$OUT/dynamic-64.json","$OUT/dynamic-128.json",continuous \
    --rates "$RATE_LIST" --rates-none "$(echo "$RATE_LIST" | cut -d, -f1)" --json "$OUT/load.json"
fi
if ((NO_LLAMA == 0)); then
  LRATES=$(rates "$OUT/llama_profile.json" "$NEW" "${LLAMA_FACTORS[@]}")
  if [[ -n "$LRATES" ]]; then
    say "llama load rates $LRATES"
    stage llama-load 50 "$B" load "${LLAMA[@]}" --length "$LEN" --max-new-tokens "$NEW" \
      --slo "$([[ $DEVICE == cuda ]] && echo ttft=1s,tpot=50ms || echo ttft=5s,tpot=2s)" --warmup 1 \
      --duration "$DURATION" --drain 2 --queue 100000 --ceiling "$OUT/llama_profile.json" --max-num-seqs 256 \
      --max-num-batched-tokens 2048 --prefill-chunk 512 \
      --compare "$OUT/dynamic-64.json",continuous --rates "$LRATES" --json "$OUT/llama_load.json"
  else
    say "llama-load: skipped, no ceiling (llama-profile gave no JSON)"
  fi
fi

# --- the simulator on this device, saturation, float32 ----------------------------------
stage fidelity 40 "$B" fidelity "${TINY[@]}" "${FIDELITY[@]}" --json "$OUT/fidelity.json"
if [[ -n "$RATE_SAT" ]]; then
  stage saturation 20 "$B" load "${LOAD_COMMON[@]}" --compare continuous --rates "$RATE_SAT" \
    --json "$OUT/saturation.json"
fi
if [[ "$DEVICE" == cuda ]]; then
  stage profile-fp32 20 "$B" profile "${TINY[@]}" --dtype float32 --batches 1,8,64 --lengths "$LEN" --new-tokens "$NEW" \
    --warmup 1 --repeats 1 --quiet --json "$OUT/profile_float32.json"
  if $PY -c 'import transformers' 2>/dev/null; then
    stage hf-baseline 30 $PY tools/hf_generate_baseline.py --batch 128 --prompt 128 --new 64 \
      --dtypes bfloat16 --json "$OUT/hf_baseline.json"
  else
    say "hf-baseline: transformers not installed, skipped"
  fi
fi

say "stages took $(($(date +%s) - ${BEGIN:-$(date +%s)})) s of a $BUDGET s budget"
$PY tools/gpu_check_summary.py "$OUT" | tee -a "$SUMMARY"
say "done"
