"""Wafer-scale dataflow (Cerebras WSE). Pipelined: every layer owns a region; a sample flows region to
region, so a step of B samples takes (regions + B - 1) region-times (throughput from the slowest region), and
each matmul sends its input across the region and reduces partial sums back (2 x (rows + cols) fabric hops,
one cycle each). Weight streaming: layers in turn on the whole wafer, bounded by the external-memory link."""

from __future__ import annotations

from accelkit.cost.constants import value
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import kernel_time, roofline
from accelkit.cost.report import KernelTime
from accelkit.families.base import (
    KINDS,
    ExecutionModel,
    Layout,
    MemoryContext,
    Timed,
    TimingContext,
    everything_in,
)


class WaferModel(ExecutionModel):
    family = "wafer-dataflow"
    modes = ("pipelined", "weight-streaming")
    lane_label = "region {group}"

    def layouts(self, ctx: MemoryContext) -> list[Layout]:
        sram, ext = ctx.tier(0), ctx.tier(1)
        total = sum(ctx.per_chip.values())
        replicas = 1 if ctx.training else max(1, min(value("WAFER_MAX_REPLICAS"), ctx.caps[sram] // max(1, total)))
        pipelined = everything_in("pipelined", sram)
        return [Layout("pipelined", pipelined.placement, KINDS, sram, replicas),
                # weights stream in from MemoryX layer by layer; one layer (double-buffered) sits on the wafer
                Layout("weight-streaming", {"weights": ext, "activation": sram, "gradient": ext, "optimizer": ext},
                       ("weights", "gradient", "optimizer"), ext, extra={sram: 2 * ctx.largest_layer_bytes})]

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
        samples = ctx.samples
        per_sample = 1.0 / max(1, samples)
        latency = 0.0
        region_time: dict[str, float] = {}
        for k in kernels:
            reg = region_of.get(k.name)
            share = (reg.units / total_units) if reg else 1.0
            c, m = roofline(k, r, onchip, onchip, share=share, tensor=tensor)
            m /= share  # a region reads from the SRAM beside its own cores only
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
