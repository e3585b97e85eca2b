"""The rest of ``poptorch``'s top level that tutorials call: log level, recomputation checkpoints, MultiConv,
the asynchronous data accessor, connection types, custom ops.

Each is either honoured (it changes nothing computed here: the value passes through), accepted and said
once in the run's report (it only matters on the IPU), or refused with an error naming it and the fix
(``custom_op`` runs compiled IPU code, which no simulation can run).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

import torch

from accelkit.facades.poptorch.options import PopTorchError
from accelkit.runtime import facade_log


class ConnectionType(enum.IntEnum):
    """When PopTorch attaches to the IPUs (``opts.connectionType(...)``); nothing attaches here."""

    Always = 0
    OnDemand = 1
    Never = 2


def ipuHardwareIsAvailable(num_ipus: int = 1) -> bool:  # noqa: N802 - PopTorch's name
    """Whether ``num_ipus`` IPUs can be attached (PyTorch Lightning asks before it picks its IPU accelerator): the
    simulated IPUs always can, as many as a system of the target holds."""
    return int(num_ipus) >= 1


def ipuHardwareVersion() -> str:  # noqa: N802 - PopTorch's name
    """The attached IPUs' generation: ``"ipu2"`` (Mk2: GC200 and Bow, the IPUs accelkit simulates)."""
    return "ipu2"


def setLogLevel(level: Any) -> None:  # noqa: N802 - PopTorch's name
    """PopTorch's own log verbosity (``poptorch.setLogLevel(1)``): accelkit's facade logs nothing more; recorded."""
    facade_log.accept("PopTorch", f"poptorch.setLogLevel({level!r})",
                      "sets how much PopTorch and the Poplar compiler log; the simulation has no compiler log")


def recomputationCheckpoint(*tensors: Any) -> Any:  # noqa: N802 - PopTorch's name
    """Mark tensors the IPU keeps in the forward pass so the backward pass recomputes from them (less memory,
    more compute). The values are unchanged, so they pass through; the IPU's memory saving is recorded."""
    facade_log.accept("PopTorch", "poptorch.recomputationCheckpoint(...)",
                      "marks where the IPU recomputes activations in the backward pass (trading compute for memory); "
                      "the values are the same, and the simulated memory plan keeps every activation")
    return tensors[0] if len(tensors) == 1 else tensors


class MultiConv:
    """``with poptorch.MultiConv(): ...``: convolutions in the block are planned together on the IPU. The results
    are the same; the setters chain and are recorded."""

    def __enter__(self) -> MultiConv:
        facade_log.accept("PopTorch", "poptorch.MultiConv()",
                          "plans the block's parallel convolutions as one IPU operation (faster on the chip); the "
                          "convolutions compute the same values")
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __getattr__(self, setter: str) -> Any:
        if setter.startswith("_"):
            raise AttributeError(setter)

        def set_option(*args: Any, **kwargs: Any) -> MultiConv:
            return self

        return set_option


class AsynchronousDataAccessor:
    """``poptorch.AsynchronousDataAccessor(dataloader)``: loads batches in a background process on the IPU host.
    Here it iterates the wrapped loader in the same process (the same batches, in the same order)."""

    def __init__(self, dataset: Any, buffer_size: int = 3, **_: Any) -> None:
        self.dataset = dataset
        facade_log.accept("PopTorch", "poptorch.AsynchronousDataAccessor(...)",
                          "prefetches batches in a separate host process so the IPU never waits for data; the modelled "
                          "clock does not include host data loading")

    def __iter__(self) -> Iterator[Any]:
        return iter(self.dataset)

    def __len__(self) -> int:
        return len(self.dataset)

    def terminate(self) -> None:
        """Stop the background process (there is none here)."""


def custom_op(inputs: Any, name: str, domain: str, domain_version: int, example_outputs: Any,
              attributes: dict[str, Any] | None = None) -> Any:
    """PopTorch runs a PopART custom operator built from C++ (a ``.so`` loaded with ``ctypes``) on the IPU. That
    code targets the IPU and cannot run in a simulation, so this is refused, naming the op."""
    raise PopTorchError(f"poptorch.custom_op(name={name!r}, domain={domain!r}) runs a PopART custom operator "
                        "compiled for the IPU, which accelkit cannot run",
                        fix="write the operator in PyTorch for the simulation (e.g. torch.nn.functional.leaky_relu for "
                            "the LeakyReLU example) and keep custom_op for the real IPU")


def ipu_print_tensor(tensor: torch.Tensor, title: str = "") -> torch.Tensor:
    """Print a tensor from inside the model (``poptorch.ipu_print_tensor``): printed on this CPU, returned unchanged."""
    print(f"{title}{tensor}")
    return tensor


__all__ = ["AsynchronousDataAccessor", "ConnectionType", "MultiConv", "custom_op", "ipu_print_tensor",
           "recomputationCheckpoint", "setLogLevel"]
