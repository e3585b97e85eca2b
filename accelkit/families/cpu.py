"""CPU (the host, measured): eager PyTorch op by op. Kernels whose tensors fit in the cache run from it; in
fp32 each kernel's time is the sum of its ops timed on this host; every op pays the dispatch cost measured
here, and the views and constants a compiler would remove run too."""

from __future__ import annotations

from typing import Any

from accelkit.constants import Constant, register, value
from accelkit.cost import host
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import Rates, kernel_time, roofline
from accelkit.cost.report import KernelTime
from accelkit.families.base import ExecutionModel, Timed, TimingContext
from accelkit.families.gpu import kernel_by_kernel


def eager_extras(prog: Any, kernels: list[Kernel], r: Rates) -> KernelTime:
    """Eager PyTorch runs what a compiler removes: every view, and every op that depends only on weights
    and constants (masks, position ids), each paying the dispatch cost measured on this host."""
    in_kernels = sum(len(k.nodes) for k in kernels)
    fwd_nodes = sum(1 for n in prog.graph.nodes if n.section == "fwd")
    extra = max(0, fwd_nodes - in_kernels)
    view_s = prog.host.view_op_s if prog.host is not None else host.view_op_s()
    t = extra * (r.launch_s + view_s)
    return KernelTime("eager views and constants", "<eager>", "fwd", f"{extra} ops", "host", 0, 0, 0.0, 0.0, 0.0,
                      t, t, "latency", 0.0)


def host_profiled(prog: Any, kernels: list[Kernel], scale: float) -> dict[str, float]:
    """Per-kernel sums of op times measured on this host at compile time (``prog.host``; fp32 only: the
    captured precision). A kernel with an op that could not be replayed keeps the roofline."""
    if prog.precision != "fp32" or prog.host is None:
        return {}
    out = {}
    for k in kernels:
        times = [prog.host.op_s.get(name) for name in k.nodes]
        if times and all(t is not None for t in times):
            out[k.name] = sum(t for t in times if t is not None) * scale
    return out


def host_partition_times(kernels: list[Kernel], host_spec: Any) -> list[KernelTime]:
    """The kernels a fallback program runs on the host CPU (``compile(..., fallback="host")``), timed as the
    host runs them: eager PyTorch in fp32 at ``host_spec``'s measured rates, each kernel the larger of its
    compute and its DRAM traffic plus one dispatch per op."""
    r = MODEL.rates(host_spec, "fp32")
    dram = host_spec.memory_tiers[-1].name
    peak = host_spec.peak("fp32")
    units = f"host CPU ({host_spec.compute_units} core{'s' if host_spec.compute_units != 1 else ''})"
    out = []
    for k in kernels:
        c, m = roofline(k, r, dram, dram)
        out.append(kernel_time(k, units, c, m, 0.0, r.launch_s * len(k.ops), peak))
    return out


FAMILY = "cpu"

register(
    Constant("CPU_CACHE_SHARE", 0.5,
             "on a CPU a kernel whose tensors fit in half the last-level cache runs from the cache, not DRAM",
             "the other half is taken to hold everything else the process touches", True, (FAMILY,)),
)


class CpuModel(ExecutionModel):
    stacks = (("eager", "PyTorch eager on the host CPU, op by op, at the rates measured on this machine"),)
    host_io = None  # the chip is the host: nothing crosses a host link
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
