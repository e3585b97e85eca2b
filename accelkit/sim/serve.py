"""Moved to :mod:`accelkit.workflow.serve` (serving composes compiles and the performance model: a workflow);
this old import path keeps working."""

from accelkit.workflow.serve import PhaseWork, ServingCapacityError, ServingEstimate, serve, serve_with

__all__ = ["PhaseWork", "ServingCapacityError", "ServingEstimate", "serve", "serve_with"]
