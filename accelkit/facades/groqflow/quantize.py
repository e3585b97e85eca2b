"""GroqFlow's post-training int8 quantization (``groqit(model, inputs, quantization_samples=samples)``), emulated.

GroqFlow exports the model to ONNX and quantizes it statically with the samples before compiling it: "the provided
unlabeled samples are used to estimate distribution statistics of the data to pre-compute scales and zero points of
the float-to-int8 range mapping for the activation tensors ... all conv, matmul, and relu operations in the
quantized model will have int8 precision" (groqflow, docs/user_guide.md, "Perform Post Training Quantization";
the stage is onnxflow's ``QuantizeONNXModel``). The numbers here follow ONNX Runtime's ``quantize_static`` defaults
that such a stage uses: QDQ format, one scale per tensor, min-max calibration, weights symmetric int8
(``max |w| / 127``), activations asymmetric int8 with a zero point, the calibrated range widened to hold 0.

:func:`calibrate` runs the fp32 model on every sample and records, for each ``nn.Linear`` and ``nn.Conv1d/2d/3d``,
the range of its input and of its output. :func:`int8_numerics` then runs those layers on quantized inputs and
weights (rounded to the int8 grid and back: a product of int8 values summed in fp32 is exact at these sizes, as
the TSP's int32 accumulation is) and rounds each output to its int8 grid, as the QDQ pair after it does. A ReLU on
an int8 tensor is exact on the grid, so it needs nothing. The bias stays in fp32 (ONNX Runtime quantizes it to
int32 at the product of the two scales: a difference below one step of the output's grid).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from accelkit.facades.groqflow.model import GroqFlowError, bind_inputs

QUANTIZED = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
"""The layers quantized: GroqFlow's "conv and matmul" operations as PyTorch modules."""


def _as_tensor(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    return value


def _sample_inputs(model: nn.Module, sample: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """One calibration sample as forward's inputs: a dict by name, a tuple or list in the build's input order,
    or one array or tensor for the first input."""
    if isinstance(sample, dict):
        return bind_inputs(model, {k: _as_tensor(v) for k, v in sample.items()})
    if isinstance(sample, (tuple, list)):
        return bind_inputs(model, kwargs=dict(zip(names, (_as_tensor(v) for v in sample), strict=False)))
    return bind_inputs(model, kwargs={names[0]: _as_tensor(sample)})


def calibrate(model: nn.Module, samples: Any, names: tuple[str, ...]) -> dict[str, list[float]]:
    """Run the fp32 model on every sample; for each quantized layer (by its name in the model), the smallest and
    largest value its input and its output took: ``[in_min, in_max, out_min, out_max]``."""
    try:
        batch = list(samples)
    except TypeError:
        raise GroqFlowError(f"quantization_samples must be a list of samples, not {type(samples).__name__}",
                            fix="pass e.g. [np.random.rand(1, 10).astype(np.float32) for _ in range(100)]") from None
    if not batch:
        raise GroqFlowError("quantization_samples is empty: there is nothing to calibrate the int8 ranges on",
                            fix="pass a list of representative inputs (GroqFlow's example uses 100)")
    layers = {name: m for name, m in model.named_modules() if isinstance(m, QUANTIZED)}
    if not layers:
        raise GroqFlowError(f"{type(model).__name__} has no linear or convolution layer to quantize",
                            fix="drop quantization_samples: the build is then fp16, GroqFlow's default")
    seen: dict[str, list[float]] = {}

    def record(name: str) -> Any:
        def hook(_m: nn.Module, args: tuple[Any, ...], out: Any) -> None:
            x = args[0].detach().float()
            y = out.detach().float()
            r = seen.setdefault(name, [math.inf, -math.inf, math.inf, -math.inf])
            r[0], r[1] = min(r[0], float(x.min())), max(r[1], float(x.max()))
            r[2], r[3] = min(r[2], float(y.min())), max(r[3], float(y.max()))
        return hook

    handles = [m.register_forward_hook(record(name)) for name, m in layers.items()]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for i, sample in enumerate(batch):
                try:
                    model(**_sample_inputs(model, sample, names))
                except GroqFlowError:
                    raise
                except Exception as exc:
                    raise GroqFlowError(f"quantization sample {i} does not run through {type(model).__name__}: "
                                        f"{type(exc).__name__}: {exc}",
                                        fix="give samples shaped and typed like the model's inputs") from None
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return {name: [round(v, 9) for v in r] for name, r in seen.items()}


def _activation_grid(lo: float, hi: float) -> tuple[float, int]:
    """(scale, zero point) of an asymmetric int8 grid over [lo, hi] widened to hold 0."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 or 1.0
    zero = int(round(-128 - lo / scale))
    return scale, max(-128, min(127, zero))


def _fake(x: torch.Tensor, scale: float, zero: int) -> torch.Tensor:
    return torch.fake_quantize_per_tensor_affine(x.float(), scale, zero, -128, 127).to(x.dtype)


def _weight(w: torch.Tensor) -> torch.Tensor:
    bound = float(w.detach().abs().max())
    return _fake(w, bound / 127.0 or 1.0, 0)


@contextmanager
def int8_numerics(model: nn.Module, ranges: dict[str, list[float]]) -> Iterator[None]:
    """Inside the block, each calibrated layer of ``model`` computes on int8-rounded input and weights and rounds
    its output to its int8 grid; the layers are restored after."""
    patched: list[tuple[nn.Module, Any]] = []
    for name, m in model.named_modules():
        if name not in ranges or not isinstance(m, QUANTIZED):
            continue
        in_grid = _activation_grid(*ranges[name][:2])
        out_grid = _activation_grid(*ranges[name][2:])

        def forward(x: torch.Tensor, _m: nn.Module = m, _in: tuple[float, int] = in_grid,
                    _out: tuple[float, int] = out_grid) -> torch.Tensor:
            xq, wq = _fake(x, *_in), _weight(_m.weight)  # type: ignore[arg-type]
            if isinstance(_m, nn.Linear):
                y = F.linear(xq, wq, _m.bias)
            else:
                y = _m._conv_forward(xq, wq, _m.bias)  # type: ignore[operator]
            return _fake(y, *_out)

        patched.append((m, m.__dict__.get("forward")))
        m.forward = forward  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        for m, before in patched:
            if before is None:
                del m.forward
            else:
                m.forward = before  # type: ignore[method-assign]


__all__ = ["QUANTIZED", "calibrate", "int8_numerics"]
