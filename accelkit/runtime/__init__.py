"""Step 5 of the workflow: run — real PyTorch numerics on a simulated accelerator clock."""

from accelkit.runtime.checkpoint import CheckpointError
from accelkit.runtime.loader import PrefetchLoader
from accelkit.runtime.session import Session, SessionError, SessionReport, StepResult

__all__ = ["CheckpointError", "PrefetchLoader", "Session", "SessionError", "SessionReport", "StepResult"]
