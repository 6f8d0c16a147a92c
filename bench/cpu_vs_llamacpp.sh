#!/usr/bin/env bash
# BatchPilot's CPU step against llama.cpp on the same weights (docs/benchmarks.md,
# "The CPU step against llama.cpp on the same weights").
#
# COST: per round (default 1 round) about 1 minute on 2 quiet cores (3 rounds
# with a baseline took 162 s), up to ~6 on a busy machine; the first run a few
# more to make the checkpoint and its GGUFs (and, when no Python with
# torch + transformers is given, a venv with PyPI's CPU torch: ~1 GB download).
# Disk: ~0.8 GB in the cache folder (the f32 checkpoint 323 MB, GGUF f32 326 MB,
# GGUF f16 165 MB).
#
#   bench/cpu_vs_llamacpp.sh [OUT_DIR]      (default cpu-vs-llamacpp/)
#
# What it does, all in one run so that the ratios share the machine's load:
#   1. llama.cpp from packaging/install-llama-cpp.sh --build (the pinned build
#      the real-server tests use; built once);
#   2. the checkpoint: Qwen2 architecture, 80.6 M parameters, random weights,
#      float32, vocabulary 151,936, 4 layers, hidden 256 (cpu/make_checkpoint.py,
#      transformers), and its GGUF f32 and f16 (cpu/convert_gguf.py, llama.cpp's
#      convert_hf_to_gguf.py); made once into the cache folder;
#   3. per round: the uptime, `batchpilot-bench bandwidth` (copy bandwidth),
#      `batchpilot-bench profile` (f32: batch 1, 4, 16 x prompt 128 and 1,024,
#      32 new tokens; bf16: batch 1, 16 x 128) and llama-batched-bench on the
#      same grid (f32, and f16 for the bf16 comparison), 2 threads each;
#   4. the ratios (cpu/summarize.py): decode tok/s and prefill tok/s, BatchPilot
#      over llama.cpp (medians over rounds), and the batch-1 decode step against
#      the time to read its weights once at the measured bandwidth.
#
# Environment:
#   BATCHPILOT_BENCH           the batchpilot-bench binary (default build/default/bench/batchpilot-bench)
#   BATCHPILOT_BENCH_PYTHON    a python with torch, transformers, safetensors, numpy
#                              (default: a venv made in the cache folder)
#   BATCHPILOT_CPU_BENCH_CACHE the cache folder (default ~/.cache/batchpilot/cpu-bench)
#   BATCHPILOT_ROUNDS          rounds (default 1); ratios use the medians over rounds
#   BATCHPILOT_THREADS         threads for both engines (default 2)
#   BATCHPILOT_LONG            0 skips the 1,024-token context (default 1)
#   BATCHPILOT_BENCH_BASELINE  a second batchpilot-bench (say, an older build) profiled on the
#                              f32 grids in the same rounds: before/after in one run
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-cpu-vs-llamacpp}
CACHE=${BATCHPILOT_CPU_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/batchpilot/cpu-bench}
BENCH=${BATCHPILOT_BENCH:-build/default/bench/batchpilot-bench}
ROUNDS=${BATCHPILOT_ROUNDS:-1}
THREADS=${BATCHPILOT_THREADS:-2}
LONG=${BATCHPILOT_LONG:-1}
die() { echo "cpu_vs_llamacpp: $*" >&2; exit 1; }

echo "cpu_vs_llamacpp: cost ~1 min per round on 2 quiet cores (up to ~6 busy) ($ROUNDS round(s)), ~0.8 GB in $CACHE" >&2
[[ -x "$BENCH" ]] || die "$BENCH is missing: build the batchpilot-bench target (or set BATCHPILOT_BENCH)"

packaging/install-llama-cpp.sh --build
SRC=$(packaging/install-llama-cpp.sh --print-dir 2>/dev/null)
BIN="$(cd "$SRC/../../.." && pwd)/build/bin"
LBB="$BIN/llama-batched-bench"
[[ -x "$LBB" ]] || die "no llama-batched-bench in $BIN"

mkdir -p "$CACHE" "$OUT"
PY=${BATCHPILOT_BENCH_PYTHON:-}
if [[ -z "$PY" ]]; then
  VENV="$CACHE/venv"
  if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'import torch, transformers, safetensors, numpy' 2>/dev/null; then
    echo "cpu_vs_llamacpp: making $VENV (PyPI: torch (CPU), transformers, safetensors, numpy)" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --index-url https://download.pytorch.org/whl/cpu torch
    "$VENV/bin/pip" install -q transformers safetensors numpy
  fi
  PY="$VENV/bin/python"
fi

CKPT="$CACHE/qwen2-80m"
if [[ ! -f "$CKPT/.made" ]]; then
  rm -rf "$CKPT"
  "$PY" bench/cpu/make_checkpoint.py "$CKPT"
  touch "$CKPT/.made"
fi
for t in f32 f16; do
  if [[ ! -f "$CKPT/model-$t.gguf" ]]; then
    "$PY" bench/cpu/convert_gguf.py "$SRC" "$CKPT" "$CKPT/model-$t.gguf.tmp" "$t" >"$OUT/convert-$t.log" 2>&1 ||
      die "converting to GGUF $t failed; see $OUT/convert-$t.log"
    mv "$CKPT/model-$t.gguf.tmp" "$CKPT/model-$t.gguf"
  fi
done

lbb() { # GGUF NPP NPL OUT
  local ctx=$(( (${2} + 32) * 16 + 256 ))
  "$LBB" -m "$1" -c "$ctx" -b 2048 -ub 512 -npp "$2" -ntg 32 -npl "$3" -t "$THREADS" --output-format jsonl \
    >"$4" 2>"$4.log" || die "llama-batched-bench failed; see $4.log"
}
BASELINE=${BATCHPILOT_BENCH_BASELINE:-}
[[ -z "$BASELINE" || -x "$BASELINE" ]] || die "$BASELINE is not an executable"
prof() { # OUT DTYPE BATCHES LENGTH [BINARY]
  "${5:-$BENCH}" profile --model "hf:$CKPT" --device cpu --dtype "$2" --threads "$THREADS" --batches "$3" \
    --lengths "$4" --new-tokens 32 --repeats 3 --quiet --json "$1" >"$1.txt" || die "profile failed"
}

for ((r = 1; r <= ROUNDS; r++)); do
  R="$OUT/round$r"
  mkdir -p "$R"
  echo "cpu_vs_llamacpp: round $r/$ROUNDS" >&2
  { uptime; nproc; lscpu | grep -m1 'Model name'; } >"$R/machine.txt"
  "$BENCH" bandwidth --device cpu --mib 256 --repeats 10 --threads "$THREADS" >"$R/bandwidth.txt"
  prof "$R/bp-f32-128.json" float32 1,4,16 128
  [[ -z "$BASELINE" ]] || prof "$R/base-f32-128.json" float32 1,4,16 128 "$BASELINE"
  lbb "$CKPT/model-f32.gguf" 128 1,4,16 "$R/llama-f32-128.jsonl"
  prof "$R/bp-bf16-128.json" bfloat16 1,16 128
  lbb "$CKPT/model-f16.gguf" 128 1,16 "$R/llama-f16-128.jsonl"
  if [[ "$LONG" != 0 ]]; then
    prof "$R/bp-f32-1024.json" float32 1,4,16 1024
    [[ -z "$BASELINE" ]] || prof "$R/base-f32-1024.json" float32 1,4,16 1024 "$BASELINE"
    lbb "$CKPT/model-f32.gguf" 1024 1,4,16 "$R/llama-f32-1024.jsonl"
  fi
  uptime >>"$R/machine.txt"
done
python3 bench/cpu/summarize.py "$OUT" "$CKPT" | tee "$OUT/summary.txt"
