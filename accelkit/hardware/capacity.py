"""How many bytes one chip holds, tier by tier, and how many chips a number of bytes needs.

One computation, shared by ``ak.check`` (is the model too large for one chip?), ``hardware.fits`` (where do
its weights fit?) and the compiler's memory plan (which execution mode, how many chips), so the three never
disagree about a chip's room:

    usable_bytes(spec)            tier -> bytes the compiler may fill (on-chip SRAM keeps a share back)
    holding_tiers(spec)           the tiers that hold data (a GPU's L2, a TPU's VMEM stand in front of HBM)
    chips_to_hold(nbytes, room)   the fewest chips whose room holds nbytes
"""

from __future__ import annotations

import math

from accelkit.constants import usable_sram
from accelkit.hardware.spec import AcceleratorSpec, MemoryTier

CACHE_TIERS = ("l1", "l2", "cache", "cmem", "vmem")
"""Tier names that are caches or staging scratchpads in front of the next tier, not room of their own (a TPU's
VMEM stages tiles on their way from HBM to the matrix units; its CMEM caches HBM)."""


def usable_bytes(spec: AcceleratorSpec) -> dict[str, int]:
    """Per tier, the bytes the compiler may fill: the first (on-chip) tier keeps the usable share of its SRAM
    (``usable_sram(spec.family)``: the family's own share; the rest holds programs, routing and buffers); the
    others all of theirs."""
    share = usable_sram(spec.family).value
    return {t.name: int(t.capacity_bytes * (share if i == 0 else 1.0)) for i, t in enumerate(spec.memory_tiers)}


def usable_on_chip_bytes(spec: AcceleratorSpec) -> int:
    """On-chip memory the compiler may fill (the usable share of ``on_chip_memory_bytes``)."""
    return int(spec.on_chip_memory_bytes * usable_sram(spec.family).value)


def holding_tiers(spec: AcceleratorSpec) -> tuple[MemoryTier, ...]:
    """The tiers that hold data, fastest first (caches left out; all tiers if every one is called a cache)."""
    tiers = tuple(t for t in spec.memory_tiers if t.name.lower() not in CACHE_TIERS)
    return tiers or tuple(spec.memory_tiers)


def chips_to_hold(nbytes: float, room_per_chip: float) -> int:
    """The fewest chips whose ``room_per_chip`` bytes each hold ``nbytes`` (at least 1; 0 if a chip has no room)."""
    if room_per_chip <= 0:
        return 0
    return max(1, math.ceil(nbytes / room_per_chip))


__all__ = ["CACHE_TIERS", "chips_to_hold", "holding_tiers", "usable_bytes", "usable_on_chip_bytes"]
