"""Bulk-synchronous tiles (Graphcore IPU): one superstep per kernel. Every tile computes on its own SRAM, all
tiles sync, then they exchange the outputs over the on-chip exchange; streaming-memory mode adds the
weights' copy in."""

from __future__ import annotations

from accelkit.cost.constants import BANDWIDTH_EFFICIENCY
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import kernel_time, roofline
from accelkit.families.base import ExecutionModel, Layout, MemoryContext, Timed, TimingContext, everything_in


class IpuModel(ExecutionModel):
    family = "bsp-tiles"
    modes = ("on-chip", "optimizer-offload", "streaming-memory")

    def layouts(self, ctx: MemoryContext) -> list[Layout]:
        sram, stream = ctx.tier(0), ctx.tier(1)
        return [everything_in("on-chip", sram),
                # Graphcore's usual recipe for large models: weights stay in tile memory, optimizer state lives
                # in streaming memory and is touched once per step
                Layout("optimizer-offload", {"weights": sram, "activation": sram, "gradient": sram,
                                             "optimizer": stream}, ("weights", "activation", "gradient"), sram),
                Layout("streaming-memory", {"weights": stream, "activation": sram, "gradient": stream,
                                            "optimizer": stream}, ("weights", "gradient", "optimizer"), stream)]

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        spec, r, plan = ctx.spec, ctx.rates, ctx.plan
        exchange_Bps = (spec.fabric_Bps or spec.on_chip_bandwidth_Bps) * BANDWIDTH_EFFICIENCY
        w = plan.placement["weights"]  # tile memory unless the weights stream in from streaming memory
        units = f"{spec.compute_units} tiles"
        out = []
        for k in kernels:
            c, m = roofline(k, r, w, spec.memory_tiers[0].name, tensor=ctx.tensor,
                            opt_tier=plan.placement.get("optimizer"))
            exchange = k.out_bytes / exchange_Bps
            out.append(kernel_time(k, units, c, m, exchange, r.launch_s, ctx.peak * ctx.tensor))  # compute|sync|exchange
        return Timed(out, sum(k.time_s for k in out))


MODEL = IpuModel()
