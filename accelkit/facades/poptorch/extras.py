"""The rest of ``poptorch``'s top level that tutorials call: log level, recomputation checkpoints, MultiConv,
the asynchronous data accessor, connection types, custom ops.

Each is either honoured (it changes nothing computed here: the value passes through), accepted and said
once in the run's report (it only matters on the IPU), or refused with an error naming it and the fix
(``custom_op`` runs compiled IPU code, which no simulation can run, except the few operators of Graphcore's public
applications whose computation their source shows).
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


# PopART custom operators from Graphcore's public applications whose computation their C++ source shows, each
# with what it does on the IPU and the PyTorch that computes the same values. Only these run; any other is refused.
KNOWN_CUSTOM_OPS: dict[tuple[str, str], tuple[Any, str]] = {
    ("RemapCE", "ai.graphcore"): (
        lambda x, **_: x.clone(),
        "copies its input into a new tensor mapped linearly over the tiles in grains of grain_size elements, and its "
        "gradient the same way: a layout change only, the values unchanged (graphcore/examples, "
        "nlp/gpt2/pytorch/custom_ops/remap_tensor_ce.cpp: RemapCEOpx::grow and RemapCEGradOpx::grow, "
        "poplar::program::Copy); computed here as a copy"),
}


def custom_op(inputs: Any, name: str, domain: str, domain_version: int, example_outputs: Any,
              attributes: dict[str, Any] | None = None) -> Any:
    """PopTorch runs a PopART custom operator built from C++ (a ``.so`` loaded with ``ctypes``) on the IPU. That
    code targets the IPU and cannot run in a simulation: an operator whose computation is known from its public
    source (:data:`KNOWN_CUSTOM_OPS`) runs as the PyTorch that computes the same values, said once; any other is
    refused, naming the op. Returns a list of outputs, as PopTorch does."""
    known = KNOWN_CUSTOM_OPS.get((str(name), str(domain)))
    if known is None:
        raise PopTorchError(f"poptorch.custom_op(name={name!r}, domain={domain!r}) runs a PopART custom operator "
                            "compiled for the IPU, which accelkit cannot run",
                            fix="write the operator in PyTorch for the simulation (e.g. torch.nn.functional.leaky_relu "
                                "for the LeakyReLU example) and keep custom_op for the real IPU")
    compute, what = known
    args = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    facade_log.accept("PopTorch", f"poptorch.custom_op({name!r}, {domain!r})", what, emulated=True)
    out = compute(*args, **dict(attributes or {}))
    return list(out) if isinstance(out, (list, tuple)) else [out]


class MatMulSerializationMode(enum.Enum):
    """Which dimension ``serializedMatMul`` splits a matrix product over (PopTorch's enum, its values)."""

    InputChannels = "input_channels"
    ReducingDim = "reducing_dim"
    OutputChannels = "output_channels"
    Disabled = "none"


def serializedMatMul(lhs: torch.Tensor, rhs: torch.Tensor, mode: MatMulSerializationMode,  # noqa: N802
                     factor: int = 0, keep_precision: bool = False) -> torch.Tensor:
    """``lhs @ rhs`` computed on the IPU as ``factor`` smaller products one after another (less memory, the same
    product): computed here as one ``torch.matmul``, as PopTorch itself writes it before marking the split; the
    split is recorded. Checks the arguments as PopTorch does."""
    if not isinstance(mode, MatMulSerializationMode):
        raise PopTorchError(f"serializedMatMul(mode={mode!r}): mode must be a poptorch.MatMulSerializationMode",
                            fix="pass e.g. poptorch.MatMulSerializationMode.OutputChannels")
    if not isinstance(factor, int) or not isinstance(keep_precision, bool):
        raise PopTorchError(f"serializedMatMul(factor={factor!r}, keep_precision={keep_precision!r}): factor must be "
                            "an int and keep_precision a bool", fix="pass e.g. factor=4, keep_precision=False")
    facade_log.accept("PopTorch", f"poptorch.serializedMatMul(mode={mode.name})",
                      "splits a matrix product into smaller ones run one after another on the IPU, to save memory; "
                      "the product is the same, and the simulated memory plan holds it whole")
    return torch.matmul(lhs, rhs)


class Attribute:
    """``with poptorch.Attribute(__outline={"layer": "Dense"}): ...``: attributes PopART attaches to the ops made in
    the block (outlining hints, per-op options); they change how the IPU program is laid out, never the values.
    Nested blocks see the attributes of the blocks around them, as in PopTorch."""

    _current: dict[str, dict[str, Any]] = {}

    def __init__(self, **attributes: dict[str, Any]) -> None:
        for attr, values in attributes.items():
            if not isinstance(values, dict):
                raise PopTorchError(f"poptorch.Attribute({attr}={values!r}): each attribute takes a dict of values",
                                    fix=f"write poptorch.Attribute({attr}={{'name': value}})")
        self._attributes = attributes
        self._saved: dict[str, dict[str, Any]] = {}

    def __enter__(self) -> Attribute:
        self._saved = {k: dict(v) for k, v in Attribute._current.items()}
        for attr, values in self._attributes.items():
            Attribute._current.setdefault(attr, {}).update(values)
        facade_log.accept("PopTorch", "poptorch.Attribute(...)",
                          "attaches PopART attributes (outlining, per-op options) to the ops in a block; they shape "
                          "the IPU program, not the values")
        return self

    def __exit__(self, *exc: Any) -> None:
        Attribute._current = self._saved


def nop(tensor: torch.Tensor) -> torch.Tensor:
    """``poptorch.nop(x)``: an operation that does nothing, which PopART keeps (a boundary the IPU compiler does not
    optimise across): the tensor, unchanged."""
    return tensor


def for_loop(count: int, body: Any, inputs: Any) -> list[torch.Tensor]:
    """``poptorch.for_loop(count, body, inputs)``: ``body`` run ``count`` times on the IPU as one loop in the
    program, each iteration's outputs the next one's inputs; returns the last iteration's outputs. Run here as the
    same loop on this CPU (and modelled as ``count`` copies of the body: the IPU runs every iteration). Checks what
    PopTorch checks: a whole count, and as many outputs as inputs."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise PopTorchError(f"poptorch.for_loop(count={count!r}): count must be a whole number of iterations",
                            fix="pass an int, e.g. poptorch.for_loop(10, body, [x])")
    values = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    facade_log.accept("PopTorch", "poptorch.for_loop(...)",
                      "runs its body as a loop inside the IPU program, with no host round trip between iterations; "
                      "the same loop runs here, and the modelled program holds every iteration", emulated=True)
    for _ in range(count):
        out = body(*values)
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(out) != len(values):
            raise PopTorchError(f"poptorch.for_loop: the body returned {len(out)} tensor(s) for {len(values)} input(s)",
                                fix="return as many tensors as the body takes, in the same order: each iteration's "
                                    "outputs are the next one's inputs")
        values = out
    return values


def ipu_print_tensor(tensor: torch.Tensor, title: str = "") -> torch.Tensor:
    """Print a tensor from inside the model (``poptorch.ipu_print_tensor``): printed on this CPU, returned unchanged."""
    print(f"{title}{tensor}")
    return tensor


__all__ = ["KNOWN_CUSTOM_OPS", "AsynchronousDataAccessor", "Attribute", "ConnectionType", "MatMulSerializationMode", "MultiConv", "custom_op", "for_loop", "nop", "ipu_print_tensor",
           "recomputationCheckpoint", "serializedMatMul", "setLogLevel"]


def _register_name_scopes() -> None:
    """``torch.ops.poptorch.push_name_scope(name)`` / ``pop_name_scope()``: PopTorch's ops that name the ops made
    between them in the IPU program (PopVision shows the names; Graphcore's CNN application calls them from forward
    hooks). They compute nothing; defined once, in the ``poptorch`` namespace, unless something defined them."""
    try:
        torch.ops.poptorch.push_name_scope  # noqa: B018 - the real PopTorch (or an earlier import) defined them
        return
    except (AttributeError, RuntimeError):
        pass

    @torch.library.custom_op("poptorch::push_name_scope", mutates_args=())
    def push_name_scope(name: str) -> None:
        return None

    @torch.library.custom_op("poptorch::pop_name_scope", mutates_args=())
    def pop_name_scope() -> None:
        return None

    push_name_scope.register_fake(lambda name: None)  # the capture (torch.export) runs them on no data
    pop_name_scope.register_fake(lambda: None)


_register_name_scopes()
