"""BraggNN: locate a Bragg peak's centre in an 11x11 detector patch (Liu et al., IUCrJ 9, 2022).

The ALCF science model used across the AI testbeds. A 3x3 convolution makes 16*scale feature
maps; a non-local block (self-attention over the patch's pixels) lets every pixel see the
whole peak; two more 3x3 convolutions and a small MLP regress the centre (x, y) in [0, 1].
``scale=4`` is the published size (convolutions 64, 32, 8 channels; dense 64, 32, 16, 8).
Here it is trained on synthetic pseudo-Voigt peaks with Poisson noise (``accelkit.data.bragg``).
"""

from __future__ import annotations

import torch
from torch import nn

from accelkit.data.bragg import bragg_peaks
from accelkit.data.samples import Samples
from accelkit.zoo.entry import Data, QualityGoal, Recipe, Spec

PATCH = 11


class NonLocalBlock(nn.Module):
    """Embedded-Gaussian non-local block (Wang et al. 2018): attention over the H*W positions, plus a residual."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.inter = channels // 2
        self.theta = nn.Conv2d(channels, self.inter, kernel_size=1)
        self.phi = nn.Conv2d(channels, self.inter, kernel_size=1)
        self.g = nn.Conv2d(channels, self.inter, kernel_size=1)
        self.softmax = nn.Softmax(dim=-1)
        self.out = nn.Conv2d(self.inter, channels, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, h, w = x.shape
        theta = self.theta(x).reshape(b, self.inter, h * w).permute(0, 2, 1)  # (B, HW, C/2)
        phi = self.phi(x).reshape(b, self.inter, h * w)  # (B, C/2, HW)
        g = self.g(x).reshape(b, self.inter, h * w).permute(0, 2, 1)  # (B, HW, C/2)
        attention = self.softmax(theta @ phi)  # (B, HW, HW): how much each pixel attends to each other
        y = (attention @ g).permute(0, 2, 1).reshape(b, self.inter, h, w)  # (B, C/2, H, W)
        return self.out(y) + x


class BraggNN(nn.Module):
    """(B, 1, 11, 11) patch -> (B, 2) peak centre (x, y) in [0, 1] of the patch."""

    def __init__(self, patch: int = PATCH, scale: int = 4) -> None:
        super().__init__()
        c1, c2, c3 = 16 * scale, 8 * scale, 2 * scale
        self.conv1 = nn.Conv2d(1, c1, kernel_size=3)  # 11x11 -> 9x9, no padding
        self.nlb = NonLocalBlock(c1)
        self.convs = nn.Sequential(
            nn.LeakyReLU(0.01),
            nn.Conv2d(c1, c2, kernel_size=3), nn.LeakyReLU(0.01),  # 9x9 -> 7x7
            nn.Conv2d(c2, c3, kernel_size=3), nn.LeakyReLU(0.01),  # 7x7 -> 5x5
        )
        side = patch - 6
        widths = [c3 * side * side, 16 * scale, 8 * scale, 4 * scale, 2 * scale]
        layers: list[nn.Module] = []
        for a, b in zip(widths, widths[1:], strict=False):
            layers += [nn.Linear(a, b), nn.LeakyReLU(0.01)]
        layers.append(nn.Linear(widths[-1], 2))
        self.dense = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.nlb(self.conv1(x))  # (B, 16s, 9, 9)
        x = self.convs(x)  # (B, 2s, 5, 5)
        return self.dense(x.flatten(1))  # (B, 50s) -> (B, 2)


def _data(seed: int) -> Data:
    train, heldout = bragg_peaks(6144, seed, size=PATCH).split(1024)
    return Data(train, heldout)


def _batch_loss(model: nn.Module, loss_fn: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    x, y = batch
    return loss_fn(model(x), y)


def _error_px(model: nn.Module, ds: Samples) -> float:
    """Mean Euclidean distance between predicted and true centres, in pixels."""
    pred = model(ds.x)
    return float(((pred - ds.y) * (PATCH - 1)).norm(dim=-1).mean())


def centroid_error_px(ds: Samples, threshold: float = 0.5) -> float:
    """The classical baseline: the intensity-weighted centroid of the pixels above ``threshold``, in pixels.

    On isolated, bright peaks it is hard to beat; a neighbouring peak or a faint one pulls it
    off, and the fit-free speed of a network is what BraggNN was built for.
    """
    w = (ds.x[:, 0] - threshold).clamp_min(0.0)  # (N, H, W)
    coords = torch.arange(PATCH, dtype=w.dtype)
    total = w.sum((1, 2)).clamp_min(1e-9)
    centre = torch.stack([(w.sum(1) * coords).sum(1) / total, (w.sum(2) * coords).sum(1) / total], dim=1)
    return float((centre - ds.y * (PATCH - 1)).norm(dim=-1).mean())


SPEC = Spec(
    name="braggnn",
    description="BraggNN: CNN + non-local attention block regressing a Bragg peak's centre",
    task="regression: 11x11 detector patch -> peak centre (x, y) in [0, 1]",
    source="Liu et al., 'BraggNN: fast X-ray Bragg peak analysis using deep learning', IUCrJ 9 (2022)",
    quality_goal=QualityGoal("mean centre error", 0.3, higher_is_better=False, unit="px"),
    recipe=Recipe(steps=350, lr=8e-3, batch_size=128),
    make_data=_data,
    make_model=lambda data: BraggNN(),
    make_loss_fn=nn.MSELoss,
    example_inputs=lambda ds: (ds.x[:16],),
    batch_loss=_batch_loss,
    metric=_error_px,
)
