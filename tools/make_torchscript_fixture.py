#!/usr/bin/env python3
"""Writes the TorchScript fixtures BatchPilot's tests load (nothing binary is
committed: CMake runs this at build time into the build directory).

    make_torchscript_fixture.py OUT_DIR

OUT_DIR/tiny_classifier.pt   a valid model: forward(input_ids Long[B,L],
                             attention_mask Bool[B,L]) -> Float[B,4]; one
                             masked self-attention layer, positions counted
                             from each row's first real token, mean over real
                             tokens, a linear head. Padding-invariant.
OUT_DIR/big_vocab.pt         the same classifier with a 32,000-token embedding and
                             128 positions, and NO vocab_size /
                             max_sequence_length attributes: the engine must
                             read its limits from the embeddings.
OUT_DIR/no_embedding.pt      forward(input_ids, attention_mask) -> Float[B,1] with
                             no embedding and no attributes: nothing tells its
                             vocabulary (loading needs --vocab-size).
OUT_DIR/wrong_signature.pt   forward(x) -> Tensor (one input instead of two)
OUT_DIR/wrong_return.pt      forward(input_ids, attention_mask) -> (Tensor, Tensor)
OUT_DIR/tiny_decoder.pt      a valid decoder (the step contract, docs/models.md):
                             forward(input_ids Long[B,T], attention_mask
                             Bool[B,P+T], past_key_values Optional[Float[layers,
                             2,B,heads,P,head_dim]]) -> (logits Float[B,T,vocab],
                             present Float[layers,2,B,heads,P+T,head_dim]); two
                             pre-LN blocks, vocabulary 64, 64 positions.
OUT_DIR/tiny_decoder.expected.json
                             greedy generations of tiny_decoder.pt for a few
                             prompts, computed here WITHOUT the cache (the whole
                             sequence again for every token), for the C++ tests.
OUT_DIR/decoder_stale_present.pt
                             the decoder, but `present` leaves out the new
                             tokens' keys and values: loading must refuse it.

Needs Debian's python3-torch (run it with /usr/bin/python3). Seeded, so the
weights are the same on every run.
"""
import json
import os
import sys
from typing import List, Optional, Tuple

import torch
from torch import nn


class Classifier(nn.Module):
    """Declares no limits: only its embedding tables tell them."""

    def __init__(self, vocab: int, dim: int, positions: int, classes: int = 4):
        super().__init__()
        self.dim = dim
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(positions, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask.to(torch.bool)
        # Positions from each row's first real token, so left padding is harmless.
        pos = (mask.long().cumsum(1) - 1).clamp(min=0)
        x = self.tokens(input_ids) + self.positions(pos)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.matmul(q, k.transpose(1, 2)) / (self.dim ** 0.5)
        scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
        x = x + self.proj(torch.matmul(torch.softmax(scores, dim=-1), v))
        x = self.norm(x)
        m = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.head(pooled)


class TinyClassifier(Classifier):
    vocab_size: int
    max_sequence_length: int

    def __init__(self, vocab: int = 256, dim: int = 32, positions: int = 512, classes: int = 4):
        super().__init__(vocab, dim, positions, classes)
        self.vocab_size = vocab
        self.max_sequence_length = positions


class NoEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Linear(1, 1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        m = attention_mask.to(torch.float32)
        mean = (input_ids.to(torch.float32) * m).sum(1, keepdim=True) / m.sum(1, keepdim=True).clamp(min=1.0)
        return self.scale(mean)


class WrongSignature(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class WrongReturn(nn.Module):
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return input_ids, attention_mask


class DecoderBlock(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor,
                past: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        b, t, d = x.size(0), x.size(1), x.size(2)
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # [B, H, T, hd]
        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / (self.head_dim ** 0.5)
        scores = scores.masked_fill(~allowed.unsqueeze(1), float("-inf"))
        a = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        x = x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))
        return x, torch.stack([k, v])


class TinyDecoder(nn.Module):
    """The step contract: positions and attention from the mask (left padding
    anywhere: before the cached columns and before the new ones), causal over
    columns, keys masked where the mask is False."""

    vocab_size: int
    max_sequence_length: int

    def __init__(self, vocab: int = 64, dim: int = 32, heads: int = 2, layers: int = 2, positions: int = 64,
                 stale_present: bool = False):
        super().__init__()
        self.vocab_size = vocab
        self.max_sequence_length = positions
        self.stale_present = stale_present
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(positions, dim)
        self.blocks = nn.ModuleList([DecoderBlock(dim, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                past_key_values: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        mask = attention_mask.to(torch.bool)
        t = input_ids.size(1)
        s = mask.size(1)
        p = s - t
        pos = (mask.long().cumsum(1) - 1).clamp(min=0)[:, p:]
        x = self.tokens(input_ids) + self.positions(pos)
        allowed = torch.ones(t, s, dtype=torch.bool, device=x.device).tril(p).unsqueeze(0) & mask.unsqueeze(1)
        # every query sees itself, so a padded query row never softmaxes over nothing
        eye = torch.zeros(t, s, dtype=torch.bool, device=x.device)
        eye[:, p:] = torch.eye(t, dtype=torch.bool, device=x.device)
        allowed = allowed | eye.unsqueeze(0)
        presents: List[torch.Tensor] = []
        i = 0
        for block in self.blocks:
            past: Optional[torch.Tensor] = None
            if past_key_values is not None:
                past = past_key_values[i]
            x, present = block(x, allowed, past)
            if self.stale_present and past is not None:
                present = past
            presents.append(present)
            i += 1
        return self.head(self.norm(x)), torch.stack(presents)


def reference_generations(model: TinyDecoder) -> dict:
    """Greedy generation by full recomputation (no cache), one prompt at a time."""
    prompts = [[1, 2, 3], [5], [10, 11, 12, 13, 14, 15, 16, 17], [63, 0, 7, 9], [4, 4, 4, 4, 4, 4]]
    max_new = [6, 9, 4, 7, 5]
    tokens = []
    with torch.no_grad():
        for prompt, n in zip(prompts, max_new):
            seq = list(prompt)
            out = []
            for _ in range(n):
                ids = torch.tensor([seq], dtype=torch.long)
                logits, _ = model(ids, torch.ones_like(ids, dtype=torch.bool), None)
                nxt = int(logits[0, -1].argmax())
                out.append(nxt)
                seq.append(nxt)
            tokens.append(out)
    return {"prompts": prompts, "max_new_tokens": max_new, "tokens": tokens}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1234)
    models = {
        "tiny_classifier.pt": TinyClassifier().eval(),
        "big_vocab.pt": Classifier(vocab=32000, dim=16, positions=128).eval(),
        "no_embedding.pt": NoEmbedding().eval(),
        "wrong_signature.pt": WrongSignature(),
        "wrong_return.pt": WrongReturn(),
    }
    torch.manual_seed(99)
    decoder = TinyDecoder().eval()
    models["tiny_decoder.pt"] = decoder
    stale = TinyDecoder(stale_present=True).eval()
    stale.load_state_dict(decoder.state_dict())
    models["decoder_stale_present.pt"] = stale
    for name, module in models.items():
        path = os.path.join(out, name)
        torch.jit.script(module).save(path + ".tmp")
        os.replace(path + ".tmp", path)  # never leave a half-written fixture
    path = os.path.join(out, "tiny_decoder.expected.json")
    with open(path + ".tmp", "w") as f:
        json.dump(reference_generations(decoder), f)
    os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
