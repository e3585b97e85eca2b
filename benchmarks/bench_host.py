"""Host validation: the CPU model's predicted forward time vs the time measured on this CPU, same run.

Goal (issue: performance model): median |error| ≤ 20% over the zoo models and a few transformers
models. Run on an otherwise idle machine: other processes on the same cores distort the measurement.
"""

from __future__ import annotations

import torch

from accelkit import zoo
from accelkit.sim.host_validation import validate_host


def _transformers() -> dict[str, tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    from transformers import (
        BertConfig,
        BertModel,
        GPT2Config,
        GPT2LMHeadModel,
        ResNetConfig,
        ResNetModel,
        ViTConfig,
        ViTModel,
    )

    torch.manual_seed(0)
    return {
        "gpt2 (4 layers, 256)": (GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=5000,
                                                            use_cache=False)), (torch.randint(0, 5000, (4, 128)),)),
        "bert (4 layers, 256)": (BertModel(BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                                      intermediate_size=1024)), (torch.randint(0, 30000, (8, 64)),)),
        "vit (6 layers, 192)": (ViTModel(ViTConfig(hidden_size=192, num_hidden_layers=6, num_attention_heads=3,
                                                   intermediate_size=768, image_size=64, patch_size=8)),
                                (torch.randn(8, 3, 64, 64),)),
        "resnet (basic, 4 stages)": (ResNetModel(ResNetConfig(embedding_size=32, hidden_sizes=[32, 64, 128, 256],
                                                              depths=[1, 1, 1, 1], layer_type="basic")),
                                     (torch.randn(8, 3, 64, 64),)),
    }


def models() -> dict[str, tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    out = {}
    for name in zoo.names():
        entry = zoo.get(name)
        out[f"zoo:{name}"] = (entry.model, entry.example_inputs)
    out.update(_transformers())
    return out


def run() -> list[dict]:
    result = validate_host(models())
    print(result.table())
    rows = [{"name": f"host: {c.name}", "value": round(c.error * 100, 1), "unit": "% error",
             "goal": f"modelled {c.predicted_s * 1e3:.2f} ms vs measured {c.measured_s * 1e3:.2f} ms", "ok": None}
            for c in result.cases]
    rows.append({"name": "host validation: median |error|", "value": round(result.median_abs_error * 100, 1),
                 "unit": "%", "goal": "<= 20%", "ok": result.median_abs_error <= 0.20})
    return rows
