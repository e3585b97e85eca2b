"""The host as a target: how well the model predicts what this CPU really does (measured here).

``ak.hardware.calibrate()`` measures this CPU's matmul rate and memory bandwidth; those are
already achieved rates, so the CPU model applies no efficiency factor to them. What calibration
does not cover is eager PyTorch's fixed cost per op (dispatch, allocation), measured here once
per process with a loop of tiny ops.

``validate_host(models)`` compares ``ak.compile(model, inputs, target="host", precision="fp32")``'s
modelled step time against the median of forward passes timed on this CPU, in the same run.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch
from torch import nn


@lru_cache(maxsize=1)
def dispatch_overhead_s() -> float:
    """Median time of one tiny eager op on this host (measured once per process)."""
    a = torch.ones(8)
    for _ in range(200):
        torch.add(a, a)
    samples = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(500):
            torch.add(a, a)
        samples.append((time.perf_counter() - t0) / 500)
    return statistics.median(samples)


def measure_forward_s(model: nn.Module, example_inputs: Any, runs: int = 7, warmup: int = 2) -> float:
    """Median wall time of one no-grad forward on this host (measured)."""
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    with torch.no_grad():
        for _ in range(warmup):
            model(*args)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            model(*args)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


@dataclass(frozen=True)
class HostCase:
    name: str
    predicted_s: float  # modelled
    measured_s: float  # measured on this host, same run
    kernels: int

    @property
    def error(self) -> float:
        return (self.predicted_s - self.measured_s) / self.measured_s


@dataclass(frozen=True)
class HostValidation:
    cases: tuple[HostCase, ...]

    @property
    def median_abs_error(self) -> float:
        return statistics.median(abs(c.error) for c in self.cases)

    def table(self) -> str:
        lines = [f"{'model':<22} {'modelled':>10} {'measured':>10} {'error':>7}  (host, fp32, no grad)"]
        for c in self.cases:
            lines.append(f"{c.name:<22} {c.predicted_s * 1e3:>8.2f}ms {c.measured_s * 1e3:>8.2f}ms {c.error:>+7.0%}")
        lines.append(f"median |error| {self.median_abs_error:.0%} (goal ≤ 20%)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def validate_host(models: dict[str, tuple[nn.Module, Any]]) -> HostValidation:
    """Predicted (target="host") vs measured forward time for each ``name -> (model, inputs)``."""
    from accelkit.compiler.program import compile

    cases = []
    for name, (model, inputs) in models.items():
        model.eval()
        args = inputs if isinstance(inputs, tuple) else (inputs,)
        prog = compile(model, args, target="host", precision="fp32")
        measured = measure_forward_s(model, args)
        cases.append(HostCase(name, prog.report.step_time_s, measured, len(prog.kernels)))
    return HostValidation(tuple(cases))
