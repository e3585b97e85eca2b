"""``estimate(prog)``: one step of a compiled program, modelled. Pure: no printing, no plotting, no I/O.

Each family's execution model (``accelkit.families``, one module per family) times its kernels; this
module composes them into a step the same way for every family:

- gpu / cpu: kernel by kernel; each kernel reads and writes its tensors in HBM/DRAM and pays a
  launch overhead.
- reconfigurable-dataflow (RDU): sections one after another, each a spatial pipeline on PCUs and PMUs.
- wafer-dataflow (WSE): pipelined regions a sample flows through, or weight streaming layer by layer.
- bsp-tiles (IPU): one superstep per kernel: compute, sync, exchange.
- static-schedule (TSP): the cycle-exact schedule from placement.

Multi-chip work: data parallel adds a gradient all-reduce; tensor parallel divides each layer's
work and adds two all-reduces of its output per layer (four in training); pipeline parallel splits
layers into stages with a fill/drain bubble of (stages - 1) micro-batches.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from accelkit.constants import assumptions_for, value
from accelkit.cost.kernel import Kernel, layers
from accelkit.cost.rates import Rates, allreduce_s, host_link_Bps, kernel_time  # noqa: F401 - re-exported for older imports
from accelkit.cost.report import Breakdown, KernelTime, PerfReport, TimelineEvent, breakdown, fmt_s
from accelkit.families import TimingContext, model_for, rates  # noqa: F401 - model_for, rates re-exported
from accelkit.families.cpu import host_partition_times
from accelkit.families.cpu import host_profiled as _host_profiled  # noqa: F401 - re-exported
from accelkit.families.tsp import tsp_cycles  # noqa: F401 - re-exported: the TSP placement reads it
from accelkit.graph.cost import FLOAT_DTYPES, captured_element_bytes
from accelkit.hardware.precision import element_bytes
from accelkit.hardware.spec import AcceleratorSpec

LOSS_BYTES = 4  # what a training step sends back to the host: its fp32 loss (PopTorch's OutputMode.Final)

if TYPE_CHECKING:  # the compiler sits above this layer: its types are for annotations only
    from accelkit.compiler.memory import MemoryPlan
    from accelkit.compiler.program import CompiledProgram


# ---------------------------------------------------------------------------------------------
def _events(kts: Iterable[KernelTime], lane_of, start: float = 0.0) -> tuple[list[TimelineEvent], float]:
    t = start
    ev = []
    for k in kts:
        ev.append(TimelineEvent(k.name, k.section, lane_of(k), t, k.time_s))
        t += k.time_s
    return ev, t


def call_bytes(prog: CompiledProgram) -> tuple[int, int]:
    """Bytes one step's inputs and outputs move over the host link, per data-parallel replica: every batched
    input at the step's batch (floating point at the program's precision), and back the outputs (inference) or
    the loss (training). Synthetic data (made on the device, as Graphcore's ``enableSyntheticData``) moves none."""
    if prog.synthetic_data:
        return 0, 0
    g = prog.graph
    per = prog.batch_size / prog.example_batch / prog.parallel.data
    scale = element_bytes(prog.precision) / captured_element_bytes(g)

    def nbytes(metas: Iterable[Any]) -> int:
        total = 0.0
        for m in metas:
            b = m.nbytes * (scale if m.dtype in FLOAT_DTYPES else 1.0)
            # a batched tensor grows with the step's batch (a 1-D example is one sample: it is the batch of one)
            batched = bool(m.shape) and (m.shape[0] == prog.example_batch or
                                         (prog.example_batch == 1 and len(m.shape) == 1))
            total += b * per if batched else b
        return int(total)

    out = nbytes(g.outputs) if not prog.training or output_mode(prog) == "all" else LOSS_BYTES
    return nbytes(g.inputs.values()), out


def stream_copies(prog: CompiledProgram, n_in: int, n_out: int) -> tuple[int, int]:
    """How many stream copies carry one micro-batch's ``n_in`` input bytes and ``n_out`` output bytes (in, out):
    one per tensor, each scheduled on its own where the step first needs it or makes it (PopART's default: an
    input as late as possible, an output as early), or one per direction where ``prog.group_host_sync`` groups
    them at the step's start and end (PopART's ``groupHostSync``: fewer syncs, the inputs kept live longer)."""
    if prog.group_host_sync:
        return int(n_in > 0), int(n_out > 0)
    return (len(prog.graph.inputs) if n_in > 0 else 0), (len(prog.graph.outputs) if n_out > 0 else 0)


def output_mode(prog: CompiledProgram) -> str:
    """What each call sends back: ``"all"`` (every step's outputs) or ``"final"`` (its last step's); unless the
    program was told, PopTorch's defaults: a training model's loss at the end of the call, an inference model's
    outputs every step."""
    return prog.output_mode or ("final" if prog.training else "all")


@dataclass(frozen=True)
class HostTraffic:
    """One step's traffic with the host, per chip: the bytes each way, the round trip one call pays, the step's
    stream copies (their host syncs and bytes) and the step's share of it all (section ``io``)."""

    in_bytes: int = 0
    out_bytes: int = 0
    round_trip_s: float = 0.0  # once per call
    stream_s: float = 0.0  # every step: its data's stream copies (a sync per direction that carries data, the bytes)
    step_s: float = 0.0  # stream_s + the round trip shared by the call's device_iterations steps
    syncs: int = 0  # stream copies per step that each synchronise with the host (a runtime with HostIO.stream_sync)


def host_io(prog: CompiledProgram) -> HostTraffic:
    """One step's traffic with the host. A call runs ``prog.device_iterations`` steps and pays the round trip
    (the family's latency each way) once; the bytes cross at the family's host-link rate (shared by the
    data-parallel replicas where one host process feeds them all), and a runtime that synchronises each stream copy
    with the host pays that sync per step and direction. A stack whose host queues work asynchronously
    (``HostIO.overlapped``) never waits for a round trip, and its outputs stay on the device (PyTorch's tensors on
    a GPU, XLA's on a TPU): only the inputs count."""
    io = prog.family.host_io
    if io is None:
        return HostTraffic()
    link = float(io.link_Bps.value) if io.link_Bps is not None else host_link_Bps(prog.spec)
    if io.shared:
        link /= max(1, prog.parallel.data)  # one host's rate, shared by the replicas it feeds
    n_in, n_out = call_bytes(prog)
    if io.overlapped:  # the framework's outputs stay in the chip's memory until the loop asks for them
        n_out = 0
    # the outputs come back every step (OutputMode.All, an inference model's default) or with the call's last step
    # (OutputMode.Final, a training model's); each micro-batch's inputs, and outputs that come back, are stream
    # copies: one per tensor, each where the schedule first needs it (PopART's default), or one per direction
    # (group_host_sync: PopART's groupHostSync)
    every = output_mode(prog) == "all"
    streams = sum(stream_copies(prog, n_in, n_out if every else 0)) * _micro_batches(prog)[2]
    if not every and not prog.training:  # an inference call's last step's outputs (a training loss: 4 bytes)
        n_out = round(n_out / max(1, prog.device_iterations))
    stream = (n_in + n_out) / link + streams * io.stream_sync_s()
    trip = 0.0 if io.overlapped else 2 * io.latency_s()
    return HostTraffic(n_in, n_out, trip, stream, stream + trip / max(1, prog.device_iterations),
                       streams if io.stream_sync is not None else 0)


@dataclass(frozen=True)
class _Pass:
    """One pass (fwd, bckwd or opt) timed: its kernels' times (device, host partitions, transfers), its seconds,
    one sample's latency through a spatial pipeline (None elsewhere) and the host's issue work beside it."""

    kernels: list[KernelTime]
    seconds: float
    latency_s: float | None = None
    host_events: tuple[tuple[str, float, float], ...] = ()
    spent: tuple[tuple[str, float], ...] = ()  # the family's Timed.spent


SPENT_NOTE_SHARE = 0.05
"""A share of the step a family names (``Timed.spent``) is reported from 5% of it on."""


def _spent_notes(passes: dict[str, _Pass], scale: float, step_s: float) -> list[str]:
    """One note per thing a family named in ``Timed.spent``, its seconds added up over the step's passes (the
    forward and backward ``scale`` times, as the step runs them), where it is at least ``SPENT_NOTE_SHARE`` of it."""
    total: dict[str, float] = {}
    for section, p in passes.items():
        for what, seconds in p.spent:
            total[what] = total.get(what, 0.0) + seconds * (1 if section == "opt" else scale)
    return [f"{what}: {fmt_s(s)} of the chip's time in the {fmt_s(step_s)} step ({s / step_s:.0%}, modelled)"
            for what, s in total.items() if step_s and s >= SPENT_NOTE_SHARE * step_s]


def _time_pass(prog: CompiledProgram, ks: list[Kernel], samples: int, micro: float, peak: float,
               link_Bps: float) -> _Pass:
    """Time one pass's kernels: the family's model times those on the device; with ``fallback="host"`` the host
    partitions run on the host CPU and every crossing goes over the host link, one after another with the
    device's work (the device waits for the host's results)."""
    if not ks:
        return _Pass([], 0.0)
    on_device = [k for k in ks if k.runs_on == "device"]
    kts: list[KernelTime] = []
    step = 0.0
    latency = None
    host_events: tuple[tuple[str, float, float], ...] = ()
    spent: tuple[tuple[str, float], ...] = ()
    if on_device:
        ctx = TimingContext(prog.spec, prog.rates, prog.memory_plan, prog.placement, prog.parallel.tensor, peak,
                            samples, prog, micro / prog.example_batch)
        timed = prog.family.time(on_device, ctx)
        latency, kts, step, host_events = timed.latency_s, timed.kernels, timed.step_s, timed.host_events
        spent = timed.spent
    if len(on_device) == len(ks):
        return _Pass(kts, step, latency, host_events, spent)
    host_kt = host_partition_times([k for k in ks if k.runs_on == "host"], prog.host_spec)
    link_kt = [kernel_time(k, "host link", 0.0, 0.0, k.bytes_read / link_Bps, value("HOST_TRANSFER_LATENCY_S"),
                           peak) for k in ks if k.runs_on == "link"]
    by_name = {kt.name: kt for kt in (*kts, *host_kt, *link_kt)}
    ordered = [by_name[k.name] for k in ks if k.name in by_name]
    named = {k.name for k in ks}
    ordered += [kt for kt in kts if kt.name not in named]  # a family's own extra rows (eager views)
    return _Pass(ordered, step + sum(k.time_s for k in (*host_kt, *link_kt)), latency, host_events, spent)


def _recompute_s(prog: CompiledProgram, fwd: _Pass, notes: list[str]) -> float:
    """Seconds recomputation adds to the backward pass (forward work run again inside it)."""
    if prog.training and prog.recompute == "full":
        notes.append("full recompute: the forward pass runs again inside backward")
        return fwd.seconds
    if prog.training and prog.recompute == "selective":
        notes.append("selective recompute: memory-bound forward kernels run again inside backward")
        return sum(k.time_s for k in fwd.kernels if k.bound != "compute" or k.flops == 0)
    return 0.0


def _tensor_parallel(prog: CompiledProgram, fwd_kernels: list[Kernel], notes: list[str]) -> tuple[float, int]:
    """Tensor parallel: two all-reduces of each layer's output in forward, two more in backward (seconds, bytes)."""
    tensor = prog.parallel.tensor
    if tensor <= 1:
        return 0.0, 0
    layer_out = [ks[-1].out_bytes for _g, ks in layers(fwd_kernels)]
    per_pass = sum(2 * prog.family.allreduce_s(b, tensor, prog.rates, prog.spec) for b in layer_out)
    notes.append(f"tensor parallel over {tensor} chips: 2 all-reduces per layer per pass")
    passes = 2 if prog.training else 1
    return per_pass * passes, int(sum(layer_out) * 2 * passes)


def _stage_shares(prog: CompiledProgram, passes: list[_Pass]) -> list[float] | None:
    """Each pipeline stage's share of one micro-batch's forward and backward time, from the stage the placement
    put each kernel in (``Placement.stages``, its regions' chips); None where the placement names no stages."""
    p = prog.parallel.pipeline
    if len(prog.placement.stages) != p:
        return None
    stage_of = {name: r.chip for r in prog.placement.regions for name in r.kernels}
    times = [0.0] * p
    for ps in passes:
        for kt in ps.kernels:
            s = stage_of.get(kt.name)
            if s is None or not 0 <= s < p:
                return None
            times[s] += kt.time_s
    total = sum(times)
    return [t / total for t in times] if total > 0 else None


def _pipeline(prog: CompiledProgram, micro_s: float, n_micro: int, notes: list[str],
              shares: list[float] | None = None) -> tuple[float, float, float]:
    """The step's seconds over the pipeline, how many times each section's work runs per step on one chip, and
    the bubble. In training every micro-batch waits for the busiest stage (``shares``: each stage's share of the
    work, as placed; stages of equal work where the placement does not say), plus a fill/drain bubble of
    (stages - 1) micro-batches."""
    p = prog.parallel.pipeline
    hop_s = value("CHIP_HOP_LATENCY_S")  # read when used, as every constant
    per = _micro_batches(prog)[1]
    each = f" of {per:g} sample{'s' if per != 1 else ''}" + (" per replica" if prog.parallel.data > 1 else "")
    if p <= 1:
        if prog.training and n_micro > 1:
            notes.append(f"gradients accumulated over {n_micro} micro-batches{each}")
        return n_micro * micro_s, float(n_micro), 0.0
    if prog.training:
        busiest = max(shares) if shares else 1 / p
        stage_s = micro_s * busiest + hop_s
        step_s = (n_micro + p - 1) * stage_s
        scale = n_micro / p
        notes.append(f"pipeline of {p} stages, {n_micro} micro-batch{'es' if n_micro != 1 else ''}{each}: bubble "
                     f"{(p - 1) / (n_micro + p - 1):.0%}"
                     + (f"; the busiest stage holds {busiest:.0%} of the work (the chips wait for it"
                        + (f"; each stage's share: {', '.join(f'{x:.0%}' for x in shares)})" if shares and p <= 16
                           else ")")
                        if busiest > 1.02 / p else ""))
        return step_s, scale, step_s - scale * micro_s
    if prog.family.schedule_charges_hops:  # the schedule already charges every chip boundary it crosses
        return micro_s, float(n_micro), 0.0
    notes.append(f"{p} pipeline stages: one sample crosses {p - 1} chip boundaries")
    return micro_s + (p - 1) * hop_s, float(n_micro), (p - 1) * hop_s


def _data_parallel(prog: CompiledProgram, notes: list[str], n_micro: float = 1.0) -> tuple[float, int]:
    """Data parallel in training: one all-reduce of the gradients per step (seconds, bytes). Under ZeRO-1 and -2
    it runs as a reduce-scatter of the gradients and an all-gather of the updated weights, the same bytes; under
    ZeRO-3 each micro-batch also gathers every layer's weights for its forward and again for its backward (two
    all-gathers, an all-reduce's bytes)."""
    par = prog.parallel
    if not (prog.training and par.data > 1):
        return 0.0, 0
    plan = prog.memory_plan
    grad_bytes = plan.gradient_bytes * par.sharded("gradient")  # the whole replica's gradients
    dp_s = prog.family.allreduce_s(grad_bytes, par.data, prog.rates, prog.spec)
    moved = 2 * (par.data - 1) / par.data * grad_bytes
    what = "gradient all-reduce" if not par.zero else \
        f"ZeRO-{par.zero}: gradient reduce-scatter and weight all-gather"
    notes.append(f"data parallel over {par.data} replicas: {what} {dp_s * 1e3:.3g} ms per step")
    if par.zero >= 3:
        weight_bytes = plan.weights_bytes * par.data
        gather_s = n_micro * prog.family.allreduce_s(weight_bytes, par.data, prog.rates, prog.spec)
        notes.append(f"ZeRO-3: each micro-batch gathers the weights for its forward and its backward: "
                     f"{gather_s * 1e3:.3g} ms per step ({n_micro:g} micro-batches)")
        dp_s += gather_s
        moved += n_micro * 2 * (par.data - 1) / par.data * weight_bytes
    return dp_s, int(moved)


def _traffic(prog: CompiledProgram, kernels: list[Kernel], n_micro: int) -> dict[str, int]:
    """Bytes per memory tier, per chip, per step: one chip's share (tensor parallelism splits every kernel, a
    pipeline gives each chip 1 / p of them); what did not fit on chip is read from the tier it streams from."""
    plan = prog.memory_plan
    tensor, p = prog.parallel.tensor, prog.parallel.pipeline
    traffic: dict[str, int] = {}
    w, a = plan.placement["weights"], plan.placement["activation"]
    weight_traffic = sum(k.param_bytes for k in kernels) / (tensor * p) * n_micro
    if plan.partial and plan.spill_tier:
        traffic[plan.spill_tier] = int(weight_traffic * (1 - plan.resident))
        weight_traffic *= plan.resident
    traffic[w] = traffic.get(w, 0) + int(weight_traffic)
    traffic[a] = traffic.get(a, 0) + int(sum(k.bytes - k.param_bytes for k in kernels) / p * n_micro)
    return traffic


def _generated_note(prog: CompiledProgram, kernels: list[Kernel], all_kt: list[KernelTime]) -> str | None:
    """What the kernels with generated code (no library kernel for an op) cost against library kernels."""
    generated = {k.name: k.efficiency for k in kernels if k.generated is not None}
    if not generated:
        return None
    mine = [kt for kt in all_kt if kt.name in generated]
    ops = sorted({op for k in kernels if k.generated for op in k.generated.ops})
    model = prog.family
    eff = model.generated_efficiency.value if model.generated_efficiency else 1.0
    # what they would take as library kernels: the same roofline at the library's rate
    as_library = sum(max(kt.compute_s * generated[kt.name], kt.memory_s) + kt.comm_s + kt.overhead_s for kt in mine)
    return (f"{len(generated)} kernel(s) with generated code (no library kernel for {', '.join(ops[:5])}; "
            f"those ops compute at {eff:.0%} of a library kernel's rate): "
            f"{fmt_s(sum(kt.time_s for kt in mine))} per pass, {fmt_s(as_library)} had the library covered them")


def _fallback_note(prog: CompiledProgram, kernels: list[Kernel], n_parts: int, host_s: float, transfer_s: float,
                   link_Bps: float) -> str:
    """What ``fallback="host"`` costs: the host partitions' seconds and the transfers over the host link."""
    spec = prog.spec
    link_source = spec.source("host_link_Bps") if spec.host_link_Bps else (
        "an illustrative figure: the chip publishes none; HOST_LINK_BPS in accelkit.constants")
    n_host = sum(1 for k in kernels if k.runs_on == "host")
    n_link = sum(1 for k in kernels if k.runs_on == "link")
    host_name = prog.host_spec.full_name if prog.host_spec is not None else "the host"
    return (f"fallback 'host': {n_host} kernel(s) in {n_parts} partition(s) run on the host CPU ({host_name}, "
            f"eager fp32 at the rates measured on this machine): {fmt_s(host_s)} per step; {n_link} "
            f"transfer(s) over the host link at {link_Bps * 2 / 1e9:.3g} GB/s ({link_source}) take "
            f"{fmt_s(transfer_s)} per step; the device waits while the host works (no overlap modelled)")


def _timeline(passes: dict[str, _Pass], lane: Any, comm_s: float, io_s: float,
              input_s: float = 0.0) -> list[TimelineEvent]:
    """The step's events: forward and backward kernels (and the host issuing them), the all-reduces, the
    optimizer, then the host link's share and the wait for the host's input pipeline."""
    fwd, bwd, opt = passes["fwd"], passes["bckwd"], passes["opt"]
    events, t = _events(fwd.kernels + bwd.kernels, lane)
    for section, offset in (("fwd", 0.0), ("bckwd", fwd.seconds)):  # the host issuing ops beside the chip's kernels
        events += [TimelineEvent(name, section, "host (issues kernels)", offset + start, seconds)
                   for name, start, seconds in passes[section].host_events]
    if comm_s:
        events.append(TimelineEvent("all-reduce", "comm", "links", t, comm_s))
        t += comm_s
    ev2, t = _events(opt.kernels, lane, t)
    events += ev2
    if io_s:
        events.append(TimelineEvent("inputs in, outputs out, round trip", "io", "host link", t, io_s))
        t += io_s
    if input_s:
        events.append(TimelineEvent("waiting for the next batch", "input", "host input pipeline", t, input_s))
    return events


_OFF_DEVICE_LANES = {"host": "host CPU", "link": "host link"}
"""The timeline's lane for a kernel that does not run on the device (``Kernel.runs_on``)."""


def _micro_batches(prog: CompiledProgram) -> tuple[float, float, int]:
    """Samples per data-parallel replica, per micro-batch (what flows through at once) and micro-batches per step:
    the program's kernels are at batch / data; only training splits a replica's batch into micro-batches."""
    per_replica = prog.batch_size / prog.parallel.data
    micro = min(prog.micro_batch / prog.parallel.data if prog.training else per_replica, per_replica) or per_replica
    n_micro = max(1, round(per_replica / micro)) if prog.training else 1
    return per_replica, micro, n_micro


def _partial_note(plan: MemoryPlan) -> str:
    return (f"partial residency: {plan.resident:.0%} of the {' and '.join(plan.spilled_kinds)} stay in "
            f"{plan.resident_tier}; {plan.streamed_bytes / 1e9:.3g} GB per chip stream from {plan.spill_tier} "
            f"every pass ({plan.chips_needed} chips would hold it all)")


def _utilization(spec: AcceleratorSpec, bd: Breakdown, traffic: dict[str, int]) -> dict[str, float]:
    """The compute units' share busy, and each memory tier's bandwidth share the step's traffic uses."""
    util = {"compute": bd.utilization}
    for tier, b in traffic.items():
        bw = next(t.bandwidth_Bps for t in spec.memory_tiers if t.name == tier)
        util[f"{tier} bandwidth"] = min(1.0, b / (bd.step_s * bw)) if bd.step_s else 0.0
    return util


def _tokens_per_s(prog: CompiledProgram, throughput: float) -> float | None:
    """Tokens per second where the first input is a (batch, sequence) tensor of token ids; None otherwise."""
    first = next(iter(prog.graph.inputs.values()), None)
    if first is not None and first.dtype.startswith("int") and len(first.shape) == 2:
        return throughput * first.shape[1]
    return None


def estimate(prog: CompiledProgram) -> PerfReport:
    """Model one step of ``prog`` (a CompiledProgram). Pure: no printing, no plotting, no I/O."""
    spec: AcceleratorSpec = prog.spec
    model = prog.family  # looked up once, by the options the program was built from
    peak = model.peak(spec, prog.precision)
    par = prog.parallel
    plan = prog.memory_plan
    per_replica, micro, n_micro = _micro_batches(prog)
    kernels = [k.scaled(micro / per_replica) for k in prog.kernels]
    step_kernels = [k for k in kernels if k.section != "opt"]
    notes: list[str] = [_partial_note(plan)] if plan.partial else []
    if prog.chosen:  # what the compiler chose that the caller did not ask for (accelkit.workflow.compiling)
        notes.insert(0, prog.chosen)
    stack = model.stack(prog.stack or None)
    link_Bps = host_link_Bps(spec)  # one way: vendors quote both directions together
    samples = max(1, int(round(micro)))
    passes = {section: _time_pass(prog, [k for k in step_kernels if k.section == section], samples, micro, peak,
                                  link_Bps) for section in ("fwd", "bckwd")}
    passes["opt"] = _time_pass(prog, [k for k in kernels if k.section == "opt"], 1, micro, peak, link_Bps)
    fwd, bwd, opt = passes["fwd"], passes["bckwd"], passes["opt"]
    latency = next((ps.latency_s for ps in passes.values() if ps.latency_s is not None), None)
    fwd_s, opt_s = fwd.seconds, opt.seconds
    bwd_s = bwd.seconds + _recompute_s(prog, fwd, notes)
    comm_s, comm_bytes = _tensor_parallel(prog, [k for k in step_kernels if k.section == "fwd"], notes)
    micro_s = fwd_s + bwd_s + comm_s
    step_s, scale, bubble_s = _pipeline(prog, micro_s, n_micro, notes, _stage_shares(prog, [fwd, bwd]))
    dp_s, dp_bytes = _data_parallel(prog, notes, n_micro)
    if prog.training and prog.parallel.sharded("optimizer") > 1:  # each replica updates its share of the weights
        opt_s /= prog.parallel.sharded("optimizer")
    comm_bytes += dp_bytes
    step_s += dp_s + opt_s
    # the host's share: each call's inputs in and outputs back over the host link, its round trip shared by the
    # steps the call runs; a stack that copies the next batch while this one computes shows only the excess
    traffic_io = host_io(prog)
    io_s = traffic_io.step_s
    io_model = model.host_io
    if io_model is not None and io_model.overlapped:
        io_s = max(0.0, io_s - step_s)
    step_s += io_s
    # the host's input pipeline loads the next batch while the device runs this one: a slower one bounds the step
    # (or, with input_overlap=False, loads it in the training process between steps: all of its time adds)
    input_s = 0.0
    if prog.input_rate and not prog.synthetic_data:
        load_s = prog.batch_size / prog.input_rate
        input_s = load_s if not prog.input_overlap else max(0.0, load_s - step_s)
        step_s += input_s
    all_kt = fwd.kernels + bwd.kernels + opt.kernels
    runs_on = {k.name: k.runs_on for k in kernels}

    def lane(k: KernelTime) -> str:  # timeline: one lane per unit group the family exposes, then the host's
        return _OFF_DEVICE_LANES.get(runs_on.get(k.name, "device")) or model.lane(k)

    host_s, transfer_s = (sum(k.time_s for k in fwd.kernels + bwd.kernels if runs_on.get(k.name) == on) * scale
                          for on in ("host", "link"))
    n_parts = max((k.partition for k in kernels), default=0)
    if n_parts:
        notes.append(_fallback_note(prog, kernels, n_parts, host_s, transfer_s, link_Bps))
    events = _timeline(passes, lane, comm_s + dp_s, io_s, input_s)
    traffic = _traffic(prog, kernels, n_micro)
    flops = sum(k.flops for k in kernels) / (par.tensor * par.pipeline) * n_micro
    sections = {"fwd": fwd_s * scale, "bckwd": bwd_s * scale, "opt": opt_s, "comm": comm_s * scale + dp_s,
                "bubble": bubble_s, "io": io_s, **({"input": input_s} if input_s else {})}
    bd = breakdown(sections, {"fwd": fwd.kernels, "bckwd": bwd.kernels, "opt": opt.kernels}, chips=prog.chips,
                   utilization=flops / (step_s * peak) if step_s else 0.0)
    step_s = bd.step_s  # the sum of the sections, which every reader adds up again
    throughput = prog.batch_size / step_s if step_s else 0.0
    energy = spec.power_w * step_s * prog.chips if spec.power_w else None
    generated = _generated_note(prog, kernels, all_kt)
    if generated:
        notes.append(generated)
    notes += _spent_notes({"fwd": fwd, "bckwd": bwd, "opt": opt}, scale, step_s)
    return PerfReport(
        target=spec.name, family=spec.family, mode=plan.mode, precision=prog.precision, batch_size=prog.batch_size,
        chips=prog.chips, parallel=par, training=prog.training, breakdown=bd, throughput=throughput,
        tokens_per_s=_tokens_per_s(prog, throughput), kernels=all_kt, utilization=_utilization(spec, bd, traffic), traffic_bytes=traffic, comm_bytes=comm_bytes,
        energy_j=energy, events=events,
        assumptions=assumptions_for(spec.family, chips=prog.chips, generated=generated is not None,
                                    fallback=bool(n_parts)), notes=notes,
        latency_s=latency, host_s=host_s, transfer_s=transfer_s, host_partitions=n_parts,
        stack=stack, stack_note=model.describe_stack(stack), io_in_bytes=traffic_io.in_bytes,
        io_out_bytes=traffic_io.out_bytes, round_trip_s=traffic_io.round_trip_s,
        stream_s=traffic_io.stream_s if not (io_model is not None and io_model.overlapped) else 0.0,
        stream_syncs=traffic_io.syncs, stream_grouped=prog.group_host_sync,
        device_iterations=max(1, prog.device_iterations),
        io_overlapped=bool(io_model is not None and io_model.overlapped),
        io_note=io_model.loop if io_model is not None else "",
        input_rate=prog.input_rate if not prog.synthetic_data else None, input_overlap=prog.input_overlap,
        output_mode=output_mode(prog) if model.host_io is not None else "",
        optimizer=prog.optimizer if prog.training else "",
        optimizer_state=getattr(prog, "optimizer_state", "") if prog.training else "",
    )
