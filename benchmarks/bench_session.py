"""Session overhead: a training step through ak.Session vs the same plain PyTorch step, on this host.

Goal (issue: sessions): at most 1.10x the plain step. Both loops run the same model, optimizer and
batches, interleaved so that machine load affects both alike; the ratio of medians is reported.
"""

from __future__ import annotations

import copy
import statistics
import time

import torch
from torch import nn

import accelkit as ak


def _model() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=2000, n_positions=128,
                                      use_cache=False))


def _loss(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


def run(steps: int = 15) -> list[dict]:
    ids = torch.randint(0, 2000, (8, 64), generator=torch.Generator().manual_seed(0))
    plain_model = _model()
    sess_model = copy.deepcopy(plain_model)
    plain_opt = torch.optim.AdamW(plain_model.parameters(), lr=1e-3)
    session = ak.Session(sess_model, target="sn40l", optimizer=torch.optim.AdamW(sess_model.parameters(), lr=1e-3),
                         loss_fn=_loss)
    session.run(ids, labels=ids)  # compile once (the clock's program), outside the timing

    def plain_step() -> None:
        plain_opt.zero_grad(set_to_none=True)
        _loss(plain_model(ids).logits, ids).backward()
        plain_opt.step()

    plain_step()
    plain, sess = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        plain_step()
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        session.run(ids, labels=ids)
        sess.append(time.perf_counter() - t0)
    ratio = statistics.median(sess) / statistics.median(plain)
    return [
        {"name": "plain PyTorch training step (GPT-2 2x128, 8x64 tokens)", "value": round(statistics.median(plain) * 1e3, 2),
         "unit": "ms", "goal": "", "ok": None},
        {"name": "the same step through ak.Session", "value": round(statistics.median(sess) * 1e3, 2), "unit": "ms",
         "goal": "", "ok": None},
        {"name": "Session overhead (ratio of medians)", "value": round(ratio, 3), "unit": "x", "goal": "<= 1.10",
         "ok": ratio <= 1.10},
    ]
