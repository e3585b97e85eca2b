"""Precisions, in one place: their names and aliases, bytes per element, the torch dtype a Session emulates
them with, the output tolerance against fp32, and the default precision for a chip.

    PRECISIONS         the keys of a spec's ``peak_flops`` ("fp32", "bf16", ...)
    normalize(p)       "bfloat16", "half", torch.float16 ... -> "bf16", "fp16"
    element_bytes(p)   bytes per weight or activation at ``p`` (refuses an unknown precision)
    EMULATED           precision -> the torch dtype autocast runs it with on the CPU (fp32: None, no autocast)
    TOLERANCE          relative output tolerance of an emulated precision against the fp32 step
    default_for(spec)  bf16 where the chip has it, else fp16, else its first published precision
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import TYPE_CHECKING, Any

import torch

from accelkit.errors import PrecisionError

if TYPE_CHECKING:
    from accelkit.hardware.spec import AcceleratorSpec

PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")
"""Keys of ``peak_flops``. ``peak()`` also takes torch dtype names (``"bfloat16"``) and dtypes."""

ALIASES = {
    "float64": "fp64", "double": "fp64", "float32": "fp32", "float": "fp32", "float16": "fp16",
    "half": "fp16", "bfloat16": "bf16", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
}
"""Other names of a precision (torch dtype names) -> its name in :data:`PRECISIONS`."""

ELEMENT_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
"""Bytes per element at each precision (tf32 computes on fp32 data)."""

EMULATED: dict[str, torch.dtype | None] = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
"""The precisions a Session runs for real on the CPU, and the autocast dtype of each (fp32: none)."""

TOLERANCE = {"fp32": 0.0, "bf16": 2e-2, "fp16": 2e-3}
"""Relative tolerance of an emulated precision's outputs against the fp32 step."""

PREFERRED = ("bf16", "fp16")
"""A chip's default precision is the first of these it publishes a peak for."""


def normalize(precision: Any) -> str:
    """``"bfloat16"``, ``"BF16"``, ``torch.bfloat16`` -> ``"bf16"``; an unknown name is returned lowered."""
    text = str(precision).replace("torch.", "").strip().lower()
    return ALIASES.get(text, text)


def element_bytes(precision: str) -> int:
    """Bytes per element at ``precision``; a :class:`PrecisionError` names the known ones (no silent guess)."""
    p = normalize(precision)
    if p not in ELEMENT_BYTES:
        raise PrecisionError(f"no precision called {precision!r}; known: {', '.join(ELEMENT_BYTES)}",
                             fix="e.g. precision='bf16'")
    return ELEMENT_BYTES[p]


def tensor_bytes(precision: str, training: bool) -> int:
    """Bytes per element of the tensors a program at ``precision`` keeps and moves: its own precision's, except an
    fp8 training step's, which stay in bf16: fp8 training libraries (NVIDIA's and Intel Gaudi's Transformer Engine)
    run the matrix products in fp8, casting their inputs on the way in, and keep activations, gradients and the
    other ops in bf16 (NVIDIA Transformer Engine user guide, 'Using FP8 with Transformer Engine'; Intel Gaudi docs,
    'FP8 Training with Intel Gaudi Transformer Engine')."""
    return element_bytes("bf16" if training and normalize(precision) == "fp8" else precision)


def default_for(spec: AcceleratorSpec) -> str:
    """bf16 if the chip has it, else fp16, else its first precision."""
    return next((p for p in PREFERRED if p in spec.peak_flops), next(iter(spec.peak_flops)))


__all__ = ["ALIASES", "ELEMENT_BYTES", "EMULATED", "PRECISIONS", "PREFERRED", "TOLERANCE", "default_for",
           "element_bytes", "normalize", "tensor_bytes"]


@functools.cache
def _onednn_runs(dtype: Any) -> bool:
    """Whether this CPU's oneDNN runs an LSTM under autocast at ``dtype`` (a CPU without AVX-512 refuses it:
    "could not create a primitive descriptor")."""
    try:
        with torch.autocast("cpu", dtype=dtype):
            torch.nn.LSTM(2, 2)(torch.zeros(1, 1, 2))
        return True
    except RuntimeError:
        return False


class CpuAutocast:
    """``torch.autocast("cpu", dtype)`` for emulating a 16-bit precision on this CPU, reusable as a context; on a
    CPU whose oneDNN refuses some ops at that precision (recurrent layers without AVX-512), PyTorch's own kernels
    run them instead (``torch.backends.mkldnn`` off inside). ``dtype=None``: nothing (fp32)."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype
        self._stack: list[contextlib.ExitStack] = []

    def __enter__(self) -> CpuAutocast:
        stack = contextlib.ExitStack()
        if self.dtype is not None:
            if not _onednn_runs(self.dtype):
                with warnings.catch_warnings():  # its note about TF32 on Intel GPUs says nothing here
                    warnings.simplefilter("ignore")
                    stack.enter_context(torch.backends.mkldnn.flags(enabled=False))
            stack.enter_context(torch.autocast("cpu", dtype=self.dtype))
        self._stack.append(stack)
        return self

    def __exit__(self, *exc: Any) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._stack.pop().__exit__(*exc)
