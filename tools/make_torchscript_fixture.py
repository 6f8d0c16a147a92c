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

Needs Debian's python3-torch (run it with /usr/bin/python3). Seeded, so the
weights are the same on every run.
"""
import os
import sys
from typing import Tuple

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
    for name, module in models.items():
        path = os.path.join(out, name)
        torch.jit.script(module).save(path + ".tmp")
        os.replace(path + ".tmp", path)  # never leave a half-written fixture
    return 0


if __name__ == "__main__":
    sys.exit(main())
