"""Capture speed and memory on a 70 B-parameter Llama built on the meta device (issue goal: capture in
at most half the time plain ``torch.export`` takes, in the same run; peak RSS below 2 GB)."""

from __future__ import annotations

import resource
import time

import torch

import accelkit as ak


def _llama70b() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=8192, num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8,
                      intermediate_size=28672, vocab_size=128256, use_cache=False)
    with torch.device("meta"):
        return LlamaForCausalLM(cfg).eval()


def run() -> list[dict]:
    model = _llama70b()
    ids = torch.randint(0, 1000, (1, 128), device="meta")
    t0 = time.perf_counter()
    graph = ak.capture(model, (ids,))
    ours = time.perf_counter() - t0
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    t0 = time.perf_counter()
    torch.export.export(model, (ids,), strict=False)
    plain = time.perf_counter() - t0
    return [
        {"name": "capture Llama-70B (meta, seq 128)", "value": round(ours, 3), "unit": "s",
         "goal": f"<= {plain / 2:.2f} s (half of plain torch.export)", "ok": ours <= plain / 2},
        {"name": "plain torch.export of the same model", "value": round(plain, 3), "unit": "s",
         "goal": "", "ok": None},
        {"name": "peak RSS after capture", "value": round(rss_gb, 3), "unit": "GB", "goal": "< 2 GB",
         "ok": rss_gb < 2},
        {"name": "captured nodes", "value": len(graph.nodes), "unit": "nodes", "goal": "", "ok": None},
    ]
