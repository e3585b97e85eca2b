"""A data-loader wrapper that prefetches on a background thread and measures time spent waiting.

Real accelerators are fed by host CPUs; when the host cannot prepare batches as fast as the chip
consumes them, the chip waits. ``PrefetchLoader`` keeps ``prefetch`` batches ready and records how
long the training loop waited for each one (measured on this host), so a Session can compare that
with the modelled step time and say when a run is input-bound.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

_DONE = object()


class PrefetchLoader:
    def __init__(self, data: Iterable[Any], prefetch: int = 2) -> None:
        if prefetch < 1:
            raise ValueError("prefetch must be ≥ 1")
        self.data = data
        self.prefetch = prefetch
        self.wait_s = 0.0  # measured: time the consumer spent blocked on the next batch
        self.batches = 0

    def __len__(self) -> int:
        return len(self.data)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        q: queue.Queue[Any] = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()

        def produce() -> None:
            try:
                for item in self.data:
                    while not stop.is_set():
                        try:
                            q.put(item, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                q.put(_DONE)
            except BaseException as exc:  # surface loader errors in the consumer, with their traceback
                q.put(exc)

        worker = threading.Thread(target=produce, name="accelkit-prefetch", daemon=True)
        worker.start()
        try:
            while True:
                t0 = time.perf_counter()
                item = q.get()
                self.wait_s += time.perf_counter() - t0
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                self.batches += 1
                yield item
        finally:
            stop.set()
            worker.join(timeout=1.0)
