"""``ak.serve``: serving figures (modelled) and what limits them."""

from __future__ import annotations

import math

import pytest
import torch

import accelkit as ak
from accelkit.compiler.program import _GRAPHS
from accelkit.sim.serve import ServingCapacityError


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


@pytest.mark.parametrize("target", ["tpu-v4", "tpu-v5e"])
def test_a_tpu_serves_from_hbm_and_splits_layers_over_its_torus(tiny_llama, target):
    """The KV cache lives in HBM (VMEM/CMEM only stage tiles); over 4 chips each layer is split (GSPMD's tensor
    parallelism), and for a model this small the all-reduces' hops over the ICI torus cost more than the split
    saves."""
    one = ak.serve(tiny_llama, target=target, batch=4, prompt_tokens=32, output_tokens=8)
    assert one.kv_tier == "hbm" and one.tokens_per_s > 0 and one.latency_s > one.ttft_s
    four = ak.serve(tiny_llama, target=target, chips=4, batch=4, prompt_tokens=32, output_tokens=8,
                    parallel=ak.Parallel(tensor=4))
    assert four.weights_bytes_per_chip == pytest.approx(one.weights_bytes_per_chip / 4, rel=0.01)
    assert four.decode_step_s > one.decode_step_s


@pytest.mark.parametrize("target", ["gaudi2", "gaudi3", "mi250", "mi300x", "gh200", "inf2", "trn1"])
def test_every_new_system_serves(tiny_llama, target):
    """Issue 12's other systems serve too (the TPUs above): both phases modelled, decode no faster than a token
    per step of the weights' read at the chip's published bandwidth."""
    est = ak.serve(tiny_llama, target=target, batch=4, prompt_tokens=32, output_tokens=8, precision="bf16")
    spec = ak.hardware.get(target)
    assert est.ttft_s > 0 and est.latency_s > est.ttft_s and est.tokens_per_s > 0
    fastest_tier = max(t.bandwidth_Bps for t in spec.memory_tiers)
    assert est.decode_step_s >= est.weights_bytes_per_chip / fastest_tier


@pytest.fixture(scope="module")
def llama8b():
    from accelkit.sim.validate import MODELS

    return MODELS["llama3-8b"]()


def test_the_new_gpu_systems_serve_by_their_own_memory(llama8b):
    """Decode reads the weights every token: the MI300X (5.3 TB/s) beats the MI250 (3.3 TB/s), the GH200 (4 TB/s
    of HBM3) beats the H100 (3.35 TB/s) it extends."""
    kw = {"batch": 1, "prompt_tokens": 512, "output_tokens": 64, "precision": "fp16"}  # the graphs of the next test
    tpot = {t: ak.serve(llama8b, target=t, **kw).tpot_s for t in ("mi250", "mi300x", "gh200", "h100")}
    assert tpot["mi300x"] < tpot["mi250"] and tpot["gh200"] < tpot["h100"]


def test_ttft_and_tpot_are_reported_apart_and_add_up_to_the_latency(llama8b):
    est = ak.serve(llama8b, target="h100", batch=8, prompt_tokens=512, output_tokens=64)
    assert est.tpot_s == est.decode_step_s and est.ttft_s > est.tpot_s  # a 512-token prefill beats one token
    assert est.latency_s == pytest.approx(est.ttft_s + 64 * est.tpot_s)
    assert "TTFT" in est.summary() and "TPOT" in est.summary()
    longer = ak.serve(llama8b, target="h100", batch=8, prompt_tokens=1024, output_tokens=64)
    assert longer.ttft_s > 1.8 * est.ttft_s  # prefill grows with the prompt


def test_a_batch_whose_kv_cache_does_not_fit_names_the_largest_that_does(llama8b):
    kw = {"target": "a100", "prompt_tokens": 1024, "output_tokens": 1024, "precision": "fp16"}
    with pytest.raises(ak.AccelkitError, match="KV cache of 512 sequences does not fit") as info:
        ak.serve(llama8b, batch=512, **kw)
    largest = info.value.largest_batch
    assert f"batch={largest}" in info.value.fix and 50 < largest < 512
    fits = ak.serve(llama8b, batch=largest, **kw)  # the batch it names is served
    assert fits.max_batch == largest and fits.kv_tier == "hbm"
    with pytest.raises(ak.AccelkitError):
        ak.serve(llama8b, batch=largest + 1, **kw)


def test_a_kv_cache_beyond_on_chip_memory_spills_to_the_next_tier(llama8b):
    """On a wafer the KV cache sits in SRAM while it fits; more sequences put it in MemoryX (a modelled spill)."""
    kw = {"target": "wse3", "prompt_tokens": 2048, "output_tokens": 2048}
    small = ak.serve(llama8b, batch=1, **kw)
    assert small.kv_tier == "sram" and small.max_batch >= 1
    big = ak.serve(llama8b, batch=small.max_batch + 1, **kw)
    # MemoryX would hold the whole cache (a modelled spill, 5x slower per token), but serving the batch in two
    # waves whose caches fit in SRAM ends sooner, so the estimate queues half the sequences, as a server would
    assert big.waves == 2 and big.kv_tier == "sram" and "spilling it to memoryx" in big.notes[-1]
    half = ak.serve(llama8b, batch=math.ceil(big.batch / 2), **kw)
    assert big.latency_s == pytest.approx(2 * half.latency_s) and big.tpot_s == half.tpot_s


def test_a_batch_whose_kv_cache_spills_runs_in_waves_when_that_is_faster():
    """LLM-Inference-Bench, GH200 (96 GB of HBM3), TensorRT-LLM, Llama-2-7B, 2,048 + 2,048 tokens: batch 64 took
    85.6 s, 2.09x batch 32's 40.9 s. Its KV cache (69 GB at batch 32) fits in HBM only for 36 sequences; spilling
    the rest to Grace's LPDDR5X (450 GB/s) was modelled at 601 s (+602%); two waves of 32 are 2x batch 32."""
    from accelkit.sim.bench import MODELS

    llama2 = MODELS["meta-llama/Llama-2-7b-hf"]()
    kw = {"target": "gh200", "prompt_tokens": 2048, "output_tokens": 2048, "precision": "fp16"}
    b32, b64 = (ak.serve(llama2, batch=b, **kw) for b in (32, 64))
    assert (b32.waves, b64.waves, b64.kv_tier) == (1, 2, "hbm") and b64.latency_s == pytest.approx(2 * b32.latency_s)
    assert abs(b64.latency_s / 85.6 - 1) < 0.15 and "in 2 waves of at most 32" in b64.summary()
    with pytest.raises(ServingCapacityError):  # an H100 has no slower tier: the batch is refused, as before
        ak.serve(llama2, batch=64, **{**kw, "target": "h100"})


def test_prefill_and_decode_sit_on_the_roofline_where_their_bounds_say(llama8b):
    """Prefill is compute-bound (right of the HBM ridge), one decode step memory-bound (left of it, near the HBM
    roof); a larger batch moves decode right. The figure draws both phases of every estimate."""
    from accelkit.sim.estimate import rates
    from accelkit.viz.perf import serving_roofline

    kw = {"target": "h100", "prompt_tokens": 512, "output_tokens": 128}
    one, many = (ak.serve(llama8b, batch=b, **kw) for b in (1, 32))
    r = rates(ak.hardware.get("h100"), "bf16")
    ridge = r.matmul_flops / r.tier_bw["hbm"]
    assert one.prefill.intensity > ridge > many.decode.intensity > one.decode.intensity
    assert one.prefill.time_s == one.ttft_s and one.decode.time_s == one.tpot_s
    # decode reads every weight and the KV cache: its FLOP/s is close to the HBM roof at its intensity
    assert 0.5 < one.decode.flops_per_s / (one.decode.intensity * r.tier_bw["hbm"]) <= 1.0
    assert one.decode.bytes > one.weights_bytes_per_chip  # the weights, plus the KV cache
    fig = serving_roofline([one, many])
    names = [t.name for t in fig.data]
    assert {"prefill, batch 1", "decode, batch 1", "prefill, batch 32", "decode, batch 32"} <= set(names)
    with pytest.raises(ValueError, match="one target and precision"):
        serving_roofline([one, ak.serve(llama8b, batch=1, target="a100", prompt_tokens=512, output_tokens=128)])
