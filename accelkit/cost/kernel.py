"""``Kernel``: a group of fused nodes that runs as one unit, the currency of the performance model.

The compiler's fusion pass produces kernels; the cost layer times them. They live here, at the bottom,
so the performance model never imports the compiler (``accelkit.compiler.passes`` re-exports them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Kernel:
    """A group of fused nodes that runs as one unit: a GPU kernel, an RDU section's stage,
    a wafer region's layer, an IPU codelet set, a TSP instruction block.

    A frozen value (its node and op names are tuples, ``extra`` a read-only mapping), so programs can share
    kernels and no reader can change another's; :meth:`scaled` and ``dataclasses.replace`` make new ones."""

    name: str
    kind: str  # "matmul" | "vector" | "memory"
    group: str  # the layer (repeated block) or top-level module it belongs to
    section: str  # fwd | bckwd | opt
    nodes: tuple[str, ...]
    ops: tuple[str, ...]
    module: str
    source: str | None
    flops: int
    bytes_read: int
    bytes_written: int
    param_bytes: int
    out_bytes: int  # bytes of the kernel's result
    saved_bytes: int  # everything its ops produce: what autograd keeps for backward without recompute
    extra: Mapping[str, Any] = field(default_factory=dict)
    # the part of its bytes and FLOPs that does not grow with the batch although no parameter is read: tensors
    # shaped like a weight (a weight's gradient, a weight cast to 16 bits, the sum of a tied weight's gradients)
    fixed_bytes_read: int = 0
    fixed_bytes_written: int = 0
    fixed_flops: int = 0

    def __post_init__(self) -> None:  # lists from JSON or a caller become tuples; extra becomes read-only
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "ops", tuple(self.ops))
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    def __hash__(self) -> int:
        return hash((self.name, self.section, self.nodes))

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def runs_on(self) -> str:
        """``"device"``; ``"host"`` when ``compile(..., fallback="host")`` put it on the host CPU; ``"link"`` for
        a transfer over the host link (``extra["direction"]`` says which way)."""
        return str(self.extra.get("on", "device"))

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved: above the chip's ridge point a kernel is compute bound."""
        return self.flops / self.bytes if self.bytes else float("inf")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (lists and dicts), as a saved artifact stores them."""
        return {k: list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, Mapping) else v
                for k, v in self.__dict__.items()}

    def scaled(self, batch: float, byte_scale: float = 1.0) -> Kernel:
        """This kernel at ``batch`` times the samples and ``byte_scale`` times the bytes per element
        (another precision): FLOPs and activations grow with the batch; weights, weight-shaped tensors (the
        ``fixed_*`` parts: a weight's gradient is as large at any batch) and an optimizer update do not."""
        if batch == 1.0 and byte_scale == 1.0:
            return self
        s = 1.0 if self.section == "opt" else batch
        p = self.param_bytes * byte_scale
        fr, fw = self.fixed_bytes_read * byte_scale, self.fixed_bytes_written * byte_scale
        return replace(
            self, flops=int(self.fixed_flops + max(0, self.flops - self.fixed_flops) * s), param_bytes=int(p),
            bytes_read=int(p + fr + max(0, self.bytes_read * byte_scale - p - fr) * s),
            bytes_written=int(fw + max(0, self.bytes_written * byte_scale - fw) * s),
            out_bytes=int(self.out_bytes * byte_scale * s), saved_bytes=int(self.saved_bytes * byte_scale * s),
            fixed_bytes_read=int(fr), fixed_bytes_written=int(fw))


def layers(kernels: list[Kernel]) -> list[tuple[str, list[Kernel]]]:
    """Consecutive kernels of one layer and section, grouped: an RDU section, a wafer region, a pipeline
    stage's unit of work. A layer can appear twice (a model's embedding and final norm share a module)."""
    out: list[tuple[str, list[Kernel]]] = []
    for k in kernels:
        if out and out[-1][0] == k.group and out[-1][1][0].section == k.section:
            out[-1][1].append(k)
        else:
            out.append((k.group, [k]))
    return out


def layer_of(module: str) -> str:
    """``model.layers.3.mlp.up_proj`` -> ``model.layers.3`` (up to the first index: the repeated block);
    other paths -> their first component."""
    parts = module.split(".") if module else []
    for i in range(len(parts)):
        if parts[i].isdigit():
            return ".".join(parts[: i + 1])
    return parts[0] if parts else "<root>"
