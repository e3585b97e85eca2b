"""How a GEMM's shape sets its speed on a GPU: tiles, waves and the main loop.

A GPU matmul library (cuBLAS, hipBLASLt, CUTLASS) splits the ``(M, N)`` output into tiles, one per thread block,
and runs the blocks in waves over the streaming multiprocessors; each block loops over ``K`` in steps. Three
losses follow from the shape alone, and this module models each, bounded by the chip's achievable rate:

- **tile quantization**: ``M`` and ``N`` are padded up to whole tiles (a 1,100-row GEMM pays for 1,152 rows
  of 128-row tiles);
- **wave quantization**: the last wave of blocks leaves SMs idle (192 tiles on 132 SMs run in two waves, the
  second 45% full), which libraries soften by choosing a smaller tile or splitting ``K`` (split-K);
- **the main loop's fill and drain**: each block spends a few ``K`` steps loading its first operands and
  writing its result, so a thin ``K`` (a convolution with few input channels) runs below the rate;
- **the operands' alignment**: the fastest kernels load whole 16-byte vectors (Hopper's tensor-memory
  accelerator requires every row stride to be a multiple of 16 bytes), so a matrix whose rows hold a number of
  elements that isn't a multiple of 16 bytes (GPT-2's 50,257-word vocabulary, BERT's 30,522) runs on older,
  narrower kernels (:attr:`GemmShape.aligned`; the GPU family's ``GPU_GEMM_UNALIGNED`` rates).

The library picks, for each shape, the tile (and split) that runs it fastest, as cuBLAS's heuristics do; the
result is a fraction of the chip's **achievable** matmul rate (``AcceleratorSpec.matmul_efficiency``: the
share of the datasheet peak that the best large matmul reaches on the real chip). Pure functions of shapes.

Sources: NVIDIA, "Matrix Multiplication Background User's Guide" (Deep Learning Performance documentation:
tile and wave quantization); CUTLASS's Hopper and Ampere GEMM tile shapes (128x256, 128x128, 64x128, 64x64
thread-block tiles, 64-deep K steps for 16-bit inputs). The relative rates of the smaller tiles and the loop's
fill and drain steps are illustrative constants (``GEMM_*``, registered by the GPU family), not fitted to any
measurement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from accelkit.constants import value


@dataclass(frozen=True)
class GemmShape:
    """A (batched) matrix product ``(M, K) @ (K, N)``, ``batch`` times."""

    m: int
    n: int
    k: int
    batch: int = 1
    aligned: int = 16  # elements the operands' row strides are a multiple of (a power of two, at most 16)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * self.batch


@dataclass(frozen=True)
class GemmFit:
    """The tile and split a GEMM runs best with, and the share of the achievable rate it reaches."""

    tile: tuple[int, int]
    split_k: int
    waves: int
    efficiency: float  # of the chip's achievable matmul rate (<= 1)


def alignment(*strides: int) -> int:
    """The largest power of two, at most 16, that divides every one of ``strides`` (elements)."""
    a = 16
    for s in strides:
        while a > 1 and s % a:
            a //= 2
    return a


_FITS: dict[tuple[object, ...], GemmFit] = {}  # a pure function of these keys: a sweep asks for the same shapes often


def gemm_fit(shape: GemmShape, units: int) -> GemmFit:
    """The fastest tile and split-K for ``shape`` on ``units`` SMs, and the efficiency it reaches."""
    m, n, k, b = max(1, shape.m), max(1, shape.n), max(1, shape.k), max(1, shape.batch)
    units = max(1, units)
    tiles, splits = value("GEMM_TILES"), value("GEMM_SPLIT_K")
    step, fill = int(value("GEMM_K_STEP")), float(value("GEMM_LOOP_FILL_STEPS"))
    key = (m, n, k, b, units, step, fill, tiles, splits)  # the constants too: a test or a user may change them
    try:
        hit = _FITS.get(key)
    except TypeError:  # a constant set to a list: computed each time
        return _fit(m, n, k, b, units, tiles, splits, step, fill)
    if hit is None:
        if len(_FITS) >= 1 << 16:
            _FITS.clear()
        hit = _FITS[key] = _fit(m, n, k, b, units, tiles, splits, step, fill)
    return hit


def _fit(m: int, n: int, k: int, b: int, units: int, tiles: Any, splits: Any, step: int, fill: float) -> GemmFit:
    best = GemmFit((0, 0), 1, 0, 0.0)
    for tm, tn, rel in tiles:
        pad = (m / (math.ceil(m / tm) * tm)) * (n / (math.ceil(n / tn) * tn))
        for split in splits:
            if split > 1 and k // split < 4 * step:
                continue
            count = math.ceil(m / tm) * math.ceil(n / tn) * b * split
            waves = math.ceil(count / units)
            steps = math.ceil(k / split / step)
            eff = rel * pad * count / (waves * units) * steps / (steps + fill)
            if eff > best.efficiency:
                best = GemmFit((tm, tn), split, waves, eff)
    ref_steps = 4096 / step  # the achievable rate is measured on large, deep GEMMs
    return GemmFit(best.tile, best.split_k, best.waves,
                   min(1.0, best.efficiency / (ref_steps / (ref_steps + fill))))


def attention_waves(batch_heads: int, queries: int, units: int, tile: int = 128) -> float:
    """The share of the SMs a fused attention kernel keeps busy: one block per ``tile`` queries of each
    sequence and head, run in waves."""
    blocks = max(1, batch_heads) * math.ceil(max(1, queries) / tile)
    return blocks / (math.ceil(blocks / max(1, units)) * max(1, units))


__all__ = ["GemmFit", "GemmShape", "alignment", "attention_waves", "gemm_fit"]
