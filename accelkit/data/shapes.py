"""Shapes on noise: a segmentation set of circles, rectangles and triangles, with per-pixel masks.

Each image holds one to three shapes, drawn in order so a later shape covers an earlier one,
on a background of Gaussian noise plus a gentle brightness gradient. Each shape's brightness is
drawn at random, so telling the three kinds apart takes their outlines, not their brightness.
The mask labels every pixel 0 (background), 1 (circle), 2 (rectangle) or 3 (triangle).
Everything comes from one seeded generator: the same seed gives the same images.
"""

from __future__ import annotations

import math

import torch

from accelkit.data.samples import Samples

CLASSES = ("background", "circle", "rectangle", "triangle")


def _inside_triangle(xx: torch.Tensor, yy: torch.Tensor, vx: torch.Tensor, vy: torch.Tensor) -> torch.Tensor:
    """Pixels inside triangles with vertices (vx, vy), each (n, 3, 1, 1), over a (H, W) grid -> (n, H, W)."""
    signs = []
    for i in range(3):
        j = (i + 1) % 3
        # the sign of the cross product says on which side of edge i -> j the pixel lies
        signs.append((vx[:, j] - vx[:, i]) * (yy - vy[:, i]) - (vy[:, j] - vy[:, i]) * (xx - vx[:, i]))
    s = torch.stack(signs)  # (3, n, H, W)
    return (s >= 0).all(0) | (s <= 0).all(0)


def shapes(n: int = 1024, seed: int = 0, *, size: int = 32, max_shapes: int = 3, noise: float = 0.25) -> Samples:
    """``n`` images: ``x`` (n, 1, size, size) float32, ``mask`` (n, size, size) int64 in 0..3 (see ``CLASSES``)."""
    g = torch.Generator().manual_seed(seed)

    def uniform(lo: float, hi: float, *shape: int) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(*(shape or (n,)), generator=g)

    coords = torch.arange(size, dtype=torch.float32) + 0.5
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")  # (H, W)
    tilt = uniform(-0.3, 0.3, n, 2)
    image = (noise * torch.randn(n, size, size, generator=g)
             + (tilt[:, 0, None, None] * xx + tilt[:, 1, None, None] * yy) / size)
    mask = torch.zeros(n, size, size, dtype=torch.int64)
    count = torch.randint(1, max_shapes + 1, (n,), generator=g)

    for slot in range(max_shapes):
        kind = torch.randint(1, 4, (n,), generator=g)  # 1 circle, 2 rectangle, 3 triangle
        radius = uniform(size * 0.15, size * 0.3)  # the shape's rough half-extent, px
        cx = uniform(0.0, 1.0) * (size - 2 * radius) + radius
        cy = uniform(0.0, 1.0) * (size - 2 * radius) + radius
        r, x0, y0 = radius[:, None, None], cx[:, None, None], cy[:, None, None]
        circle = (xx - x0) ** 2 + (yy - y0) ** 2 <= r**2
        aspect = uniform(0.55, 1.0)[:, None, None]  # rectangles are boxes of half-sides r and r*aspect
        wide = torch.rand(n, generator=g)[:, None, None] < 0.5
        hx, hy = torch.where(wide, r, r * aspect), torch.where(wide, r * aspect, r)
        rectangle = ((xx - x0).abs() <= hx) & ((yy - y0).abs() <= hy)
        turn = uniform(0.0, 2 * math.pi)[:, None, None, None]
        corners = turn + torch.tensor([0.0, 2 * math.pi / 3, 4 * math.pi / 3])[None, :, None, None]
        corners = corners + uniform(-0.35, 0.35, n, 3)[:, :, None, None]  # not always equilateral
        vx = x0[:, None] + 1.15 * r[:, None] * torch.cos(corners)  # (n, 3, 1, 1)
        vy = y0[:, None] + 1.15 * r[:, None] * torch.sin(corners)
        triangle = _inside_triangle(xx, yy, vx, vy)
        k = kind[:, None, None]
        region = torch.where(k == 1, circle, torch.where(k == 2, rectangle, triangle))
        region &= (slot < count)[:, None, None]
        brightness = uniform(0.4, 1.2)
        image = torch.where(region, brightness[:, None, None] + noise * torch.randn(n, size, size, generator=g),
                            image)
        mask = torch.where(region, k, mask)

    return Samples(
        "shapes", {"x": image[:, None].contiguous(), "mask": mask},
        extras={"count": count},
        info={"seed": seed, "size": size, "max_shapes": max_shapes, "noise": noise, "classes": CLASSES},
    )
