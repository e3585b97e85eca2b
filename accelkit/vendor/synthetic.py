"""``--synthetic-data``: the downloads vendor tutorials make, answered from data made on this machine.

The tutorials fetch their data: ``torchvision.datasets.MNIST(root, train=True, download=True)`` (SambaNova's
hello_world/logreg.py, Graphcore's MNIST and basics tutorials use MNIST / FashionMNIST), CIFAR-10, and
Hugging Face checkpoints (``BertForQuestionAnswering.from_pretrained("bert-base-uncased")``). Nothing is
downloaded here (no network in a workshop), so for one run this module stands in for them:

- **torchvision datasets** ``MNIST``, ``FashionMNIST``, ``CIFAR10`` with torchvision's signatures
  ``(root, train=True, transform=None, target_transform=None, download=False)``, yielding ``(PIL image,
  int label)`` as torchvision does. The images are accelkit's handwriting-like digits
  (:func:`accelkit.data.digits`: pen strokes drawn by code, UCI-style 8x8 block counts) scaled up to
  28x28 (grey) or 32x32 (coloured per sample, for CIFAR-10); the label is the digit. A model that learns
  MNIST learns these, so a tutorial's loss falls as it would. 2,000 training and 500 test samples.
- **torchvision.transforms** ``Compose``, ``ToTensor``, ``Normalize``, ``Lambda``, ``Resize``,
  ``ConvertImageDtype``, when torchvision itself is not installed (it is not, on a CPU-only workshop
  machine: its wheels pull a CUDA torch).
- **Hugging Face ``from_pretrained``** of a model (``transformers.PreTrainedModel.from_pretrained`` and
  the ``AutoModel*`` / ``AutoConfig`` classes): the architecture named by the checkpoint (``bert``,
  ``gpt2``, ...) built from its config class at a small size (2 layers, width 64) with *random* weights,
  as accelkit builds every transformers model. Keyword arguments the script passes (``num_labels=2``)
  are kept. The numbers are therefore not the checkpoint's: what runs is the architecture. A tokenizer's
  ``from_pretrained`` returns a small WordPiece tokenizer made here (:mod:`accelkit.vendor.tokenizer`),
  whose ids fit those small models.
- **Hugging Face datasets** (``import datasets`` / ``evaluate``, where they are not installed): small text sets
  with the real columns and splits (SST-2, SST, IMDB, WikiText, SQuAD) made from accelkit's corpus, and the
  common metrics computed here (:mod:`accelkit.vendor.hf_datasets`).
- **torch.hub** ``torch.hub.load("pytorch/vision[:tag]", name, ...)``: torchvision's model built here, random
  weights; another repository or a URL download is refused by name (:mod:`accelkit.vendor.torch_hub`).
- **torchaudio** ``datasets.SPEECHCOMMANDS`` (where torchaudio is not installed): Speech Commands' interface and 35
  words over generated clips, tones rather than speech (:mod:`accelkit.vendor.audio`).
- **PyTorch Geometric** ``datasets.Planetoid`` (Cora, CiteSeer, PubMed), ``datasets.QM9`` and ``datasets.TUDataset`` (MUTAG,
  PROTEINS, ENZYMES, NCI1), where PyG is installed: generated graphs at the real sets' sizes and splits
  (:mod:`accelkit.vendor.graphs`).
- **tiktoken** (``import tiktoken``, where it is not installed; its encodings are a download): a byte-level
  BPE learned here from accelkit's own corpus (:mod:`accelkit.vendor.bpe`): any text encodes and decodes
  back exactly, ``<|endoftext|>`` keeps the real id, the ordinary ids are not the real merges'.

Every substitution is announced (on stdout) when it happens (``accelkit vendor-run: --synthetic-data:
...``), and :func:`substitutions` lists them for the end-of-run report.
"""

from __future__ import annotations

import contextlib
import enum
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from accelkit.data.images import Compose, DigitImages, Normalize, ToTensor, digit_images, to_tensor
from accelkit.vendor import torch_hub
from accelkit.vendor.notices import reset as _reset_notices
from accelkit.vendor.notices import say, substitutions  # noqa: F401 - substitutions is public here
from accelkit.vendor.tokenizer import VOCAB_SIZE

TRAIN_SAMPLES, TEST_SAMPLES = 2000, 500
# narrow and shallow, but with as many positions as the real model has (its config class's default: GPT-2's 1,024):
# a script may generate past 128 tokens (Graphcore's GPT-2 text generation: 256), and a table of positions costs
# little. A checkpoint whose name says its depth gets that many layers (_named_depth)
SMALL_TRANSFORMER = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128,
                     "n_embd": 64, "n_layer": 2, "n_head": 2, "dim": 64, "n_layers": 2, "n_heads": 2,
                     "hidden_dim": 128, "vocab_size": VOCAB_SIZE}
# Google's BERT miniatures, by the size their names give (Turc, Chang, Lee and Toutanova, "Well-Read Students Learn
# Better", arXiv 1908.08962, and google-research/bert's README: Tiny L=2, Mini L=4, Small L=4, Medium L=8), and names
# that spell the layer count (google/bert_uncased_L-4_H-256_A-4); a base or large checkpoint keeps the stand-in's 2
# layers, which a script iterates, as it does the real 12 or 24
_BERT_DEPTHS = {"tiny": 2, "mini": 4, "small": 4, "medium": 8}


def _named_depth(name: str) -> int | None:
    """The number of layers a checkpoint's name states (``bert-medium-...``: 8; ``..._L-4_H-256...``: 4), else None
    (a pipelining script places its blocks by layer index: PopTorch's user guide begins them at BERT-medium's layers
    0, 2 and 4)."""
    import re

    lowered = str(name).lower()
    spelled = re.search(r"(?:^|[_/-])l-?(\d{1,2})(?:[_-]|$)", lowered)
    if spelled:
        return int(spelled.group(1))
    found = re.search(r"(?<![a-z])bert[-_](tiny|mini|small|medium)\b", lowered)
    return _BERT_DEPTHS[found.group(1)] if found else None

_say = say  # the stand-ins' notices (accelkit.vendor.notices), under the name this module always used

# who asked that the stand-in datasets made from now on take the real dataset's size (a runner that sizes its
# epochs from the dataset's length, as the Cerebras Model Zoo's does): see at_real_sizes()
_real_sizes_for: list[str] = []


def at_real_sizes(who: str) -> None:
    """From now on (in this run), the torchvision stand-ins take the real dataset's size (MNIST's 60,000 training
    images), repeating their generated digits shifted by a pixel or two, because ``who`` sizes its epochs from the
    dataset's length (a step count the real data allows must be allowed here too). Said for each set that grows."""
    if who not in _real_sizes_for:
        _real_sizes_for.append(who)


# ---- torchvision ----------------------------------------------------------------------------------
_digit_images = digit_images  # the name accelkit.vendor.idx imports

_STAND_IN_SAID: list[bool] = []


def _stand_in_note() -> str:
    """Why a torchvision dataset is a stand-in, said with the first one a process makes only (a notebook that runs
    four vendor scripts would otherwise repeat it under every dataset of every script)."""
    if _STAND_IN_SAID:
        return ""
    _STAND_IN_SAID.append(True)
    return " (torchvision is not installed: its datasets and transforms are accelkit's stand-ins)"


class _StandInDataset(DigitImages):
    """A torchvision vision dataset's interface over generated digits (see the module docstring)."""

    side = 28
    colour = False
    classes = [f"{d} - {w}" for d, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven",
                                                   "eight", "nine"))]

    def __init__(self, root: Any = None, train: bool = True, transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[Any], Any] | None = None, download: bool = False) -> None:
        name = type(self).__name__
        stand_in = "__accelkit_facade__" in vars(sys.modules.get("torchvision", sys))
        _say(f"torchvision.datasets.{name}(root={str(root)!r}, train={train}) is {TRAIN_SAMPLES if train else TEST_SAMPLES}"
             f" generated handwriting-like digits (accelkit.data.digits, {self.side}x{self.side}); nothing downloaded"
             + (_stand_in_note() if stand_in else ""))
        super().__init__(TRAIN_SAMPLES if train else TEST_SAMPLES, 0 if train else 1, side=self.side,
                         colour=self.colour, transform=transform, target_transform=target_transform)
        self.root, self.train = root, train
        if _real_sizes_for:
            self._length = self.real_size[train]
            _say(f"torchvision.datasets.{name}(train={train}): {_real_sizes_for[0]} sizes its epochs from the "
                 f"dataset's length, so the stand-in takes the real dataset's {self._length}, repeating its digits "
                 "shifted by up to 2 pixels")

    real_size = {True: 60000, False: 10000}  # the real dataset's training and test sizes

    def at_real_size(self, needed: int, why: str | None = None) -> None:
        """Grow to the real dataset's size (the generated digits again, each repeat shifted by a pixel or two),
        asked by a loader whose one batch is more than :data:`TRAIN_SAMPLES` / :data:`TEST_SAMPLES` (PopTorch's
        combined batch: micro-batch x deviceIterations x gradientAccumulation x replicas); announced."""
        size = self.real_size[self.train]
        if len(self) >= max(needed, size):
            return
        self._length = size
        _say(f"torchvision.datasets.{type(self).__name__}(train={self.train}): "
             + (why or f"one batch of the loader takes {needed} samples")
             + f", more than the {len(self.targets)} generated: the stand-in grows to the real "
             f"dataset's {size}, repeating its digits shifted by up to 2 pixels")


class MNIST(_StandInDataset):
    """Stand-in for ``torchvision.datasets.MNIST`` (28x28 grey digits, 10 classes)."""


class FashionMNIST(_StandInDataset):
    """Stand-in for ``torchvision.datasets.FashionMNIST``: the same 28x28 digits (clothes are not generated)."""


class CIFAR10(_StandInDataset):
    """Stand-in for ``torchvision.datasets.CIFAR10``: 32x32 RGB images (coloured digits), 10 classes."""

    side = 32
    colour = True
    real_size = {True: 50000, False: 10000}


_to_tensor = to_tensor  # transforms.functional.to_tensor


class Lambda:
    def __init__(self, lambd: Callable[[Any], Any]) -> None:
        self.lambd = lambd

    def __call__(self, x: Any) -> Any:
        return self.lambd(x)


class Resize:
    """``transforms.Resize(size)``: a pair is the (height, width) made; a number is the shorter side's length, the
    longer scaled to keep the aspect ratio, as torchvision does."""

    def __init__(self, size: int | tuple[int, int] | list[int], **_: Any) -> None:
        self.size = size if isinstance(size, int) else tuple(size)

    def _output(self, h: int, w: int) -> tuple[int, int]:
        if not isinstance(self.size, int):
            return (self.size[0], self.size[-1])
        short, long = (h, w) if h <= w else (w, h)
        new_long = int(self.size * long / short)
        return (self.size, new_long) if h <= w else (new_long, self.size)

    def __call__(self, x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            size = self._output(x.shape[-2], x.shape[-1])
            return torch.nn.functional.interpolate(x[None].float(), size=size, mode="bilinear")[0]
        h, w = self._output(x.height, x.width)
        return x.resize((w, h))


class ConvertImageDtype:
    def __init__(self, dtype: torch.dtype) -> None:
        self.dtype = dtype

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        return t.to(self.dtype)


class ToPILImage:
    """``transforms.ToPILImage``: a CxHxW tensor (floats in [0, 1] or uint8) or HxW(xC) array -> a PIL image."""

    def __init__(self, mode: str | None = None) -> None:
        self.mode = mode

    def __call__(self, pic: Any) -> Any:
        from PIL import Image

        if isinstance(pic, torch.Tensor):
            t = pic.detach()
            if t.is_floating_point():
                t = (t.float().clamp(0, 1) * 255).round().to(torch.uint8)
            arr = (t[0] if t.dim() == 3 and t.shape[0] == 1 else t.permute(1, 2, 0) if t.dim() == 3 else t).numpy()
        else:
            arr = np.asarray(pic)
        return Image.fromarray(arr, mode=self.mode) if self.mode else Image.fromarray(arr)


class RandomHorizontalFlip:
    def __init__(self, p: float = 0.5) -> None:
        self.p = p

    def __call__(self, x: Any) -> Any:
        if float(torch.rand(())) >= self.p:
            return x
        if isinstance(x, torch.Tensor):
            return x.flip(-1)
        from PIL import Image

        return x.transpose(Image.Transpose.FLIP_LEFT_RIGHT)


class RandomChoice:
    """torchvision's ``RandomChoice(transforms, p=None)``: one of the transforms, drawn for each call (by the weights
    ``p`` where given), applied to what the call is given (the Model Zoo draws mixup or cutmix for a batch so)."""

    def __init__(self, transforms: Sequence[Any], p: Sequence[float] | None = None) -> None:
        if not transforms:
            raise ValueError("RandomChoice needs at least one transform")
        if p is not None and len(p) != len(transforms):
            raise ValueError(f"RandomChoice: {len(p)} probabilities for {len(transforms)} transforms")
        self.transforms = list(transforms)
        total = float(sum(p)) if p is not None else 0.0
        self.p = [float(x) / total for x in p] if p is not None and total > 0 else None

    def __call__(self, *args: Any) -> Any:
        weights = torch.tensor(self.p) if self.p is not None else torch.ones(len(self.transforms))
        return self.transforms[int(torch.multinomial(weights, 1))](*args)


class RandomApply:
    """torchvision's ``RandomApply(transforms, p=0.5)``: the transforms in turn, with probability ``p`` for each call."""

    def __init__(self, transforms: Sequence[Any], p: float = 0.5) -> None:
        self.transforms, self.p = list(transforms), float(p)

    def __call__(self, x: Any) -> Any:
        if float(torch.rand(())) >= self.p:
            return x
        for t in self.transforms:
            x = t(x)
        return x


class ColorJitter:
    """torchvision's ``ColorJitter(brightness=0, contrast=0, saturation=0, hue=0)`` on a PIL image: each factor drawn
    uniformly from ``[max(0, 1 - v), 1 + v]`` (hue's shift from ``[-hue, hue]``), the four applied in a random order,
    as torchvision does (PIL's ``ImageEnhance`` and an HSV hue rotation; the Model Zoo's DINO crops use it)."""

    def __init__(self, brightness: float = 0, contrast: float = 0, saturation: float = 0, hue: float = 0) -> None:
        self.brightness, self.contrast, self.saturation, self.hue = (float(brightness), float(contrast),
                                                                     float(saturation), float(hue))
        if not 0 <= self.hue <= 0.5:
            raise ValueError(f"ColorJitter: hue should be in [0, 0.5], got {hue}")

    def __call__(self, img: Any) -> Any:
        from PIL import Image, ImageEnhance

        def factor(v: float) -> float:
            return float(torch.empty(()).uniform_(max(0.0, 1 - v), 1 + v))

        def shift_hue(im: Any, shift: float) -> Any:
            if im.mode in ("L", "1", "I", "F"):
                return im
            h, s, v = im.convert("HSV").split()
            h = h.point(lambda x: (x + int(round(shift * 255))) % 256)
            return Image.merge("HSV", (h, s, v)).convert(im.mode)

        ops = [(self.brightness, lambda im, f: ImageEnhance.Brightness(im).enhance(f)),
               (self.contrast, lambda im, f: ImageEnhance.Contrast(im).enhance(f)),
               (self.saturation, lambda im, f: ImageEnhance.Color(im).enhance(f))]
        for i in torch.randperm(4).tolist():
            if i < 3 and ops[i][0] > 0:
                img = ops[i][1](img, factor(ops[i][0]))
            elif i == 3 and self.hue > 0:
                img = shift_hue(img, float(torch.empty(()).uniform_(-self.hue, self.hue)))
        return img


class RandomGrayscale:
    """torchvision's ``RandomGrayscale(p=0.1)``: with probability ``p`` the PIL image in grey, with as many channels
    as it had."""

    def __init__(self, p: float = 0.1) -> None:
        self.p = float(p)

    def __call__(self, img: Any) -> Any:
        if float(torch.rand(())) >= self.p:
            return img
        return img.convert("L").convert(img.mode) if img.mode != "L" else img


class RandomSolarize:
    """torchvision's ``RandomSolarize(threshold, p=0.5)``: with probability ``p``, every pixel value at or above
    ``threshold`` inverted (PIL's ``ImageOps.solarize``)."""

    def __init__(self, threshold: float, p: float = 0.5) -> None:
        self.threshold, self.p = threshold, float(p)

    def __call__(self, img: Any) -> Any:
        import math

        from PIL import ImageOps

        # integer pixels: at or above the threshold is at or above its ceiling
        return img if float(torch.rand(())) >= self.p else ImageOps.solarize(img, math.ceil(self.threshold))


class CenterCrop:
    def __init__(self, size: int | tuple[int, int]) -> None:
        self.size = (size, size) if isinstance(size, int) else tuple(size)

    def __call__(self, x: Any) -> Any:
        h, w = self.size
        if isinstance(x, torch.Tensor):
            top, left = (x.shape[-2] - h) // 2, (x.shape[-1] - w) // 2
            return x[..., top:top + h, left:left + w]
        left, top = (x.width - w) // 2, (x.height - h) // 2
        return x.crop((left, top, left + w, top + h))


def _image_size(img: Any) -> list[int]:
    """``functional.get_image_size``: ``[width, height]`` of a PIL image or a ``(..., H, W)`` tensor."""
    if isinstance(img, torch.Tensor):
        return [int(img.shape[-1]), int(img.shape[-2])]
    return [int(img.width), int(img.height)]


def _crop(img: Any, top: int, left: int, height: int, width: int) -> Any:
    """``functional.crop``: the ``height x width`` box at (``top``, ``left``) (a PIL image pads beyond its edges)."""
    if isinstance(img, torch.Tensor):
        return img[..., top:top + height, left:left + width]
    return img.crop((left, top, left + width, top + height))


def _resize(img: Any, size: Any, interpolation: Any = None, **_: Any) -> Any:
    """``functional.resize``: as :class:`Resize`."""
    return Resize(size)(img)


def _resized_crop(img: Any, top: int, left: int, height: int, width: int, size: Any, interpolation: Any = None,
                  **_: Any) -> Any:
    """``functional.resized_crop``: :func:`_crop`'s box, resized to ``size`` (timm's RandomResizedCrop calls it)."""
    return _resize(_crop(img, top, left, height, width), size, interpolation)


class RandomResizedCrop:
    """``transforms.RandomResizedCrop(size, scale=(0.08, 1.0), ratio=(3/4, 4/3))``: a box of a random share of the
    area and aspect ratio, resized to ``size``; ``get_params`` draws the box as torchvision does (ten tries, then the
    centre crop at the nearest allowed ratio)."""

    def __init__(self, size: int | tuple[int, int] | list[int], scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0), interpolation: Any = None,
                 antialias: Any = True) -> None:
        self.size: tuple[int, int] = (size, size) if isinstance(size, int) else (int(size[0]), int(size[-1]))
        self.scale, self.ratio = tuple(scale), tuple(ratio)
        self.interpolation = interpolation if interpolation is not None else InterpolationMode.BILINEAR
        self.antialias = antialias

    @staticmethod
    def get_params(img: Any, scale: Any, ratio: Any) -> tuple[int, int, int, int]:
        import math

        width, height = _image_size(img)
        area = height * width
        log_ratio = torch.log(torch.tensor(ratio))
        for _ in range(10):
            target_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
            aspect = math.exp(torch.empty(1).uniform_(float(log_ratio[0]), float(log_ratio[1])).item())
            w = int(round(math.sqrt(target_area * aspect)))
            h = int(round(math.sqrt(target_area / aspect)))
            if 0 < w <= width and 0 < h <= height:
                i = int(torch.randint(0, height - h + 1, size=(1,)).item())
                j = int(torch.randint(0, width - w + 1, size=(1,)).item())
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, img: Any) -> Any:
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return Resize(self.size)(_crop(img, i, j, h, w))


def _pil_to_tensor(pic: Any) -> torch.Tensor:
    """``torchvision.transforms.functional.pil_to_tensor``: the image's values unscaled, channels first."""
    a = torch.as_tensor(np.array(pic))
    return a.unsqueeze(0) if a.dim() == 2 else a.permute(2, 0, 1)


class InterpolationMode(enum.Enum):
    """``torchvision.transforms.InterpolationMode`` (its names and values)."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _module(name: str, **attrs: Any) -> types.ModuleType:
    mod = types.ModuleType(name, f"accelkit --synthetic-data stand-in for {name}")
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)  # find_spec(name) answers; no distribution metadata
    vars(mod).update(attrs)
    vars(mod)["__accelkit_facade__"] = "accelkit.vendor.synthetic"
    return mod


@contextlib.contextmanager
def _split_at_real_sizes() -> Iterator[None]:
    """``torch.utils.data.random_split(dataset, [50000, 10000])`` on a stand-in: lengths that add up to the real
    dataset's size (a script written for the real set splits it by count) grow the stand-in to that size first
    (:meth:`_StandInDataset.at_real_size`); other lengths, and fractions, split the stand-in as it is."""
    import torch.utils.data as tud
    from torch.utils.data import dataset as tud_dataset

    original = tud.random_split

    def random_split(dataset: Any, lengths: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(dataset, _StandInDataset) and all(isinstance(n, int) for n in lengths):
            total = sum(lengths)
            if total != len(dataset) and total == dataset.real_size[dataset.train]:
                dataset.at_real_size(total, f"random_split asks for {' + '.join(map(str, lengths))} = {total} "
                                            "samples, the real dataset's size")
        return original(dataset, lengths, *args, **kwargs)

    tud.random_split = tud_dataset.random_split = random_split
    try:
        yield
    finally:
        tud.random_split = tud_dataset.random_split = original


@contextlib.contextmanager
def _torchvision() -> Iterator[None]:
    with _split_at_real_sizes(), _torchvision_stand_ins():
        yield


@contextlib.contextmanager
def _torchvision_stand_ins() -> Iterator[None]:
    datasets = {"MNIST": MNIST, "FashionMNIST": FashionMNIST, "CIFAR10": CIFAR10}
    if importlib.util.find_spec("torchvision") is not None:  # the real one: swap only its dataset classes
        import torchvision  # type: ignore[import-not-found]

        saved = {k: getattr(torchvision.datasets, k) for k in datasets}
        for k, v in datasets.items():
            setattr(torchvision.datasets, k, v)
        try:
            yield
        finally:
            for k, v in saved.items():
                setattr(torchvision.datasets, k, v)
        return
    from accelkit.vendor import vision_models, vision_ops

    functional = _module("torchvision.transforms.functional", to_tensor=_to_tensor, pil_to_tensor=_pil_to_tensor,
                         InterpolationMode=InterpolationMode, get_image_size=_image_size, crop=_crop, resize=_resize,
                         resized_crop=_resized_crop)
    transforms = _module("torchvision.transforms", Compose=Compose, ToTensor=ToTensor, Normalize=Normalize,
                         Lambda=Lambda, Resize=Resize, ConvertImageDtype=ConvertImageDtype, ToPILImage=ToPILImage,
                         RandomHorizontalFlip=RandomHorizontalFlip, CenterCrop=CenterCrop,
                         RandomResizedCrop=RandomResizedCrop, RandomChoice=RandomChoice, RandomApply=RandomApply,
                         ColorJitter=ColorJitter, RandomGrayscale=RandomGrayscale, RandomSolarize=RandomSolarize,
                         InterpolationMode=InterpolationMode, functional=functional)
    vars(transforms)["transforms"] = transforms  # torchvision.transforms.transforms holds the same classes
    # transforms.v2 (imported by transformers' image processors whenever torchvision is found): the same stand-ins
    v2 = _module("torchvision.transforms.v2", **{k: v for k, v in vars(transforms).items() if not k.startswith("__")})
    autoaugment = _module("torchvision.transforms.autoaugment")  # imported by the Model Zoo; no policy stands in
    ds_vision = _module("torchvision.datasets.vision", VisionDataset=vision_ops.VisionDataset,
                        StandardTransform=vision_ops.StandardTransform)
    ds_utils = _module("torchvision.datasets.utils", verify_str_arg=vision_ops.verify_str_arg)
    tv_utils = _module("torchvision.utils", save_image=vision_ops.save_image, make_grid=vision_ops.make_grid,
                       draw_bounding_boxes=vision_ops.draw_bounding_boxes)
    # ImageFolder / DatasetFolder read the user's own folders, as torchvision does (nothing generated)
    ds_folder = _module("torchvision.datasets.folder", ImageFolder=vision_ops.ImageFolder,
                        DatasetFolder=vision_ops.DatasetFolder, IMG_EXTENSIONS=vision_ops.IMAGE_SUFFIXES,
                        pil_loader=vision_ops.pil_loader, default_loader=vision_ops.pil_loader,
                        find_classes=vision_ops.DatasetFolder.find_classes,
                        make_dataset=vision_ops.DatasetFolder.make_dataset)
    ds = _module("torchvision.datasets", **datasets, ImageNet=vision_ops.ImageNet,
                 ImageFolder=vision_ops.ImageFolder, DatasetFolder=vision_ops.DatasetFolder, folder=ds_folder,
                 VisionDataset=vision_ops.VisionDataset, vision=ds_vision, utils=ds_utils)
    made: dict[str, type] = {}

    def other_dataset(name: str) -> type:  # module __getattr__: a dataset class it does not make (refused on use)
        if not name[:1].isupper():
            raise AttributeError(f"module 'torchvision.datasets' (accelkit's stand-in) has no attribute {name!r}")
        if name not in made:
            made[name] = vision_ops.unstood_dataset(name, [*datasets, "ImageNet", "ImageFolder"])
        return made[name]

    vars(ds)["__getattr__"] = other_dataset
    models = _module("torchvision.models", **{k: getattr(vision_models, k) for k in vision_models.__all__})
    ops_misc = _module("torchvision.ops.misc", FrozenBatchNorm2d=vision_ops.FrozenBatchNorm2d)  # timm imports it so
    ops = _module("torchvision.ops", box_convert=vision_ops.box_convert, nms=vision_ops.nms,
                  FrozenBatchNorm2d=vision_ops.FrozenBatchNorm2d, misc=ops_misc)
    image = _module("torchvision.io.image", read_image=vision_ops.read_image, ImageReadMode=vision_ops.ImageReadMode)
    io = _module("torchvision.io", image=image, read_image=vision_ops.read_image,
                 ImageReadMode=vision_ops.ImageReadMode)
    tv = _module("torchvision", datasets=ds, transforms=transforms, models=models, ops=ops, io=io, utils=tv_utils,
                 __version__="0.0+accelkit.standin")
    added = {"torchvision": tv, "torchvision.datasets": ds, "torchvision.transforms": transforms,
             "torchvision.transforms.functional": functional, "torchvision.transforms.v2": v2,
             "torchvision.transforms.transforms": transforms, "torchvision.transforms.autoaugment": autoaugment,
             "torchvision.transforms.v2.functional": functional, "torchvision.models": models, "torchvision.ops": ops,
             "torchvision.ops.misc": ops_misc,
             "torchvision.io": io, "torchvision.io.image": image, "torchvision.datasets.vision": ds_vision,
             "torchvision.datasets.utils": ds_utils, "torchvision.utils": tv_utils,
             "torchvision.datasets.folder": ds_folder}
    sys.modules.update(added)  # announced by each dataset made, not here: a script may never use them
    try:
        yield
    finally:
        for k in added:
            sys.modules.pop(k, None)


# ---- Hugging Face ---------------------------------------------------------------------------------
def _random_with_config(cls: Any, name: Any) -> None:
    """Say that ``from_pretrained(name, config=...)`` builds the model from the script's config with random weights
    (the checkpoint's weights are not on this machine)."""
    _say(f"from_pretrained({os.fspath(name)!r}, config=...) builds {getattr(cls, '__name__', 'the model')} from the "
         "config the script gives, with RANDOM weights (the checkpoint's are not on this machine); nothing downloaded")


def _small_config(config_cls: Any, name: str, kwargs: dict[str, Any], for_model: bool = False) -> Any:
    known = set(config_cls().to_dict())
    small = {k: v for k, v in SMALL_TRANSFORMER.items() if k in known}
    depth = _named_depth(name)
    if depth is not None:
        small.update({k: depth for k in ("num_hidden_layers", "n_layer", "n_layers") if k in small})
    if "roberta" in str(getattr(config_cls, "model_type", "")) and "max_position_embeddings" in known:
        # RoBERTa numbers positions from its padding index + 1: its checkpoints have 514 for 512 tokens
        small["max_position_embeddings"] = int(config_cls().max_position_embeddings) + 2
    config = config_cls(**{**small, **{k: v for k, v in kwargs.items() if k in known or k == "num_labels"}})
    _say(f"from_pretrained({name!r}) builds {config_cls.__name__.removesuffix('Config')} from its config class at a "
         f"small size ({', '.join(f'{k}={v}' for k, v in small.items())}) with RANDOM weights; nothing downloaded")
    if kwargs.get("torchscript") and "torchscript" not in known and not for_model:
        # transformers 4: torchscript=True made the model return tuples (GroqFlow's proof points index them);
        # transformers 5 dropped the setting and returns its output classes (a model built here is wrapped
        # instead: _returning_tuples)
        config.return_dict = False
        _say(f"from_pretrained({name!r}, torchscript=True): the model returns tuples, as transformers 4 did")
    return config


_TUPLE_CLASSES: dict[type, type] = {}


def _returning_tuples(model: Any, name: Any, kwargs: dict[str, Any]) -> Any:
    """transformers 4's ``torchscript=True`` on a model built here: its output as a tuple (``ModelOutput.to_tuple``),
    as transformers 4 returned it. Only the model's own output: its inner modules keep returning their output
    classes, which transformers 5's models read by name (ViT's classifier reads its encoder's
    ``last_hidden_state``; a config with ``return_dict=False`` broke it, DeiT's proof point)."""
    if not kwargs.get("torchscript") or "torchscript" in model.config.to_dict():
        return model
    import functools

    base = type(model)
    if base not in _TUPLE_CLASSES:
        @functools.wraps(base.forward)
        def forward(self: Any, *args: Any, **kw: Any) -> Any:
            out = base.forward(self, *args, **kw)
            return out.to_tuple() if hasattr(out, "to_tuple") else out

        _TUPLE_CLASSES[base] = type(base.__name__, (base,), {"forward": forward, "__module__": base.__module__,
                                                              "__doc__": base.__doc__})
    model.__class__ = _TUPLE_CLASSES[base]
    _say(f"from_pretrained({name!r}, torchscript=True): the model returns tuples, as transformers 4 did")
    return model


# checkpoint families whose names do not say their architecture: the model_type of their config.json on the Hub
# (Microsoft's MiniLM and the sentence-transformers all-MiniLM models are BERT encoders: model_type "bert")
ARCHITECTURE_OF = {"minilm": "bert"}


def _config_class_for(name: str) -> Any:
    from transformers import CONFIG_MAPPING

    key = str(name).lower().rsplit("/", 1)[-1]
    matches = sorted((t for t in CONFIG_MAPPING if t in key.replace("-", "_") or t in key), key=len, reverse=True)
    if not matches:
        matches = [arch for family, arch in ARCHITECTURE_OF.items() if family in key]
    if not matches:
        from accelkit.errors import AccelkitError

        raise AccelkitError(f"--synthetic-data cannot tell which architecture the checkpoint {name!r} is",
                            fix="build the model from its config class: e.g. BertConfig(...) and BertModel(config)")
    return CONFIG_MAPPING[matches[0]]


def _input_names(cls: Any, name: str) -> list[str]:
    """What the real tokenizer returns for ``name`` (BERT's ``token_type_ids`` too, GPT-2's not): the names of the
    tokenizer class called (``BertTokenizerFast``), else of the checkpoint's architecture's own tokenizer class."""
    import transformers

    if cls.__module__.startswith("transformers.models.") and getattr(cls, "model_input_names", None):
        return list(cls.model_input_names)
    try:
        prefix = _config_class_for(name).__name__.removesuffix("Config")
    except Exception:  # a name no architecture matches: the common pair
        return ["input_ids", "attention_mask"]
    tok = getattr(transformers, f"{prefix}TokenizerFast", None) or getattr(transformers, f"{prefix}Tokenizer", None)
    return list(getattr(tok, "model_input_names", None) or ["input_ids", "attention_mask"])


@contextlib.contextmanager
def _hf_hub() -> Iterator[None]:
    if importlib.util.find_spec("transformers") is None:
        yield
        return
    import transformers
    from transformers.models.auto.auto_factory import _BaseAutoModelClass

    originals: dict[Any, Any] = {}  # filled below: each patched class's own from_pretrained

    def saved_here(name: Any) -> bool:
        """A checkpoint folder on this machine (one the script saved with ``save_pretrained``): loaded for real."""
        if not isinstance(name, (str, os.PathLike)) or not os.path.isdir(name):
            return False
        if not os.path.isfile(os.path.join(name, "config.json")):
            return False
        _say(f"from_pretrained({os.fspath(name)!r}) loads the checkpoint saved in that folder (its config and "
             "safetensors weights, from this machine)")
        return True

    def real(base: Any, cls: Any, name: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return originals[base].__func__(cls, name, *args, **kwargs)

    def model_from_pretrained(cls: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
        if saved_here(name):
            return real(transformers.PreTrainedModel, cls, name, args, {"use_safetensors": True, **kwargs})
        config = kwargs.get("config")
        if config is not None:
            _random_with_config(cls, name)
        model = cls(config if config is not None else _small_config(cls.config_class, name, kwargs, for_model=True))
        return _returning_tuples(model, name, kwargs)

    def auto_from_pretrained(cls: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
        if saved_here(name):
            return real(_BaseAutoModelClass, cls, name, args, {"use_safetensors": True, **kwargs})
        config = kwargs.get("config")
        if config is not None:
            _random_with_config(cls, name)
        model = cls.from_config(config if config is not None
                                else _small_config(_config_class_for(name), name, kwargs, for_model=True))
        return _returning_tuples(model, name, kwargs)

    def config_from_pretrained(cls: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
        if saved_here(name):
            return real(transformers.AutoConfig if cls is transformers.AutoConfig else transformers.PretrainedConfig,
                        cls, name, args, kwargs)
        unused = kwargs.pop("return_unused_kwargs", False)
        config = _small_config(cls if cls is not transformers.AutoConfig and hasattr(cls, "model_type")
                               else _config_class_for(name), name, kwargs)
        return (config, {}) if unused else config

    def feature_extractor_from_pretrained(cls: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(name, (str, os.PathLike)) and os.path.isfile(os.path.join(name, "preprocessor_config.json")):
            import json

            with open(os.path.join(name, "preprocessor_config.json")) as f:
                saved = json.load(f)
            _say(f"from_pretrained({os.fspath(name)!r}) loads the feature extractor saved in that folder")
            return FeatureExtractor(os.fspath(name), **saved)
        return _feature_extractor(str(name), kwargs)

    def tokenizer_from_pretrained(cls: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
        from accelkit.vendor.tokenizer import local_tokenizer

        _say(f"{cls.__name__}.from_pretrained({str(name)!r}) is a small WordPiece tokenizer built on this machine "
             f"({VOCAB_SIZE} tokens: accelkit's own text corpus and the most frequent English words): the text is split as BERT splits "
             "it, but the token ids are not the checkpoint's; nothing downloaded")
        return local_tokenizer(str(name), **{"model_input_names": _input_names(cls, str(name)), **kwargs})

    # every class that defines its own from_pretrained (the auto classes each get a copy of it)
    autos = [c for n in dir(transformers) if n.startswith("AutoModel")
             and isinstance(c := getattr(transformers, n, None), type) and issubclass(c, _BaseAutoModelClass)]
    patches: list[tuple[Any, Any]] = [
        (transformers.PreTrainedModel, model_from_pretrained), (_BaseAutoModelClass, auto_from_pretrained),
        *((c, auto_from_pretrained) for c in autos), (transformers.PretrainedConfig, config_from_pretrained),
        (transformers.AutoConfig, config_from_pretrained), (transformers.PreTrainedTokenizerBase,
                                                            tokenizer_from_pretrained),
        (transformers.AutoTokenizer, tokenizer_from_pretrained),
        # transformers 4's AutoFeatureExtractor of a vision checkpoint (Graphcore's ViT tutorial), and the image
        # processors that replaced it
        *((c, feature_extractor_from_pretrained) for c in (getattr(transformers, "AutoFeatureExtractor", None),
                                                           getattr(transformers, "AutoImageProcessor", None))
          if c is not None)]
    saved = [(cls, vars(cls).get("from_pretrained")) for cls, _ in patches]
    originals.update((cls, fn) for cls, fn in saved if fn is not None)
    for cls, fn in patches:
        cls.from_pretrained = classmethod(fn)
    try:
        yield
    finally:
        for cls, original in saved:
            if original is None:
                delattr(cls, "from_pretrained")
            else:
                cls.from_pretrained = original


class FeatureExtractor:
    """What transformers 4.20's ``AutoFeatureExtractor.from_pretrained`` gave for a vision checkpoint
    (``ViTFeatureExtractor``, its ``preprocessor_config.json``): ``size`` a number (224; transformers 5's image
    processors hold a dict, which ``transforms.Resize(feature_extractor.size)`` cannot take), ``image_mean`` /
    ``image_std`` (0.5 for each channel, ``google/vit-base-patch16-224-in21k``'s), ``do_resize``, ``do_normalize``,
    ``resample`` (2: bilinear). Calling it makes ``pixel_values`` as it did (resize, scale to [0, 1], normalise,
    channels first); ``save_pretrained`` writes ``preprocessor_config.json``."""

    model_input_names = ["pixel_values"]

    def __init__(self, name: str, size: int = 224, image_mean: Sequence[float] = (0.5, 0.5, 0.5),
                 image_std: Sequence[float] = (0.5, 0.5, 0.5), **kwargs: Any) -> None:
        self.name_or_path = name
        self.feature_extractor_type = kwargs.pop("feature_extractor_type", "ViTFeatureExtractor")
        self.size, self.image_mean, self.image_std = size, list(image_mean), list(image_std)
        self.do_resize, self.do_normalize, self.resample = kwargs.pop("do_resize", True), kwargs.pop(
            "do_normalize", True), kwargs.pop("resample", 2)
        vars(self).update(kwargs)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k != "name_or_path"}

    def __repr__(self) -> str:
        import json

        return f"{self.feature_extractor_type} {json.dumps(self.to_dict(), indent=2)}"

    def save_pretrained(self, save_directory: str | os.PathLike[str], **_: Any) -> list[str]:
        import json

        os.makedirs(save_directory, exist_ok=True)
        path = os.path.join(save_directory, "preprocessor_config.json")
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=2)
        return [path]

    def __call__(self, images: Any, return_tensors: str | None = None, **_: Any) -> dict[str, Any]:
        from PIL import Image

        many = images if isinstance(images, (list, tuple)) else [images]
        out = []
        for img in many:
            if not isinstance(img, Image.Image):
                arr = np.asarray(img.detach().cpu() if isinstance(img, torch.Tensor) else img)
                img = Image.fromarray(arr.transpose(1, 2, 0) if arr.ndim == 3 and arr.shape[0] in (1, 3) else arr)
            img = img.convert("RGB")
            if self.do_resize:
                img = img.resize((self.size, self.size), Image.Resampling.BILINEAR)
            a: Any = np.asarray(img, dtype=np.float32) / 255.0
            if self.do_normalize:
                a = (a - np.asarray(self.image_mean, dtype=np.float32)) / np.asarray(self.image_std, dtype=np.float32)
            out.append(a.transpose(2, 0, 1))
        pixels: Any = np.stack(out) if return_tensors in ("np", "pt") else list(out)
        return {"pixel_values": torch.from_numpy(pixels) if return_tensors == "pt" else pixels}


def _feature_extractor(name: str, kwargs: dict[str, Any]) -> FeatureExtractor:
    config = _config_class_for(name)()
    size = int(getattr(config, "image_size", 224) or 224)
    _say(f"AutoFeatureExtractor.from_pretrained({str(name)!r}) is the feature extractor transformers 4.20 gave for "
         f"it (size={size}, image_mean and image_std 0.5 per channel, as google/vit-base-patch16-224-in21k's "
         "preprocessor_config.json), made here; nothing downloaded")
    return FeatureExtractor(str(name), size=size, **{k: v for k, v in kwargs.items()
                                                     if k in ("image_mean", "image_std", "do_resize", "do_normalize")})


# ---- tiktoken -------------------------------------------------------------------------------------
@contextlib.contextmanager
def _tiktoken() -> Iterator[None]:
    """``import tiktoken`` answered by accelkit's local byte-level BPE (:mod:`accelkit.vendor.bpe`), where
    tiktoken is not installed (where it is, its encodings are a download: the real one is left alone)."""
    if importlib.util.find_spec("tiktoken") is not None:
        yield
        return
    from accelkit.vendor import bpe

    mod = _module("tiktoken", **{k: getattr(bpe, k) for k in bpe.__all__}, __version__="0.0+accelkit.standin")
    sys.modules["tiktoken"] = mod
    try:
        yield
    finally:
        sys.modules.pop("tiktoken", None)


# ---- torchaudio ----------------------------------------------------------------------------------
@contextlib.contextmanager
def _torchaudio() -> Iterator[None]:
    """``import torchaudio`` answered by :mod:`accelkit.vendor.audio`'s Speech Commands where torchaudio is not
    installed (where it is, its sets are a download: the real one is left alone)."""
    if importlib.util.find_spec("torchaudio") is not None:
        yield
        return
    from accelkit.vendor import audio

    ds = _module("torchaudio.datasets", SPEECHCOMMANDS=audio.SPEECHCOMMANDS)
    added = {"torchaudio": _module("torchaudio", datasets=ds, __version__="0.0+accelkit.standin"),
             "torchaudio.datasets": ds}
    sys.modules.update(added)
    try:
        yield
    finally:
        for k in added:
            sys.modules.pop(k, None)


# ---- Hugging Face datasets / evaluate ------------------------------------------------------------------
@contextlib.contextmanager
def _hf_datasets() -> Iterator[None]:
    """``import datasets`` / ``import evaluate`` answered by :mod:`accelkit.vendor.hf_datasets` where the real
    packages are not installed (where they are, the sets are a download: the real ones are left alone)."""
    from accelkit.vendor import hf_datasets

    added = {}
    if importlib.util.find_spec("datasets") is None or not hasattr(importlib.import_module("datasets"), "Dataset"):
        # datasets.utils.file_utils.cached_path and datasets.utils.DownloadConfig: GroqFlow's demo helpers import them
        file_utils = _module("datasets.utils.file_utils", cached_path=hf_datasets.cached_path)
        utils = _module("datasets.utils", DownloadConfig=hf_datasets.DownloadConfig, file_utils=file_utils)
        logging = hf_datasets._logging_module()  # datasets.logging: GroqFlow's quantization proof point sets it
        utils.logging = logging  # type: ignore[attr-defined]  # datasets.utils.logging: HF's example scripts set it
        added["datasets"] = _module("datasets", **{k: getattr(hf_datasets, k) for k in hf_datasets.__all__},
                                    utils=utils, logging=logging, __version__="0.0+accelkit.standin")
        added["datasets.utils"], added["datasets.utils.file_utils"] = utils, file_utils
        added["datasets.logging"] = logging
    if importlib.util.find_spec("evaluate") is None:
        added["evaluate"] = _module("evaluate", load=hf_datasets.evaluate_load, EvaluationModule=hf_datasets.Metric,
                                    __version__="0.0+accelkit.standin")
    saved = {k: sys.modules.get(k) for k in added}
    sys.modules.update(added)
    # Hugging Face's example scripts check the installed release first (transformers' require_version("datasets>=
    # 1.8.0"), which reads the distribution's metadata): a stand-in answers with the datasets 2 / evaluate 0.4 API
    # it follows, marked as accelkit's
    import importlib.metadata as metadata

    real_version = metadata.version
    stand_ins = {"datasets": "2.0.0+accelkit.standin", "evaluate": "0.4.0+accelkit.standin"}

    def version(name: str) -> str:
        if name in stand_ins and name in added:
            return stand_ins[name]
        return real_version(name)

    metadata.version = version  # type: ignore[assignment]
    try:
        yield
    finally:
        metadata.version = real_version
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


# ---- PyTorch Geometric ------------------------------------------------------------------------------
@contextlib.contextmanager
def _pyg() -> Iterator[None]:
    """``torch_geometric.datasets.Planetoid`` / ``TUDataset`` / ``QM9`` answered by :mod:`accelkit.vendor.graphs`' generated
    sets for the run, where PyTorch Geometric is installed (where it is not, the script's import says what to
    install)."""
    if importlib.util.find_spec("torch_geometric") is None:
        yield
        return
    import torch_geometric.datasets as pyg_datasets

    from accelkit.vendor import graphs

    made = graphs.stand_ins()
    saved = [(pyg_datasets, k, getattr(pyg_datasets, k)) for k in made]
    # every other set's download refused by name (each dataset module holds its own download_url)
    saved += [(m, "download_url", m.download_url) for name, m in list(sys.modules.items())
              if name.startswith("torch_geometric.") and m is not None and hasattr(m, "download_url")]
    for k, v in made.items():
        setattr(pyg_datasets, k, v)
    for m, _, _ in saved[len(made):]:
        m.download_url = graphs.refuse_download
    try:
        yield
    finally:
        for m, k, v in saved:
            setattr(m, k, v)


# ---- wget ----------------------------------------------------------------------------------------
@contextlib.contextmanager
def _wget() -> Iterator[None]:
    """``wget.download`` answered by :func:`accelkit.vendor.imagenette.download` (ImageNet's devkit, which GroqFlow's
    demo helpers fetch beside Imagenette; any other URL refused by name): a stand-in module where wget is not
    installed, its ``download`` swapped for the run where it is."""
    from accelkit.vendor import imagenette

    if importlib.util.find_spec("wget") is None:
        sys.modules["wget"] = _module("wget", download=imagenette.download, __version__="0.0+accelkit.standin")
        try:
            yield
        finally:
            sys.modules.pop("wget", None)
        return
    import wget  # type: ignore[import-not-found]

    saved = wget.download
    wget.download = imagenette.download
    try:
        yield
    finally:
        wget.download = saved


@contextlib.contextmanager
def installed(hf: bool = True, vision: bool = True, tiktoken: bool = False,
              datasets: bool = False, audio: bool = False, wget: bool = False, graphs: bool = False) -> Iterator[None]:
    """The stand-ins above, for the duration of the block (``hf=False``: not the Hugging Face one, which
    imports transformers, a few seconds, for scripts that never call ``from_pretrained``; ``vision=False``: not
    the torchvision one, for scripts that never import torchvision: with torchvision's name answered,
    transformers would take the stand-in for the real package and import parts of it that it lacks;
    ``tiktoken=True``: ``import tiktoken`` answered by a local byte-level BPE where tiktoken is not installed;
    ``datasets=True``: ``import datasets`` / ``evaluate`` answered by small local text sets and metrics;
    ``audio=True``: ``import torchaudio`` answered by generated Speech Commands clips where it is not installed;
    ``wget=True``: ``wget.download`` of ImageNet's devkit answered, any other URL refused; ``graphs=True``: PyTorch
    Geometric's Planetoid, TUDataset and QM9 answered by generated graphs at the real sets' sizes; ``torch.hub`` always;
    Imagenette's archive wherever ``cached_path`` is asked for it)."""
    from accelkit.vendor import imagenette

    _reset_notices()
    _real_sizes_for.clear()
    with torch_hub.installed(), (_hf_hub() if hf else contextlib.nullcontext()), (
            _torchvision() if vision else contextlib.nullcontext()), (
            _tiktoken() if tiktoken else contextlib.nullcontext()), (
            _hf_datasets() if datasets else contextlib.nullcontext()), (
            _torchaudio() if audio else contextlib.nullcontext()), (
            _wget() if wget else contextlib.nullcontext()), (
            _pyg() if graphs else contextlib.nullcontext()):
        _active.append(True)
        try:
            yield
        finally:
            _active.pop()
            imagenette.cleanup()


_active: list[bool] = []  # one entry while installed() is in force (a vendor run with --synthetic-data)


def active() -> bool:
    """Whether ``--synthetic-data``'s stand-ins are in force (facades answer downloads only then)."""
    return bool(_active)


__all__ = ["CIFAR10", "MNIST", "FashionMNIST", "installed", "substitutions"]
