"""fp16 convolutions and matrix products with fp32 partial sums, as an IPU computes them.

An IPU multiplies fp16 operands and sums the products in its *partials* type, fp32 unless the script asks for fp16
(PopTorch's ``opts.Precision.setPartialsType``, float by default); the result is rounded to fp16 once. A
``model.half()`` model's forward and backward run here under :class:`FloatPartials`: each convolution and matrix
product (``aten.convolution``, its backward, ``mm``, ``addmm``, ``bmm``) whose operands are fp16 is computed from
those fp16 values in fp32 and its result rounded to fp16, which is that arithmetic. Every other op runs as PyTorch
runs it. On this CPU it is also several times faster than PyTorch's own fp16 kernels, which have no vector units to
run on.

A product given a float32 operand beside a float16 one (which PyTorch refuses on a CPU) computes in float32 under
:class:`MixedUpcast`, as PopTorch 3 upcasts mixed-precision ops.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

aten = torch.ops.aten
PRODUCTS = {aten.convolution.default, aten.convolution_backward.default, aten.mm.default, aten.addmm.default,
            aten.bmm.default, aten.baddbmm.default}


def _up(t: Any) -> Any:
    return t.float() if isinstance(t, torch.Tensor) and t.dtype == torch.float16 else t


def _down(t: Any) -> Any:
    return t.half() if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t


class FloatPartials(TorchDispatchMode):
    """Inside it, an fp16 product is computed in fp32 and rounded to fp16 once (see the module docstring)."""

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func in PRODUCTS and any(isinstance(a, torch.Tensor) and a.dtype == torch.float16
                                    for a in tree_leaves((args, kwargs))):
            up_args, up_kwargs = tree_map(_up, (args, kwargs))
            return tree_map(_down, func(*up_args, **up_kwargs))
        return func(*args, **kwargs)


# the products PyTorch does not promote (a float32 operand beside a float16 one is an error there): PopTorch 3's
# dispatcher upcasts their float16 operands to float32, "in accordance with normal PyTorch behaviour" for the ops that
# do promote (graphcore/poptorch, docs/user_guide/supported_ops.rst, "16-bit float migration")
_NO_PROMOTION = {torch.matmul, torch.mm, torch.bmm, torch.addmm, torch.baddbmm, torch.addbmm, torch.mv, torch.addmv,
                 torch.dot, torch.einsum, torch.tensordot, torch.nn.functional.linear, torch.nn.functional.bilinear,
                 torch.nn.functional.conv1d, torch.nn.functional.conv2d, torch.nn.functional.conv3d,
                 torch.nn.functional.conv_transpose1d, torch.nn.functional.conv_transpose2d,
                 torch.nn.functional.conv_transpose3d, torch.nn.functional.scaled_dot_product_attention,
                 torch.nn.functional.layer_norm, torch.nn.functional.group_norm, torch.nn.functional.batch_norm,
                 torch.nn.functional.instance_norm, torch.nn.functional.embedding,
                 torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.__rmatmul__, torch.Tensor.mm,
                 torch.Tensor.bmm, torch.Tensor.mv, torch.Tensor.dot}


def _mixed(values: Any) -> bool:
    dtypes = {t.dtype for t in tree_leaves(values) if isinstance(t, torch.Tensor) and t.dim()}
    return torch.float16 in dtypes and torch.float32 in dtypes


class MixedUpcast(TorchFunctionMode):
    """Inside it, a matrix product, convolution or normalisation given a float32 operand beside a float16 one
    computes in float32,
    as PopTorch 3 runs it on the IPU (see ``_NO_PROMOTION``); PyTorch on a CPU refuses the mix."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func in _NO_PROMOTION and _mixed((args, kwargs)):
            args, kwargs = tree_map(_up, (args, kwargs))
        return func(*args, **kwargs)


def wants_float_partials(model: torch.nn.Module, args: tuple[Any, ...]) -> bool:
    """A model with fp16 weights, or fp16 inputs: its products are fp16 ones."""
    return any(p.dtype == torch.float16 for p in model.parameters()) or any(
        isinstance(a, torch.Tensor) and a.dtype == torch.float16 for a in tree_leaves(args))


__all__ = ["FloatPartials", "MixedUpcast", "PRODUCTS", "wants_float_partials"]
