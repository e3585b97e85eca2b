"""Profile a model on this host (MEASURED), and find what in it may not port to an accelerator.

``profile(model, inputs)`` -> :class:`HostProfile`: time and FLOPs per ATen op and per module,
peak memory, parameter count, plus the portability findings from the captured graph.
``find_portability_issues(model, inputs)`` -> list of :class:`PortabilityFinding` on its own.
Figures for a profile are in :mod:`accelkit.profiler.figures`.
"""

from accelkit.profiler.host import HostProfile, ModuleRow, OpRow, profile
from accelkit.profiler.portability import KINDS, PortabilityFinding, find_portability_issues

__all__ = [
    "KINDS",
    "HostProfile",
    "ModuleRow",
    "OpRow",
    "PortabilityFinding",
    "find_portability_issues",
    "profile",
]
