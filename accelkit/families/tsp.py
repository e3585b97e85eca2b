"""Static schedule (Groq TSP): the cycle-exact schedule from placement. Multi-chip programs add one chip hop
per boundary the data crosses. The same program always takes the same number of cycles."""

from __future__ import annotations

import math

from accelkit.cost.constants import CHIP_HOP_LATENCY_S, TSP_STREAM_CYCLES
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import Rates, kernel_time
from accelkit.families.base import ExecutionModel, Layout, MemoryContext, Timed, TimingContext, everything_in


def tsp_cycles(k: Kernel, r: Rates, sram: str) -> int:
    """Cycles a TSP program spends on one kernel: its stream latency, then the larger of its compute and
    its SRAM traffic. Fixed at compile time: the same program always takes the same cycles. A kernel whose
    weights span several chips runs its share on each chip in turn as the data passes through."""
    rate = r.matmul_flops if k.kind == "matmul" else r.vector_flops
    busy = max(k.flops / rate, k.bytes / r.tier_bw[sram])
    return TSP_STREAM_CYCLES + math.ceil(busy * r.clock_hz)


class TspModel(ExecutionModel):
    family = "static-schedule"
    modes = ("sram",)
    schedule_charges_hops = True
    lane_label = "{units}"

    def lane(self, k):  # type: ignore[no-untyped-def]
        return k.units

    def layouts(self, ctx: MemoryContext) -> list[Layout]:
        return [everything_in("sram", ctx.tier(0))]  # SRAM only: a big model spreads over many chips

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
            hop = boundaries * (CHIP_HOP_LATENCY_S + act / r.link_Bps)
            prev_last = reg.chip + reg.units - 1
            c = k.flops / (r.matmul_flops if k.kind == "matmul" else r.vector_flops)
            t = cycles / r.clock_hz + hop  # the schedule is fixed in cycles: deterministic
            out.append(kernel_time(k, f"{reg.slice} chip {reg.chip}" + (f"-{reg.chip + reg.units - 1}"
                                                                         if reg.units > 1 else ""),
                                   c, 0.0, hop, cycles / r.clock_hz - c, ctx.peak, time=t))
        return Timed(out, sum(k.time_s for k in out))


MODEL = TspModel()
