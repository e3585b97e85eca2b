"""FFN-LogReg: the feed-forward + logistic-regression classifier of SambaNova's first tutorial.

The shape follows SambaNova's ``logreg`` / ``ffn_mnist`` examples (ALCF AI-testbed tutorials):
a feed-forward block ``Linear -> ReLU -> Linear`` (no biases) that embeds the input, then a
logistic-regression head ``Linear`` (no bias) whose cross-entropy loss is computed *inside*
``forward`` when targets are given, returning ``(loss, logits)``; all weights start Xavier-normal.
Computing the loss in the model is the RDU habit worth noticing: the compiler then sees the
loss, and the backward pass, as part of the one graph it maps onto the chip.

Here it classifies the UCI 8x8 handwritten digits that scikit-learn ships (64 features, 10 classes;
``accelkit.data.digits(source="sklearn")``).
"""

from __future__ import annotations

import torch
from torch import nn

from accelkit.data.digits import digits
from accelkit.data.samples import Samples
from accelkit.zoo.entry import Data, QualityGoal, Recipe, Spec


class FFN(nn.Module):
    """Two bias-free GEMMs around a ReLU: (B, features) -> (B, ffn_dim) -> (B, embedding)."""

    def __init__(self, num_features: int, ffn_dim: int, embedding_size: int) -> None:
        super().__init__()
        self.gemm1 = nn.Linear(num_features, ffn_dim, bias=False)
        self.relu = nn.ReLU()
        self.gemm2 = nn.Linear(ffn_dim, embedding_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gemm2(self.relu(self.gemm1(x)))


class LogReg(nn.Module):
    """Multinomial logistic regression: logits = x W^T; with targets, also the mean cross-entropy."""

    def __init__(self, num_features: int, num_classes: int) -> None:
        super().__init__()
        self.lin_layer = nn.Linear(num_features, num_classes, bias=False)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x: torch.Tensor, targets: torch.Tensor | None = None
                ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        logits = self.lin_layer(x)  # (B, E) @ (E, classes) -> (B, classes)
        if targets is None:
            return logits
        return self.criterion(logits, targets), logits


class FFNLogReg(nn.Module):
    """``forward(x)`` -> logits; ``forward(x, targets)`` -> ``(loss, logits)``, as on the RDU."""

    def __init__(self, num_features: int = 64, ffn_dim: int = 32, embedding_size: int = 32,
                 num_classes: int = 10) -> None:
        super().__init__()
        self.ffn = FFN(num_features, ffn_dim, embedding_size)
        self.logreg = LogReg(embedding_size, num_classes)
        for p in self.parameters():
            nn.init.xavier_normal_(p)

    def forward(self, x: torch.Tensor, targets: torch.Tensor | None = None
                ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        return self.logreg(self.ffn(x), targets)


def _data(seed: int) -> Data:
    # the UCI handwritten digits scikit-learn ships with its package (1,797 scans; nothing downloaded)
    train, heldout = digits(2000, seed, source="sklearn").split(400)
    return Data(train, heldout)


def _batch_loss(model: nn.Module, loss_fn: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
    x, y = batch
    loss, _ = model(x, y)  # the loss comes out of the model, as in the tutorial
    return loss


def _accuracy(model: nn.Module, ds: Samples) -> float:
    logits = model(ds.x)
    return float((logits.argmax(-1) == ds.y).float().mean())


SPEC = Spec(
    name="ffn_logreg",
    description="feed-forward block + logistic regression (loss inside forward), on 8x8 digits",
    task="classification: 64 pixel features -> one of 10 digits",
    source="SambaNova's logreg / FFN tutorial (ALCF AI-testbed SambaNova examples)",
    quality_goal=QualityGoal("accuracy", 0.9),
    recipe=Recipe(steps=200, lr=1e-2, batch_size=64),
    make_data=_data,
    make_model=lambda data: FFNLogReg(),
    make_loss_fn=nn.CrossEntropyLoss,
    example_inputs=lambda ds: ds.batch(slice(0, 16)),  # (x (16, 64), y (16,)): forward returns (loss, logits)
    batch_loss=_batch_loss,
    metric=_accuracy,
)
