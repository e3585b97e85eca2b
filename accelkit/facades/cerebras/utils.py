"""``cerebras.pytorch.utils``: ``data`` (the loader and executor) and ``tensorboard`` (a summary writer).

``from cerebras.pytorch.utils.tensorboard import SummaryWriter`` (gigaGPT) gets PyTorch's own writer when
the ``tensorboard`` package is installed, else :class:`ScalarWriter`, which keeps the same ``add_scalar``
calls as CSV lines in ``<log_dir>/scalars.csv``.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from accelkit.facades.cerebras.cstorch import DataExecutor, DataLoader

data = SimpleNamespace(DataExecutor=DataExecutor, DataLoader=DataLoader)


class ScalarWriter:
    """``add_scalar(tag, value, step)`` written as ``tag,step,value`` lines (when tensorboard is not installed)."""

    def __init__(self, log_dir: str | os.PathLike[str] | None = None, **_: Any) -> None:
        self.log_dir = os.fspath(log_dir or "runs")
        os.makedirs(self.log_dir, exist_ok=True)
        self.path = os.path.join(self.log_dir, "scalars.csv")

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, **_: Any) -> None:
        with open(self.path, "a") as f:
            f.write(f"{tag},{global_step if global_step is not None else ''},{float(scalar_value)}\n")

    def flush(self) -> None:
        """Lines are written as they come."""

    def close(self) -> None:
        """Nothing is held open."""


def _summary_writer() -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter as TorchWriter
    except ImportError:
        return ScalarWriter
    return TorchWriter


SummaryWriter = _summary_writer()  # cerebras.pytorch.utils.tensorboard.SummaryWriter
tensorboard = SimpleNamespace(SummaryWriter=SummaryWriter)

__all__ = ["DataExecutor", "DataLoader", "ScalarWriter", "SummaryWriter", "data", "tensorboard"]
