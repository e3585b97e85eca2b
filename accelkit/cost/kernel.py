"""``Kernel``: a group of fused nodes that runs as one unit, the currency of the performance model.

The compiler's fusion pass produces kernels; the cost layer times them. They live here, at the bottom,
so the performance model never imports the compiler (``accelkit.compiler.passes`` re-exports them).

What the compiler learns about a kernel travels in typed fields, not a string-keyed dict: ``matmul_dims`` (the
capture's matrix shape), ``generated`` (:class:`Generated`: code the compiler generated for ops outside the
kernel library) and ``off_device`` (:class:`OffDevice`: a kernel the host CPU runs, or a transfer over the host
link). ``Kernel.extra`` is a read-only view of them under their old names, for readers and saved artifacts.
``vector_flops`` and ``score_flops`` split a kernel's work by the units that do it where a chip runs each op on
its own (an IPU's vector units beside its matrix units): its elementwise, normalisation and softmax FLOPs, and an
attention op's work on its scores that ``flops`` (PyTorch's flop registry: matmuls only) leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Generated:
    """Code the compiler generated for a kernel's ops that the toolchain's kernel library lacks."""

    ops: tuple[str, ...]  # the ops with no library kernel, sorted
    efficiency: float  # the factor on the whole kernel's compute rate (weighted by the generated ops' FLOPs)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ops", tuple(self.ops))


@dataclass(frozen=True)
class OffDevice:
    """A kernel that does not run on the device (``compile(..., fallback="host")``): on the host CPU, or a
    transfer over the host link at the edge of a host partition."""

    on: str  # "host" | "link"
    partition: int  # the host partition it belongs to, from 1
    direction: str = ""  # a transfer's way: "to host" | "to device"
    tensors: int = 0  # a transfer's tensor count


@dataclass(frozen=True)
class Kernel:
    """A group of fused nodes that runs as one unit: a GPU kernel, an RDU section's stage,
    a wafer region's layer, an IPU codelet set, a TSP instruction block.

    A frozen value (its node and op names are tuples, its metadata frozen values), so programs can share
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
    matmul_dims: tuple[int, int] | None = None  # (contraction, output features) of a matmul, where captured
    generated: Generated | None = None  # set by the kernel-matching pass
    off_device: OffDevice | None = None  # set by the host-partition pass
    # the part of its bytes and FLOPs that does not grow with the batch although no parameter is read: tensors
    # shaped like a weight (a weight's gradient, a weight cast to 16 bits, the sum of a tied weight's gradients)
    fixed_bytes_read: int = 0
    fixed_bytes_written: int = 0
    fixed_flops: int = 0
    # of its FLOPs, those of its elementwise, normalisation and softmax ops (a matmul kernel's fused epilogue); and
    # an attention op's work on its scores, beside its matmuls and not in ``flops`` (graph.cost.attention_score_flops):
    # what a chip that runs each op on its own units does on its vector units
    vector_flops: int = 0
    score_flops: int = 0

    def __post_init__(self) -> None:  # lists from JSON or a caller become tuples
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "ops", tuple(self.ops))
        if self.matmul_dims is not None:
            object.__setattr__(self, "matmul_dims", tuple(int(d) for d in self.matmul_dims))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Kernel:
        """The kernel :meth:`to_dict` wrote (a saved artifact's form, metadata under ``extra``)."""
        d = dict(d)
        extra = dict(d.pop("extra", None) or {})
        dims = extra.get("matmul_dims")
        gen = Generated(tuple(extra["generated"]), float(extra.get("efficiency", 1.0))) \
            if "generated" in extra else None
        off = OffDevice(str(extra["on"]), int(extra.get("partition", 0)), str(extra.get("direction", "")),
                        int(extra.get("tensors", 0))) if "on" in extra else None
        return cls(**d, matmul_dims=tuple(dims) if dims else None, generated=gen, off_device=off)

    @property
    def extra(self) -> Mapping[str, Any]:
        """The typed metadata under its old string keys, read-only (``"matmul_dims"``, ``"generated"``,
        ``"efficiency"``, ``"on"``, ``"partition"``, ``"direction"``, ``"tensors"``; absent where unset)."""
        out: dict[str, Any] = {}
        if self.matmul_dims is not None:
            out["matmul_dims"] = list(self.matmul_dims)
        if self.generated is not None:
            out.update(generated=list(self.generated.ops), efficiency=self.generated.efficiency)
        if self.off_device is not None:
            o = self.off_device
            out.update(on=o.on, partition=o.partition)
            if o.on == "link":
                out.update(direction=o.direction, tensors=o.tensors)
        return MappingProxyType(out)

    @property
    def efficiency(self) -> float:
        """The factor on the kernel's compute rate: below 1 where the compiler generated code for it."""
        return self.generated.efficiency if self.generated is not None else 1.0

    @property
    def partition(self) -> int:
        """The host partition a host kernel or transfer belongs to (from 1); 0 on the device."""
        return self.off_device.partition if self.off_device is not None else 0

    def __hash__(self) -> int:
        return hash((self.name, self.section, self.nodes))

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def runs_on(self) -> str:
        """``"device"``; ``"host"`` when ``compile(..., fallback="host")`` put it on the host CPU; ``"link"`` for
        a transfer over the host link (``off_device.direction`` says which way)."""
        return self.off_device.on if self.off_device is not None else "device"

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved: above the chip's ridge point a kernel is compute bound."""
        return self.flops / self.bytes if self.bytes else float("inf")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (lists and dicts), as a saved artifact stores them (the typed metadata under
        ``extra``, as artifacts always stored it; :meth:`from_dict` reads it back)."""
        typed = ("matmul_dims", "generated", "off_device")
        out = {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items() if k not in typed}
        out["extra"] = dict(self.extra)
        return out

    def scaled(self, batch: float, byte_scale: float = 1.0) -> Kernel:
        """This kernel at ``batch`` times the samples and ``byte_scale`` times the bytes per element
        (another precision): FLOPs and activations grow with the batch; weights, weight-shaped tensors (the
        ``fixed_*`` parts: a weight's gradient is as large at any batch) and an optimizer update do not."""
        if batch == 1.0 and byte_scale == 1.0:
            return self
        s = 1.0 if self.section == "opt" else batch
        p = self.param_bytes * byte_scale
        fr, fw = self.fixed_bytes_read * byte_scale, self.fixed_bytes_written * byte_scale
        # a copy of this kernel's fields with the sizes changed: what ``dataclasses.replace`` gives, without its
        # ``__init__`` and ``__post_init__`` (every field is already a frozen value): a compile scales each kernel
        # a few times, and a sweep compiles thousands of kernels
        out = object.__new__(Kernel)
        out.__dict__.update(self.__dict__)
        out.__dict__.update(
            flops=int(self.fixed_flops + max(0, self.flops - self.fixed_flops) * s), param_bytes=int(p),
            vector_flops=int(min(self.vector_flops, self.fixed_flops)
                             + max(0, self.vector_flops - self.fixed_flops) * s),
            score_flops=int(self.score_flops * s),
            bytes_read=int(p + fr + max(0, self.bytes_read * byte_scale - p - fr) * s),
            bytes_written=int(fw + max(0, self.bytes_written * byte_scale - fw) * s),
            out_bytes=int(self.out_bytes * byte_scale * s), saved_bytes=int(self.saved_bytes * byte_scale * s),
            fixed_bytes_read=int(fr), fixed_bytes_written=int(fw))
        return out


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
