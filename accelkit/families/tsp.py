"""Static schedule (Groq TSP): the cycle-exact schedule from placement. Multi-chip programs add one chip hop
per boundary the data crosses. The same program always takes the same number of cycles."""

from __future__ import annotations

import math
from typing import Any

from accelkit import constants
from accelkit.constants import Constant, register, value
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import Rates, kernel_time
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
from accelkit.families.placement import Placement, PlacementError, Region
from accelkit.hardware.spec import AcceleratorSpec

FAMILY = "static-schedule"

_GROQFLOW_ESTIMATE = ("GroqFlow's own performance estimate, GroqModel.estimate_performance() "
                      "(groqflow/groqmodel/groqmodel.py): pcie_latency = 1e-5, pcie_bandwidth = 24e9")
GROQFLOW_PCIE_LATENCY, GROQFLOW_PCIE_BPS = register(
    Constant("GROQFLOW_PCIE_LATENCY_S", 10e-6,
             "each inference's inputs reach the GroqChip over PCIe, and its results come back, with 10 µs of latency "
             "each way", _GROQFLOW_ESTIMATE, False, (FAMILY,)),
    Constant("GROQFLOW_PCIE_BPS", 24e9,
             "a GroqCard's PCIe link moves an inference's input and output bytes at 24 GB/s each way",
             _GROQFLOW_ESTIMATE, False, (FAMILY,)),
)

register(
    Constant("TSP_STREAM_CYCLES", 100,
             "a TSP instruction streams its operands across the slices for 100 cycles before results emerge "
             "(and no launch: the compiler schedules every cycle)",
             "ISCA 2020 'Think Fast' describes the stream pipeline but publishes no single figure", True, (FAMILY,)),
    Constant("TSP_MXM_WIDTH", 320,
             "a TSP's matrix unit multiplies 320 x 320 tiles: a layer whose contraction or output features do not "
             "fill whole tiles leaves the rest of the unit idle (a 64-channel convolution uses a fifth of it)",
             "Abts et al., ISCA 2020, 'Think Fast: A Tensor Streaming Processor': the MXM's 320 x 320 arrays of "
             "multiply-accumulate cells", False, (FAMILY,)),
    Constant(f"USABLE_SRAM_FRACTION[{FAMILY}]", 0.92,
             "92% of a TSP's SRAM holds weights and activations; the rest holds the instruction streams",
             "Groq publishes no share; its SRAM (the MEM slices) holds the program's instructions beside the data "
             "(Abts et al., ISCA 2020, 'Think Fast: A Tensor Streaming Processor'), so not all of it holds tensors",
             True, (FAMILY,)),
    Constant("TSP_MIN_WEIGHT_SHARE", 0.1,
             "a TSP gives weights at least 10% of its SRAM, however large the activations",
             "the GroqFlow compiler's packing is not published", True, (FAMILY,)),
)


def tsp_cycles(k: Kernel, r: Rates, sram: str) -> int:
    """Cycles a TSP program spends on one kernel: its stream latency, then the larger of its compute and
    its SRAM traffic, a matmul at the share of the 320 x 320 matrix unit its shape fills. Fixed at compile time: the same program always takes the same cycles. A kernel whose
    weights span several chips runs its share on each chip in turn as the data passes through."""
    rate = r.matmul_flops * MODEL.tile_fill(k) if k.kind == "matmul" else r.vector_flops
    busy = max(k.flops / rate, k.bytes / r.tier_bw[sram])
    return constants.value("TSP_STREAM_CYCLES") + math.ceil(busy * r.clock_hz)


def place(kernels: list[Kernel], spec: AcceleratorSpec, plan: Any, *, chips: int, pipeline: int = 1,
          precision: str | None = None) -> Placement:
    """Weights packed chip after chip in program order (a layer larger than one chip's SRAM spans
    several, each computing its share); every kernel gets a fixed cycle count."""
    r = MODEL.rates(spec, precision or spec.peak_16bit()[0])
    sram = spec.memory_tiers[0]
    cap = max(sram.capacity_bytes * constants.usable_sram(FAMILY).value - plan.activation_bytes,
              constants.value("TSP_MIN_WEIGHT_SHARE") * sram.capacity_bytes)
    # kernels that share a weight (GPT-2's embedding and head) each count it; memory holds it once
    counted = sum(k.param_bytes for k in kernels)
    unique = plan.weights_bytes * max(1, pipeline)
    share = min(1.0, unique / counted) if counted else 1.0
    total = counted * share
    if chips > 1 and total:  # spread the weights evenly over every chip the program was given
        cap = min(cap, total / chips * (1 + 1e-9))
    chip, fill = 0, 0.0
    regions = []
    cycle = 0
    for k in kernels:
        if fill >= cap:
            chip, fill = chip + 1, 0.0
        first, rest = chip, float(k.param_bytes) * share
        while rest > 0:
            take = min(cap - fill, rest)
            fill, rest = fill + take, rest - take
            if rest > 0:
                chip, fill = chip + 1, 0.0
        span = chip - first + 1
        cycles = tsp_cycles(k, r, sram.name)
        sl = {"matmul": "MXM", "vector": "VXM", "memory": "MEM"}[k.kind]
        regions.append(Region(k.name, (k.name,), first, 0, 0, 1, 1, span, memory_bytes=k.param_bytes,
                              start_cycle=cycle, cycles=cycles, slice=sl, section=k.section,
                              where=f"cycles {cycle}-{cycle + cycles}"))
        cycle += cycles
    if chip + 1 > chips:
        raise PlacementError(f"the weights need {chip + 1} {spec.name} chips of SRAM; the program has {chips}",
                             fix=f"compile with chips={chip + 1}")
    return Placement(FAMILY, (1, 4), tuple(regions), chips, "functional slice",
                     ("a static schedule: the compiler fixes the cycle of every instruction, so the same "
                      "input always takes the same time",
                      f"weights packed over {chip + 1} chip(s) in program order; data hops chip to chip"),
                     total_cycles=cycle, chips_used=chip + 1)


class TspModel(ExecutionModel):
    stacks = (("groqflow", "GroqFlow: the model exported and compiled by Groq's compiler into a cycle-exact schedule"),)
    family = FAMILY
    matrix_unit = "TSP_MXM_WIDTH"
    modes = ("sram",)
    shades = ("#ff7f0e", "#ffbb78", "#a64d00")
    diagram = "slices"
    placement_map = "schedule"
    compile_cost = CompileCost(30.0, 1.0, "a GroqFlow build (`groqit(...)`, cached in ~/.cache/groqflow)")
    schedule_charges_hops = True
    # GroqFlow's own performance estimate: 10 µs of PCIe latency each way per inference, bytes at 24 GB/s
    host_io = HostIO(GROQFLOW_PCIE_LATENCY, GROQFLOW_PCIE_BPS, loop="inferences per call from the host")
    lane_label = "{units}"

    def lane(self, k):  # type: ignore[no-untyped-def]
        return k.units

    def layouts(self, ctx: MemoryContext) -> list[Layout]:
        return [everything_in("sram", ctx.tier(0))]  # SRAM only: a big model spreads over many chips

    def place(self, kernels: list[Kernel], spec: AcceleratorSpec, plan: Any, *, chips: int, pipeline: int = 1,
              precision: str | None = None) -> Placement:
        return place(kernels, spec, plan, chips=chips, pipeline=pipeline, precision=precision)

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        r = ctx.rates
        sram = ctx.spec.memory_tiers[0].name
        region_of = {reg.kernels[0]: reg for reg in ctx.placement.regions}
        out = []
        prev_last = 0
        for k in kernels:
            reg = region_of[k.name]
            cycles = tsp_cycles(k, r, sram)
            # data moves chip to chip: onto the chip holding this kernel's first weights, then across the
            # chips its weights span
            boundaries = (reg.chip != prev_last) + (reg.units - 1)
            act = max(0, k.bytes_read - k.param_bytes)
            hop = boundaries * (value("CHIP_HOP_LATENCY_S") + act / r.link_Bps)
            prev_last = reg.chip + reg.units - 1
            c = k.flops / (r.matmul_flops * self.tile_fill(k) if k.kind == "matmul"
                           else r.vector_flops)
            t = cycles / r.clock_hz + hop  # the schedule is fixed in cycles: deterministic
            out.append(kernel_time(k, f"{reg.slice} chip {reg.chip}" + (f"-{reg.chip + reg.units - 1}"
                                                                         if reg.units > 1 else ""),
                                   c, 0.0, hop, cycles / r.clock_hz - c, ctx.peak, time=t))
        return Timed(out, sum(k.time_s for k in out))


MODEL = TspModel()
