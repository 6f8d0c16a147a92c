#!/usr/bin/env bash
# The GPU check (docs/gpu.md): on a machine with an NVIDIA GPU and a CUDA
# libtorch (python3's torch), builds the engine and batchpilot-bench (engine
# only: such a box may have no Qt) and runs a fixed set of figures on the
# first GPU, about 8 minutes in all, each stage under its own time limit:
#
#   device-check   the paged-attention ops and tokens against the CPU
#   profile        tiny-decoder --preset gpt2, bf16 (and fp32 last), batch 1..128,
#                  prompts of 128 tokens, 64 new tokens: the decode step and
#                  the offline ceiling
#   hf-baseline    transformers generate() on GPT-2's shape, same batch and
#                  lengths (tools/hf_generate_baseline.py), when transformers
#                  is installed
#   load           none, dynamic (max_batch_size 16, 64, 128) and continuous
#                  at 1/3, 2/3 and 1 of the bf16 ceiling's request rate, goodput at
#                  TTFT <= 500 ms and TPOT <= 50 ms; then continuous at 1.5x
#                  the ceiling: served / offline
#   fidelity       the simulator against real replays on the GPU
#   llama8b        Llama-3-8B's shape (resources/configs/hf/llama-3-8b), bf16,
#                  random weights: the decode step at batch 1, 8, 64, then dynamic
#                  vs continuous at TTFT <= 1 s and TPOT <= 50 ms (--no-llama skips)
#
# Writes OUT/summary.txt, OUT/summary.json and every stage's JSON and log.
# Usage: bench/gpu/check.sh [OUT] [--no-llama] (OUT defaults to gpu-check)
#   BATCHPILOT_DEBS=DIR  .deb files to unpack (dpkg -x) when the system lacks
#                        libsqlite3-dev / nlohmann-json3-dev (a bare GPU image)
#   BATCHPILOT_GPU_BUILD=DIR  the build folder (default build/gpu)
#   BATCHPILOT_CHECK_BUDGET_S=S  stop starting stages after S seconds (default 540):
#                        a stage never runs past the budget, so the run ends on time
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=gpu-check
for a in "$@"; do [[ "$a" == --* ]] || OUT=$a; done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${BATCHPILOT_GPU_BUILD:-build/gpu}
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
BEGIN=$(date +%s)
BUDGET=${BATCHPILOT_CHECK_BUDGET_S:-540}
say() { echo "[$(date +%T)] $*" | tee -a "$SUMMARY"; }
# stage NAME LIMIT_S COMMAND...: runs it with its output in OUT/NAME.log,
# for at most LIMIT_S seconds and never past the budget
stage() {
  local name=$1 limit=$2
  shift 2
  local start=$(date +%s)
  local left=$((BUDGET - (start - BEGIN)))
  if ((left < 15)); then
    say "$name: skipped, the budget is spent"
    return 99
  fi
  ((limit > left)) && limit=$left
  say "$name: start (limit ${limit} s)"
  timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  say "$name: exit $rc after $(($(date +%s) - start)) s"
  tail -n 40 "$OUT/$name.log" | sed "s/^/  $name| /"
  return $rc
}

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv >"$OUT/gpu.csv" 2>&1
say "GPU: $(tail -n 1 "$OUT/gpu.csv")"
PY=${PYTHON:-python3}
TORCH_PREFIX=$($PY -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') || {
  say "no python torch: cannot build"; exit 1; }
say "torch $($PY -c 'import torch; print(torch.__version__, torch.version.cuda)')"

# --- build -------------------------------------------------------------------
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
stage configure 120 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBATCHPILOT_CONSOLE=OFF \
  -DBATCHPILOT_TESTS=OFF -DCMAKE_PREFIX_PATH="$PREFIXES" "${EXTRA[@]}" || exit 1
stage build 300 cmake --build "$BUILD" -j "$(nproc)" --target batchpilot-bench || exit 1
B="$BUILD/bench/batchpilot-bench"

# --- correctness first ---------------------------------------------------------
stage device-check 120 "$B" device-check --device cuda --json "$OUT/device_check.json"

# --- the ceiling -----------------------------------------------------------------
profile() { # profile DTYPE
  stage "profile-$1" 150 "$B" profile --model builtin:tiny-decoder --preset gpt2 --device cuda \
    --dtype "$1" --batches 1,2,4,8,16,32,64,128 --lengths 128 --new-tokens 64 --warmup 1 --repeats 3 \
    --quiet --json "$OUT/profile_$1.json"
}
profile bfloat16
if $PY -c 'import transformers' 2>/dev/null; then
  stage hf-baseline 120 $PY tools/hf_generate_baseline.py --batch 128 --prompt 128 --new 64 \
    --dtypes bfloat16 --json "$OUT/hf_baseline.json"
else
  say "hf-baseline: transformers not installed, skipped"
fi

# --- serving: goodput at the SLO, and served / offline at saturation -------------
RATES=$($PY - "$OUT/profile_bfloat16.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
best = max(c["tokens_per_s"] for c in p["cells"]) / p["new_tokens"]  # requests/s at the ceiling
print(",".join(str(round(best * f, 1)) for f in (1 / 3, 2 / 3, 1.0)), round(best * 1.5, 1), round(best, 1))
EOF
)
read -r RATE_LIST RATE_SAT CEIL_RPS <<<"$RATES"
say "profile ceiling ${CEIL_RPS:-?} req/s; load rates ${RATE_LIST:-?}; saturation ${RATE_SAT:-?}"
for n in 16 64 128; do
  echo "{\"policy\": \"dynamic\", \"max_batch_size\": $n, \"max_queue_delay_us\": 5000, \"queue_capacity\": 100000}" \
    >"$OUT/dynamic-$n.json"
done
LOAD_COMMON=(--model builtin:tiny-decoder --preset gpt2 --device cuda --dtype bfloat16 --length 128
  --max-new-tokens 64 --slo ttft=500ms,tpot=50ms --warmup 1 --duration 3 --drain 3 --queue 100000
  --ceiling "$OUT/profile_bfloat16.json" --max-num-seqs 256 --max-num-batched-tokens 2048 --prefill-chunk 512)
if [[ -n "${RATE_LIST:-}" ]]; then
  stage load 300 "$B" load "${LOAD_COMMON[@]}" \
    --compare none,"$OUT/dynamic-16.json","$OUT/dynamic-64.json","$OUT/dynamic-128.json",continuous \
    --rates "$RATE_LIST" --rates-none "$(echo "$RATE_LIST" | cut -d, -f1)" --json "$OUT/load.json"
  stage saturation 120 "$B" load "${LOAD_COMMON[@]}" --compare continuous --rates "$RATE_SAT" \
    --json "$OUT/saturation.json"
fi

# --- the simulator on this GPU ----------------------------------------------------
stage fidelity 150 "$B" fidelity --model builtin:tiny-decoder --preset gpt2 --device cuda --seconds 2 \
  --json "$OUT/fidelity.json"
# --- Llama-3-8B's shape, bf16, random weights (issue 36) ---------------------------
# The decode step at batch 1 and 64 (and 8), then dynamic (max_batch_size 64) vs
# continuous at 1/2, 1 and 1.5 of that profile's ceiling, goodput at TTFT <= 1 s and
# TPOT <= 50 ms. Skipped with --no-llama.
if [[ " $* " != *" --no-llama "* ]]; then
  LLAMA=(--model hf-config:resources/configs/hf/llama-3-8b/config.json --device cuda --dtype bfloat16)
  stage llama-profile 120 "$B" profile "${LLAMA[@]}" --batches 1,8,64 --lengths 128 --new-tokens 64 \
    --warmup 1 --repeats 2 --quiet --json "$OUT/llama_profile.json"
  LRATES=$($PY - "$OUT/llama_profile.json" <<'EOF2'
import json, sys
p = json.load(open(sys.argv[1]))
best = max(c["tokens_per_s"] for c in p["cells"]) / 64  # requests/s of 64 new tokens at the ceiling
print(",".join(str(round(best * f, 1)) for f in (0.5, 1.0, 1.5)))
EOF2
  )
  if [[ -n "$LRATES" ]]; then
    say "llama8b load rates $LRATES"
    stage llama-load 150 "$B" load "${LLAMA[@]}" --length 128 --max-new-tokens 64 \
      --slo ttft=1s,tpot=50ms --warmup 1 --duration 3 --drain 3 --queue 100000 \
      --ceiling "$OUT/llama_profile.json" --max-num-seqs 256 --max-num-batched-tokens 2048 --prefill-chunk 512 \
      --compare "$OUT/dynamic-64.json",continuous --rates "$LRATES" --json "$OUT/llama_load.json"
  fi
fi

profile float32


$PY tools/gpu_check_summary.py "$OUT" | tee -a "$SUMMARY"
say "done"
