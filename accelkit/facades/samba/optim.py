"""Optimizers as SambaFlow names them (``sambaflow.samba.optim``).

On the RDU the optimizer step is compiled into the PEF as its own ``opt`` section, next to
``fwd`` and ``bckwd``; passing an optimizer to ``samba.session.compile`` is what makes the
program a training program. Here the update itself is PyTorch's (same arguments, same numbers);
the ``opt`` section's time on the clock is modelled. ``max_grad_norm`` (SambaFlow's gradient clipping,
the ``GRADNORM`` section of generative_nlp) is honoured: the optimizer's gradients are clipped to that
norm before its update. An app may pass a list of optimizers (generative_nlp builds three, for
embeddings and for parameters with and without weight decay): :class:`Optimizers` steps them as one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch


def _clip_before_step(optimizer: torch.optim.Optimizer, max_grad_norm: float | None) -> None:
    """Clip ``optimizer``'s gradients to ``max_grad_norm`` before each of its updates (a step pre-hook)."""
    if max_grad_norm is None:
        return
    if not isinstance(max_grad_norm, (int, float)) or max_grad_norm <= 0:
        from accelkit.facades.samba.tensor import SambaError

        raise SambaError(f"max_grad_norm must be a positive number, got {max_grad_norm!r}", fix="e.g. max_grad_norm=1.0")

    def clip(opt: torch.optim.Optimizer, *_: Any) -> None:
        params = [p for g in opt.param_groups for p in g["params"] if p.grad is not None]
        if params:
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)

    optimizer.register_step_pre_hook(clip)


class SGD(torch.optim.SGD):
    """Stochastic gradient descent, optionally with momentum (``sambaflow.samba.optim.SGD``);
    ``max_grad_norm`` clips the gradients first."""

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, max_grad_norm: float | None = None) -> None:
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov)
        self.max_grad_norm = max_grad_norm
        _clip_before_step(self, max_grad_norm)


class AdamW(torch.optim.AdamW):
    """Adam with decoupled weight decay (``sambaflow.samba.optim.AdamW``); ``max_grad_norm`` clips the gradients
    first."""

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, amsgrad: bool = False, max_grad_norm: float | None = None) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)
        self.max_grad_norm = max_grad_norm
        _clip_before_step(self, max_grad_norm)


class Optimizers(torch.optim.Optimizer):
    """Several optimizers stepped as one, as SambaFlow steps the list an app passes to ``session.compile`` /
    ``utils.trace_graph``: ``param_groups`` are theirs (a ``hyperparam_dict`` reaches every one)."""

    def __init__(self, optimizers: Sequence[torch.optim.Optimizer]) -> None:
        self.optimizers = list(optimizers)
        if not self.optimizers or not all(isinstance(o, torch.optim.Optimizer) for o in self.optimizers):
            from accelkit.facades.samba.tensor import SambaError

            raise SambaError(f"expected optimizers, got {optimizers!r}", fix="pass an optimizer or a list of them")
        params = [p for o in self.optimizers for g in o.param_groups for p in g["params"]]
        super().__init__(params, {})
        self.param_groups = [g for o in self.optimizers for g in o.param_groups]

    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        for o in self.optimizers:
            o.step()
        return None

    def zero_grad(self, set_to_none: bool = True) -> None:
        for o in self.optimizers:
            o.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return {"optimizers": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for o, sd in zip(self.optimizers, state_dict["optimizers"], strict=True):
            o.load_state_dict(sd)

    def __repr__(self) -> str:
        return f"Optimizers({', '.join(type(o).__name__ for o in self.optimizers)})"


def as_optimizer(optim: Any) -> torch.optim.Optimizer | None:
    """An app's ``optim`` argument (None, an optimizer, or a list of them) as one optimizer."""
    if optim is None or isinstance(optim, torch.optim.Optimizer):
        return optim
    if isinstance(optim, (list, tuple)):
        return optim[0] if len(optim) == 1 else Optimizers(optim)
    from accelkit.facades.samba.tensor import SambaError

    raise SambaError(f"optim must be an optimizer or a list of them, not {type(optim).__name__}",
                     fix="e.g. samba.optim.AdamW(model.parameters(), lr=1e-3)")


def optimizer_name(optim: torch.optim.Optimizer) -> str:
    return " + ".join(type(o).__name__ for o in optim.optimizers) if isinstance(optim, Optimizers) \
        else type(optim).__name__


__all__ = ["SGD", "AdamW", "Optimizers", "as_optimizer", "optimizer_name"]
