#!/usr/bin/env python3
"""Makes the checkpoint of the CPU comparison against llama.cpp (bench/cpu_vs_llamacpp.sh):
a Qwen2ForCausalLM with random weights, float32, as transformers initialises it
(seed 0): vocabulary 151,936, hidden 256, 4 layers, 4 heads of 64 with 2 KV
heads, MLP 672, untied LM head: 80,646,400 parameters (80.6 M). The tokenizer
is the repository's small Qwen-2-style one (tests/fixtures/hf/qwen2/); the
speed of a step does not depend on it.

  make_checkpoint.py OUT_DIR      (needs torch, transformers, safetensors)
"""
import pathlib
import shutil
import sys

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_checkpoint.py OUT_DIR")
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=151936, hidden_size=256, intermediate_size=672, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         tie_word_embeddings=False, rms_norm_eps=1e-6, rope_theta=1000000.0,
                         bos_token_id=None, eos_token_id=None)
    model = Qwen2ForCausalLM(config).to(torch.float32).eval()
    params = sum(p.numel() for p in model.parameters())
    model.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(ROOT / "tests" / "fixtures" / "hf" / "qwen2" / name, out / name)
    print(f"make_checkpoint: {out}: Qwen2, {params} parameters, float32")


if __name__ == "__main__":
    main()
