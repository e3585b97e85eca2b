"""What every entry point does with a model's inputs and outputs, in one place.

    split_inputs(example_inputs)      positional and keyword inputs, the one way accelkit reads them
    named_inputs(model, example)      forward's argument names -> the example values
    tensor_leaves(value)              the tensors inside any nest of tuples, lists, dicts, model outputs
    compare(got, want)                how far two outputs (or two nests of them) are apart: one Difference

``ak.capture``, ``ak.check``, the profiler, ``ak.port``, the SambaFlow oracle and the dashboard all read
inputs with :func:`split_inputs` and measure output differences with :func:`compare`, so "the same inputs"
and "the same outputs" mean the same thing everywhere.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_flatten

from accelkit.errors import AccelkitError


def split_inputs(example_inputs: Any, *, allow_none: bool = True) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Positional and keyword inputs of one forward call: a tensor is one positional input, a tuple or list
    the positional inputs, a mapping the keyword inputs (``None``: no inputs, where ``allow_none``)."""
    if example_inputs is None and allow_none:
        return (), {}
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,), {}
    if isinstance(example_inputs, Mapping):
        return (), dict(example_inputs)
    if isinstance(example_inputs, tuple | list):
        return tuple(example_inputs), {}
    raise AccelkitError(
        f"example_inputs must be a tensor, a tuple of tensors or a dict of keyword tensors, not "
        f"{type(example_inputs).__name__}",
        fix="pass the inputs one forward call takes, e.g. (torch.randn(8, 16),)")


def named_inputs(model: nn.Module | None, example_inputs: Any) -> dict[str, Any]:
    """Forward's argument names -> the example values (``arg0``, ``arg1``... when names are unknown)."""
    args, kwargs = split_inputs(example_inputs)
    if model is not None:
        try:
            bound = inspect.signature(model.forward).bind(*args, **kwargs)
            out: dict[str, Any] = {}
            for name, value in bound.arguments.items():
                if isinstance(value, tuple) and name not in kwargs and len(args) > len(out):  # *args
                    out.update({f"{name}{i}": v for i, v in enumerate(value)})
                else:
                    out[name] = value
            return out
        except (TypeError, ValueError):
            pass
    return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}


def tensor_leaves(value: Any, single: bool = False, _depth: int = 0) -> Any:
    """The tensors inside ``value`` in order, as a tuple: tuples, lists, dicts, transformers' ModelOutputs, and
    the attributes of plain Python objects (a few levels deep); strings, numbers and ``None`` are dropped.
    With ``single``, one tensor comes back as itself."""
    if isinstance(value, torch.Tensor):
        return value if single else (value,)
    if hasattr(value, "to_tuple") and callable(value.to_tuple):  # transformers ModelOutput
        value = value.to_tuple()
    leaves: list[torch.Tensor] = []
    for x in tree_flatten(value)[0]:
        if isinstance(x, torch.Tensor):
            leaves.append(x)
        elif hasattr(x, "__dict__") and not isinstance(x, (nn.Module, type)) and _depth < 3:
            leaves.extend(tensor_leaves(list(vars(x).values()), _depth=_depth + 1))
    return leaves[0] if single and len(leaves) == 1 else tuple(leaves)


@dataclass(frozen=True)
class Difference:
    """How far ``got`` is from ``want``, over every tensor in them (computed in float64).

    ``max_abs``: the largest |got - want|. ``max_rel``: the largest |got - want| of a tensor over the largest
    |want| of that tensor (the absolute difference where that is 0; 1 where integer or boolean tensors differ). ``same_structure``: both hold
    the same number of tensors with the same shapes (when False, the other fields are meaningless). NaN in
    the same place in both counts as equal; NaN in one only counts as an infinite difference.
    """

    max_abs: float
    max_rel: float
    same_structure: bool
    shapes_got: tuple[tuple[int, ...], ...]
    shapes_want: tuple[tuple[int, ...], ...]

    def within(self, atol: float, rtol: float = 0.0) -> bool:
        """True when the structure matches and the difference is within ``atol`` or ``rtol``."""
        return self.same_structure and (self.max_abs <= atol or self.max_rel <= rtol)


def compare(got: Any, want: Any) -> Difference:
    """The :class:`Difference` between two outputs (tensors or nests of them)."""
    g, w = tensor_leaves(got), tensor_leaves(want)
    shapes_g = tuple(tuple(t.shape) for t in g)
    shapes_w = tuple(tuple(t.shape) for t in w)
    if shapes_g != shapes_w:
        return Difference(float("inf"), float("inf"), False, shapes_g, shapes_w)
    worst_abs = worst_rel = 0.0
    for a, b in zip(g, w, strict=True):
        if not a.numel():
            continue
        if not (a.is_floating_point() or a.is_complex() or b.is_floating_point() or b.is_complex()):
            differ = not torch.equal(a.detach().cpu(), b.detach().cpu())
            worst_abs = max(worst_abs, float((a.detach().cpu().double() - b.detach().cpu().double()).abs().max()))
            worst_rel = max(worst_rel, 1.0 if differ else 0.0)
            continue
        a64, b64 = a.detach().cpu().double(), b.detach().cpu().double()
        both_nan = torch.isnan(a64) & torch.isnan(b64)
        a64, b64 = torch.where(both_nan, 0.0, a64), torch.where(both_nan, 0.0, b64)
        diff = (a64 - b64).abs()
        diff = torch.where(torch.isnan(diff), float("inf"), diff)  # NaN in one of them only
        d = float(diff.max())
        scale = float(b64.abs().max())
        worst_abs = max(worst_abs, d)
        worst_rel = max(worst_rel, d / (scale or 1.0))  # an all-zero reference: the absolute difference
    return Difference(worst_abs, worst_rel, True, shapes_g, shapes_w)


__all__ = ["Difference", "compare", "named_inputs", "split_inputs", "tensor_leaves"]
