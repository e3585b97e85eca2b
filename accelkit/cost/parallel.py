"""``Parallel``: how ``chips`` split the work. A typed value, never a string to parse."""

from __future__ import annotations

from dataclasses import dataclass

from accelkit.errors import CompileError


@dataclass(frozen=True)
class Parallel:
    """How ``chips`` split the work: ``data`` replicas x ``tensor`` shards per layer x ``pipeline`` stages."""

    data: int = 1
    tensor: int = 1
    pipeline: int = 1

    def __post_init__(self) -> None:
        for k in ("data", "tensor", "pipeline"):
            v = getattr(self, k)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise CompileError(f"Parallel.{k} must be a whole number ≥ 1, got {v!r}",
                                   fix="e.g. ak.Parallel(data=2, tensor=1, pipeline=4)")

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
        return " x ".join(parts) or "one chip"

    def __str__(self) -> str:
        return f"data={self.data} x tensor={self.tensor} x pipeline={self.pipeline}"
