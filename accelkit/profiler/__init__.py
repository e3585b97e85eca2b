"""Profile a model on this host (MEASURED), and find what in it may not port to an accelerator.

``profile(model, inputs)`` -> :class:`HostProfile`: time and FLOPs per ATen op and per module,
peak memory, parameter count, plus the portability findings from the captured graph.
``find_portability_issues(model, inputs)`` -> list of :class:`PortabilityFinding` on its own.
``input_rate(loader)`` -> :class:`InputRate`: the samples per second your input pipeline delivers here, for
``input_rate=`` of ``ak.compile`` and ``ak.Session``.
Figures for a profile are in :mod:`accelkit.profiler.figures`.
"""

from accelkit.profiler.host import HostProfile, ModuleRow, OpRow, profile
from accelkit.profiler.input import InputRate, input_rate
from accelkit.profiler.portability import KINDS, PortabilityFinding, find_portability_issues

__all__ = [
    "KINDS",
    "HostProfile",
    "InputRate",
    "ModuleRow",
    "OpRow",
    "PortabilityFinding",
    "find_portability_issues",
    "input_rate",
    "profile",
]
