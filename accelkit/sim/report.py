"""``PerfReport`` lives in :mod:`accelkit.cost.report`; this name is kept for older imports."""

from accelkit.cost.report import KernelTime, PerfReport, TimelineEvent, fmt_s

__all__ = ["KernelTime", "PerfReport", "TimelineEvent", "fmt_s"]
