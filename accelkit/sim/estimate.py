"""The execution models: one per architecture family, a pure function of (program, spec).

Every family starts from the same per-kernel roofline — compute time (FLOPs over the rate of the
units that run it) against memory time (bytes over the bandwidth of the tier the memory plan put
them in) — and differs in how kernels compose into a step:

- gpu / cpu: kernel by kernel; each kernel reads and writes its tensors in HBM/DRAM and pays a
  launch overhead.
- reconfigurable-dataflow (RDU): sections one after another; inside a section the kernels run as
  a spatial pipeline, so intermediates stay in PMU SRAM and only the section's inputs, outputs
  and weights cross the tier the plan chose; one section switch per section.
- wafer-dataflow (WSE), pipelined: every layer owns a region; a sample flows region to region, so a
  step of B samples takes (regions + B - 1) region-times (throughput from the slowest region), and
  each matmul sends its input across the region and reduces partial sums back (2 x (rows + cols)
  fabric hops, one clock cycle each: the path through the mesh). Weight streaming: layers in
  turn on the whole wafer, bounded by the external-memory link.
- bsp-tiles (IPU): one superstep per kernel: compute phase on every tile, sync, then exchange of
  its outputs over the on-chip exchange; streaming-memory mode adds the weights' copy in.
- static-schedule (TSP): the cycle-exact schedule from placement; multi-chip programs add one
  chip hop per stage boundary. The same program always takes the same number of cycles.

Multi-chip work: data parallel adds a gradient all-reduce; tensor parallel divides each layer's
work and adds two all-reduces of its output per layer (four in training); pipeline parallel splits
layers into stages with a fill/drain bubble of (stages - 1) micro-batches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from accelkit.cost.kernel import Kernel, layers
from accelkit.graph.cost import GATHER_OPS
from accelkit.hardware.spec import AcceleratorSpec
from accelkit.sim.constants import (
    BANDWIDTH_EFFICIENCY,
    CHIP_HOP_LATENCY_S,
    COMPUTE_EFFICIENCY,
    DEFAULT_LINK_BPS,
    LAUNCH_OVERHEAD_S,
    TSP_STREAM_CYCLES,
    VECTOR_FRACTION_OF_16BIT_PEAK,
    assumptions_for,
    value,
)
from accelkit.sim.report import KernelTime, PerfReport, TimelineEvent

CPU_CACHE_SHARE: float = value("CPU_CACHE_SHARE")


@dataclass(frozen=True)
class Rates:
    """What one chip delivers, after the efficiency constants."""

    matmul_flops: float
    vector_flops: float
    tier_bw: dict[str, float]
    link_Bps: float
    launch_s: float
    clock_hz: float


def rates(spec: AcceleratorSpec, precision: str) -> Rates:
    peak = spec.peak(precision)
    _, p16 = spec.peak_16bit()
    vec = spec.peak_flops.get("fp32") if spec.family in ("gpu", "cpu") else None
    vec = min(peak, vec or p16 * VECTOR_FRACTION_OF_16BIT_PEAK)
    # the host's figures are measured achievable rates (ak.hardware.calibrate), not datasheet peaks
    measured = spec.family == "cpu"
    ce = 1.0 if measured else COMPUTE_EFFICIENCY
    be = 1.0 if measured else BANDWIDTH_EFFICIENCY
    if measured:
        from accelkit.sim.host import dispatch_overhead_s

        launch = dispatch_overhead_s()
    else:
        launch = LAUNCH_OVERHEAD_S.get(spec.family, 4e-6)
    return Rates(
        matmul_flops=peak * ce,
        vector_flops=vec * ce,
        tier_bw={t.name: t.bandwidth_Bps * be for t in spec.memory_tiers},
        link_Bps=(spec.chip_to_chip_Bps or DEFAULT_LINK_BPS) / 2,  # vendors quote both directions
        launch_s=launch,
        clock_hz=spec.clock_hz or 1e9,
    )


def allreduce_s(nbytes: float, n: int, r: Rates) -> float:
    """Ring all-reduce: 2 (n-1)/n of the data over each chip's link, plus 2 log2(n) hop latencies."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return 2 * (n - 1) / n * nbytes / r.link_Bps + 2 * math.ceil(math.log2(n)) * CHIP_HOP_LATENCY_S


# ---------------------------------------------------------------------------------------------
# per-kernel roofline
# ---------------------------------------------------------------------------------------------
def _roofline(k: Kernel, r: Rates, weights_tier: str, act_tier: str, *, share: float = 1.0,
              act_bytes: float | None = None, tensor: int = 1, opt_tier: str | None = None) -> tuple[float, float]:
    if k.section == "opt" and opt_tier:  # an optimizer update reads and writes its state where it lives
        act_tier = opt_tier
    rate = (r.matmul_flops if k.kind == "matmul" else r.vector_flops) * share
    compute = k.flops / tensor / rate if k.flops else 0.0
    act = (k.bytes - k.param_bytes) if act_bytes is None else act_bytes
    weights = k.param_bytes
    if k.ops and k.ops[0] in GATHER_OPS:  # a lookup reads the rows it fetches, not the whole table
        weights = min(weights, k.out_bytes)
    memory = (weights / tensor) / r.tier_bw[weights_tier] + max(0.0, act) / r.tier_bw[act_tier]
    return compute, memory


def _kt(k: Kernel, units: str, compute: float, memory: float, comm: float, overhead: float,
        peak: float, time: float | None = None) -> KernelTime:
    t = max(compute, memory) + comm + overhead if time is None else time
    parts = {"compute": compute, "memory": memory, "communication": comm, "latency": overhead}
    bound = max(parts, key=lambda p: parts[p])
    return KernelTime(k.name, k.group, k.section, "+".join(k.ops[:5]), units, k.flops, k.bytes, compute, memory,
                      comm, overhead, t, bound, (k.flops / t / peak) if t > 0 else 0.0)


# ---------------------------------------------------------------------------------------------
# the families
# ---------------------------------------------------------------------------------------------
def _kernel_by_kernel(kernels: list[Kernel], spec: AcceleratorSpec, r: Rates, plan, tensor: int,
                      peak: float, profiled: dict[str, float] | None = None) -> list[KernelTime]:
    """GPU / CPU. ``profiled`` (the host only) maps a kernel to the sum of its ops' times measured on this
    CPU at the captured shapes; eager PyTorch runs ops one by one, so those replace the roofline there."""
    w, a = plan.placement["weights"], plan.placement["activation"]
    units = f"{spec.compute_units} {spec.unit_name or 'units'}"
    o = plan.placement.get("optimizer")
    cache = spec.memory_tiers[0]
    out = []
    for k in kernels:
        # on a CPU a kernel whose tensors fit in the cache runs from it, not from DRAM
        tier = cache.name if spec.family == "cpu" and k.bytes <= cache.capacity_bytes * CPU_CACHE_SHARE else None
        c, m = _roofline(k, r, tier or w, tier or a, tensor=tensor, opt_tier=o)
        launch = r.launch_s * (len(k.ops) if spec.family == "cpu" else 1)
        if profiled and k.name in profiled:
            measured = profiled[k.name]
            out.append(_kt(k, units, measured if c >= m else c, m if m > c else measured, 0.0, launch, peak,
                           time=max(measured, c, m) + launch))
        else:
            out.append(_kt(k, units, c, m, 0.0, launch, peak * tensor))
    return out


def _eager_extras(prog, kernels: list[Kernel], r: Rates) -> KernelTime:
    """Eager PyTorch runs what a compiler removes: every view, and every op that depends only on weights
    and constants (masks, position ids), each paying the dispatch cost measured on this host."""
    from accelkit.sim.host import view_op_s

    in_kernels = sum(len(k.nodes) for k in kernels)
    fwd_nodes = sum(1 for n in prog.graph.nodes if n.section == "fwd")
    extra = max(0, fwd_nodes - in_kernels)
    t = extra * (r.launch_s + view_op_s())
    return KernelTime("eager views and constants", "<eager>", "fwd", f"{extra} ops", "host", 0, 0, 0.0, 0.0, 0.0,
                      t, t, "latency", 0.0)


def _host_profiled(prog, kernels: list[Kernel], scale: float) -> dict[str, float]:
    """Per-kernel sums of op times measured on this host (fp32 only: the captured precision)."""
    from accelkit.sim.host import op_time_s

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
            t = op_time_s(node.op, node.extra["args"], node.extra.get("kwargs", {}))
            if t is None:
                break
            total += t
        else:
            out[k.name] = total * scale
    return out


def _rdu(kernels: list[Kernel], spec: AcceleratorSpec, r: Rates, plan, tensor: int, peak: float,
         placement) -> list[KernelTime]:
    w, a = plan.placement["weights"], plan.placement["activation"]
    units = {reg.kernels[0]: f"{reg.units} PCUs / {reg.memory_units} PMUs" for reg in placement.regions}
    out = []
    for _layer, sec in layers(kernels):
        names = {k.name for k in sec}
        for i, k in enumerate(sec):
            # inside a section, data flows unit to unit: only what enters from outside the section
            # (or leaves it) touches the activation tier
            ext_in = (k.bytes_read - k.param_bytes) if i == 0 else 0
            ext_out = k.bytes_written if i == len(sec) - 1 or not names else 0
            c, m = _roofline(k, r, w, a, act_bytes=ext_in + ext_out, tensor=tensor,
                             opt_tier=plan.placement.get("optimizer"))
            out.append(_kt(k, units.get(k.name, ""), c, m, 0.0, r.launch_s if i == 0 else 0.0, peak * tensor))
    return out


def _wafer(kernels: list[Kernel], spec: AcceleratorSpec, r: Rates, plan, tensor: int, peak: float,
           placement, samples: int) -> tuple[list[KernelTime], float, float]:
    """Returns kernel times (per step), the step time, and one sample's latency through the wafer."""
    rows, cols = placement.grid
    total_units = rows * cols
    onchip = spec.memory_tiers[0].name
    out: list[KernelTime] = []
    if plan.mode == "weight-streaming":
        ext = plan.placement["weights"]
        for k in kernels:
            c, _ = _roofline(k, r, onchip, onchip, tensor=tensor)
            stream = (k.param_bytes / tensor) / r.tier_bw[ext]
            hops = 2 * (rows + cols) / r.clock_hz if k.kind == "matmul" else 0.0
            out.append(_kt(k, f"all {total_units:,} cores", c, stream, 0.0, r.launch_s + hops, peak * tensor))
        step = sum(k.time_s for k in out)
        return out, step, step
    region_of = {}
    for reg in placement.regions:
        for name in reg.kernels:
            region_of[name] = reg
    per_sample = 1.0 / max(1, samples)
    latency = 0.0
    region_time: dict[str, float] = {}
    for k in kernels:
        reg = region_of.get(k.name)
        share = (reg.units / total_units) if reg else 1.0
        c, m = _roofline(k, r, onchip, onchip, share=share, tensor=tensor)
        m /= share  # a region reads from the SRAM beside its own cores only
        hops = 2 * ((reg.rows if reg else rows) + (reg.cols if reg else cols)) / r.clock_hz \
            if k.kind == "matmul" else 0.0
        kt = _kt(k, f"rows {reg.row0}-{reg.row0 + reg.rows - 1}, cols {reg.col0}-{reg.col0 + reg.cols - 1}"
                 if reg else "", c, m, 0.0, hops, peak * tensor * share)
        out.append(kt)
        key = reg.name if reg else k.name
        # the fabric is pipelined: the mesh path adds to one sample's latency, not to the rate at which
        # a region accepts samples
        region_time[key] = region_time.get(key, 0.0) + max(c, m) * per_sample
        latency += max(c, m) * per_sample + hops
    latency += r.launch_s * len(region_time)
    slowest = max(region_time.values(), default=0.0)
    step = latency + (samples - 1) * slowest  # fill the pipeline, then one sample per slowest-region time
    return out, step, latency


def _ipu(kernels: list[Kernel], spec: AcceleratorSpec, r: Rates, plan, tensor: int, peak: float
         ) -> list[KernelTime]:
    exchange_Bps = (spec.fabric_Bps or spec.on_chip_bandwidth_Bps) * BANDWIDTH_EFFICIENCY
    w = plan.placement["weights"]  # tile memory unless the weights stream in from streaming memory
    units = f"{spec.compute_units} tiles"
    out = []
    for k in kernels:
        c, m = _roofline(k, r, w, spec.memory_tiers[0].name, tensor=tensor, opt_tier=plan.placement.get("optimizer"))
        exchange = k.out_bytes / exchange_Bps
        out.append(_kt(k, units, c, m, exchange, r.launch_s, peak * tensor))  # compute | sync | exchange
    return out


def tsp_cycles(k: Kernel, r: Rates, sram: str) -> int:
    """Cycles a TSP program spends on one kernel: its stream latency, then the larger of its compute and
    its SRAM traffic. Fixed at compile time: the same program always takes the same cycles. A kernel whose
    weights span several chips runs its share on each chip in turn as the data passes through."""
    rate = r.matmul_flops if k.kind == "matmul" else r.vector_flops
    busy = max(k.flops / rate, k.bytes / r.tier_bw[sram])
    return TSP_STREAM_CYCLES + math.ceil(busy * r.clock_hz)


def _tsp(kernels: list[Kernel], spec: AcceleratorSpec, r: Rates, plan, tensor: int, peak: float,
         placement) -> list[KernelTime]:
    sram = spec.memory_tiers[0].name
    region_of = {reg.kernels[0]: reg for reg in placement.regions}
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
        kt = _kt(k, f"{reg.slice} chip {reg.chip}" + (f"-{reg.chip + reg.units - 1}" if reg.units > 1 else ""),
                 c, 0.0, hop, cycles / r.clock_hz - c, peak, time=t)
        out.append(kt)
    return out


# ---------------------------------------------------------------------------------------------
def _events(kts: Iterable[KernelTime], lane_of, start: float = 0.0) -> tuple[list[TimelineEvent], float]:
    t = start
    ev = []
    for k in kts:
        ev.append(TimelineEvent(k.name, k.section, lane_of(k), t, k.time_s))
        t += k.time_s
    return ev, t


def estimate(prog) -> PerfReport:
    """Model one step of ``prog`` (a CompiledProgram). Pure: no printing, no plotting, no I/O."""
    spec: AcceleratorSpec = prog.spec
    r = rates(spec, prog.precision)
    peak = spec.peak(prog.precision)
    par = prog.parallel
    plan = prog.memory_plan
    fam = spec.family
    # the program's kernels are at batch / data; a micro-batch is what flows through at once
    per_replica = prog.batch_size / par.data
    micro = min(prog.micro_batch / par.data if prog.training else per_replica, per_replica) or per_replica
    n_micro = max(1, round(per_replica / micro)) if prog.training else 1
    kernels = [k.scaled(micro / per_replica) for k in prog.kernels]
    step_kernels = [k for k in kernels if k.section != "opt"]
    opt_kernels = [k for k in kernels if k.section == "opt"]
    tensor = par.tensor
    notes: list[str] = []
    latency = None

    def times(ks: list[Kernel], samples: int) -> tuple[list[KernelTime], float]:
        nonlocal latency
        if not ks:
            return [], 0.0
        if fam == "reconfigurable-dataflow":
            kt = _rdu(ks, spec, r, plan, tensor, peak, prog.placement)
        elif fam == "wafer-dataflow":
            kt, step, lat = _wafer(ks, spec, r, plan, tensor, peak, prog.placement, samples)
            latency = lat if latency is None else latency
            return kt, step
        elif fam == "bsp-tiles":
            kt = _ipu(ks, spec, r, plan, tensor, peak)
        elif fam == "static-schedule":
            kt = _tsp(ks, spec, r, plan, tensor, peak, prog.placement)
        else:
            profiled = _host_profiled(prog, ks, micro / prog.example_batch) if fam == "cpu" else None
            kt = _kernel_by_kernel(ks, spec, r, plan, tensor, peak, profiled)
            if fam == "cpu" and ks[0].section == "fwd":
                kt.append(_eager_extras(prog, ks, r))
        return kt, sum(k.time_s for k in kt)

    samples = max(1, int(round(micro)))
    fwd_kt, fwd_s = times([k for k in step_kernels if k.section == "fwd"], samples)
    bwd_kt, bwd_s = times([k for k in step_kernels if k.section == "bckwd"], samples)
    opt_kt, opt_s = times(opt_kernels, 1)
    # recomputation re-runs forward work during the backward pass
    if prog.training and prog.recompute == "full":
        bwd_s += fwd_s
        notes.append("full recompute: the forward pass runs again inside backward")
    elif prog.training and prog.recompute == "selective":
        extra = sum(k.time_s for k in fwd_kt if k.bound != "compute" or k.flops == 0)
        bwd_s += extra
        notes.append("selective recompute: memory-bound forward kernels run again inside backward")
    # tensor parallel: two all-reduces of each layer's output in forward, two more in backward
    comm_s = 0.0
    comm_bytes = 0
    if tensor > 1:
        layer_out = [ks[-1].out_bytes for _g, ks in layers([k for k in step_kernels if k.section == "fwd"])]
        per_pass = sum(2 * allreduce_s(b, tensor, r) for b in layer_out)
        comm_s += per_pass * (2 if prog.training else 1)
        comm_bytes += int(sum(layer_out) * 2 * (2 if prog.training else 1))
        notes.append(f"tensor parallel over {tensor} chips: 2 all-reduces per layer per pass")
    micro_s = fwd_s + bwd_s + comm_s
    # pipeline parallel: stages of about equal work; bubble of (stages - 1) micro-batches
    p = par.pipeline
    scale = float(n_micro)  # how many times each section's work runs per step, on one chip
    bubble_s = 0.0
    if p > 1:
        stage_s = micro_s / p + CHIP_HOP_LATENCY_S
        if prog.training:
            step_s = (n_micro + p - 1) * stage_s
            scale = n_micro / p
            bubble_s = step_s - scale * micro_s
            notes.append(f"pipeline of {p} stages, {n_micro} micro-batches: bubble {(p - 1) / (n_micro + p - 1):.0%}")
        elif fam == "static-schedule":  # the schedule already charges every chip boundary it crosses
            step_s = micro_s
        else:
            step_s = micro_s + (p - 1) * CHIP_HOP_LATENCY_S
            bubble_s = (p - 1) * CHIP_HOP_LATENCY_S
            notes.append(f"{p} pipeline stages: one sample crosses {p - 1} chip boundaries")
    else:
        step_s = n_micro * micro_s
    # data parallel: all-reduce of the gradients once per step
    dp_s = 0.0
    if prog.training and par.data > 1:
        grad_bytes = plan.gradient_bytes
        dp_s = allreduce_s(grad_bytes, par.data, r)
        comm_bytes += int(2 * (par.data - 1) / par.data * grad_bytes)
        notes.append(f"data parallel over {par.data} replicas: gradient all-reduce {dp_s * 1e3:.3g} ms per step")
    step_s += dp_s + opt_s
    all_kt = fwd_kt + bwd_kt + opt_kt
    # timeline: one lane per unit group the family exposes
    if fam == "static-schedule":
        lane = lambda k: k.units  # noqa: E731
    elif fam == "reconfigurable-dataflow":
        lane = lambda k: f"section {k.group}"  # noqa: E731
    elif fam == "wafer-dataflow":
        lane = lambda k: f"region {k.group}"  # noqa: E731
    else:
        lane = lambda k: f"{k.section}"  # noqa: E731
    events, t = _events(fwd_kt + bwd_kt, lane)
    if comm_s + dp_s:
        events.append(TimelineEvent("all-reduce", "comm", "links", t, comm_s + dp_s))
        t += comm_s + dp_s
    ev2, _ = _events(opt_kt, lane, t)
    events += ev2
    # traffic per tier (per chip, per step)
    traffic: dict[str, int] = {}
    w, a = plan.placement["weights"], plan.placement["activation"]
    # one chip's share: tensor parallelism splits every kernel, a pipeline gives each chip 1 / p of them
    traffic[w] = traffic.get(w, 0) + int(sum(k.param_bytes for k in kernels) / (tensor * p) * n_micro)
    traffic[a] = traffic.get(a, 0) + int(sum(k.bytes - k.param_bytes for k in kernels) / p * n_micro)
    flops = sum(k.flops for k in kernels) / (tensor * p) * n_micro
    util = {"compute": flops / (step_s * peak) if step_s else 0.0}
    for tier, b in traffic.items():
        bw = next(t.bandwidth_Bps for t in spec.memory_tiers if t.name == tier)
        util[f"{tier} bandwidth"] = min(1.0, b / (step_s * bw)) if step_s else 0.0
    throughput = prog.batch_size / step_s if step_s else 0.0
    first = next(iter(prog.graph.inputs.values()), None)
    tokens = None
    if first is not None and first.dtype.startswith("int") and len(first.shape) == 2:
        tokens = throughput * first.shape[1]
    energy = spec.power_w * step_s * prog.chips if spec.power_w else None
    return PerfReport(
        target=spec.name, family=fam, mode=plan.mode, precision=prog.precision, batch_size=prog.batch_size,
        chips=prog.chips, parallel=par, training=prog.training, step_time_s=step_s, throughput=throughput,
        tokens_per_s=tokens,
        sections_s={"fwd": fwd_s * scale, "bckwd": bwd_s * scale, "opt": opt_s, "comm": comm_s * scale + dp_s,
                    "bubble": bubble_s},
        kernels=all_kt, utilization=util, traffic_bytes=traffic, comm_bytes=comm_bytes, energy_j=energy,
        events=events, assumptions=assumptions_for(fam, chips=prog.chips), notes=notes, latency_s=latency,
    )
