"""What one chip delivers, and the per-kernel roofline every execution model starts from.

    Rates                     what one chip delivers after the efficiency constants (``accelkit.families
                              .rates(spec, precision)`` makes one, as the chip's family says)
    Spill                     partial residency: the share of the on-chip state that streams from a slower tier
    tile_fill(kernel, width)  the share of a width x width matrix unit a matmul keeps busy
    roofline(kernel, ...)     compute time (FLOPs over the units' rate) and memory time (bytes over the
                              tier's bandwidth) of one kernel
    kernel_time(...)          the two, plus communication and fixed latency, as a KernelTime
    allreduce_s(bytes, n, r)  a ring all-reduce over n chips
    host_transfer_s(spec, n)  one transfer of n bytes between the host and a chip (fixed latency + link)

Pure functions of a spec and a kernel; the family-specific composition lives in ``accelkit.families``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from accelkit.constants import value
from accelkit.cost.kernel import Kernel
from accelkit.cost.report import KernelTime
from accelkit.graph.cost import GATHER_OPS

if TYPE_CHECKING:
    from accelkit.hardware.spec import AcceleratorSpec


@dataclass(frozen=True)
class Rates:
    """What one chip delivers, after the efficiency constants."""

    matmul_flops: float
    vector_flops: float
    tier_bw: dict[str, float]
    link_Bps: float
    launch_s: float
    clock_hz: float
    hop_s: float = field(default_factory=lambda: value("CHIP_HOP_LATENCY_S"))  # one chip-to-chip hop's latency
    collective_s: float = 0.0  # the fixed start-up of one collective (a GPU's NCCL kernel), on top of the hops


def tile_fill(k: Kernel, width: int) -> float:
    """The share of a ``width x width`` matrix unit a matmul kernel keeps busy: its contraction and output
    features each padded up to whole tiles (``K / (ceil(K / w) w) x N / (ceil(N / w) w)``); 1 for a kernel
    whose dimensions the capture did not record, or that is not a matmul."""
    dims = k.matmul_dims if k.kind == "matmul" else None
    if not dims or width <= 1:
        return 1.0
    fill = 1.0
    for d in dims:
        d = max(1, int(d))
        fill *= d / (math.ceil(d / width) * width)
    return fill


def allreduce_s(nbytes: float, n: int, r: Rates) -> float:
    """Ring all-reduce: 2 (n-1)/n of the data over each chip's link, plus 2 log2(n) hop latencies and the
    family's fixed start-up of a collective."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return 2 * (n - 1) / n * nbytes / r.link_Bps + 2 * math.ceil(math.log2(n)) * r.hop_s + r.collective_s


def host_link_Bps(spec: AcceleratorSpec) -> float:
    """Bytes per second one way between the host and one chip: half the spec's host link (vendors quote both
    directions together), or the illustrative ``HOST_LINK_BPS`` when the spec gives none."""
    return float(spec.host_link_Bps or value("HOST_LINK_BPS")) / 2


def host_transfer_s(spec: AcceleratorSpec, nbytes: float) -> float:
    """One transfer of ``nbytes`` between the host and one chip: ``HOST_TRANSFER_LATENCY_S`` (a DMA set-up and a
    synchronisation) plus the bytes over one direction of the host link."""
    return float(value("HOST_TRANSFER_LATENCY_S")) + nbytes / host_link_Bps(spec)


@dataclass(frozen=True)
class Spill:
    """Partial residency: ``resident`` of the on-chip state stays in ``on_chip``; the rest streams from ``tier``."""

    on_chip: str
    tier: str
    resident: float


def roofline(k: Kernel, r: Rates, weights_tier: str, act_tier: str, *, share: float = 1.0,
             act_bytes: float | None = None, tensor: int = 1, opt_tier: str | None = None,
             spill: Spill | None = None, act_tensor: int = 1) -> tuple[float, float]:
    """(compute seconds, memory seconds) of one kernel on ``share`` of the chip (at the kernel's own
    ``Kernel.efficiency`` where the compiler generated it), its weights and activations in the tiers named. With a ``spill``, the state that did not fit on chip (that share of the weights, and of
    an optimizer update's state) is read from the spill tier instead."""
    if k.section == "opt" and opt_tier:  # an optimizer update reads and writes its state where it lives
        act_tier = opt_tier
    # a kernel the compiler generated (no library kernel for one of its ops) runs at a share of the library's rate
    rate = (r.matmul_flops if k.kind == "matmul" else r.vector_flops) * share * k.efficiency
    compute = k.flops / tensor / rate if k.flops else 0.0
    act = (k.bytes - k.param_bytes) if act_bytes is None else act_bytes
    weights = k.param_bytes
    if k.ops and k.ops[0] in GATHER_OPS:  # a lookup reads the rows it fetches, not the whole table
        weights = min(weights, k.out_bytes)
    # tensor parallelism splits each layer's weights over the ``tensor`` chips, and its activations over
    # ``act_tensor`` of them (TimingContext.act_tensor: all of them in training, with sequence parallelism)
    memory = _read_s(weights / tensor, weights_tier, r, spill) + _read_s(max(0.0, act) / act_tensor, act_tier, r,
                                                                        spill if k.section == "opt" else None)
    return compute, memory


def _read_s(nbytes: float, tier: str, r: Rates, spill: Spill | None) -> float:
    if spill is None or tier != spill.on_chip:
        return nbytes / r.tier_bw[tier]
    return nbytes * spill.resident / r.tier_bw[tier] + nbytes * (1 - spill.resident) / r.tier_bw[spill.tier]


def kernel_time(k: Kernel, units: str, compute: float, memory: float, comm: float, overhead: float,
                peak: float, time: float | None = None) -> KernelTime:
    """A KernelTime: the larger of compute and memory, plus communication and fixed latency (unless ``time``
    is given), and what bounds it."""
    t = max(compute, memory) + comm + overhead if time is None else time
    parts = {"compute": compute, "memory": memory, "communication": comm, "latency": overhead}
    bound = max(parts, key=lambda p: parts[p])
    return KernelTime(k.name, k.group, k.section, "+".join(k.ops[:5]), units, k.flops, k.bytes, compute, memory,
                      comm, overhead, t, bound, (k.flops / t / peak) if t > 0 else 0.0)
