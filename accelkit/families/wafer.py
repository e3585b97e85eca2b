"""Wafer-scale dataflow (Cerebras WSE). Pipelined: every layer owns a region; a sample flows region to
region, so a step of B samples takes (regions + B - 1) region-times (throughput from the slowest region), and
each matmul sends its input across the region and reduces partial sums back (2 x (rows + cols) fabric hops,
one cycle each). Weight streaming: layers in turn on the whole wafer, bounded by the external-memory link."""

from __future__ import annotations

import math
from typing import Any

from accelkit.constants import HOST_TRANSFER, Constant, register, value
from accelkit.cost.kernel import Kernel, layers
from accelkit.cost.rates import kernel_time, roofline
from accelkit.cost.report import KernelTime
from accelkit.families.base import (
    KINDS,
    CompileCost,
    ExecutionModel,
    HostIO,
    Layout,
    MemoryContext,
    Timed,
    TimingContext,
    everything_in,
)
from accelkit.families.placement import Placement, PlacementError, Region, split_units
from accelkit.hardware.spec import AcceleratorSpec

FAMILY = "wafer-dataflow"

REGION_HANDOFF, _, _, GENERATED = register(
    Constant("WAFER_REGION_HANDOFF_S", 1.5e-6, "handing a sample from one wafer region to the next costs 1.5 µs",
             "Cerebras publishes no figure", True, (FAMILY,)),
    Constant(f"USABLE_SRAM_FRACTION[{FAMILY}]", 0.92,
             "92% of the wafer's SRAM holds tensors; the rest holds each core's program, routing and buffers",
             "Cerebras publishes no share; its own example bounds it from below: '20B models fit on a single CS-3 "
             "while 70B models fit on as few as four systems' (cerebras.ai, Cerebras Inference, 2024): 20 B bf16 "
             "weights are 40 GB of the WSE-3's 44 GB, at least 91%", True, (FAMILY,)),
    Constant("WAFER_MAX_REPLICAS", 64,
             "a wafer holds at most 64 copies of a small model (multi-replica inference)",
             "Cerebras describes multi-replica mode but publishes no limit", True, (FAMILY,)),
    Constant("WAFER_GENERATED_KERNEL_EFFICIENCY", 0.5,
             "a kernel the Cerebras compiler generates for ops its kernel library does not cover computes at half "
             "the rate of a hand-written library kernel",
             "Cerebras says its graph compiler matches subgraphs to kernels from a library of hand-optimized kernels "
             "(cerebras.net glossary, 'Cerebras Graph Compiler') and supports PyTorch ops as the Model Zoo uses "
             "them; it publishes no figure for the kernels it generates for the rest", True, (FAMILY,),
             when="generated"),
)

# The ops the Cerebras kernel library covers, as accelkit models it: those of the Cerebras Model Zoo's transformer
# and CNN models, plus data movement and the optimizers' elementwise updates.
LIBRARY = frozenset({
    # matrix work
    "mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "einsum", "conv1d", "conv2d", "convolution",
    "_convolution", "conv_transpose2d", "convolution_backward", "scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_efficient_attention_backward",
    # normalisation, activations, losses
    "layer_norm", "native_layer_norm", "native_layer_norm_backward", "rms_norm", "batch_norm", "native_batch_norm",
    "native_batch_norm_backward", "_native_batch_norm_legit_no_training", "softmax", "_softmax", "log_softmax",
    "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "gelu", "gelu_backward", "relu", "relu_",
    "threshold_backward", "leaky_relu", "leaky_relu_backward", "silu", "silu_backward", "sigmoid",
    "sigmoid_backward", "tanh", "tanh_backward", "cross_entropy_loss", "nll_loss", "nll_loss_forward",
    "nll_loss_backward", "mse_loss", "mse_loss_backward", "dropout", "native_dropout", "native_dropout_backward",
    "max_pool2d", "max_pool2d_with_indices", "max_pool2d_with_indices_backward", "avg_pool2d",
    "adaptive_avg_pool2d",
    # elementwise arithmetic and reductions
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "pow", "sqrt", "rsqrt", "exp", "log", "abs",
    "sum", "mean", "amax", "max", "min", "where", "masked_fill", "clamp", "addcdiv_", "addcmul_", "lerp_", "__and__",
    "eq", "ne", "lt", "gt", "le", "ge",
    # lookups and data movement
    "embedding", "embedding_dense_backward", "index", "index_select", "gather", "select_backward", "cat", "stack",
    "copy_", "clone", "to", "_to_copy", "getitem", "ones_like", "zeros_like", "full", "fill_", "new_empty_strided",
    "new_zeros", "arange", "_local_scalar_dense", "_record_function_enter_new", "_record_function_exit",
})


def place(kernels: list[Kernel], spec: AcceleratorSpec, plan: Any, *, chips: int, pipeline: int = 1,
          precision: str | None = None) -> Placement:
    rows, cols = spec.mesh_shape or (int(math.sqrt(spec.compute_units)),) * 2
    fwd = [k for k in kernels if k.section == "fwd"] or kernels
    if plan.mode == "weight-streaming":
        # one layer at a time on the whole wafer: draw the heaviest layer's kernels as regions
        groups = layers(fwd)
        repeated = [g for g in groups if g[0].rsplit(".", 1)[-1].isdigit()] or groups  # prefer a repeated block
        name, heavy = max(repeated, key=lambda g: sum(k.flops for k in g[1]))
        items: list[tuple[str, tuple[str, ...], int, int]] = [
            (k.name, (k.name,), k.flops, k.param_bytes) for k in heavy]
        notes = [f"weight streaming: each layer in turn owns all {rows * cols:,} cores; drawn: {name}",
                 "weights stream in from MemoryX layer by layer; activations stay on the wafer"]
        rest = [k.name for k in kernels if k.name not in {i[0] for i in items}]
    else:
        groups = layers(kernels)
        resident = getattr(plan, "resident", 1.0)  # partial residency: the rest streams from MemoryX
        items = [(g, tuple(k.name for k in ks), sum(k.flops for k in ks) or 1,
                  int(sum(k.param_bytes for k in ks) * resident)) for g, ks in groups]
        notes = ["pipelined: every layer keeps its own region and weights on the wafer; "
                 "region sizes follow FLOPs so each stage takes about as long"]
        if resident < 1:
            notes.append(f"partial residency: {resident:.0%} of the weights fit on the wafer; the rest stream in "
                         "from MemoryX every pass")
        if plan.replicas > 1:
            notes.append(f"the model is small: {plan.replicas} replicas could share the wafer (multi-replica)")
        rest = []
    # a region needs cores for its FLOPs (pipeline balance) and for its weights (SRAM beside each core)
    f_tot = sum(i[2] for i in items) or 1
    m_tot = sum(i[3] for i in items) or 1
    need = [max(i[2] / f_tot, i[3] / m_tot) for i in items]
    # over several wafers (pipeline parallel), consecutive layers share a wafer: equal shares of the need
    n_wafers = pipeline if plan.mode == "pipelined" and pipeline > 1 else 1
    wafer_of, acc, total_need = [], 0.0, sum(need) or 1.0
    for x in need:
        wafer_of.append(min(n_wafers - 1, int(acc / total_need * n_wafers)))
        acc += x
    section_of = {k.name: k.section for k in kernels}
    regions = []
    stages = []
    for w_idx in range(n_wafers):
        idx = [i for i, w in enumerate(wafer_of) if w == w_idx]
        if not idx:
            continue
        stages.append(tuple(items[i][0] for i in idx))
        widths = split_units(cols, [need[i] for i in idx])
        c = 0
        for i, w in zip(idx, widths, strict=True):
            name, ks, _f, pbytes = items[i]
            regions.append(Region(name, ks, w_idx, 0, c, rows, w, rows * w, memory_bytes=pbytes,
                                  section=section_of[ks[0]], where=f"rows 0-{rows - 1}, cols {c}-{c + w - 1}"))
            c += w
    if n_wafers > 1:
        notes.append(f"pipelined over {n_wafers} wafers: consecutive layers share a wafer, activations hop between")
    return Placement(FAMILY, (rows, cols), tuple(regions), chips, spec.unit_name or "core",
                     tuple(notes), stages=tuple(stages) if n_wafers > 1 else (), streamed_kernels=tuple(rest))


class WaferModel(ExecutionModel):
    stacks = (("cstorch", "the Cerebras PyTorch stack (cerebras.pytorch): the model compiled for the wafer, run by the appliance"),
              ("cbtorch", "Cerebras' first PyTorch integration (cerebras.framework.torch, the 1.x releases a CS-2 ran): the "
                          "model compiled for the same wafer; modelled as cstorch is"))
    family = FAMILY
    modes = ("pipelined", "weight-streaming")
    auto_micro_batch = ("the Cerebras compiler's gradient accumulation: with micro_batch_size 'auto' (the Model "
                        "Zoo's default) it searches the divisors of the global batch for a well-performing micro-batch "
                        "(cerebras/modelzoo, src/cerebras/modelzoo/common/input_utils.py), and its recompute algorithm "
                        "decides which activations to recompute in backward (common/utils/model/recompute_api.py)")
    no_partial_residency = ("a model whose weights do not all fit in the wafer's SRAM runs in weight streaming (weights "
                            "in MemoryX, one layer at a time on the wafer), as Cerebras' compiler does; no Cerebras "
                            "mode keeps part of the weights resident and streams the rest")
    launch = REGION_HANDOFF
    # the loop copies the next batch while this step computes, so the host link shows only when it is the bound
    host_io = HostIO(HOST_TRANSFER, overlapped=True, loop="the appliance's input workers stream batches to the wafer while it trains")
    shades = ("#1f77b4", "#9ecae1", "#08306b")
    diagram = "mesh"
    placement_map = "regions"
    fusion_unit = "regions (layers)"
    compile_cost = CompileCost(180.0, 4.0, "a Cerebras executable (modelzoo `run.py --compile_only`)")
    lane_label = "region {group}"
    kernel_library = LIBRARY
    kernel_library_source = ("Cerebras matches subgraphs to its kernel library (cerebras.net glossary, 'Cerebras Graph "
                             "Compiler'); the library's list is not published: here, the Model Zoo's ops")
    generated_efficiency = GENERATED

    def layouts(self, ctx: MemoryContext) -> list[Layout]:
        sram, ext = ctx.tier(0), ctx.tier(1)
        total = sum(ctx.per_chip.values())
        replicas = 1 if ctx.training else max(1, min(value("WAFER_MAX_REPLICAS"), ctx.caps[sram] // max(1, total)))
        pipelined = everything_in("pipelined", sram)
        return [Layout("pipelined", pipelined.placement, KINDS, sram, replicas),
                # weights stream in from MemoryX layer by layer; one layer (double-buffered) sits on the wafer
                Layout("weight-streaming", {"weights": ext, "activation": sram, "gradient": ext, "optimizer": ext},
                       ("weights", "gradient", "optimizer"), ext, extra={sram: 2 * ctx.largest_layer_bytes})]

    def place(self, kernels: list[Kernel], spec: AcceleratorSpec, plan: Any, *, chips: int, pipeline: int = 1,
              precision: str | None = None) -> Placement:
        return place(kernels, spec, plan, chips=chips, pipeline=pipeline, precision=precision)

    def check(self, p: Placement, kernels: list[Kernel], spec: AcceleratorSpec, plan: Any) -> None:
        """Wafer regions stay on the mesh, never overlap, and (pipelined) hold their weights in their cores' SRAM."""
        rows, cols = p.grid
        for i, a in enumerate(p.regions):
            if a.col0 + a.cols > cols or a.row0 + a.rows > rows:
                raise PlacementError(f"region {a.name} leaves the {rows}x{cols} mesh")
            for b in p.regions[i + 1:]:
                if a.overlaps(b):
                    raise PlacementError(f"regions {a.name} and {b.name} overlap")
            if plan.mode == "pipelined" and a.memory_bytes > a.units * spec.memory_per_unit_bytes:
                raise PlacementError(f"region {a.name} holds {a.memory_bytes} bytes in {a.units} cores",
                                     fix="use weight streaming (mode='weight-streaming')")

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        spec, r, plan, tensor, peak = ctx.spec, ctx.rates, ctx.plan, ctx.tensor, ctx.peak
        rows, cols = ctx.placement.grid
        total_units = rows * cols
        onchip = spec.memory_tiers[0].name
        out: list[KernelTime] = []
        if plan.mode == "weight-streaming":
            ext = plan.placement["weights"]
            for k in kernels:
                c, _ = roofline(k, r, onchip, onchip, tensor=tensor)
                stream = (k.param_bytes / tensor) / r.tier_bw[ext]
                hops = 2 * (rows + cols) / r.clock_hz if k.kind == "matmul" else 0.0
                out.append(kernel_time(k, f"all {total_units:,} cores", c, stream, 0.0, r.launch_s + hops,
                                       peak * tensor))
            step = sum(k.time_s for k in out)
            return Timed(out, step, step)
        region_of = {name: reg for reg in ctx.placement.regions for name in reg.kernels}
        spill = ctx.spill
        samples = ctx.samples
        per_sample = 1.0 / max(1, samples)
        latency = 0.0
        region_time: dict[str, float] = {}
        for k in kernels:
            reg = region_of.get(k.name)
            share = (reg.units / total_units) if reg else 1.0
            c, m = roofline(k, r, onchip, onchip, share=share, tensor=tensor)
            m /= share  # a region reads from the SRAM beside its own cores only
            if spill is not None:  # what did not fit on the wafer streams in from MemoryX, one link for all
                m += (k.param_bytes / tensor) * (1 - spill.resident) * (1 / r.tier_bw[spill.tier]
                                                                          - 1 / (share * r.tier_bw[onchip]))
            hops = 2 * ((reg.rows if reg else rows) + (reg.cols if reg else cols)) / r.clock_hz \
                if k.kind == "matmul" else 0.0
            out.append(kernel_time(k, f"rows {reg.row0}-{reg.row0 + reg.rows - 1}, cols {reg.col0}-"
                                   f"{reg.col0 + reg.cols - 1}" if reg else "", c, m, 0.0, hops,
                                   peak * tensor * share))
            key = reg.name if reg else k.name
            # the fabric is pipelined: the mesh path adds to one sample's latency, not to the rate at which
            # a region accepts samples
            region_time[key] = region_time.get(key, 0.0) + max(c, m) * per_sample
            latency += max(c, m) * per_sample + hops
        latency += r.launch_s * len(region_time)
        slowest = max(region_time.values(), default=0.0)
        step = latency + (samples - 1) * slowest  # fill the pipeline, then one sample per slowest-region time
        return Timed(out, step, latency)


MODEL = WaferModel()
