"""UNet2D: a small U-Net that labels every pixel of an image (Ronneberger et al., MICCAI 2015).

The ALCF testbeds run U-Nets for segmentation (Cerebras' and Graphcore's UNet2D examples). This
one has the same parts at a laptop's scale: an encoder of two-convolution blocks with max-pooling
between them, a bottleneck, a decoder that upsamples with transposed convolutions and
concatenates the encoder's features at each scale (the skip connections), and a 1x1 convolution
to one score per class. Here it segments circles, rectangles and triangles on noise
(``accelkit.data.shapes``): 4 classes including the background.
"""

from __future__ import annotations

import torch
from torch import nn

from accelkit.data.samples import Samples
from accelkit.data.shapes import CLASSES, shapes
from accelkit.zoo.entry import Data, QualityGoal, Recipe, Spec


def double_conv(c_in: int, c_out: int) -> nn.Sequential:
    """(conv 3x3 -> batch norm -> ReLU) twice; 'same' padding keeps H and W."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
    )


class UNet2D(nn.Module):
    """(B, in_channels, H, W) -> (B, classes, H, W) scores; H and W divisible by 2**depth."""

    def __init__(self, in_channels: int = 1, classes: int = len(CLASSES), width: int = 8, depth: int = 2) -> None:
        super().__init__()
        widths = [width * 2**i for i in range(depth + 1)]  # e.g. 8, 16, 32
        self.down = nn.ModuleList()
        c = in_channels
        for w in widths[:-1]:
            self.down.append(double_conv(c, w))
            c = w
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = double_conv(widths[-2], widths[-1])
        self.up = nn.ModuleList()
        self.up_conv = nn.ModuleList()
        for w_low, w in zip(widths[:0:-1], widths[-2::-1], strict=False):
            self.up.append(nn.ConvTranspose2d(w_low, w, kernel_size=2, stride=2))  # (B, 2w, h, w) -> (B, w, 2h, 2w)
            self.up_conv.append(double_conv(2 * w, w))  # after concatenating the skip: 2w channels
        self.head = nn.Conv2d(widths[0], classes, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        for up, conv, skip in zip(self.up, self.up_conv, reversed(skips), strict=True):
            x = conv(torch.cat([up(x), skip], dim=1))
        return self.head(x)


def _data(seed: int) -> Data:
    train, heldout = shapes(1280, seed).split(256)
    return Data(train, heldout)


def _batch_loss(model: nn.Module, loss_fn: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    x, mask = batch
    return loss_fn(model(x), mask)  # CrossEntropyLoss over (B, C, H, W) scores and (B, H, W) labels


def mean_iou(model: nn.Module, ds: Samples, classes: int = len(CLASSES)) -> float:
    """Intersection over union per class, over the whole split, averaged over the classes."""
    pred = torch.cat([model(ds.x[i:i + 128]).argmax(1) for i in range(0, len(ds), 128)])
    ious = []
    for c in range(classes):
        p, t = pred == c, ds.mask == c
        union = (p | t).sum()
        if union > 0:
            ious.append(float((p & t).sum() / union))
    return sum(ious) / len(ious)


SPEC = Spec(
    name="unet2d",
    description="small U-Net (encoder, bottleneck, decoder with skip connections) for segmentation",
    task="segmentation: 32x32 image -> per-pixel class (background, circle, rectangle, triangle)",
    source="Ronneberger et al., 'U-Net', MICCAI 2015; the UNet2D of the ALCF AI-testbed examples",
    quality_goal=QualityGoal("mean IoU", 0.65),
    recipe=Recipe(steps=400, lr=5e-3, batch_size=32),
    make_data=_data,
    make_model=lambda data: UNet2D(),
    make_loss_fn=nn.CrossEntropyLoss,
    example_inputs=lambda ds: (ds.x[:4],),
    batch_loss=_batch_loss,
    metric=mean_iou,
)
