"""Optimizers and learning-rate schedules under Cerebras' names (``cstorch.optim``), on this CPU.

On the system the optimizer step is part of the compiled program (in weight streaming it runs where
the weights live, beside MemoryX); its time on the clock is modelled. The optimizers are PyTorch's; Cerebras'
``AdamW`` also takes ``correct_bias`` (True: PyTorch's bias-corrected update). The schedules take Cerebras'
arguments (``initial_learning_rate``, ``end_learning_rate``, ``total_iters``) and compute the rate in closed
form from the step count, as Cerebras' do.
"""

# no ``from __future__ import annotations``: the 2.x Model Zoo builds its config classes from these signatures'
# annotations (cerebras/modelzoo/config/utils.py, create_config_class), which must be real types, not strings
import abc
import inspect
import math
from collections.abc import Iterable
from typing import Any

import torch
from torch.optim.optimizer import ParamsT

from accelkit.facades.cerebras.clock import CerebrasError


class Optimizer(torch.optim.Optimizer, abc.ABC):  # noqa: B024 - cstorch's base declares no abstract method here
    """``cstorch.optim.Optimizer``: the base of Cerebras' optimizers (the Model Zoo's config lists its subclasses)."""


class SGD(torch.optim.SGD, Optimizer):
    """``cstorch.optim.SGD(params, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False)``."""

    def __init__(self, params: ParamsT, lr: float, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, maximize: bool = False) -> None:
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         nesterov=nesterov, maximize=maximize)


class Adam(torch.optim.Adam, Optimizer):
    """``cstorch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, amsgrad=False)``."""

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-6, weight_decay: float = 0.0, amsgrad: bool = False) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)


class AdamW(torch.optim.AdamW, Optimizer):
    """``cstorch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, correct_bias=True)``."""

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-6, weight_decay: float = 0.0, correct_bias: bool = True,
                 amsgrad: bool = False) -> None:
        if not correct_bias:
            raise CerebrasError("cstorch.optim.AdamW(correct_bias=False) skips Adam's bias correction, which "
                                "PyTorch's AdamW always applies", fix="use correct_bias=True (the default)")
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)


class Adafactor(Optimizer):
    """``cstorch.optim.Adafactor(params, lr, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta1=None,
    weight_decay=0.0, scale_parameter=True, relative_step=False, warmup_init=False)``: Shazeer and Stern's
    Adafactor as Cerebras runs it (the Model Zoo's T5 and Transformer configs). A matrix's second moment is kept
    factored (a row and a column average, ``exp_avg_sq_row`` / ``exp_avg_sq_col``), a vector's whole; the moment's
    decay is ``1 - step ** decay_rate``; each update is scaled down to an RMS of at most ``clip_threshold``, and with
    ``scale_parameter`` the rate is relative to the parameter's RMS (at least ``eps[1]``); ``beta1`` keeps a first
    moment of the updates. The rate comes from the run's schedule: ``relative_step`` (Adafactor's own
    ``1/sqrt(step)`` rate) and ``warmup_init`` are refused, as Cerebras' optimizer refuses them."""

    def __init__(self, params: ParamsT, lr: float, eps: tuple[float, float] = (1e-30, 1e-3),
                 clip_threshold: float = 1.0, decay_rate: float = -0.8, beta1: float | None = None,
                 weight_decay: float = 0.0, scale_parameter: bool = True, relative_step: bool = False,
                 warmup_init: bool = False) -> None:
        if relative_step or warmup_init:
            raise CerebrasError("cstorch.optim.Adafactor(relative_step=True / warmup_init=True) computes its own "
                                "rate from the step, which Cerebras' Adafactor does not support",
                                fix="leave relative_step and warmup_init False and give the rate with lr or a "
                                    "schedule (the Model Zoo's T5 configs use InverseSquareRootDecayLR)")
        super().__init__(params, dict(lr=lr, eps=tuple(eps), clip_threshold=clip_threshold, decay_rate=decay_rate,
                                      beta1=beta1, weight_decay=weight_decay, scale_parameter=scale_parameter,
                                      relative_step=relative_step, warmup_init=warmup_init))

    @staticmethod
    def _rms(t: torch.Tensor) -> torch.Tensor:
        return t.float().square().mean().sqrt()

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.float()
                state = self.state[p]
                factored = grad.dim() >= 2
                if not state:
                    state["step"] = torch.tensor(0.0)
                    if factored:
                        state["exp_avg_sq_row"] = grad.new_zeros(grad.shape[:-1])
                        state["exp_avg_sq_col"] = grad.new_zeros(grad.shape[:-2] + grad.shape[-1:])
                    else:
                        state["exp_avg_sq"] = torch.zeros_like(grad)
                    if group["beta1"] is not None:
                        state["exp_avg"] = torch.zeros_like(grad)
                state["step"] += 1
                decay = 1.0 - float(state["step"]) ** group["decay_rate"]
                squared = grad.square() + eps1
                if factored:
                    row, col = state["exp_avg_sq_row"], state["exp_avg_sq_col"]
                    row.mul_(decay).add_(squared.mean(dim=-1), alpha=1.0 - decay)
                    col.mul_(decay).add_(squared.mean(dim=-2), alpha=1.0 - decay)
                    update = ((row / row.mean(dim=-1, keepdim=True)).rsqrt().unsqueeze(-1)
                              * col.rsqrt().unsqueeze(-2) * grad)
                else:
                    state["exp_avg_sq"].mul_(decay).add_(squared, alpha=1.0 - decay)
                    update = state["exp_avg_sq"].rsqrt() * grad
                update /= torch.clamp(self._rms(update) / group["clip_threshold"], min=1.0)
                lr = group["lr"] * (torch.clamp(self._rms(p), min=eps2) if group["scale_parameter"] else 1.0)
                update *= lr
                if group["beta1"] is not None:
                    state["exp_avg"].mul_(group["beta1"]).add_(update, alpha=1.0 - group["beta1"])
                    update = state["exp_avg"]
                if group["weight_decay"] > 0.0:
                    p.sub_(p * (group["weight_decay"] * lr))
                p.sub_(update.to(p.dtype))
        return loss


class Scheduler(abc.ABC):  # noqa: B024
    """``cstorch.optim.scheduler.Scheduler``: what every Cerebras schedule is. Each sets one setting of the
    optimizer's parameter groups (``param_group_key``: ``"lr"``, ``"weight_decay"``) from the step count, for the
    groups whose tags meet ``param_group_tags`` (all when None)."""

    param_group_key = "lr"

    @property
    def param_group_tags(self) -> set[str] | None:
        tags = getattr(self, "_param_group_tags", None)
        return None if tags is None else set(tags)


class SequentialScheduler(Scheduler):  # noqa: B024
    """One schedule after another (the Model Zoo computes its ``milestones`` from the ``total_iters``)."""


class ChainedScheduler(Scheduler):  # noqa: B024
    """Several schedules applied together."""


class PiecewiseConstantScheduler(SequentialScheduler):  # noqa: B024
    """Constant values switching at milestones."""


class LRScheduler(Scheduler):  # noqa: B024
    """``cstorch.optim.lr_scheduler.LRScheduler``: a schedule of the learning rate."""


class _Schedule(torch.optim.lr_scheduler.LRScheduler, LRScheduler):
    """A schedule whose rate is a function of the step (``last_epoch``) alone."""

    def __init__(self, optimizer: torch.optim.Optimizer, total_iters: int | None = None,
                 param_group_tags: str | list[str] | None = None) -> None:
        self.total_iters = total_iters
        if param_group_tags is not None:
            raise CerebrasError("a scheduler's param_group_tags (a schedule for some parameter groups only) is not "
                                "simulated", fix="leave param_group_tags out: the schedule then sets every group")
        super().__init__(optimizer)

    def rate(self, step: int) -> float:
        raise NotImplementedError

    def get_lr(self) -> list[float | torch.Tensor]:
        return [self.rate(self.last_epoch) for _ in self.optimizer.param_groups]

    _get_closed_form_lr = get_lr


class ConstantLR(_Schedule):
    def __init__(self, optimizer: torch.optim.Optimizer, learning_rate: float, total_iters: int | None = None,
                 param_group_tags: str | list[str] | None = None, **_: Any) -> None:
        self.learning_rate = float(learning_rate)
        super().__init__(optimizer, total_iters, param_group_tags)

    def rate(self, step: int) -> float:
        return self.learning_rate


class LinearLR(_Schedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` in a straight line over ``total_iters`` steps."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_learning_rate: float, end_learning_rate: float,
                 total_iters: int, cycle: bool = False, param_group_tags: str | list[str] | None = None,
                 **_: Any) -> None:
        self.start, self.end = float(initial_learning_rate), float(end_learning_rate)
        super().__init__(optimizer, max(int(total_iters), 1), param_group_tags)

    def rate(self, step: int) -> float:
        t = min(step, self.total_iters or 1) / (self.total_iters or 1)
        return self.start + (self.end - self.start) * t


class CosineDecayLR(_Schedule):
    """From ``initial_learning_rate`` down to ``end_learning_rate`` along half a cosine over ``total_iters``."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_learning_rate: float, end_learning_rate: float,
                 total_iters: int, param_group_tags: str | list[str] | None = None, **_: Any) -> None:
        self.start, self.end = float(initial_learning_rate), float(end_learning_rate)
        super().__init__(optimizer, max(int(total_iters), 1), param_group_tags)

    def rate(self, step: int) -> float:
        t = min(step, self.total_iters or 1) / (self.total_iters or 1)
        return self.end + (self.start - self.end) * 0.5 * (1 + math.cos(math.pi * t))


class CosineAnnealingLR(_Schedule):
    """``eta_min + (initial_learning_rate - eta_min) * (1 + cos(pi * step / T_max)) / 2``: PyTorch's cosine
    annealing in closed form, down to ``eta_min`` at ``T_max`` and, past it, back up along the same cosine (no
    restarts), as cstorch's does (the Model Zoo's DINOv2 linear-probe config)."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_learning_rate: float, T_max: int,  # noqa: N803
                 eta_min: float = 0.0, param_group_tags: str | list[str] | None = None, **_: Any) -> None:
        self.initial_learning_rate, self.T_max, self.eta_min = float(initial_learning_rate), int(T_max), float(eta_min)
        if self.T_max <= 0:
            raise CerebrasError(f"CosineAnnealingLR: T_max must be a positive number of steps, not {T_max!r}")
        super().__init__(optimizer, None, param_group_tags)

    def rate(self, step: int) -> float:
        cosine = (1 + math.cos(math.pi * step / self.T_max)) / 2
        return self.eta_min + (self.initial_learning_rate - self.eta_min) * cosine


class InverseSquareRootDecayLR(_Schedule):
    """``initial_learning_rate * scale / sqrt(max(step, warmup_steps))``: constant for the first ``warmup_steps``,
    then decaying as the inverse square root of the step (the Model Zoo's T5 configs)."""

    def __init__(self, optimizer: torch.optim.Optimizer, initial_learning_rate: float = 1.0, scale: float = 1.0,
                 warmup_steps: int = 1, param_group_tags: str | list[str] | None = None, **_: Any) -> None:
        self.initial_learning_rate, self.scale = float(initial_learning_rate), float(scale)
        self.warmup_steps = max(int(warmup_steps), 1)
        super().__init__(optimizer, None, param_group_tags)

    def rate(self, step: int) -> float:
        return self.initial_learning_rate * self.scale / math.sqrt(max(step, self.warmup_steps))


class SequentialLR(torch.optim.lr_scheduler.SequentialLR, LRScheduler, SequentialScheduler):
    """One schedule after another, switching at each of ``milestones`` (PyTorch's SequentialLR)."""

    def __init__(self, optimizer: torch.optim.Optimizer, schedulers: list[LRScheduler], milestones: list[int],
                 last_epoch: int = -1) -> None:
        super().__init__(optimizer, list(schedulers), list(milestones), last_epoch)  # type: ignore[arg-type]


class ScalePerParamLR(LRScheduler):
    """``cstorch.optim.lr_scheduler.ScalePerParamLR(optimizer, scheduler)``: the wrapped schedule's rate, times each
    parameter group's ``adjust_learning_rate`` where it has one (muP's per-layer scaling)."""

    def __init__(self, optimizer: torch.optim.Optimizer, scheduler: LRScheduler) -> None:
        self.optimizer, self.scheduler = optimizer, scheduler
        self._scale()

    def _scale(self) -> None:
        for group in self.optimizer.param_groups:
            if "adjust_learning_rate" in group:
                group["lr"] = group["lr"] * float(group["adjust_learning_rate"])

    def step(self, *args: Any, **kwargs: Any) -> None:
        self.scheduler.step(*args, **kwargs)  # type: ignore[attr-defined]
        self._scale()

    def get_last_lr(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        return {"scheduler": self.scheduler.state_dict()}  # type: ignore[attr-defined]

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.scheduler.load_state_dict(state["scheduler"])  # type: ignore[attr-defined]


class WeightDecayScheduler(Scheduler):  # noqa: B024
    """``cstorch.optim.weight_decay_scheduler.WeightDecayScheduler``: a schedule of the weight decay."""

    param_group_key = "weight_decay"


class ConstantWD(WeightDecayScheduler):
    """A constant weight decay from the first step on (the only weight-decay schedule simulated)."""

    def __init__(self, optimizer: torch.optim.Optimizer, val: float, total_iters: int | None = None) -> None:
        self.optimizer, self.val, self.total_iters, self.last_epoch = optimizer, float(val), total_iters, 0
        self.step()

    def step(self) -> None:
        for group in self.optimizer.param_groups:
            group["weight_decay"] = self.val
        self.last_epoch += 1

    def state_dict(self) -> dict[str, Any]:
        return {"val": self.val, "last_epoch": self.last_epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.val, self.last_epoch = float(state["val"]), int(state["last_epoch"])


OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {"sgd": SGD, "adam": Adam, "adamw": AdamW,
                                                      "adafactor": Adafactor}


def configure_optimizer(optimizer_type: str, params: Iterable[Any], **kwargs: Any) -> torch.optim.Optimizer:
    """``cstorch.optim.configure_optimizer("AdamW", model.parameters(), learning_rate=..., ...)``: the optimizer
    class named by ``optimizer_type`` (any case; SGD, Adam, AdamW here), with the Model Zoo configs' keyword
    ``learning_rate`` taken as ``lr``. A name or keyword this simulation does not have is an error naming it."""
    cls = OPTIMIZERS.get(str(optimizer_type).lower())
    if cls is None:
        raise CerebrasError(f"cstorch.optim.configure_optimizer: no optimizer {optimizer_type!r} in accelkit's "
                            "cerebras.pytorch.optim", fix="use one of: SGD, Adam, AdamW, Adafactor")
    if "learning_rate" in kwargs:
        kwargs["lr"] = kwargs.pop("learning_rate")
    try:
        return cls(params, **kwargs)
    except TypeError as exc:
        raise CerebrasError(f"cstorch.optim.configure_optimizer({optimizer_type!r}, ...): {exc}",
                            fix=f"pass only {cls.__name__}'s own arguments (and learning_rate)") from None


def configure_param_groups(model: torch.nn.Module, optimizer_params: dict[str, Any]) -> list[dict[str, Any]]:
    """``cstorch.optim.configure_param_groups(model, optimizer_params)`` (the 2.0 Model Zoo's runner): the
    parameter groups the optimizer is built with. Here one group, every parameter that trains. Settings that
    would split the groups (the Model Zoo's per-layer ``param_group_tags`` / muP ``adjust_learning_rate``) are
    refused, naming them."""
    for key in ("param_group_tags", "adjust_learning_rate"):
        if optimizer_params.get(key):
            raise CerebrasError(f"cstorch.optim.configure_param_groups: the optimizer setting {key!r} splits the "
                                "parameters into groups with their own settings, which accelkit's cerebras.pytorch "
                                "does not", fix=f"leave {key} out of the params' optimizer section")
    return [{"params": [p for p in model.parameters() if p.requires_grad]}]


SCHEDULERS: dict[str, type[_Schedule]] = {"constant": ConstantLR, "linear": LinearLR, "cosinedecay": CosineDecayLR}


def configure_lr_scheduler(optimizer: torch.optim.Optimizer, learning_rate: Any,
                           adjust_learning_rate: Any = None) -> torch.optim.lr_scheduler.LRScheduler:
    """``cstorch.optim.configure_lr_scheduler(optimizer, learning_rate)``, as the Model Zoo's configs write it:
    ``learning_rate`` a number (a constant rate), one scheduler's settings (``{"scheduler": "Linear",
    "initial_learning_rate": ..., "end_learning_rate": ..., "total_iters": ...}``), or a list of them, run one
    after another, each for its ``total_iters`` (a ``SequentialLR``; the last may leave ``total_iters`` out).
    Schedulers here: Constant, Linear, CosineDecay (with or without the ``LR`` suffix). Another, or
    ``adjust_learning_rate`` (per-parameter-group scaling), is an error naming it."""
    if adjust_learning_rate:
        raise CerebrasError("cstorch.optim.configure_lr_scheduler(adjust_learning_rate=...) scales the rate per "
                            "parameter group, which accelkit's schedulers do not", fix="leave adjust_learning_rate out")
    if isinstance(learning_rate, (int, float)):
        return ConstantLR(optimizer, learning_rate=float(learning_rate))
    specs = [learning_rate] if isinstance(learning_rate, dict) else list(learning_rate)
    built: list[_Schedule] = []
    for spec in specs:
        spec = dict(spec)
        kind = str(spec.pop("scheduler", "")).lower().removesuffix("lr")
        cls = SCHEDULERS.get(kind)
        if cls is None:
            raise CerebrasError(f"cstorch.optim.configure_lr_scheduler: no scheduler {kind or '(none given)'!r} in "
                                "accelkit's cerebras.pytorch.optim",
                                fix='use "Constant", "Linear" or "CosineDecay" (each with its settings)')
        if cls is ConstantLR and "learning_rate" not in spec:
            spec["learning_rate"] = spec.pop("initial_learning_rate", 0.0)
        try:
            built.append(cls(optimizer, **spec))
        except TypeError as exc:
            raise CerebrasError(f"cstorch.optim.configure_lr_scheduler: {spec!r}: {exc}",
                                fix=f"give {cls.__name__}'s settings (e.g. initial_learning_rate, "
                                    "end_learning_rate, total_iters)") from None
    if len(built) == 1:
        return built[0]
    if any(s.total_iters is None for s in built[:-1]):
        raise CerebrasError("configure_lr_scheduler: every scheduler but the last needs total_iters (where the next "
                            "one starts)", fix="add total_iters to each scheduler in the list but the last")
    milestones, at = [], 0
    for sched in built[:-1]:
        at += int(sched.total_iters or 0)
        milestones.append(at)
    return SequentialLR(optimizer, built, milestones)  # type: ignore[arg-type]


def configure_optimizer_params(optimizer_type: str, kwargs: dict[str, Any]) -> tuple[type[torch.optim.Optimizer],
                                                                                     dict[str, Any]]:
    """``cstorch.optim.configure_optimizer_params(optimizer_type, kwargs)`` (the 2.2 Model Zoo's config checks): the
    optimizer class and the keyword arguments it would be built with (``optim_params`` merged in, a numeric
    ``learning_rate`` as ``lr``), each checked against the class's signature; an unknown one is an error naming it."""
    cls = OPTIMIZERS.get(str(optimizer_type).lower())
    if cls is None:
        raise CerebrasError(f"no optimizer {optimizer_type!r} in accelkit's cerebras.pytorch.optim",
                            fix="use one of: SGD, Adam, AdamW, Adafactor")
    args = {k: v for k, v in kwargs.items() if k not in ("optim_params", "learning_rate")}
    args.update(kwargs.get("optim_params") or {})
    rate = kwargs.get("learning_rate")
    if isinstance(rate, (int, float)):
        args["lr"] = float(rate)
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "params"}
    unknown = sorted(set(args) - accepted)
    if unknown:
        raise CerebrasError(f"{cls.__name__} takes no {', '.join(unknown)}", fix=f"use {sorted(accepted)}")
    return cls, args


def configure_scheduler_params(learning_rate: Any) -> LRScheduler:
    """``cstorch.optim.configure_scheduler_params(learning_rate)`` (the 2.2 Model Zoo's config checks): the rate
    settings checked as :func:`configure_lr_scheduler` reads them, by building the schedule on a throwaway
    optimizer."""
    probe = SGD([torch.zeros(1, requires_grad=True)], lr=0.0)
    return configure_lr_scheduler(probe, learning_rate)  # type: ignore[return-value]


def configure_scheduler(optimizer: torch.optim.Optimizer, params: dict[str, Any]) -> Scheduler:
    """``cstorch.optim.configure_scheduler(optimizer, {"LinearLR": {...}})`` (the 2.3-2.4 Model Zoo's Trainer): the
    schedule named by the one key, with its settings; ``SequentialLR`` builds its ``schedulers`` the same way and,
    when not given, its ``milestones`` from their ``total_iters``. A schedule this simulation does not have is an
    error naming the ones it has."""
    known: dict[str, type[Any]] = {c.__name__.lower(): c for c in (ConstantLR, LinearLR, CosineDecayLR,
                                                                     CosineAnnealingLR, InverseSquareRootDecayLR,
                                                                     SequentialLR,
                                                                     ConstantWD)}
    if not isinstance(params, dict) or len(params) != 1:
        raise CerebrasError(f"configure_scheduler: {params!r} is not one schedule",
                            fix='give one name and its settings, e.g. {"LinearLR": {"initial_learning_rate": ...}}')
    (name, settings), = params.items()
    key = str(name).lower()
    cls = known.get(key) or known.get(key + "lr")
    if cls is None:
        raise CerebrasError(f"configure_scheduler: no schedule {name!r} in accelkit's cerebras.pytorch.optim",
                            fix=f"use one of {sorted(c.__name__ for c in known.values())}")
    settings = dict(settings or {})
    if cls is SequentialLR:
        children = [configure_scheduler(optimizer, p) for p in settings.pop("schedulers")]
        if "milestones" not in settings:
            at, milestones = 0, []
            for child in children[:-1]:
                at += int(getattr(child, "total_iters", None) or 0)
                milestones.append(at)
            settings["milestones"] = milestones
        return SequentialLR(optimizer, children, **settings)  # type: ignore[arg-type]
    return cls(optimizer, **settings)  # type: ignore[no-any-return]


lr_scheduler = type("lr_scheduler", (), {"LRScheduler": LRScheduler, "ConstantLR": ConstantLR, "LinearLR": LinearLR,
                                         "CosineDecayLR": CosineDecayLR, "SequentialLR": SequentialLR,
                                         "CosineAnnealingLR": CosineAnnealingLR,
                                         "InverseSquareRootDecayLR": InverseSquareRootDecayLR,
                                         "ScalePerParamLR": ScalePerParamLR})
scheduler = type("scheduler", (), {"Scheduler": Scheduler, "SequentialScheduler": SequentialScheduler,
                                   "ChainedScheduler": ChainedScheduler,
                                   "PiecewiseConstantScheduler": PiecewiseConstantScheduler})
weight_decay_scheduler = type("weight_decay_scheduler", (), {"WeightDecayScheduler": WeightDecayScheduler,
                                                             "ConstantWD": ConstantWD})

__all__ = ["OPTIMIZERS", "SCHEDULERS", "SGD", "Adafactor", "Adam", "AdamW", "ConstantLR", "ConstantWD", "CosineAnnealingLR", "CosineDecayLR",
           "InverseSquareRootDecayLR", "LRScheduler", "LinearLR", "Optimizer", "ParamsT", "ScalePerParamLR", "Scheduler", "SequentialLR",
           "WeightDecayScheduler", "configure_lr_scheduler", "configure_optimizer", "configure_optimizer_params",
           "configure_param_groups", "configure_scheduler", "configure_scheduler_params", "lr_scheduler", "scheduler",
           "weight_decay_scheduler"]
