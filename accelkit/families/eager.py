"""Eager PyTorch on an accelerator: every ATen op is its own kernel, issued by the host one after another.

What a learner runs first on a GPU (``model.cuda()``, ``torch.autocast``, ``loss.backward()``) differs from
what a compiler or a serving engine runs in three ways this module models, from the captured graph:

1. **Who issues the kernels.** The host runs the model's Python and PyTorch's dispatcher for every op, views
   included, and launches each kernel. The GPU works through the queue in order; a kernel starts when the GPU is
   free and the host has issued it. A step ends when both have finished: with a small batch the host is the
   bound (BERT-base's forward takes about the same time at batch 1 and 32), with a large one the GPU.
2. **What eager execution moves.** Every op reads its inputs from HBM and writes its result back: nothing is
   fused. Under autocast (a 16-bit precision over fp32 weights, the mixed-precision recipe) each matmul's fp32
   inputs are cast first (a kernel each), the weights every step; ops on autocast's fp32 list (normalization,
   softmax, losses) run in fp32, and what follows them stays in fp32; the optimizer updates fp32 master weights.
3. **Kernel shapes** (:mod:`accelkit.cost.gemm`), as every GPU stack has them.

:func:`eager_ops` lists one section's ops as :class:`EagerOp` values; :func:`issue` runs the host and the GPU
queue against each other. Both are pure functions of the compiled program.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from accelkit.cost.gemm import GemmShape, alignment
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import kernel_time
from accelkit.cost.report import KernelTime
from accelkit.graph.cost import GATHER_OPS, MATMUL_KINDS, VIEW_OPS, WeightShapes
from accelkit.graph.ir import DTYPE_BYTES, Node

ATTENTION_KINDS = frozenset(k for k in MATMUL_KINDS if "attention" in k)
"""Fused attention kernels (PyTorch's scaled_dot_product_attention: FlashAttention on a GPU)."""

AUTOCAST_FP32 = frozenset({
    "layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "rms_norm", "_fused_rms_norm",
    "softmax", "_softmax", "log_softmax", "_log_softmax", "cross_entropy_loss", "nll_loss", "nll_loss_forward",
    "nll_loss2d", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits",
    "kl_div", "exp", "log", "log1p", "expm1", "pow", "rsqrt", "reciprocal", "sum", "prod", "cumsum", "cumprod",
    "logsumexp", "norm", "linalg_vector_norm", "softplus", "acos", "asin", "cosh", "sinh", "tan", "erfinv",
    "native_layer_norm_backward", "_softmax_backward_data", "_log_softmax_backward_data", "nll_loss_backward",
    "native_group_norm_backward",
})
"""Ops CUDA autocast runs in fp32 (PyTorch documentation, "Automatic Mixed Precision package", CUDA ops that
can autocast to float32), with their backward ops."""

ROW_KERNELS = frozenset({"layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "rms_norm",
                         "_fused_rms_norm"})
"""Ops whose eager CUDA kernel normalizes row by row (PyTorch's layer-norm and group-norm kernels: a block reduces a
row, then writes it): the ``"rows"`` access. (Its softmax over rows of 512 runs at the memory's rate, measured on an
H200: benchmarks/gpu/eager_bandwidth.py.)"""

POINTWISE = frozenset({
    "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "where", "masked_fill", "masked_fill_",
    "addcmul", "addcdiv", "maximum", "minimum", "clamp", "clamp_min", "clamp_max", "neg", "relu", "gelu", "silu",
    "tanh", "sigmoid", "threshold_backward", "gelu_backward", "silu_backward", "tanh_backward", "sigmoid_backward",
})
"""Elementwise ops PyTorch runs through its TensorIterator loops (CUDALoops.cuh): one of them whose floating
operands differ in dtype takes the unrolled kernel."""

ACCESS = {
    "vector": "contiguous operands of one dtype: PyTorch's vectorized elementwise kernels, at the memory's rate",
    "unrolled": "operands of different dtypes (autocast's fp32 residual stream plus a 16-bit output): PyTorch casts "
                "each element as it loads it, in its unrolled, unvectorized kernel (CUDALoops.cuh, gpu_kernel_impl: "
                "needs_dynamic_casting)",
    "rows": "a layer or group norm, row by row (ROW_KERNELS)",
}
"""How an eager op's kernel walks memory: the classes the GPU family gives a bandwidth each."""

_FOLLOWS_INPUT = frozenset({"batch_norm", "_native_batch_norm_legit_no_training", "_native_batch_norm_legit",
                            "native_batch_norm", "_native_batch_norm_legit_functional", "native_batch_norm_backward"})
# no kernel at all: shape and metadata queries, profiler markers, Python-level bookkeeping
_NO_KERNEL = VIEW_OPS | frozenset({"getitem", "_record_function_enter_new", "_record_function_exit",
                                   "_local_scalar_dense", "item", "_assert_tensor_metadata", "sym_size"})


@dataclass(frozen=True)
class EagerOp:
    """One op as eager PyTorch runs it on the chip: its work at the step's batch and precision."""

    name: str
    kernel: str  # the compiled program's kernel it belongs to ("" for ops a compiler removes; "casts")
    kind: str
    section: str
    flops: float
    act_bytes: float  # activations read and written
    param_bytes: float  # weights read
    runs_kernel: bool  # False: a view or a query, host work only
    gemm: GemmShape | None = None
    attention: tuple[int, int] | None = None  # (sequences x heads, queries) of a fused attention kernel
    access: str = "vector"  # how its kernel walks memory: "vector", "unrolled" or "rows" (ACCESS)

    @property
    def bytes(self) -> float:
        return self.act_bytes + self.param_bytes


def _dims(n: Node) -> tuple[int, int, int, int] | None:
    """(M, N, K, batch) of a matmul-type node at the captured batch, from its input and output shapes."""
    ins = [tuple(t.shape) for t in n.inputs]
    out = tuple(n.outputs[0].shape) if n.outputs else ()
    try:
        if n.kind in ("mm",) and len(ins) >= 2:
            return ins[0][0], ins[1][1], ins[0][1], 1
        if n.kind == "addmm" and len(ins) >= 3:
            return ins[1][0], ins[2][1], ins[1][1], 1
        if n.kind in ("bmm", "baddbmm") and len(ins) >= 2:
            a, b = ins[-2], ins[-1]
            return a[-2], b[-1], a[-1], a[0]
        if n.kind in ("linear", "matmul") and len(ins) >= 2:
            x, w = ins[0], ins[1]
            k = x[-1]
            if n.kind == "linear":
                return max(1, math.prod(x) // max(1, k)), w[0], k, 1
            if len(w) == 2:
                return max(1, math.prod(x) // max(1, k)), w[-1], k, 1
            return x[-2], w[-1], k, max(1, math.prod(out[:-2]))
        if n.kind in ("conv1d", "conv2d", "conv3d", "convolution", "_convolution") and len(ins) >= 2 and out:
            w = ins[1]
            return max(1, math.prod(out) // max(1, out[1])), w[0], max(1, math.prod(w[1:])), 1
        if n.kind == "convolution_backward" and len(ins) >= 3:
            g, w = ins[0], ins[2]
            return max(1, math.prod(g) // max(1, g[1])), w[0], max(1, math.prod(w[1:])), 1
    except (IndexError, TypeError, ValueError):
        return None
    return None


def weight_grad(n: Node, param_shapes: WeightShapes) -> bool:
    """True for a backward matmul that computes a weight's gradient (its output has the weight's shape)."""
    out = tuple(n.outputs[0].shape) if n.outputs else ()
    return n.section == "bckwd" and (param_shapes.fixed(out, n.name) or param_shapes.fixed(out[::-1], n.name))


def gemm_of(n: Node, scale: float, param_shapes: WeightShapes) -> GemmShape | None:
    d = _dims(n)
    if d is None:
        return None
    m, nn_, k, b = d
    is_weight_grad = weight_grad(n, param_shapes)
    conv = n.kind in CONV_KINDS  # cuDNN pads a convolution's channels itself
    if is_weight_grad:  # dW = dY^T X: the tokens are the contraction; the rows are the weight's two sides
        return GemmShape(m, nn_, max(1, round(k * scale)), b, 16 if conv else alignment(m, nn_))
    aligned = 16 if conv else alignment(nn_, k)  # the token count is never a row stride
    if b > 1:  # a batched matmul (attention's): the sequences multiply the batch
        return GemmShape(m, nn_, k, max(1, round(b * scale)), aligned)
    return GemmShape(max(1, round(m * scale)), nn_, k, b, aligned)


CONV_KINDS = frozenset({"conv1d", "conv2d", "conv3d", "convolution", "_convolution", "convolution_backward"})


def _traffic(n: Node, scale: float, param_shapes: WeightShapes) -> tuple[float, float, float]:
    """(activation bytes at ``scale`` times the captured batch, weight bytes, bytes of weight-shaped tensors) one
    op reads and writes. A tensor shaped like a weight (a weight's gradient, a saved weight the backward pass
    reads) does not grow with the batch; a lookup reads only the rows it fetches."""
    reads = list(zip(n.inputs, n.param_inputs or [False] * len(n.inputs), strict=False))
    if n.kind in GATHER_OPS and reads:
        table = reads[0][0]
        fetched = sum(o.nbytes for o in n.outputs)
        reads = reads[1:]
        params = float(min(table.nbytes, fetched * scale)) if reads and n.param_inputs[:1] == [True] else 0.0
        act_extra = 0.0 if params else min(table.nbytes, fetched) * scale
    else:
        params, act_extra = 0.0, 0.0
    act = fixed = 0.0
    made_by = list(n.args) if len(n.args) == len(n.inputs) else [None] * len(n.inputs)
    if n.kind in GATHER_OPS and n.inputs:
        made_by = made_by[1:]
    for (t, is_param), producer in zip((*reads, *((o, False) for o in n.outputs)),
                                       (*made_by, *([n.name] * len(n.outputs))), strict=False):
        shape = tuple(t.shape)
        if is_param:
            params += t.nbytes
        elif param_shapes.fixed(shape, producer):
            fixed += t.nbytes
        else:
            act += t.nbytes * scale
    if n.kind in _TWO_PASS and n.inputs:  # statistics first, then normalize: the input is read twice
        act += n.inputs[0].nbytes * scale
    return act + act_extra, params, fixed


_TWO_PASS = frozenset({"_native_batch_norm_legit", "native_batch_norm", "_native_batch_norm_legit_functional",
                       "native_batch_norm_backward", "cudnn_batch_norm", "cudnn_batch_norm_backward"})
"""Batch norm in training (ATen's and cuDNN's kernels): one pass over the input for the batch statistics, a
second to normalize (and the same in backward, for the gradient's sums)."""


def eager_ops(graph: Any, kernels: list[Kernel], *, scale: float, low_bytes: int, autocast: bool,
              section: str) -> list[EagerOp]:
    """The ops of ``section`` as eager PyTorch runs them, in order: every node of the captured graph that the
    device runs (views and constants included), at ``scale`` times the captured batch, with autocast's casts.
    ``low_bytes`` is the bytes per element of the run's 16-bit (or 8-bit) precision; ``autocast`` is True when
    the model holds fp32 weights and the run computes in a lower precision."""
    owner = {name: k.name for k in kernels for name in k.nodes}
    fused_away = {name for k in kernels if k.runs_on != "device" for name in k.nodes}
    captured = max((DTYPE_BYTES.get(m.dtype, 4) for m in graph.params.values()), default=4)
    low = low_bytes if autocast else captured
    width: dict[str, int] = {name: DTYPE_BYTES.get(m.dtype, 4) for name, m in graph.inputs.items()}
    param_shapes = WeightShapes.of(graph)
    out: list[EagerOp] = []
    for n in graph.nodes:
        if n.section != section or n.name in fused_away:
            continue
        s = 1.0 if section == "opt" else scale
        produced = [width[a] for a in n.args if a in width]
        kind = n.kind
        if kind in _NO_KERNEL and not _active_dropout(n):
            width[n.name] = produced[0] if produced else captured
            out.append(EagerOp(n.name, owner.get(n.name, ""), kind, section, 0.0, 0.0, 0.0, False))
            continue
        act, params, fixed = _traffic(n, s, param_shapes)
        # a training dropout is one kernel (PyTorch's fused native_dropout): it draws the mask, writes the output,
        # and keeps the mask for the backward, a byte an element
        mask = float(sum(o.numel for o in n.outputs)) * s if kind == "dropout" else 0.0
        if kind in MATMUL_KINDS:
            w = low
            if autocast and section == "fwd":
                casts = [t for t, is_param in zip(n.inputs, n.param_inputs, strict=False) if is_param]
                act_in = [t for t, is_param in zip(n.inputs, n.param_inputs, strict=False) if not is_param]
                if act_in and (not produced or max(produced) > low):  # an fp32 activation is cast too
                    cast_bytes_a = act_in[0].numel * (captured + low) * s
                    out.append(EagerOp(f"{n.name}.cast", "casts", "_to_copy", section, 0.0, cast_bytes_a, 0.0,
                                       True))
                for t in casts:
                    out.append(EagerOp(f"{n.name}.cast_w", "casts", "_to_copy", section, 0.0, 0.0,
                                       float(t.numel * (captured + low)), True))
            params *= low / captured if section == "fwd" else 1.0
            act *= low / captured
            fixed *= low / captured
        elif kind in _FOLLOWS_INPUT:  # cuDNN's batch norm keeps its input's precision over fp32 statistics
            w = produced[0] if produced else low
            act *= w / captured
        elif section == "opt" or kind in AUTOCAST_FP32 or (produced and max(produced) > low) or any(n.param_inputs):
            w = captured
        else:
            w = low
            act *= low / captured
        act += fixed + mask  # weight-shaped tensors (a weight's gradient) are as large at any batch
        width[n.name] = w
        access = "vector"
        if kind in ROW_KERNELS:
            access = "rows"
        elif kind in POINTWISE and section != "opt":
            # type promotion, not autocast: an fp32 tensor meets a 16-bit one (or an fp32 weight) in one kernel
            access = "unrolled" if len(_float_widths(n, width, captured)) > 1 else "vector"
        gemm = gemm_of(n, s, param_shapes) if kind in MATMUL_KINDS and kind not in ATTENTION_KINDS else None
        attention = None
        if kind in ATTENTION_KINDS and n.inputs and len(n.inputs[0].shape) == 4:
            b, h, t, _d = n.inputs[0].shape
            attention = (max(1, round(b * h * s)), t)
        # an elementwise op on weight-shaped tensors (adding up a tied weight's gradients) does the same work at any
        # batch; a matmul's FLOPs grow with the tokens, whatever its output's shape
        fixed_work = kind not in MATMUL_KINDS and bool(n.outputs) and all(
            param_shapes.fixed(tuple(o.shape), n.name) for o in n.outputs)
        out.append(EagerOp(n.name, owner.get(n.name, "") or ("dropout" if mask else ""), kind, section,
                           n.flops * (1.0 if fixed_work else s), act, params, True, gemm, attention, access))
    if autocast and section == "bckwd":
        # each weight's gradient comes back through its cast: 16-bit -> the fp32 .grad (a kernel per weight)
        out += [EagerOp(f"{name}.grad_cast", "casts", "_to_copy", section, 0.0, 0.0, numel * (captured + low), True)
                for name, numel in _cast_weights(graph)]
    return out


def _float_widths(n: Node, width: dict[str, int], captured: int) -> set[int]:
    """The element widths of the floating-point tensors an op reads as eager PyTorch runs it (an integer or bool
    operand, a mask or an index, is not cast)."""
    if len(n.args) != len(n.inputs):
        return set()
    flags = list(n.param_inputs)[:len(n.inputs)] + [False] * max(0, len(n.inputs) - len(n.param_inputs))
    out = set()
    for a, t, is_param in zip(n.args, n.inputs, flags, strict=True):
        if not str(t.dtype).startswith(("float", "bfloat")):
            continue
        if is_param:
            out.add(captured)
        elif a in width:
            out.add(width[a])
    return out


def _active_dropout(n: Node) -> bool:
    """A dropout that runs a kernel: in training, with 0 < p < 1 (PyTorch returns the input itself otherwise; its
    call's p and train flag are the captured op's arguments)."""
    if n.kind != "dropout":
        return False
    args = n.extra.get("args") or []
    p, train = (args[1], args[2]) if len(args) >= 3 else (None, None)
    return bool(train) and isinstance(p, int | float) and 0.0 < float(p) < 1.0


def _cast_weights(graph: Any) -> list[tuple[str, int]]:
    """(node, elements) of every weight a forward matmul reads: what autocast casts to 16 bits each step."""
    return [(f"{n.name}.{i}", t.numel) for n in graph.nodes if n.section == "fwd" and n.kind in MATMUL_KINDS
            for i, (t, is_param) in enumerate(zip(n.inputs, n.param_inputs, strict=False)) if is_param]


@dataclass(frozen=True)
class Issued:
    """One section run eagerly: each kernel's GPU seconds, the host's seconds, and when the last one ended."""

    gpu_s: dict[str, float]  # per op name
    host_s: float  # the host's issue work, all of it
    step_s: float  # the section's wall time: the later of the host's and the GPU's last moment
    waits: float  # GPU seconds idle waiting for the host to issue the next kernel
    host_events: tuple[tuple[str, float, float], ...]  # (kernel, start, duration) of the host's issue work


def issue(ops: Iterable[EagerOp], gpu_time: Callable[[EagerOp], float],
          host_time: Callable[[EagerOp], float]) -> Issued:
    """The host issues the ops one after another (``host_time(op)`` each); the GPU runs each kernel when it is
    free and the kernel is issued.
    A training or serving loop runs step after step, so the host starts a step while the GPU still works on the
    one before: the step's time is the steady state, the second of two steps run back to back (the larger of the
    host's and the GPU's seconds, plus every stall where the GPU ran dry mid-step)."""
    ops = list(ops)
    host = gpu = 0.0
    times: dict[str, float] = {}
    spans: list[tuple[str, float, float]] = []
    waits = ends = 0.0
    for rep in range(2):
        first = max(host, gpu)
        origin = first if rep else 0.0  # the spans of the second step are timed from its start
        waits = 0.0
        spans = []
        for op in ops:
            start_h = host
            host += host_time(op)
            if spans and spans[-1][0] == op.kernel:  # one span for the ops of one kernel
                k, s0, _d = spans[-1]
                spans[-1] = (k, s0, host - origin - s0)
            else:
                spans.append((op.kernel, start_h - origin, host - start_h))
            if not op.runs_kernel:
                continue
            t = times[op.name] if rep else gpu_time(op)
            times[op.name] = t
            start = max(gpu, host)
            waits += start - gpu
            gpu = start + t
        if rep == 0:
            ends = max(host, gpu)
    step = max(host, gpu) - ends
    host_s = sum(host_time(op) for op in ops)
    return Issued(times, host_s, step, min(waits, step), tuple(spans))


LABELS = {"": "eager views and constants", "casts": "autocast casts"}
"""What the report calls the eager ops that belong to no compiled kernel (a view, a constant; autocast's casts)."""


def kernel_times(ops: list[EagerOp], issued: Issued, kernels: list[Kernel], *, section: str,
                 parts: Callable[[EagerOp], tuple[float, float]], units: Callable[[list[EagerOp]], str],
                 launch_s: float, peak: float) -> list[KernelTime]:
    """The report's rows for one section run eagerly: the ops grouped by the compiled kernel they belong to (their
    compute and memory seconds from ``parts``, their time on the chip's queue from ``issued``), one row for ops of no
    kernel, and one for the time the chip waited for the host."""
    by_kernel: dict[str, list[EagerOp]] = {}
    for op in ops:
        by_kernel.setdefault(op.kernel, []).append(op)
    named = {k.name: k for k in kernels}
    out: list[KernelTime] = []
    for key, group in by_kernel.items():
        run = [op for op in group if op.runs_kernel]
        c = sum(parts(op)[0] for op in run)
        m = sum(parts(op)[1] for op in run)
        t = sum(issued.gpu_s.get(op.name, 0.0) for op in run)
        flops = int(sum(op.flops for op in run))
        nbytes = int(sum(op.bytes for op in run))
        k = named.get(key)
        if k is not None:
            kt = kernel_time(k, units(run), c, m, 0.0, launch_s * len(run), peak, time=t)
            out.append(replace(kt, flops=flops, bytes=nbytes))
        elif run:
            launches = launch_s * len(run)
            shares = {"compute": c, "memory": m, "latency": launches}
            out.append(KernelTime(LABELS.get(key, key), "<eager>", section, f"{len(run)} ops", units(run), flops,
                                  nbytes, c, m, 0.0, launches, t, max(shares, key=lambda p: shares[p]),
                                  flops / t / peak if t > 0 else 0.0))
    if issued.waits > 0:
        out.append(KernelTime("waiting for the host (eager issue)", "<host>", section, f"{len(ops)} ops issued",
                              "host CPU", 0, 0, 0.0, 0.0, 0.0, issued.waits, issued.waits, "host", 0.0))
    return out


def host_events(issued: Issued) -> tuple[tuple[str, float, float], ...]:
    """The host's issue work as the timeline's host lane shows it: (what, start, seconds)."""
    return tuple((LABELS.get(k, k), t0, d) for k, t0, d in issued.host_events)


__all__ = ["ATTENTION_KINDS", "AUTOCAST_FP32", "LABELS", "EagerOp", "Issued", "eager_ops", "gemm_of", "host_events",
           "issue", "kernel_times"]
