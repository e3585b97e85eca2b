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

import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from accelkit import hardware
from accelkit.boundary import flag, got, instance, maybe_whole, nearby_divisors, one_of, whole
from accelkit.compiler.compile_time import CompileTime
from accelkit.compiler.compile_time import compile_time as _compile_time
from accelkit.compiler.fallback import (
    FALLBACKS,
    device_kernels,
    host_fixable,
    host_nodes,
    partition,
    partitions,
    where,
    with_host,
)
from accelkit.compiler.manifest import save as save_artifact
from accelkit.compiler.memory import Footprint, MemoryPlan, ModeError, check_mode, footprint, plan_options
from accelkit.compiler.passes import Kernel, PassResult, run_pipeline
from accelkit.compiler.placement import Placement, check_placement, place
from accelkit.cost import Parallel
from accelkit.cost.host import HostMeasurements
from accelkit.cost.host import measure as host_measure
from accelkit.errors import CompileError, PrecisionError
from accelkit.families import model_for
from accelkit.graph.capture import capture
from accelkit.graph.cost import captured_element_bytes
from accelkit.graph.ir import Graph
from accelkit.hardware.precision import ELEMENT_BYTES, element_bytes  # noqa: F401 - re-exported
from accelkit.hardware.spec import AcceleratorSpec

RECOMPUTE = ("none", "selective", "full")


@dataclass
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
    _report: Any = field(default=None, repr=False, compare=False)

    @property
    def mode(self) -> str:
        """The execution mode the memory plan chose (or the one forced with ``mode=``)."""
        return self.memory_plan.mode

    @property
    def report(self) -> Any:
        """The modelled performance of one step (a :class:`accelkit.sim.PerfReport`), computed once."""
        if self._report is None:
            from accelkit.sim.estimate import estimate

            self._report = estimate(self)
        return self._report

    @property
    def target(self) -> str:
        return self.spec.name

    @property
    def total_flops(self) -> int:
        return sum(k.flops for k in self.kernels)

    @property
    def generated_kernels(self) -> list[Kernel]:
        """The kernels the toolchain's kernel library does not cover, which the compiler generates (modelled at
        the family's lower ``generated_efficiency``); ``k.extra["generated"]`` names the ops, ``k.source`` the
        line. Empty on a GPU or CPU, where every op has a library kernel."""
        return [k for k in self.kernels if "generated" in k.extra]

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
              + [f"  {k.name} [{k.module or '<root>'}] {', '.join(k.extra['generated'])}"
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
_GRAPHS: weakref.WeakKeyDictionary[nn.Module, dict[Any, Graph]] = weakref.WeakKeyDictionary()


def _input_key(example_inputs: Any) -> Any:
    leaves = torch.utils._pytree.tree_flatten(example_inputs)[0]
    return tuple((tuple(t.shape), t.dtype, str(t.device)) if isinstance(t, torch.Tensor) else repr(t)
                 for t in leaves)


def _structure_key(model: nn.Module) -> tuple[Any, ...]:
    """What a captured graph depends on besides the inputs: every submodule (its object, class, forward and
    train/eval flag) and every parameter and buffer (object, shape, dtype). Replacing a layer, swapping its
    forward, or re-creating or resizing a weight changes the key, so the workshop's "modify, then compile
    again" never reuses a stale graph. Weight values are not in it: a graph holds shapes, not values, so a
    training step (which updates weights in place) keeps the capture."""
    modules = tuple((name, id(m), type(m), getattr(m.forward, "__func__", m.forward), m.training)
                    for name, m in model.named_modules())
    tensors = tuple((name, id(t), tuple(t.shape), t.dtype)
                    for name, t in (*model.named_parameters(), *model.named_buffers()))
    return modules, tensors


def captured(model: nn.Module, example_inputs: Any, training: bool) -> Graph:
    """The model's graph for these input shapes, captured once and reused by later compiles of the same,
    unchanged model (see :func:`_structure_key`)."""
    structure = _structure_key(model)
    key = (_input_key(example_inputs), training, structure)
    cache = _GRAPHS.setdefault(model, {})
    if key not in cache:
        for stale in [k for k in cache if k[2] != structure]:  # graphs of the model before it changed
            del cache[stale]
        cache[key] = capture(model, example_inputs, training=training)
    return cache[key]


def _example_batch(graph: Graph) -> int:
    """Samples in the example: the first input's leading dimension. A 1-D input is one sample (a 10-element
    vector into ``nn.Linear(10, 5)`` is one sample of 10 features, never 10 samples)."""
    first = next(iter(graph.inputs.values()), None)
    return int(first.shape[0]) if first is not None and len(first.shape) > 1 else 1


_FINDINGS: weakref.WeakKeyDictionary[nn.Module, dict[Any, tuple[Graph, Any]]] = weakref.WeakKeyDictionary()


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
                  stack: Any = None, device_iterations: Any = 1, synthetic_data: Any = False) -> AcceleratorSpec:
    """Check what :func:`compile` is asked for before any work starts (``ak.Session`` checks the same at
    construction, not at its first step); returns the target's spec. Every refusal names the argument."""
    spec = target if isinstance(target, AcceleratorSpec) else hardware.get(target)
    if not isinstance(precision, str):
        raise CompileError(f"precision must be a precision's name, not {got(precision)}",
                           fix=f"use one of {list(spec.peak_flops)}, e.g. precision='fp32'")
    try:
        spec.peak(precision)
    except PrecisionError as exc:  # the fix in this function's words, not spec.peak's
        raise PrecisionError(exc.message, fix=f"pass precision={next(iter(spec.peak_flops))!r} (or another of "
                                              f"{list(spec.peak_flops)})") from None
    one_of("recompute", recompute, RECOMPUTE, error=CompileError)
    one_of("fusion", fusion, ("o0", "o1"), error=CompileError)
    if fallback not in FALLBACKS:
        raise CompileError(f"fallback={fallback!r} is not a fallback",
                           fix="use fallback=None (refuse what the target cannot run) or fallback='host'")
    flag("training", training)
    flag("synthetic_data", synthetic_data)
    whole("device_iterations", device_iterations, example="device_iterations=50", error=CompileError)
    check_mode(spec, mode)
    model_for(spec.family).stack(stack)
    whole("chips", chips, example="chips=4", error=CompileError)
    maybe_whole("batch_size", batch_size, example="batch_size=32", error=CompileError)
    maybe_whole("micro_batch", micro_batch, example="micro_batch=8", error=CompileError)
    if batch_size is not None and micro_batch is not None and batch_size % micro_batch:
        raise CompileError(f"batch_size {batch_size} is not divisible by micro_batch {micro_batch}",
                           fix=f"use a micro_batch that divides {batch_size}, e.g. "
                               f"{nearby_divisors(batch_size, micro_batch)}")
    if parallel is not None:
        instance("parallel", parallel, Parallel, takes="an ak.Parallel (or None: accelkit picks the split)",
                 example="parallel=ak.Parallel(data=2, pipeline=2)", error=CompileError)
        if parallel.chips != chips:
            raise CompileError(f"parallel={parallel} uses {parallel.chips} chips but chips={chips}",
                               fix=f"pass chips={parallel.chips}, or change the Parallel factors so their "
                                   f"product is {chips}")
    if spec.max_chips is not None and chips > spec.max_chips:
        raise CompileError(f"{chips} chips is more than the largest {spec.name} system ({spec.max_chips})",
                           fix=f"use at most {spec.max_chips} chips")
    return spec


def compile(  # noqa: A001 - the workflow's verb, as in the vendors' SDKs
    model: nn.Module | Graph,
    example_inputs: Any = None,
    *,
    target: str | AcceleratorSpec,
    batch_size: int | None = None,
    micro_batch: int | None = None,
    precision: str = "bf16",
    chips: int = 1,
    mode: str = "auto",
    training: bool = False,
    parallel: Parallel | None = None,
    recompute: str = "none",
    fusion: str = "o1",
    fallback: str | None = None,
    stack: str | None = None,
    device_iterations: int = 1,
    synthetic_data: bool = False,
) -> CompiledProgram:
    """Compile ``model`` for ``target``: passes, memory plan (execution mode) and placement.

    ``batch_size`` defaults to the example inputs' batch; FLOPs and activation bytes scale with it,
    weights don't. ``micro_batch`` (training) must divide it: gradients accumulate over
    ``batch_size / micro_batch`` micro-batches. ``parallel`` splits ``chips`` into data, tensor and
    pipeline parallelism (their product must equal ``chips``); without it, ``chips`` replicate the
    model (data parallel) when one chip holds it, else split it into pipeline stages.
    ``mode="auto"`` picks the fastest execution mode that holds; naming one forces it.
    ``fusion`` is the RDU's level: ``"o0"`` one op per section, ``"o1"`` one layer per section.
    ``fallback="host"`` runs the ops the target refuses on the host CPU instead of refusing them: the graph is
    split into device and host partitions, the host's are timed on the host (the measured ``"host"`` spec) and
    every tensor that crosses goes over the host link, both ways (see :mod:`accelkit.compiler.fallback`).
    ``stack`` is the software stack that runs the program: on a GPU ``"compiled"`` (torch.compile, the default
    here), ``"eager"`` (PyTorch eager, op by op, what ``ak.Session`` runs by default) or ``"engine"`` (a serving
    engine, ``ak.serve``'s default); every family names its own (``accelkit.families.model_for(family).stacks``).
    The report says which.
    ``device_iterations`` is how many steps one call from the host runs on the device (PopTorch's
    ``deviceIterations``, an on-device loop): every step's inputs and outputs cross the host link, but the call's
    round trip is paid once. ``synthetic_data=True`` makes the inputs on the device (Graphcore's
    ``enableSyntheticData``): nothing crosses the link, which shows the chip's own speed.
    """
    spec = check_options(target, precision=precision, batch_size=batch_size, micro_batch=micro_batch, chips=chips,
                         mode=mode, training=training, parallel=parallel, recompute=recompute, fusion=fusion,
                         fallback=fallback, stack=stack, device_iterations=device_iterations,
                         synthetic_data=synthetic_data)
    stack = model_for(spec.family).stack(stack)
    if isinstance(model, Graph):
        graph = model
        if training and not graph.training:
            raise CompileError("training=True needs a graph captured with training=True",
                               fix="ak.capture(model, inputs, training=True), or pass the model itself")
    elif isinstance(model, nn.Module):
        if example_inputs is None:
            raise CompileError("compile needs example inputs to capture the model",
                               fix="ak.compile(model, (torch.randn(8, 16),), target=...)")
        graph = captured(model, example_inputs, training)
    else:
        raise CompileError(f"compile needs an nn.Module or a captured Graph, not {type(model).__name__}",
                           fix="pass the model object (e.g. MyNet()) and its example inputs")
    example_batch = _example_batch(graph)
    batch = example_batch if batch_size is None else batch_size
    if batch < 1:
        raise CompileError(f"the example inputs hold {batch} samples (their first dimension), so there is no batch "
                           "to compile", fix="pass example inputs with at least one sample, e.g. torch.randn(8, 16), "
                                             "or give batch_size=")
    micro = batch if micro_batch is None else micro_batch
    if batch % micro:
        raise CompileError(f"batch_size {batch} is not divisible by micro_batch {micro}",
                           fix=f"use a micro_batch that divides {batch}, e.g. "
                               f"{nearby_divisors(batch, micro)}")
    if parallel is not None and parallel.data > batch:
        raise CompileError(f"parallel={parallel} gives each of {parallel.data} replicas a share of a batch of {batch}: "
                           f"{parallel.data - batch} replica(s) would have no sample at all",
                           fix=f"use a batch of at least {parallel.data} (batch_size={parallel.data}), or fewer data "
                               f"replicas (e.g. ak.Parallel(data={batch}, ...))")
    findings = _legality_findings(model, example_inputs, graph, spec, fallback)
    host = host_nodes(graph, findings, spec.dtypes) if fallback == "host" else frozenset()
    _nodes, kernels, passes = run_pipeline(graph, family=spec.family, level=fusion, findings=findings, host=host)
    if fallback == "host":
        kernels, res = partition(kernels, graph, host)
        passes.append(res)
    host_spec = hardware.get("host") if host else None
    captured_bytes = captured_element_bytes(graph)  # a float16 example is scaled once, not twice
    elem = element_bytes(precision)
    byte_scale = elem / captured_bytes
    # the host holds the weights of the ops it runs; the chip holds the rest
    host_weights = sum(k.param_bytes for k in kernels if where(k) == "host" and k.section == "fwd")
    weights = int(max(0, graph.param_bytes - host_weights) * byte_scale)
    on_device = device_kernels(kernels)
    # per chip: data parallel replicas each see batch / data; memory holds one micro-batch
    plan_for: dict[Parallel, list[MemoryPlan]] = {}  # each split that holds, with its memory plans worth timing
    options: list[Parallel] = [parallel] if parallel is not None else [Parallel(data=chips)] + (
        [model_for(spec.family).split(chips)] if chips > 1 else [])
    error: ModeError | None = None
    for par in options:
        act_batch = (micro if training else batch) / par.data
        mem_kernels = [k.scaled(act_batch / example_batch, byte_scale) for k in on_device]
        fp: Footprint = footprint(mem_kernels, weights_bytes=weights, training=training, recompute=recompute,
                                  elem_bytes=elem)
        try:
            plan_for[par] = plan_options(fp, spec, chips=chips, model_shards=par.model_shards, mode=mode)
        except ModeError as exc:
            error = error or exc
    if not plan_for:
        assert error is not None
        raise error
    state = None
    if isinstance(model, nn.Module):
        state = {k: v for k, v in model.state_dict().items() if v.device.type != "meta"} or None

    def build(par: Parallel, plan: MemoryPlan) -> CompiledProgram:
        step_kernels = [k.scaled(batch / par.data / example_batch, byte_scale) for k in kernels]
        placement = place(device_kernels(step_kernels), spec, plan, chips=chips, pipeline=par.pipeline,
                          precision=precision)
        if host_spec is not None:
            placement = with_host(placement, step_kernels, host_spec.full_name)
        check_placement(placement, step_kernels, spec, plan)
        return CompiledProgram(
            graph=graph, spec=spec, precision=precision, batch_size=batch, micro_batch=micro,
            example_batch=example_batch, chips=chips, parallel=par, training=training, recompute=recompute,
            fusion_level=fusion, passes=passes, kernels=step_kernels, memory_plan=plan, placement=placement,
            weights=state, model=model if isinstance(model, nn.Module) else None,
            host=host_measure(graph) if model_for(spec.family).measured_rates else None,
            host_spec=host_spec, fallback=fallback, stack=stack, device_iterations=device_iterations,
            synthetic_data=synthetic_data,
        )

    # Without an explicit split, every split that holds is a candidate: replicating the model (data
    # parallel) needs at least one sample per replica; with each, every memory plan worth timing (a faster
    # mode holding the model in part, the first that holds it all). The cost model picks the fastest step,
    # as a real compiler's auto-parallel search does.
    usable = [p for p in plan_for if p.data <= batch] or list(plan_for)
    pairs = [(p, plan) for p in usable for plan in plan_for[p]]
    if len(pairs) == 1:
        return build(*pairs[0])
    candidates = [build(*pair) for pair in pairs]
    return min(candidates, key=lambda prog: (prog.report.step_time_s, prog.parallel.model_shards))

__all__ = ["CompileError", "CompiledProgram", "Parallel", "captured", "check_options", "compile"]
