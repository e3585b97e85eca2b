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

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import nn

from accelkit import constants
from accelkit.boundary import whole
from accelkit.compiler.memory import ModeError
from accelkit.compiler.options import CompileOptions
from accelkit.compiler.program import CompiledProgram, Parallel
from accelkit.cost.report import fmt_s
from accelkit.errors import AccelkitError
from accelkit.hardware.capacity import holding_tiers, usable_bytes
from accelkit.hardware.precision import element_bytes
from accelkit.hardware.spec import AcceleratorSpec, fmt_bytes, fmt_sig
from accelkit.workflow.compiling import compile_with, first_that_fits


@dataclass(frozen=True)
class PhaseWork:
    """One serving phase on one chip (modelled): the FLOPs it computes, the bytes it moves (weights, activations
    and, when decoding, the KV cache) and its time. Where it sits on the chip's roofline says what bounds it."""

    name: str  # "prefill" | "decode"
    flops: float
    bytes: float
    time_s: float

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes if self.bytes else math.inf

    @property
    def flops_per_s(self) -> float:
        """Achieved FLOP/s per chip (modelled)."""
        return self.flops / self.time_s if self.time_s else 0.0


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
    ttft_s: float  # time to first token: the prefill of every prompt in the batch
    decode_step_s: float  # one new token for every sequence, at the mean context length (= tpot_s)
    tokens_per_s_per_user: float
    tokens_per_s: float  # all sequences together (output tokens)
    latency_s: float  # prefill + every output token: what LLM-Inference-Bench reports
    weights_bytes_per_chip: int
    kv_cache_bytes: int  # at full context, all sequences, all chips
    decode_bound: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    kv_tier: str = ""  # the memory tier the KV cache lives in
    max_batch: int = 0  # the most sequences whose KV cache (at full context) ``kv_tier`` holds beside the weights
    prefill: PhaseWork | None = None  # the whole batch's prompts, per chip (viz.serving_roofline draws both)
    decode: PhaseWork | None = None  # one decode step, per chip
    waves: int = 1  # the batch runs in waves of sequences whose KV cache fits (the rest queued); see ``notes``
    stack: str = ""  # the software stack serving it ("engine" on a GPU unless told otherwise)

    label = "modelled"

    @property
    def tpot_s(self) -> float:
        """Time per output token (after the first): one decode step, every sequence of the batch advancing."""
        return self.decode_step_s

    @property
    def end_to_end_tokens_per_s(self) -> float:
        """Every output token of the batch over the end-to-end latency, prefill included: the throughput
        optimum-habana's ``run_generation.py`` prints (``tokens_per_s`` is the decode steps' rate alone)."""
        return self.batch * self.output_tokens / self.latency_s

    def summary(self) -> str:
        return (f"ServingEstimate (MODELLED): {self.model} on {self.chips} x {self.target} ({self.mode}, "
                f"{self.parallel}), {self.precision}, batch {self.batch}, {self.prompt_tokens} in / "
                f"{self.output_tokens} out" + (f", stack {self.stack!r}" if self.stack else "")
                + (f", in {self.waves} waves of at most {math.ceil(self.batch / self.waves)}" if self.waves > 1
                   else "") + "\n"
                f"  TTFT {fmt_s(self.ttft_s)}; TPOT {fmt_s(self.tpot_s)} per output token "
                f"({self.decode_bound}-bound); {fmt_sig(self.tokens_per_s_per_user)} tokens/s per user, "
                f"{fmt_sig(self.tokens_per_s)} tokens/s in all; end to end {fmt_s(self.latency_s)}\n"
                f"  KV cache {fmt_bytes(self.kv_cache_bytes)} in {self.kv_tier}, which holds at most {self.max_batch:,} "
                f"sequences of {self.prompt_tokens + self.output_tokens} tokens")

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
    stack: str | None = None,
) -> ServingEstimate:
    """Model serving ``model`` (a transformers causal LM, meta device welcome) on ``chips`` x ``target``.

    Without ``parallel``, every split of the chips that holds the model is tried (replicas, when
    there are enough sequences, or one model split over all chips) and the one with the shortest
    end-to-end latency is returned; prefill and decode use the same split, as a deployment does.
    """
    example = "serve(model, target='h100', prompt_tokens=128, output_tokens=128)"
    for name, value in (("prompt_tokens", prompt_tokens), ("output_tokens", output_tokens), ("batch", batch)):
        whole(name, value, example=example)
    # checked once; a server runs its engine unless told otherwise
    options = CompileOptions.check(target, precision=precision, chips=chips, mode=mode, parallel=parallel,
                                   stack=stack, role="serve")
    return serve_with(model, options, batch=batch, prompt_tokens=prompt_tokens, output_tokens=output_tokens)


def serve_with(model: nn.Module, options: CompileOptions, *, batch: int, prompt_tokens: int,
               output_tokens: int) -> ServingEstimate:
    """:func:`serve` for options already checked: without a split, each split of the chips that holds the model
    is modelled (replicas when there are enough sequences, one model over all chips) and the one with the
    shortest end-to-end latency is returned."""
    _ = options.rates  # computed once, here: every configuration's options (copies of these) share them
    if options.parallel is not None or options.chips == 1:
        return _serve_one(model, options, batch=batch, prompt_tokens=prompt_tokens, output_tokens=output_tokens)
    chips = options.chips
    splits = ([Parallel(data=chips)] if batch >= chips and batch % chips == 0 else []) + [options.family.split(chips)]
    results = []
    error: Exception | None = None
    for par in splits:
        try:
            results.append(_serve_one(model, options.but(parallel=par), batch=batch, prompt_tokens=prompt_tokens,
                                      output_tokens=output_tokens))
        except AccelkitError as exc:
            error = error or exc
    if not results:
        assert error is not None
        raise error
    return min(results, key=lambda e: e.latency_s)


def _serve_one(model: nn.Module, options: CompileOptions, *, batch: int, prompt_tokens: int,
               output_tokens: int) -> ServingEstimate:
    """One configuration: prefill and decode compiled with the same options (and so the same split)."""
    layers, kv_heads, head_dim, heads = _kv_shape(model)
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    # captured at one sequence (once per prompt length) and compiled for the batch: every kernel of a causal LM
    # scales with the sequences, so a sweep over batch sizes reuses the two captured graphs
    prompt: Any = torch.zeros(1, prompt_tokens, dtype=torch.long, device=device)
    if "logits_to_keep" in inspect.signature(model.forward).parameters:
        # a server computes the next-token logits of the last prompt position only, not of every one
        prompt = {"input_ids": prompt, "logits_to_keep": 1}
    step = torch.zeros(1, 1, dtype=torch.long, device=device)
    decode = compile_with(model, (step,), options.but(batch_size=batch))
    prefill, chunks = _prefill(model, prompt, batch, options)
    r = options.rates
    elem = element_bytes(options.precision)
    shards = decode.parallel.model_shards
    kv_per_token = 2 * layers * kv_heads * head_dim * elem
    kv_tier, max_batch, fastest = _kv_home(decode, prefill, batch,
                                           (prompt_tokens + output_tokens) * kv_per_token / shards)
    # the KV cache: read once per decode step, at the mean context of the generation
    context = prompt_tokens + output_tokens / 2
    kv_read = batch / decode.parallel.data * context * kv_per_token / shards
    kv_s = options.family.kv_read_s(kv_read, kv_tier, r, group=max(1, heads // kv_heads), stack=options.stack)
    attn_flops = batch / decode.parallel.data * 4 * layers * heads * head_dim * context / shards
    attn_s = attn_flops / r.matmul_flops
    base = decode.report.step_time_s
    decode_s = base + max(kv_s, attn_s)
    ttft = prefill.report.step_time_s * chunks
    bound = decode.report.bound_by
    decode_bound = "memory" if kv_s > attn_s and kv_s > constants.value("SERVE_MEMORY_BOUND_SHARE") * base else max(bound, key=lambda b: bound[b])
    kv_total = batch * (prompt_tokens + output_tokens) * kv_per_token
    per_chip = shards  # a replica's kernels are the whole model's; its chips share them
    phases = (PhaseWork("prefill", sum(k.flops for k in prefill.report.kernels) * chunks / per_chip,
                        sum(k.bytes for k in prefill.report.kernels) * chunks / per_chip, ttft),
              PhaseWork("decode", sum(k.flops for k in decode.report.kernels) / per_chip + attn_flops,
                        sum(k.bytes for k in decode.report.kernels) / per_chip + kv_read, decode_s))
    notes = [f"KV cache {kv_per_token / 1e3:.0f} kB per token, read from {kv_tier}",
             *([f"prefill in {chunks} chunks of {prefill.batch_size} sequences: the whole batch's activations "
                "do not fit at once (chunked prefill)"] if chunks > 1 else []),
             "decode timed at the mean context length; every sequence generates the same number of tokens"]
    est = ServingEstimate(
        model=type(model).__name__, target=prefill.target, chips=options.chips, batch=batch,
        prompt_tokens=prompt_tokens, output_tokens=output_tokens, precision=options.precision, mode=decode.mode,
        parallel=decode.parallel,
        ttft_s=ttft, decode_step_s=decode_s, tokens_per_s_per_user=1.0 / decode_s,
        tokens_per_s=batch / decode_s, latency_s=ttft + output_tokens * decode_s,
        weights_bytes_per_chip=decode.memory_plan.weights_bytes, kv_cache_bytes=int(kv_total),
        decode_bound=decode_bound, notes=tuple(notes), kv_tier=kv_tier, max_batch=max_batch,
        prefill=phases[0], decode=phases[1], stack=options.stack,
    )
    if 0 < fastest < batch:  # the cache spills to a slower tier: a server would rather queue sequences
        return _in_waves(est, fastest, lambda b: _serve_one(
            model, options, batch=b, prompt_tokens=prompt_tokens, output_tokens=output_tokens))
    return est


def _in_waves(spill: ServingEstimate, holds: int, serve_batch: Callable[[int], ServingEstimate]) -> ServingEstimate:
    """The faster of two ways to serve a batch whose KV cache does not fit in the fastest tier: the cache spills to
    a slower one (``spill``), or the batch runs in waves of at most ``holds`` sequences, the rest queued. Servers do
    the latter: vLLM's and TensorRT-LLM's schedulers admit a sequence while KV-cache blocks are free. Measured
    (LLM-Inference-Bench, GH200, TensorRT-LLM, Llama-2-7B, 2,048 + 2,048 tokens): batch 64, whose cache does not
    fit in 96 GB of HBM, takes 85.6 s, 2.09x batch 32's 40.9 s: two waves, no spill to Grace's LPDDR5X."""
    waves = math.ceil(spill.batch / holds)
    try:
        wave = serve_batch(math.ceil(spill.batch / waves))
    except AccelkitError:  # a wave that cannot be served leaves the spill
        return spill
    if waves * wave.latency_s >= spill.latency_s:
        return spill
    note = (f"in {waves} waves of at most {wave.batch} sequences, the rest queued: the KV cache of all {spill.batch} "
            f"fits in {wave.kv_tier} only in part, and spilling it to {spill.kv_tier} would take "
            f"{fmt_s(spill.latency_s)} in all (TTFT and tokens/s are a wave's)")
    return replace(wave, batch=spill.batch, waves=waves, latency_s=waves * wave.latency_s,
                   notes=(*wave.notes, note))


def _prefill(model: nn.Module, prompt: Any, batch: int, options: CompileOptions) -> tuple[CompiledProgram, int]:
    """The prefill program and how many times it runs: the whole batch at once, or (when its activations do not
    fit beside the weights) the largest chunk of sequences that does, run one chunk after another."""
    inputs = prompt if isinstance(prompt, dict) else (prompt,)

    def halve(chunk: int, _error: ModeError) -> int | None:
        return None if chunk <= options.chips else max(1, chunk // 2)

    chunk_used: list[int] = []

    def attempt(chunk: int) -> CompiledProgram:
        prog = compile_with(model, inputs, options.but(batch_size=chunk))
        chunk_used.append(chunk)
        return prog

    prog = first_that_fits(attempt, batch, halve)
    return prog, math.ceil(batch / chunk_used[-1])


def _kv_home(decode: Any, prefill: Any, batch: int, per_sequence: float) -> tuple[str, int, int]:
    """Where the KV cache of ``batch`` sequences (``per_sequence`` bytes each per chip, at full context) lives, the
    most sequences that tier holds, and the most the fastest tier holds. It lives in the fastest tier with room
    beside the weights and the activations the memory plans put there (activations grow with the sequences too;
    prefill's are the larger). A slower tier takes the cache when a faster one is full (a modelled spill: decode
    reads it at that tier's bandwidth; :func:`_in_waves` weighs it against queueing sequences).
    Raises :class:`ServingCapacityError` naming the largest batch when no tier holds it."""
    spec = decode.spec
    replicas = decode.parallel.data
    fits: dict[str, int] = {}
    for tier in holding_tiers(spec):
        name = tier.name
        cap = usable_bytes(spec)[name]
        fixed, per_seq = 0.0, per_sequence
        for prog in (decode, prefill):
            p = prog.memory_plan
            act = p.activation_bytes if p.placement["activation"] == name else 0
            fixed = max(fixed, p.tier_use.get(name, 0) - act)
            per_seq = max(per_seq, per_sequence + act / max(1.0, prog.batch_size / replicas))
        fits[name] = int(max(0.0, cap - fixed) // per_seq) * replicas if per_seq else 10**12
    for name, n in fits.items():
        if n >= batch:
            return name, n, next(iter(fits.values()))
    best = max(fits.values(), default=0)
    largest = max(fits, key=lambda t: fits[t]) if fits else "-"
    raise ServingCapacityError(
        f"the KV cache of {batch} sequences does not fit on {decode.chips} x {spec.name}: each sequence needs "
        f"{fmt_bytes(int(per_sequence))} per chip at full context, and beside the weights the most that fit is "
        f"{best} sequence(s) (in {largest})",
        fix=f"serve at most batch={best}" + (", " if best else " ") + "use more chips, fewer tokens or a lower "
            "precision", largest_batch=best)


class ServingCapacityError(AccelkitError, ValueError):
    """A serving batch whose KV cache does not fit; ``largest_batch`` is the most sequences that do."""

    def __init__(self, message: str, *, fix: str | None = None, largest_batch: int = 0) -> None:
        super().__init__(message, fix=fix)
        self.largest_batch = largest_batch
