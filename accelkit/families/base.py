"""``ExecutionModel``: what makes an architecture family a family, in one object per family.

Each family module (``gpu``, ``cpu``, ``rdu``, ``wafer``, ``ipu``, ``tsp``) defines one and the registry
(``accelkit.families``) maps the family's name to it. Code elsewhere asks the model; it never compares a
family's name as a string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accelkit.cost.kernel import Kernel
from accelkit.cost.parallel import Parallel
from accelkit.cost.rates import Rates
from accelkit.cost.report import KernelTime
from accelkit.hardware.spec import AcceleratorSpec


@dataclass(frozen=True)
class TimingContext:
    """What timing a family's kernels needs besides the kernels: the chip, its rates, the compiled program's
    memory plan and placement, the tensor-parallel degree, the samples in flight, the program itself."""

    spec: AcceleratorSpec
    rates: Rates
    plan: Any  # compiler.memory.MemoryPlan
    placement: Any  # compiler.placement.Placement
    tensor: int
    peak: float
    samples: int
    program: Any  # compiler.program.CompiledProgram (the CPU model reads its graph)
    scale: float  # micro-batch over the captured example batch


@dataclass(frozen=True)
class Timed:
    """One pass's kernels timed: their times, the pass's time, and (a spatial pipeline) one sample's latency."""

    kernels: list[KernelTime]
    step_s: float
    latency_s: float | None = None


class ExecutionModel:
    """A family's execution model. Subclasses set the attributes and implement :meth:`time`."""

    family: str = ""
    modes: tuple[str, ...] = ()  # execution modes, fastest first (the memory plan tries them in order)
    vector_at_fp32_peak: bool = False  # vector work runs at the published fp32 peak (GPU CUDA cores, CPU)
    measured_rates: bool = False  # the spec's figures are measured here, not datasheet peaks (the host)
    schedule_charges_hops: bool = False  # the compiled schedule already counts every chip boundary (TSP)
    lane_label: str = "{section}"  # a timeline lane per unit group: "section {group}", "region {group}", ...
    model_split: str = "pipeline"  # how more chips split a model too big for one: "tensor" or "pipeline"

    def split(self, chips: int) -> Parallel:
        """The model-parallel split this family uses over ``chips`` (tensor on GPUs and RDUs, whose vendors
        shard each layer; pipeline stages elsewhere)."""
        return Parallel(tensor=chips) if self.model_split == "tensor" else Parallel(pipeline=chips)

    def launch_s(self) -> float:  # pragma: no cover - only a measured family overrides it
        raise NotImplementedError

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        raise NotImplementedError

    def lane(self, k: KernelTime) -> str:
        """The timeline lane a kernel's bar goes in."""
        return self.lane_label.format(section=k.section, group=k.group, units=k.units)

    def __repr__(self) -> str:
        return f"<ExecutionModel {self.family}: modes {', '.join(self.modes)}>"
