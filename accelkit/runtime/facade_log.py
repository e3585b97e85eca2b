"""What the vendor facades tell the person running a vendor script, beyond the script's own output.

Three things, kept here so each facade records them the same way and ``accelkit vendor-run`` can print
them at the end of a run (and a fourth, said at once: :func:`cpu_work`, when one call's real numerics will keep
this CPU busy for minutes):

- **options accepted but not simulated**: an option that only matters on the real hardware (a GroqView
  file, an IPU memory proportion, a compiler flag) is accepted so the script runs unchanged; it is
  recorded with what it does on the real machine and why the simulated chip does not need it.
  (An option that changes what is *computed* is never recorded here: a facade honours it, or refuses it
  with an error naming it.)
- **runs**: every facade object with a modelled clock registers a ``report()`` callable, so the
  launcher can print each modelled time even when the tutorial script prints nothing about it;
- **errors**: :func:`vendor_call` turns an exception PyTorch raises inside a vendor call (the user's
  model or loss running under ``poptorch.trainingModel``, a ``cstorch.trace`` step, ...) into a
  :class:`VendorCallError` naming that call and, for the common causes, the fix.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from accelkit.errors import AccelkitError


@dataclass(frozen=True)
class AcceptedOption:
    """An option a vendor script set that only matters on the real hardware."""

    vendor: str  # "PopTorch", "SambaFlow", "Cerebras", "GroqFlow"
    option: str  # as the script wrote it, e.g. "groqit(groqview=True)"
    why: str  # what it does on the real machine, and why the simulation does not need it
    emulated: bool = False  # True: the simulation does what the option asks, in its own way (``why`` says how)

    def __str__(self) -> str:
        how = "emulated" if self.emulated else "not simulated"
        return f"{self.vendor}: {self.option} accepted, {how}: {self.why}"


_accepted: list[AcceptedOption] = []
_runs: list[tuple[str | Callable[[], str], Callable[[], Any]]] | None = None  # only while a launcher collects: see collecting()
_resets: list[Callable[[], None]] = []  # a facade's module state to clear before each vendor script


LONG_CALL_S = 60.0  # a call whose numerics this CPU needs longer than this for is announced (cpu_work)
_cpu_said: set[str] = set()


@functools.cache
def cpu_matmul_rate() -> float:
    """FLOP/s this CPU's fp32 matrix products reach: the fastest of five 512 x 512 x 512 products after one to warm
    up, MEASURED here once per process (the one other work disturbed least; an upper bound on what a model's whole
    step reaches)."""
    import time

    import torch

    a, b = torch.randn(512, 512), torch.randn(512, 512)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * 512**3 / max(best, 1e-9)


def cpu_work(call: str, flops: float, what: str) -> float:
    """Say once per ``call`` (on stderr) when the ``flops`` of one call's real numerics will take this CPU more than
    :data:`LONG_CALL_S` even at its measured matmul rate, naming ``what`` the call computes and how to stop early
    (``--max-calls``). Returns that lower bound, in seconds."""
    import sys

    seconds = flops / cpu_matmul_rate()
    if seconds > LONG_CALL_S and call not in _cpu_said:
        _cpu_said.add(call)
        stop = (f"this run stops after {_budget[0]} call(s) (--max-calls)" if _budget[0] is not None else
                "to see the reports sooner, run a few calls: accelkit vendor-run --max-calls 1 ...")
        print(f"accelkit: each call of {call} computes {what} on this CPU, {flops / 1e12:.3g} TFLOP: at least "
              f"{_duration(seconds)} at the {cpu_matmul_rate() / 1e9:.0f} GFLOP/s this CPU's fp32 matrix products "
              f"reach (MEASURED); the accelerator's time is modelled, not this; {stop}", file=sys.stderr, flush=True)
    return seconds


def _duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


def reset_with_each_run(clear: Callable[[], None]) -> None:
    """Have :func:`collecting` call ``clear`` before each script, so a facade's module-level state (the current
    Cerebras backend, the half dtype) does not carry over from one script to the next in one process."""
    if clear not in _resets:
        _resets.append(clear)


def accept(vendor: str, option: str, why: str, *, emulated: bool = False) -> None:
    """Record that ``option`` was accepted and left unsimulated, or (``emulated``) done the simulation's own way
    (once per vendor and option)."""
    item = AcceptedOption(vendor, option, why, emulated)
    if item not in _accepted:
        _accepted.append(item)


def accepted() -> list[AcceptedOption]:
    """Every hardware-only option recorded in this process, in the order they were set."""
    return list(_accepted)


def register_run(label: str | Callable[[], str], report: Callable[[], Any]) -> None:
    """Register a facade object's ``report`` for the launcher's end-of-run summary; ``label`` may be a function,
    asked at the end (a backend's precision can change after it is registered). Outside :func:`collecting`
    nothing is kept, so facade objects made in a notebook are not kept alive."""
    if _runs is not None:
        _runs.append((label, report))


def runs() -> list[tuple[str, Callable[[], Any]]]:
    """The reports registered while collecting, in the order they were registered."""
    return [(label() if callable(label) else label, report) for label, report in _runs or []]


class CallBudgetSpent(BaseException):
    """Raised at the entry of a vendor call once the launcher's ``--max-calls`` are spent: the script stops there.
    Not an ``Exception``, so a script's own ``except Exception`` does not swallow the stop."""

    def __init__(self, call: str, spent: int) -> None:
        super().__init__(call)
        self.call, self.spent = call, spent


# ``--max-calls``: how many vendor calls the script may make (None: all), and how many it made
_budget: list[int | None] = [None]
_calls = [0, 0]  # calls made, calls open (a vendor call inside another counts once)


@contextlib.contextmanager
def collecting(max_calls: int | None = None) -> Iterator[None]:
    """For one vendor script's run: start from nothing, keep every run registered until the block ends. With
    ``max_calls``, the call after that many vendor calls raises :class:`CallBudgetSpent` instead of running."""
    global _runs
    _accepted.clear()
    for clear in _resets:
        clear()
    _runs = []
    _budget[0], _calls[:] = max_calls, [0, 0]
    try:
        yield
    finally:
        _runs = None
        _budget[0], _calls[:] = None, [0, 0]
        _cpu_said.clear()


class VendorCallError(AccelkitError, RuntimeError):
    """PyTorch failed inside a vendor call; names the call, PyTorch's own message and the fix."""


# (pattern in PyTorch's message, the fix); the first that matches wins
KNOWN_CAUSES: tuple[tuple[str, str], ...] = (
    (r"expected (scalar type|target dtype to be) Long|Long but found Int|expected .*Long",
     "the loss wants int64 class labels: convert them where the batch is made, e.g. `labels.long()` (Cerebras "
     "systems take int32 labels; on this CPU PyTorch's CrossEntropyLoss needs int64)"),
    (r"mat1 and mat2 shapes cannot be multiplied|size mismatch|shape .* is invalid for input",
     "a layer got inputs of another shape than it was built for: check the batch's shape against the model "
     "(e.g. flatten images before a Linear layer)"),
    (r"expected scalar type (Half|Float|BFloat16) but found|mixed dtype|must have the same dtype",
     "the inputs' dtype differs from the model's: convert them, e.g. `x.half()` for a `model.half()` model"),
    (r"element 0 of tensors does not require grad",
     "the loss does not depend on any trainable parameter: return the loss computed from the model's output"),
)


def _fix_for(message: str) -> str:
    for pattern, fix in KNOWN_CAUSES:
        if re.search(pattern, message):
            return fix
    return "the error is PyTorch's, raised while your model ran on this CPU: the line named above is where"


@contextlib.contextmanager
def vendor_call(call: str) -> Iterator[None]:
    """Run the body as vendor call ``call`` (e.g. ``"poptorch.trainingModel(...)(x, labels)"``): accelkit
    errors pass through, PyTorch's ``RuntimeError`` / ``TypeError`` / ``IndexError`` become a
    :class:`VendorCallError` that names the call and the fix, chained to the original. Counted against the
    launcher's ``--max-calls`` (see :func:`collecting`)."""
    if not _calls[1]:  # an outermost call
        if _budget[0] is not None and _calls[0] >= _budget[0]:
            raise CallBudgetSpent(call, _calls[0])
        _calls[0] += 1
    _calls[1] += 1
    try:
        yield
    except AccelkitError:
        raise
    except (RuntimeError, TypeError, IndexError, ValueError) as exc:
        where = _user_line(exc)
        raise VendorCallError(f"{call} failed: {type(exc).__name__}: {exc}".rstrip(), where=where,
                              fix=_fix_for(str(exc))) from exc
    finally:
        _calls[1] -= 1


def _user_line(exc: BaseException) -> str | None:
    """The last frame of the traceback outside accelkit, torch and installed packages: the user's own line."""
    import os
    import sysconfig
    import traceback

    import torch

    accelkit_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this package, not its root
    installed = {sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")}
    libraries = tuple(os.path.join(p, "") for p in (*installed, os.path.dirname(torch.__file__ or ""), accelkit_dir))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(libraries)]
    if not frames:
        return None
    f = frames[-1]
    return f"{f.filename}:{f.lineno}" + (f": {f.line.strip()}" if f.line else "")


__all__ = ["KNOWN_CAUSES", "AcceptedOption", "CallBudgetSpent", "VendorCallError", "accept", "accepted", "collecting",
           "register_run", "runs", "vendor_call"]
