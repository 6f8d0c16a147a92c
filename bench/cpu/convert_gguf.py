#!/usr/bin/env python3
"""Runs llama.cpp's convert_hf_to_gguf.py on the comparison's checkpoint.

  convert_gguf.py LLAMA_CPP_DIR HF_DIR OUT.gguf f32|f16

The checkpoint's tokenizer is a small stand-in (make_checkpoint.py) whose
pre-tokenizer hash llama.cpp does not list, so the converter is told it is
Qwen 2's ("qwen2"), as the architecture is, and read as a BPE tokenizer.json. Only the vocabulary entries of the
GGUF depend on this, never the weights or the step's work.
"""
import runpy
import sys


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in ("f32", "f16"):
        sys.exit("usage: convert_gguf.py LLAMA_CPP_DIR HF_DIR OUT.gguf f32|f16")
    src, hf, out, dtype = sys.argv[1:]
    sys.path.insert(0, src)
    sys.path.insert(1, src + "/gguf-py")
    from conversion import base, qwen

    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"
    # A tokenizer.json (BPE) only: skip the SentencePiece attempt (and its module).
    qwen.Qwen2Model.set_vocab = lambda self: self._set_vocab_gpt2()
    sys.argv = [src + "/convert_hf_to_gguf.py", hf, "--outfile", out, "--outtype", dtype]
    runpy.run_path(src + "/convert_hf_to_gguf.py", run_name="__main__")


if __name__ == "__main__":
    main()
