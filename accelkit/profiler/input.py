"""How fast your input pipeline delivers samples on this host (MEASURED), for ``input_rate=`` of ``ak.compile``
and ``ak.Session``.

    rate = accelkit.profiler.input_rate(loader)        # iterates the loader a few times, timing each pass
    rate.samples_per_s, rate.spread                    # the median pass and the passes' spread
    ak.compile(model, x, target="gc200", training=True, input_rate=rate.samples_per_s)

An accelerator computes only as fast as the host feeds it: a DataLoader that decodes, augments or copies
slower than the chip computes is the bound, whatever the chip (Graphcore's "Efficient data loading" tutorial
measures its loader alone at 37,700 items/s beside the IPU's 47,300 on synthetic data). The loader's workers run
while the device computes, so a modelled step takes at least ``batch / input_rate``; the report then says the
chip waits for its data. Pass the rate of the loader you will really run (its workers, its transforms), measured
on the host that will run it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch

from accelkit.errors import AccelkitError


@dataclass(frozen=True)
class InputRate:
    """Samples per second an input pipeline delivered on this host: the median of ``repeats`` timed passes over
    ``batches`` batches each (MEASURED), and the passes' spread."""

    samples_per_s: float  # the median pass
    spread: float  # (fastest - slowest) / median over the passes
    passes: tuple[float, ...]  # each pass's samples per second
    batches: int  # batches in the last pass
    samples: int  # samples in the last pass

    label = "measured"

    def __str__(self) -> str:
        return (f"input pipeline (MEASURED on this host): {self.samples_per_s:,.0f} samples/s, median of "
                f"{len(self.passes)} passes of about {self.batches} batches (spread {self.spread:.0%})")


def _samples(batch: Any) -> int:
    """Samples in one batch: the first tensor's leading dimension (1 for a 0-d or 1-d sample)."""
    leaves = torch.utils._pytree.tree_flatten(batch)[0]
    first = next((t for t in leaves if isinstance(t, torch.Tensor)), None)
    if first is None:
        raise AccelkitError(f"a batch from the loader holds no tensor ({type(batch).__name__})",
                            fix="time a loader whose batches are tensors (or tuples / dicts of them)")
    return int(first.shape[0]) if first.dim() > 1 else 1


def input_rate(loader: Iterable[Any], *, batches: int = 20, repeats: int = 5, warmup: int = 2,
               min_time_s: float = 0.05) -> InputRate:
    """Time ``repeats`` passes over ``loader`` (after ``warmup`` batches, which start its workers and fill their
    queues), each at least ``batches`` batches and ``min_time_s`` seconds long, and return the samples per second
    delivered: the median pass and the spread. Each pass starts a new iteration of the loader, as an epoch does;
    a loader with fewer batches times what it has."""
    for name, n in (("batches", batches), ("repeats", repeats), ("warmup", warmup)):
        if isinstance(n, bool) or not isinstance(n, int) or n < (0 if name == "warmup" else 1):
            raise AccelkitError(f"{name} must be a whole number{' ≥ 0' if name == 'warmup' else ' ≥ 1'}, not {n!r}",
                                fix=f"e.g. input_rate(loader, {name}={ {'batches': 20, 'repeats': 3}.get(name, 2) })")
    if not isinstance(loader, Iterable):
        raise AccelkitError(f"input_rate times an iterable of batches (a DataLoader), not {type(loader).__name__}",
                            fix="pass your DataLoader, e.g. input_rate(torch.utils.data.DataLoader(ds, batch_size=16))")
    rates: list[float] = []
    per_pass = 0
    counted = 0
    for _ in range(repeats):
        it = iter(loader)
        for _ in range(warmup):
            if next(it, None) is None:
                break
        n = seen = 0
        t0 = time.perf_counter()
        for batch in it:
            seen += _samples(batch)
            n += 1
            if n >= batches and time.perf_counter() - t0 >= min_time_s:
                break
        dt = time.perf_counter() - t0
        if n == 0:
            raise AccelkitError(f"the loader gave no batch after the {warmup} warm-up batch(es)",
                                fix="time a loader with more batches, or pass warmup=0")
        rates.append(seen / dt if dt > 0 else float("inf"))
        per_pass, counted = seen, n
    median = statistics.median(rates)
    spread = (max(rates) - min(rates)) / median if median and len(rates) > 1 else 0.0
    return InputRate(median, spread, tuple(rates), counted, per_pass)


__all__ = ["InputRate", "input_rate"]
