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
    when: str = "always"  # "always", or the feature that brings it in: "multi-chip", "serve", "generated"

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
    Constant("CHIP_HOP_LATENCY_S", 2e-6,
             "a chip-to-chip hop costs 2 µs of latency plus bytes / link bandwidth",
             "typical of NVLink, IPU-Link and Ethernet-class links; no vendor publishes a comparable figure", True,
             when="multi-chip"),
    Constant("DEFAULT_LINK_BPS", 32e9,
             "a chip whose spec gives no chip-to-chip bandwidth links at 32 GB/s per direction",
             "PCIe Gen4 x16", False, when="multi-chip"),
    Constant("HOST_LINK_BPS", 64e9,
             "a system whose spec gives no host-link bandwidth moves tensors between host and chip at 64 GB/s "
             "(both directions together, 32 GB/s each way)",
             "PCIe 4.0 x16: 16 GT/s per lane x 16 lanes, 128b/130b coding, ~31.5 GB/s per direction (PCI-SIG, PCI "
             "Express Base Specification 4.0); that a given system uses PCIe 4.0 x16 is the assumption", True,
             when="host-fallback"),
    Constant("HOST_TRANSFER_LATENCY_S", 10e-6,
             "each transfer between host and chip (a call's inputs, its outputs, a host partition's tensors) costs "
             "10 µs of fixed latency (a DMA set-up and a synchronisation) plus bytes / host-link bandwidth; a call "
             "pays it once each way, however many steps it runs on the device",
             "no vendor of these families publishes a figure; GroqFlow's own performance estimate charges the same "
             "10 µs per PCIe transfer each way (groqflow/groqmodel/groqmodel.py, estimate_performance); PCIe round "
             "trips are ~1 µs, runtimes add queueing and a sync", True),
    Constant("ALLREDUCE_RING", "2 (n-1)/n",
             "ring all-reduce moves 2 (n-1)/n of the data over each chip's links",
             "the ring algorithm (Patarasuk & Yuan 2009)", False, when="multi-chip"),
    Constant("USABLE_SRAM_FRACTION", 0.92,
             "92% of on-chip memory holds tensors; the rest holds programs and buffers",
             "a round number for chips whose family states no share of its own (each SRAM family registers "
             "USABLE_SRAM_FRACTION[<family>] with its own basis: usable_sram(family))", True),
    Constant("SERVE_MEMORY_BOUND_SHARE", 0.5,
             "a decode step counts as memory-bound when reading the KV cache takes more than half the step's "
             "weight-bound time", "a labelling rule; it does not change the time", True, when="serve"),
    Constant("FLOP_AND_BYTE_COUNTS", "PyTorch flop registry",
             "FLOPs come from PyTorch's flop registry (matmul-type ops) and accelkit's vector-op model; bytes "
             "from tensor shapes", "torch.utils.flop_counter", False),
)

CONSTANTS: dict[str, Constant] = {c.name: c for c in _ENTRIES}
"""Every constant that changes a modelled result, by name: the ones above, which every family uses, and the
ones each family's module (:mod:`accelkit.families`) registers for itself."""


def register(*entries: Constant) -> tuple[Constant, ...]:
    """Add a family's own constants to the registry (a family module calls this once, at import)."""
    for c in entries:
        if CONSTANTS.get(c.name, c) != c:
            raise ValueError(f"constant {c.name} is registered twice, with different values")
        CONSTANTS[c.name] = c
    return entries


def usable_sram(family: str) -> Constant:
    """The share of on-chip SRAM a ``family``'s compiler may fill with tensors: the family's own constant
    (``USABLE_SRAM_FRACTION[<family>]``, registered by its module with its own source) where it states one,
    else the round ``USABLE_SRAM_FRACTION``."""
    return CONSTANTS.get(f"USABLE_SRAM_FRACTION[{family}]", CONSTANTS["USABLE_SRAM_FRACTION"])


def value(name: str) -> Any:
    """The value of the constant called ``name``."""
    return CONSTANTS[name].value


def assumptions_for(family: str, *, chips: int = 1, serve: bool = False, generated: bool = False,
                    fallback: bool = False) -> list[str]:
    """The assumptions behind a report for ``family`` on ``chips`` chips (``generated``: the program has
    kernels the compiler generated; ``fallback``: it runs some ops on the host CPU): the constants that apply to it."""
    out = []
    for c in CONSTANTS.values():
        if c.families and family not in c.families:
            continue
        if c.name == "USABLE_SRAM_FRACTION" and usable_sram(family) is not c:
            continue  # the family states its own share
        if c.when == "multi-chip" and chips <= 1:
            continue
        if c.when == "serve" and not serve:
            continue
        if c.when == "generated" and not generated:
            continue
        if c.when == "host-fallback" and not fallback:
            continue
        out.append(c.assumption())
    return out


COMPUTE_EFFICIENCY: float = value("COMPUTE_EFFICIENCY")
BANDWIDTH_EFFICIENCY: float = value("BANDWIDTH_EFFICIENCY")
VECTOR_FRACTION_OF_16BIT_PEAK: float = value("VECTOR_FRACTION_OF_16BIT_PEAK")
CHIP_HOP_LATENCY_S: float = value("CHIP_HOP_LATENCY_S")
DEFAULT_LINK_BPS: float = value("DEFAULT_LINK_BPS")
HOST_TRANSFER: Constant = CONSTANTS["HOST_TRANSFER_LATENCY_S"]



def assumptions() -> list[str]:
    """Every assumption, as a list of sentences (a report lists the ones that apply to it)."""
    return [c.assumption() for c in CONSTANTS.values()]


__all__ = ["ALL", "BANDWIDTH_EFFICIENCY", "CHIP_HOP_LATENCY_S", "COMPUTE_EFFICIENCY", "CONSTANTS", "Constant",
           "DEFAULT_LINK_BPS", "VECTOR_FRACTION_OF_16BIT_PEAK", "assumptions", "assumptions_for", "register", "value"]
