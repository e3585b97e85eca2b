"""Reconfigurable dataflow (SambaNova RDU): sections one after another. Inside a section the kernels run as a
spatial pipeline on PCUs and PMUs, so intermediates stay in PMU SRAM and only the section's inputs, outputs
and weights cross the tier the memory plan chose; one section switch per section."""

from __future__ import annotations

import math
from typing import Any

from accelkit.constants import HOST_TRANSFER, Constant, register, value
from accelkit.cost.kernel import Kernel, layers
from accelkit.cost.rates import kernel_time, roofline
from accelkit.families.base import (
    CompileCost,
    ExecutionModel,
    HostIO,
    Layout,
    MemoryContext,
    Timed,
    TimingContext,
    everything_in,
)
from accelkit.families.placement import Placement, Region, split_units
from accelkit.hardware.spec import AcceleratorSpec

FAMILY = "reconfigurable-dataflow"

SECTION_SWITCH, P2P_HOP, _, _ = register(
    Constant("RDU_SECTION_SWITCH_S", 4e-6, "an RDU section switch (loading the next section's configuration) "
             "costs 4 µs", "SambaNova publishes no figure", True, (FAMILY,)),
    Constant("RDU_P2P_HOP_S", 0.5e-6,
             "a hop between SN40L sockets on their peer-to-peer links costs 0.5 µs (all-reduces in the dataflow "
             "graph, no kernel launch)",
             "SambaNova publishes no figure; bounded by LLM-Inference-Bench's SN40L decode: Llama-3-8B on 8 sockets "
             "at 1.55 ms per token, about the time to read its weights from HBM at 80%, leaves little for the 64 "
             "tensor-parallel all-reduces a token needs", True, (FAMILY,), when="multi-chip"),
    Constant(f"USABLE_SRAM_FRACTION[{FAMILY}]", 0.92,
             "92% of the RDU's PMU SRAM holds tensors; the rest holds the compiler's buffers between stages",
             "SambaNova publishes no share; its PMUs hold the data while the PCUs hold the configuration (Prabhakar "
             "et al., 'SambaNova SN40L', IEEE Micro 2024), so the round number is set near the other SRAM chips'",
             True, (FAMILY,)),
    Constant("RDU_ACTIVATION_SRAM_SHARE", 0.5,
             "an RDU keeps activations in PMU SRAM while they take at most half of it, else they spill to HBM",
             "SambaNova publishes no threshold", True, (FAMILY,)),
)


def place(kernels: list[Kernel], spec: AcceleratorSpec, plan: Any, *, chips: int, pipeline: int = 1,
          precision: str | None = None) -> Placement:
    pcus, pmus = spec.pcus or spec.compute_units, spec.pmus or spec.compute_units
    regions = []
    for idx, (name, ks) in enumerate(layers(kernels)):
        pc = split_units(pcus, [k.flops or 1 for k in ks])
        pm = split_units(pmus, [k.bytes or 1 for k in ks])
        for k, a, b in zip(ks, pc, pm, strict=True):
            regions.append(Region(k.name, (k.name,), 0, idx, 0, 1, a, a, memory_units=b,
                                  memory_bytes=k.param_bytes, slice=f"section {idx}: {name}", section=k.section))
    side = int(math.sqrt(pcus + pmus))
    grid = tuple(spec.mesh_shape) if spec.mesh_shape else (side, side)
    return Placement(FAMILY, (int(grid[0]), int(grid[1])), tuple(regions), chips, "PCU",
                     ("sections run one after another; inside a section every kernel has its own PCUs "
                      "(compute) and PMUs (on-chip memory) and data flows between them as a pipeline",),
                     sections=len(layers(kernels)))


class RduModel(ExecutionModel):
    stacks = (("sambaflow", "SambaFlow: the graph compiler maps each section onto PCUs and PMUs and writes a PEF"),)
    family = FAMILY
    modes = ("on-chip", "hbm", "ddr")
    launch = SECTION_SWITCH
    host_io = HostIO(HOST_TRANSFER, loop="steps the RDU runs per call of the runtime (samba.session.run)")
    hop = P2P_HOP
    shades = ("#d62728", "#ff9896", "#8c1515")
    diagram = "sections"
    placement_map = "sections"
    fusion_unit = "sections"
    fusion_levels = ("o0", "o1")  # SambaFlow: o0 one op per section, o1 one layer per section
    compile_cost = CompileCost(120.0, 10.0, "a PEF (SambaFlow `python app.py compile`)")
    lane_label = "section {group}"
    model_split = "tensor"  # SambaFlow shards each layer over the RDUs of a node

    def layouts(self, ctx: MemoryContext) -> list[Layout]:
        sram, hbm, ddr = ctx.tier(0), ctx.tier(1), ctx.tier(2)
        # activations stay in PMU SRAM when they fit beside the streaming weights, else they spill to HBM
        act_tier = sram if ctx.per_chip["activation"] <= ctx.caps[sram] * value("RDU_ACTIVATION_SRAM_SHARE") else hbm
        state = ("weights", "gradient", "optimizer")
        return [everything_in("on-chip", sram),
                Layout("hbm", {"weights": hbm, "activation": act_tier, "gradient": hbm, "optimizer": hbm}, state, hbm),
                Layout("ddr", {"weights": ddr, "activation": hbm, "gradient": ddr, "optimizer": ddr}, state, ddr)]

    def place(self, kernels: list[Kernel], spec: AcceleratorSpec, plan: Any, *, chips: int, pipeline: int = 1,
              precision: str | None = None) -> Placement:
        return place(kernels, spec, plan, chips=chips, pipeline=pipeline, precision=precision)

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        r, plan = ctx.rates, ctx.plan
        w, a = plan.placement["weights"], plan.placement["activation"]
        units = {reg.kernels[0]: f"{reg.units} PCUs / {reg.memory_units} PMUs" for reg in ctx.placement.regions}
        out = []
        for _layer, sec in layers(kernels):
            names = {k.name for k in sec}
            for i, k in enumerate(sec):
                # inside a section, data flows unit to unit: only what enters from outside the section
                # (or leaves it) touches the activation tier
                ext_in = (k.bytes_read - k.param_bytes) if i == 0 else 0
                ext_out = k.bytes_written if i == len(sec) - 1 or not names else 0
                c, m = roofline(k, r, w, a, act_bytes=ext_in + ext_out, tensor=ctx.tensor, act_tensor=ctx.act_tensor,
                                opt_tier=plan.placement.get("optimizer"), spill=ctx.spill)
                out.append(kernel_time(k, units.get(k.name, ""), c, m, 0.0, r.launch_s if i == 0 else 0.0,
                                       ctx.peak * ctx.tensor))
        return Timed(out, sum(k.time_s for k in out))


MODEL = RduModel()
