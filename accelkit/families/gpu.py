"""GPU: kernel by kernel from HBM. Each kernel reads and writes its tensors in HBM and pays a launch; data
parallel across GPUs."""

from __future__ import annotations

from accelkit.constants import Constant, register
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import kernel_time, roofline
from accelkit.families.base import ExecutionModel, Timed, TimingContext


def kernel_by_kernel(kernels: list[Kernel], ctx: TimingContext, *, cache_share: float = 0.0,
                     profiled: dict[str, float] | None = None, launches_per_op: bool = False) -> list:
    """Each kernel on its own: the roofline from the plan's tiers (the first tier when its tensors fit in
    ``cache_share`` of it), plus a launch (one per op when ``launches_per_op``). ``profiled`` maps a kernel to
    op times measured on this host, which replace the roofline there."""
    spec, r, plan = ctx.spec, ctx.rates, ctx.plan
    w, a = plan.placement["weights"], plan.placement["activation"]
    units = f"{spec.compute_units} {spec.unit_name or 'units'}"
    o = plan.placement.get("optimizer")
    cache = spec.memory_tiers[0]
    out = []
    for k in kernels:
        tier = cache.name if cache_share and k.bytes <= cache.capacity_bytes * cache_share else None
        c, m = roofline(k, r, tier or w, tier or a, tensor=ctx.tensor, opt_tier=o, spill=ctx.spill)
        launch = r.launch_s * (len(k.ops) if launches_per_op else 1)
        if profiled and k.name in profiled:
            measured = profiled[k.name]
            out.append(kernel_time(k, units, measured if c >= m else c, m if m > c else measured, 0.0, launch,
                                   ctx.peak, time=max(measured, c, m) + launch))
        else:
            out.append(kernel_time(k, units, c, m, 0.0, launch, ctx.peak * ctx.tensor))
    return out


FAMILY = "gpu"

KERNEL_LAUNCH, COLLECTIVE = register(
    Constant("GPU_KERNEL_LAUNCH_S", 4e-6, "each GPU kernel costs a 4 µs launch",
             "typical of NVIDIA Nsight kernel traces; NVIDIA publishes no single figure", True, (FAMILY,)),
    Constant("GPU_COLLECTIVE_S", 10e-6,
             "each NCCL all-reduce starts with 10 µs of fixed latency, however small the message",
             "nccl-tests all_reduce_perf on 2 x A100-SXM4-40GB over NVLink: a 32-byte all-reduce takes 10.1 µs "
             "(NVIDIA/nccl issue 583, 2021)", False, (FAMILY,), when="multi-chip"),
)


class GpuModel(ExecutionModel):
    family = FAMILY
    modes = ("hbm",)
    launch = KERNEL_LAUNCH
    collective = COLLECTIVE
    shades = ("#2ca02c", "#98df8a", "#1a6b1a", "#5fd35f", "#4a9a7a", "#00a36c")  # a100 ... mi300x, catalog order
    vector_at_fp32_peak = True  # elementwise work runs on the CUDA cores at the fp32 rate
    model_split = "tensor"  # Megatron-style tensor parallelism over NVLink

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        kts = kernel_by_kernel(kernels, ctx)
        return Timed(kts, sum(k.time_s for k in kts))


MODEL = GpuModel()
