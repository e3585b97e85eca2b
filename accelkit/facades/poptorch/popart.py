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


class _OptionValue(str):
    """One value of a PopART option enum, e.g. ``SubgraphCopyingStrategy.JustInTime`` (a named string)."""


class _OptionEnum:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, value: str) -> _OptionValue:
        if value.startswith("_"):
            raise AttributeError(value)
        return _OptionValue(f"{self._name}.{value}")

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
