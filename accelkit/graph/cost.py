"""Per-node cost: FLOPs from PyTorch's own flop registry, and accelkit's vector-op model for the rest.

PyTorch's ``FlopCounterMode`` counts matmul-type work (mm, addmm, bmm, convolution, attention)
and gives zero for elementwise ops, reductions, normalisation, softmax and embedding. Those ops
are what memory-bound accelerator kernels spend their time on, so accelkit counts them itself
with the per-element costs below. These counts are accelkit's own convention (illustrative; the
usual textbook counts), not a measurement.

Bytes: an op reads its tensor inputs and writes its outputs once; views move nothing; gathers
(embedding, index_select) read only the rows they fetch, not the whole table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode, conv_flop_count

from accelkit.graph.ir import TensorMeta

# Ops that only re-interpret a tensor's shape or strides: no FLOPs, no bytes moved.
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "unsqueeze", "squeeze",
    "slice", "select", "alias", "detach", "unflatten", "flatten", "as_strided", "split", "split_with_sizes",
    "chunk", "unbind", "narrow", "view_as", "expand_as", "lift_fresh_copy", "lift_fresh", "numpy_T",
    "contiguous", "dropout",  # dropout in eval is an identity; in training it is counted as elementwise below
    "sym_size", "sym_numel", "sym_stride", "_assert_tensor_metadata", "_assert_scalar",
    "device", "size", "stride", "dim", "is_same_size", "_has_compatible_shallow_copy_type",  # metadata only
})

# Per-output-element FLOPs for ops the registry counts as zero (accelkit's convention).
_ELEMENTWISE_1 = {
    "add", "sub", "mul", "div", "neg", "relu", "abs", "maximum", "minimum", "clamp", "clamp_min",
    "clamp_max", "where", "masked_fill", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
    "logical_or", "logical_not", "bitwise_and", "bitwise_or", "bitwise_not", "square", "reciprocal",
    "hardtanh", "leaky_relu", "threshold", "sign", "floor", "ceil", "round", "trunc", "remainder",
    "fmod", "lerp", "addcmul", "addcdiv", "rsub", "copy", "fill", "zero", "mul_", "add_", "triu", "tril",
    "relu6", "hardsigmoid", "hardswish", "sqrt", "rsqrt", "pow", "_foreach_add", "_foreach_mul",
    "threshold_backward", "le_", "masked_fill_", "clone", "_to_copy", "to",
}
_TRANSCENDENTAL = {  # exp/log/tanh-class functions: a few FLOPs each on vector units
    "exp": 4, "log": 4, "tanh": 4, "sigmoid": 4, "erf": 4, "sin": 4, "cos": 4, "silu": 5, "mish": 8,
    "gelu": 8, "elu": 5, "softplus": 5, "log1p": 4, "expm1": 4, "logsigmoid": 5,
    "gelu_backward": 12, "silu_backward": 8, "sigmoid_backward": 3, "tanh_backward": 3,
}
_PER_INPUT_ELEMENT = {  # reductions: one FLOP per input element (var/std about three)
    "sum": 1, "mean": 1, "amax": 1, "amin": 1, "max": 1, "min": 1, "argmax": 1, "argmin": 1,
    "prod": 1, "var": 3, "std": 3, "var_mean": 3, "norm": 2, "linalg_vector_norm": 2, "logsumexp": 5,
    "cumsum": 1, "any": 1, "all": 1, "nll_loss_forward": 1, "nll_loss": 1, "cross_entropy_loss": 6,
}
_NORMALISATION = {  # per element: mean, variance, normalise, scale, shift
    "layer_norm": 5, "native_layer_norm": 5, "rms_norm": 4, "_fused_rms_norm": 4, "group_norm": 5,
    "native_group_norm": 5, "batch_norm": 2, "_native_batch_norm_legit_no_training": 2,
    "_native_batch_norm_legit": 5, "native_batch_norm": 5, "_native_batch_norm_legit_functional": 5,
    "instance_norm": 5, "softmax": 5, "_softmax": 5, "log_softmax": 5, "_log_softmax": 5,
    "native_layer_norm_backward": 10, "_softmax_backward_data": 4, "_log_softmax_backward_data": 4,
    "native_batch_norm_backward": 10, "native_group_norm_backward": 10,
    "max_pool2d": 1, "max_pool2d_with_indices": 1, "avg_pool2d": 1, "adaptive_avg_pool2d": 1,
    "max_pool1d": 1, "avg_pool1d": 1, "adaptive_avg_pool1d": 1, "upsample_nearest2d": 0,
    "upsample_bilinear2d": 4,
}
# Data movement: gathers read only what they fetch.
GATHER_OPS = frozenset({"embedding", "index_select", "gather", "index", "take", "embedding_dense_backward",
                        "index_put", "scatter", "scatter_add", "index_add"})


@dataclass(frozen=True)
class WeightShapes:
    """Which tensors are weight-shaped: as large at any batch (a weight's gradient and what adds it up, a weight
    cast to 16 bits). ``shapes`` are the parameters' shapes. A parameter whose first dimension equals the example's
    batch (ViT's position embeddings, ``(1, 197, 768)``, captured at batch 1) has the shape of an activation too:
    for those ``ambiguous`` shapes a tensor is weight-shaped only when the node that made it is not in ``scaled``,
    the nodes whose outputs grow with the batch (:func:`batch_scaled`)."""

    shapes: frozenset[tuple[int, ...]]
    ambiguous: frozenset[tuple[int, ...]] = frozenset()
    scaled: frozenset[str] = frozenset()

    @classmethod
    def of(cls, graph: Any, nodes: list[Any] | None = None) -> WeightShapes:
        """The weight shapes of a captured graph (its ``nodes``, or the surviving ``nodes`` of a pass pipeline)."""
        shapes = frozenset(tuple(m.shape) for m in graph.params.values())
        first = next(iter(graph.inputs.values()), None)  # the example's batch: its first input's leading dimension
        batch = int(first.shape[0]) if first is not None and len(first.shape) > 1 else None
        ambiguous = frozenset(s for s in shapes if batch is not None and s
                              and (s[0] == batch or (len(s) == 2 and s[1] == batch)))
        scaled = batch_scaled(list(graph.nodes if nodes is None else nodes), set(graph.inputs)) | set(graph.inputs) \
            if ambiguous else frozenset()
        return cls(shapes, ambiguous, scaled)

    def __bool__(self) -> bool:
        return bool(self.shapes)

    def fixed(self, shape: tuple[int, ...], producer: str | None = None) -> bool:
        """Whether a tensor of ``shape`` made by node ``producer`` (None: not known) keeps its size at any batch."""
        if not _weight_shaped(shape, self.shapes):
            return False
        if _weight_shaped(shape, self.ambiguous):
            return producer is not None and producer not in self.scaled
        return True


def _weight_shaped(shape: tuple[int, ...], weight_shapes: frozenset[tuple[int, ...]]) -> bool:
    return shape in weight_shapes or (len(shape) == 2 and shape[::-1] in weight_shapes)


def batch_scaled(nodes: list[Any], inputs: set[str]) -> frozenset[str]:
    """The nodes whose outputs grow with the batch (the model's inputs aside): those reading a model input, or a node of this set, or a
    saved activation (a backward op's outside input that is not a parameter). A weight's gradient stored into
    its ``.grad`` (``new_empty_strided`` and the ``copy_`` into it) is not among them: it is as large at any batch."""
    scaled: set[str] = set()
    stores: set[str] = set()
    for n in nodes:
        if n.kind == "new_empty_strided":
            stores.add(n.name)
            continue
        if n.kind == "copy_" and n.args and n.args[0] in stores:
            continue
        params = n.param_inputs or [False] * len(n.args)
        if any(not is_param and (a in inputs or a in scaled or a.startswith("bckwd_input_"))
               for a, is_param in zip(n.args, params, strict=False)):
            scaled.add(n.name)
    return frozenset(scaled)


# Ops whose time on every architecture is dominated by the FLOP registry's work.
def matmul_dims(kind: str, inputs: list[Any]) -> tuple[int, int] | None:
    """(contraction, output features) of a matmul-type op from its input shapes: what a matrix unit's
    tile must hold (``K`` and ``N`` of ``(M, K) @ (K, N)``; for a convolution ``Cin/groups x kh x kw`` and
    ``Cout``). None where the op is not one of these or a shape is missing."""
    shapes = [tuple(getattr(t, "shape", ()) or ()) for t in inputs]
    try:
        if kind in ("mm", "bmm", "matmul") and len(shapes) >= 2:
            return int(shapes[0][-1]), int(shapes[1][-1])
        if kind == "linear" and len(shapes) >= 2:  # x (..., K) and weight (N, K)
            return int(shapes[0][-1]), int(shapes[1][0])
        if kind in ("addmm", "baddbmm") and len(shapes) >= 3:
            return int(shapes[1][-1]), int(shapes[2][-1])
        if kind in ("convolution", "_convolution", "conv1d", "conv2d", "conv3d") and len(shapes) >= 2:
            w = shapes[1]
            k = 1
            for d in w[1:]:
                k *= int(d)
            return k, int(w[0])
    except (IndexError, TypeError, ValueError):
        return None
    return None


MATMUL_KINDS = frozenset({
    "mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "einsum", "conv1d", "conv2d", "conv3d",
    "convolution", "_convolution", "conv_transpose1d", "conv_transpose2d", "convolution_backward",
    "scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention_for_cpu_backward", "tensordot", "bilinear", "addbmm",
    "_scaled_dot_product_efficient_attention_backward", "_scaled_dot_product_flash_attention_backward",
    # recurrent layers: their gates are products with the weights (cuDNN's and oneDNN's RNN kernels run GEMMs)
    "lstm", "gru", "rnn_tanh", "rnn_relu", "mkldnn_rnn_layer", "mkldnn_rnn_layer_backward", "_cudnn_rnn",
    "_cudnn_rnn_backward",
})


def short_kind(op: Any) -> str:
    """``aten.mm.default`` -> ``mm``; a Python callable -> its name."""
    name = getattr(op, "__name__", None) or str(op)
    if hasattr(op, "_schema"):
        name = op._schema.name.split("::")[-1]
    return name.split(".")[0]


def vector_flops(kind: str, inputs: list[TensorMeta], outputs: list[TensorMeta]) -> int:
    """accelkit's FLOP count for ops the registry counts as zero (see the module docstring)."""
    base = kind.rstrip("_") if kind.endswith("_") and not kind.startswith("_") else kind
    out_n = max((o.numel for o in outputs), default=0)
    in_n = max((i.numel for i in inputs), default=0)
    if base in _TRANSCENDENTAL:
        return _TRANSCENDENTAL[base] * out_n
    if base in _NORMALISATION:
        return _NORMALISATION[base] * max(out_n, in_n)
    if base in _PER_INPUT_ELEMENT:
        return _PER_INPUT_ELEMENT[base] * in_n
    if base in _ELEMENTWISE_1 or base.startswith("_foreach_"):
        if base in {"clone", "_to_copy", "to", "copy", "fill", "zero"}:
            return 0
        return out_n
    if base == "dropout" or base == "native_dropout":
        return out_n
    return 0


ATTENTION_KINDS = frozenset(k for k in MATMUL_KINDS if "attention" in k)


def attention_score_flops(kind: str, inputs: list[Any]) -> int:
    """The vector work an attention op does on its scores, which PyTorch's flop registry (its matmuls only) leaves
    out: the scale and the softmax forward (1 + 5 FLOPs per score), their backward (1 + 4) in a backward op, as
    this module counts ``mul``, ``softmax`` and ``_softmax_backward_data``. A fused attention kernel does it beside
    its matmuls; a chip that runs each op on its own (an IPU's vector units) pays it. 0 for any other op."""
    backward = kind.endswith("_backward")  # (grad_out, query, key, ...) where the forward takes (query, key, ...)
    if kind not in ATTENTION_KINDS or len(inputs) < 2 + backward:
        return 0
    q, k = (tuple(getattr(t, "shape", ()) or ()) for t in inputs[backward:2 + backward])
    if len(q) < 2 or len(k) < 2:
        return 0
    scores = math.prod(int(d) for d in q[:-1]) * int(k[-2])
    per = 1 + (_NORMALISATION["_softmax_backward_data"] if backward else _NORMALISATION["softmax"])
    return per * scores


def _to_meta(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device="meta")
    return x


def _key(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return ("T", tuple(x.shape), x.dtype)
    if isinstance(x, (list, tuple)):
        return tuple(_key(i) for i in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _key(v)) for k, v in x.items()))
    if isinstance(x, (int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout,
                      torch.memory_format)):
        return x
    return repr(type(x))


def grouped_conv_backward_flop(grad_out_shape: list[int], x_shape: list[int], w_shape: list[int], _bias: Any,
                               _stride: Any, _padding: Any, _dilation: Any, transposed: bool, _output_padding: Any,
                               groups: int, output_mask: list[bool], out_shape: Any = None, **_: Any) -> int:
    """FLOPs of ``aten.convolution_backward``, its weight gradient counted per group.

    PyTorch's own formula (``torch.utils.flop_counter.conv_backward_flop``, which says it skips "some details
    involving ... groups") counts the weight gradient of a grouped convolution as a dense one: every input channel
    against every output channel, ``groups`` times too many FLOPs (a depthwise 3 x 3 over 1,152 channels counted as
    1,152 dense ones). Each output channel of a grouped convolution sees ``C_in / groups`` input channels, so its
    weight gradient costs what its forward does: the dense count over ``groups``. The input gradient's count (from
    the weight's own shape) is right already and kept."""
    def t(shape: list[int]) -> list[int]:
        return [shape[1], shape[0], *shape[2:]]

    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        grad_w = out_shape[1]
        dense = (conv_flop_count(t(grad_out_shape), t(x_shape), t(grad_w)) if transposed
                 else conv_flop_count(t(x_shape), t(grad_out_shape), t(grad_w)))
        flops += dense // max(1, int(groups))
    return flops


def rnn_layer_backward_flop(input_shape: list[int], w_ih: list[int], w_hh: list[int], *_: Any, **__: Any) -> int:
    """FLOPs of one recurrent layer's backward (``aten.mkldnn_rnn_layer_backward``, which a CPU capture of
    ``nn.LSTM``/``nn.GRU``/``nn.RNN`` records; PyTorch's registry has no formula for it, so it counted 0): the
    input and weight gradients of the layer's two products, twice its forward's ``2 x steps x gates x (in +
    hidden)`` per sequence (the gates' ``w_ih`` is ``(gates x hidden, in)``, ``w_hh`` ``(gates x hidden, hidden)``)."""
    if len(w_ih) != 2 or len(w_hh) != 2 or not input_shape or not w_ih[1]:
        return 0
    rows = math.prod(input_shape) // w_ih[1]  # steps x sequences
    return 4 * rows * w_ih[0] * (w_ih[1] + w_hh[1])


FLOP_FORMULA_FIXES: dict[Any, Callable[..., int]] = {
    torch.ops.aten.convolution_backward: grouped_conv_backward_flop,
    torch.ops.aten.mkldnn_rnn_layer_backward: rnn_layer_backward_flop,
}
"""Formulas that replace PyTorch's flop registry's own, wherever accelkit counts FLOPs (``FlopCounterMode``'s
``custom_mapping``)."""


_REGISTRY_CACHE: dict[Any, int] = {}


def registry_flops(op: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """FLOPs PyTorch's flop registry counts for ``op(*args, **kwargs)``, run once on meta tensors.

    Composite ops (``linear``, ``matmul``, ``scaled_dot_product_attention``) decompose while they run,
    so they are counted by exactly the formulas ``FlopCounterMode`` uses. Results are cached by op,
    shapes and dtypes, which makes repeated blocks free.
    """
    try:
        key = (str(op), _key(args), _key(kwargs))
    except TypeError:
        key = None
    if key is not None and key in _REGISTRY_CACHE:
        return _REGISTRY_CACHE[key]
    margs = torch.utils._pytree.tree_map(_to_meta, args)
    mkwargs = torch.utils._pytree.tree_map(_to_meta, kwargs)
    try:
        with FlopCounterMode(display=False, custom_mapping=dict(FLOP_FORMULA_FIXES)) as counter:
            op(*margs, **mkwargs)
        flops = int(counter.get_total_flops())
    except Exception:  # an op the meta device cannot run: the vector model covers it
        flops = 0
    if key is not None:
        _REGISTRY_CACHE[key] = flops
    return flops


def node_bytes(kind: str, inputs: list[TensorMeta], outputs: list[TensorMeta]) -> tuple[int, int]:
    """(bytes_read, bytes_written) of one op under accelkit's traffic model."""
    if kind in VIEW_OPS:
        return 0, 0
    written = sum(o.nbytes for o in outputs)
    if kind in GATHER_OPS and inputs:
        # the table (the first input) is read only where indexed: the indices plus the fetched rows
        return sum(i.nbytes for i in inputs[1:]) + written, written
    return sum(i.nbytes for i in inputs), written


FLOAT_DTYPES = frozenset({"float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"})


def captured_element_bytes(graph: Any) -> int:
    """Bytes per element of the floating-point tensors a graph was captured with: its parameters' where it has
    any, else its floating inputs' (a ``nn.ReLU()`` on float16 data is a 2-byte graph), else 4.

    A compile at another precision scales the captured bytes by ``element_bytes(precision) / this`` once,
    so an fp16 compile moves the same bytes whether the example tensors were float32 or float16."""
    for metas in (list(graph.params.values()), list(graph.inputs.values())):
        floats = [m for m in metas if m.dtype in FLOAT_DTYPES and m.numel]
        if floats:
            biggest = max(floats, key=lambda m: m.numel)  # the dtype that holds most of the elements
            return biggest.nbytes // biggest.numel
    return 4


STANDARD_NAMESPACES = frozenset({"aten", "prims", "_operator", "operator", "builtins", "math", "higher_order",
                                 "torch"})
"""Op namespaces every accelerator compiler starts from. Python's own callables (operator.getitem on multi-output
ops, symbolic-size arithmetic) and higher-order ops (torch.cond, autocast regions) are graph structure."""


def is_custom_op(op: str) -> bool:
    """An op outside the standard namespaces: a C++ or ``torch.library`` extension (``namespace.op.overload``).
    Names without a namespace are graph structure: higher-order ops (``wrap_with_set_grad_enabled``)."""
    namespace, dot, _ = op.partition(".")
    return bool(dot) and namespace not in STANDARD_NAMESPACES and not op.startswith("<")
