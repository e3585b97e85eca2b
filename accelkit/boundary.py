"""What each kind of argument takes, checked once at every entry point's boundary.

One check per kind of argument (a whole number, a number, a flag, one of a few names, an instance, a callable,
an optimizer, a path), each returning the value or raising :class:`~accelkit.errors.ArgumentError` that names the
argument, what it got, what it takes and an example. ``ak.compile``, ``ak.Session``, ``ak.check``, ``ak.port``,
``ak.serve``, ``ak.profile`` and ``hardware.load`` call them before any work starts, so a wrong argument never
surfaces later as a raw ``TypeError`` from deep inside (or, worse, is accepted and ignored).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from accelkit.errors import AccelkitError, ArgumentError, ModelError

T = TypeVar("T")


def got(value: Any) -> str:
    """How an error shows the value it got: its type and a short repr."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def whole(name: str, value: Any, *, at_least: int = 1, example: str | None = None,
          error: type[AccelkitError] = ArgumentError) -> int:
    """A whole number ≥ ``at_least`` (a bool, a string or a float is refused, even ``True`` or ``'2'``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{name} must be a whole number ≥ {at_least}, not {got(value)}",
                    fix=f"e.g. {example or f'{name}={max(at_least, 2)}'}")
    if value < at_least:
        raise error(f"{name} must be a whole number ≥ {at_least}, got {value}",
                    fix=f"e.g. {example or f'{name}={max(at_least, 2)}'}")
    return int(value)


def maybe_whole(name: str, value: Any, *, at_least: int = 1, example: str | None = None,
                error: type[AccelkitError] = ArgumentError) -> int | None:
    """``None`` (the default is worked out later) or a whole number ≥ ``at_least``."""
    return None if value is None else whole(name, value, at_least=at_least, example=example, error=error)


SEED_MAX = 2**64 - 1  # torch.manual_seed takes seeds below 2**64


def seed(name: str, value: Any, *, example: str | None = None) -> int:
    """A random seed: a whole number from 0 to 2**64 - 1 (what ``torch.manual_seed`` accepts)."""
    whole(name, value, at_least=0, example=example)
    if value > SEED_MAX:
        raise ArgumentError(f"{name} must be at most 2**64 - 1 (torch's seeds are 64-bit), got {value}",
                            fix=f"e.g. {example or f'{name}=0'}")
    return int(value)


def number(name: str, value: Any, *, at_least: float = 0.0, example: str | None = None) -> float:
    """A real number ≥ ``at_least`` (not a bool, not a string, not NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ArgumentError(f"{name} must be a number ≥ {at_least:g}, not {got(value)}",
                            fix=f"e.g. {example or f'{name}=1e-4'}")
    if value < at_least:
        raise ArgumentError(f"{name} must be a number ≥ {at_least:g}, got {value}",
                            fix=f"e.g. {example or f'{name}=1e-4'}")
    return float(value)


def flag(name: str, value: Any) -> bool:
    """``True`` or ``False`` (a string such as ``'yes'`` is refused: it would read as true)."""
    if not isinstance(value, bool):
        raise ArgumentError(f"{name} must be True or False, not {got(value)}", fix=f"e.g. {name}=True")
    return value


def one_of(name: str, value: Any, options: Iterable[Any], *, error: type[AccelkitError] = ArgumentError) -> Any:
    """One of ``options`` (compared as they are: ``'fp32'`` is not ``'FP32'``)."""
    options = list(options)
    if not any(value == o and type(value) is type(o) for o in options):
        raise error(f"{name}={value!r} is not one of {options}", fix=f"use one of {options}, e.g. {name}={options[0]!r}")
    return value


def instance(name: str, value: Any, kind: type[T], *, takes: str, example: str,
             error: type[AccelkitError] = ArgumentError) -> T:
    """An instance of ``kind`` (``takes`` says it in words for the error)."""
    if not isinstance(value, kind):
        raise error(f"{name} must be {takes}, not {got(value)}", fix=f"e.g. {example}")
    return value


def function(name: str, value: Any, *, takes: str, example: str) -> Callable[..., Any] | None:
    """``None`` or something callable (a loss function, a factory), not its name as a string."""
    if value is not None and not callable(value):
        raise ArgumentError(f"{name} must be {takes}, not {got(value)}", fix=f"e.g. {example}")
    return value


def optimizer(value: Any, *, name: str = "optimizer") -> Any:
    """``None`` or an optimizer object (``torch.optim`` or a vendor facade's: it has ``step`` and ``zero_grad``),
    refused here rather than after a whole forward and backward."""
    if value is None:
        return None
    if isinstance(value, type):
        raise ArgumentError(f"{name} must be an optimizer object, not the class {value.__name__}",
                            fix=f"e.g. {name}={value.__name__}(model.parameters(), lr=1e-3)")
    if not (callable(getattr(value, "step", None)) and callable(getattr(value, "zero_grad", None))):
        raise ArgumentError(f"{name} must be an optimizer object (with step() and zero_grad()), not {got(value)}",
                            fix=f"e.g. {name}=torch.optim.AdamW(model.parameters(), lr=1e-3)")
    return value


def path(name: str, value: Any, *, example: str) -> Path:
    """A filesystem path (``str`` or ``os.PathLike``; not bytes, not empty)."""
    if not isinstance(value, (str, os.PathLike)) or isinstance(os.fspath(value), bytes) \
            or not str(os.fspath(value)).strip():
        raise ArgumentError(f"{name} must be a path (a str or pathlib.Path), not {got(value)}", fix=f"e.g. {example}")
    return Path(value)


def real_weights(model: Any, *, entry: str, fix: str) -> None:
    """Refuse a model whose weights are on the meta device where real numbers are needed (a Session runs the
    model; the profiler measures it): nothing would be computed, and any figure would be made up."""
    meta = [n for n, t in (*model.named_parameters(), *model.named_buffers()) if t.device.type == "meta"]
    if meta:
        raise ModelError(f"{entry} runs the model for real, but {type(model).__name__} is on the meta device "
                         f"({len(meta)} tensor(s), e.g. {meta[0]}): it has shapes and no values", fix=fix)


def divisors(n: int, *, most: int = 10_000) -> list[int]:
    """The divisors of ``n`` in order, at most ``most`` of them (the smallest and the largest, half each).

    Found from ``n``'s prime factors (trial division up to a million), never by trying every number up to ``n``:
    an error message about a batch of 10**12 must not take hours to write. A factor left above a million is
    taken as prime (exact for any ``n`` below 10**12)."""
    factors: dict[int, int] = {}
    rest, p = n, 2
    while p * p <= rest and p <= 1_000_000:
        while rest % p == 0:
            factors[p] = factors.get(p, 0) + 1
            rest //= p
        p += 1 if p == 2 else 2
    if rest > 1:
        factors[rest] = factors.get(rest, 0) + 1
    found = [1]
    for prime, power in factors.items():
        found = [d * prime**k for d in found for k in range(power + 1)]
        if len(found) > 4 * most:  # a number with very many divisors: keep the two ends
            found = sorted(found)
            found = found[:most] + found[-most:]
    found = sorted(set(found))
    return found if len(found) <= most else found[: most // 2] + found[-(most - most // 2):]


def nearby_divisors(n: int, around: int, count: int = 4) -> list[int]:
    """A few divisors of ``n`` nearest ``around`` (in order): the legal values an error suggests."""
    near = sorted(divisors(n, most=2_000), key=lambda d: (abs(d - around), d))[:count]
    return sorted(near)
