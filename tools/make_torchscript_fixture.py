#!/usr/bin/env python3
"""Writes the TorchScript fixtures BatchPilot's tests load (nothing binary is
committed: CMake runs this at build time into the build directory).

    make_torchscript_fixture.py OUT_DIR

OUT_DIR/tiny_classifier.pt   a valid model: forward(input_ids Long[B,L],
                             attention_mask Bool[B,L]) -> Float[B,4]; one
                             masked self-attention layer, positions counted
                             from each row's first real token, mean over real
                             tokens, a linear head. Padding-invariant.
OUT_DIR/wrong_signature.pt   forward(x) -> Tensor (one input instead of two)
OUT_DIR/wrong_return.pt      forward(input_ids, attention_mask) -> (Tensor, Tensor)

Needs Debian's python3-torch (run it with /usr/bin/python3). Seeded, so the
weights are the same on every run.
"""
import os
import sys
from typing import Tuple

import torch
from torch import nn


class TinyClassifier(nn.Module):
    vocab_size: int
    max_sequence_length: int

    def __init__(self, vocab: int = 256, dim: int = 32, positions: int = 512, classes: int = 4):
        super().__init__()
        self.vocab_size = vocab
        self.max_sequence_length = positions
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


class WrongSignature(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class WrongReturn(nn.Module):
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return input_ids, attention_mask


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1234)
    models = {
        "tiny_classifier.pt": TinyClassifier().eval(),
        "wrong_signature.pt": WrongSignature(),
        "wrong_return.pt": WrongReturn(),
    }
    for name, module in models.items():
        path = os.path.join(out, name)
        torch.jit.script(module).save(path + ".tmp")
        os.replace(path + ".tmp", path)  # never leave a half-written fixture
    return 0


if __name__ == "__main__":
    sys.exit(main())
