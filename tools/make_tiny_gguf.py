#!/usr/bin/env python3
"""Write a small llama-architecture GGUF checkpoint with random weights, for
the tests that run llama.cpp's llama-server (tests/integration/
test_llamacpp_server.py). Plain Python: no numpy, no torch, no gguf-py, so a
fresh clone writes it at test time without fetching anything.

The tokenizer is byte-level BPE (tokenizer.ggml.model "gpt2", pre-tokenizer
"default"): the 256 bytes in GPT-2's byte-to-unicode spelling, one merge,
<|endoftext|> (bos = eos), and filler tokens up to --vocab. Weights are f16
(matrices) and f32 (norms), seeded, so the file is the same on every run.

    make_tiny_gguf.py OUT.gguf [--embd 512] [--layers 8] [--ff 1536] [--heads 8] [--vocab 512] [--ctx 8192]
"""
import argparse
import random
import struct
import sys

GGUF_MAGIC = b"GGUF"
ALIGN = 32
T_UINT32, T_FLOAT32, T_STRING, T_ARRAY, T_INT32 = 4, 6, 8, 9, 5
GGML_F32, GGML_F16 = 0, 1


def gguf_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value):
    out = gguf_str(key) + struct.pack("<I", vtype)
    if vtype == T_STRING:
        return out + gguf_str(value)
    if vtype == T_UINT32:
        return out + struct.pack("<I", value)
    if vtype == T_INT32:
        return out + struct.pack("<i", value)
    if vtype == T_FLOAT32:
        return out + struct.pack("<f", value)
    raise ValueError(vtype)


def kv_array(key, etype, values):
    out = gguf_str(key) + struct.pack("<I", T_ARRAY) + struct.pack("<IQ", etype, len(values))
    for v in values:
        out += gguf_str(v) if etype == T_STRING else struct.pack("<i" if etype == T_INT32 else "<f", v)
    return out


def byte_tokens():
    """GPT-2's bytes_to_unicode: the 256 bytes as printable characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--embd", type=int, default=512)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--ff", type=int, default=1536)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--seed", type=int, default=43)
    a = ap.parse_args()
    if a.vocab < 260 or a.embd % a.heads:
        sys.exit("make_tiny_gguf: --vocab must be at least 260 and --embd a multiple of --heads")

    tokens = byte_tokens() + ["<|endoftext|>", "\u0120t"]
    tokens += ["<|filler_%d|>" % i for i in range(a.vocab - len(tokens))]
    types = [1] * 256 + [3, 1] + [1] * (a.vocab - 258)  # 1 normal, 3 control
    eos = 256

    e, f, v = a.embd, a.ff, a.vocab
    shapes = [("token_embd.weight", [e, v]), ("output_norm.weight", [e]), ("output.weight", [e, v])]
    for i in range(a.layers):
        p = "blk.%d." % i
        shapes += [(p + "attn_norm.weight", [e]), (p + "attn_q.weight", [e, e]), (p + "attn_k.weight", [e, e]),
                   (p + "attn_v.weight", [e, e]), (p + "attn_output.weight", [e, e]),
                   (p + "ffn_norm.weight", [e]), (p + "ffn_gate.weight", [e, f]),
                   (p + "ffn_up.weight", [e, f]), (p + "ffn_down.weight", [f, e])]

    meta = [
        kv("general.architecture", T_STRING, "llama"),
        kv("general.name", T_STRING, "batchpilot-tiny-llama"),
        kv("general.alignment", T_UINT32, ALIGN),
        kv("llama.context_length", T_UINT32, a.ctx),
        kv("llama.embedding_length", T_UINT32, e),
        kv("llama.block_count", T_UINT32, a.layers),
        kv("llama.feed_forward_length", T_UINT32, f),
        kv("llama.attention.head_count", T_UINT32, a.heads),
        kv("llama.attention.head_count_kv", T_UINT32, a.heads),
        kv("llama.rope.dimension_count", T_UINT32, e // a.heads),
        kv("llama.attention.layer_norm_rms_epsilon", T_FLOAT32, 1e-5),
        kv("llama.vocab_size", T_UINT32, v),
        kv("tokenizer.ggml.model", T_STRING, "gpt2"),
        kv("tokenizer.ggml.pre", T_STRING, "default"),
        kv_array("tokenizer.ggml.tokens", T_STRING, tokens),
        kv_array("tokenizer.ggml.token_type", T_INT32, types),
        kv_array("tokenizer.ggml.merges", T_STRING, ["\u0120 t"]),
        kv("tokenizer.ggml.bos_token_id", T_UINT32, eos),
        kv("tokenizer.ggml.eos_token_id", T_UINT32, eos),
    ]

    # One block of seeded values, tiled: a random model needs no more.
    rng = random.Random(a.seed)
    block = [rng.gauss(0.0, 0.05) for _ in range(65536)]
    infos, datas, offset = [], [], 0
    for name, dims in shapes:
        n = 1
        for d in dims:
            n *= d
        if len(dims) == 1:
            data = struct.pack("<%df" % n, *([1.0] * n))
            gtype = GGML_F32
        else:
            vals = (block * (n // len(block) + 1))[:n]
            data = struct.pack("<%de" % n, *vals)
            gtype = GGML_F16
        infos.append(gguf_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) +
                     struct.pack("<IQ", gtype, offset))
        pad = (-len(data)) % ALIGN
        datas.append(data + b"\0" * pad)
        offset += len(data) + pad

    head = GGUF_MAGIC + struct.pack("<IQQ", 3, len(shapes), len(meta)) + b"".join(meta) + b"".join(infos)
    head += b"\0" * ((-len(head)) % ALIGN)
    with open(a.out, "wb") as out:
        out.write(head)
        for d in datas:
            out.write(d)


if __name__ == "__main__":
    main()
