"""The performance model's constants: few, named, explained, each with its source, in one registry.

Everything else the model uses comes from the chip's spec (peak FLOP/s per precision, memory
tiers and their bandwidths, links, clock) and from the compiled program (FLOPs and bytes per
kernel, the memory plan, the placement). There are no per-model or per-case corrections.

Every number that changes a modelled result is a :class:`Constant` in :data:`CONSTANTS`, with its
value, what it means, its source and whether it is illustrative (no public figure); the compiler,
the performance model and ``serve`` read it from here. A report's ``assumptions`` are generated from
the constants that apply to it (:func:`assumptions_for`). The module-level names
(``COMPUTE_EFFICIENCY``, ...) are the same values, kept for readers of older code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ALL = ()
"""``families`` of a constant every family uses."""


@dataclass(frozen=True)
class Constant:
    """A number the model assumes: its value, what it does, where it comes from."""

    name: str
    value: Any
    meaning: str  # the assumption in words, as a report lists it
    source: str  # the public basis, or why there is none
    illustrative: bool  # True: no public figure; a round number chosen to be plausible
    families: tuple[str, ...] = ALL  # the families whose results it changes (empty: every family)
    when: str = "always"  # "always", or the feature that brings it in: "tensor", "pipeline", "data", "multi-chip"

    def assumption(self) -> str:
        return f"{self.meaning} ({'illustrative: ' if self.illustrative else ''}{self.source})"


_ENTRIES = (
    Constant("COMPUTE_EFFICIENCY", 0.55,
             "dense matmul-type kernels reach 55% of the chip's peak FLOP/s",
             "Narayanan et al. 2021, arXiv 2104.04473: 163 of 312 TFLOP/s (52%) on A100 at scale; vendors publish "
             "no better per-chip figure", False),
    Constant("BANDWIDTH_EFFICIENCY", 0.8,
             "memory tiers deliver 80% of their peak bandwidth",
             "SambaNova: >75% of peak in decode on 8-16 RDUs (DAC 2025); STREAM-like copies on HBM reach 80-90%",
             False),
    Constant("VECTOR_FRACTION_OF_16BIT_PEAK", 0.25,
             "vector work runs at the chip's fp32 peak where published, else a quarter of its 16-bit peak",
             "no vendor publishes a vector rate for these chips", True),
    Constant("LAUNCH_OVERHEAD_S", {"gpu": 4e-6, "cpu": 8e-6, "reconfigurable-dataflow": 4e-6,
                                   "wafer-dataflow": 1.5e-6, "bsp-tiles": 1e-6, "static-schedule": 0.0},
             "each unit of work costs a fixed start-up time per family (GPU kernel launch 4 µs; CPU op dispatch "
             "8 µs unless measured; RDU section switch 4 µs; wafer region hand-off 1.5 µs; IPU superstep sync "
             "1 µs; TSP none, the compiler schedules every cycle)",
             "GPU: NVIDIA Nsight kernel traces; the other families publish no figure", True),
    Constant("TSP_STREAM_CYCLES", 100,
             "a TSP instruction streams its operands across the slices for 100 cycles before results emerge",
             "ISCA 2020 'Think Fast' describes the stream pipeline but publishes no single figure", True,
             ("static-schedule",)),
    Constant("CHIP_HOP_LATENCY_S", 2e-6,
             "a chip-to-chip hop costs 2 µs of latency plus bytes / link bandwidth",
             "typical of NVLink, IPU-Link and Ethernet-class links; no vendor publishes a comparable figure", True,
             when="multi-chip"),
    Constant("DEFAULT_LINK_BPS", 32e9,
             "a chip whose spec gives no chip-to-chip bandwidth links at 32 GB/s per direction",
             "PCIe Gen4 x16", False, when="multi-chip"),
    Constant("ALLREDUCE_RING", "2 (n-1)/n",
             "ring all-reduce moves 2 (n-1)/n of the data over each chip's links",
             "the ring algorithm (Patarasuk & Yuan 2009)", False, when="multi-chip"),
    Constant("USABLE_SRAM_FRACTION", 0.8,
             "80% of on-chip SRAM holds tensors; the rest holds programs, routing and buffers",
             "no vendor publishes the share", True),
    Constant("WAFER_MAX_REPLICAS", 64,
             "a wafer holds at most 64 copies of a small model (multi-replica inference)",
             "Cerebras describes multi-replica mode but publishes no limit", True, ("wafer-dataflow",)),
    Constant("RDU_ACTIVATION_SRAM_SHARE", 0.5,
             "an RDU keeps activations in PMU SRAM while they take at most half of it, else they spill to HBM",
             "SambaNova publishes no threshold", True, ("reconfigurable-dataflow",)),
    Constant("TSP_MIN_WEIGHT_SHARE", 0.1,
             "a TSP gives weights at least 10% of its SRAM, however large the activations",
             "the GroqFlow compiler's packing is not published", True, ("static-schedule",)),
    Constant("CPU_CACHE_SHARE", 0.5,
             "on a CPU a kernel whose tensors fit in half the last-level cache runs from the cache, not DRAM",
             "the other half is taken to hold everything else the process touches", True, ("cpu",)),
    Constant("IPU_TILE_COLUMNS", 46,
             "an IPU's tiles are laid out 46 to a row when its spec gives no mesh",
             "GC200: 1,472 tiles drawn as 32 x 46; the real chip has 4 columns of tile islands", True,
             ("bsp-tiles",)),
    Constant("SERVE_MEMORY_BOUND_SHARE", 0.5,
             "a decode step counts as memory-bound when reading the KV cache takes more than half the step's "
             "weight-bound time", "a labelling rule; it does not change the time", True, when="serve"),
    Constant("FLOP_AND_BYTE_COUNTS", "PyTorch flop registry",
             "FLOPs come from PyTorch's flop registry (matmul-type ops) and accelkit's vector-op model; bytes "
             "from tensor shapes", "torch.utils.flop_counter", False),
)

CONSTANTS: dict[str, Constant] = {c.name: c for c in _ENTRIES}
"""Every constant that changes a modelled result, by name."""


def value(name: str) -> Any:
    """The value of the constant called ``name``."""
    return CONSTANTS[name].value


def assumptions_for(family: str, *, chips: int = 1, serve: bool = False) -> list[str]:
    """The assumptions behind a report for ``family`` on ``chips`` chips: the constants that apply to it."""
    out = []
    for c in _ENTRIES:
        if c.families and family not in c.families:
            continue
        if c.when == "multi-chip" and chips <= 1:
            continue
        if c.when == "serve" and not serve:
            continue
        out.append(c.assumption())
    return out


COMPUTE_EFFICIENCY: float = value("COMPUTE_EFFICIENCY")
BANDWIDTH_EFFICIENCY: float = value("BANDWIDTH_EFFICIENCY")
VECTOR_FRACTION_OF_16BIT_PEAK: float = value("VECTOR_FRACTION_OF_16BIT_PEAK")
LAUNCH_OVERHEAD_S: dict[str, float] = value("LAUNCH_OVERHEAD_S")
TSP_STREAM_CYCLES: int = value("TSP_STREAM_CYCLES")
CHIP_HOP_LATENCY_S: float = value("CHIP_HOP_LATENCY_S")
DEFAULT_LINK_BPS: float = value("DEFAULT_LINK_BPS")

ASSUMPTIONS = [c.assumption() for c in _ENTRIES]
"""Every assumption, as a list of sentences (a report lists the ones that apply to it)."""


__all__ = ["ALL", "ASSUMPTIONS", "BANDWIDTH_EFFICIENCY", "CHIP_HOP_LATENCY_S", "COMPUTE_EFFICIENCY", "CONSTANTS",
           "Constant", "DEFAULT_LINK_BPS", "LAUNCH_OVERHEAD_S", "TSP_STREAM_CYCLES", "VECTOR_FRACTION_OF_16BIT_PEAK",
           "assumptions_for", "value"]
