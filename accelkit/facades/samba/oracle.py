"""The ``test`` subcommand's check: every RDU step against the same step in plain PyTorch on this CPU.

SambaFlow's ``test`` command runs the app on the RDU and on the CPU and compares the outputs. Here
the RDU session's numerics *are* PyTorch on this CPU, so the comparison says what the session adds:
micro-batching (gradients summed over micro-batches instead of one big batch, which reorders the
floating-point sums) and, in bf16, 16-bit rounding. The reference is a copy of the model and its
optimizer, stepped with the whole batch in fp32 before the session steps the original.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from accelkit.graph.values import compare, tensor_leaves
from accelkit.runtime.session import TOLERANCE

FP32_ACCUMULATION_TOLERANCE = 1e-5  # relative: fp32 sums reordered by micro-batch accumulation


def reference_step(model: nn.Module, optimizer: torch.optim.Optimizer | None, inputs: tuple[Any, ...],
                   sections: Sequence[str], grad: torch.Tensor | None = None) -> tuple[list[torch.Tensor], nn.Module]:
    """The step in plain PyTorch on copies of ``model`` and ``optimizer``: (outputs, the stepped copy). The
    backward pass starts from the first scalar output, or from the first output with gradient ``grad`` (an
    app-set ``sn_grad``)."""
    ref_model, ref_opt = copy.deepcopy((model, optimizer))  # one memo: the copy steps the copy's parameters
    training = "bckwd" in sections
    was = ref_model.training
    ref_model.train(training)
    with torch.random.fork_rng(), torch.set_grad_enabled(training):
        out = ref_model(*inputs)
        if training:
            if grad is not None:
                tensor_leaves(out)[0].backward(grad.reshape(tensor_leaves(out)[0].shape))
            else:
                next(t for t in tensor_leaves(out) if t.dim() == 0).backward()
    if "opt" in sections and ref_opt is not None:
        ref_opt.step()
    ref_model.train(was)
    return [t.detach() for t in tensor_leaves(out)], ref_model


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return compare(a, b).max_rel  # the one comparator (accelkit.graph.values)


@dataclass
class OracleCheck:
    """Running maxima of the relative difference between the RDU session and plain PyTorch."""

    precision: str
    steps: int = 0
    max_output_error: float = 0.0
    max_weight_error: float = 0.0

    @property
    def tolerance(self) -> float:
        return max(TOLERANCE[self.precision], FP32_ACCUMULATION_TOLERANCE)

    @property
    def passed(self) -> bool:
        return max(self.max_output_error, self.max_weight_error) <= self.tolerance

    def add(self, outputs: list[torch.Tensor], reference: list[torch.Tensor], model: nn.Module,
            ref_model: nn.Module) -> None:
        self.steps += 1
        for a, b in zip(outputs, reference, strict=True):
            self.max_output_error = max(self.max_output_error, _rel(a, b))
        for (_, p), (_, q) in zip(model.named_parameters(), ref_model.named_parameters(), strict=True):
            self.max_weight_error = max(self.max_weight_error, _rel(p.detach(), q.detach()))

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        return (f"test vs plain PyTorch on this CPU (the oracle), {self.steps} steps: max relative error "
                f"outputs {self.max_output_error:.3g}, weights after the step {self.max_weight_error:.3g}; "
                f"tolerance {self.tolerance:.0e} ({self.precision}) -> {verdict}")
