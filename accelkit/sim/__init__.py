"""The performance model: one execution model per architecture family (modelled, never measured)."""

from accelkit.sim.estimate import estimate, rates
from accelkit.sim.report import KernelTime, PerfReport, TimelineEvent

__all__ = ["KernelTime", "PerfReport", "TimelineEvent", "estimate", "rates"]
