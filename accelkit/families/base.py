"""``ExecutionModel``: what makes an architecture family a family, in one object per family.

Each family module (``gpu``, ``cpu``, ``rdu``, ``wafer``, ``ipu``, ``tsp``) defines one and the registry
(``accelkit.families``) maps the family's name to it. Code elsewhere asks the model; it never compares a
family's name as a string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from accelkit.constants import HOST_TRANSFER, Constant, value
from accelkit.cost.host import HostMeasurements
from accelkit.cost.kernel import Kernel
from accelkit.cost.parallel import Parallel
from accelkit.cost.rates import Rates, Spill, allreduce_s, tile_fill
from accelkit.cost.report import KernelTime
from accelkit.errors import CompileError
from accelkit.families.placement import Placement, Region
from accelkit.graph.ir import Graph
from accelkit.hardware.spec import AcceleratorSpec


class PlanView(Protocol):
    """What a family's timing and placement read of a memory plan (``accelkit.compiler.memory.MemoryPlan``, a
    layer above: the families read it through this view, never import it)."""

    @property
    def mode(self) -> str: ...
    @property
    def placement(self) -> dict[str, str]: ...  # kind -> tier
    @property
    def replicas(self) -> int: ...
    @property
    def weights_bytes(self) -> int: ...
    @property
    def activation_bytes(self) -> int: ...
    @property
    def chips_needed(self) -> int: ...
    @property
    def resident(self) -> float: ...
    @property
    def resident_tier(self) -> str | None: ...
    @property
    def spill_tier(self) -> str | None: ...
    @property
    def partial(self) -> bool: ...


class ProgramView(Protocol):
    """What a family's timing reads of the compiled program (``accelkit.compiler.program.CompiledProgram``):
    its graph, its precision and what was measured on this host when it compiled."""

    @property
    def graph(self) -> Graph: ...
    @property
    def precision(self) -> str: ...
    @property
    def host(self) -> HostMeasurements | None: ...


@dataclass(frozen=True)
class TimingContext:
    """What timing a family's kernels needs besides the kernels: the chip, its rates, the compiled program's
    memory plan and placement, the tensor-parallel degree, the samples in flight, the program itself."""

    spec: AcceleratorSpec
    rates: Rates
    plan: PlanView
    placement: Placement
    tensor: int
    peak: float
    samples: int
    program: ProgramView  # the CPU model reads its graph and what was measured on this host
    scale: float  # micro-batch over the captured example batch

    @property
    def act_tensor(self) -> int:
        """Over how many chips tensor parallelism splits each activation a kernel moves: all ``tensor`` of them in
        training (Megatron-LM's sequence parallelism shards the layer norms' and residuals' tokens as well as the
        MLP's and heads' columns: Korthikanti et al. 2022, section 4.2.2), none in inference, where serving engines
        run tensor parallelism without it and each chip holds the whole hidden-sized tensors."""
        return self.tensor if getattr(self.program, "training", False) else 1

    @property
    def spill(self) -> Spill | None:
        """The memory plan's partial residency, for :func:`~accelkit.cost.rates.roofline` (None: all resident)."""
        plan = self.plan
        if not plan.partial or plan.resident_tier is None or plan.spill_tier is None:
            return None
        return Spill(plan.resident_tier, plan.spill_tier, plan.resident)


@dataclass(frozen=True)
class Timed:
    """One pass's kernels timed: their times, the pass's time, and (a spatial pipeline) one sample's latency."""

    kernels: list[KernelTime]
    step_s: float
    latency_s: float | None = None
    # (what, start, seconds) of the host's own work alongside the chip's (eager PyTorch issuing each layer's ops)
    host_events: tuple[tuple[str, float, float], ...] = ()
    # (what, seconds) of the pass's time the family names because the user can change it (a layout, a stack):
    # added up over the step and reported as a note where it is a real share of it
    spent: tuple[tuple[str, float], ...] = ()


KINDS = ("weights", "activation", "gradient", "optimizer")
"""The kinds of bytes a memory plan places: weights, activations, gradients, optimizer state."""


@dataclass(frozen=True)
class MemoryContext:
    """What choosing where bytes live needs: the chip's tiers (fastest first) with the capacity the compiler
    may use in each, the bytes of each kind per chip, one layer's weights per shard, training or not."""

    tiers: tuple[str, ...]
    caps: dict[str, int]
    per_chip: dict[str, int]  # kind -> bytes
    largest_layer_bytes: int
    training: bool

    def tier(self, i: int) -> str:
        """The i-th tier, or the last one the chip has (a chip with fewer tiers keeps everything lower)."""
        return self.tiers[min(i, len(self.tiers) - 1)]


@dataclass(frozen=True)
class Layout:
    """One execution mode's memory layout: the tier each kind of bytes lives in, which kinds decide how many
    chips the model needs (and in which tier), copies of the model per chip, and bytes a mode adds to a tier."""

    mode: str
    placement: dict[str, str]  # kind -> tier
    needed_kinds: tuple[str, ...]
    needed_tier: str
    replicas: int = 1
    extra: dict[str, int] = field(default_factory=dict)  # tier -> bytes (a streamed layer's buffers)


def everything_in(mode: str, tier: str) -> Layout:
    """A mode that keeps every kind of bytes in one tier."""
    return Layout(mode, dict.fromkeys(KINDS, tier), KINDS, tier)


@dataclass(frozen=True)
class HostIO:
    """How a family's runtime moves each call's inputs and outputs between the host and the chip.

    A call (one ``model(x)``, or PopTorch's one call of ``deviceIterations`` steps) pays ``latency`` each way
    (a DMA set-up and a synchronisation), once per call; its bytes cross the host link at ``link_Bps`` one way
    (a constant where the vendor's own runtime states the figure, else the system's ``host_link_Bps``).
    ``overlapped``: the stack copies the next step's inputs while this step computes (CUDA streams and pinned
    memory, TPU infeed, Cerebras' input workers), so only what exceeds the step shows; otherwise the chip waits
    for its inputs and its host. ``loop`` names what runs several steps per call (``device_iterations``).
    ``stream_sync`` and ``shared``: see the fields."""

    latency: Constant
    link_Bps: Constant | None = None
    overlapped: bool = False
    loop: str = "device_iterations: steps the device runs per host call"
    # a runtime that copies each micro-batch's data in stream copies of their own, synchronised with the host
    # (Poplar's StreamCopy), pays ``stream_sync`` seconds per copy on top of the bytes: one for each input tensor of
    # each micro-batch, one for each output tensor that comes back (accelkit.sim.estimate.stream_copies);
    # device_iterations do not amortise it (None: no such cost)
    stream_sync: Constant | None = None
    # True: the host prepares every data-parallel replica's stream at ``link_Bps`` in all (one host process feeds
    # the replicas); False: each chip has its own link at that rate
    shared: bool = False

    def latency_s(self) -> float:
        return float(self.latency.value)

    def stream_sync_s(self) -> float:
        return float(self.stream_sync.value) if self.stream_sync is not None else 0.0


@dataclass(frozen=True)
class CompileCost:
    """What the real toolchain's ahead-of-time compile costs (modelled, illustrative: no vendor publishes a
    compile-time model): fixed seconds, seconds per fused kernel, and what the toolchain calls its output."""

    fixed_s: float
    per_kernel_s: float
    artifact: str


class ExecutionModel:
    """A family's execution model. Subclasses set the attributes and implement :meth:`time`.

    Besides timing, placement and the memory plan, a model carries what the rest of accelkit shows of its
    family: its chips' colours, the kind of diagram and placement map that draws it, what fusion calls a
    fused group, what compiling costs. The family's name, rank and execution-model sentence are data, in
    ``accelkit/hardware/families/<family>.toml``.
    """

    family: str = ""
    modes: tuple[str, ...] = ()  # execution modes, fastest first (the memory plan tries them in order)
    # how the vendor's compiler places a model a little too big for a mode's fast tier: "" where it keeps the tensors
    # it can in that tier and the rest in the next (SambaNova's and Graphcore's compilers place tensor by tensor),
    # else the sentence that says what the vendor does instead (Cerebras switches to weight streaming); then the
    # memory plan does not offer a partial plan of its own invention
    no_partial_residency: str = ""
    launch: Constant | None = None  # the fixed start-up cost of one unit of work (kernel launch, superstep sync)
    hop: Constant | None = None  # a chip-to-chip hop's latency when the family's links differ from the default
    collective: Constant | None = None  # the fixed start-up of one collective (all-reduce), on top of its hops
    shades: tuple[str, ...] = ("#8c564b", "#c49c94", "#5a3630")  # the chips' colours; the first is the family's
    diagram: str = "processor"  # how viz.family_diagram draws a chip: processor, mesh, sections, tiles, slices
    placement_map: str = "stream"  # how viz.placement_map draws a program: stream, regions, sections, supersteps,
    #                                schedule
    fusion_unit: str = "layers"  # what fusion calls one group of fused kernels ("sections" on an RDU)
    fusion_levels: tuple[str, ...] = ()  # levels a user may pick (SambaFlow o0/o1); the first fuses nothing
    compile_cost: CompileCost | None = None  # None: no ahead-of-time compile (eager kernels are precompiled)
    vector_at_fp32_peak: bool = False  # vector work runs at the published fp32 peak (GPU CUDA cores, CPU)
    measured_rates: bool = False  # the spec's figures are measured here, not datasheet peaks (the host)
    schedule_charges_hops: bool = False  # the compiled schedule already counts every chip boundary (TSP)
    lane_label: str = "{section}"  # a timeline lane per unit group: "section {group}", "region {group}", ...
    model_split: str = "pipeline"  # how more chips split a model too big for one: "tensor" or "pipeline"
    # the constant naming the width of the square matrix unit a matmul is padded to (cost.rates.tile_fill); None:
    # the family's matmul rate does not depend on the layer's shape
    matrix_unit: str | None = None
    # the ops the toolchain's hand-written kernels cover: the compiler's kernel matching gives a fused kernel with
    # any other op a generated kernel, timed at ``generated_efficiency`` of the library's rate. None: every op has
    # a library kernel (cuBLAS / cuDNN / ATen's own kernels on a GPU or CPU)
    # training with no micro_batch given: the compiler splits a batch whose activations do not fit into the largest
    # micro-batches that do (gradients accumulated over them) and, where one sample's do not, recomputes activations
    # in backward; the text says whose compiler does so, with its source ("": the compile is refused instead)
    auto_micro_batch: str = ""
    kernel_library: frozenset[str] | None = None
    kernel_library_source: str = ""
    generated_efficiency: Constant | None = None
    # the software stacks that run a model on this family, each with what it is. Defaults: ``ak.compile`` runs
    # ``compile_stack`` (None: the first), ``ak.Session`` ``session_stack`` (what a learner's own training loop
    # runs), ``ak.serve`` ``serve_stack``
    stacks: tuple[tuple[str, str], ...] = (("vendor", "the vendor's graph compiler and runtime"),)
    # a pipeline's blocks can be placed by the model's own split (``ak.compile(stages=...)``, PopTorch's BeginBlock):
    # the family's ``place`` takes ``stages``
    pipeline_blocks = False
    compile_stack: str | None = None
    session_stack: str | None = None
    serve_stack: str | None = None
    # how each call's inputs and outputs reach the chip (None: the chip is the host itself, nothing crosses a link)
    host_io: HostIO | None = HostIO(HOST_TRANSFER)

    @property
    def stack_names(self) -> tuple[str, ...]:
        return tuple(name for name, _what in self.stacks)

    def stack(self, name: str | None = None, *, serving: bool = False, session: bool = False) -> str:
        """The stack called ``name``, or the family's default for ``ak.compile`` (for a Session: what a training
        loop runs; for serving: the serving stack). Raises :class:`~accelkit.errors.CompileError` naming the
        stacks the family has."""
        if name is None:
            pick = self.serve_stack if serving else self.session_stack if session else self.compile_stack
            return pick or self.stacks[0][0]
        if not isinstance(name, str) or name not in self.stack_names:
            have = ", ".join(f"{n!r} ({what})" for n, what in self.stacks)
            raise CompileError(f"stack={name!r} is not a software stack of the {self.family} family",
                               fix=f"use one of: {have}; or leave stack out for the default ({self.stack()!r})")
        return name

    def describe_stack(self, name: str) -> str:
        """What the stack ``name`` is, in a sentence."""
        return dict(self.stacks).get(name, name)

    def tile_fill(self, k: Kernel) -> float:
        """The share of the family's matrix unit kernel ``k`` keeps busy (1 without a matrix unit)."""
        return tile_fill(k, int(value(self.matrix_unit))) if self.matrix_unit else 1.0

    def split(self, chips: int) -> Parallel:
        """The model-parallel split this family uses over ``chips`` (tensor on GPUs and RDUs, whose vendors
        shard each layer; pipeline stages elsewhere)."""
        return Parallel(tensor=chips) if self.model_split == "tensor" else Parallel(pipeline=chips)

    def peak(self, spec: AcceleratorSpec, precision: str) -> float:
        """The peak FLOP/s a program at ``precision`` is measured against (its matmuls' rate, e.g. a Neuron
        fp32 program's matmuls run at bf16)."""
        return spec.peak(precision)

    def allreduce_s(self, nbytes: float, n: int, r: Rates, spec: AcceleratorSpec) -> float:
        """One all-reduce of ``nbytes`` over ``n`` chips on this family's network: a ring over each chip's
        links by default (a torus family runs rings along its axes)."""
        return allreduce_s(nbytes, n, r)

    def kv_read_s(self, kv_bytes: float, tier: str, r: Rates, *, group: int, stack: str) -> float:
        """Seconds one decode step takes to read ``kv_bytes`` of KV cache from ``tier`` (each of the cache's
        key/value heads serving ``group`` query heads), under the serving ``stack``: once, at the tier's rate."""
        return kv_bytes / r.tier_bw[tier]

    def launch_s(self) -> float:  # pragma: no cover - only a measured family overrides it
        raise NotImplementedError

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        raise NotImplementedError

    def rates(self, spec: AcceleratorSpec, precision: str, measured: Any = None) -> Rates:
        """What one chip of this family delivers at ``precision``: peak x the efficiency constants (a
        measured family takes its rates as they are, and its launch cost from ``measured``, the program's
        :class:`~accelkit.cost.host.HostMeasurements`, when there is one)."""
        peak = spec.peak(precision)
        _, p16 = spec.peak_16bit()
        vec = spec.peak_flops.get("fp32") if self.vector_at_fp32_peak else None
        vec = min(peak, vec or p16 * value("VECTOR_FRACTION_OF_16BIT_PEAK"))
        ce = 1.0 if self.measured_rates else value("COMPUTE_EFFICIENCY")  # read when used: the registry's value
        be = 1.0 if self.measured_rates else value("BANDWIDTH_EFFICIENCY")
        if self.measured_rates:
            launch = measured.dispatch_s if measured is not None else self.launch_s()
        else:
            launch = self.launch.value if self.launch else 0.0
        return Rates(
            matmul_flops=peak * ce,
            vector_flops=vec * ce,
            tier_bw={t.name: t.bandwidth_Bps * be for t in spec.memory_tiers},
            link_Bps=(spec.chip_to_chip_Bps or value("DEFAULT_LINK_BPS")) / 2,  # vendors quote both directions
            launch_s=launch,
            clock_hz=spec.clock_hz or 1e9,
            hop_s=self.hop.value if self.hop else value("CHIP_HOP_LATENCY_S"),
            collective_s=self.collective.value if self.collective else 0.0,
        )

    def place(self, kernels: list[Kernel], spec: AcceleratorSpec, plan: Any, *, chips: int, pipeline: int = 1,
              precision: str | None = None) -> Placement:
        """Where each kernel runs. By default (GPU, CPU) the kernels launch one after another on one stream,
        each using every unit."""
        regions = tuple(Region(k.name, (k.name,), 0, 0, i, 1, 1, spec.compute_units, slice="stream 0",
                               section=k.section) for i, k in enumerate(kernels))
        return Placement(self.family, (1, max(1, len(kernels))), regions, chips, spec.unit_name or "unit",
                         ("kernels launch one after another on one stream; each uses every SM",))

    def check(self, p: Placement, kernels: list[Kernel], spec: AcceleratorSpec, plan: Any) -> None:
        """The family's own placement invariants (beyond every kernel placed once); none by default."""

    def layouts(self, ctx: MemoryContext) -> list[Layout]:
        """Each execution mode's memory layout, in :attr:`modes` order. By default one mode that keeps
        everything in the first tier off chip (HBM on a GPU, DRAM on a CPU)."""
        return [everything_in(self.modes[0], ctx.tier(1))]

    def lane(self, k: KernelTime) -> str:
        """The timeline lane a kernel's bar goes in."""
        return self.lane_label.format(section=k.section, group=k.group, units=k.units)

    def __repr__(self) -> str:
        return f"<ExecutionModel {self.family}: modes {', '.join(self.modes)}>"
