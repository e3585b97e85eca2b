"""``poptorch.Options``: how one call of a PopTorch model maps onto IPUs, and the batches that feed it.

Three numbers multiply into the samples one call consumes (PopTorch calls it the combined batch):

    combined batch = micro-batch x gradientAccumulation x replicationFactor x deviceIterations

- ``replicationFactor(r)``: r copies of the model (data parallel), each on its own IPU(s);
- ``Training.gradientAccumulation(g)``: each replica runs g micro-batches before one weight update;
- ``deviceIterations(n)``: the IPU loops n times (n weight updates, in training) per call from the host,
  so the host is not in the loop of every step.

``poptorch.DataLoader(options, dataset, batch_size=micro)`` builds batches of that combined size.
"""

from __future__ import annotations

from typing import Any

import torch

from accelkit.errors import AccelkitError

TARGETS = ("gc200", "bow")  # the IPUs in accelkit's catalog: Mk2 GC200 (default) and Bow


class PopTorchError(AccelkitError, ValueError):
    """A PopTorch-style model or option that cannot work as written: says what, and the fix."""


def _count(name: str, n: Any) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise PopTorchError(f"{name} must be a whole number ≥ 1, got {n!r}", fix=f"e.g. {name}(4)")
    return n


class _TrainingOptions:
    """``options.Training``: settings that only apply to ``trainingModel``."""

    def __init__(self) -> None:
        self.gradient_accumulation = 1

    def gradientAccumulation(self, n: int) -> _TrainingOptions:  # noqa: N802 - PopTorch's name
        """Run ``n`` micro-batches per replica, summing their gradients, before each weight update."""
        self.gradient_accumulation = _count("gradientAccumulation", n)
        return self


class Options:
    """PopTorch's options object (``poptorch.Options``); setters return the object, so they chain.

    ``target`` is accelkit's: the IPU to simulate, ``"gc200"`` (Mk2, the default) or ``"bow"``.
    """

    def __init__(self, target: str = "gc200") -> None:
        key = target.strip().lower()
        if key not in TARGETS:
            raise PopTorchError(f"{target!r} is not an IPU in accelkit's catalog", fix=f"use one of {list(TARGETS)}")
        self.target = key
        self.replication_factor = 1
        self.device_iterations = 1
        self.use_ipu_model = False
        self.Training = _TrainingOptions()

    def replicationFactor(self, n: int) -> Options:  # noqa: N802 - PopTorch's name
        """Run ``n`` copies of the model (data parallel), each on its own IPU(s)."""
        self.replication_factor = _count("replicationFactor", n)
        return self

    def deviceIterations(self, n: int) -> Options:  # noqa: N802 - PopTorch's name
        """Loop ``n`` times on the IPU per call from the host (``n`` weight updates per call in training)."""
        self.device_iterations = _count("deviceIterations", n)
        return self

    def useIpuModel(self, use: bool) -> Options:  # noqa: N802 - PopTorch's name
        """PopTorch's software IPU. Everything here is simulated either way; recorded only."""
        self.use_ipu_model = bool(use)
        return self

    def randomSeed(self, seed: int) -> Options:  # noqa: N802 - PopTorch's name
        """Seed the random numbers the model draws (here: PyTorch's generator on this CPU)."""
        torch.manual_seed(seed)
        return self

    def combined_batch_factor(self, training: bool) -> int:
        """Samples per call / micro-batch size."""
        g = self.Training.gradient_accumulation if training else 1
        return g * self.replication_factor * self.device_iterations

    def __repr__(self) -> str:
        return (f"Options(target={self.target!r}, replicationFactor={self.replication_factor}, "
                f"deviceIterations={self.device_iterations}, "
                f"gradientAccumulation={self.Training.gradient_accumulation})")


class DataLoader(torch.utils.data.DataLoader):
    """``poptorch.DataLoader(options, dataset, batch_size=micro, ...)``: batches of the combined size.

    ``batch_size`` is the micro-batch; each batch holds ``micro x gradientAccumulation x replicationFactor x
    deviceIterations`` samples (the last partial batch is dropped, as a compiled program has fixed shapes).
    """

    def __init__(self, options: Options, dataset: Any, batch_size: int = 1, shuffle: bool = False,
                 **kwargs: Any) -> None:
        self.options = options
        self.micro_batch_size = batch_size
        kwargs.setdefault("drop_last", True)
        super().__init__(dataset, batch_size=batch_size * options.combined_batch_factor(True),
                         shuffle=shuffle, **kwargs)


__all__ = ["TARGETS", "DataLoader", "Options", "PopTorchError"]
