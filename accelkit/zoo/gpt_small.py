"""A small GPT: Hugging Face ``GPT2LMHeadModel`` built from a config, trained on the project's corpus.

Two decoder layers of width 64 over byte tokens (vocabulary 256, context 64), random
initial weights, ``use_cache=False`` (no key/value cache: the graph is one plain forward, which
is what an accelerator compiler wants to see). It learns to predict the next byte of
``datasets/corpus`` — original prose about hardware, software, science and nature.
"""

from __future__ import annotations

import torch
from torch import nn

from accelkit.data.samples import Samples
from accelkit.data.text import byte_windows
from accelkit.zoo.entry import Data, QualityGoal, Recipe, Spec

CONTEXT = 64


def build(n_layer: int = 2, n_embd: int = 64, n_head: int = 4, context: int = CONTEXT) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=256, n_positions=context, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
                        bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config)


def _data(seed: int) -> Data:
    train, heldout = byte_windows(CONTEXT)
    return Data(train, heldout)


def _batch_loss(model: nn.Module, loss_fn: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    ids, targets = batch
    logits = model(ids).logits  # (B, T, 256)
    return loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def heldout_loss(model: nn.Module, ds: Samples) -> float:
    """Mean next-byte cross-entropy on ``ds``, in nats per byte (divide by ln 2 for bits)."""
    total, count = 0.0, 0
    for i in range(0, len(ds), 64):
        ids, targets = ds.batch(slice(i, i + 64))
        logits = model(ids).logits
        total += float(nn.functional.cross_entropy(logits.reshape(-1, 256), targets.reshape(-1), reduction="sum"))
        count += targets.numel()
    return total / count


SPEC = Spec(
    name="gpt_small",
    description="small GPT-2 (2 layers, width 64) predicting the next byte of the project's corpus",
    task=f"language modelling: {CONTEXT} bytes -> the next byte at every position (vocabulary 256)",
    source="Radford et al., GPT-2 (2019), via transformers' GPT2LMHeadModel; corpus written for accelkit",
    # ln 256 = 5.55 is a uniform guess; a bigram table fitted on the training text scores 2.47
    quality_goal=QualityGoal("cross-entropy", 2.35, higher_is_better=False, unit="nats/byte"),
    recipe=Recipe(steps=400, lr=3e-3, batch_size=32, weight_decay=0.01),
    make_data=_data,
    make_model=lambda data: build(),
    make_loss_fn=nn.CrossEntropyLoss,
    example_inputs=lambda ds: (ds.ids[:4].clone(),),
    batch_loss=_batch_loss,
    metric=heldout_loss,
)

