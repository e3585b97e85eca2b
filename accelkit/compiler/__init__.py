"""Compile: passes, memory planning (execution mode), placement, and the saved artifact."""

from accelkit.compiler.artifact import ArtifactError, load
from accelkit.compiler.compare import FallbackOrPort, fallback_or_port
from accelkit.compiler.memory import MODES, MemoryPlan, ModeError
from accelkit.compiler.passes import Kernel, PassResult
from accelkit.compiler.placement import Placement, PlacementError, Region
from accelkit.compiler.program import CompiledProgram, CompileError, Parallel, compile

__all__ = ["MODES", "ArtifactError", "CompileError", "CompiledProgram", "FallbackOrPort", "Kernel", "MemoryPlan",
           "ModeError", "Parallel", "PassResult", "Placement", "PlacementError", "Region", "compile", "fallback_or_port",
           "load"]
