"""What a Cerebras system takes as input that PyTorch on this CPU refuses, and how the CSX backend takes it here.

The 2.0 Model Zoo's loaders shape their batches for the system when ``cstorch.use_cs()``
(modelzoo/fc_mnist/pytorch/data.py, release 2.0): images cast to float16 and class labels as int32.

- **16-bit inputs to an fp32 model.** The system trains in mixed precision (16-bit inputs to the arithmetic,
  fp32 weights and accumulation: docs.cerebras.net, "Control numerical precision level"), so its compiler takes
  a float16 batch into a model whose weights are fp32. On this CPU PyTorch refuses a float16 input to an fp32
  ``Linear``; the CSX backend therefore runs the program in that 16-bit precision (autocast, as every 16-bit
  chip is emulated here) and models the wafer's clock in it: :func:`half_dtype_of`; the graph the compiler
  captures is the fp32 model's (:func:`for_capture`).
- **int32 class labels.** The system's losses take int32 labels; PyTorch's ``nll_loss`` / ``cross_entropy``
  on a CPU want int64. Inside a traced step on the CSX backend those labels are widened to int64 (the same
  values), as the SambaFlow facade widens its apps' int32 labels: :class:`SystemLabels`.

The CPU backend takes neither, as cstorch's own CPU backend does not (the Model Zoo's loaders make float32
inputs and int64 labels for it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

HALF_INPUTS = {torch.float16: "fp16", torch.bfloat16: "bf16"}  # a 16-bit input dtype -> accelkit's precision name


def half_dtype_of(args: Any) -> str | None:
    """accelkit's precision name of the first 16-bit floating tensor in ``args`` (nested tuples, lists and dicts
    searched, as a Model Zoo batch is a tuple of tensors), or None when there is none."""
    if isinstance(args, torch.Tensor):
        return HALF_INPUTS.get(args.dtype)
    values = args.values() if isinstance(args, dict) else args if isinstance(args, (list, tuple)) else ()
    for v in values:
        found = half_dtype_of(v)
        if found is not None:
            return found
    return None


def for_capture(inputs: Any, model: torch.nn.Module) -> Any:
    """``inputs`` as the compiler captures them: 16-bit floating tensors fed to a model whose weights are fp32 are
    cast to fp32 (the program's precision is the run's, set apart: the graph itself is the fp32 model's, as
    when a script sets ``cstorch.amp.set_half_dtype`` and feeds fp32); unchanged for a ``model.half()`` model."""
    weights = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    if weights != torch.float32:
        return inputs
    return torch.utils._pytree.tree_map_only(
        torch.Tensor, lambda t: t.float() if t.dtype in HALF_INPUTS else t, inputs)


_LOSSES: tuple[Callable[..., Any], ...] = (torch.nn.functional.nll_loss, torch.nn.functional.cross_entropy)
_NARROW_LABELS = (torch.int32, torch.int16)


class SystemLabels(TorchFunctionMode):
    """Within the block, ``nll_loss`` / ``cross_entropy`` (and the ``nn.NLLLoss`` / ``nn.CrossEntropyLoss``
    modules that call them) take int32 / int16 class labels, widened to int64 with the same values."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func in _LOSSES:
            if len(args) > 1 and isinstance(args[1], torch.Tensor) and args[1].dtype in _NARROW_LABELS:
                args = (args[0], args[1].long(), *args[2:])
            target = kwargs.get("target")
            if isinstance(target, torch.Tensor) and target.dtype in _NARROW_LABELS:
                kwargs = {**kwargs, "target": target.long()}
        return func(*args, **kwargs)


__all__ = ["HALF_INPUTS", "SystemLabels", "for_capture", "half_dtype_of"]
