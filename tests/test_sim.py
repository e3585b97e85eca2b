"""Invariants of each execution model (accelkit.sim.estimate), on small models: fast, no meta giants.

Each test states a property the family's execution model must have whatever its constants: a static
schedule is deterministic, a roofline kernel is never faster than its roofs, a pipelined wafer's
throughput is set by its slowest region, fused RDU sections are no slower than unfused ones, an IPU
superstep is compute + exchange + sync, and the usual training and parallelism arithmetic holds.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit import families
from accelkit.compiler import CompileError, ModeError, Parallel
from accelkit.sim.constants import CHIP_HOP_LATENCY_S
from accelkit.sim.estimate import allreduce_s, estimate, rates

TARGETS = ["wse2", "wse3", "sn30", "sn40l", "gc200", "bow", "tsp", "a100", "h100"]


def precision_for(target: str) -> str:
    return "bf16" if "bf16" in ak.hardware.get(target).peak_flops else "fp16"


def _gpt2(layers: int = 2, hidden: int = 256) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(n_layer=layers, n_embd=hidden, n_head=4, vocab_size=1000, n_positions=128,
                                      use_cache=False, bos_token_id=0, eos_token_id=0)).eval()


class Wide(nn.Module):
    """``n`` square linear layers: 200 x 16384^2 = 54 B parameters (107 GB in bf16), built on meta."""

    def __init__(self, n: int = 200, d: int = 16384) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d, d, bias=False) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


@pytest.fixture(scope="module")
def gpt2():
    """A small GPT-2 and token inputs (4 sequences of 128); its graphs are captured once per module."""
    return _gpt2(), (torch.randint(0, 1000, (4, 128)),)


@pytest.fixture(scope="module")
def gpt2_deeper():
    return _gpt2(layers=4), (torch.randint(0, 1000, (4, 128)),)


# ---- static schedule (TSP) ----------------------------------------------------------------------
def test_tsp_is_deterministic(gpt2):
    model, x = gpt2
    a = ak.compile(model, x, target="tsp", precision="fp16")
    b = ak.compile(model, x, target="tsp", precision="fp16")
    assert estimate(a).step_time_s == estimate(a).step_time_s == b.report.step_time_s
    assert a.placement.extra["total_cycles"] == b.placement.extra["total_cycles"]
    assert [r.cycles for r in a.placement.regions] == [r.cycles for r in b.placement.regions]
    assert [k.time_s for k in estimate(a).kernels] == [k.time_s for k in b.report.kernels]


@pytest.mark.parametrize(("batch", "chips"), [(64, 1), (4, 1), (64, 2)])
def test_tsp_step_is_its_cycles_over_the_clock_plus_chip_hops(gpt2, batch, chips):
    model, x = gpt2
    prog = ak.compile(model, x, target="tsp", precision="fp16", batch_size=batch, chips=chips,
                      parallel=Parallel(pipeline=chips))
    report = prog.report
    hops = sum(k.comm_s for k in report.kernels)
    assert (hops > 0) == (chips > 1)
    cycles = prog.placement.extra["total_cycles"]
    assert cycles == sum(r.cycles for r in prog.placement.regions)
    # the schedule's cycles, the hops between chips, and the host link (GroqFlow's PCIe latency and bytes)
    assert report.step_time_s == pytest.approx(cycles / prog.spec.clock_hz + hops + report.io_s, rel=1e-9)
    assert report.io_s > 2 * ak.constants.value("GROQFLOW_PCIE_LATENCY_S")


# ---- kernel by kernel (GPU): the roofline --------------------------------------------------------
@pytest.mark.parametrize("target", ["a100", "h100"])
@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_gpu_kernels_respect_their_roofs(gpt2, target, precision):
    model, x = gpt2
    prog = ak.compile(model, x, target=target, precision=precision, batch_size=256)
    spec = prog.spec
    peak, hbm = spec.peak(precision), spec.tier("hbm").bandwidth_Bps
    report = prog.report
    bounds = set()
    for k in report.kernels:
        assert k.time_s >= max(k.flops / peak, k.bytes / hbm)  # never faster than the datasheet's roofs
        assert k.time_s >= max(k.compute_s, k.memory_s)
        parts = {"compute": k.compute_s, "memory": k.memory_s, "communication": k.comm_s, "latency": k.overhead_s}
        assert parts[k.bound] == max(parts.values()), k
        assert 0.0 <= k.utilization <= 1.0
        bounds.add(k.bound)
    assert {"compute", "memory"} <= bounds  # matmuls and elementwise ops land on different roofs
    assert all(0.0 <= u <= 1.0 for u in report.utilization.values())


def test_tensor_parallel_utilization_stays_below_one():
    model = _gpt2(hidden=1024)  # wide enough for its matmuls to be compute-bound
    report = ak.compile(model, (torch.randint(0, 1000, (4, 128)),), target="h100", chips=4,
                        parallel=Parallel(tensor=4), batch_size=64).report
    assert all(k.utilization <= 1.0 for k in report.kernels)


@pytest.mark.parametrize("target", TARGETS)
def test_utilization_at_most_one_on_every_target(gpt2, target):
    model, x = gpt2
    chips = 2 if target == "tsp" else 1
    report = ak.compile(model, x, target=target, precision=precision_for(target), chips=chips).report
    assert all(0.0 <= k.utilization <= 1.0 for k in report.kernels)
    assert all(0.0 <= u <= 1.0 for u in report.utilization.values())


# ---- wafer (WSE) -----------------------------------------------------------------------------------
def _slowest_region_per_sample(prog) -> float:
    """The slowest region's time for one sample, from the report's kernels and the placement's regions.

    The mesh path (``overhead_s``) is pipelined with the next sample: it adds to latency only.
    """
    kt = {k.name: k for k in prog.report.kernels}
    per_region = [sum(max(kt[n].compute_s, kt[n].memory_s) / prog.batch_size for n in region.kernels)
                  for region in prog.placement.regions]
    return max(per_region)


def test_pipelined_wafer_throughput_is_set_by_the_slowest_region(gpt2):
    model, x = gpt2
    progs = {b: ak.compile(model, x, target="wse2", batch_size=b, mode="pipelined") for b in (7, 8)}
    assert all(p.mode == "pipelined" for p in progs.values())
    step = {b: p.report.step_time_s - p.report.io_s for b, p in progs.items()}  # the wafer's own work
    # equal up to the weights' SRAM reads, which amortise over the batch (≈0.2% here)
    assert step[8] - step[7] == pytest.approx(_slowest_region_per_sample(progs[8]), rel=1e-2)
    assert progs[8].report.latency_s < step[8]  # one sample's path is shorter than the whole batch


@pytest.mark.parametrize("batch", [1, 16])
def test_weight_streaming_is_slower_than_pipelined_when_both_fit(gpt2, batch):
    model, x = gpt2
    piped = ak.compile(model, x, target="wse2", batch_size=batch, mode="pipelined")
    streamed = ak.compile(model, x, target="wse2", batch_size=batch, mode="weight-streaming")
    assert (piped.mode, streamed.mode) == ("pipelined", "weight-streaming")
    # the wafer's own work (a tiny model's logits can make the host link the bound of both)
    assert streamed.report.step_time_s - streamed.report.io_s > piped.report.step_time_s - piped.report.io_s


# ---- reconfigurable dataflow (RDU) ------------------------------------------------------------------
@pytest.mark.parametrize("target", ["sn30", "sn40l"])
def test_rdu_layer_sections_are_no_slower_than_op_sections(gpt2, target):
    model, x = gpt2
    o0 = ak.compile(model, x, target=target, fusion="o0").report
    o1 = ak.compile(model, x, target=target, fusion="o1").report
    assert o1.step_time_s <= o0.step_time_s
    # one section switch per section: o0 has one section per kernel
    def lanes(r):
        return {e.lane for e in r.events if e.lane != "host link"}

    assert len(lanes(o0)) == len(o0.kernels) > len(lanes(o1))


# ---- bulk-synchronous tiles (IPU) ------------------------------------------------------------------
@pytest.mark.parametrize("target", ["gc200", "bow"])
def test_ipu_superstep_is_compute_or_memory_plus_exchange_plus_sync(gpt2, target):
    model, x = gpt2
    prog = ak.compile(model, x, target=target, precision="fp16")
    spec = prog.spec
    exchange_Bps = (spec.fabric_Bps or spec.on_chip_bandwidth_Bps) * 0.8
    moved = {k.name: max(0, k.bytes_read - k.param_bytes) + k.out_bytes for k in prog.kernels}
    # a matmul's busiest tile receives at least 3 (MNK / T)^(2/3) fp16 elements, less the 1 / T of the three
    # matrices it holds (where its K and N were captured), at 1 / T of the exchange
    tiles = spec.compute_units

    def least(k):
        mnk = (k.flops - k.vector_flops - k.score_flops) / 2
        words = 3 * (mnk / tiles) ** (2 / 3)
        if k.matmul_dims and not {"bmm", "baddbmm", "matmul"} & set(k.ops):
            kk, n = k.matmul_dims
            m = mnk / (kk * n)
            words -= (m * n + m * kk + kk * n) / tiles
        return max(0.0, words) * 2 / (exchange_Bps / tiles)

    floor = {k.name: least(k) for k in prog.kernels if k.kind == "matmul"}
    from accelkit.constants import value

    for k in prog.report.kernels:
        # the sync, or what lifts a short kernel to the length of its op's program (IPU_OP_FLOOR_S)
        work = max(k.compute_s, k.memory_s) + k.comm_s
        assert k.overhead_s == pytest.approx(max(families.model_for("bsp-tiles").launch.value,
                                                 value("IPU_OP_FLOOR_S") - work))
        # the exchange: inputs in, results out, and for a matmul no less than its busiest tile must receive
        assert k.comm_s == pytest.approx(max(moved[k.name] / exchange_Bps, floor.get(k.name, 0.0)))
        assert k.time_s == pytest.approx(max(k.compute_s, k.memory_s) + k.comm_s + k.overhead_s, rel=1e-12)
    assert prog.report.step_time_s == pytest.approx(sum(k.time_s for k in prog.report.kernels) + prog.report.io_s)
    assert any(floor[k.name] > moved[k.name] / exchange_Bps for k in prog.report.kernels if k.name in floor)


def test_ipu_matmul_exchange_weighs_less_as_the_product_grows():
    """On the IPU a matmul's exchange phase adds to its compute phase, and what the busiest tile must receive grows
    as (MNK)^(2/3) where the work grows as MNK: a small product spends a larger share exchanging."""
    share = {}
    for n in (256, 1024, 4096):
        prog = ak.compile(nn.Linear(n, n, bias=False), torch.randn(n, n), target="gc200", precision="fp16")
        k = prog.report.kernels[0]
        assert k.comm_s > 0 and k.time_s == pytest.approx(max(k.compute_s, k.memory_s) + k.comm_s + k.overhead_s)
        share[n] = k.comm_s / k.compute_s
    assert share[256] > share[1024] > share[4096] > 0


# ---- training ---------------------------------------------------------------------------------------
def _train(model_x, **kw):
    model, x = model_x
    kw.setdefault("target", "a100")
    kw.setdefault("batch_size", 8)
    return ak.compile(model, x, training=True, **kw)


def test_training_step_has_forward_backward_and_optimizer(gpt2):
    report = _train(gpt2).report
    assert {k.section for k in report.kernels} == {"fwd", "bckwd", "opt"}
    assert all(report.sections_s[s] > 0 for s in ("fwd", "bckwd", "opt"))
    assert report.step_time_s == pytest.approx(sum(report.sections_s.values()))


def test_recompute_costs_time(gpt2):
    step = {rc: _train(gpt2, recompute=rc).report.step_time_s for rc in ("none", "selective", "full")}
    assert step["full"] >= step["selective"] >= step["none"]
    assert step["full"] > step["none"]


def test_gradient_accumulation_runs_every_micro_batch(gpt2):
    four = _train(gpt2, batch_size=8, micro_batch=2).report
    one = _train(gpt2, batch_size=2, micro_batch=2).report
    assert four.sections_s["fwd"] == pytest.approx(4 * one.sections_s["fwd"], rel=1e-6)
    assert four.sections_s["bckwd"] == pytest.approx(4 * one.sections_s["bckwd"], rel=1e-6)
    assert four.sections_s["opt"] == pytest.approx(one.sections_s["opt"])  # one optimizer step per step
    assert four.throughput > one.throughput


def test_micro_batch_is_shared_by_the_data_parallel_replicas(gpt2):
    """micro_batch is the micro-batch of all the replicas together: over 4 replicas, micro_batch=8 runs 2 samples per
    replica at a time, the same work per micro-batch as one chip's micro_batch=2, and the notes say so; one that does
    not split into whole samples per replica is refused (explicit split) or avoided (automatic split)."""
    four = _train(gpt2, batch_size=32, micro_batch=8, chips=4, parallel=Parallel(data=4)).report
    one = _train(gpt2, batch_size=8, micro_batch=2).report
    assert four.sections_s["fwd"] == pytest.approx(one.sections_s["fwd"], rel=1e-6)  # 4 micro-batches of 2 each
    assert "gradients accumulated over 4 micro-batches of 2 samples per replica" in four.notes
    with pytest.raises(CompileError, match=r"micro_batch=2 is the micro-batch of all 4 data-parallel") as err:
        _train(gpt2, batch_size=32, micro_batch=2, chips=4, parallel=Parallel(data=4))
    assert "micro_batch=8" in err.value.fix
    auto = _train(gpt2, batch_size=32, micro_batch=2, chips=4)
    assert 2 % auto.parallel.data == 0


def test_data_parallel_all_reduce_grows_with_parameters(gpt2, gpt2_deeper):
    comm = {}
    for name, mx in (("2 layers", gpt2), ("4 layers", gpt2_deeper)):
        prog = _train(mx, chips=4, parallel=Parallel(data=4))
        assert prog.report.sections_s["comm"] == pytest.approx(
            allreduce_s(prog.memory_plan.gradient_bytes, 4, rates(prog.spec, prog.precision)))
        comm[name] = prog.report.sections_s["comm"]
    assert 0 < comm["2 layers"] < comm["4 layers"]
    assert _train(gpt2).report.sections_s["comm"] == 0.0  # one chip: nothing to reduce


def test_zero_shards_the_training_state_over_the_replicas_and_zero_3_gathers_the_weights(gpt2):
    """ZeRO over 4 data-parallel replicas: stage 1 divides the optimizer state (and its update) by 4, stage 2 the
    gradients too, stage 3 the weights too, which every micro-batch then gathers twice; the gradient exchange moves
    the same bytes whatever the stage."""
    plain, one, two, three = (_train(gpt2, batch_size=32, micro_batch=8, chips=4, parallel=Parallel(data=4, zero=z))
                              for z in range(4))
    p0, p1, p2, p3 = (p.memory_plan for p in (plain, one, two, three))
    assert p1.optimizer_bytes == pytest.approx(p0.optimizer_bytes / 4, rel=0.01)
    assert p1.gradient_bytes == p0.gradient_bytes and p1.weights_bytes == p0.weights_bytes
    assert p2.gradient_bytes == pytest.approx(p0.gradient_bytes / 4, rel=0.01) and p2.weights_bytes == p0.weights_bytes
    assert p3.weights_bytes == pytest.approx(p0.weights_bytes / 4, rel=0.01)
    r0, r1, r2, r3 = (p.report for p in (plain, one, two, three))
    assert r1.sections_s["opt"] == pytest.approx(r0.sections_s["opt"] / 4)
    assert r2.sections_s["comm"] == pytest.approx(r0.sections_s["comm"]) == pytest.approx(r1.sections_s["comm"])
    gathers = 4 * allreduce_s(p0.weights_bytes, 4, rates(plain.spec, plain.precision))  # 4 micro-batches
    assert r3.sections_s["comm"] == pytest.approx(r0.sections_s["comm"] + gathers, rel=0.01)
    assert three.parallel.split() == "data 4 (ZeRO-3)" and plain.parallel.split() == "data 4"
    assert any("ZeRO-3: each micro-batch gathers the weights" in n for n in r3.notes)
    with pytest.raises(CompileError, match="ZeRO stage"):
        Parallel(data=4, zero=4)


def test_a_model_whose_training_state_fits_no_replica_is_told_about_zero():
    """4.3 B weights trained in bf16 with AdamW need about 70 GB per replica: two 40 GB A100s as data-parallel
    replicas hold it only when ZeRO shards it, and the error says so."""
    with torch.device("meta"):
        model = nn.Sequential(*[nn.Linear(8192, 8192) for _ in range(64)])
    x = (torch.zeros(8, 8192, device="meta"),)
    with pytest.raises(ModeError) as err:
        ak.compile(model, x, target="a100-40gb", chips=2, parallel=Parallel(data=2), training=True, precision="bf16")
    assert "zero=1" in err.value.fix
    fits = ak.compile(model, x, target="a100-40gb", chips=2, parallel=Parallel(data=2, zero=3), training=True,
                      precision="bf16")
    assert fits.memory_plan.weights_bytes == pytest.approx(64 * 8192 * 8192 * 2 / 2, rel=0.01)


def test_tensor_parallel_divides_each_chips_compute(gpt2):
    one = _train(gpt2).report
    four = _train(gpt2, chips=4, parallel=Parallel(tensor=4)).report
    compute = lambda r: sum(k.compute_s for k in r.kernels)  # noqa: E731
    assert compute(four) == pytest.approx(compute(one) / 4, rel=1e-3)
    assert four.sections_s["comm"] > 0  # two all-reduces per layer per pass


def test_pipeline_bubble_shrinks_with_more_micro_batches(gpt2):
    p = 4
    bubbles = []
    for n in (1, 2, 4, 8):
        report = _train(gpt2, batch_size=16, micro_batch=16 // n, chips=p, parallel=Parallel(pipeline=p)).report
        # sections hold one chip's share: n micro-batches of 1/p of the work each
        work = report.sections_s["fwd"] + report.sections_s["bckwd"] + report.sections_s["comm"]
        micro = work * p / n
        pipelined = report.step_time_s - report.sections_s["opt"]
        assert pipelined == pytest.approx(work + report.sections_s["bubble"], rel=1e-9)
        bubble = 1 - n * (micro / p + CHIP_HOP_LATENCY_S) / pipelined
        assert bubble == pytest.approx((p - 1) / (n + p - 1), rel=1e-6)
        bubbles.append(bubble)
    assert bubbles == sorted(bubbles, reverse=True) and bubbles[-1] < bubbles[0]


# ---- precision ---------------------------------------------------------------------------------------
def test_precision_changes_arithmetic_rate_and_bytes_moved(gpt2):
    model, x = gpt2
    fp32 = ak.compile(model, x, target="a100", precision="fp32", batch_size=16)
    bf16 = ak.compile(model, x, target="a100", precision="bf16", batch_size=16)
    assert rates(fp32.spec, "fp32").matmul_flops < rates(bf16.spec, "bf16").matmul_flops
    assert fp32.report.traffic_bytes["hbm"] == pytest.approx(2 * bf16.report.traffic_bytes["hbm"], rel=0.01)
    assert fp32.report.step_time_s > bf16.report.step_time_s
    matmul = lambda r: next(k for k in r.kernels if k.bound == "compute")  # noqa: E731
    assert matmul(fp32.report).compute_s > matmul(bf16.report).compute_s


# ---- the report: trace, labels, assumptions ---------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_report_is_labelled_modelled_and_traces(gpt2, target, tmp_path):
    model, x = gpt2
    report = ak.compile(model, x, target=target, precision=precision_for(target),
                        chips=2 if target == "tsp" else 1).report
    assert report.label == "modelled" and "MODELLED" in report.summary()
    assert report.assumptions and all(isinstance(a, str) and a for a in report.assumptions)
    path = report.to_chrome_trace(tmp_path / "trace.json")
    doc = json.loads(open(path).read())
    assert all("ph" in e for e in doc["traceEvents"])
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == len(report.events) > 0
    for e in spans:
        assert math.isfinite(e["ts"]) and e["dur"] > 0
    ends = max(e.start_s + e.duration_s for e in report.events)
    assert ends <= report.step_time_s * (1 + 1e-9) or report.family == "wafer-dataflow"


# ---- data against model parallelism, in numbers -----------------------------------------------------
def test_small_model_trains_faster_data_parallel(gpt2):
    """Compiled (fused kernels, no host issuing each op): the split is about communication against compute. In
    eager PyTorch a small model is bound by each GPU's host, and a pipeline stage's host issues fewer ops."""
    through = {name: _train(gpt2, batch_size=32, chips=8, parallel=par, stack="compiled").report.throughput
               for name, par in (("data", Parallel(data=8)), ("tensor", Parallel(tensor=8)),
                                 ("pipeline", Parallel(pipeline=8)))}
    assert through["data"] > through["tensor"] and through["data"] > through["pipeline"]
    assert _train(gpt2, batch_size=32, chips=8, stack="compiled").parallel == Parallel(data=8)  # compile's pick


def test_model_too_big_for_one_chip_needs_model_parallelism():
    with torch.device("meta"):
        wide = Wide()
    x = (torch.zeros(8, 16384, device="meta"),)
    with pytest.raises(ModeError, match="fits no execution mode"):
        ak.compile(wide, x, target="a100", chips=8, parallel=Parallel(data=8))  # each replica holds 107 GB
    split = ak.compile(wide, x, target="a100", chips=8)
    assert split.parallel.model_shards == 8 and split.mode == "hbm"


def test_small_model_on_a_wafer_leaves_room_for_replicas(gpt2):
    model, x = gpt2
    small = ak.compile(model, x, target="wse2")
    assert small.mode == "pipelined" and small.memory_plan.replicas > 1
    assert any("replicas" in n for n in small.placement.notes)
    assert _train(gpt2, target="wse2").memory_plan.replicas == 1  # training keeps one copy


def test_every_constant_is_registered_with_a_source_and_reports_list_the_ones_they_use() -> None:
    import ast
    import re as _re
    from pathlib import Path

    import accelkit
    from accelkit.sim import constants

    for c in constants.CONSTANTS.values():
        assert c.meaning and c.source, c.name
        assert c.assumption().startswith(c.meaning)
        assert ("illustrative" in c.assumption()) == c.illustrative or "illustrative" in c.source
    # the numbers the issue found outside the registry are read from it now
    root = Path(accelkit.__file__).parent
    for path, banned in (("compiler/placement.py", r"cols = 46|0\.1 \* sram"),
                         ("compiler/memory.py", r"min\(64|caps\[sram\] / 2|USABLE_SRAM_FRACTION = 0"),
                         ("sim/estimate.py", r"capacity_bytes / 2"), ("sim/serve.py", r"0\.5 \* base")):
        text = (root / path).read_text()
        ast.parse(text)
        assert not _re.search(banned, text), (path, banned)
    # a report lists exactly the assumptions of its family and chip count
    one = ak.compile(nn.Linear(8, 8), (torch.randn(2, 8),), target="tsp", precision="fp16").report
    assert constants.CONSTANTS["TSP_STREAM_CYCLES"].assumption() in one.assumptions
    assert constants.CONSTANTS["WAFER_MAX_REPLICAS"].assumption() not in one.assumptions
    assert constants.CONSTANTS["CHIP_HOP_LATENCY_S"].assumption() not in one.assumptions  # one chip: no hops
    many = ak.compile(nn.Linear(8, 8), (torch.randn(2, 8),), target="a100", chips=2).report
    assert constants.CONSTANTS["CHIP_HOP_LATENCY_S"].assumption() in many.assumptions
    assert set(one.assumptions) | set(many.assumptions) <= set(constants.assumptions())


def test_a_tsp_matmul_runs_at_the_share_of_its_320_wide_unit_that_its_shape_fills():
    """Groq's MXM multiplies 320 x 320 tiles: a 64-feature layer uses a fifth of it, a 320-feature one all of it."""
    from accelkit.cost.rates import tile_fill

    def cycles_per_flop(width: int) -> float:
        model = nn.Sequential(nn.Linear(320, width)).eval()
        prog = ak.compile(model, (torch.randn(64, 320),), target="tsp", precision="int8")
        k = next(k for k in prog.kernels if k.kind == "matmul")
        assert tile_fill(k, 320) == pytest.approx(width / 320 if width <= 320 else width / 640)
        return next(r.compute_s for r in prog.report.kernels if r.name == k.name) / k.flops

    narrow, full = cycles_per_flop(64), cycles_per_flop(320)
    assert narrow == pytest.approx(5 * full, rel=1e-6)
    assert cycles_per_flop(330) == pytest.approx(640 / 330 * full, rel=1e-6)  # 330 features pad to two tiles


def test_full_recompute_keeps_each_layers_output_and_one_layers_activations():
    """recompute='full' stores the output of each layer (the next layer's input) and, in the backward pass, the
    activations of the one layer run again: a deeper stack of the same block adds one block output per block."""
    def stored(blocks: int) -> int:
        with torch.device("meta"):
            model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 1024), nn.GELU(), nn.Linear(1024, 64))
                                    for _ in range(blocks)])
        prog = ak.compile(model, (torch.zeros(32, 64, device="meta"),), target="a100", training=True,
                          recompute="full", precision="fp32")
        return prog.memory_plan.activation_bytes

    per_block = stored(8) - stored(4)
    assert per_block == pytest.approx(4 * 32 * 64 * 4, rel=0.01)  # four more block outputs of 32 x 64 fp32
    assert stored(4) > 4 * 32 * 64 * 4 + 32 * 1024 * 4  # plus one block's own activations (its 1024-wide middle)


def test_an_fp8_training_step_keeps_its_tensors_in_bf16_and_its_matmuls_at_the_fp8_rate():
    """fp8 training (Transformer Engine) runs the matmuls in fp8 over bf16 tensors: the step moves bf16's bytes, and
    its matmuls are faster than bf16's; fp8 inference holds its tensors in one byte."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 4096))
    x = (torch.zeros(4096, 4096, device="meta"),)
    fp8, bf16 = (ak.compile(model, x, target="h100", precision=p, training=True) for p in ("fp8", "bf16"))
    assert fp8.memory_plan.activation_bytes == bf16.memory_plan.activation_bytes
    assert fp8.memory_plan.weights_bytes == bf16.memory_plan.weights_bytes
    mm8, mm16 = (next(k for k in p.report.kernels if k.bound == "compute") for p in (fp8, bf16))
    assert mm8.compute_s < 0.6 * mm16.compute_s
    infer8, infer16 = (ak.compile(model, x, target="h100", precision=p) for p in ("fp8", "bf16"))
    assert infer8.memory_plan.weights_bytes == infer16.memory_plan.weights_bytes // 2


def test_tensor_parallel_training_splits_activations_and_inference_keeps_them_whole():
    """Megatron-LM trains with sequence parallelism: each of the tensor-parallel chips moves 1/tensor of every
    activation; a serving engine's tensor parallelism keeps the hidden-sized tensors whole on every chip."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
    x = (torch.zeros(8192, 1024, device="meta"),)

    def gelu_memory_s(tensor: int, training: bool) -> float:
        prog = ak.compile(model, x, target="a100", chips=tensor, parallel=Parallel(tensor=tensor), training=training,
                          precision="bf16", stack="eager")
        return sum(k.memory_s for k in prog.report.kernels if k.section == "fwd" and "gelu" in k.ops)

    assert gelu_memory_s(1, True) > 0
    assert gelu_memory_s(2, True) == pytest.approx(gelu_memory_s(1, True) / 2, rel=0.01)
    assert gelu_memory_s(2, False) == pytest.approx(gelu_memory_s(1, False), rel=0.01)
