"""``Parallel``: how ``chips`` split the work. A typed value, never a string to parse."""

from __future__ import annotations

from dataclasses import dataclass

from accelkit.errors import CompileError


@dataclass(frozen=True)
class Parallel:
    """How ``chips`` split the work: ``data`` replicas x ``tensor`` shards per layer x ``pipeline`` stages.

    ``zero`` shards training state over the data-parallel replicas, as ZeRO does (Rajbhandari et al., 'ZeRO:
    Memory Optimizations Toward Training Trillion Parameter Models', SC 2020): ``1`` the optimizer state
    (DeepSpeed ZeRO-1, Megatron-LM's distributed optimizer: each replica updates its share of the weights), ``2``
    the gradients too (ZeRO-2), ``3`` the weights too (ZeRO-3, PyTorch FSDP: each layer's weights gathered for its
    forward and again for its backward, every micro-batch); ``0`` (the default) keeps a whole copy on every
    replica."""

    data: int = 1
    tensor: int = 1
    pipeline: int = 1
    zero: int = 0

    def __post_init__(self) -> None:
        for k in ("data", "tensor", "pipeline"):
            v = getattr(self, k)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise CompileError(f"Parallel.{k} must be a whole number ≥ 1, got {v!r}",
                                   fix="e.g. ak.Parallel(data=2, tensor=1, pipeline=4)")
        if not isinstance(self.zero, int) or isinstance(self.zero, bool) or self.zero not in (0, 1, 2, 3):
            raise CompileError(f"Parallel.zero must be a ZeRO stage, 0, 1, 2 or 3, got {self.zero!r}",
                               fix="e.g. ak.Parallel(data=8, zero=1): the optimizer state sharded over the 8 "
                                   "replicas (2: the gradients too, 3: the weights too)")

    def sharded(self, kind: str) -> int:
        """Over how many data-parallel replicas ZeRO splits ``kind`` ("optimizer", "gradient" or "weights")."""
        stage = {"optimizer": 1, "gradient": 2, "weights": 3}[kind]
        return self.data if self.zero >= stage else 1

    @property
    def chips(self) -> int:
        return self.data * self.tensor * self.pipeline

    @property
    def model_shards(self) -> int:
        """Chips that split one copy of the weights (tensor x pipeline)."""
        return self.tensor * self.pipeline

    def split(self) -> str:
        """The factors above 1, as a reader says them: ``"tensor 8"``, ``"data 4 x pipeline 4"``, ``"one chip"``."""
        parts = [f"{k} {v}" for k, v in (("data", self.data), ("tensor", self.tensor), ("pipeline", self.pipeline))
                 if v > 1]
        zero = f" (ZeRO-{self.zero})" if self.zero and self.data > 1 else ""
        return (" x ".join(parts) or "one chip") + zero

    def __str__(self) -> str:
        zero = f", zero={self.zero}" if self.zero else ""
        return f"data={self.data} x tensor={self.tensor} x pipeline={self.pipeline}{zero}"
