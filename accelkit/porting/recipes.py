"""The rewrite recipes ``ak.port`` applies, one per kind of fix, each with its stated tolerance.

A recipe rewrites a (deep-copied) model where a :class:`~accelkit.porting.Finding` asks for it,
and says what it changed. Three techniques, from the most to the least surgical:

- **module swap**: replace one ``nn.Module`` by an equivalent one (``nn.LSTM`` -> :class:`UnrolledRNN`,
  ``nn.GELU()`` -> ``nn.GELU(approximate="tanh")``); parameter names are kept, so checkpoints still load;
- **op rewrite inside one module**: wrap the module in :class:`OpRewrite`, which runs its forward
  under a ``TorchFunctionMode`` that swaps one function for another (``torch.einsum`` -> a
  ``permute``/``reshape``/``bmm`` chain). It sees calls made from plain functions too (transformers'
  ``GELUActivation`` calls ``nn.functional.gelu``), and ``torch.export`` traces through it;
- **wrapper around the whole model**: change what goes in or comes out (pad to a bucket, compute the
  loss in forward, clone inputs, keep only tensor outputs, explore both sides of an ``if``).

Every recipe states its tolerance: how far its outputs may drift from the model before it, and why.
``ak.port`` measures the drift on the example inputs and fresh random ones and refuses (``PortError``)
a rewrite that goes beyond it.
"""

from __future__ import annotations

import math
import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_unflatten

from accelkit.errors import PortError
from accelkit.graph.values import tensor_leaves
from accelkit.porting.check import Finding


# ------------------------------------------------------------------------------------------
# values: tolerance, change, the context recipes share
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tolerance:
    """Outputs ``y`` of a rewrite pass when ``|y - y_ref| <= atol + rtol * |y_ref|`` everywhere."""

    atol: float
    rtol: float = 0.0
    why: str = ""

    def __add__(self, other: Tolerance) -> Tolerance:  # to first order, independent errors add
        return Tolerance(self.atol + other.atol, self.rtol + other.rtol, "sum of the recipes' tolerances")

    def allows(self, got: torch.Tensor, ref: torch.Tensor) -> bool:
        return bool(((got - ref).abs() <= self.atol + self.rtol * ref.abs()).all())

    def __str__(self) -> str:
        parts = [f"atol {self.atol:.0e}"] + ([f"rtol {self.rtol:.0e}"] if self.rtol else [])
        return " + ".join(parts) if (self.atol or self.rtol) else "exact (0)"


@dataclass(frozen=True)
class Change:
    """One rewrite ``ak.port`` made: which recipe, what it did, in which module, for which line."""

    recipe: str
    what: str
    module: str
    source: str | None
    max_abs_error: float | None = None  # measured for the recipe's step, against the model before it


@dataclass
class Sample:
    """One set of inputs: forward's positional and keyword arguments, and labels (loss-in-forward)."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    labels: Any = None


@dataclass
class PortContext:
    """What recipes share: the target, user options, and how the ported model's inputs are made."""

    spec: Any
    dynamic_dims: dict[int | str, list[int]] | None = None
    buckets: tuple[int, ...] | None = None
    pad_value: float = 0
    loss_fn: Callable[..., torch.Tensor] | None = None
    transforms: list[Callable[[Sample], Sample]] = field(default_factory=list)  # original -> ported inputs
    ref_hooks: list[Callable[[Any, Sample], Any]] = field(default_factory=list)  # reference outputs, adjusted

    def convert(self, sample: Sample) -> Sample:
        for t in self.transforms:
            sample = t(sample)
        return sample


@dataclass(frozen=True)
class Recipe:
    """A named rewrite with its tolerance; ``apply(model, findings, ctx) -> (model, changes)``."""

    name: str
    summary: str
    tolerance: Tolerance
    apply: Callable[[nn.Module, list[Finding], PortContext], tuple[nn.Module, list[Change]]]
    then: str | None = None  # the recipe to try when this one is applied and its finding remains


# ------------------------------------------------------------------------------------------
# module surgery helpers
# ------------------------------------------------------------------------------------------
def _path(finding_module: str) -> str:
    return "" if finding_module in ("", "<root>", "<input>", "<model>") else finding_module


def replace_module(root: nn.Module, path: str, new: nn.Module) -> nn.Module:
    """Put ``new`` at ``path`` inside ``root`` (``""`` = the root itself); returns the (new) root."""
    if not path:
        return new
    parent_path, _, attr = path.rpartition(".")
    parent = root.get_submodule(parent_path) if parent_path else root
    setattr(parent, attr, new)
    return root


def _get(root: nn.Module, path: str) -> nn.Module | None:
    try:
        return root.get_submodule(path) if path else root
    except AttributeError:
        return None


def _map_tensors(fn: Callable[[torch.Tensor], torch.Tensor], value: Any) -> Any:
    leaves, spec = tree_flatten(value)
    return tree_unflatten([fn(x) if isinstance(x, torch.Tensor) else x for x in leaves], spec)


# ------------------------------------------------------------------------------------------
# op rewrites: a TorchFunctionMode per rewrite, applied by OpRewrite around one module
# ------------------------------------------------------------------------------------------
class _TanhGelu(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        if func is F.gelu and kwargs.get("approximate", "none") == "none":
            kwargs = {**kwargs, "approximate": "tanh"}
        return func(*args, **kwargs)


def _baddbmm(input: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor, *, beta: float = 1,
             alpha: float = 1) -> torch.Tensor:
    out = torch.bmm(batch1, batch2)  # (B, n, m) @ (B, m, p) -> (B, n, p)
    if alpha != 1:
        out = out * alpha
    if beta != 0:  # beta == 0 ignores input entirely (even NaN), as torch.baddbmm does
        out = out + (input if beta == 1 else input * beta)
    return out


class _Matmul(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        if func is torch.einsum:
            return einsum_as_matmul(*args, **kwargs)
        if func in (torch.baddbmm, torch.Tensor.baddbmm):
            return _baddbmm(*args, **kwargs)
        return func(*args, **kwargs)


class _KeepOnDevice(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if func is torch.Tensor.item:
            return args[0].reshape(())  # the value stays a 0-dim tensor on the device
        return func(*args, **(kwargs or {}))


def _nll_int32(logp: torch.Tensor, target: torch.Tensor, ignore_index: int = -100,
               reduction: str = "mean") -> torch.Tensor:
    """NLL loss with int32 targets: a one-hot mask by comparison instead of a gather on int64 indices."""
    classes = torch.arange(logp.shape[1], dtype=target.dtype, device=logp.device)
    classes = classes.view(1, -1, *([1] * (target.dim() - 1)))  # (1, C, 1, ...)
    picked = (logp * (target.unsqueeze(1) == classes)).sum(1)  # (N, C, ...) -> (N, ...)
    valid = target != ignore_index
    loss = -picked * valid
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / valid.to(logp.dtype).sum()


class _Narrow(TorchFunctionMode):
    """Ask for ``dst`` wherever code asks for ``src`` (``dtype=`` arguments, ``.double()``, ``.long()``, ``.to``)."""

    def __init__(self, src: torch.dtype, dst: torch.dtype) -> None:
        super().__init__()
        self.src, self.dst = src, dst

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = dict(kwargs or {})
        src, dst = self.src, self.dst
        if kwargs.get("dtype") is src:
            kwargs["dtype"] = dst
        args = tuple(dst if a is src else a for a in args)
        if (src is torch.float64 and func is torch.Tensor.double) or (src is torch.int64 and func is torch.Tensor.long):
            return args[0].to(dst)
        if src is torch.int64:
            if func is torch.arange and "dtype" not in kwargs and all(
                    isinstance(a, int) and not isinstance(a, bool) for a in args):
                kwargs["dtype"] = dst  # torch.arange(n) defaults to int64
            if func in (torch.cumsum, torch.Tensor.cumsum, torch.sum, torch.Tensor.sum) and args \
                    and isinstance(args[0], torch.Tensor) and "dtype" not in kwargs \
                    and not args[0].is_floating_point() and not args[0].is_complex():
                kwargs["dtype"] = dst  # integer and bool sums promote to int64 unless told otherwise
            if func in (F.cross_entropy, F.nll_loss) and len(args) > 1 and args[1].dtype is dst:
                return self._loss(func, *args, **kwargs)
        return func(*args, **kwargs)

    @staticmethod
    def _loss(func: Any, input: torch.Tensor, target: torch.Tensor, weight: Any = None, size_average: Any = None,
              ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
              label_smoothing: float = 0.0) -> torch.Tensor:
        if weight is not None or size_average is not None or reduce is not None or label_smoothing:
            kw = {"label_smoothing": label_smoothing} if func is F.cross_entropy else {}
            return func(input, target.long(), weight, size_average, ignore_index, reduce, reduction, **kw)
        logp = F.log_softmax(input, dim=1) if func is F.cross_entropy else input
        return _nll_int32(logp, target, ignore_index, reduction)


_MODES: dict[str, Callable[[], TorchFunctionMode]] = {
    "tanh-gelu": _TanhGelu,
    "einsum-to-matmul": _Matmul,
    "keep-on-device": _KeepOnDevice,
    "float64-to-float32": lambda: _Narrow(torch.float64, torch.float32),
    "int64-to-int32": lambda: _Narrow(torch.int64, torch.int32),
}


class OpRewrite(nn.Module):
    """Run ``inner`` with one function swapped for another (see ``_MODES``); parameters untouched."""

    def __init__(self, inner: nn.Module, rewrite: str) -> None:
        super().__init__()
        if rewrite not in _MODES:
            raise ValueError(f"unknown rewrite {rewrite!r}; known: {sorted(_MODES)}")
        self.inner = inner
        self.rewrite = rewrite

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        with _MODES[self.rewrite]():
            return self.inner(*args, **kwargs)

    def extra_repr(self) -> str:
        return f"rewrite={self.rewrite!r}"


# ------------------------------------------------------------------------------------------
# einsum as permute / reshape / bmm
# ------------------------------------------------------------------------------------------
def _sum_out(t: torch.Tensor, term: str, drop: Sequence[str]) -> tuple[torch.Tensor, str]:
    if not drop:
        return t, term
    t = t.sum(dim=[term.index(c) for c in drop])
    return t, "".join(c for c in term if c not in drop)


def _contract(ta: str, a: torch.Tensor, tb: str, b: torch.Tensor, keep: set[str]) -> tuple[str, torch.Tensor]:
    a, ta = _sum_out(a, ta, [c for c in ta if c not in tb and c not in keep])
    b, tb = _sum_out(b, tb, [c for c in tb if c not in ta and c not in keep])
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]
    a = a.permute([ta.index(c) for c in batch + left + contract])  # (batch..., left..., contract...)
    b = b.permute([tb.index(c) for c in batch + contract + right])  # (batch..., contract..., right...)
    nb = len(batch)
    bs = [max(a.shape[i], b.shape[i]) for i in range(nb)]  # broadcast size-1 batch dims
    a = a.expand(*bs, *a.shape[nb:])
    b = b.expand(*bs, *b.shape[nb:])
    ls, cs, rs = list(a.shape[nb:nb + len(left)]), list(a.shape[nb + len(left):]), list(b.shape[nb + len(contract):])
    B, L, K, R = math.prod(bs), math.prod(ls), math.prod(cs), math.prod(rs)
    out = torch.bmm(a.reshape(B, L, K), b.reshape(B, K, R))  # (B, L, K) @ (B, K, R) -> (B, L, R)
    return "".join(batch + left + right), out.reshape([*bs, *ls, *rs])


def einsum_as_matmul(equation: str, *operands: Any) -> torch.Tensor:
    """``torch.einsum`` written with ``permute``, ``reshape``, ``sum`` and ``torch.bmm`` only.

    Handles any number of operands (contracted left to right), ``...`` and implicit output.
    Repeated indices within one operand (diagonals, ``"ii->i"``) are refused with ``PortError``.
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise PortError(f"einsum {equation!r} has {len(terms)} terms but {len(operands)} operands",
                        recipe="einsum-to-matmul")
    used = set(eq)
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used]
    n_ell = max((op.dim() - (len(t) - 3) for t, op in zip(terms, operands, strict=True) if "..." in t), default=0)
    ell = "".join(spare[:n_ell])
    terms = [t.replace("...", ell[n_ell - (op.dim() - (len(t) - 3)):]) if "..." in t else t
             for t, op in zip(terms, operands, strict=True)]
    if arrow:
        out = out.replace("...", ell)
    else:  # implicit output: the ellipsis, then letters used once, in alphabetical order
        letters = "".join(terms)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    for t in terms:
        if len(set(t)) != len(t):
            raise PortError(f"einsum {equation!r} takes a diagonal (index repeated in one operand); "
                            "the matmul rewrite does not cover it", recipe="einsum-to-matmul",
                            fix="write the diagonal with torch.diagonal first")
    cur_t, cur = terms[0], operands[0]
    for i in range(1, len(terms)):
        keep = set(out) | set("".join(terms[i + 1:]))
        cur_t, cur = _contract(cur_t, cur, terms[i], operands[i], keep)
    cur, cur_t = _sum_out(cur, cur_t, [c for c in cur_t if c not in out])
    return cur.permute([cur_t.index(c) for c in out]) if cur_t != out else cur


# ------------------------------------------------------------------------------------------
# nn.LSTM / nn.GRU / nn.RNN unrolled into per-step cell ops
# ------------------------------------------------------------------------------------------
class UnrolledRNN(nn.Module):
    """A drop-in for ``nn.LSTM``/``nn.GRU``/``nn.RNN`` that loops over time in Python, so the graph
    holds one cell's matmuls and activations per time step instead of one fused recurrent op.

    The parameters are the original module's, under the same names (``weight_ih_l0``...), so a
    state dict loads into either. ``proj_size`` and ``PackedSequence`` inputs are not covered.
    The sequence length is fixed at capture time (one graph per length), as unrolling implies.
    """

    def __init__(self, rnn: nn.RNNBase) -> None:
        super().__init__()
        if getattr(rnn, "proj_size", 0):
            raise PortError("LSTM with proj_size is not covered by the unroll recipe", recipe="unroll-rnn")
        self.mode = rnn.mode  # "LSTM" | "GRU" | "RNN_TANH" | "RNN_RELU"
        self.hidden_size, self.num_layers = rnn.hidden_size, rnn.num_layers
        self.bias, self.batch_first = rnn.bias, rnn.batch_first
        self.dropout, self.bidirectional = float(rnn.dropout), rnn.bidirectional
        for name, p in rnn.named_parameters():
            self.register_parameter(name, p)

    def _cell(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor | None, sfx: str) -> tuple[torch.Tensor, Any]:
        w_ih, w_hh = getattr(self, "weight_ih" + sfx), getattr(self, "weight_hh" + sfx)
        b_ih = getattr(self, "bias_ih" + sfx) if self.bias else None
        b_hh = getattr(self, "bias_hh" + sfx) if self.bias else None
        gi, gh = F.linear(x, w_ih, b_ih), F.linear(h, w_hh, b_hh)  # (B, I) -> (B, G*H), (B, H) -> (B, G*H)
        if self.mode == "LSTM" and c is not None:
            i, f, g, o = (gi + gh).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            return torch.sigmoid(o) * torch.tanh(c), c
        if self.mode == "GRU":
            r_i, z_i, n_i = gi.chunk(3, 1)
            r_h, z_h, n_h = gh.chunk(3, 1)
            r, z = torch.sigmoid(r_i + r_h), torch.sigmoid(z_i + z_h)
            n = torch.tanh(n_i + r * n_h)
            return (1 - z) * n + z * h, None
        return (torch.tanh(gi + gh) if self.mode == "RNN_TANH" else torch.relu(gi + gh)), None

    def forward(self, input: torch.Tensor, hx: Any = None) -> tuple[torch.Tensor, Any]:
        if not isinstance(input, torch.Tensor):
            raise PortError("UnrolledRNN takes a padded tensor, not a PackedSequence", recipe="unroll-rnn",
                            fix="pad the batch to one length (torch.nn.utils.rnn.pad_packed_sequence)")
        batched = input.dim() == 3
        x = input if batched else input.unsqueeze(0 if self.batch_first else 1)
        x = x.transpose(0, 1) if self.batch_first else x  # (T, B, I)
        T, B = x.shape[0], x.shape[1]
        D = 2 if self.bidirectional else 1
        zeros = x.new_zeros(self.num_layers * D, B, self.hidden_size)
        lstm = self.mode == "LSTM"
        if hx is None:
            h0, c0 = zeros, (zeros if lstm else None)
        else:
            h0, c0 = (hx if lstm else (hx, None))
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
        hn, cn = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                h = h0[layer * D + d]
                c = c0[layer * D + d] if c0 is not None else None
                steps: list[torch.Tensor | None] = [None] * T
                for t in (range(T - 1, -1, -1) if d else range(T)):
                    h, c = self._cell(x[t], h, c, sfx)
                    steps[t] = h
                outs.append(torch.stack(steps, 0))  # type: ignore[arg-type]  # (T, B, H)
                hn.append(h)
                if c is not None:
                    cn.append(c)
            x = torch.cat(outs, 2) if D == 2 else outs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        out = x.transpose(0, 1) if self.batch_first else x
        h_n = torch.stack(hn, 0)
        c_n = torch.stack(cn, 0) if lstm else None
        if not batched:
            out = out.squeeze(0 if self.batch_first else 1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        return out, ((h_n, c_n) if lstm else h_n)

    def extra_repr(self) -> str:
        return (f"mode={self.mode}, hidden_size={self.hidden_size}, num_layers={self.num_layers}, "
                f"bidirectional={self.bidirectional}, batch_first={self.batch_first}")


# ------------------------------------------------------------------------------------------
# whole-model wrappers
# ------------------------------------------------------------------------------------------
class _Decide(TorchFunctionMode):
    """Answer each ``bool(tensor)`` from a list of decisions, and remember the tensors asked about."""

    def __init__(self, decisions: list[bool]) -> None:
        super().__init__()
        self.decisions = decisions
        self.conds: list[torch.Tensor] = []

    limit = 64  # conditions asked in one forward: more means a loop on a tensor (`while t > 1:`), not an `if`

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if func is torch.Tensor.__bool__:
            self.conds.append(args[0])
            i = len(self.conds) - 1
            if i >= self.limit:
                raise PortError(f"forward asked for the truth of a tensor more than {self.limit} times in one call: "
                                "a loop whose condition is a tensor (`while t ...:`), which both-branches cannot "
                                "turn into torch.where (its number of steps depends on the data)",
                                recipe="where-for-if", where=_user_line(),
                                fix="bound the loop by a Python number of steps (for _ in range(N)) and select "
                                    "with torch.where inside it, or keep this part on the host")
            return self.decisions[i] if i < len(self.decisions) else True
        return func(*args, **(kwargs or {}))


def _user_line() -> str | None:
    """The innermost frame outside accelkit and torch: the user's source line asking the question."""
    skip = (os.sep + "accelkit" + os.sep, os.sep + "torch" + os.sep)
    for fr in reversed(traceback.extract_stack()):
        if not any(p in fr.filename for p in skip):
            return f"{fr.filename}:{fr.lineno}: {(fr.line or '').strip()}"
    return None


class BothBranches(nn.Module):
    """Replace each Python ``if`` on a tensor inside ``inner`` by ``torch.where`` over both branches.

    How: forward runs ``inner`` once per path through its ``if``s, answering each ``bool(tensor)``
    itself (True on one run, False on the other) instead of reading the value, then selects
    between the paths' outputs with ``torch.where(cond, out_true, out_false)``. The traced graph
    holds both branches and a select, which every graph compiler accepts.

    Limits, honestly: it costs one forward per path (2 for one ``if``, 4 for two nested ones; at most
    ``max_conditions`` decisions per path); both branches must return the same structure and shapes;
    a branch with side effects (in-place updates of buffers, e.g. BatchNorm running statistics in
    training) runs on every path; only ``bool(tensor)`` is intercepted (``int(t)``, ``float(t)`` and
    ``.item()`` are host syncs: the ``keep-on-device`` recipe covers ``.item()``). The condition
    must be one value for the whole call, as a Python ``if`` already forces it to be.
    """

    def __init__(self, inner: nn.Module, max_conditions: int = 4) -> None:
        super().__init__()
        self.inner = inner
        self.max_conditions = max_conditions

    def _path(self, prefix: list[bool], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with _Decide(prefix) as mode:
            out = self.inner(*args, **kwargs)
        if len(mode.conds) <= len(prefix):
            return out
        if len(prefix) >= self.max_conditions:
            raise PortError(f"more than {self.max_conditions} data-dependent branches in one forward",
                            recipe="where-for-if", fix="rewrite the branches with torch.where by hand")
        cond = mode.conds[len(prefix)]
        cond = cond if cond.dtype == torch.bool else cond != 0
        yes = self._path(prefix + [True], args, kwargs)
        no = self._path(prefix + [False], args, kwargs)
        ly, spec_y = tree_flatten(yes)
        ln, spec_n = tree_flatten(no)
        if spec_y != spec_n or any(isinstance(a, torch.Tensor) and a.shape != b.shape for a, b in zip(ly, ln, strict=True)):
            raise PortError("the two branches of an `if` return different structures or shapes, so torch.where "
                            "cannot select between them", recipe="where-for-if",
                            fix="make both branches return tensors of the same shape")
        return tree_unflatten([torch.where(cond, a, b) if isinstance(a, torch.Tensor) else a
                               for a, b in zip(ly, ln, strict=True)], spec_y)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._path([], args, kwargs)


class CloneInputs(nn.Module):
    """Give ``inner`` copies of its tensor inputs, so its in-place writes never reach the caller's tensors.

    Every tensor input is copied (``names`` only records which ones forward writes to); a compiler
    drops the copies of inputs that are never written.
    """

    def __init__(self, inner: nn.Module, names: Sequence[str]) -> None:
        super().__init__()
        self.inner = inner
        self.names = list(names)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        def copy(v: Any) -> Any:
            return v.clone() if isinstance(v, torch.Tensor) else v

        return self.inner(*[copy(a) for a in args], **{k: copy(v) for k, v in kwargs.items()})


class TensorOutputs(nn.Module):
    """Return only the tensors of ``inner``'s output (a tuple, or the tensor itself when there is one)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return tensor_leaves(self.inner(*args, **kwargs), single=True)


class PadToBucket(nn.Module):
    """Pad the declared variable dimensions up to the next bucket size, run ``inner``, cut the outputs back.

    One compiled program per bucket replaces one per length. Exact for models in which a position
    never sees later ones (causal attention, per-position layers); a model that mixes the whole
    sequence (mean pooling, bidirectional attention without a mask) changes its answer, and
    ``ak.port`` refuses the rewrite when it measures that.
    """

    def __init__(self, inner: nn.Module, dims: dict[int | str, list[int]], buckets: Sequence[int],
                 pad_value: float = 0) -> None:
        super().__init__()
        self.inner = inner
        self.dims = {k: list(v) for k, v in dims.items()}  # input position (or keyword) -> dims
        self.buckets = tuple(sorted(buckets))
        self.pad_value = pad_value

    def bucket(self, size: int) -> int:
        for b in self.buckets:
            if size <= b:
                return b
        raise PortError(f"length {size} is longer than the largest bucket {self.buckets[-1]}",
                        recipe="pad-to-bucket", fix="pass larger buckets= to ak.port")

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        pos, kw = list(args), dict(kwargs)
        cut: tuple[int, int, int] | None = None  # (dim, real size, bucket) to cut outputs back to
        for key, dims in self.dims.items():
            t = pos[key] if isinstance(key, int) else kw[key]
            for d in dims:
                size = t.shape[d]
                b = self.bucket(size)
                if b != size:
                    pad = [0, 0] * (t.dim() - 1 - d % t.dim()) + [0, b - size]  # F.pad lists the last dim first
                    t = F.pad(t, pad, value=self.pad_value)
                cut = cut or (d, size, b)
            if isinstance(key, int):
                pos[key] = t
            else:
                kw[key] = t
        out = self.inner(*pos, **kw)
        if cut is None or cut[1] == cut[2]:
            return out
        d, size, b = cut

        def back(x: torch.Tensor) -> torch.Tensor:
            return x.narrow(d, 0, size) if x.dim() > d and x.shape[d] == b else x

        return _map_tensors(back, out)


class WithLoss(nn.Module):
    """``forward(*inputs, labels) -> (output, loss)``: the loss inside the model, as PopTorch and SambaFlow want."""

    def __init__(self, inner: nn.Module, loss_fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.inner = inner
        self.loss_fn = loss_fn

    def forward(self, *args: Any) -> tuple[Any, torch.Tensor]:
        *inputs, labels = args
        out = self.inner(*inputs)
        return out, self.loss_fn(tensor_leaves(out)[0], labels)


# ------------------------------------------------------------------------------------------
# the recipes
# ------------------------------------------------------------------------------------------
def _where(f: Finding) -> str:
    return f.source or "?"


def _rewrite_in_modules(rewrite: str, what: str) -> Callable[[nn.Module, list[Finding], PortContext],
                                                              tuple[nn.Module, list[Change]]]:
    """A recipe that wraps each module a finding names in ``OpRewrite(rewrite)``."""

    def apply(model: nn.Module, findings: list[Finding], ctx: PortContext) -> tuple[nn.Module, list[Change]]:
        changes = []
        done: set[str] = set()
        for f in findings:
            for mod in f.modules or (f.module,):
                path = _path(mod)
                if path in done:
                    continue
                done.add(path)
                target = _get(model, path)
                if target is None:
                    raise PortError(f"module {path!r} named by the report is not in the model", recipe=rewrite)
                if rewrite == "tanh-gelu" and isinstance(target, nn.GELU):
                    target.approximate = "tanh"  # a module swap in place: nn.GELU has the switch built in
                    changes.append(Change(rewrite, "nn.GELU() -> nn.GELU(approximate='tanh')", path or "<root>",
                                          _where(f)))
                    continue
                model = replace_module(model, path, OpRewrite(target, rewrite))
                changes.append(Change(rewrite, f"{what} inside {type(target).__name__}", path or "<root>", _where(f)))
        return model, changes

    return apply


def _apply_unroll(model: nn.Module, findings: list[Finding], ctx: PortContext) -> tuple[nn.Module, list[Change]]:
    changes = []
    for f in findings:
        for mod in f.modules or (f.module,):
            path = _path(mod)
            rnn = _get(model, path)
            if not isinstance(rnn, nn.RNNBase):
                raise PortError(f"{f.op} at {_where(f)} is not an nn.LSTM/GRU/RNN module that can be swapped "
                                f"(found {type(rnn).__name__} at {path or '<root>'})", recipe="unroll-rnn",
                                fix="call the RNN as an nn.Module, or unroll it by hand")
            model = replace_module(model, path, UnrolledRNN(rnn))
            changes.append(Change("unroll-rnn", f"nn.{type(rnn).__name__} -> UnrolledRNN (per-step cell ops)",
                                  path or "<root>", _where(f)))
    return model, changes


def _cast_sample(src: torch.dtype, dst: torch.dtype) -> Callable[[Sample], Sample]:
    def cast(x: torch.Tensor) -> torch.Tensor:
        return x.to(dst) if x.dtype == src else x

    def transform(s: Sample) -> Sample:
        return Sample(_map_tensors(cast, s.args), _map_tensors(cast, s.kwargs), _map_tensors(cast, s.labels))

    return transform


def _narrowing(src: torch.dtype, dst: torch.dtype, name: str) -> Callable[[nn.Module, list[Finding], PortContext],
                                                                         tuple[nn.Module, list[Change]]]:
    """Cast parameters/buffers and inputs of ``src`` to ``dst``, and run forward asking for ``dst``."""

    def apply(model: nn.Module, findings: list[Finding], ctx: PortContext) -> tuple[nn.Module, list[Change]]:
        changes = []
        per_module: dict[str, int] = {}
        for mname, mod in model.named_modules():
            for p in list(mod.parameters(recurse=False)) + list(mod.buffers(recurse=False)):
                if p.dtype == src:
                    p.data = p.data.to(dst)
                    per_module[mname] = per_module.get(mname, 0) + 1
        for mname, n in per_module.items():
            changes.append(Change(name, f"{n} {src} parameter/buffer tensor(s) -> {dst}", mname or "<root>", None))
        for f in findings:
            if f.input_name:
                changes.append(Change(name, f"input {f.input_name}: pass {dst} (ak.port's convert_inputs does it)",
                                      "<input>", f.source))
        ctx.transforms.append(_cast_sample(src, dst))
        changes.append(Change(name, f"forward runs asking for {dst} wherever it asked for {src} (dtype=, "
                                    f"{'.double()' if src is torch.float64 else '.long(), arange, integer sums, losses'})",
                              "<root>", None))
        return OpRewrite(model, name), changes

    return apply


def _apply_where(model: nn.Module, findings: list[Finding], ctx: PortContext) -> tuple[nn.Module, list[Change]]:
    changes = []
    for f in findings:
        path = _path(f.module)
        target = _get(model, path)
        if target is None:
            raise PortError(f"module {path!r} is not in the model", recipe="where-for-if")
        model = replace_module(model, path, BothBranches(target))
        changes.append(Change("where-for-if", "Python `if` on a tensor -> both branches + torch.where",
                              path or "<root>", _where(f)))
    return model, changes


def _default_buckets(size: int) -> tuple[int, ...]:
    return tuple(2 ** k for k in range(3, 31) if 2 ** k < 4 * max(size, 8))


def _apply_pad(model: nn.Module, findings: list[Finding], ctx: PortContext) -> tuple[nn.Module, list[Change]]:
    dims = {key: list(d) for key, d in (ctx.dynamic_dims or {}).items()}
    if not dims:
        raise PortError("pad-to-bucket needs to know which dimensions vary", recipe="pad-to-bucket",
                        fix="pass dynamic_dims={'input_ids': 1} to ak.port")
    sizes = [int(f.op.rsplit("example size ", 1)[-1].rstrip(")")) for f in findings if "example size" in f.op]
    buckets = ctx.buckets or _default_buckets(max(sizes or [8]))
    wrapped = PadToBucket(model, dims, buckets, ctx.pad_value)
    ctx.dynamic_dims = None  # the ported model sees only bucket sizes: one program per bucket
    what = ", ".join(f.op.split(" (")[0] for f in findings) or ", ".join(
        f"input {n} dim {d}" for n, ds in dims.items() for d in ds)
    return wrapped, [Change("pad-to-bucket", f"pad {what} up to buckets {list(buckets)} (one program per bucket)",
                            "<root>", findings[0].source if findings else None)]


def _apply_loss(model: nn.Module, findings: list[Finding], ctx: PortContext) -> tuple[nn.Module, list[Change]]:
    loss_fn = ctx.loss_fn
    if loss_fn is None:
        raise PortError("the target wants the loss computed inside forward, but no loss function was given",
                        recipe="loss-in-forward", fix="ak.port(..., loss_fn=nn.CrossEntropyLoss(), labels=y)")

    def add_labels(s: Sample) -> Sample:
        if s.labels is None:
            raise PortError("loss-in-forward needs labels", recipe="loss-in-forward",
                            fix="ak.port(..., loss_fn=..., labels=y)")
        if s.kwargs:
            raise PortError("loss-in-forward passes inputs positionally; the model takes keyword inputs",
                            recipe="loss-in-forward")
        return Sample((*s.args, s.labels), {}, None)

    def reference(out: Any, s: Sample) -> Any:
        return out, loss_fn(tensor_leaves(out)[0], s.labels)

    ctx.transforms.append(add_labels)
    ctx.ref_hooks.append(reference)
    name = getattr(loss_fn, "__name__", type(loss_fn).__name__)
    return WithLoss(model, loss_fn), [Change("loss-in-forward", f"forward(*inputs, labels) -> (output, {name})",
                                             "<root>", findings[0].source if findings else None)]


def _apply_clone(model: nn.Module, findings: list[Finding], ctx: PortContext) -> tuple[nn.Module, list[Change]]:
    names = sorted({f.input_name for f in findings if f.input_name})
    return CloneInputs(model, names), [Change("out-of-place", f"in-place write to input {n} now writes a copy",
                                              "<root>", next((f.source for f in findings if f.input_name == n), None))
                                       for n in names or ["(all inputs)"]]


def _apply_outputs(model: nn.Module, findings: list[Finding], ctx: PortContext) -> tuple[nn.Module, list[Change]]:
    return TensorOutputs(model), [Change("tensor-outputs", "forward returns only the tensors of its output",
                                         "<root>", findings[0].source if findings else None)]


RECIPES: dict[str, Recipe] = {r.name: r for r in (
    Recipe("tensor-outputs", "keep only the tensors forward returns (drop caches and Python objects)",
           Tolerance(0.0, 0.0, "the same tensors, unchanged"), _apply_outputs),
    Recipe("keep-on-device", ".item() returns the 0-dim tensor instead of a Python number",
           Tolerance(1e-6, 1e-6, "the same arithmetic with a 0-dim tensor instead of a Python float; "
                                 "a Python float is double, the tensor float32, so the last bits may differ"),
           _rewrite_in_modules("keep-on-device", ".item() -> 0-dim tensor"),
           then="where-for-if"),  # `if t.item() > 0` becomes `if t > 0`: an `if` on a tensor,
    Recipe("where-for-if", "a Python `if` on a tensor -> both branches and torch.where",
           Tolerance(0.0, 0.0, "torch.where selects exactly the branch Python would have taken"), _apply_where),
    Recipe("tanh-gelu", "exact (erf) GELU -> tanh-approximated GELU",
           Tolerance(1e-3, 1e-3, "the two GELUs differ by at most ~5e-4 per element (|x| near 2); the layers "
                                 "after it carry that difference on, so the outputs get 1e-3 absolute and relative"),
           _rewrite_in_modules("tanh-gelu", "F.gelu(x) -> F.gelu(x, approximate='tanh')")),
    Recipe("einsum-to-matmul", "torch.einsum / baddbmm -> permute, reshape and torch.bmm",
           Tolerance(1e-5, 1e-5, "the same products summed in a different order (float32 reassociation)"),
           _rewrite_in_modules("einsum-to-matmul", "einsum/baddbmm -> permute + reshape + bmm")),
    Recipe("unroll-rnn", "fused nn.LSTM/GRU/RNN -> per-time-step cell ops (same parameters)",
           Tolerance(1e-5, 1e-5, "the same gate arithmetic as the fused kernel, summed in a different order"),
           _apply_unroll),
    Recipe("out-of-place", "clone inputs that forward writes into, so the write stays inside the graph",
           Tolerance(0.0, 0.0, "the same arithmetic on a copy"), _apply_clone),
    Recipe("loss-in-forward", "wrap the model so forward(inputs, labels) returns (output, loss)",
           Tolerance(1e-6, 1e-6, "the same loss function on the same output"), _apply_loss),
    Recipe("float64-to-float32", "parameters, inputs and float64 requests in forward -> float32",
           Tolerance(1e-5, 1e-4, "float32 keeps ~7 significant digits (unit roundoff 6e-8); a few layers of "
                                 "accumulation leave relative errors around 1e-6..1e-5"),
           _narrowing(torch.float64, torch.float32, "float64-to-float32")),
    Recipe("int64-to-int32", "indices, labels and int64 requests in forward -> int32",
           Tolerance(1e-6, 1e-6, "integers below 2**31 are exact in int32; losses over int32 labels use a "
                                 "one-hot mask instead of a gather, which sums in a different order"),
           _narrowing(torch.int64, torch.int32, "int64-to-int32")),
    Recipe("pad-to-bucket", "pad variable-length inputs to a fixed bucket, cut the outputs back",
           Tolerance(1e-5, 1e-5, "exact where a position never sees later ones (causal or per-position "
                                 "models); kernels on the longer tensor may sum in a different order"),
           _apply_pad),
)}
"""Every recipe, in the order ``ak.port`` applies them."""

RECIPE_ORDER = tuple(RECIPES)


__all__ = ["RECIPES", "RECIPE_ORDER", "BothBranches", "Change", "CloneInputs", "OpRewrite", "PadToBucket",
           "PortContext", "Recipe", "Sample", "TensorOutputs", "Tolerance", "UnrolledRNN", "WithLoss",
           "einsum_as_matmul", "replace_module", "tensor_leaves"]
