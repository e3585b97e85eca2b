"""Images in torchvision's shapes, made here: handwriting-like digits at MNIST's (28x28 grey) or CIFAR-10's (32x32,
coloured) size as a Dataset yielding ``(PIL image, int label)``, and the transforms tutorials apply to them
(``Compose``, ``ToTensor``, ``Normalize``) with torchvision's semantics.

The ``--synthetic-data`` stand-ins for ``torchvision.datasets`` (:mod:`accelkit.vendor.synthetic`) are these with
the datasets' signatures and notices; ``ak.validate`` times the MNIST tutorials' input pipeline with them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch


def digit_images(n: int, seed: int, side: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, side, side) uint8 digit images (0..255) and (n,) int64 labels, from :func:`accelkit.data.digits`."""
    from accelkit.data.digits import digits

    s = digits(n, seed)
    small = s.extras["images"].reshape(-1, 1, 8, 8) / 16.0  # block counts -> [0, 1]
    inner = side - 4  # a 2-pixel margin, as MNIST centres its digits
    big = torch.nn.functional.interpolate(small, size=(inner, inner), mode="bilinear", align_corners=False)
    big = torch.nn.functional.pad(big, (2, 2, 2, 2))[:, 0]
    return (big.clamp(0, 1) * 255).round().to(torch.uint8).numpy(), s.y.numpy()


class DigitImages(torch.utils.data.Dataset):
    """``n`` generated digits as a torchvision vision dataset gives them: ``dataset[i]`` is a PIL image (grey, or
    RGB with ``colour``: each digit's strokes in a random colour on a random background) through ``transform``,
    and the digit through ``target_transform``. ``length`` above ``n`` repeats the digits, each repeat shifted by
    up to 2 pixels (a dataset of a real one's size)."""

    def __init__(self, n: int, seed: int, *, side: int = 28, colour: bool = False,
                 transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[Any], Any] | None = None, length: int | None = None) -> None:
        images, labels = digit_images(n, seed, side)
        if colour:
            g = np.random.default_rng(seed + 2)
            fg = g.uniform(0.4, 1.0, (len(images), 1, 1, 3))
            bg = g.uniform(0.0, 0.3, (len(images), 1, 1, 3))
            a = images[..., None] / 255.0
            images = ((a * fg + (1 - a) * bg) * 255).round().astype(np.uint8)
        self.side, self.colour = side, colour
        self.transform, self.target_transform = transform, target_transform
        self.data = torch.from_numpy(images)
        self.targets = torch.from_numpy(labels)
        if length is not None:
            self._length = length

    def __len__(self) -> int:
        return getattr(self, "_length", len(self.targets))

    def _image(self, index: int) -> np.ndarray:
        base, repeat = index % len(self.targets), index // len(self.targets)
        img = self.data[base].numpy()
        if repeat:  # a repeat of a generated digit, shifted: (dy, dx) in -2..2, never (0, 0)
            dy, dx = divmod(repeat % 24 + (repeat % 24 >= 12), 5)
            img = np.roll(img, (dy - 2, dx - 2), axis=(0, 1))
        return img

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        if not 0 <= index < len(self):
            raise IndexError(index)
        img: Any = Image.fromarray(self._image(index), mode="RGB" if self.colour else "L")
        target: Any = int(self.targets[index % len(self.targets)])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


def to_tensor(pic: Any) -> torch.Tensor:
    """``transforms.ToTensor``: a PIL image or HxW(xC) uint8 array -> CxHxW float tensor in [0, 1]."""
    arr = torch.as_tensor(np.array(pic, copy=True))
    if arr.dim() == 2:
        arr = arr[:, :, None]
    t = arr.permute(2, 0, 1).contiguous()
    return t.float().div(255) if t.dtype == torch.uint8 else t.float()


class Compose:
    def __init__(self, transforms: list[Callable[[Any], Any]]) -> None:
        self.transforms = transforms

    def __call__(self, x: Any) -> Any:
        for t in self.transforms:
            x = t(x)
        return x


class ToTensor:
    def __call__(self, pic: Any) -> torch.Tensor:
        return to_tensor(pic)


class Normalize:
    def __init__(self, mean: Any, std: Any, inplace: bool = False) -> None:
        self.mean, self.std = mean, std

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        mean = torch.as_tensor(self.mean, dtype=t.dtype).reshape(-1, 1, 1)
        std = torch.as_tensor(self.std, dtype=t.dtype).reshape(-1, 1, 1)
        return (t - mean) / std


__all__ = ["Compose", "DigitImages", "Normalize", "ToTensor", "digit_images", "to_tensor"]
