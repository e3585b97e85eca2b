"""A small BERT: Hugging Face ``BertForSequenceClassification`` built from a config, classifying sentences by topic.

Two encoder layers of width 64 over word tokens, random initial weights. Each sentence of the
project's corpus is labelled with its file's topic (hardware, nature, science, software) and
the model learns to tell them apart from the words alone. Inputs are ``input_ids`` and an
``attention_mask`` (1 for words, 0 for padding): the two tensors a BERT port has to carry.

Why not masked-language-model pre-training, BERT's other task? At this size and budget
(seconds on a laptop CPU, a 38 KB corpus) a post-LayerNorm BERT trained from scratch stays on
the "guess the common letters" plateau (tried: byte-level MLM reached 0.25 masked-byte accuracy
after 1,000 steps, against 0.17 for always guessing a space); topic classification reaches a
clear goal in seconds. The training adds word dropout (a quarter of the words hidden as
``[UNK]``) because a held-out sentence meets words the vocabulary has never seen.
"""

from __future__ import annotations

import torch
from torch import nn

from accelkit.data.samples import Samples
from accelkit.data.text import SPECIALS, topic_sentences
from accelkit.zoo.entry import Data, QualityGoal, Recipe, Spec

LENGTH = 40  # tokens per sentence, [CLS] and [SEP] included; longer sentences are cut


def build(vocab_size: int, num_labels: int, hidden: int = 64, layers: int = 2, heads: int = 2) -> nn.Module:
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=4 * hidden, max_position_embeddings=LENGTH,
                        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.0, pad_token_id=0)
    config.num_labels = num_labels  # a PretrainedConfig property (it also names the labels)
    return BertForSequenceClassification(config)


def _data(seed: int) -> Data:
    train, heldout, vocab = topic_sentences(seed, length=LENGTH)
    return Data(train, heldout, {"vocab": vocab, "topics": train.info["topics"]})


UNK_RATE = 0.25


def _batch_loss(model: nn.Module, loss_fn: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    ids, mask, y = batch
    # Word dropout: hide some words as [UNK] so the model learns to cope with words it never saw,
    # as it must on held-out sentences (about 15% of their words are not in the vocabulary).
    words = ids >= len(SPECIALS)
    ids = torch.where(words & (torch.rand(ids.shape) < UNK_RATE), SPECIALS.index("[UNK]"), ids)
    return loss_fn(model(ids, mask).logits, y)


def accuracy(model: nn.Module, ds: Samples) -> float:
    logits = model(ds.ids, ds.attention_mask).logits  # (N, topics)
    return float((logits.argmax(-1) == ds.y).float().mean())


SPEC = Spec(
    name="bert_small",
    description="small BERT (2 layers, width 64) classifying the corpus's sentences by topic",
    task=f"sentence classification: up to {LENGTH} word tokens -> one of 4 topics (chance: 0.25)",
    source="Devlin et al., BERT (2019), via transformers' BertForSequenceClassification; corpus written for accelkit",
    quality_goal=QualityGoal("accuracy", 0.6),
    recipe=Recipe(steps=200, lr=2e-3, batch_size=32, weight_decay=0.01),
    make_data=_data,
    make_model=lambda data: build(len(data.extra["vocab"]), len(data.extra["topics"])),
    make_loss_fn=nn.CrossEntropyLoss,
    example_inputs=lambda ds: (ds.ids[:8], ds.attention_mask[:8]),
    batch_loss=_batch_loss,
    metric=accuracy,
)
