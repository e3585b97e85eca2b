"""``poptorch.Options``: how one call of a PopTorch model maps onto IPUs, and the batches that feed it.

Three numbers multiply into the samples one call consumes (PopTorch calls it the combined batch):

    combined batch = micro-batch x gradientAccumulation x replicationFactor x deviceIterations

- ``replicationFactor(r)``: r copies of the model (data parallel), each on its own IPU(s);
- ``Training.gradientAccumulation(g)``: each replica runs g micro-batches before one weight update;
- ``deviceIterations(n)``: the IPU loops n times (n weight updates, in training) per call from the host,
  so the host is not in the loop of every step.

``poptorch.DataLoader(options, dataset, batch_size=micro)`` builds batches of that combined size.
"""

from __future__ import annotations

import copy
import enum
import os
import statistics
import time
import weakref
from collections.abc import Iterator
from typing import Any

import torch

from accelkit.errors import AccelkitError
from accelkit.runtime import facade_log

TARGETS = ("gc200", "bow")  # the IPUs in accelkit's catalog: Mk2 GC200 (default) and Bow


class PopTorchError(AccelkitError, ValueError):
    """A PopTorch-style model or option that cannot work as written: says what, and the fix."""


class PopTorchOptionError(PopTorchError, AttributeError):
    """An ``Options`` setter that accelkit's simulated IPU does not provide."""


class OutputMode(enum.IntEnum):
    """Which device iterations' outputs a call returns (``poptorch.OutputMode``; ``AnchorMode`` before 3.0)."""

    Final = 0  # the last iteration's
    EveryN = 1  # every N-th iteration's (``output_return_period``), concatenated
    All = 2  # every iteration's, concatenated
    Sum = 3  # summed over the iterations
    Default = 4  # Final for a trainingModel, All for an inferenceModel


AnchorMode = OutputMode


class DataLoaderMode(enum.IntEnum):
    """How ``poptorch.DataLoader`` feeds the IPUs (``poptorch.DataLoaderMode``): ``Sync`` loads each batch when
    it is needed; ``Async`` / ``AsyncRebatched`` load ahead in a background process."""

    Sync = 0
    Async = 1
    AsyncRebatched = 2


class SharingStrategy(enum.IntEnum):
    """How an asynchronous ``poptorch.DataLoader``'s worker process hands batches back
    (``poptorch.SharingStrategy``, for ``async_options={"sharing_strategy": ...}``)."""

    SharedMemory = 0
    FileSystem = 1


class ReductionType(enum.IntEnum):
    """How gradients are combined over accumulated micro-batches and replicas (``poptorch.ReductionType``)."""

    Sum = 0
    Mean = 1
    NoReduction = 2


class Stage:
    """``poptorch.Stage(*block_ids)``: the blocks (``poptorch.Block(user_id)`` / ``BeginBlock(..., user_id=)``)
    that form one stage of an execution strategy; ``.ipu(n)`` puts the stage on IPU ``n``."""

    def __init__(self, *block_ids: str) -> None:
        if not all(isinstance(b, str) for b in block_ids):
            raise PopTorchError(f"Stage takes block ids (strings), got {block_ids!r}", fix='e.g. poptorch.Stage("B1")')
        self.blocks = list(block_ids)
        self.ipu_id: int | None = None

    def ipu(self, ipu: int) -> Stage:
        """Run this stage on IPU ``ipu``."""
        if not isinstance(ipu, int) or isinstance(ipu, bool) or ipu < 0:
            raise PopTorchError(f"Stage.ipu needs a whole number ≥ 0, got {ipu!r}", fix="e.g. .ipu(1)")
        self.ipu_id = ipu
        return self

    def __repr__(self) -> str:
        return f"Stage({', '.join(map(repr, self.blocks))})" + (f".ipu({self.ipu_id})" if self.ipu_id is not None
                                                                 else "")


class AutoStage(enum.IntEnum):
    """``poptorch.AutoStage``: how blocks without a stage are staged."""

    SameAsIpu = 0
    AutoIncrement = 1


class _ExecutionStrategy:
    """A PopTorch execution strategy: ``Stage`` objects, block ids (each its own stage) or an ``AutoStage``."""

    def __init__(self, *args: Any) -> None:
        self.stages: list[Stage] = []
        self.auto_stage = AutoStage.SameAsIpu
        for a in args:
            if isinstance(a, AutoStage):
                self.auto_stage = a
            elif isinstance(a, Stage):
                self.stages.append(a)
            elif isinstance(a, str):
                self.stages.append(Stage(a))
            else:
                raise PopTorchError(f"poptorch.{type(self).__name__} takes Stages, block ids or an AutoStage, "
                                    f"not {type(a).__name__}",
                                    fix='e.g. poptorch.PipelinedExecution(poptorch.Stage("B1").ipu(0), '
                                        'poptorch.Stage("B2").ipu(1))')

    def block_ipus(self) -> dict[str, int]:
        """The IPU of every block id the stages name: the stage's ``.ipu(n)``, else the stage's position
        (PopTorch: "Create a 4 stages pipeline based on user_id, 4 IPUs will be used")."""
        return {b: (s.ipu_id if s.ipu_id is not None else i) for i, s in enumerate(self.stages) for b in s.blocks}

    def stage(self, block_id: str) -> Stage:
        """The :class:`Stage` block ``block_id`` belongs to (``strategy.stage("B1").ipu(0)``)."""
        for s in self.stages:
            if block_id in s.blocks:
                return s
        raise PopTorchError(f"Unknown block {block_id!r}: this strategy's blocks are "
                            f"{[b for s in self.stages for b in s.blocks]}",
                            fix="name a block the strategy was made with, e.g. poptorch.ShardedExecution('B1', 'B2')")

    def __repr__(self) -> str:
        return f"poptorch.{type(self).__name__}({', '.join(map(repr, self.stages))})"


class PipelinedExecution(_ExecutionStrategy):
    """``poptorch.PipelinedExecution(*args)``: the stages run as a pipeline over their IPUs, micro-batches
    overlapping (PopTorch's default once the model has blocks). Honoured: the stages' IPUs are the pipeline's."""


class ShardedExecution(_ExecutionStrategy):
    """``poptorch.ShardedExecution(*args)``: the stages run one after another over their IPUs (the model is split
    for memory, without overlapping micro-batches). accelkit places the stages on their IPUs as for a pipeline;
    the report says that the modelled time overlaps micro-batches where the real sharded run does not."""


class CommGroupType(enum.IntEnum):
    """``poptorch.enums.CommGroupType``: how replicas are grouped (replica-grouped variables and inputs)."""

    All = 0
    Consecutive = 1
    Orthogonal = 2
    NoGrouping = 3


class VariableRetrievalMode(enum.IntEnum):
    """``poptorch.enums.VariableRetrievalMode``: which replicas' copies of a grouped variable come back."""

    OnePerGroup = 0
    AllReplicas = 2


class Liveness(enum.IntEnum):
    """``poptorch.Liveness``: where a phased execution keeps tensors between its phases."""

    AlwaysLive = 0
    OffChipAfterFwd = 1
    OffChipAfterFwdNoOverlap = 2
    OffChipAfterEachPhase = 3


class Phase:
    """``poptorch.Phase(*stages_or_block_ids)``: the stages one execution phase runs in parallel (block ids given as
    strings form one stage); ``.ipus(*ipus)`` puts each stage on an IPU."""

    def __init__(self, *arg: Any) -> None:
        if arg and all(isinstance(a, Stage) for a in arg):
            self.stages = list(arg)
        elif all(isinstance(a, str) for a in arg):
            self.stages = [Stage(*arg)]
        else:
            raise PopTorchError(f"Phase takes Stages or block ids (strings), got {[type(a).__name__ for a in arg]}",
                                fix='e.g. poptorch.Phase(poptorch.Stage("A").ipu(0), poptorch.Stage("B").ipu(1))')

    def stage(self, idx: int) -> Stage:
        return self.stages[idx]

    def ipus(self, *ipus: int) -> Phase:
        if len(ipus) != len(self.stages):
            raise PopTorchError(f"Phase contains {len(self.stages)} stage(s) but {len(ipus)} IPU(s) were given",
                                fix="give one IPU per stage of the phase")
        for stage, ipu in zip(self.stages, ipus, strict=True):
            stage.ipu(ipu)
        return self


class _PhasedExecution(_ExecutionStrategy):
    """PopTorch's phased execution: the model's phases run one after another, each phase's weights and activations
    moved in from Streaming Memory and out again. Each phase is a :class:`Phase`, a list of Stages or block ids, or
    one block id."""

    def __init__(self, *phases: Any) -> None:
        super().__init__()
        if not phases:
            raise PopTorchError(f"poptorch.{type(self).__name__}() needs its phases: there is no AutoStage for "
                                "phased execution", fix='e.g. poptorch.SerialPhasedExecution("B1", "B2")')
        self.phases: list[Phase] = []
        for args in phases:
            phase = args if isinstance(args, Phase) else Phase(*(args if isinstance(args, list) else [args]))
            self.phases.append(phase)
            for stage in phase.stages:
                for block in stage.blocks:
                    if any(block in s.blocks for s in self.stages):
                        raise PopTorchError(f"block {block!r} is in more than one stage",
                                            fix="name each block in one phase's stage only")
                self.stages.append(stage)
        self.separate_backward_phase = False
        self.liveness = Liveness.AlwaysLive

    def block_ipus(self) -> dict[str, int]:
        """Each block on its stage's IPU (IPU 0 where the stage names none)."""
        return {b: (s.ipu_id or 0) for s in self.stages for b in s.blocks}

    def phase(self, phase: int) -> Phase:
        if isinstance(phase, bool) or not isinstance(phase, int) or not 0 <= phase < len(self.phases):
            raise PopTorchError(f"phase({phase!r}): this strategy has phases 0 to {len(self.phases) - 1}",
                                fix="phases are numbered from 0")
        return self.phases[phase]

    def useSeparateBackwardPhase(self, use: bool = True) -> _PhasedExecution:  # noqa: N802 - PopTorch's name
        self.separate_backward_phase = bool(use)
        return self


class ParallelPhasedExecution(_PhasedExecution):
    """``poptorch.ParallelPhasedExecution(*phases)``: the phases alternate between two groups of IPUs."""

    def sendTensorsOffChipAfterFwd(self, off_chip: bool = True) -> ParallelPhasedExecution:  # noqa: N802
        self.liveness = Liveness.OffChipAfterFwd if off_chip else Liveness.AlwaysLive
        return self


class SerialPhasedExecution(_PhasedExecution):
    """``poptorch.SerialPhasedExecution(*phases)``: every phase runs on the same group of IPUs, one after another."""

    def setTensorsLiveness(self, liveness: Liveness) -> SerialPhasedExecution:  # noqa: N802 - PopTorch's name
        self.liveness = Liveness(liveness)
        return self


def _hardware_only(option: str, why: str) -> None:
    facade_log.accept("PopTorch", option, why)


class _Section:
    """A group of setters on ``Options`` (``opts.Precision``, ``opts.TensorLocations``, ``opts.Jit``...):
    each accepts PopTorch's arguments, records the setting and returns the group, so calls chain."""

    _name = ""
    _why: dict[str, str] = {}

    def __getattr__(self, setter: str) -> Any:
        if setter.startswith("_") or setter not in self._why:
            raise PopTorchOptionError(f"poptorch.Options().{self._name}.{setter} is not provided by accelkit's "
                                      "simulated IPU", fix="remove the call (see README, 'Vendor scripts')")

        def set_option(*args: Any, **kwargs: Any) -> _Section:
            shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
            _hardware_only(f"opts.{self._name}.{setter}({shown})", self._why[setter])
            return self

        return set_option


class _PrecisionOptions(_Section):
    _name = "Precision"
    stochastic_rounding = False  # honoured: poptorch.optim rounds fp16 weights and state stochastically

    def enableStochasticRounding(self, enabled: bool) -> _PrecisionOptions:  # noqa: N802 - PopTorch's name
        """Round fp16 results up or down at random (unbiased), as the IPU does. Honoured where it decides training:
        the fp16 weights and optimizer state a ``poptorch.optim`` optimizer stores after each update (the forward
        and backward passes on this CPU round to nearest)."""
        self.stochastic_rounding = bool(enabled)
        return self

    _why = {
        "setPartialsType": "the type of the IPU's matmul / convolution partial sums (fp16 partials are faster); "
                           "this CPU accumulates fp16 products in fp32, as the IPU's default float partials do",
        "enableFloatingPointExceptions": "traps overflow / NaN on the IPU; PyTorch on this CPU propagates them",
        "halfFloatCasting": "how fp16 x fp32 ops are cast on the IPU; PyTorch's type promotion applies here",
        "runningStatisticsAlwaysFloat": "keeps batch-norm running statistics in fp32 on the IPU",
    }


class _PopartOptions:
    """``opts._Popart.set(key, value)``: PopART's session options, set under PopTorch. They tune the IPU compiler
    (outlining, prefetch depth, accumulation schedules); each is accepted and recorded. ``groupHostSync`` also
    changes the modelled clock: a step's stream copies grouped into one per direction (``ak.compile``'s
    ``group_host_sync``); ``autoRecomputation`` the modelled memory and backward pass (``ak.compile``'s
    ``recompute``)."""

    def __init__(self, owner: Any = None) -> None:
        self._owner = owner

    def set(self, key: str, value: Any) -> _PopartOptions:
        if key == "groupHostSync" and self._owner is not None:
            self._owner.group_host_sync = bool(value)
            facade_log.accept("PopTorch", f"opts._Popart.set({key!r}, {value!r})",
                              "each step's stream copies grouped, one per direction at the step's start and end, "
                              "not one per tensor: fewer syncs with the host (the modelled clock counts them)")
            return self
        if key == "autoRecomputation" and self._owner is not None:
            kind = int(value)  # PopART's RecomputationType: None, Standard, NormOnly, Pipeline, RecomputeAll
            if kind not in range(5):
                raise PopTorchError(f"opts._Popart.set('autoRecomputation', {value!r}) is not a RecomputationType",
                                    fix="pass int(popart.RecomputationType.Standard) (or NormOnly, Pipeline, "
                                        "RecomputeAll, NoRecompute)")
            self._owner.recomputation = kind
            what = {0: "no recomputation: the backward pass reads every activation the forward kept",
                    1: "the backward pass recomputes the cheap ops (norms, nonlinearities) from the kept results of "
                       "the expensive ones: modelled as ak.compile's recompute='selective'",
                    2: "the backward pass recomputes the norms from their kept inputs: modelled as ak.compile's "
                       "recompute='selective' (it also recomputes the nonlinearities)",
                    3: "a pipelined model's stages recompute their forward in the backward pass from each stage's "
                       "inputs: modelled as ak.compile's recompute='full' when the model is pipelined, else none",
                    4: "the whole forward is recomputed in the backward pass from the recomputationCheckpoint "
                       "tensors: modelled as ak.compile's recompute='full' (one tensor kept per layer)"}[kind]
            facade_log.accept("PopTorch", f"opts._Popart.set({key!r}, {value!r})", what, emulated=True)
            return self
        _hardware_only(f"opts._Popart.set({key!r}, {value!r})",
                       "a PopART session option for the IPU compiler (scheduling, outlining, buffering); it tunes the "
                       "IPU program, not the values computed")
        return self

    def setPatterns(self, patterns: Any, level: int | None = None) -> _PopartOptions:  # noqa: N802 - PopTorch's name
        _hardware_only("opts._Popart.setPatterns(...)", "PopART's graph rewrite patterns on the IPU")
        return self


class _TensorLocationOptions(_Section):
    _name = "TensorLocations"
    _why = {k: "where these tensors live on the IPU system (In-Processor Memory or Streaming Memory off chip); "
               "the simulated memory plan places them itself"
            for k in ("setOptimizerLocation", "setWeightLocation", "setActivationLocation", "setAccumulatorLocation",
                      "numIOTiles")}


class _JitOptions(_Section):
    _name = "Jit"
    _why = {"traceModel": "whether PopTorch captures the model by tracing or by dispatch; accelkit captures with "
                          "torch.export either way"}


class TensorLocationSettings:
    """``poptorch.TensorLocationSettings()``: chainable settings for ``opts.TensorLocations`` (recorded only)."""

    _SETTERS = ("useOnChipStorage", "useReplicatedTensorSharding", "useIOTilesToLoad", "useIOTilesToStore",
                "minElementsForOffChip", "minElementsForReplicatedTensorSharding")

    def __init__(self) -> None:
        self._calls: list[str] = []

    def __getattr__(self, setter: str) -> Any:
        if setter.startswith("_") or setter not in self._SETTERS:
            raise PopTorchOptionError(f"poptorch.TensorLocationSettings().{setter} is not a PopTorch setting",
                                      fix=f"use one of {list(self._SETTERS)}")

        def set_option(*args: Any, **kwargs: Any) -> TensorLocationSettings:
            shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
            self._calls.append(f".{setter}({shown})")
            return self

        return set_option

    def __repr__(self) -> str:
        return "poptorch.TensorLocationSettings()" + "".join(self._calls)


def _count(name: str, n: Any) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise PopTorchError(f"{name} must be a whole number ≥ 1, got {n!r}", fix=f"e.g. {name}(4)")
    return n


class _TrainingOptions:
    """``options.Training``: settings that only apply to ``trainingModel``."""

    def __init__(self) -> None:
        self.gradient_accumulation = 1
        self.reduction = ReductionType.Mean

    def gradientAccumulation(self, n: int) -> _TrainingOptions:  # noqa: N802 - PopTorch's name
        """Run ``n`` micro-batches per replica, summing their gradients, before each weight update."""
        self.gradient_accumulation = _count("gradientAccumulation", n)
        return self

    def accumulationAndReplicationReductionType(self, reduction: ReductionType) -> _TrainingOptions:  # noqa: N802
        """How micro-batch and replica gradients combine before the update, honoured: ``ReductionType.Mean``
        (PopTorch's default) averages them; ``Sum`` adds them, so the update sees ``gradientAccumulation x
        replicationFactor`` times the mean gradient (applications that pick it scale their learning rate or loss
        for it)."""
        if reduction not in (ReductionType.Mean, ReductionType.Sum):
            raise PopTorchError(f"accumulationAndReplicationReductionType({reduction!r}): gradients are reduced "
                                "with ReductionType.Mean or ReductionType.Sum",
                                fix="use poptorch.ReductionType.Mean (the default) or poptorch.ReductionType.Sum")
        self.reduction = ReductionType(reduction)
        return self

    def setAutomaticLossScaling(self, enabled: bool) -> _TrainingOptions:  # noqa: N802 - PopTorch's name
        """The IPU's automatic loss scaling (adjusts the scale from gradient statistics). Recorded: accelkit uses
        the optimizer's fixed ``loss_scaling``."""
        if enabled:
            _hardware_only("opts.Training.setAutomaticLossScaling(True)",
                           "adjusts the fp16 loss scale from gradient statistics on the IPU; here the optimizer's "
                           "fixed loss_scaling is applied")
        return self


class _DistributedOptions:
    """``opts.Distributed``: this process's place in a run over several host processes (each with its own
    replicas), as ``mpirun -np N`` starts them. accelkit runs one process; a run over N processes computes
    what one process computes with ``replicationFactor(N x r)`` (the same mean gradient over all replicas),
    so more than one process is refused with that fix."""

    def __init__(self) -> None:
        self.process_id, self.num_processes = 0, 1
        self.setEnvVarNames("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")

    def configureProcessId(self, process_id: int, num_processes: int) -> _DistributedOptions:  # noqa: N802
        """This process's id and the number of processes the run is distributed over (PopTorch's signature)."""
        if num_processes != 1 or process_id != 0:
            raise PopTorchError(
                f"opts.Distributed.configureProcessId({process_id}, {num_processes}): a run over {num_processes} "
                "processes needs them all, and accelkit simulates one process",
                fix="run one process with the replicas of all of them, opts.replicationFactor(processes x replicas "
                    "per process): it computes the same mean gradient")
        self.process_id, self.num_processes = process_id, num_processes
        return self

    def setEnvVarNames(self, var_num_processes: str, var_process_id: str) -> _DistributedOptions:  # noqa: N802
        """Read the process id and count from these environment variables (default: OpenMPI's)."""
        try:
            process_id, num_processes = int(os.environ.get(var_process_id, "0")), int(os.environ.get(var_num_processes,
                                                                                                      "1"))
        except ValueError:
            raise PopTorchError(f"${var_process_id} / ${var_num_processes} are not whole numbers",
                                fix="unset them, or set them to the process id and count") from None
        return self.configureProcessId(process_id, num_processes)

    def disable(self) -> _DistributedOptions:
        """Ignore the environment: one process (what accelkit runs anyway)."""
        self.process_id, self.num_processes = 0, 1
        return self

    @property
    def processId(self) -> int:  # noqa: N802 - PopTorch's name
        return self.process_id

    @property
    def numProcesses(self) -> int:  # noqa: N802 - PopTorch's name
        return self.num_processes

    @property
    def num_distributed_processes(self) -> int:
        """PopTorch's attribute for :attr:`numProcesses` (applications multiply their global batch by it)."""
        return self.num_processes

    @property
    def distributed_process_id(self) -> int:
        """PopTorch's attribute for :attr:`processId`."""
        return self.process_id


class Options:
    """PopTorch's options object (``poptorch.Options``); setters return the object, so they chain.

    ``target`` is accelkit's: the IPU to simulate, ``"gc200"`` (Mk2, the default) or ``"bow"``.
    """

    def __init__(self, target: str = "gc200") -> None:
        key = target.strip().lower()
        if key not in TARGETS:
            raise PopTorchError(f"{target!r} is not an IPU in accelkit's catalog", fix=f"use one of {list(TARGETS)}")
        self.target = key
        self.replication_factor = 1
        self.input_group_size = 1  # inputReplicaGrouping: replicas given the same slice of a batch
        self.input_group_type = CommGroupType.Consecutive
        self.device_iterations = 1
        self.synthetic_data = False  # enableSyntheticData: no input crosses the host link
        self.recomputation = 0  # _Popart.set("autoRecomputation", n): PopART's RecomputationType
        self.group_host_sync = False  # _Popart.set("groupHostSync", True): a step's stream copies grouped
        self.use_ipu_model = False
        self.output_mode = OutputMode.Default
        self.output_return_period = 1
        self.Training = _TrainingOptions()
        self.Precision = _PrecisionOptions()
        self.TensorLocations = _TensorLocationOptions()
        self.Jit = _JitOptions()
        self.Distributed = _DistributedOptions()
        self.execution_strategy: _ExecutionStrategy | None = None
        self._Popart = _PopartOptions(self)
        self.anchored: dict[str, str] = {}  # anchorTensor: short name -> the IPU program's tensor name

    # PopTorch setters that only matter on real IPUs: accepted, recorded with what they do there
    _HARDWARE_ONLY = {
        "setAvailableMemoryProportion": "the share of each tile's memory the IPU compiler may use for matmul / "
                                        "convolution temporaries (a speed-memory trade on the chip)",
        "enableExecutableCaching": "caches the compiled IPU executable on disk between runs",
        "logDir": "where PopTorch writes its logs and reports",
        "autoRoundNumIPUs": "rounds the IPU count up to a power of two, as IPU systems are allocated",
        "connectionType": "when PopTorch attaches to the IPU device",
        "enableProfiling": "writes a PopVision profile of the run; accelkit's report and timeline stand in",
        "useOfflineIpuTarget": "compiles for IPUs not attached to this host",
        "useIpuId": "runs on the IPU (or multi-IPU device) with this id in the system",
        "enableStableNorm": "a numerically steadier (slower) normalisation on the IPU; the CPU computes in fp32",
        "setSeedForDistributedRun": "seeds each replica of a multi-process run",
    }

    def __getattr__(self, setter: str) -> Any:
        if setter.startswith("_") or setter not in self._HARDWARE_ONLY:
            raise PopTorchOptionError(f"poptorch.Options().{setter} is not provided by accelkit's simulated IPU",
                                      fix="remove the call (see README, 'Vendor scripts' for what is covered)")
        why = self._HARDWARE_ONLY[setter]

        def set_option(*args: Any, **kwargs: Any) -> Options:
            shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
            _hardware_only(f"opts.{setter}({shown})", why)
            return self

        return set_option

    def outputMode(self, output_mode: OutputMode, output_return_period: int | None = None) -> Options:  # noqa: N802
        """Which device iterations' outputs a call returns (``OutputMode.All``, ``Final``, ``Sum``, ``EveryN``
        with ``output_return_period``; ``Default``: Final in training, All in inference). Honoured."""
        self.output_mode = OutputMode(output_mode)
        if self.output_mode == OutputMode.EveryN:
            self.output_return_period = _count("output_return_period", output_return_period)
        return self

    anchorMode = outputMode  # noqa: N815 - PopTorch's name before 3.0

    def setExecutionStrategy(self, strategy: _ExecutionStrategy) -> Options:  # noqa: N802 - PopTorch's name
        """How the model's blocks (``poptorch.Block`` / ``BeginBlock`` with a ``user_id``) are staged over the
        IPUs: ``PipelinedExecution`` or ``ShardedExecution`` of ``Stage``s. Honoured: each block runs on its
        stage's IPU, which fixes how many IPUs the program uses."""
        if not isinstance(strategy, _ExecutionStrategy):
            raise PopTorchError(f"setExecutionStrategy takes a poptorch.PipelinedExecution or ShardedExecution, not "
                                f"{type(strategy).__name__}", fix="e.g. opts.setExecutionStrategy("
                                "poptorch.PipelinedExecution(poptorch.Stage('B1').ipu(0), poptorch.Stage('B2').ipu(1)))")
        self.execution_strategy = strategy
        if isinstance(strategy, _PhasedExecution):
            facade_log.accept("PopTorch", f"opts.setExecutionStrategy(poptorch.{type(strategy).__name__}(...))",
                              "phased execution runs the phases one after another, each phase's weights and "
                              "activations moved in from Streaming Memory and out again; accelkit places each stage "
                              "on its IPU and models the weights as streamed (mode 'streaming-memory'), the phases "
                              "as stages that do not overlap", emulated=True)
        elif isinstance(strategy, ShardedExecution):
            _hardware_only(f"opts.setExecutionStrategy({strategy!r})",
                           "sharded execution runs the stages one after another, one IPU busy at a time; accelkit "
                           "places them on their IPUs as for a pipeline, whose modelled time overlaps micro-batches, "
                           "so the real sharded run is slower (up to the number of stages)")
        return self

    def inputReplicaGrouping(self, input_group_size: int, input_group_type: Any) -> Options:  # noqa: N802
        """Give groups of ``input_group_size`` replicas the same slice of each batch (``CommGroupType.Consecutive``
        groups ``{0 .. k-1}, {k .. 2k-1}, ...``, ``Orthogonal`` ``{0, m, 2m, ...}, ...``), as PopTorch does: a batch
        then holds ``replicationFactor / input_group_size`` slices per micro-batch, not one per replica. Used with
        replica-grouped weights (``poptorch_model.weight.replicaGrouping(...)``, :mod:`.replicas`); honoured."""
        try:
            kind = CommGroupType(input_group_type)
        except ValueError:
            raise PopTorchError(f"inputReplicaGrouping(..., {input_group_type!r}): not a poptorch.CommGroupType",
                                fix="e.g. opts.inputReplicaGrouping(4, poptorch.CommGroupType.Consecutive)") from None
        if kind == CommGroupType.NoGrouping:  # PopTorch's own reading: every replica its own slice
            input_group_size, kind = 1, CommGroupType.Consecutive
        if kind == CommGroupType.All:
            raise PopTorchError("input_group_type cannot be All (PopTorch refuses it too)",
                                fix="use poptorch.CommGroupType.Consecutive or Orthogonal")
        size = _count("inputReplicaGrouping", input_group_size)
        if self.replication_factor < size or self.replication_factor % size:
            raise PopTorchError(f"input_group_size ({size}) must be a factor of replicationFactor "
                                f"({self.replication_factor}), as PopTorch requires",
                                fix="call opts.replicationFactor(n) first, then inputReplicaGrouping with a size "
                                    "that divides n")
        self.input_group_size, self.input_group_type = size, kind
        return self

    def input_groups(self) -> int:
        """Slices of each micro-batch a batch holds: ``replicationFactor / input_group_size``."""
        return self.replication_factor // self.input_group_size

    def block_ipus(self) -> dict[str, int]:
        """The IPU the execution strategy gives each block id (empty without a strategy)."""
        return self.execution_strategy.block_ipus() if self.execution_strategy is not None else {}

    def clone(self) -> Options:
        """A copy of these options to change without touching the original (``Options.clone``)."""
        return copy.deepcopy(self)

    def enableSyntheticData(self, enabled: bool) -> Options:  # noqa: N802 - PopTorch's name
        """PopTorch's synthetic data leaves the host's batches on the host and runs the IPUs on data made on the
        chip, to measure the IPUs' speed without host I/O (the tutorials time throughput with it). The modelled
        clock does the same: no input crosses the host link (``ak.compile(..., synthetic_data=True)``), only the
        call's round trip remains. accelkit still computes on the script's batches (the values are your data's, not
        the on-chip filler's). Accepted and said once."""
        self.synthetic_data = bool(enabled)
        if enabled:
            _hardware_only("opts.enableSyntheticData(True)",
                           "the IPUs run on data made on the chip instead of the host's batches, to time the IPUs "
                           "without host I/O; the modelled clock leaves the inputs' transfers out, as the IPUs would, "
                           "and accelkit still computes on the script's batches (accelkit vendor-run --synthetic-data "
                           "is what replaces downloads)")
        return self

    def anchorTensor(self, short_name: str, long_name: str, output_mode: Any = None,  # noqa: N802 - PopTorch's name
                     output_return_period: int | None = None) -> Options:
        """Ask for an internal tensor of the program to come back to the host after each call, read with
        ``poptorch_model.getAnchoredTensor(short_name)``. Honoured for the names accelkit's program has:
        ``Gradient___<parameter>`` (the last step's gradient) and ``<parameter>`` (the weight); see
        ``getTensorNames()``. Other PopART tensor names are refused when read, naming them."""
        if not isinstance(short_name, str) or not isinstance(long_name, str):
            raise PopTorchError("anchorTensor takes two names (strings)",
                                fix="e.g. opts.anchorTensor('grad_fc1', 'Gradient___fc1.weight')")
        self.anchored[short_name] = long_name
        return self

    def replicationFactor(self, n: int) -> Options:  # noqa: N802 - PopTorch's name
        """Run ``n`` copies of the model (data parallel), each on its own IPU(s)."""
        self.replication_factor = _count("replicationFactor", n)
        return self

    def deviceIterations(self, n: int) -> Options:  # noqa: N802 - PopTorch's name
        """Loop ``n`` times on the IPU per call from the host (``n`` weight updates per call in training)."""
        self.device_iterations = _count("deviceIterations", n)
        return self

    def useIpuModel(self, use: bool) -> Options:  # noqa: N802 - PopTorch's name
        """PopTorch's software IPU. Everything here is simulated either way; recorded only."""
        self.use_ipu_model = bool(use)
        return self

    def randomSeed(self, seed: int) -> Options:  # noqa: N802 - PopTorch's name
        """Seed the random numbers the model draws (here: PyTorch's generator on this CPU)."""
        torch.manual_seed(seed)
        return self

    def combined_batch_factor(self, training: bool) -> int:
        """Samples per call / micro-batch size."""
        g = self.Training.gradient_accumulation if training else 1
        return g * self.input_groups() * self.device_iterations

    def __repr__(self) -> str:
        return (f"Options(target={self.target!r}, replicationFactor={self.replication_factor}, "
                f"deviceIterations={self.device_iterations}, "
                f"gradientAccumulation={self.Training.gradient_accumulation})")


class DataLoader(torch.utils.data.DataLoader):
    """``poptorch.DataLoader(options, dataset, batch_size=1, shuffle=False, num_workers=0, drop_last=True,
    persistent_workers=None, auto_distributed_partitioning=True, mode=DataLoaderMode.Sync, ...)`` (the PopTorch
    user guide's signature): batches of the combined size.

    ``batch_size`` is the micro-batch; each batch holds ``micro x gradientAccumulation x replicationFactor x
    deviceIterations`` samples (the last partial batch is dropped, as a compiled program has fixed shapes).
    """

    def __init__(self, options: Options, dataset: Any, batch_size: int = 1, shuffle: bool = False,
                 num_workers: int = 0, drop_last: bool = True, persistent_workers: bool | None = None,
                 auto_distributed_partitioning: bool = True, mode: DataLoaderMode = DataLoaderMode.Sync,
                 async_options: dict[str, Any] | None = None, rebatched_worker_size: int | None = None,
                 **kwargs: Any) -> None:
        self.options = options
        self.micro_batch_size = batch_size
        self.mode = DataLoaderMode(mode)
        if self.mode != DataLoaderMode.Sync:
            _hardware_only(f"poptorch.DataLoader(mode={self.mode!r})",
                           "loads batches ahead in a background process so the host keeps the IPUs fed; the "
                           "batches are the same, and this CPU loads them in step")
        if num_workers:
            _hardware_only(f"poptorch.DataLoader(num_workers={num_workers})",
                           "worker processes that prepare batches in parallel for the IPUs' host; this laptop "
                           "prepares the same batches, in the same order, in its own process")
        if async_options:
            _hardware_only("poptorch.DataLoader(async_options=...)",
                           "the background loader's buffers and worker hand-over (sharing_strategy, buffer_size, "
                           "early_preload...); the batches are the same, loaded here in step")
        self.num_workers_requested = num_workers
        combined = batch_size * options.combined_batch_factor(True)
        if hasattr(dataset, "at_real_size") and len(dataset) < combined:
            dataset.at_real_size(combined)  # --synthetic-data's small stand-in: as big as the real dataset
        super().__init__(dataset, batch_size=combined, shuffle=shuffle, num_workers=0, drop_last=drop_last, **kwargs)
        self.load_s: list[float] = []  # MEASURED: seconds this host took to load each batch, in this process
        _loaders.append(weakref.ref(self))

    @property
    def synchronous(self) -> bool:
        """No workers and ``DataLoaderMode.Sync``: on an IPU system's host too the batches load in the training
        process, between the calls."""
        return not self.num_workers_requested and self.mode == DataLoaderMode.Sync

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        it = super().__iter__()
        while True:
            start = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                return
            self.load_s.append(time.perf_counter() - start)
            yield batch


_loaders: list[weakref.ref[DataLoader]] = []  # this run's DataLoaders (a vendor run clears the list)
facade_log.reset_with_each_run(_loaders.clear)


def loading_note(combined_batch: int, modelled_s_per_sample: float) -> str | None:
    """What a synchronous ``poptorch.DataLoader`` of ``combined_batch``-sample batches adds to each call on an IPU
    system, from its load times MEASURED here; None where no such loader ran."""
    times = [t for ref in _loaders if (dl := ref()) is not None and dl.synchronous and dl.batch_size == combined_batch
             for t in dl.load_s]
    if not times or modelled_s_per_sample <= 0:
        return None
    load = statistics.median(times)
    rate = 1.0 / (modelled_s_per_sample + load / combined_batch)
    return (f"poptorch.DataLoader has no workers (DataLoaderMode.Sync): this host loaded each batch of "
            f"{combined_batch} in {load * 1e3:.3g} ms (MEASURED, median of {len(times)}). On an IPU system it loads "
            f"in the training process too, between the calls, so each call also waits for it: about "
            f"{rate:,.0f} samples/s with the modelled IPU time (num_workers > 0 or DataLoaderMode.Async would "
            "overlap it; ak.compile models it with input_rate= and input_overlap=False)")


__all__ = ["TARGETS", "AnchorMode", "AutoStage", "CommGroupType", "VariableRetrievalMode", "DataLoader", "DataLoaderMode",
           "SharingStrategy", "Options", "OutputMode",
           "Liveness", "ParallelPhasedExecution", "Phase", "PipelinedExecution", "PopTorchError", "PopTorchOptionError",
           "ReductionType", "SerialPhasedExecution", "ShardedExecution", "Stage",
           "TensorLocationSettings"]
