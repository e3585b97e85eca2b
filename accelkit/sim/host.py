"""The host's measurements live in :mod:`accelkit.cost.host`; this name is kept for older imports."""

from accelkit.cost.host import dispatch_overhead_s, measure_forward_s, op_time_s, view_op_s

__all__ = ["dispatch_overhead_s", "measure_forward_s", "op_time_s", "view_op_s"]
