"""CPU (the host, measured): eager PyTorch op by op. Kernels whose tensors fit in the cache run from it; in
fp32 each kernel's time is the sum of its ops timed on this host; every op pays the dispatch cost measured
here, and the views and constants a compiler would remove run too."""

from __future__ import annotations

from typing import Any

from accelkit.constants import Constant, register, value
from accelkit.cost import host
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import Rates
from accelkit.cost.report import KernelTime
from accelkit.families.base import ExecutionModel, Timed, TimingContext
from accelkit.families.gpu import kernel_by_kernel


def eager_extras(prog: Any, kernels: list[Kernel], r: Rates) -> KernelTime:
    """Eager PyTorch runs what a compiler removes: every view, and every op that depends only on weights
    and constants (masks, position ids), each paying the dispatch cost measured on this host."""
    in_kernels = sum(len(k.nodes) for k in kernels)
    fwd_nodes = sum(1 for n in prog.graph.nodes if n.section == "fwd")
    extra = max(0, fwd_nodes - in_kernels)
    t = extra * (r.launch_s + host.view_op_s())
    return KernelTime("eager views and constants", "<eager>", "fwd", f"{extra} ops", "host", 0, 0, 0.0, 0.0, 0.0,
                      t, t, "latency", 0.0)


def host_profiled(prog: Any, kernels: list[Kernel], scale: float) -> dict[str, float]:
    """Per-kernel sums of op times measured on this host (fp32 only: the captured precision)."""
    if prog.precision != "fp32":
        return {}
    by_name = {n.name: n for n in prog.graph.nodes}
    out = {}
    for k in kernels:
        total = 0.0
        for name in k.nodes:
            node = by_name.get(name)
            if node is None or "args" not in node.extra:
                break
            t = host.op_time_s(node.op, node.extra["args"], node.extra.get("kwargs", {}))
            if t is None:
                break
            total += t
        else:
            out[k.name] = total * scale
    return out


FAMILY = "cpu"

register(
    Constant("CPU_CACHE_SHARE", 0.5,
             "on a CPU a kernel whose tensors fit in half the last-level cache runs from the cache, not DRAM",
             "the other half is taken to hold everything else the process touches", True, (FAMILY,)),
)


class CpuModel(ExecutionModel):
    family = FAMILY
    modes = ("dram",)
    shades = ("#7f7f7f", "#b0b0b0", "#4d4d4d")  # the host takes the first
    vector_at_fp32_peak = True
    measured_rates = True  # ak.hardware.calibrate() measured the host's rates

    def launch_s(self) -> float:
        return host.dispatch_overhead_s()

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        profiled = host_profiled(ctx.program, kernels, ctx.scale)
        kts = kernel_by_kernel(kernels, ctx, cache_share=value("CPU_CACHE_SHARE"), profiled=profiled,
                               launches_per_op=True)
        if kernels and kernels[0].section == "fwd":
            kts.append(eager_extras(ctx.program, kernels, ctx.rates))
        return Timed(kts, sum(k.time_s for k in kts))


MODEL = CpuModel()
