"""``torchvision.ops`` (``box_convert``, ``nms``), ``torchvision.io.image`` (``read_image``, ``ImageReadMode``) and
``torchvision.datasets.ImageNet`` for the torchvision stand-in of ``accelkit vendor-run --synthetic-data`` (used
only where torchvision is not installed).

The two box operations are computed for real, as torchvision defines them (docs.pytorch.org/vision, "torchvision.ops"):
a detector's post-processing gives the same boxes. ImageNet is never downloaded by torchvision itself (its archives
are placed by hand): the stand-in reads a split's class folders where they are (the generated Imagenette's,
:mod:`accelkit.vendor.imagenette`), and says so where they are not.
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


def unstood_dataset(name: str, stood_in: list[str]) -> type:
    """A class standing for one of torchvision's datasets the stand-in does not make (``Cityscapes``...): a package
    may subclass it or name it at import time (the Cerebras Model Zoo's registry imports every data processor at
    start-up); making one is refused, naming the sets that are made here."""
    def refuse(self: Any, *args: Any, **kwargs: Any) -> None:
        raise VisionStandInError(f"torchvision.datasets.{name} is not stood in under --synthetic-data (torchvision is "
                                 f"not installed here)", fix=f"use one of {', '.join(stood_in)}, or install torchvision "
                                                             "beside its PyTorch to read the real set")

    return type(name, (torch.utils.data.Dataset,), {"__init__": refuse, "__module__": "torchvision.datasets",
                                                    "__doc__": f"torchvision.datasets.{name} (not stood in)"})


class StandardTransform:
    """``torchvision.datasets.vision.StandardTransform``: a sample's transform and its target's, applied together."""

    def __init__(self, transform: Any = None, target_transform: Any = None) -> None:
        self.transform, self.target_transform = transform, target_transform

    def __call__(self, sample: Any, target: Any) -> tuple[Any, Any]:
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target


class VisionDataset(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """``torchvision.datasets.VisionDataset``: the base of torchvision's sets (its ``root``, ``transform``,
    ``target_transform`` and combined ``transforms``), which packages subclass for their own data."""

    def __init__(self, root: Any = None, transforms: Any = None, transform: Any = None,
                 target_transform: Any = None) -> None:
        self.root = root
        if transforms is not None and (transform is not None or target_transform is not None):
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform, self.target_transform = transform, target_transform
        self.transforms = transforms if transforms is not None else StandardTransform(transform, target_transform)

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


def verify_str_arg(value: str, arg: str | None = None, valid_values: Any = None, custom_msg: str | None = None) -> str:
    """``torchvision.datasets.utils.verify_str_arg``: ``value`` if it is a string among ``valid_values``."""
    if not isinstance(value, str):
        raise ValueError(f"Expected type str for argument {arg}, but got type {type(value).__name__}.")
    if valid_values is not None and value not in valid_values:
        raise ValueError(custom_msg or f"Unknown value '{value}' for argument {arg}. Valid values are "
                                       f"{{{', '.join(map(repr, valid_values))}}}.")
    return value


def _not_stood_in(name: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise VisionStandInError(f"torchvision.{name} is not stood in under --synthetic-data (torchvision is not "
                                 "installed here)", fix="install torchvision beside its PyTorch to use it")
    refused.__name__ = name.rsplit(".", 1)[-1]
    return refused


save_image = _not_stood_in("utils.save_image")
draw_bounding_boxes = _not_stood_in("utils.draw_bounding_boxes")
make_grid = _not_stood_in("utils.make_grid")


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


class FrozenBatchNorm2d(torch.nn.Module):
    """``torchvision.ops.FrozenBatchNorm2d(num_features, eps=1e-5)``: batch norm whose statistics and affine
    parameters are buffers, fixed (torchvision/ops/misc.py: ``x * w / sqrt(var + eps) + (b - mean * scale)``)."""

    weight: torch.Tensor
    bias: torch.Tensor
    running_mean: torch.Tensor
    running_var: torch.Tensor

    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w, b = self.weight.view(1, -1, 1, 1), self.bias.view(1, -1, 1, 1)
        rv, rm = self.running_var.view(1, -1, 1, 1), self.running_mean.view(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        return x * scale + (b - rm * scale)


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


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")  # torchvision's


def pil_loader(path: str) -> Any:
    """torchvision's default loader: the file as a PIL image in RGB."""
    from PIL import Image

    with open(path, "rb") as f:
        img = Image.open(f)
        return img.convert("RGB")


class DatasetFolder(VisionDataset):
    """``torchvision.datasets.DatasetFolder(root, loader, extensions=None, transform=None, target_transform=None,
    is_valid_file=None)``: the files of ``root/<class>/...`` read as torchvision reads them: the class folders in
    sorted order are the targets 0, 1, ... (``classes``, ``class_to_idx``), ``samples`` the (path, target) pairs in
    sorted order, a file kept by its extension (case-insensitive) or by ``is_valid_file``; a root without class
    folders raises ``FileNotFoundError``, as torchvision does. ``find_classes`` and ``make_dataset`` can be
    overridden, as there. Nothing is generated: the files are the user's."""

    def __init__(self, root: Any, loader: Any, extensions: Any = None, transform: Any = None,
                 target_transform: Any = None, is_valid_file: Any = None, allow_empty: bool = False) -> None:
        import os

        super().__init__(os.path.expanduser(str(root)), transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(str(self.root))
        self.samples = self.make_dataset(str(self.root), class_to_idx, extensions, is_valid_file,
                                         allow_empty=allow_empty)
        self.loader, self.extensions = loader, extensions
        self.classes, self.class_to_idx = classes, class_to_idx
        self.targets = [t for _, t in self.samples]

    @staticmethod
    def make_dataset(directory: str, class_to_idx: dict[str, int] | None = None, extensions: Any = None,
                     is_valid_file: Any = None, allow_empty: bool = False) -> list[tuple[str, int]]:
        import os

        if (extensions is None) == (is_valid_file is None):
            raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
        if class_to_idx is None:
            _, class_to_idx = DatasetFolder.find_classes(directory)
        if is_valid_file is None:
            ends = tuple(e.lower() for e in ((extensions,) if isinstance(extensions, str) else extensions))
            is_valid_file = lambda path: path.lower().endswith(ends)  # noqa: E731 - as torchvision writes it
        out: list[tuple[str, int]] = []
        for name in sorted(class_to_idx):
            folder = os.path.join(directory, name)
            found = False
            for base, _dirs, files in sorted(os.walk(folder, followlinks=True)):
                for file in sorted(files):
                    path = os.path.join(base, file)
                    if is_valid_file(path):
                        out.append((path, class_to_idx[name]))
                        found = True
            if not found and not allow_empty:
                raise FileNotFoundError(f"Found no valid file for the classes {name}. Supported extensions are: "
                                        f"{', '.join(extensions) if extensions else '(is_valid_file)'}")
        return out

    @staticmethod
    def find_classes(directory: str) -> tuple[list[str], dict[str, int]]:
        import os

        classes = sorted(e.name for e in os.scandir(directory) if e.is_dir()) if os.path.isdir(directory) else []
        if not classes:
            raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
        return classes, {name: i for i, name in enumerate(classes)}

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def __len__(self) -> int:
        return len(self.samples)


class ImageFolder(DatasetFolder):
    """``torchvision.datasets.ImageFolder(root, transform=None, target_transform=None, loader=<PIL RGB>,
    is_valid_file=None)``: a :class:`DatasetFolder` of the image files torchvision knows (``imgs`` is ``samples``)."""

    def __init__(self, root: Any, transform: Any = None, target_transform: Any = None, loader: Any = pil_loader,
                 is_valid_file: Any = None, allow_empty: bool = False) -> None:
        super().__init__(root, loader, IMAGE_SUFFIXES if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples


class ImageNet(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """``torchvision.datasets.ImageNet(root, split="train", transform=None, target_transform=None)`` over the
    images of ``root/split``, read as torchvision reads them once its devkit is parsed (an ``ImageFolder``: the
    class folders in sorted order are the targets 0, 1, ...; items ``(PIL RGB image, target)``). Where that folder
    is missing it is refused: torchvision never downloads ImageNet (its archives are placed by hand), and
    --synthetic-data makes only Imagenette's (:mod:`accelkit.vendor.imagenette`)."""

    def __init__(self, root: Any = None, split: str = "train", transform: Any = None, target_transform: Any = None,
                 **_: Any) -> None:
        from pathlib import Path

        from accelkit.vendor.imagenette import CLASSES

        folder = Path(str(root)).expanduser() / split
        wnids = sorted(d.name for d in folder.iterdir() if d.is_dir()) if folder.is_dir() else []
        if not wnids:
            raise VisionStandInError(
                f"torchvision.datasets.ImageNet(root={root!r}, split={split!r}): no class folders in {folder}; "
                "ImageNet's archives are placed by hand, and --synthetic-data makes no stand-in for them",
                fix="use CIFAR10, MNIST or FashionMNIST (made here under --synthetic-data), or run where ImageNet's "
                    "files are")
        self.root, self.split, self.transform, self.target_transform = root, split, transform, target_transform
        self.wnids = wnids
        self.wnid_to_idx = {w: i for i, w in enumerate(wnids)}
        self.classes = [(CLASSES.get(w, w),) for w in wnids]
        self.class_to_idx = {c[0]: i for i, c in enumerate(self.classes)}
        self.samples = [(str(f), i) for i, w in enumerate(wnids) for f in sorted((folder / w).iterdir())
                        if f.suffix.lower() in IMAGE_SUFFIXES]
        self.imgs = self.samples
        self.targets = [t for _, t in self.samples]

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from PIL import Image

        path, target = self.samples[index]
        with Image.open(path) as img:
            sample: Any = img.convert("RGB")
        if self.transform is not None:
            sample = self.transform(sample)
        return sample, (self.target_transform(target) if self.target_transform is not None else target)


__all__ = ["DatasetFolder", "FrozenBatchNorm2d", "ImageFolder", "ImageNet", "pil_loader", "StandardTransform", "VisionDataset", "verify_str_arg", "ImageReadMode", "VisionStandInError", "box_convert", "nms", "read_image"]
