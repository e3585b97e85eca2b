"""The bottom of accelkit's performance model: plain, typed values that every layer above shares.

    Parallel   how chips split the work (data replicas x tensor shards x pipeline stages)
    Kernel     a group of fused ops that runs as one unit (what the compiler emits, what the model times)

It imports nothing from accelkit but its errors, so the compiler, the performance model, the
runtime and the figures can all read these values without importing each other.
"""

from __future__ import annotations

from accelkit.cost.kernel import Generated, Kernel, OffDevice, layer_of, layers
from accelkit.cost.parallel import Parallel

__all__ = ["Generated", "Kernel", "OffDevice", "Parallel", "layer_of", "layers"]
