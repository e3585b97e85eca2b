"""The host as a target, checked: ``validate_host(models)`` compares ``ak.compile(model, inputs,
target="host", precision="fp32")``'s modelled step time against the median of forward passes timed on
this CPU, in the same run. It compiles, so it lives above the compiler; the measurements the CPU model
reads stay in :mod:`accelkit.sim.host`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from accelkit import hardware
from accelkit.cost.host import dispatch_overhead_s, measure_forward_s, view_op_s
from accelkit.workflow.compiling import compile


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


def validate_host(models: dict[str, tuple[nn.Module, Any]], threads: int | None = 1) -> HostValidation:
    """Predicted (target="host") vs measured forward time for each ``name -> (model, inputs)``.

    ``threads`` pins PyTorch's thread count for the calibration and the measurements alike (one thread
    by default: on a shared 2-core machine two threads fight other processes and timings scatter).
    """
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    dispatch_overhead_s.cache_clear()
    view_op_s.cache_clear()
    try:
        spec = hardware.calibrate()  # cached per thread count
        cases = []
        for name, (model, inputs) in models.items():
            model.eval()
            args = inputs if isinstance(inputs, tuple) else (inputs,)
            prog = compile(model, args, target=spec, precision="fp32")
            measured = measure_forward_s(model, args)
            cases.append(HostCase(name, prog.report.step_time_s, measured, len(prog.kernels)))
    finally:
        torch.set_num_threads(before)
        dispatch_overhead_s.cache_clear()
        view_op_s.cache_clear()
    return HostValidation(tuple(cases))
