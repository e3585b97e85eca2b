"""Moved to :mod:`accelkit.workflow.compare` (it compiles twice and compares: a workflow); the old import path
keeps working, loaded on first use."""

from __future__ import annotations

from typing import Any

_MOVED = ("FallbackOrPort", "fallback_or_port")


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from accelkit.workflow import compare

        return getattr(compare, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_MOVED)  # noqa: PLE0605
