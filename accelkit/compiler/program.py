"""``ak.compile``: a captured model, mapped onto one target — passes, memory plan, placement.

    graph = ak.capture(model, inputs)            # cached per model and input shapes
    prog  = ak.compile(model, inputs, target="wse2", precision="bf16")
    prog.passes        # what each pass changed
    prog.memory_plan   # where weights, activations, gradients, optimizer state live; prog.mode
    prog.placement     # kernels on the chip's units
    prog.save("out/model.akp")  ->  ak.load(...)

Compiling the same model again for another target, precision, chip count or batch size reuses the
captured graph: only the cheap steps after capture run again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from accelkit import hardware
from accelkit.boundary import nearby_divisors
from accelkit.cache import CACHE
from accelkit.compiler.compile_time import CompileTime
from accelkit.compiler.compile_time import compile_time as _compile_time
from accelkit.compiler.fallback import (
    device_kernels,
    host_fixable,
    host_nodes,
    partition,
    partitions,
    where,
    with_host,
)
from accelkit.compiler.manifest import save as save_artifact
from accelkit.compiler.memory import Footprint, MemoryPlan, footprint, plan_options
from accelkit.compiler.options import RECOMPUTE, CompileOptions  # noqa: F401 - RECOMPUTE re-exported
from accelkit.compiler.passes import Kernel, PassResult, run_pipeline
from accelkit.compiler.placement import Placement, check_placement, place
from accelkit.cost import Parallel
from accelkit.cost.host import HostMeasurements
from accelkit.cost.host import measure as host_measure
from accelkit.cost.rates import Rates
from accelkit.errors import CompileError
from accelkit.families import ExecutionModel, model_for
from accelkit.families.placement import within
from accelkit.graph.capture import _GRAPHS, captured, holds_values  # one graph cache, shared with ak.check
from accelkit.graph.cost import captured_element_bytes
from accelkit.graph.ir import DTYPE_BYTES, Graph
from accelkit.hardware.precision import ELEMENT_BYTES, element_bytes, tensor_bytes  # noqa: F401 - re-exported
from accelkit.hardware.spec import AcceleratorSpec

if TYPE_CHECKING:  # the performance model's report, and compile's old name (see __getattr__ below)
    from accelkit.cost.report import PerfReport
    from accelkit.workflow.compiling import compile

@dataclass(frozen=True)
class CompiledProgram:
    """The result of :func:`compile`: everything a performance estimate or a run needs.

    Plain values only (the spec, the graph, kernels, the memory plan, the placement), so it can be
    printed, plotted and saved as JSON + safetensors (:meth:`save`, ``ak.load``).
    """

    graph: Graph
    spec: AcceleratorSpec
    precision: str
    batch_size: int
    micro_batch: int
    example_batch: int
    chips: int
    parallel: Parallel
    training: bool
    recompute: str
    fusion_level: str
    passes: list[PassResult]
    kernels: list[Kernel]
    memory_plan: MemoryPlan
    placement: Placement
    weights: dict[str, torch.Tensor] | None = field(default=None, repr=False)
    model: nn.Module | None = field(default=None, repr=False)
    host: HostMeasurements | None = None  # measured on this host at compile time, for a measured target
    host_spec: AcceleratorSpec | None = None  # fallback="host": the host CPU that runs the host partitions
    fallback: str | None = None  # None (refuse what the target cannot run) or "host"
    stack: str = ""  # the software stack that runs it ("eager", "compiled", "engine" on a GPU); "": the family's default
    device_iterations: int = 1  # steps one call from the host runs on the device (it pays one round trip)
    synthetic_data: bool = False  # inputs made on the device: nothing crosses the host link
    input_rate: float | None = None  # samples/s the host's input pipeline delivers; a slower one bounds the step
    input_overlap: bool = True  # ... while the chip runs the step before (False: in the training process, between)
    output_mode: str | None = None  # "all", "final" (PopTorch's OutputMode); None: training "final", inference "all"
    group_host_sync: bool = False  # a step's stream copies grouped, one per direction (PopART's groupHostSync)
    optimizer: str = ""  # training: the update each step runs (accelkit.graph.capture.OPTIMIZERS); "": inference
    optimizer_state: str = ""  # training: where that update keeps its state (OPTIMIZER_STATES); "": inference
    chosen: str = ""  # what the compiler chose that the caller did not ask for (a micro-batch, recompute), and why
    # the checked options it was built from (None: loaded from an artifact): the family and rates, looked up once
    options: CompileOptions | None = field(default=None, repr=False, compare=False)

    __hash__ = None  # type: ignore[assignment]  # compared by value (as before it was frozen), never a dict key

    @property
    def mode(self) -> str:
        """The execution mode the memory plan chose (or the one forced with ``mode=``)."""
        return self.memory_plan.mode

    @cached_property
    def report(self) -> PerfReport:
        """The modelled performance of one step (a :class:`accelkit.sim.PerfReport`), computed once."""
        from accelkit.sim.estimate import estimate

        return estimate(self)

    @property
    def family(self) -> ExecutionModel:
        """The chip's family's execution model (the one the options looked up; a loaded program looks it up)."""
        return self.options.family if self.options is not None else model_for(self.spec.family)

    @property
    def rates(self) -> Rates:
        """What one chip delivers at the program's precision: the options' rates, or (a measured target) the
        rates measured on this host when it compiled."""
        if self.options is not None and self.host is None:
            return self.options.rates
        return self.family.rates(self.spec, self.precision, self.host)

    @property
    def target(self) -> str:
        return self.spec.name

    @property
    def total_flops(self) -> int:
        return sum(k.flops for k in self.kernels)

    @property
    def generated_kernels(self) -> list[Kernel]:
        """The kernels the toolchain's kernel library does not cover, which the compiler generates (modelled at
        the family's lower ``generated_efficiency``); ``k.generated.ops`` names the ops, ``k.source`` the
        line. Empty on a GPU or CPU, where every op has a library kernel."""
        return [k for k in self.kernels if k.generated is not None]

    @property
    def compile_time(self) -> CompileTime:
        """How long the REAL toolchain would take to build this program (MODELLED, illustrative constants per
        family; :mod:`accelkit.compiler.compile_time`), and the artifact it builds. Changing any of
        ``compile_time.RECOMPILE_TRIGGERS`` (batch size, input shapes, precision, chips, ...) means building it
        again; ``recompile_reasons(old, new)`` names the change."""
        return _compile_time(self)

    @property
    def host_partitions(self) -> int:
        """How many partitions of the program run on the host CPU (``fallback="host"``; 0 otherwise)."""
        return partitions(self.kernels)

    def summary(self) -> str:
        lines = [
            f"CompiledProgram: {self.graph.model_name} on {self.chips} x {self.spec.name} "
            f"({self.spec.family}), {self.precision}, batch {self.batch_size}"
            + (f" (micro-batch {self.micro_batch})" if self.micro_batch != self.batch_size else "")
            + (", training" if self.training else ", inference"),
            f"  parallel {self.parallel}; mode {self.mode!r}; {len(self.kernels)} kernels; "
            f"{self.total_flops / 1e9:,.2f} GFLOP per step (counted, not timed)",
            *([f"  fallback 'host': {sum(where(k) == 'host' for k in self.kernels)} kernel(s) in "
               f"{self.host_partitions} host partition(s) on {self.host_spec.full_name if self.host_spec else 'the host'}"
               f", {sum(where(k) == 'link' for k in self.kernels)} transfer(s) over the host link"]
              if self.host_partitions else []),
            f"  real toolchain: {self.compile_time}",
            "passes:",
            *(f"  {p}" for p in self.passes),
            *(["generated kernels (no library kernel for an op; modelled at a lower rate):"]
              + [f"  {k.name} [{k.module or '<root>'}] {', '.join(k.generated.ops if k.generated else ())}"
                 + (f" ({k.source})" if k.source else "") for k in self.generated_kernels[:5]]
              + ([f"  ... and {len(self.generated_kernels) - 5} more"] if len(self.generated_kernels) > 5 else [])
              if self.generated_kernels else []),
            "memory plan:",
            *(f"  {line}" for line in self.memory_plan.summary().splitlines()),
            "placement:",
            *(f"  {line}" for line in self.placement.summary(limit=5).splitlines()),
        ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def save(self, path: str) -> str:
        """Write the program as a PEF-like artifact: JSON manifest + safetensors weights. Returns the path."""
        return save_artifact(self, path)


# ---------------------------------------------------------------------------------------------
def _example_batch(graph: Graph) -> int:
    """Samples in the example: the first input's leading dimension. A 1-D input is one sample (a 10-element
    vector into ``nn.Linear(10, 5)`` is one sample of 10 features, never 10 samples)."""
    first = next(iter(graph.inputs.values()), None)
    return int(first.shape[0]) if first is not None and len(first.shape) > 1 else 1


_FINDINGS = CACHE.findings  # ak.cache's porting findings: model -> {(id(graph), spec): (graph, report)}


def _legality_findings(model: Any, example_inputs: Any, graph: Graph, spec: AcceleratorSpec,
                       fallback: str | None = None) -> list[Any]:
    """The check's findings the compiler carries on (warnings; with ``fallback="host"`` also the errors the
    host takes over); the first error it cannot get past is raised as a :class:`CompileError`."""
    try:
        from accelkit.porting import check
    except ImportError:  # pragma: no cover - the porting package ships with accelkit
        return []
    if not isinstance(model, nn.Module):
        return []
    # the check reads the graph, the chip and (for outputs that are not tensors) runs forward once on fake
    # tensors: once per captured graph and chip, so a sweep of compiles over one captured model stays fast
    cache = _FINDINGS.setdefault(model, {})
    key = (id(graph), spec)
    hit = cache.get(key)
    if hit is None or hit[0] is not graph:
        live = [id(g) for g in _GRAPHS.get(model, {}).values()]
        for stale in [k for k, (g, _r) in cache.items() if id(g) not in live]:  # graphs of an earlier model
            del cache[stale]
        hit = cache[key] = (graph, check(model, example_inputs, target=spec, graph=graph))
    report = hit[1]
    errors = [f for f in report.findings if f.severity == "error" and f.kind != "too-large"
              and not (fallback == "host" and host_fixable(f))]
    if errors:
        f = errors[0]
        port = f"ak.port(model, inputs, target={spec.name!r}) applies the rewrites"
        host = (f"; or compile with fallback='host' to run {'it' if len(errors) == 1 else 'them'} on the host CPU"
                if fallback is None and all(host_fixable(e) for e in errors) and "fallback" not in f.fix else
                f"; fallback='host' does not help: the host CPU takes over ops the chip lacks, not a {f.kind}"
                if fallback == "host" else "")
        raise CompileError(
            f"{len(errors)} op(s) of {graph.model_name} cannot run on {spec.name}; first: {f.kind} "
            f"{f.op} in {f.module or '<root>'} ({f.source or 'no source line'}): {f.reason}",
            where=f.source, fix=f"{f.fix} ({port}{host})")
    return [f for f in report.findings if f.kind != "too-large"]


def check_options(target: Any, *, precision: Any = "bf16", batch_size: Any = None, micro_batch: Any = None,
                  chips: Any = 1, mode: Any = "auto", training: Any = False, parallel: Any = None,
                  recompute: Any = "none", fusion: Any = "o1", fallback: Any = None,
                  stack: Any = None, device_iterations: Any = 1, synthetic_data: Any = False,
                  input_rate: Any = None, input_overlap: Any = True, output_mode: Any = None,
                  optimizer: Any = "adamw", group_host_sync: Any = False) -> AcceleratorSpec:
    """Check what :func:`compile` is asked for before any work starts; returns the target's spec. Every refusal
    names the argument. (:meth:`CompileOptions.check` checks the same and keeps the result.)"""
    return CompileOptions.check(target, precision=precision, batch_size=batch_size, micro_batch=micro_batch,
                                chips=chips, mode=mode, training=training, parallel=parallel, recompute=recompute,
                                fusion=fusion, fallback=fallback, stack=stack, device_iterations=device_iterations,
                                synthetic_data=synthetic_data, input_rate=input_rate, input_overlap=input_overlap,
                                output_mode=output_mode, optimizer=optimizer, group_host_sync=group_host_sync).spec


@dataclass(frozen=True)
class Lowered:
    """A captured graph after the passes, for one :class:`CompileOptions`: what every program built from it
    shares, whichever parallel split and memory plan it is built for (:func:`build`)."""

    graph: Graph
    passes: tuple[PassResult, ...]
    kernels: tuple[Kernel, ...]  # at the captured example's batch and bytes
    example_batch: int
    batch: int  # the step's batch
    micro: int  # the micro-batch
    byte_scale: float  # the program's element bytes over the captured ones
    weights_bytes: int  # on the device, at the program's precision
    host_spec: AcceleratorSpec | None  # fallback="host": the host CPU that runs the host partitions
    host: HostMeasurements | None  # measured on this host, for a measured target
    state: dict[str, torch.Tensor] | None = field(default=None, repr=False)
    model: nn.Module | None = field(default=None, repr=False, compare=False)


def _graph_of(model: nn.Module | Graph, example_inputs: Any, training: bool, optimizer: str = "adamw") -> Graph:
    if isinstance(model, Graph):
        if training and not model.training:
            raise CompileError("training=True needs a graph captured with training=True",
                               fix="ak.capture(model, inputs, training=True), or pass the model itself")
        return model
    if isinstance(model, nn.Module):
        if example_inputs is None:
            raise CompileError("compile needs example inputs to capture the model",
                               fix="ak.compile(model, (torch.randn(8, 16),), target=...)")
        return captured(model, example_inputs, training, optimizer)
    raise CompileError(f"compile needs an nn.Module or a captured Graph, not {type(model).__name__}",
                       fix="pass the model object (e.g. MyNet()) and its example inputs")


def _batches(graph: Graph, options: CompileOptions) -> tuple[int, int, int]:
    """(the example's batch, the step's batch, the micro-batch), each checked."""
    example_batch = _example_batch(graph)
    batch = example_batch if options.batch_size is None else options.batch_size
    if batch < 1:
        raise CompileError(f"the example inputs hold {batch} samples (their first dimension), so there is no batch "
                           "to compile", fix="pass example inputs with at least one sample, e.g. torch.randn(8, 16), "
                                             "or give batch_size=")
    micro = batch if options.micro_batch is None else options.micro_batch
    if batch % micro:
        raise CompileError(f"batch_size {batch} is not divisible by micro_batch {micro}",
                           fix=f"use a micro_batch that divides {batch}, e.g. "
                               f"{nearby_divisors(batch, micro)}")
    par = options.parallel
    if par is not None and par.data > batch:
        raise CompileError(f"parallel={par} gives each of {par.data} replicas a share of a batch of {batch}: "
                           f"{par.data - batch} replica(s) would have no sample at all",
                           fix=f"use a batch of at least {par.data} (batch_size={par.data}), or fewer data "
                               f"replicas (e.g. ak.Parallel(data={batch}, ...))")
    if par is not None and options.micro_batch is not None and micro % par.data:
        raise CompileError(f"micro_batch={micro} is the micro-batch of all {par.data} data-parallel replicas together "
                           f"(parallel={par}), so each replica would run {micro / par.data:g} samples at a time",
                           fix=f"use a multiple of {par.data}: micro_batch={par.data * micro} runs {micro} samples "
                               f"per replica at a time (PopTorch's batch_size is per replica, accelkit's micro_batch "
                               f"is not)")
    return example_batch, batch, micro


_PASSES = CACHE.passes  # ak.cache's pass pipelines: model -> {(id(graph), family, level, ...): (graph, out)}


def _pipeline(model: nn.Module | Graph, graph: Graph, options: CompileOptions, findings: list[Any],
              host: frozenset[str]) -> tuple[list[Kernel], list[PassResult]]:
    """The kernels and pass results of ``run_pipeline``: run once per captured graph, family, fusion level, the
    family's generated-code efficiency, findings and host nodes (everything the passes read), then read from
    ``ak.cache``. Each caller gets its own lists of the frozen kernels and results."""
    family = options.family
    eff = family.generated_efficiency.value if family.generated_efficiency is not None else None  # read by matching
    key: tuple[Any, ...] | None = (id(graph), family.family, options.fusion, eff, tuple(findings), host)
    try:
        hash(key)
    except TypeError:  # a finding that cannot be a key: run the passes as they are
        key = None
    if key is None or not isinstance(model, nn.Module):  # a captured Graph passed as it is: no model to keep them
        _nodes, kernels, passes = run_pipeline(graph, family=options.family, level=options.fusion,
                                               findings=findings, host=host)
        return kernels, passes
    cache = _PASSES.setdefault(model, {})
    hit = cache.get(key)
    if hit is None or hit[0] is not graph:
        live = [id(g) for g in _GRAPHS.get(model, {}).values()]
        for stale in [k for k, (g, _r) in cache.items() if id(g) not in live]:  # graphs of an earlier model
            del cache[stale]
        _nodes, kernels, passes = run_pipeline(graph, family=options.family, level=options.fusion,
                                               findings=findings, host=host)
        hit = cache[key] = (graph, (tuple(kernels), tuple(passes)))
    kept_kernels, kept_passes = hit[1]
    return list(kept_kernels), list(kept_passes)


def lower(model: nn.Module | Graph, example_inputs: Any, options: CompileOptions) -> Lowered:
    """Capture (or reuse) the graph, check it against the chip and run the passes: everything a compile does
    before it chooses a parallel split and a memory plan."""
    spec = options.spec
    graph = _graph_of(model, example_inputs, options.training, options.optimizer)
    example_batch, batch, micro = _batches(graph, options)
    findings = _legality_findings(model, example_inputs, graph, spec, options.fallback)
    host = host_nodes(graph, findings, spec.dtypes) if options.fallback == "host" else frozenset()
    kernels, passes = _pipeline(model, graph, options, findings, host)
    if options.fallback == "host":
        kernels, res = partition(kernels, graph, host)
        passes.append(res)
    # a float16 example scales once; an fp8 training step's tensors stay in bf16 (tensor_bytes)
    byte_scale = tensor_bytes(options.precision, options.training) / captured_element_bytes(graph)
    # the host holds the weights of the ops it runs; the chip holds the rest
    host_weights = sum(k.param_bytes for k in kernels if where(k) == "host" and k.section == "fwd")
    state = None
    if isinstance(model, nn.Module) and holds_values(model):
        state = {k: v for k, v in model.state_dict().items() if v.device.type != "meta"} or None
    return Lowered(
        graph=graph, passes=tuple(passes), kernels=tuple(kernels), example_batch=example_batch, batch=batch,
        micro=micro, byte_scale=byte_scale, weights_bytes=int(max(0, graph.param_bytes - host_weights) * byte_scale),
        host_spec=hardware.get("host") if host else None,
        host=host_measure(graph) if options.family.measured_rates else None,
        state=state, model=model if isinstance(model, nn.Module) else None)


def memory_plans(lowered: Lowered, options: CompileOptions, parallel: Parallel) -> list[MemoryPlan]:
    """The memory plans worth timing for ``parallel`` (each chip holds one micro-batch of its replica's share);
    raises :class:`ModeError` when none holds the model."""
    act_batch = (lowered.micro if options.training else lowered.batch) / parallel.data
    mem_kernels = [k.scaled(act_batch / lowered.example_batch, lowered.byte_scale)
                   for k in device_kernels(list(lowered.kernels))]
    fp: Footprint = footprint(mem_kernels, weights_bytes=lowered.weights_bytes, training=options.training,
                              recompute=options.recompute,
                              elem_bytes=tensor_bytes(options.precision, options.training),
                              optimizer=optimizer_of(lowered.graph, options),
                              optimizer_state=optimizer_state_of(lowered.graph, options))
    return plan_options(fp, options.spec, chips=options.chips, model_shards=parallel.model_shards, mode=options.mode,
                        family=options.family, parallel=parallel)


def check_stage_modules(stages: tuple[tuple[str, int], ...], kernels: list[Kernel]) -> None:
    """Every module ``stages`` names runs in the forward (or holds modules that do); else a CompileError naming the
    model's layers."""
    modules = [k.module for k in kernels if k.section == "fwd"]
    for module, _chip in stages:
        if not any(within(m, module) for m in modules):
            layer_names = list(dict.fromkeys(k.group for k in kernels if k.section == "fwd"))
            shown = ", ".join(layer_names[:8]) + (", ..." if len(layer_names) > 8 else "")
            raise CompileError(f"stages names {module!r}, which runs nothing in the model's forward",
                               fix=f"name a module as model.named_modules() does; its layers are {shown}")


def begin_where_computed(stages: tuple[tuple[str, int], ...], kernels: list[Kernel],
                         graph: Graph) -> tuple[tuple[str, int], ...]:
    """``stages`` with each block that begins at a module no kernel runs on its own moved to the first kernel that
    begins after that module's first op (in the graph's order). Such a module's ops were computed ahead of time (a
    position embedding looked up at fixed position ids: Graphcore's BERT inference begins its second IPU there) or
    fused into a kernel that begins before it, which stays on the block before. A module the forward never calls
    is left as named, for :func:`check_stage_modules` to refuse."""
    fwd = [k for k in kernels if k.section == "fwd"]
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    out = []
    for module, chip in stages:
        if any(within(k.module, module) for k in fwd):
            out.append((module, chip))
            continue
        firsts = [order[n.name] for n in graph.nodes if n.section == "fwd" and within(n.module, module)]
        after = next((k for k in fwd if firsts and k.nodes and order.get(k.nodes[0], -1) > min(firsts)), None)
        out.append((after.module if after is not None else module, chip))
    return tuple(out)


def build(lowered: Lowered, options: CompileOptions, parallel: Parallel, plan: MemoryPlan) -> CompiledProgram:
    """One program: ``lowered``'s kernels at the step's batch, split as ``parallel`` says and laid out as ``plan``
    says, then placed on the chips. No search: :func:`accelkit.workflow.compiling.compile` chooses the split and
    the plan."""
    spec, family = options.spec, options.family
    opt_scale = update_byte_scale(lowered, options)
    kernels = [k.scaled(lowered.batch / parallel.data / lowered.example_batch,
                        opt_scale if k.section == "opt" else lowered.byte_scale)
               for k in lowered.kernels]
    stages = options.stages
    prefix = lowered.graph.wrapper_prefix  # ak.port's wrappers: the user names the modules of their own model
    if stages and prefix:
        stages = tuple((m if m.startswith(prefix) else prefix + m, c) for m, c in stages)
    if stages:
        stages = begin_where_computed(stages, kernels, lowered.graph)
        check_stage_modules(stages, kernels)
    placement = place(device_kernels(kernels), spec, plan, chips=options.chips, pipeline=parallel.pipeline,
                      precision=options.precision, family=family, stages=stages)
    if lowered.host_spec is not None:
        placement = with_host(placement, kernels, lowered.host_spec.full_name)
    check_placement(placement, kernels, spec, plan, family=family)
    return CompiledProgram(
        graph=lowered.graph, spec=spec, precision=options.precision, batch_size=lowered.batch,
        micro_batch=lowered.micro, example_batch=lowered.example_batch, chips=options.chips, parallel=parallel,
        training=options.training, recompute=options.recompute, fusion_level=options.fusion,
        passes=list(lowered.passes), kernels=kernels, memory_plan=plan, placement=placement, weights=lowered.state,
        model=lowered.model, host=lowered.host, host_spec=lowered.host_spec, fallback=options.fallback,
        stack=options.stack, device_iterations=options.device_iterations, synthetic_data=options.synthetic_data,
        input_rate=options.input_rate, input_overlap=options.input_overlap, output_mode=options.output_mode,
        group_host_sync=options.group_host_sync, optimizer=optimizer_of(lowered.graph, options), optimizer_state=optimizer_state_of(lowered.graph, options),
        options=options)


def optimizer_of(graph: Graph, options: CompileOptions) -> str:
    """The update a training program's steps run: the one its graph recorded (a graph captured by the caller
    keeps its own), else the options'; "" for inference."""
    if not options.training:
        return ""
    return graph.optimizer or options.optimizer


def update_byte_scale(lowered: Lowered, options: CompileOptions) -> float:
    """The byte scale of the optimizer's update kernels: they read and write the weights, gradients and state the
    update keeps, which are fp32 where the state is ``"mixed"`` or ``"fp32"`` (the fp32 master copy and fp32
    gradients of autocast; a fused AdamW moves 28 bytes a weight, measured on an H100: benchmarks/gpu/results/
    h100_profile_compiled_top40.json), else at the program's precision."""
    if optimizer_state_of(lowered.graph, options) in ("mixed", "fp32"):
        return 4.0 / captured_element_bytes(lowered.graph)
    return lowered.byte_scale


def optimizer_state_of(graph: Graph, options: CompileOptions) -> str:
    """Where a training program's optimizer keeps its state (:data:`~accelkit.graph.capture.OPTIMIZER_STATES`): the
    options' choice, else ``"16-bit"`` when the model's own weights are 16-bit (PyTorch's optimizers keep their
    state in the weights' dtype), else ``"mixed"``; "" for inference."""
    if not options.training:
        return ""
    if options.optimizer_state is not None:
        return options.optimizer_state
    widths = {DTYPE_BYTES.get(m.dtype, 4) for m in graph.params.values() if m.dtype.startswith(("float", "bfloat"))}
    return "16-bit" if widths and max(widths) < 4 else "mixed"


def __getattr__(name: str) -> Any:
    """``compile`` lives in the workflow layer (it searches over splits and plans); the old name keeps working."""
    if name == "compile":
        from accelkit.workflow.compiling import compile

        return compile
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CompileError", "CompileOptions", "CompiledProgram", "Lowered", "Parallel", "build", "captured",  # noqa: F822
           "check_options", "compile", "lower", "memory_plans"]
