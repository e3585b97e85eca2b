"""The clock behind both Cerebras shapes: a user-written training loop, timed step by step on the wafer.

Cerebras' PyTorch integration leaves the loop to the user: they call the model, ``loss.backward()``
and ``optimizer.step()`` themselves. So instead of running the step (as :meth:`ak.Session.run` does),
:class:`StepClock` watches it: the wrapped model reports its forward pass, a hook on every parameter
reports the backward pass, an optimizer hook reports the update. At the end of each step the program
for those input shapes is compiled once (by the :class:`ak.Session` underneath) and the step adds the
modelled time of the sections it ran. The numerics are the user's own PyTorch calls on this CPU.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import torch
import torch.optim.optimizer as torch_optimizer
from torch import nn

from accelkit.errors import AccelkitError
from accelkit.runtime.session import Session, SessionReport

SYSTEMS = {"wse2": "CS-2", "wse3": "CS-3"}  # the wafer in each Cerebras system

MODE_NOTES = {
    "pipelined": "pipelined execution: the whole model (weights, activations, gradients) lives in the wafer's "
                 "SRAM, each layer on its own region of the fabric, and samples stream through the layers",
    "weight-streaming": "weight streaming: the weights live off the wafer (MemoryX) and stream in one layer at a "
                        "time; activations stay on the wafer; gradients stream back out for the update",
}


class CerebrasError(AccelkitError, ValueError):
    """A Cerebras-style loop used in a way that cannot work: says what, and the fix."""


def check_system(system: str) -> str:
    key = system.strip().lower()
    if key not in SYSTEMS:
        raise CerebrasError(f"{system!r} is not a Cerebras wafer in accelkit's catalog",
                            fix=f"use one of {list(SYSTEMS)} ({', '.join(f'{k} = {v}' for k, v in SYSTEMS.items())})")
    return key


class StepClock:
    """Counts each step of a user-written loop on the simulated wafer (see the module docstring)."""

    def __init__(self, model: nn.Module, *, target: str, precision: str = "fp32", mode: str = "auto",
                 stack: str = "cstorch") -> None:
        self.session = Session(model, target=target, precision=precision, mode=mode, stack=stack)
        self._target, self._mode, self._stack = target, mode, stack
        self.model = model
        self._example: Any = None  # the first forward's inputs in this step: a tuple, or a dict of keywords
        self._sections: set[str] = set()
        self._t0 = 0.0
        self._compiling = False
        self.last_program: Any = None  # the compiled program of the last step's shapes
        self._hooks = [p.register_post_accumulate_grad_hook(self._on_grad)
                       for p in model.parameters() if p.requires_grad]

    def use_precision(self, precision: str) -> None:
        """Compile for ``precision`` from now on; only before the first step is counted (the caller checks)."""
        self.session = Session(self.model, target=self._target, precision=precision, mode=self._mode,
                               stack=self._stack)

    @property
    def capturing(self) -> bool:
        """True while the step's program is captured (the model's forward runs once more, on example inputs whose
        values are not known, to model its time): not the user's step."""
        return self._compiling

    # ---- events from the user's step ----------------------------------------------------------
    def on_forward(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if self._compiling:
            return
        if self._example is None:
            if kwargs and args:
                raise CerebrasError("the compiled model takes positional or keyword inputs, not both",
                                    fix="call model(x, y) or model(x=x, y=y)")
            self._example = args if args else dict(kwargs)
            self._t0 = time.perf_counter()
        self._sections.add("fwd")

    def _on_grad(self, _p: torch.Tensor) -> None:
        if not self._compiling and self._example is not None:
            self._sections.add("bckwd")

    @contextlib.contextmanager
    def watching_optimizers(self) -> Iterator[None]:
        """Within this block, any optimizer's ``step()`` counts as this step's ``opt`` section."""
        def hook(*_: Any) -> None:
            if not self._compiling and self._example is not None:
                self._sections.add("opt")

        handle = torch_optimizer.register_optimizer_step_post_hook(hook)
        try:
            yield
        finally:
            handle.remove()

    # ---- the step boundary ----------------------------------------------------------------------
    def end_step(self) -> float:
        """Close the current step: add its modelled time to the session; returns that time (0 if no step)."""
        if self._example is None:
            return 0.0
        example, secs = self._example, tuple(s for s in ("fwd", "bckwd", "opt") if s in self._sections)
        host = time.perf_counter() - self._t0
        self._example, self._sections = None, set()
        self._compiling = True  # capture runs the model: its forward and hooks are not the user's step
        try:
            prog = self.session.program(example, training="bckwd" in secs)  # a dict: keyword inputs
        finally:
            self._compiling = False
        self.last_program = prog
        first = next((t for t in torch.utils._pytree.tree_flatten(example)[0] if isinstance(t, torch.Tensor)), None)
        n = int(first.shape[0]) if first is not None and first.dim() else 1
        return self.session.tick(prog.report.step_parts(secs, n), n, host)  # the Session's own clock

    # ---- results --------------------------------------------------------------------------------
    @property
    def simulated_time_s(self) -> float:
        return self.session.simulated_time_s

    @property
    def mode(self) -> str | None:
        """The execution mode the compiler chose for the last step (``pipelined`` / ``weight-streaming``)."""
        return self.last_program.mode if self.last_program is not None else None

    def report(self) -> SessionReport:
        """The session's report (MODELLED totals), plus what the execution mode means on the wafer."""
        rep = self.session.report()
        prog = self.last_program
        if prog is not None:
            rep.mode = prog.mode
            rep.utilization = dict(prog.report.utilization)
            rep.notes.insert(0, f"execution mode on the {SYSTEMS.get(prog.target, prog.target)}: "
                                + MODE_NOTES.get(prog.mode, prog.mode))
        return rep

    def close(self) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks = []


__all__ = ["MODE_NOTES", "SYSTEMS", "CerebrasError", "StepClock", "check_system"]


class ClockResults:
    """What both Cerebras APIs expose about their clock; subclasses set ``clock`` and define ``_clock()``
    (which raises with the API's own advice when nothing has run yet)."""

    clock: StepClock | None

    def _clock(self) -> StepClock:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def simulated_time_s(self) -> float:
        """Modelled time on the wafer of every step so far (not measured)."""
        return self.clock.simulated_time_s if self.clock is not None else 0.0

    @property
    def mode(self) -> str | None:
        """The execution mode the compiler chose: ``pipelined`` or ``weight-streaming``."""
        return self._clock().mode

    @property
    def program(self) -> Any:
        """The compiled program of the last step (memory plan, placement, modelled report)."""
        return self._clock().last_program

    def report(self) -> SessionReport:
        """Modelled totals (labelled MODELLED), measured host time, and the execution mode explained."""
        return self._clock().report()
