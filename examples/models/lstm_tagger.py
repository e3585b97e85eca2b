"""An LSTM sequence tagger (one tag per token), as a learner would write it.

    make() -> (model, (ids,))    # 4 sentences of 16 token ids, 12 tags
"""

from __future__ import annotations

import torch
from torch import nn


class LSTMTagger(nn.Module):
    def __init__(self, vocab: int = 500, dim: int = 48, tags: int = 12) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, num_layers=1, batch_first=True)
        self.out = nn.Linear(dim, tags)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.emb(ids))  # (B, T) -> (B, T, dim)
        return self.out(h)               # (B, T, tags)


def make() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return LSTMTagger(), (torch.randint(0, 500, (4, 16)),)
