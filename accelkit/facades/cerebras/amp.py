"""Mixed precision as ``cerebras.pytorch.amp`` (``cstorch.amp``) exposes it, honoured on this CPU.

A CS system trains in mixed precision: 16-bit inputs to the arithmetic, fp32 accumulation
(docs.cerebras.net, "Control numerical precision level"). The script picks the 16-bit type and, for
float16, scales the loss so small gradients do not underflow::

    cstorch.amp.set_half_dtype(torch.float16)              # or torch.bfloat16
    grad_scaler = cstorch.amp.GradScaler(loss_scale="dynamic")

    @cstorch.trace
    def training_step(inputs, targets):
        loss = loss_fn(compiled_model(inputs), targets)
        cstorch.amp.optimizer_step(loss, optimizer, grad_scaler, max_gradient_norm=1.0)
        return loss

Both change what is computed, so both are honoured: the half dtype is the precision the backend's
compiled model runs in (``torch.autocast`` on this CPU, as :class:`accelkit.Session` emulates every
16-bit chip) and the wafer's modelled clock uses; the scaler multiplies the loss, divides the gradients
back, skips a step whose gradients overflowed and moves a dynamic scale as its parameters say.
Cerebras' own 16-bit format, ``cbfloat16`` (6 exponent bits, 9 mantissa bits), runs as bfloat16 (as the Model
Zoo's own runs off the system do), and the run says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from accelkit.facades.cerebras.clock import CerebrasError
from accelkit.hardware.precision import normalize
from accelkit.runtime import facade_log

HALF_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
_half: list[str] = []  # the half dtype set by set_half_dtype (none: the backend's own precision)
facade_log.reset_with_each_run(_half.clear)
_on_change: list[Callable[[str], None]] = []  # told the new half dtype (cstorch: the current backend)


def on_half_dtype(callback: Callable[[str], None]) -> None:
    """Call ``callback(precision)`` whenever :func:`set_half_dtype` changes the half dtype."""
    _on_change.append(callback)


def set_half_dtype(value: Any) -> torch.dtype:
    """``cstorch.amp.set_half_dtype(value)``: the 16-bit type of the run's mixed precision, ``torch.float16`` /
    ``"float16"`` or ``torch.bfloat16`` / ``"bfloat16"`` (``"cbfloat16"`` runs as bfloat16, and says so). Applies to
    the current backend (before its first step) and to backends made later; returns the torch dtype."""
    key = normalize(value)
    if key in ("cbfloat16", "cbf16"):
        # the Model Zoo itself runs cbfloat16 as bfloat16 wherever the system is not there ("cbfloat16 is only
        # supported on CSX. Setting half dtype to bfloat16.": modelzoo/trainer/callbacks/precision.py)
        facade_log.accept("Cerebras", f"cstorch.amp.set_half_dtype({value!r})",
                          "cbfloat16, Cerebras' 16-bit format (6 exponent bits, 9 mantissa bits), runs as bfloat16 on "
                          "this CPU, as the Model Zoo's own runs off the system do: the same 16 bits a value (the "
                          "modelled time is the same), two mantissa bits fewer and a wider range, so the losses "
                          "differ from the system's in their later digits", emulated=True)
        key = "bf16"
    if key not in HALF_DTYPES:
        raise CerebrasError(f"{value!r} is not a half dtype", fix="use torch.float16 or torch.bfloat16")
    _half[:] = [key]
    for callback in _on_change:
        callback(key)
    return HALF_DTYPES[key]


def get_half_dtype() -> torch.dtype:
    """The 16-bit type set by :func:`set_half_dtype` (``torch.float16`` if none was set, Cerebras' default).
    ``torch.float32`` while a CSX step's program is captured to model its time (:func:`on_capturing`): the graph
    captured is the fp32 model's, its precision the run's, set apart, so a model's own cast to the half dtype
    (the Model Zoo's DiT casts its noised latent, before an fp32 ``Conv2d``) is the program's precision there,
    not a mixed-dtype op; the step itself runs in the half dtype."""
    if any(capturing() for capturing in _capturing):
        return torch.float32
    return HALF_DTYPES[_half[0]] if _half else torch.float16


_capturing: list[Callable[[], bool]] = []  # True while a step's program is captured (cstorch: any backend tracing)


def on_capturing(check: Callable[[], bool]) -> None:
    """:func:`get_half_dtype` answers ``torch.float32`` while ``check()`` is True."""
    _capturing.append(check)


def half_precision() -> str | None:
    """accelkit's name of the half dtype the script set (``"fp16"`` / ``"bf16"``), or None."""
    return _half[0] if _half else None


def use_bfloat16(use: bool) -> None:
    """``cstorch.amp.use_bfloat16(use)`` (the older switch): bfloat16 if ``use``, else float16."""
    set_half_dtype(torch.bfloat16 if use else torch.float16)


_enabled: list[bool] = []  # enable_mixed_precision's switch (the 2.x Model Zoo's precision callback sets it)
facade_log.reset_with_each_run(_enabled.clear)


def enable_mixed_precision(enable: bool = True) -> bool:
    """``cstorch.amp.enable_mixed_precision(enable=True)``: whether the run computes in the half dtype. On the CSX
    backend the half dtype is what :func:`set_half_dtype` sets; on the CPU backend it turns
    :func:`autocast` on."""
    _enabled[:] = [bool(enable)]
    return bool(enable)


def mixed_precision() -> bool:
    """Whether mixed precision was enabled."""
    return bool(_enabled and _enabled[0])


def get_floating_point_dtype(default: torch.dtype = torch.float32) -> torch.dtype:
    """The half dtype when mixed precision is enabled, else ``default``."""
    return get_half_dtype() if mixed_precision() else default


def get_half_dtype_str() -> str:
    """``cstorch.amp.get_half_dtype_str()``: the half dtype's name, ``"float16"`` or ``"bfloat16"`` (never
    ``"cbfloat16"``, which :func:`set_half_dtype` runs as bfloat16)."""
    return str(get_half_dtype()).removeprefix("torch.")


def get_floating_point_dtype_str() -> str:
    """``cstorch.amp.get_floating_point_dtype_str()``: the name of :func:`get_floating_point_dtype`'s dtype
    (the half dtype's when mixed precision is enabled, else ``"float32"``)."""
    return str(get_floating_point_dtype()).removeprefix("torch.")


def is_cbfloat16_tensor(tensor: torch.Tensor) -> bool:
    """False: cbfloat16 runs as bfloat16 here (:func:`set_half_dtype`), so no tensor is one."""
    return False


def autocast(enabled: bool = True) -> Any:
    """``cstorch.amp.autocast()``: the CPU backend's mixed precision, ``torch.autocast`` in bfloat16 on this CPU
    (cstorch's CPU backend supports bfloat16 only)."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled)


_init_params: list[dict[str, Any]] = []  # the last GradScaler's settings
facade_log.reset_with_each_run(_init_params.clear)


def get_init_params() -> dict[str, Any]:
    """The settings the script's last :class:`GradScaler` was made with (``{}`` before one): the R1.x Model Zoo's
    gradient clipper asks whether the scaler already clips (``max_gradient_norm``)."""
    return dict(_init_params[0]) if _init_params else {}


def _grads(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]


class GradScaler:
    """``cstorch.amp.GradScaler(loss_scale=None, init_scale=None, steps_per_increase=2000, min_loss_scale=None,
    max_loss_scale=None, overflow_tolerance=0.0, max_gradient_norm=None)``.

    ``loss_scale``: ``None`` (no scaling), a number (static scaling) or ``"dynamic"``: the scale starts at
    ``init_scale`` (accelkit's default 2**15 when not given), halves after a step whose gradients
    overflowed (that step is skipped) and doubles after ``steps_per_increase`` clean steps, within
    ``min_loss_scale`` / ``max_loss_scale`` (defaults 1 and 2**24, accelkit's). ``max_gradient_norm`` clips
    the unscaled gradients. ``overflow_tolerance`` other than 0 (tolerating some overflowed steps before
    lowering the scale) is refused: accelkit lowers it at the first one.
    """

    def __init__(self, loss_scale: float | str | None = None, init_scale: float | None = None,
                 steps_per_increase: int = 2000, min_loss_scale: float | None = None,
                 max_loss_scale: float | None = None, overflow_tolerance: float = 0.0,
                 max_gradient_norm: float | None = None) -> None:
        if isinstance(loss_scale, str) and loss_scale != "dynamic":
            raise CerebrasError(f"loss_scale={loss_scale!r} is not a number or 'dynamic'",
                                fix="loss_scale='dynamic', a number such as 1024.0, or None")
        if overflow_tolerance:
            raise CerebrasError(f"GradScaler(overflow_tolerance={overflow_tolerance}) lets overflowed steps pass "
                                "before the scale drops; accelkit drops it at the first overflow",
                                fix="drop overflow_tolerance (0.0)")
        if not isinstance(steps_per_increase, int) or steps_per_increase < 1:
            raise CerebrasError(f"steps_per_increase must be a whole number ≥ 1, got {steps_per_increase!r}",
                                fix="e.g. steps_per_increase=2000")
        self.dynamic = loss_scale == "dynamic"
        start = init_scale if self.dynamic and init_scale is not None else 2.0 ** 15 if self.dynamic else loss_scale
        self.scale_value = float(start) if start is not None else 1.0
        if not self.scale_value > 0:
            raise CerebrasError(f"the loss scale must be positive, got {self.scale_value}", fix="e.g. 1024.0")
        self.enabled = loss_scale is not None
        self.steps_per_increase = steps_per_increase
        self.min_loss_scale = float(min_loss_scale) if min_loss_scale is not None else 1.0
        self.max_loss_scale = float(max_loss_scale) if max_loss_scale is not None else 2.0 ** 24
        self.max_gradient_norm = max_gradient_norm
        _init_params[:] = [{k: v for k, v in (("loss_scale", loss_scale), ("init_scale", init_scale),
                                               ("steps_per_increase", steps_per_increase),
                                               ("min_loss_scale", min_loss_scale), ("max_loss_scale", max_loss_scale),
                                               ("max_gradient_norm", max_gradient_norm)) if v is not None}]
        self.clean_steps = 0
        self.skipped_steps = 0
        self._overflow = False
        self._unscaled: set[int] = set()

    def scale(self, loss: torch.Tensor) -> torch.Tensor:
        """The loss times the current scale (the backward pass starts from it)."""
        return loss * self.scale_value if self.enabled else loss

    def unscale_(self, optimizer: torch.optim.Optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, note whether any overflowed, clip by
        ``max_gradient_norm``; once per step."""
        if id(optimizer) in self._unscaled:
            return
        self._unscaled.add(id(optimizer))
        grads = _grads(optimizer)
        if self.enabled:
            for g in grads:
                g.div_(self.scale_value)
        self._overflow = self._overflow or any(not torch.isfinite(g).all() for g in grads)
        if self.max_gradient_norm is not None and not self._overflow:
            torch.nn.utils.clip_grad_norm_([p for grp in optimizer.param_groups for p in grp["params"]],
                                           self.max_gradient_norm)

    def step(self, optimizer: torch.optim.Optimizer) -> None:
        """Unscale (if not done yet) and step ``optimizer``, unless the gradients overflowed."""
        self.unscale_(optimizer)
        if self._overflow:
            self.skipped_steps += 1
        else:
            optimizer.step()

    def update(self, new_scale: float | None = None) -> None:
        """End the step: a dynamic scale halves after an overflow and doubles after ``steps_per_increase`` clean
        steps; ``new_scale`` sets it outright."""
        if new_scale is not None:
            self.scale_value = self._non_clamped = float(new_scale)
        elif self.dynamic:
            if self._overflow:
                self._non_clamped = self.scale_value / 2
                self.scale_value = max(self._non_clamped, self.min_loss_scale)
                self.clean_steps = 0
            else:
                self.clean_steps += 1
                self._non_clamped = self.scale_value
                if self.clean_steps % self.steps_per_increase == 0:
                    self._non_clamped = self.scale_value * 2
                    self.scale_value = min(self._non_clamped, self.max_loss_scale)
        self._overflow = False
        self._unscaled.clear()

    def get_scale(self) -> float:
        """The current loss scale."""
        return self.scale_value

    def get_non_clamped_scale(self) -> float:
        """The scale the last update computed before ``min_loss_scale`` / ``max_loss_scale`` clamped it (the Model
        Zoo's mixed-precision callback logs both)."""
        return getattr(self, "_non_clamped", self.scale_value)

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of the scaler (numbers only: ``cstorch.save`` / ``load`` read it back)."""
        return {"loss_scale": self.scale_value, "clean_steps": self.clean_steps, "skipped_steps": self.skipped_steps,
                "dynamic": self.dynamic, "enabled": self.enabled}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.scale_value = self._non_clamped = float(state["loss_scale"])
        self.clean_steps = int(state.get("clean_steps", 0))
        self.skipped_steps = int(state.get("skipped_steps", 0))


def optimizer_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, grad_scaler: GradScaler,
                   max_gradient_norm: float | None = None, max_gradient_value: float | None = None) -> None:
    """``cstorch.amp.optimizer_step(loss, optimizer, grad_scaler, max_gradient_norm=None,
    max_gradient_value=None)``: backward from the scaled loss, unscale, clip (by norm or by value, not both),
    step (skipped on overflow), update the scale, zero the gradients, as Cerebras' helper does."""
    if not isinstance(loss, torch.Tensor):
        raise CerebrasError(f"optimizer_step needs the loss tensor, got {type(loss).__name__}",
                            fix="pass the loss your step computed")
    if not isinstance(grad_scaler, GradScaler):
        raise CerebrasError(f"optimizer_step needs a cstorch.amp.GradScaler, got {type(grad_scaler).__name__}",
                            fix="grad_scaler = cstorch.amp.GradScaler(loss_scale='dynamic')")
    for name, value in (("max_gradient_norm", max_gradient_norm), ("max_gradient_value", max_gradient_value)):
        if value is not None and not (isinstance(value, (int, float)) and value >= 0 and math.isfinite(value)):
            raise CerebrasError(f"{name} must be a number ≥ 0, got {value!r}", fix=f"e.g. {name}=1.0")
    if max_gradient_norm is not None and max_gradient_value is not None:
        raise CerebrasError("gradients are clipped by norm or by value, not both",
                            fix="give max_gradient_norm or max_gradient_value")
    optimizers = list(optimizer) if isinstance(optimizer, (list, tuple)) else [optimizer]
    grad_scaler.scale(loss).backward()
    for opt in optimizers:
        grad_scaler.unscale_(opt)
        params = [p for g in opt.param_groups for p in g["params"]]
        if max_gradient_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, max_gradient_norm)
        elif max_gradient_value is not None:
            torch.nn.utils.clip_grad_value_(params, max_gradient_value)
    for opt in optimizers:
        grad_scaler.step(opt)
    grad_scaler.update()
    for opt in optimizers:
        opt.zero_grad()


__all__ = ["GradScaler", "autocast", "enable_mixed_precision", "get_floating_point_dtype",
           "get_floating_point_dtype_str", "get_half_dtype", "get_half_dtype_str",
           "get_init_params", "is_cbfloat16_tensor", "mixed_precision", "optimizer_step", "set_half_dtype",
           "use_bfloat16"]
