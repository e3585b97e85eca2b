"""``compare_stacks``: one model on one chip under each software stack its family has, over batch sizes.

On a GPU the same model runs very differently in eager PyTorch (the host issues every op, one by one: at a
small batch the host, not the GPU, sets the pace), compiled with torch.compile (fused kernels, the step launched
as one CUDA graph) and in a serving engine. A learner's first run on their own GPU is eager: this comparison
shows where the host's floor lies and how far a compiler moves it. Every figure is MODELLED.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from torch import nn

from accelkit import hardware
from accelkit.cost.report import PerfReport, fmt_s
from accelkit.errors import ArgumentError
from accelkit.families import model_for
from accelkit.workflow.compiling import compile


@dataclass(frozen=True)
class StackRow:
    """One stack at one batch size (MODELLED)."""

    stack: str
    batch: int
    step_s: float
    per_sample_s: float
    host_share: float  # the share of the step the chip waits for its host (eager issue, graph launch)
    bound: str  # what most of the step is spent on


@dataclass(frozen=True)
class StackComparison:
    """Every stack at every batch size, with the reports behind them (``reports[(stack, batch)]``)."""

    target: str
    precision: str
    training: bool
    rows: tuple[StackRow, ...]
    reports: dict[tuple[str, int], PerfReport]
    notes: dict[str, str]  # stack -> what it is

    label = "modelled"

    def row(self, stack: str, batch: int) -> StackRow:
        return next(r for r in self.rows if r.stack == stack and r.batch == batch)

    def table(self) -> str:
        lines = [f"{'stack':<9} {'batch':>6} {'step':>10} {'per sample':>11} {'host waits':>10}  bound"]
        for r in self.rows:
            lines.append(f"{r.stack:<9} {r.batch:>6} {fmt_s(r.step_s):>10} {fmt_s(r.per_sample_s):>11} "
                         f"{r.host_share:>10.0%}  {r.bound}")
        return "\n".join(lines)

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame([r.__dict__ for r in self.rows])

    def __str__(self) -> str:
        return self.table()


def compare_stacks(model: nn.Module, example_inputs: Any, *, target: str = "h100", precision: str = "bf16",
                   batch_sizes: Sequence[int] = (1, 8, 64), stacks: Iterable[str] | None = None,
                   training: bool = False) -> StackComparison:
    """Compile ``model`` for ``target`` under each stack (all its family has, or ``stacks``) at each batch size."""
    spec = hardware.get(target) if isinstance(target, str) else target
    family = model_for(spec.family)
    names = list(family.stack_names if stacks is None else stacks)
    batches = list(batch_sizes)
    if not names or not batches or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0
                                           for b in batches):
        raise ArgumentError(f"compare_stacks needs at least one stack and whole batch sizes above 0 (got stacks="
                            f"{names}, batch_sizes={batches})", fix="e.g. batch_sizes=(1, 8, 64)")
    rows, reports = [], {}
    for stack in names:
        for b in batches:
            rep = compile(model, example_inputs, target=spec, precision=precision, batch_size=b, stack=stack,
                          training=training).report
            parts = rep.breakdown.parts_s
            step = rep.step_time_s
            rows.append(StackRow(stack, b, step, step / b, parts.get("host", 0.0) / step if step else 0.0,
                                 max(parts, key=lambda p: parts[p])))
            reports[(stack, b)] = rep
    return StackComparison(spec.name, precision, training, tuple(rows), reports,
                           {s: family.describe_stack(s) for s in names})


__all__ = ["StackComparison", "StackRow", "compare_stacks"]
