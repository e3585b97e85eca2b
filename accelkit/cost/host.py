"""The host as a target: how well the model predicts what this CPU really does (measured here).

``ak.hardware.calibrate()`` measures this CPU's matmul rate and memory bandwidth; those are
already achieved rates, so the CPU model applies no efficiency factor to them. What calibration
does not cover is eager PyTorch's fixed cost per op (dispatch, allocation), measured here once
per process with a loop of tiny ops.

These are measurements the CPU model reads; ``accelkit.sim.host_validation.validate_host`` (which
compiles, so it sits above the compiler) checks the model against forward passes timed here.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar, cast

import torch
from torch import nn

from accelkit.cache import CACHE, measured_once

F = TypeVar("F", bound=Callable[..., Any])


def _keeps_rng(fn: F) -> F:
    """Run ``fn`` with torch's global random state saved and put back after: measuring this host (tiny models
    built with random weights, ops such as dropout replayed) must never change the user's random draws, so a
    model measured here still gives what plain PyTorch gives with the same seed."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with torch.random.fork_rng(devices=[]):
            return fn(*args, **kwargs)
    return cast(F, wrapper)


@measured_once("dispatch_overhead_s")
@_keeps_rng
def dispatch_overhead_s() -> float:
    """Median Python-side cost of one op inside an eager model's forward on this host (measured once).

    A model of 30 tiny layers (Linear, GELU, LayerNorm on 8 values) does no arithmetic worth timing:
    its forward time over its 30 ops, less the time of the same ATen ops called directly, is what
    eager PyTorch spends per op on module calls and Python around the kernels.
    """
    layers: list[nn.Module] = []
    for _ in range(10):
        layers += [nn.Linear(8, 8), nn.GELU(), nn.LayerNorm(8)]
    tiny = nn.Sequential(*layers).eval()
    x = torch.randn(1, 8)
    per_op = measure_forward_s(tiny, (x,), runs=15, warmup=5) / len(layers)
    lin, ln = layers[0], layers[2]
    direct = [
        measure_forward_s(lambda v: torch.ops.aten.linear.default(v, lin.weight, lin.bias), (x,), runs=15),
        measure_forward_s(lambda v: torch.ops.aten.gelu.default(v), (x,), runs=15),
        measure_forward_s(lambda v: torch.ops.aten.layer_norm.default(v, [8], ln.weight, ln.bias), (x,), runs=15),
    ]
    return max(0.0, per_op - statistics.mean(direct))


@measured_once("view_op_s")
@_keeps_rng
def view_op_s() -> float:
    """Median time of one eager view op (view, transpose, slice) on this host (measured once)."""
    x = torch.randn(4, 8)
    calls = [lambda v: v.view(8, 4), lambda v: v.transpose(0, 1), lambda v: v[:, :4]]
    return statistics.median(measure_forward_s(c, (x,), runs=15) for c in calls)


@_keeps_rng
def measure_forward_s(model: Any, example_inputs: Any, runs: int = 7, warmup: int = 2) -> float:
    """Median wall time of one no-grad forward (or call) on this host (measured)."""
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
class HostMeasurements:
    """What this host measured for one compiled program, once, at compile time: the CPU model only reads it,
    so a report is a pure function of the program (and a saved program carries its measurements).

    ``dispatch_s``: eager PyTorch's cost per op; ``view_op_s``: one view op; ``op_s``: graph node name ->
    median seconds of that ATen op on fresh tensors of the captured shapes (fp32; nodes that cannot be
    replayed are absent)."""

    dispatch_s: float
    view_op_s: float
    op_s: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "op_s", MappingProxyType(dict(self.op_s)))

    def to_dict(self) -> dict[str, Any]:
        return {"dispatch_s": self.dispatch_s, "view_op_s": self.view_op_s, "op_s": dict(self.op_s)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HostMeasurements:
        op_s = {str(k): float(v) for k, v in dict(d.get("op_s", {})).items()}
        if any(not math.isfinite(v) or v < 0 for v in (*op_s.values(), float(d["dispatch_s"]), float(d["view_op_s"]))):
            raise ValueError("host measurements must be finite, non-negative seconds")
        return cls(float(d["dispatch_s"]), float(d["view_op_s"]), op_s)


@_keeps_rng
def measure(graph: Any) -> HostMeasurements:
    """Measure on this host what the CPU model needs for ``graph``: dispatch, views, and each forward op's time
    (the calibration a compile for the host does once; op times are cached per op and shapes)."""
    op_s = {}
    for node in graph.nodes:
        if node.section == "fwd" and "args" in node.extra:
            t = op_time_s(node.op, node.extra["args"], node.extra.get("kwargs", {}))
            if t is not None:
                op_s[node.name] = t
    return HostMeasurements(dispatch_overhead_s(), view_op_s(), op_s)


# ---- profiled op times: the CPU model's kernels, measured once per (op, shapes) ----------------
_OP_TIMES = CACHE.op_times  # ak.cache's op times (its key: the JSON of [op, args, kwargs])


def _fresh(spec: Any, gen: torch.Generator) -> Any:
    if isinstance(spec, dict) and "tensor" in spec:
        shape, dtype = spec["tensor"]
        dt = getattr(torch, dtype)
        if dt.is_floating_point:
            return torch.randn(shape, generator=gen).to(dt)
        if dt == torch.bool:
            return torch.zeros(shape, dtype=dt)
        return torch.zeros(shape, dtype=dt)  # indices: 0 is valid for every table
    if isinstance(spec, list):
        return [_fresh(x, gen) for x in spec]
    return spec


@_keeps_rng
def op_time_s(op_name: str, args: list[Any], kwargs: dict[str, Any]) -> float | None:
    """Median time of one ATen op on fresh tensors of the recorded shapes, on this host (measured,
    cached per op and shapes, as Vidur profiles kernels). None when the op cannot be replayed."""
    import json

    key = json.dumps([op_name, args, kwargs], sort_keys=True, default=str)
    if key in _OP_TIMES:
        return _OP_TIMES[key]
    try:
        ns, _, rest = op_name.partition(".")
        name, _, overload = rest.partition(".")
        op = getattr(getattr(getattr(torch.ops, ns), name), overload or "default")
        gen = torch.Generator().manual_seed(0)
        real = [_fresh(a, gen) for a in args]
        with torch.no_grad():
            op(*real, **kwargs)
            reps = []
            for _ in range(5):
                t0 = time.perf_counter()
                op(*real, **kwargs)
                reps.append(time.perf_counter() - t0)
        value: float | None = statistics.median(reps)
    except Exception:  # an op that needs real data (indices, masks) or a kwarg not recorded
        value = None
    if value is not None:
        _OP_TIMES[key] = value
    return value
