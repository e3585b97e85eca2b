"""``horovod.torch``, as Graphcore's applications import it beside the simulated ``popdist`` when Horovod is not
installed (their requirements pin ``horovod[pytorch]==0.24.3``, whose build needs a C++ toolchain and Gloo or MPI).

They use Horovod only between the host processes ``poprun`` starts (``if popdist.isPopdistEnvSet(): hvd.init()``:
broadcasting a seed or the parameters, averaging a metric over the instances). Here no ``poprun`` started the
script, so it is one process: rank 0 of 1, and every collective returns its input as a one-process collective
does (an all-reduce's sum or average of one value is that value; an all-gather of one tensor is that tensor).
Data parallelism over several IPUs is ``opts.replicationFactor(n)``, inside the one process.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

Average = "Average"
Sum = "Sum"
Adasum = "Adasum"
Min = "Min"
Max = "Max"
Product = "Product"


def init(*_: Any, **__: Any) -> None:
    """Start Horovod (one process: nothing to connect to)."""


def shutdown() -> None:
    """Stop Horovod (nothing to stop)."""


def is_initialized() -> bool:
    return True


def rank() -> int:
    return 0


def local_rank() -> int:
    return 0


def cross_rank() -> int:
    return 0


def size() -> int:
    return 1


def local_size() -> int:
    return 1


def cross_size() -> int:
    return 1


def _check(op: Any) -> None:
    if op not in (None, Average, Sum, Adasum, Min, Max, Product):
        raise ValueError(f"unknown Horovod reduction {op!r}: use hvd.Average, hvd.Sum, hvd.Min, hvd.Max or hvd.Product")


def allreduce(tensor: torch.Tensor, average: bool | None = None, name: str | None = None, op: Any = None,
              **_: Any) -> torch.Tensor:
    """The reduction over one process: the tensor itself (a copy, as Horovod returns a new tensor)."""
    _check(op)
    return tensor.clone()


def allreduce_(tensor: torch.Tensor, average: bool | None = None, name: str | None = None, op: Any = None,
               **_: Any) -> torch.Tensor:
    _check(op)
    return tensor


def grouped_allreduce(tensors: Iterable[torch.Tensor], average: bool | None = None, name: str | None = None,
                      op: Any = None, **_: Any) -> list[torch.Tensor]:
    _check(op)
    return [t.clone() for t in tensors]


def allgather(tensor: torch.Tensor, name: str | None = None, **_: Any) -> torch.Tensor:
    """Every process's tensor concatenated along the first dimension: one process's is the tensor."""
    return tensor.clone()


def broadcast(tensor: torch.Tensor, root_rank: int, name: str | None = None, **_: Any) -> torch.Tensor:
    if root_rank != 0:
        raise ValueError(f"hvd.broadcast(root_rank={root_rank}): this run is one process, rank 0 of 1")
    return tensor.clone()


def broadcast_(tensor: torch.Tensor, root_rank: int, name: str | None = None, **_: Any) -> torch.Tensor:
    broadcast(tensor, root_rank)
    return tensor


def broadcast_parameters(params: Any, root_rank: int) -> None:
    """Copy the root's parameters to every process: there is only the root."""
    if root_rank != 0:
        raise ValueError(f"hvd.broadcast_parameters(root_rank={root_rank}): this run is one process, rank 0 of 1")


def broadcast_optimizer_state(optimizer: Any, root_rank: int) -> None:
    broadcast_parameters(None, root_rank)


def broadcast_object(obj: Any, root_rank: int = 0, name: str | None = None) -> Any:
    broadcast_parameters(None, root_rank)
    return obj


def allgather_object(obj: Any, name: str | None = None) -> list[Any]:
    return [obj]


def barrier() -> None:
    """Wait for every process (there is one)."""


def join(device: int = -1) -> int:
    return 0


__all__ = ["Adasum", "Average", "Max", "Min", "Product", "Sum", "allgather", "allgather_object", "allreduce",
           "allreduce_", "barrier", "broadcast", "broadcast_", "broadcast_object", "broadcast_optimizer_state",
           "broadcast_parameters", "cross_rank", "cross_size", "grouped_allreduce", "init", "is_initialized", "join",
           "local_rank", "local_size", "rank", "shutdown", "size"]
