"""How long the real toolchain would take to compile a program, and what makes it compile again.

On the real machines compiling is a step you wait for: ALCF's AI-testbed user guide reports SambaNova UNet
compiles of 358 to 1,844 s, and a SambaFlow PEF, a Cerebras executable, a PopART executable or a GroqFlow
build is made for one input shape, so a new batch size means a new compile. accelkit compiles in seconds on
this CPU; this module models the wait a learner will meet and names the change that triggers it. It reads the
``CompiledProgram`` (kernels, batch, precision, chips, inputs) and never re-derives them.

The per-family constants (each family's ``compile_cost`` in :mod:`accelkit.families`) are **illustrative**: no vendor publishes a compile-time model. They were chosen so
that the zoo's UNet2D, trained on one sn40l, lands inside ALCF's 358-1,844 s range, and the other families
keep the order of magnitude their tutorials describe (minutes, not hours). Treat the figure as a scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accelkit.families import model_for

JIT = ("nothing ahead of time: eager PyTorch runs kernels precompiled in the library; torch.compile, the default "
       "stack on a GPU, compiles just in time during the first steps, a wait accelkit does not model")

ALCF_SOURCE = ("ALCF AI Testbed user guide, SambaNova example programs (UNet compile times 358-1,844 s), "
               "docs.alcf.anl.gov/ai-testbed/sambanova/ (figures as the guide quoted them; the page changes with each SDK release)")

# The CompiledProgram fields a compiled artifact is specialised to; changing any one means a new compile.
RECOMPILE_TRIGGERS: dict[str, str] = {
    "batch_size": "the batch size",                # the artifact is compiled for exactly one batch
    "micro_batch": "the micro-batch size",         # SambaFlow -mb, PopTorch gradient accumulation
    "input_shapes": "an input shape or dtype",     # a new sequence length or image size
    "precision": "the precision",
    "chips": "the chip count or parallel split",
    "training": "training versus inference",       # backward and optimizer sections compiled in or out
    "fusion_level": "the fusion level",            # SambaFlow o0 / o1
}
NOT_TRIGGERS = ("the weights (a checkpoint loads into the same artifact)",
                "the learning rate and other optimizer hyper-parameters held as tensors",
                "the data (new batches of the same shape)")


@dataclass(frozen=True)
class CompileTime:
    """A modelled compile time: ``seconds`` on the real toolchain, never measured here."""

    target: str
    family: str
    kernels: int
    seconds: float
    artifact: str
    assumptions: str

    def __str__(self) -> str:
        if self.seconds == 0:
            return f"{self.target}: no ahead-of-time compile ({self.artifact})"
        return (f"{self.target}: about {self.seconds:,.0f} s (MODELLED, {self.kernels} kernels) to build "
                f"{self.artifact}; built again when {_either(list(RECOMPILE_TRIGGERS.values())[:4])} changes")


def _either(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " or " + items[-1]


def compile_time(program: Any) -> CompileTime:
    """The modelled wall time the real toolchain would take to compile ``program`` (a CompiledProgram)."""
    family = program.spec.family
    cost = model_for(family).compile_cost
    kernels = len(program.kernels) * max(1, program.parallel.model_shards)  # each shard is compiled
    if cost is None:
        return CompileTime(program.target, family, kernels, 0.0, JIT, "eager: no ahead-of-time compile")
    seconds = cost.fixed_s + cost.per_kernel_s * kernels
    how = (f"illustrative: {cost.fixed_s:.0f} s + {cost.per_kernel_s:.0f} s per fused kernel; scale from "
           f"{ALCF_SOURCE}")
    return CompileTime(program.target, family, kernels, seconds, cost.artifact, how)


def signature(program: Any) -> dict[str, Any]:
    """What ``program`` is specialised to, by the names of :data:`RECOMPILE_TRIGGERS`."""
    return {
        "batch_size": program.batch_size,
        "micro_batch": program.micro_batch,
        "input_shapes": {k: (tuple(m.shape), m.dtype) for k, m in program.graph.inputs.items()},
        "precision": program.precision,
        "chips": (program.chips, str(program.parallel)),
        "training": program.training,
        "fusion_level": program.fusion_level,
    }


def recompile_reasons(before: Any, after: Any) -> list[str]:
    """Why ``after`` could not reuse ``before``'s artifact: one line per changed trigger ([] = reuse it)."""
    a, b = signature(before), signature(after)
    return [f"{RECOMPILE_TRIGGERS[k]}: {a[k]} -> {b[k]}" for k in RECOMPILE_TRIGGERS if a[k] != b[k]]


__all__ = ["NOT_TRIGGERS", "RECOMPILE_TRIGGERS", "CompileTime", "compile_time", "recompile_reasons", "signature"]
