"""``ak.serve``: serving figures (modelled) and what limits them."""

from __future__ import annotations

import pytest
import torch

import accelkit as ak
from accelkit.compiler.program import _GRAPHS


@pytest.fixture(scope="module")
def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=512, vocab_size=1000, use_cache=False)
    with torch.device("meta"):
        return LlamaForCausalLM(cfg).eval()


def test_a_batch_sweep_reuses_the_two_captured_graphs(tiny_llama):
    """Prefill and decode are captured once per prompt length; the batch only scales the compiled kernels."""
    rates = [ak.serve(tiny_llama, target="h100", batch=b, prompt_tokens=32, output_tokens=8).tokens_per_s
             for b in (1, 4, 16)]
    assert len(_GRAPHS[tiny_llama]) == 2
    assert rates[0] < rates[1] < rates[2]  # more sequences per step: more tokens per second in all
