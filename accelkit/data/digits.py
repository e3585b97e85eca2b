"""Handwriting-like digits, 8x8, made the way the UCI "optdigits" set was made — but drawn by code.

The UCI set (the one ``sklearn.datasets.load_digits`` ships) scanned people's handwriting into
32x32 bitmaps, then counted the "on" pixels in each 4x4 block, giving 8x8 images of counts 0..16.
Here the handwriting is simulated: each digit is a pen-stroke skeleton (polylines and arcs on a
unit square), and every sample wobbles the control points, slants, rotates, scales and shifts
the glyph and picks a pen width, before the same 32x32 -> 8x8 block count is taken.
No file is read and nothing is downloaded; the same seed always gives the same digits.

``digits(source="sklearn")`` loads the real UCI digits instead when scikit-learn is installed.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from accelkit.data.samples import Samples
from accelkit.errors import AccelkitError

BITMAP = 32  # the UCI scans were 32x32 bitmaps ...
BLOCK = 4  # ... counted in 4x4 blocks -> 8x8 images of 0..16
SIDE = BITMAP // BLOCK


def _arc(cx: float, cy: float, rx: float, ry: float, a0: float, a1: float, n: int) -> list[tuple[float, float]]:
    """Points on an ellipse arc; angles in degrees, y grows downwards (90 is the bottom, 270 the top)."""
    angles = np.radians(np.linspace(a0, a1, n))
    return [(cx + rx * math.cos(a), cy + ry * math.sin(a)) for a in angles]


# Each digit: a list of strokes; a stroke is a polyline through points of the unit square (x right, y down).
STROKES: dict[int, list[list[tuple[float, float]]]] = {
    0: [_arc(0.5, 0.5, 0.27, 0.4, 0, 360, 20)],
    1: [[(0.32, 0.28), (0.53, 0.1), (0.53, 0.9)]],
    2: [_arc(0.5, 0.32, 0.27, 0.22, 200, 400, 10) + [(0.22, 0.9), (0.82, 0.9)]],
    3: [_arc(0.5, 0.3, 0.25, 0.2, 210, 450, 10) + _arc(0.5, 0.7, 0.28, 0.2, 270, 510, 10)[1:]],
    4: [[(0.66, 0.9), (0.66, 0.1), (0.16, 0.64), (0.86, 0.64)]],
    5: [[(0.78, 0.1), (0.3, 0.1), (0.27, 0.47)] + _arc(0.5, 0.66, 0.28, 0.24, 220, 500, 12)],
    6: [[(0.72, 0.12), (0.45, 0.26), (0.3, 0.5)] + _arc(0.5, 0.68, 0.21, 0.2, 180, 540, 16)],
    7: [[(0.18, 0.1), (0.82, 0.1), (0.42, 0.9)]],
    8: [_arc(0.5, 0.29, 0.2, 0.19, 90, 450, 14), _arc(0.5, 0.7, 0.25, 0.21, -90, 270, 16)],
    9: [_arc(0.5, 0.32, 0.24, 0.21, 0, 360, 16), [(0.74, 0.32), (0.7, 0.9)]],
}


def _template(digit: int) -> tuple[np.ndarray, np.ndarray]:
    """(points (K, 2), segments (S, 2) as index pairs into points) for one digit."""
    points: list[tuple[float, float]] = []
    segments: list[tuple[int, int]] = []
    for stroke in STROKES[digit]:
        start = len(points)
        points.extend(stroke)
        segments.extend((start + i, start + i + 1) for i in range(len(stroke) - 1))
    return np.asarray(points, dtype=np.float64), np.asarray(segments, dtype=np.int64)


def _render(points: np.ndarray, segments: np.ndarray, half_width: np.ndarray) -> np.ndarray:
    """Bitmaps (n, 32, 32) of 0/1: a pixel is on when its centre is within the pen's half-width of a stroke.

    ``points`` is (n, K, 2) in unit coordinates, ``half_width`` is (n,).
    """
    centres = (np.arange(BITMAP) + 0.5) / BITMAP
    grid_y, grid_x = np.meshgrid(centres, centres, indexing="ij")
    px, py = grid_x.ravel().astype(np.float32), grid_y.ravel().astype(np.float32)  # (P,), P = 1024
    pts = points.astype(np.float32)
    ax, ay = pts[:, segments[:, 0], 0, None], pts[:, segments[:, 0], 1, None]  # (n, S, 1)
    abx = pts[:, segments[:, 1], 0, None] - ax
    aby = pts[:, segments[:, 1], 1, None] - ay
    apx, apy = px - ax, py - ay  # (n, S, P)
    t = np.clip((apx * abx + apy * aby) / np.maximum(abx * abx + aby * aby, 1e-12), 0.0, 1.0)
    dist2 = ((apx - t * abx) ** 2 + (apy - t * aby) ** 2).min(axis=1)  # (n, P)
    return (dist2 <= (half_width**2)[:, None]).reshape(-1, BITMAP, BITMAP)


def _synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % 10)
    counts = np.zeros((n, SIDE, SIDE), dtype=np.float32)
    for digit in range(10):
        idx = np.flatnonzero(labels == digit)
        m = len(idx)
        if m == 0:
            continue
        pts, segs = _template(digit)
        p = pts[None] + rng.normal(0.0, 0.03, size=(m, *pts.shape))  # the hand wobbles
        p -= 0.5  # affine about the glyph's centre: slant, rotate, scale, shift
        rot = np.radians(rng.normal(0.0, 8.0, m))
        shear = rng.normal(0.0, 0.15, m)
        sx, sy = rng.uniform(0.7, 1.05, m), rng.uniform(0.8, 1.05, m)
        cos, sin = np.cos(rot), np.sin(rot)
        # x' = sx*(cos*x - sin*y) + shear*y', y' = sy*(sin*x + cos*y)
        y2 = sy[:, None] * (sin[:, None] * p[..., 0] + cos[:, None] * p[..., 1])
        x2 = sx[:, None] * (cos[:, None] * p[..., 0] - sin[:, None] * p[..., 1]) + shear[:, None] * y2
        shift = rng.uniform(-0.07, 0.07, size=(m, 1, 2))
        p = np.stack([x2, y2], axis=-1) + 0.5 + shift
        half_width = rng.uniform(0.045, 0.085, m)
        bitmaps = _render(p, segs, half_width)
        counts[idx] = bitmaps.reshape(m, SIDE, BLOCK, SIDE, BLOCK).sum(axis=(2, 4))
    return counts, labels


def digits(n: int = 2000, seed: int = 0, *, source: str = "synthetic") -> Samples:
    """8x8 digit images, flattened: ``x`` (n, 64) float32 in [0, 1] (block counts / 16), ``y`` (n,) int64 in 0..9.

    ``source="synthetic"`` (the default) draws them as described in this module's docstring;
    ``source="sklearn"`` uses scikit-learn's bundled copy of the UCI digits (1,797 images,
    shuffled with ``seed``; ``n`` caps the count). ``extras["images"]`` keeps the (n, 8, 8) counts.
    """
    if source == "synthetic":
        counts, labels = _synthetic(n, seed)
        provenance = "synthetic pen strokes (accelkit.data.digits), UCI-style 32x32 -> 8x8 block counts"
    elif source == "sklearn":
        try:
            from sklearn.datasets import load_digits  # type: ignore[import-untyped]
        except ImportError as exc:
            raise AccelkitError("source='sklearn' needs scikit-learn, which is not installed",
                                fix="pip install scikit-learn, or use source='synthetic'") from exc
        bunch = load_digits()
        order = np.random.default_rng(seed).permutation(len(bunch.target))[:n]
        counts = bunch.images[order].astype(np.float32)
        labels = bunch.target[order]
        provenance = "UCI optdigits via scikit-learn (CC BY 4.0)"
    else:
        raise AccelkitError(f"unknown digits source {source!r}", fix="use source='synthetic' or 'sklearn'")
    images = torch.from_numpy(counts)
    return Samples(
        "digits",
        {"x": images.reshape(len(images), SIDE * SIDE) / 16.0, "y": torch.from_numpy(np.asarray(labels, np.int64))},
        extras={"images": images},
        info={"seed": seed, "source": source, "provenance": provenance, "classes": 10},
    )
