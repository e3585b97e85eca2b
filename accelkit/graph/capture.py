"""(being written) ak.capture."""
from __future__ import annotations

from accelkit.graph.ir import Graph


def capture(model, example_inputs, training: bool = False) -> Graph:  # pragma: no cover - placeholder
    raise NotImplementedError("capture is being written")
