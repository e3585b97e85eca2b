"""Outputs a device program cannot hand back: forward returning something that is not a tensor.

torch.export accepts Python constants (a string, an int) among the outputs, so capture does not catch them; an
accelerator runtime hands back device buffers only. Found by running forward once on fake tensors (no real
arithmetic), with the ``return`` line that produced the value. ``ak.check`` and the profiler both ask here.
"""

from __future__ import annotations

import inspect
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from accelkit.errors import source_label
from accelkit.graph.ir import Graph
from accelkit.graph.values import split_inputs


@dataclass(frozen=True)
class NonTensorOutputs:
    """What forward returned that is not a tensor: a sentence, how many values, the ``return`` line."""

    detail: str
    count: int
    source: str | None


_SEEN: weakref.WeakKeyDictionary[nn.Module, dict[Any, NonTensorOutputs | None]] = weakref.WeakKeyDictionary()


def _signature(model: nn.Module, example_inputs: Any) -> Any:
    """What decides the kinds of values forward returns: the model's modules (a port replaces some) and its
    inputs' structure, dtypes and ranks; not their sizes, so a sweep over sequence lengths checks once."""
    from torch.utils._pytree import tree_flatten

    leaves, spec = tree_flatten(split_inputs(example_inputs))
    kinds = tuple((t.dtype, t.dim(), t.device.type) if isinstance(t, torch.Tensor) else
                  (type(t), t if isinstance(t, (int, float, str, bool, type(None))) else id(t)) for t in leaves)
    modules = tuple((name, id(m), getattr(m.forward, "__func__", m.forward), m.training)
                    for name, m in model.named_modules())
    return str(spec), kinds, modules


def non_tensor_outputs(model: nn.Module, example_inputs: Any, graph: Graph | None = None) -> NonTensorOutputs | None:
    """The non-tensor values forward returns on ``example_inputs`` (checked on fake tensors), or None. Checked
    once per model and input signature (see :func:`_signature`).

    ``graph``: this model's capture on these inputs. Its export already lists forward's outputs, so a graph
    whose outputs are all tensors answers None without running forward again (a 70B model's fake forward
    takes seconds); forward runs only to find the ``return`` line of what is not a tensor.
    """
    if graph is not None and not graph.non_tensor_outputs:
        return None
    seen = _SEEN.setdefault(model, {})
    key = _signature(model, example_inputs)
    if key not in seen:
        if len(seen) >= 8:  # a few signatures per model (serving alternates prefill and decode); drop the oldest
            del seen[next(iter(seen))]
        seen[key] = _non_tensor_outputs(model, example_inputs)
    return seen[key]


def _non_tensor_outputs(model: nn.Module, example_inputs: Any) -> NonTensorOutputs | None:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._pytree import keystr, tree_flatten_with_path, tree_map

    fake = FakeTensorMode(allow_non_fake_inputs=True)
    args, kwargs = split_inputs(example_inputs)

    def run() -> Any:
        fargs, fkw = tree_map(lambda t: fake.from_tensor(t) if isinstance(t, torch.Tensor) else t, (args, kwargs))
        was = model.training
        model.eval()
        try:
            with fake, torch.no_grad():
                return model(*fargs, **fkw)
        finally:
            model.train(was)

    try:
        out = run()
    except Exception:  # capture succeeded; a failure on fake tensors here says nothing about ports
        return None
    leaves, _ = tree_flatten_with_path(out)
    bad = [f"output{keystr(path)} is {type(v).__name__}" for path, v in leaves if not isinstance(v, torch.Tensor)]
    if not bad:
        return None
    detail = (f"{type(model).__name__}.forward returns a value that is not a tensor: {'; '.join(bad[:3])}"
              + (f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""))
    return NonTensorOutputs(detail, len(bad), _return_line(model, run))


def _return_line(model: nn.Module, run: Callable[[], Any]) -> str | None:
    """``file:line`` of the ``return`` that forward executed (its ``def`` line if that is unknown)."""
    forward = inspect.unwrap(type(model).forward)
    code = getattr(forward, "__code__", None)
    if code is None:
        return None
    lines: list[int] = []

    def on_event(frame: Any, event: str, _arg: Any) -> None:
        if event == "return" and frame.f_code is code:
            lines.append(frame.f_lineno)

    previous = sys.getprofile()
    sys.setprofile(on_event)
    try:
        run()
    except Exception:
        pass
    finally:
        sys.setprofile(previous)
    line = lines[-1] if lines else code.co_firstlineno
    return source_label(code.co_filename, line)


__all__ = ["NonTensorOutputs", "non_tensor_outputs"]
