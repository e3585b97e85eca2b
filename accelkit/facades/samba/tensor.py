"""SambaFlow's named tensors and model conversion: ``samba.randn(..., name=, batch_dim=)``.

A SambaFlow app declares its inputs as *named* tensors with a *batch dimension*: the compiler
turns each name into an input port of the compiled program, and the batch dimension tells it which
axis to split into micro-batches. Here a :class:`SambaTensor` is an ordinary ``torch.Tensor`` (it
works in every PyTorch op, and ops on it return plain tensors) that also carries those attributes:

    x = samba.randn(32, 20, name="features", batch_dim=0)   # sambaflow.samba.randn
    x.sn_name, x.batch_dim      # 'features', 0
    x.rdu()                     # "move to the RDU": the simulated RDU's memory is this host's, so a no-op
    samba.to_torch(x)           # a plain torch.Tensor again (sambaflow.samba.to_torch)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from accelkit.errors import AccelkitError

CONVERTED = "_accelkit_samba_model"  # set on a model by from_torch_model_


class SambaError(AccelkitError, ValueError):
    """A SambaFlow-style app step that cannot work as written: says what, where, and the fix."""


class SambaTensor(torch.Tensor):
    """A ``torch.Tensor`` with SambaFlow's attributes (the counterpart of ``sambaflow.samba.SambaTensor``).

    ``sn_name``: the input's name in the compiled program; ``batch_dim``: the axis that holds the
    samples (``None`` for tensors without one); ``sn_grad``: the gradient the RDU session holds for
    this tensor (set on a traced loss output when the PEF initialises output gradients).
    """

    # Ops on a SambaTensor return plain tensors: the name belongs to the input, not to what is computed from it.
    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    sn_name: str | None = None
    batch_dim: int | None = None
    sn_grad: torch.Tensor | None = None

    def rdu(self) -> SambaTensor:
        """Where SambaFlow copies the tensor to the RDU. The simulated RDU shares this host's memory: no copy."""
        return self

    # SambaFlow apps convert a named input and keep using it, e.g. hello_world/logreg.py's
    # `samba.randn(..., name='image', batch_dim=0).bfloat16().float()`: conversions keep the name.
    def to(self, *args: Any, **kwargs: Any) -> SambaTensor:  # type: ignore[override]
        return self._renamed(self.as_subclass(torch.Tensor).to(*args, **kwargs))

    def float(self, *args: Any, **kwargs: Any) -> SambaTensor:  # type: ignore[override]
        return self._renamed(self.as_subclass(torch.Tensor).float(*args, **kwargs))

    def bfloat16(self, *args: Any, **kwargs: Any) -> SambaTensor:  # type: ignore[override]
        return self._renamed(self.as_subclass(torch.Tensor).bfloat16(*args, **kwargs))

    def half(self, *args: Any, **kwargs: Any) -> SambaTensor:  # type: ignore[override]
        return self._renamed(self.as_subclass(torch.Tensor).half(*args, **kwargs))

    def _renamed(self, data: torch.Tensor) -> SambaTensor:
        t = named(data, self.sn_name, self.batch_dim)
        t.requires_grad_(data.requires_grad)
        return t

    def __deepcopy__(self, memo: dict[int, Any]) -> SambaTensor:
        copy = named(self.as_subclass(torch.Tensor).detach().clone(), self.sn_name, self.batch_dim)
        copy.requires_grad_(self.requires_grad)
        copy.sn_grad = self.sn_grad
        memo[id(self)] = copy
        return copy


def named(data: torch.Tensor, name: str | None, batch_dim: int | None) -> SambaTensor:
    """``data`` (no copy) as a :class:`SambaTensor` called ``name`` with its samples along ``batch_dim``."""
    if name is not None and (not isinstance(name, str) or not name):
        raise SambaError(f"a tensor name must be a non-empty string, got {name!r}", fix="e.g. name='features'")
    if batch_dim is not None and not -data.dim() <= batch_dim < max(1, data.dim()):
        raise SambaError(f"batch_dim={batch_dim} is outside a tensor of shape {tuple(data.shape)}",
                         fix=f"use an axis in 0..{data.dim() - 1} (usually 0)")
    t = torch.Tensor._make_subclass(SambaTensor, data.detach(), data.requires_grad)
    t.sn_name = name
    t.batch_dim = batch_dim
    t.sn_grad = None
    return t


def _size(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        return tuple(size[0])
    return tuple(size)


def randn(*size: Any, name: str | None = None, batch_dim: int | None = None, dtype: torch.dtype | None = None,
          requires_grad: bool = False) -> SambaTensor:
    """``torch.randn(*size)`` as a named input tensor (``sambaflow.samba.randn``)."""
    t = named(torch.randn(_size(size), dtype=dtype), name, batch_dim)
    t.requires_grad_(requires_grad)
    return t


def randint(*args: Any, name: str | None = None, batch_dim: int | None = None,
            dtype: torch.dtype = torch.int64) -> SambaTensor:
    """``torch.randint(high, size)`` or ``torch.randint(low, high, size)`` as a named input tensor
    (``sambaflow.samba.randint``), e.g. labels: ``samba.randint(classes, (batch,), name="labels", batch_dim=0)``."""
    return named(torch.randint(*args, dtype=dtype), name, batch_dim)


def from_torch_tensor(t: torch.Tensor, name: str | None = None, batch_dim: int | None = None) -> SambaTensor:
    """Wrap an existing tensor (no copy) as a named tensor (``sambaflow.samba.from_torch_tensor``)."""
    if not isinstance(t, torch.Tensor):
        raise SambaError(f"from_torch_tensor needs a torch.Tensor, not {type(t).__name__}",
                         fix="torch.as_tensor(value) first")
    return named(t, name, batch_dim)


def to_torch(t: Any) -> torch.Tensor:
    """A plain ``torch.Tensor`` with the same values (``sambaflow.samba.to_torch``)."""
    if isinstance(t, torch.Tensor):
        return t.as_subclass(torch.Tensor).detach() if isinstance(t, SambaTensor) else t.detach()
    return torch.as_tensor(t)


def plain(t: Any) -> Any:
    """``t`` without the SambaTensor subclass (what accelkit's compiler and session are given)."""
    return t.as_subclass(torch.Tensor) if isinstance(t, SambaTensor) else t


WIDENED = (torch.int16, torch.int32)  # integer inputs the RDU takes as they are; PyTorch on a CPU wants int64


def for_cpu(t: Any) -> Any:
    """``plain(t)``, with int16 / int32 tensors widened to int64 (same values): SambaFlow apps feed token ids and
    labels as int32 / int16 (generative_nlp), which the RDU's embedding and loss take, and PyTorch's
    ``nn.Embedding`` (int16) and ``CrossEntropyLoss`` (both) on this CPU do not."""
    t = plain(t)
    return t.long() if isinstance(t, torch.Tensor) and t.dtype in WIDENED else t


def addmm(input: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, is_transposed: bool = False,  # noqa: A002
          beta: float = 1.0, alpha: float = 1.0) -> torch.Tensor:
    """``samba.addmm(input, mat1, mat2, is_transposed=False)``: ``beta * input + alpha * mat1 @ mat2``, with ``mat2``
    stored transposed when ``is_transposed`` (``mat1 @ mat2.T``; generative_nlp's GPT-2 patch keeps Conv1D weights
    that way). ``mat1`` may carry batch dimensions."""
    product = mat1 @ (mat2.transpose(-1, -2) if is_transposed else mat2)
    return (input if beta == 1 else beta * input) + (product if alpha == 1 else alpha * product)


def from_torch_model_(model: nn.Module) -> nn.Module:
    """Prepare ``model`` for the RDU in place (``sambaflow.samba.from_torch_model_``) and return it.

    SambaFlow converts the parameters into RDU tensors here. accelkit keeps them as they are (the
    numerics run on this CPU) and names each parameter (``p.sn_name``) after its place in the model;
    ``session.compile`` and ``utils.trace_graph`` refuse a model that skipped this step, as SambaFlow does.
    """
    if not isinstance(model, nn.Module):
        raise SambaError(f"from_torch_model_ needs an nn.Module, not {type(model).__name__}",
                         fix="pass the model object, e.g. samba.from_torch_model_(MyNet())")
    for name, p in model.named_parameters():
        p.sn_name = name  # type: ignore[attr-defined]
    setattr(model, CONVERTED, True)
    return model


def require_converted(model: nn.Module, step: str) -> None:
    if not isinstance(model, nn.Module):
        raise SambaError(f"{step} needs the nn.Module, not {type(model).__name__}", fix="pass the model object")
    if not getattr(model, CONVERTED, False):
        raise SambaError(f"{step}: {type(model).__name__} was not prepared for the RDU",
                         fix="call samba.from_torch_model_(model) after building the model, before compiling")
