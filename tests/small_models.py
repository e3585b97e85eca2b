"""Small transformers models (random weights, built from their config classes) shared by the tests."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

TRANSFORMERS = ("gpt2", "bert", "llama", "vit", "resnet")


def transformers_model(name: str) -> tuple[nn.Module, torch.Tensor]:
    """A two-layer ``name`` model in eval mode and one example input (token ids or images)."""
    from transformers import (
        BertConfig,
        BertModel,
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        ResNetConfig,
        ResNetModel,
        ViTConfig,
        ViTModel,
    )

    ids = torch.randint(0, 500, (2, 16))
    img = torch.randn(2, 3, 32, 32)
    builders: dict[str, Callable[[], tuple[nn.Module, torch.Tensor]]] = {
        "gpt2": lambda: (GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500, n_positions=64,
                                                    use_cache=False)), ids),
        "bert": lambda: (BertModel(BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                              intermediate_size=128, vocab_size=500)), ids),
        "llama": lambda: (LlamaForCausalLM(LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                       num_key_value_heads=2, intermediate_size=128, vocab_size=500,
                                                       use_cache=False)), ids),
        "vit": lambda: (ViTModel(ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                           intermediate_size=128, image_size=32, patch_size=8)), img),
        "resnet": lambda: (ResNetModel(ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1],
                                                    layer_type="basic")), img),
    }
    model, x = builders[name]()
    return model.eval(), x
