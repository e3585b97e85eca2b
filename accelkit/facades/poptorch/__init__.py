"""``accelkit.facades.poptorch``: Graphcore's PopTorch, on simulated IPUs (GC200 by default, or Bow).

    import accelkit.facades.poptorch as poptorch                   # was: import poptorch
    opts = poptorch.Options().replicationFactor(2).deviceIterations(4)
    opts.Training.gradientAccumulation(8)
    model.layer2 = poptorch.BeginBlock(model.layer2, ipu_id=1)      # pipeline: layer2 onwards on IPU 1
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.Stage("B1").ipu(0), ...))  # Blocks by user_id
    train = poptorch.trainingModel(model, options=opts, optimizer=optimizer)
    output, loss = train(x, labels)                        # the model returns its loss, PopTorch style
    infer = poptorch.inferenceModel(model)

IPUs compute in fp32 and fp16 (there is no bfloat16). Replication maps to data parallelism and the
``BeginBlock`` stages to a pipeline, ``ak.Parallel(data=replicas, pipeline=IPUs)``; each call is an
:class:`accelkit.Session` step with real PyTorch numerics on this CPU and a modelled clock.
"""

from __future__ import annotations

import sys

from accelkit.facades.poptorch import errors as poptorch_core
from accelkit.facades.poptorch import optim
from accelkit.facades.poptorch.blocks import (
    BeginBlock,
    Block,
    PipelinePlan,
    PipelineStage,
    identity_loss,
    pipeline_plan,
    removeBlocks,
    set_available_memory,
)
from accelkit.facades.poptorch.errors import Error, RecoverableError, UnrecoverableError
from accelkit.facades.poptorch.executor import PoplarExecutor, inferenceModel, load, trainingModel
from accelkit.facades.poptorch.extras import (
    AsynchronousDataAccessor,
    Attribute,
    ConnectionType,
    MatMulSerializationMode,
    MultiConv,
    custom_op,
    for_loop,
    ipu_print_tensor,
    ipuHardwareIsAvailable,
    ipuHardwareVersion,
    nop,
    recomputationCheckpoint,
    serializedMatMul,
    setLogLevel,
)
from accelkit.facades.poptorch.options import (
    AnchorMode,
    AutoStage,
    CommGroupType,
    DataLoader,
    DataLoaderMode,
    Liveness,
    Options,
    OutputMode,
    ParallelPhasedExecution,
    Phase,
    PipelinedExecution,
    PopTorchError,
    ReductionType,
    SerialPhasedExecution,
    ShardedExecution,
    SharingStrategy,
    Stage,
    TensorLocationSettings,
    VariableRetrievalMode,
)

__all__ = [
    "AnchorMode",
    "AsynchronousDataAccessor",
    "Attribute",
    "ConnectionType",
    "Error",
    "MatMulSerializationMode",
    "RecoverableError",
    "UnrecoverableError",
    "poptorch_core",
    "MultiConv",
    "custom_op",
    "for_loop",
    "ipu_print_tensor",
    "ipuHardwareIsAvailable",
    "ipuHardwareVersion",
    "nop",
    "recomputationCheckpoint",
    "serializedMatMul",
    "setLogLevel",
    "AutoStage",
    "CommGroupType",
    "BeginBlock",
    "Block",
    "DataLoader",
    "DataLoaderMode",
    "Liveness",
    "Options",
    "OutputMode",
    "ParallelPhasedExecution",
    "Phase",
    "PipelinePlan",
    "PipelineStage",
    "PipelinedExecution",
    "PopTorchError",
    "PoplarExecutor",
    "ReductionType",
    "SharingStrategy",
    "SerialPhasedExecution",
    "ShardedExecution",
    "Stage",
    "TensorLocationSettings",
    "VariableRetrievalMode",
    "enums",
    "identity_loss",
    "inferenceModel",
    "load",
    "optim",
    "pipeline_plan",
    "removeBlocks",
    "set_available_memory",
    "trainingModel",
]

# ``poptorch.enums.X`` as an attribute (the user guide writes ``poptorch.enums.CommGroupType.Consecutive``): the
# enums live in this package, as PopTorch re-exports them
enums = sys.modules[__name__]
