"""accelkit's caches, in one explicit object (``ak.cache``): what is kept between calls, under which key, and a
way to forget it.

    ak.cache.info()    # {'graphs': 2, 'findings': 1, 'passes': 3, 'host_timings': 2, 'op_times': 40}: entries held now
    ak.cache.clear()   # forget them all: the next compile captures, checks and measures afresh

What it holds, and the key of each:

- ``graphs``: captured graphs, per model (held weakly: a model that is garbage collected takes its graphs with it),
  keyed by ``(input shapes/dtypes/devices, training, the model's structure)``. The structure is every submodule
  (object, class, forward, train/eval flag) and every parameter and buffer (object, shape, dtype): replacing a
  layer or resizing a weight changes the key, so "modify, then compile again" never reuses a stale graph; weight
  values are not in it (a graph holds shapes), so a training step keeps the capture.
- ``findings``: the porting check's report, per model (weakly), keyed by ``(id(graph), chip spec)``; each entry
  keeps its graph, so an id reused by a later graph never matches.
- ``passes``: the compiler's pass pipeline over a graph (its kernels and pass results), per model (weakly), keyed
  by ``(id(graph), family, fusion level, its generated-code efficiency, findings, host nodes)``; each entry keeps
  its graph, as ``findings`` does. A sweep that compiles one captured model for many chips of one family runs the
  passes once.
- ``host_timings``: this host's measured costs that a compile for the host target reads, by name
  (``"dispatch_overhead_s"``, ``"view_op_s"``), measured once.
- ``op_times``: each ATen op's measured time on this host, keyed by the JSON of ``[op, args, kwargs]`` (the shapes
  and dtypes it ran on).

Nothing here is filled at import time; everything is filled on first use.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CACHE", "Cache", "MeasuredOnce", "clear", "info", "measured_once"]


@dataclass(eq=False)
class Cache:
    """Every cache accelkit keeps between calls (see the module docstring for each key)."""

    graphs: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = field(default_factory=weakref.WeakKeyDictionary)
    findings: weakref.WeakKeyDictionary[Any, dict[Any, tuple[Any, Any]]] = field(
        default_factory=weakref.WeakKeyDictionary)
    passes: weakref.WeakKeyDictionary[Any, dict[Any, tuple[Any, Any]]] = field(
        default_factory=weakref.WeakKeyDictionary)
    host_timings: dict[str, float] = field(default_factory=dict)
    op_times: dict[str, float] = field(default_factory=dict)

    def clear(self) -> None:
        """Forget everything (in place: every reader keeps the same containers)."""
        self.graphs.clear()
        self.findings.clear()
        self.passes.clear()
        self.host_timings.clear()
        self.op_times.clear()

    def info(self) -> dict[str, int]:
        """How many entries each part holds now."""
        return {"graphs": sum(len(v) for v in self.graphs.values()),
                "findings": sum(len(v) for v in self.findings.values()),
                "passes": sum(len(v) for v in self.passes.values()),
                "host_timings": len(self.host_timings), "op_times": len(self.op_times)}

    def __repr__(self) -> str:
        return "Cache(" + ", ".join(f"{k}={v}" for k, v in self.info().items()) + ")"


CACHE = Cache()
"""The one cache of this process."""


def clear() -> None:
    """Forget every captured graph, porting finding, pass pipeline and host timing (``ak.cache.clear()``)."""
    CACHE.clear()


def info() -> dict[str, int]:
    """How many entries each part of the cache holds (``ak.cache.info()``)."""
    return CACHE.info()


class MeasuredOnce:
    """A host measurement taken on first use and kept in ``CACHE.host_timings[name]`` until the cache is cleared;
    ``cache_clear()`` forgets this one measurement."""

    def __init__(self, name: str, measure: Callable[[], float]) -> None:
        self.name = name
        self.measure = measure
        functools.update_wrapper(self, measure)

    def __call__(self) -> float:
        if self.name not in CACHE.host_timings:
            CACHE.host_timings[self.name] = self.measure()
        return CACHE.host_timings[self.name]

    def cache_clear(self) -> None:
        CACHE.host_timings.pop(self.name, None)


def measured_once(name: str) -> Callable[[Callable[[], float]], MeasuredOnce]:
    """Decorate a measurement of this host so that it runs once and is kept under ``name`` in ``ak.cache``."""
    return lambda measure: MeasuredOnce(name, measure)
