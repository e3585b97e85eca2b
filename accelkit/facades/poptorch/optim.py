"""``poptorch.optim``: PyTorch's optimizers with the IPU's extra arguments, emulated on this CPU.

PopTorch's optimizers (PopTorch user guide, "Optimizers"; Graphcore's mixed-precision and BERT tutorials)
take PyTorch's arguments plus some that decide the fp16 numerics of training on IPUs. Those change what
is computed, so they are honoured, not ignored:

- ``loss_scaling``: the backward pass starts from ``loss x loss_scaling`` (fp16 gradients that would
  underflow to zero stay representable) and the update divides the gradients by it again, in fp32 (an fp16
  gradient is widened first). In fp32 this changes nothing; in fp16 it is what keeps small gradients alive.
  Optimizer state stored in 16 bits is kept at the scaled gradients' range (the first moments x loss_scaling,
  the second x loss_scaling^2, saturating at the 16-bit maximum) and divided back for the update, so Adam's
  squared fp16 gradients do not underflow to zero (the mixed-precision walkthrough's ``--optimizer-half``).
- ``accum_type`` (Adam, AdamW, RMSprop, LAMB), ``first_order_momentum_accum_type``,
  ``second_order_momentum_accum_type``, ``velocity_accum_type`` (SGD): the dtype of the optimizer's state.
  For fp16 weights each update is computed in fp32 arithmetic, as the IPU's optimizer does; the state is
  then stored in its accumulator type (PopTorch's default is the parameters' dtype, fp16) and the weights in
  fp16. With ``opts.Precision.enableStochasticRounding(True)`` those stores round stochastically (unbiased:
  small updates survive on average), else to nearest (updates below half an fp16 step are lost).
- ``max_grad_norm``: gradients are clipped to this global norm before the update.

Arguments that only matter on the IPU (``velocity_scaling``, ``use_combined_accum``) are accepted and
recorded. ``None`` means PyTorch's default, as in PopTorch. :class:`LAMB`, which PyTorch does not have,
is PopTorch's layer-wise adaptive optimizer written out here (You et al. 2019, arXiv:1904.00962).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

import torch

from accelkit.facades.poptorch.options import PopTorchError
from accelkit.runtime import facade_log

ACCUM_ARGS = ("accum_type", "first_order_momentum_accum_type", "second_order_momentum_accum_type",
              "velocity_accum_type")
HARDWARE_ONLY = {
    "velocity_scaling": "scales SGD's fp16 velocity on the IPU to keep it in range; the update is the same",
    "use_combined_accum": "stores SGD's gradient accumulator and velocity as one tensor on the IPU",
}


class VariableAttributes:
    """``poptorch.optim.VariableAttributes``: which of an optimizer's attributes the IPU program holds as
    constants and which it takes as variables (each optimizer's ``variable_attrs``).

    On the IPU a constant attribute is compiled into the program; a variable one is streamed in, so changing it
    (a learning-rate schedule) needs no recompilation. Both compute the same update, so here the marking changes
    no value; an attribute marked constant whose value changes after the first step is refused, as the compiled
    program could not take it (``markAsVariable`` is the fix). Every attribute starts variable."""

    def __init__(self, variable_attributes: Iterable[str], allowed_attributes: Iterable[str]) -> None:
        self._allowed = sorted(set(allowed_attributes))
        self._variable = set(variable_attributes) & set(self._allowed)

    def _check(self, attr: str) -> None:
        if attr not in self._allowed:
            raise PopTorchError(f"Unknown attribute {attr!r}, allowed values: {self._allowed}",
                                fix="mark one of the optimizer's own attributes")

    def isConstant(self, attr: str) -> bool:  # noqa: N802 - PopTorch's name
        self._check(attr)
        return attr not in self._variable

    def markAsConstant(self, attr: str) -> None:  # noqa: N802 - PopTorch's name
        self._check(attr)
        self._variable.discard(attr)

    def markAsVariable(self, attr: str) -> None:  # noqa: N802 - PopTorch's name
        self._check(attr)
        self._variable.add(attr)

    def __repr__(self) -> str:
        return f"VariableAttributes(variable={sorted(self._variable)}, allowed={self._allowed})"


class _PopTorchOptimizer(torch.optim.Optimizer):
    """The shared part: loss scaling, fp32 accumulation for fp16 weights, gradient clipping."""

    loss_scaling: float
    accum_types: dict[str, torch.dtype | None]
    max_grad_norm: float | None

    def _popart_init(self, torch_kwargs: dict[str, Any], loss_scaling: float | None, max_grad_norm: float | None,
                     accum: dict[str, Any], hardware: dict[str, Any]) -> None:
        if loss_scaling is not None and (not isinstance(loss_scaling, (int, float)) or loss_scaling <= 0):
            raise PopTorchError(f"loss_scaling must be a number > 0, got {loss_scaling!r}", fix="e.g. loss_scaling=1024")
        for name, dtype in accum.items():
            if dtype not in (None, torch.float16, torch.float32, torch.half, torch.float):
                raise PopTorchError(f"{name}={dtype!r}: the IPU keeps optimizer state in torch.float16 or torch.float32",
                                    fix=f"{name}=torch.float32")
        self.loss_scaling = float(loss_scaling) if loss_scaling is not None else 1.0
        self.max_grad_norm = max_grad_norm
        self.accum_types = dict(accum)
        for name, value in hardware.items():
            if value is not None:
                facade_log.accept("PopTorch", f"poptorch.optim.{type(self).__name__}({name}={value!r})",
                                  HARDWARE_ONLY[name])

    stochastic_rounding: bool = False  # set by trainingModel from opts.Precision.enableStochasticRounding

    _OPTIMIZER_ATTRS = ("loss_scaling", "velocity_scaling")

    @property
    def variable_attrs(self) -> VariableAttributes:
        """PopTorch's ``optimizer.variable_attrs``: the param groups' hyperparameters and ``loss_scaling``
        (and SGD's ``velocity_scaling``), all variable until marked constant."""
        attrs = self.__dict__.get("_variable_attrs")
        if attrs is None:
            names = {k for g in self.param_groups for k in g if k != "params"} | {"loss_scaling"}
            if isinstance(self, torch.optim.SGD):
                names.add("velocity_scaling")
            attrs = self.__dict__["_variable_attrs"] = VariableAttributes(names, names)
        return attrs

    def _attr_values(self, attr: str) -> list[Any]:
        return [self.__dict__.get(attr)] if attr in self._OPTIMIZER_ATTRS else \
            [g.get(attr) for g in self.param_groups]

    def _check_constants(self) -> None:
        """Refuse a change, after the first step, to an attribute the script marked constant: PopTorch compiled it
        into the program. The values are remembered at the first step (when PopTorch compiles)."""
        attrs = self.__dict__.get("_variable_attrs")
        if attrs is None:
            return
        first: dict[str, list[Any]] = self.__dict__.setdefault("_compiled_constants", {})
        for attr in attrs._allowed:
            if not attrs.isConstant(attr):
                continue
            now = self._attr_values(attr)
            if attr not in first:
                first[attr] = now
            elif now != first[attr]:
                raise PopTorchError(
                    f"poptorch.optim.{type(self).__name__}: {attr!r} was marked constant "
                    f"(variable_attrs.markAsConstant) and changed from {first[attr]} to {now} after the program "
                    "was compiled; the IPU program holds it as a constant",
                    fix=f"optimizer.variable_attrs.markAsVariable({attr!r}) before the first step")

    def _state_dtype(self, param_dtype: torch.dtype) -> torch.dtype:
        """The dtype the optimizer state of a ``param_dtype`` weight is stored in: fp32 when any accumulator type
        asks for it, else the weight's own (PopTorch's default)."""
        return torch.float32 if any(t == torch.float32 for t in self.accum_types.values()) else param_dtype

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update: gradients divided by ``loss_scaling``, clipped to ``max_grad_norm``, then PyTorch's update.

        For fp16 / bf16 weights the update is computed as the IPU's optimizer computes it: in fp32 arithmetic
        (so Adam's ``eps`` and small steps do not vanish in the arithmetic), then stored back: the weights in
        their own dtype and the optimizer state in its accumulator type (fp16 by default, fp32 with
        ``accum_type=torch.float32``). Each store rounds to nearest, or stochastically (up or down at random, with
        the odds that make the rounding unbiased) when the options enable stochastic rounding.

        The fp32 copies live in buffers kept from one step to the next (:meth:`_widened`), filled and read back in
        place: a large layer's fresh fp32 copies cost more than the update itself on this CPU (each new tensor's
        pages are mapped and zeroed). Where every updated weight is 16-bit and the script chose neither
        ``foreach`` nor ``fused``, Adam and AdamW run PyTorch's fused CPU kernel (the same update in one pass)."""
        self._check_constants()
        params = [p for g in self.param_groups for p in g["params"] if p.grad is not None]
        narrow = {p: (p.data, p.grad) for p in params if p.dtype in (torch.float16, torch.bfloat16)}
        stored: dict[Any, dict[str, torch.Tensor]] = {}  # the 16-bit state tensors, written back after the step
        for p, (data, grad) in narrow.items():  # fp32 arithmetic: PyTorch's new state follows p's dtype
            wide = self._widened(p)
            p.data = wide["param"].copy_(data)
            p.grad = wide["grad"].copy_(grad)  # widened before the loss scale is divided out: a small gradient lives
            stored[p] = {}
            for k, v in list(self.state.get(p, {}).items()):
                if isinstance(v, torch.Tensor) and v.is_floating_point() and v.shape == p.shape \
                        and v.dtype != torch.float32:
                    stored[p][k] = v
                    w = wide.setdefault(k, torch.empty(v.shape, dtype=torch.float32)).copy_(v)
                    scale = self._state_scale(k, v.dtype)
                    self.state[p][k] = w.div_(scale) if scale != 1.0 else w
        if self.loss_scaling != 1.0:
            for p in params:
                p.grad.div_(self.loss_scaling)
        if self.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
        fuse = self._fusable(params, narrow)
        try:
            for g in fuse:
                g["fused"] = True
            return self._update(closure)
        finally:
            for g in fuse:
                g["fused"] = None
            for p, (data, grad) in narrow.items():
                data.copy_(round_to(p.data, data.dtype, True) if self.stochastic_rounding else p.data)
                p.data, p.grad = data, grad
                keep = self._state_dtype(data.dtype)
                for k, v in list(self.state.get(p, {}).items()):
                    if isinstance(v, torch.Tensor) and v.is_floating_point() and v.shape == p.shape \
                            and keep != torch.float32:
                        self._widened(p).setdefault(k, v)  # PyTorch's new fp32 state: the buffer from now on
                        scale = self._state_scale(k, keep)
                        if scale != 1.0:  # saturates at the 16-bit maximum rather than overflow to inf
                            v.mul_(scale).clamp_(max=torch.finfo(keep).max)
                        target = stored[p].get(k)
                        if target is None or target.dtype != keep:
                            target = torch.empty(v.shape, dtype=keep)
                        self.state[p][k] = target.copy_(round_to(v, keep, True) if self.stochastic_rounding else v)

    def _update(self, closure: Callable[[], Any] | None) -> Any:
        """The update itself, on the (widened) weights and gradients: PyTorch's."""
        return super().step(closure)  # type: ignore[safe-super]

    def _widened(self, p: torch.Tensor) -> dict[str, torch.Tensor]:
        """The fp32 buffers of 16-bit weight ``p``: its value, its gradient and its 16-bit state, by name."""
        buffers: dict[int, dict[str, torch.Tensor]] = self.__dict__.setdefault("_wide_buffers", {})
        if id(p) not in buffers:
            buffers[id(p)] = {"param": torch.empty(p.shape, dtype=torch.float32),
                              "grad": torch.empty(p.shape, dtype=torch.float32)}
        return buffers[id(p)]

    def _fusable(self, params: list[torch.Tensor], narrow: dict[Any, Any]) -> list[dict[str, Any]]:
        """The param groups to run with PyTorch's fused CPU update this step: Adam / AdamW groups whose updated
        weights are all 16-bit (so every update is computed in the fp32 buffers) and that left ``foreach``,
        ``fused`` and ``differentiable`` alone; none otherwise."""
        if not narrow or len(narrow) != len(params) or not isinstance(self, (torch.optim.Adam, torch.optim.AdamW)):
            return []
        groups = self.param_groups
        if any(g.get("fused") or g.get("foreach") or g.get("differentiable") or g.get("capturable") for g in groups):
            return []
        return groups

    # optimizer state that holds gradients (power 1) or squared gradients (power 2), by PyTorch's state names
    _GRADIENT_POWER = {"exp_avg": 1, "exp_avg_sq": 2, "max_exp_avg_sq": 2, "momentum_buffer": 1,
                       "square_avg": 2, "grad_avg": 1}

    def _state_scale(self, key: str, stored: torch.dtype) -> float:
        """The factor a state tensor is kept at when stored in fp16 / bf16: the moments of the *scaled* gradient
        (``exp_avg`` x loss_scaling, ``exp_avg_sq`` x loss_scaling^2), so that they stay in the 16-bit range that the
        loss scale keeps the gradients in (unscaled, a squared fp16 gradient of 1e-4 underflows to zero and Adam's
        step divides by nothing). The update is computed from the unscaled values in fp32: the same numbers."""
        if stored not in (torch.float16, torch.bfloat16) or self.loss_scaling == 1.0:
            return 1.0
        return float(self.loss_scaling ** self._GRADIENT_POWER.get(key, 0))


def round_to(x: torch.Tensor, dtype: torch.dtype, stochastic: bool = False,
             generator: torch.Generator | None = None) -> torch.Tensor:
    """``x`` stored as ``dtype``: rounded to nearest, or stochastically: to one of the two neighbouring ``dtype``
    values, the upper with probability (x - lower) / (upper - lower), so the rounding is unbiased on average
    (how the IPU stores fp16 with stochastic rounding on). Values already exact, infinite or NaN are kept."""
    if x.dtype == dtype or not stochastic or dtype not in (torch.float16, torch.bfloat16):
        return x.to(dtype)
    wide = x.float()
    near = wide.to(dtype)  # round to nearest
    resid = wide - near.float()
    away = torch.nextafter(near, torch.where(resid > 0, torch.full_like(near, float("inf")),
                                             torch.full_like(near, float("-inf"))))
    gap = (away.float() - near.float()).abs()
    odds = torch.where(gap > 0, resid.abs() / gap, torch.zeros_like(gap))
    draw = torch.rand(x.shape, generator=generator, dtype=torch.float32)
    pick = (draw < odds) & (resid != 0) & torch.isfinite(away.float())
    return torch.where(pick, away, near)


def _split(locals_: dict[str, Any], torch_cls: type) -> dict[str, Any]:
    """The arguments PyTorch's class takes, without the ``None`` ones (PopTorch's "use the default")."""
    names = set(inspect.signature(torch_cls.__init__).parameters) - {"self", "params"}  # type: ignore[misc]
    return {k: v for k, v in locals_.items() if k in names and v is not None}


class SGD(_PopTorchOptimizer, torch.optim.SGD):
    """``poptorch.optim.SGD(params, lr=None, momentum=None, dampening=None, weight_decay=None, nesterov=None,
    maximize=None, foreach=None, differentiable=None, loss_scaling=None, velocity_scaling=None,
    use_combined_accum=None, accum_type=None, velocity_accum_type=None, max_grad_norm=None)``."""

    def __init__(self, params: Iterable[Any], lr: float | None = None, momentum: float | None = None,
                 dampening: float | None = None, weight_decay: float | None = None, nesterov: bool | None = None,
                 maximize: bool | None = None, foreach: bool | None = None, differentiable: bool | None = None,
                 loss_scaling: float | None = None, velocity_scaling: float | None = None,
                 use_combined_accum: bool | None = None, accum_type: torch.dtype | None = None,
                 velocity_accum_type: torch.dtype | None = None, max_grad_norm: float | None = None) -> None:
        torch.optim.SGD.__init__(self, params, **_split(locals(), torch.optim.SGD))
        self._popart_init({}, loss_scaling, max_grad_norm, {"accum_type": accum_type,
                                                            "velocity_accum_type": velocity_accum_type},
                          {"velocity_scaling": velocity_scaling, "use_combined_accum": use_combined_accum})


def _adam_family(torch_cls: type) -> type:
    class Optimizer(_PopTorchOptimizer, torch_cls):  # type: ignore[valid-type, misc]
        def __init__(self, params: Iterable[Any], lr: float | None = None, betas: tuple[float, float] | None = None,
                     eps: float | None = None, weight_decay: float | None = None, amsgrad: bool | None = None,
                     foreach: bool | None = None, maximize: bool | None = None, capturable: bool | None = None,
                     differentiable: bool | None = None, fused: bool | None = None,
                     loss_scaling: float | None = None, accum_type: torch.dtype | None = None,
                     first_order_momentum_accum_type: torch.dtype | None = None,
                     second_order_momentum_accum_type: torch.dtype | None = None,
                     max_grad_norm: float | None = None) -> None:
            torch_cls.__init__(self, params, **_split(locals(), torch_cls))  # type: ignore[misc]
            self._popart_init({}, loss_scaling, max_grad_norm, {
                "accum_type": accum_type, "first_order_momentum_accum_type": first_order_momentum_accum_type,
                "second_order_momentum_accum_type": second_order_momentum_accum_type}, {})

    return Optimizer


class Adam(_adam_family(torch.optim.Adam)):  # type: ignore[misc]
    """``poptorch.optim.Adam(params, lr=None, betas=None, eps=None, weight_decay=None, amsgrad=None, ...,
    loss_scaling=None, accum_type=None, first_order_momentum_accum_type=None,
    second_order_momentum_accum_type=None, max_grad_norm=None)``."""


class AdamW(_adam_family(torch.optim.AdamW)):  # type: ignore[misc]
    """``poptorch.optim.AdamW``: :class:`Adam`'s arguments, with decoupled weight decay (PyTorch's AdamW), and
    ``bias_correction`` (default True, PyTorch's update; False leaves the moments uncorrected, as PopTorch's
    ``bias_correction=False`` does: ``w -= lr * m / (sqrt(v) + eps)``)."""

    def __init__(self, params: Iterable[Any], lr: float | None = None, betas: tuple[float, float] | None = None,
                 eps: float | None = None, weight_decay: float | None = None, amsgrad: bool | None = None,
                 maximize: bool | None = None, foreach: bool | None = None, capturable: bool | None = None,
                 differentiable: bool | None = None, fused: bool | None = None, loss_scaling: float | None = None,
                 bias_correction: bool | None = None, accum_type: torch.dtype | None = None,
                 first_order_momentum_accum_type: torch.dtype | None = None,
                 second_order_momentum_accum_type: torch.dtype | None = None,
                 max_grad_norm: float | None = None) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, loss_scaling=loss_scaling, accum_type=accum_type,
                         first_order_momentum_accum_type=first_order_momentum_accum_type,
                         second_order_momentum_accum_type=second_order_momentum_accum_type,
                         max_grad_norm=max_grad_norm)
        self.bias_correction = True if bias_correction is None else bool(bias_correction)
        if not self.bias_correction and any(g.get("amsgrad") for g in self.param_groups):
            raise PopTorchError("poptorch.optim.AdamW(bias_correction=False) with amsgrad: PopTorch has no AMSGrad",
                                fix="leave amsgrad unset")

    def _fusable(self, params: list[torch.Tensor], narrow: dict[Any, Any]) -> list[dict[str, Any]]:
        return super()._fusable(params, narrow) if self.bias_correction else []

    @torch.no_grad()
    def _update(self, closure: Callable[[], Any] | None) -> Any:
        if self.bias_correction:
            return super()._update(closure)
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            b1, b2 = group["betas"]
            lr, eps, wd = float(group["lr"]), group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group.get("maximize") else p.grad
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                p.mul_(1 - lr * wd)  # decoupled weight decay
                state["exp_avg"].lerp_(grad, 1 - b1)
                state["exp_avg_sq"].mul_(b2).addcmul_(grad, grad, value=1 - b2)
                p.addcdiv_(state["exp_avg"], state["exp_avg_sq"].sqrt().add_(eps), value=-lr)
        return loss


class RMSprop(_PopTorchOptimizer, torch.optim.RMSprop):
    """``poptorch.optim.RMSprop(params, lr=None, alpha=None, eps=None, weight_decay=None, momentum=None,
    centered=None, ..., loss_scaling=None, accum_type=None, first_order_momentum_accum_type=None,
    second_order_momentum_accum_type=None, use_tf_variant=None)``.

    ``use_tf_variant=True`` (PopART's ``rmsprop_tf_variant``, what Graphcore's EfficientNet recipes train with) is
    TensorFlow's RMSProp, honoured: the mean square starts at ones, ``eps`` is added inside the square root, and the
    learning rate is applied before the momentum accumulation
    (``ms = alpha ms + (1 - alpha) g^2; mom = momentum mom + lr g / sqrt(ms + eps); w -= mom``; centered: the mean
    gradient's square is taken from ``ms + eps``); weight decay is added to the gradient (L2), as in PyTorch's."""

    def __init__(self, params: Iterable[Any], lr: float | None = None, alpha: float | None = None,
                 eps: float | None = None, weight_decay: float | None = None, momentum: float | None = None,
                 centered: bool | None = None, foreach: bool | None = None, maximize: bool | None = None,
                 differentiable: bool | None = None, loss_scaling: float | None = None,
                 accum_type: torch.dtype | None = None, first_order_momentum_accum_type: torch.dtype | None = None,
                 second_order_momentum_accum_type: torch.dtype | None = None,
                 use_tf_variant: bool | None = None) -> None:
        torch.optim.RMSprop.__init__(self, params, **_split(locals(), torch.optim.RMSprop))
        self._popart_init({}, loss_scaling, None, {
            "accum_type": accum_type, "first_order_momentum_accum_type": first_order_momentum_accum_type,
            "second_order_momentum_accum_type": second_order_momentum_accum_type}, {})
        self.use_tf_variant = bool(use_tf_variant)

    def _fusable(self, params: list[torch.Tensor], narrow: dict[Any, Any]) -> list[dict[str, Any]]:
        return []

    @torch.no_grad()
    def _update(self, closure: Callable[[], Any] | None) -> Any:
        if not self.use_tf_variant:
            return super()._update(closure)
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, alpha, eps = float(group["lr"]), group["alpha"], group["eps"]
            momentum, wd = group["momentum"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group.get("maximize") else p.grad
                if wd:
                    grad = grad.add(p, alpha=wd)
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["square_avg"] = torch.ones_like(p, memory_format=torch.preserve_format)
                    if momentum > 0:
                        state["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    if group["centered"]:
                        state["grad_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                square_avg = state["square_avg"].mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                denom = square_avg.add(eps)
                if group["centered"]:
                    grad_avg = state["grad_avg"].lerp_(grad, 1 - alpha)
                    denom.addcmul_(grad_avg, grad_avg, value=-1)
                step = grad.div(denom.sqrt_()).mul_(lr)
                if momentum > 0:
                    step = state["momentum_buffer"].mul_(momentum).add_(step)
                p.sub_(step)
        return loss


class _LAMBUpdate(torch.optim.Optimizer):
    """LAMB's update: Adam's direction (with decoupled weight decay) scaled per tensor by the trust ratio
    ``||w|| / ||update||``, the norm of the weights capped at ``max_weight_norm``."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, bias_correction: bool = True,
                 max_weight_norm: float | None = None) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "bias_correction": bias_correction, "max_weight_norm": max_weight_norm})

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                m, v, t = state["exp_avg"], state["exp_avg_sq"], state["step"]
                m.mul_(b1).add_(p.grad, alpha=1 - b1)  # first moment
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)  # second moment
                m_hat, v_hat = (m / (1 - b1 ** t), v / (1 - b2 ** t)) if group["bias_correction"] else (m, v)
                update = m_hat / (v_hat.sqrt() + group["eps"]) + group["weight_decay"] * p
                w_norm = p.norm()
                if group["max_weight_norm"] is not None:
                    w_norm = w_norm.clamp(max=group["max_weight_norm"])
                u_norm = update.norm()
                trust = w_norm / u_norm if float(w_norm) > 0 and float(u_norm) > 0 else 1.0
                p.add_(update * trust, alpha=-group["lr"])
        return loss


class LAMB(_PopTorchOptimizer, _LAMBUpdate):
    """``poptorch.optim.LAMB(params, lr=None, betas=None, eps=None, weight_decay=None, bias_correction=None,
    loss_scaling=None, max_weight_norm=None, accum_type=None, first_order_momentum_accum_type=None,
    second_order_momentum_accum_type=None)``; ``max_weight_norm`` caps ``||w||`` in the trust ratio."""

    def __init__(self, params: Iterable[Any], lr: float | None = None, betas: tuple[float, float] | None = None,
                 eps: float | None = None, weight_decay: float | None = None, bias_correction: bool | None = None,
                 loss_scaling: float | None = None, max_weight_norm: float | None = None,
                 accum_type: torch.dtype | None = None, first_order_momentum_accum_type: torch.dtype | None = None,
                 second_order_momentum_accum_type: torch.dtype | None = None) -> None:
        _LAMBUpdate.__init__(self, params, **_split(locals(), _LAMBUpdate))
        self._popart_init({}, loss_scaling, None, {
            "accum_type": accum_type, "first_order_momentum_accum_type": first_order_momentum_accum_type,
            "second_order_momentum_accum_type": second_order_momentum_accum_type}, {})


__all__ = ["LAMB", "SGD", "Adam", "AdamW", "RMSprop", "VariableAttributes", "round_to"]
