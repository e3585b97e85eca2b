"""``torchvision.ops`` (``box_convert``, ``nms``), ``torchvision.io.image`` (``read_image``, ``ImageReadMode``) and
``torchvision.datasets.ImageNet`` for the torchvision stand-in of ``accelkit vendor-run --synthetic-data`` (used
only where torchvision is not installed).

The two box operations are computed for real, as torchvision defines them (docs.pytorch.org/vision, "torchvision.ops"):
a detector's post-processing gives the same boxes. ImageNet is never downloaded by torchvision itself (its archives
are placed by hand), and no stand-in of it is made here: constructing it says so.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np
import torch

from accelkit.errors import AccelkitError

BOX_FORMATS = ("xyxy", "xywh", "cxcywh")


class VisionStandInError(AccelkitError):
    """A torchvision call the stand-in cannot answer."""


def _to_xyxy(boxes: torch.Tensor, fmt: str) -> torch.Tensor:
    a, b, c, d = boxes.unbind(-1)
    if fmt == "xywh":  # (x, y, w, h) -> (x1, y1, x2, y2)
        return torch.stack((a, b, a + c, b + d), dim=-1)
    if fmt == "cxcywh":  # (cx, cy, w, h) -> (x1, y1, x2, y2)
        return torch.stack((a - c / 2, b - d / 2, a + c / 2, b + d / 2), dim=-1)
    return boxes


def box_convert(boxes: torch.Tensor, in_fmt: str, out_fmt: str) -> torch.Tensor:
    """``torchvision.ops.box_convert``: boxes ``(N, 4)`` from ``in_fmt`` to ``out_fmt`` (``xyxy``, ``xywh``,
    ``cxcywh``)."""
    for fmt in (in_fmt, out_fmt):
        if fmt not in BOX_FORMATS:
            raise VisionStandInError(f"box_convert: unknown box format {fmt!r}", fix=f"use one of {BOX_FORMATS}")
    if in_fmt == out_fmt:
        return boxes.clone()
    x1, y1, x2, y2 = _to_xyxy(boxes, in_fmt).unbind(-1)
    if out_fmt == "xywh":
        return torch.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)
    if out_fmt == "cxcywh":
        return torch.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)
    return torch.stack((x1, y1, x2, y2), dim=-1)


def nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """``torchvision.ops.nms``: the indices (int64) of the boxes kept, highest score first, dropping every box
    whose IoU with a kept, higher-scoring box is above ``iou_threshold``. ``boxes``: ``(N, 4)`` in ``xyxy``."""
    order = torch.argsort(scores, descending=True)
    x1, y1, x2, y2 = boxes.unbind(-1)
    area = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
    keep: list[int] = []
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    for rank, i in enumerate(order.tolist()):
        if suppressed[rank]:
            continue
        keep.append(i)
        rest = order[rank + 1:]
        w = (torch.minimum(x2[i], x2[rest]) - torch.maximum(x1[i], x1[rest])).clamp(min=0)
        h = (torch.minimum(y2[i], y2[rest]) - torch.maximum(y1[i], y1[rest])).clamp(min=0)
        inter = w * h
        iou = inter / (area[i] + area[rest] - inter)
        suppressed[rank + 1:] |= iou > iou_threshold
    return torch.tensor(keep, dtype=torch.int64)


class ImageReadMode(enum.Enum):
    """``torchvision.io.ImageReadMode``: the channels ``read_image`` gives back."""

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4


_PIL_MODES = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA", ImageReadMode.RGB: "RGB",
              ImageReadMode.RGB_ALPHA: "RGBA"}


def read_image(path: Any, mode: ImageReadMode = ImageReadMode.UNCHANGED) -> torch.Tensor:
    """``torchvision.io.read_image``: a PNG or JPEG file as a ``(C, H, W)`` uint8 tensor (read with Pillow)."""
    from PIL import Image

    with Image.open(path) as img:
        pic = img.convert(_PIL_MODES[mode]) if mode in _PIL_MODES else img.copy()
    arr = np.asarray(pic, dtype=np.uint8)
    arr = arr[:, :, None] if arr.ndim == 2 else arr  # (H, W) -> (H, W, 1)
    return torch.from_numpy(arr.copy()).permute(2, 0, 1)  # (H, W, C) -> (C, H, W)


class ImageNet:
    """``torchvision.datasets.ImageNet(root, split=...)``: refused when constructed (importing it is fine)."""

    def __init__(self, root: Any = None, split: str = "train", **_: Any) -> None:
        raise VisionStandInError(
            f"torchvision.datasets.ImageNet(root={root!r}, split={split!r}): ImageNet's archives are placed by hand, "
            "and --synthetic-data makes no stand-in for them",
            fix="use CIFAR10, MNIST or FashionMNIST (made here under --synthetic-data), or run where ImageNet's "
                "files are")


__all__ = ["ImageNet", "ImageReadMode", "VisionStandInError", "box_convert", "nms", "read_image"]
