"""The goals every validation table is held to, in one place: ``ak.validate()``'s published cases and GPU-like
rows, the LLM-Inference-Bench rows and the H100 timings. Each table module reads its goal from here (and keeps
its ``GOAL_*`` names for readers); a goal changes here or nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Goal:
    """A table meets its goal when the median |predicted - reference| / reference is at most ``median_abs_error``
    and every row is within ``max_ratio`` of its reference (either way)."""

    median_abs_error: float
    max_ratio: float


PUBLISHED = Goal(0.15, 1.5)  # ak.validate(): the counted published cases
GPU_LIKE = Goal(0.15, 1.5)  # ak.validate(): published GPU-like training and inference rows (median only, reported)
SMALL_MODELS = Goal(0.15, 1.5)  # ak.validate(): the vendors' small-model throughputs (median only, reported)
LLM_BENCH = Goal(0.15, 1.5)  # LLM-Inference-Bench: every counted row of the systems accelkit has
MEASURED_H100 = Goal(0.10, 1.5)  # the timings taken on a real H100 (shared/reference/gpu_measured)

__all__ = ["GPU_LIKE", "Goal", "LLM_BENCH", "MEASURED_H100", "PUBLISHED", "SMALL_MODELS"]
