"""``ak.serve``: an LLM served on a system — time to first token and tokens per second (modelled).

Prefill is one compiled step over the prompt (``batch`` sequences of ``prompt_tokens``). Decode is one
compiled step over a single new token per sequence, plus what that step's graph cannot see: reading
the KV cache of every earlier token (``2 x layers x kv_heads x head_dim`` values per token) and the
attention FLOPs over it, at the mean context length of the generation. The same execution model
(and so the same latency floor: launches, section switches, mesh paths, chip hops) serves both.

    est = ak.serve(llama, target="sn40l", chips=8, prompt_tokens=128, output_tokens=128)
    est.ttft_s, est.tokens_per_s_per_user, est.tokens_per_s, est.latency_s
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from accelkit import constants, hardware
from accelkit.compiler.program import Parallel, compile
from accelkit.cost.report import fmt_s
from accelkit.errors import AccelkitError
from accelkit.families import model_for
from accelkit.hardware.precision import element_bytes
from accelkit.hardware.spec import AcceleratorSpec, fmt_sig
from accelkit.sim.estimate import rates


@dataclass(frozen=True)
class ServingEstimate:
    """Modelled serving figures for one configuration (never a measurement)."""

    model: str
    target: str
    chips: int
    batch: int
    prompt_tokens: int
    output_tokens: int
    precision: str
    mode: str
    parallel: Parallel  # the split the fastest plan uses (typed; .split() says it in words)
    ttft_s: float
    decode_step_s: float  # one new token for every sequence, at the mean context length
    tokens_per_s_per_user: float
    tokens_per_s: float  # all sequences together (output tokens)
    latency_s: float  # prefill + every output token: what LLM-Inference-Bench reports
    weights_bytes_per_chip: int
    kv_cache_bytes: int  # at full context, all sequences, all chips
    decode_bound: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    label = "modelled"

    def summary(self) -> str:
        return (f"ServingEstimate (MODELLED): {self.model} on {self.chips} x {self.target} ({self.mode}, "
                f"{self.parallel}), {self.precision}, batch {self.batch}, {self.prompt_tokens} in / "
                f"{self.output_tokens} out\n"
                f"  TTFT {fmt_s(self.ttft_s)}; decode {fmt_s(self.decode_step_s)} per token "
                f"({self.decode_bound}-bound); {fmt_sig(self.tokens_per_s_per_user)} tokens/s per user, "
                f"{fmt_sig(self.tokens_per_s)} tokens/s in all; end to end {fmt_s(self.latency_s)}")

    def __str__(self) -> str:
        return self.summary()


def _kv_shape(model: nn.Module) -> tuple[int, int, int, int]:
    """(layers, kv_heads, head_dim, attention heads) from a transformers config."""
    cfg = getattr(model, "config", None)
    if cfg is None:
        raise AccelkitError(f"serve needs a causal LM with a transformers-style config; {type(model).__name__} "
                            "has no .config", fix="build the model from a transformers config class "
                            "(e.g. LlamaForCausalLM(LlamaConfig(...)))")
    layers = getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "n_layer", None)
    heads = getattr(cfg, "num_attention_heads", None) or getattr(cfg, "n_head", None)
    hidden = getattr(cfg, "hidden_size", None) or getattr(cfg, "n_embd", None)
    if not (layers and heads and hidden):
        raise AccelkitError(f"cannot read layers/heads/hidden size from {type(cfg).__name__}",
                            fix="use a transformers causal LM config (Llama, GPT-2, Mistral, ...)")
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or hidden // heads
    return int(layers), int(kv_heads), int(head_dim), int(heads)


def serve(
    model: nn.Module,
    *,
    target: str | AcceleratorSpec,
    chips: int = 1,
    batch: int = 1,
    prompt_tokens: int,
    output_tokens: int,
    precision: str = "bf16",
    parallel: Parallel | None = None,
    mode: str = "auto",
) -> ServingEstimate:
    """Model serving ``model`` (a transformers causal LM, meta device welcome) on ``chips`` x ``target``.

    Without ``parallel``, every split of the chips that holds the model is tried (replicas, when
    there are enough sequences, or one model split over all chips) and the one with the shortest
    end-to-end latency is returned; prefill and decode use the same split, as a deployment does.
    """
    if prompt_tokens < 1 or output_tokens < 1 or batch < 1:
        raise AccelkitError("prompt_tokens, output_tokens and batch must be ≥ 1",
                            fix="e.g. serve(model, target='h100', prompt_tokens=128, output_tokens=128)")
    if parallel is None and chips > 1:
        split = model_for(hardware.get(target).family).split(chips)
        options = ([Parallel(data=chips)] if batch >= chips and batch % chips == 0 else []) + [split]
        results = []
        error: Exception | None = None
        for par in options:
            try:
                results.append(serve(model, target=target, chips=chips, batch=batch, prompt_tokens=prompt_tokens,
                                     output_tokens=output_tokens, precision=precision, parallel=par, mode=mode))
            except AccelkitError as exc:
                error = error or exc
        if not results:
            assert error is not None
            raise error
        return min(results, key=lambda e: e.latency_s)
    layers, kv_heads, head_dim, heads = _kv_shape(model)
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    kw: dict[str, Any] = {"target": target, "precision": precision, "chips": chips, "parallel": parallel,
                          "mode": mode}
    # captured at one sequence (once per prompt length) and compiled for the batch: every kernel of a causal LM
    # scales with the sequences, so a sweep over batch sizes reuses the two captured graphs
    prompt = torch.zeros(1, prompt_tokens, dtype=torch.long, device=device)
    step = torch.zeros(1, 1, dtype=torch.long, device=device)
    prefill = compile(model, (prompt,), batch_size=batch, **kw)
    decode = compile(model, (step,), batch_size=batch, **kw)
    r = rates(prefill.spec, precision)
    elem = element_bytes(precision)
    shards = decode.parallel.model_shards
    # the KV cache: read once per decode step, at the mean context of the generation
    context = prompt_tokens + output_tokens / 2
    kv_per_token = 2 * layers * kv_heads * head_dim * elem
    kv_read = batch / decode.parallel.data * context * kv_per_token / shards
    kv_tier = decode.memory_plan.placement["weights"]
    kv_s = kv_read / r.tier_bw[kv_tier]
    attn_flops = batch / decode.parallel.data * 4 * layers * heads * head_dim * context / shards
    attn_s = attn_flops / r.matmul_flops
    base = decode.report.step_time_s
    decode_s = base + max(kv_s, attn_s)
    ttft = prefill.report.step_time_s
    bound = decode.report.bound_by
    decode_bound = "memory" if kv_s > attn_s and kv_s > constants.value("SERVE_MEMORY_BOUND_SHARE") * base else max(bound, key=lambda b: bound[b])
    kv_total = batch * (prompt_tokens + output_tokens) * kv_per_token
    notes = [f"KV cache {kv_per_token / 1e3:.0f} kB per token, read from {kv_tier}",
             "decode timed at the mean context length; every sequence generates the same number of tokens"]
    return ServingEstimate(
        model=type(model).__name__, target=prefill.target, chips=chips, batch=batch, prompt_tokens=prompt_tokens,
        output_tokens=output_tokens, precision=precision, mode=decode.mode, parallel=decode.parallel,
        ttft_s=ttft, decode_step_s=decode_s, tokens_per_s_per_user=1.0 / decode_s,
        tokens_per_s=batch / decode_s, latency_s=ttft + output_tokens * decode_s,
        weights_bytes_per_chip=decode.memory_plan.weights_bytes, kv_cache_bytes=int(kv_total),
        decode_bound=decode_bound, notes=tuple(notes),
    )
