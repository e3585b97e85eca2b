"""``popart``: the names PopTorch scripts take from PopART, Graphcore's lower-level graph API.

PopTorch tutorials import ``popart`` only for the values of PopART session options they pass to
``opts._Popart.set(...)`` (``popart.SubgraphCopyingStrategy.JustInTime``,
``popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized``). Those option enums are answered here
with named values (the option is recorded, not simulated). PopART's own graph API (``popart.Builder``,
``popart.TrainingSession``...) builds and runs programs on IPUs directly, outside PyTorch: accelkit runs
PyTorch models, so those names are refused with an error saying so.
"""

from __future__ import annotations

from typing import Any

from accelkit.facades.poptorch.options import PopTorchError

# PopART's graph and session API: refused (a script using them is a PopART program, not a PopTorch one)
GRAPH_API = ("Builder", "TrainingSession", "InferenceSession", "DataFlow", "PyStepIO", "DeviceManager", "SessionOptions",
             "AnchorReturnType", "TensorInfo", "ConstSGD", "SGD", "Adam", "InitOp", "Patterns")


# PopART's session-option enums and their members in order (their integer values, which scripts pass as
# ``int(popart.SubgraphCopyingStrategy.JustInTime)``): graphcore/popart, willow/include/popart/sessionoptions.hpp
ENUMS: dict[str, tuple[str, ...]] = {
    "GradientTensorTrackingMethod": ("AllNonViewChangingGradientTensors", "ConvAndMatmulGradients",
                                     "GradientsOfUserSpecifiedTensors"),
    "RecomputationType": ("None", "Standard", "NormOnly", "Pipeline", "RecomputeAll"),
    "MergeVarUpdateType": ("None", "All", "AutoLoose", "AutoTight"),
    "VirtualGraphMode": ("Off", "Manual", "Auto", "ExecutionPhases"),
    "SyntheticDataMode": ("Off", "Zeros", "RandomNormal", "RandomUniform"),
    "Instrumentation": ("Outer", "Inner"),
    "BatchSerializationBatchSchedule": ("Scheduler", "Isomorphic", "OverlapOnIo", "OverlapOnCompute"),
    "BatchSerializationTransformContext": ("Fwd", "Bwd"),
    "BatchSerializationMethod": ("UnrollDynamic", "UnrollStatic", "Loop"),
    "ExecutionPhaseIOSchedule": ("Preload", "OnDemand"),
    "ExecutionPhaseSchedule": ("Interleaving", "Batch", "BatchClusteredIO"),
    "AccumulateOuterFragmentSchedule": ("Scheduler", "Serial", "OverlapCycleOptimized", "OverlapMemoryOptimized"),
    "SubgraphCopyingStrategy": ("OnEnterAndExit", "JustInTime"),
    "MeanReductionStrategy": ("Running", "Post"),
    "AutodiffStitchStrategy": ("RecomputeMinimal", "RecomputeAllNonInputs", "AddFwdOutputs", "SafeAddFwdOutputs"),
}


class _OptionValue(int):
    """One value of a PopART option enum, e.g. ``SubgraphCopyingStrategy.JustInTime``: its integer value (what
    ``int(...)`` gives a PopART enum) that prints as its name."""

    name: str

    def __new__(cls, value: int, name: str) -> _OptionValue:
        self = super().__new__(cls, value)
        self.name = name
        return self

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


class _NamedValue(str):
    """A value of a PopART option enum accelkit has no member list for: a named string (recorded, not simulated)."""


class _OptionEnum:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, value: str) -> Any:
        if value.startswith("_"):
            raise AttributeError(value)
        members = ENUMS.get(self._name)
        if members is None:
            return _NamedValue(f"{self._name}.{value}")
        if value not in members:
            raise AttributeError(f"popart.{self._name} has no member {value!r} (it has {', '.join(members)})")
        return _OptionValue(members.index(value), f"{self._name}.{value}")

    def __repr__(self) -> str:
        return f"popart.{self._name}"


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(name)
    if name in GRAPH_API or not name[:1].isupper():
        raise PopTorchError(f"popart.{name} is PopART's graph API, which builds and runs IPU programs outside PyTorch; "
                            "accelkit simulates PopTorch models, not PopART programs",
                            fix="use the PopTorch version of the tutorial (poptorch.trainingModel on an nn.Module)")
    return _OptionEnum(name)
