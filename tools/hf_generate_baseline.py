#!/usr/bin/env python3
"""Hugging Face transformers' generate() on GPT-2 small's shape with random
weights: the baseline the GPU check (bench/gpu/check.sh) puts BatchPilot's
offline tokens/s beside. Greedy, a batch of `--batch` prompts of `--prompt`
random tokens, exactly `--new` new tokens each; tokens/s = batch * new / the
median wall time of `--repeats` generate() calls after one warm-up, the same
definition `batchpilot-bench profile` uses. Needs torch with CUDA and
transformers; downloads nothing (the model is built from GPT2Config())."""
import argparse
import json
import statistics
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def run(dtype_name, batch, prompt, new, repeats):
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}[dtype_name]
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).to("cuda", dtype).eval()
    ids = torch.randint(0, model.config.vocab_size, (batch, prompt), device="cuda")
    mask = torch.ones_like(ids)
    kwargs = dict(attention_mask=mask, max_new_tokens=new, min_new_tokens=new, do_sample=False,
                  pad_token_id=0)
    times = []
    with torch.inference_mode():
        model.generate(ids, **kwargs)  # warm-up
        for _ in range(repeats):
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = model.generate(ids, **kwargs)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    assert out.shape == (batch, prompt + new), out.shape
    seconds = statistics.median(times)
    return {"dtype": dtype_name, "batch": batch, "prompt": prompt, "new_tokens": new, "seconds": seconds,
            "tokens_per_s": batch * new / seconds, "attn_implementation": model.config._attn_implementation}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtypes", default="bfloat16")
    ap.add_argument("--json")
    a = ap.parse_args()
    import transformers
    results = []
    for d in a.dtypes.split(","):
        r = run(d, a.batch, a.prompt, a.new, a.repeats)
        print(f"transformers {transformers.__version__} generate() {d}: batch {r['batch']}, prompt {r['prompt']}, "
              f"{r['new_tokens']} new: {r['seconds'] * 1e3:.1f} ms, {r['tokens_per_s']:.0f} tokens/s "
              f"({r['attn_implementation']})", flush=True)
        results.append(r)
    if a.json:
        json.dump({"transformers": transformers.__version__, "torch": torch.__version__, "runs": results},
                  open(a.json, "w"), indent=2)


if __name__ == "__main__":
    main()
