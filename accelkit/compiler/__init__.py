"""Compile: passes, memory planning (execution mode), placement, and the saved artifact.

``CompileOptions`` checks what a compile is asked for once; :func:`~accelkit.compiler.program.build` makes one
program for one parallel split and memory plan. ``compile`` (the search over splits and plans) and
``fallback_or_port`` live in :mod:`accelkit.workflow`; their old names here keep working, loaded on first use.
"""

from typing import TYPE_CHECKING, Any

from accelkit.compiler.artifact import ArtifactError, load
from accelkit.compiler.memory import MODES, MemoryPlan, ModeError
from accelkit.compiler.options import CompileOptions
from accelkit.compiler.passes import Kernel, PassResult
from accelkit.compiler.placement import Placement, PlacementError, Region
from accelkit.compiler.program import CompiledProgram, CompileError, Lowered, Parallel, build, lower

if TYPE_CHECKING:  # the names that moved up, for type checkers (see __getattr__)
    from accelkit.workflow.compare import FallbackOrPort, fallback_or_port
    from accelkit.workflow.compiling import compile


def __getattr__(name: str) -> Any:
    """The names that moved up to the workflow layer, imported when first used (never at import time)."""
    if name == "compile":
        from accelkit.workflow.compiling import compile

        return compile
    if name in ("FallbackOrPort", "fallback_or_port"):
        from accelkit.workflow import compare

        return getattr(compare, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MODES", "ArtifactError", "CompileError", "CompileOptions", "CompiledProgram",  # noqa: F822
           "FallbackOrPort", "Kernel", "Lowered", "MemoryPlan", "ModeError", "Parallel", "PassResult", "Placement",
           "PlacementError", "Region", "build", "compile", "fallback_or_port", "load", "lower"]
