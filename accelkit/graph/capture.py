"""``ak.capture``: a PyTorch model to accelkit's Graph, through ``torch.export`` at the ATen level.

The forward pass is exported with ``torch.export.export(strict=False)``; every node keeps the
owning module and the user's source line that PyTorch recorded. Models built on the meta device
capture without allocating weights. A stack of identical blocks (a transformer's layers) is traced
twice and replicated, so an 80-layer model costs about as much to capture as a 2-layer one.

With ``training=True`` the backward pass and an optimizer step are recorded too, from the real
autograd and optimizer work run on meta tensors (nothing is computed, nothing in the model changes).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import os
import re
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from accelkit import boundary
from accelkit.cache import CACHE
from accelkit.errors import AccelkitError, CaptureError, ModelError, notebook_cell, source_label
from accelkit.graph.cost import VIEW_OPS, is_custom_op, node_bytes, registry_flops, short_kind, vector_flops
from accelkit.graph.ir import Graph, Node, TensorMeta
from accelkit.graph.values import split_inputs

_TORCH_DIR = os.path.dirname(torch.__file__)
_ACCELKIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


# ------------------------------------------------------------------------------------------
# small helpers
# ------------------------------------------------------------------------------------------
def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _metas(value: Any) -> list[TensorMeta]:
    leaves, _ = tree_flatten(value)
    return [TensorMeta(tuple(int(d) for d in t.shape), _dtype_name(t.dtype))
            for t in leaves if isinstance(t, torch.Tensor)]


def _is_user_file(path: str) -> bool:
    if notebook_cell(path) is not None:  # a notebook cell (a terminal IPython names it "<ipython-input-…>")
        return True
    path = os.path.abspath(path)
    return not (path.startswith(_TORCH_DIR) or path.startswith(_ACCELKIT_DIR) or "<" in path)


def _port_wrapped(model: nn.Module) -> tuple[nn.Module, str]:
    """The user's model inside ``ak.port``'s whole-model wrappers (each keeps it as ``.inner``), and the
    module-path prefix the wrappers add (``"inner.inner."``). Read by module name: the graph layer does not
    import the porting layer above it."""
    prefix = ""
    while type(model).__module__ == "accelkit.porting.recipes":
        inner = getattr(model, "inner", None)
        if not isinstance(inner, nn.Module):
            break
        model, prefix = inner, prefix + "inner."
    return model, prefix


def _source_from_stack(stack_trace: str | None) -> tuple[str | None, str | None]:
    """The innermost frame outside torch and accelkit: (``file.py:line``, full path)."""
    if not stack_trace:
        return None, None
    best = None
    for m in _FRAME_RE.finditer(stack_trace):
        if _is_user_file(m["file"]):
            best = m
    if best is None:
        return None, None
    return source_label(best["file"], best["line"]), best["file"]


def _replay_args(args: Any) -> list[Any] | None:
    """A node's positional arguments as plain JSON data, tensors as ``{"tensor": [shape, dtype]}``; None if
    any argument is something else (a symbolic size, a device, a dtype object)."""
    out: list[Any] = []

    def conv(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            val = a.meta.get("val")
            if isinstance(val, torch.Tensor):
                return {"tensor": [[int(d) for d in val.shape], _dtype_name(val.dtype)]}
            raise TypeError
        if isinstance(a, (list, tuple)):
            return [conv(x) for x in a]
        if a is None or isinstance(a, (bool, int, float, str)):
            return a
        raise TypeError

    try:
        for a in args:
            out.append(conv(a))
    except TypeError:
        return None
    return out


def _normalize_inputs(example_inputs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return split_inputs(example_inputs, allow_none=False)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """torch.export logs partial graphs on failure; a learner should see accelkit's error instead."""
    loggers = [logging.getLogger(n) for n in ("torch", "torch.export", "torch._dynamo",
                                                  "torch.fx.experimental.symbolic_shapes", "torch._export")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        for lg, lv in zip(loggers, levels, strict=True):
            lg.setLevel(lv)


# ------------------------------------------------------------------------------------------
# errors: turn what torch.export raises into a CaptureError that points at the user's line
# ------------------------------------------------------------------------------------------
def _user_frame(exc: BaseException) -> traceback.FrameSummary | None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_user_file(f.filename)]
    return frames[-1] if frames else None


def _module_at_frame(exc: BaseException, model: nn.Module) -> tuple[str | None, str | None]:
    """The module whose code raised: the innermost user frame whose ``self`` is a module of the model."""
    names = {id(m): n for n, m in model.named_modules()}
    found: tuple[str | None, str | None] = (None, None)
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        obj = frame.f_locals.get("self")
        if isinstance(obj, nn.Module) and id(obj) in names and _is_user_file(frame.f_code.co_filename):
            found = (names[id(obj)] or "<root>", type(obj).__name__)
        tb = tb.tb_next
    return found


def _explain(exc: BaseException, model: nn.Module) -> CaptureError:
    text = str(exc)
    frame = _user_frame(exc)
    source = source_label(frame.filename, frame.lineno) if frame else None
    code = (frame.line or "").strip() if frame else ""
    module, module_type = _module_at_frame(exc, model)
    mod_txt = f"{module} ({module_type})" if module else type(model).__name__
    where_code = f" `{code}`" if code else ""
    if "in output, which is not a known type" in text or "pytree" in text.lower() and "output" in text:
        m = re.search(r"Found (<class '[^']+'>)", text)
        what = m.group(1) if m else "a non-tensor object"
        src = source
        if src is None:
            try:
                import inspect

                f = inspect.getsourcefile(type(model).forward)
                _, line = inspect.getsourcelines(type(model).forward)
                src = source_label(f, line)
            except (OSError, TypeError):
                src = None
        return CaptureError(
            f"{type(model).__name__}.forward returns {what}, which is not a tensor; an accelerator "
            "graph can only return tensors (or tuples/dicts of tensors)",
            kind="non-tensor-output", module=module or "<root>", op="output", source=src,
            fix="return only tensors from forward (for transformers models build them with "
                "use_cache=False so no cache object is returned)",
        )
    if "data-dependent" in text or "DataDependent" in type(exc).__name__ or "unbacked" in text:
        host_sync = bool(re.search(r"\.(item|tolist|numpy)\(|\b(int|float|bool)\(", code))
        if host_sync:
            return CaptureError(
                f"{mod_txt} reads a tensor's value on the host{where_code}, and that value decides a "
                "shape or a Python branch; an accelerator graph has to be fixed before any value is known",
                kind="host-sync", module=module, op="aten.item", source=source,
                fix="keep the value on the device (use tensor ops such as torch.where, masking or "
                    "padding to a fixed size) instead of .item()/.tolist()/int(tensor)",
            )
        return CaptureError(
            f"{mod_txt} branches in Python on a tensor's value{where_code}; a compiled graph cannot "
            "follow a branch that depends on the data",
            kind="data-dependent-control-flow", module=module, op="aten.item (Python if on a tensor)",
            source=source,
            fix="compute both branches and select with torch.where(cond, a, b), or use torch.cond; "
                "`ak.port` can apply the torch.where rewrite",
        )
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return CaptureError(
        f"torch.export could not capture {mod_txt}: {type(exc).__name__}: {first[:300]}",
        kind="unsupported", module=module, op=None, source=source,
        fix="simplify the Python in forward at that line (no data-dependent control flow, only tensor "
            "inputs and outputs), or capture a sub-module that does export",
    )


def _shapes(values: Any) -> str:
    leaves = [t for t in tree_flatten(values)[0] if isinstance(t, torch.Tensor)]
    return ", ".join(f"{str(t.dtype).removeprefix('torch.')}[{', '.join(map(str, t.shape))}]" for t in leaves)


def model_raised(exc: BaseException, model: nn.Module, inputs: Any, doing: str = "forward") -> ModelError:
    """What the user's own ``forward`` (or ``backward``) raised, as an accelkit error: the exception, the user's
    line, the module and the inputs it was given; accelkit's own errors pass through as they are."""
    if isinstance(exc, AccelkitError):
        return exc  # type: ignore[return-value]
    frame = _user_frame(exc)
    module, module_type = _module_at_frame(exc, model)
    first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    where = ", ".join(p for p in (source_label(frame.filename, frame.lineno) if frame else None,
                                  f"module {module} ({module_type})" if module else None,
                                  f"inputs ({_shapes(inputs)})") if p)
    what = f"{type(model).__name__}.forward" if doing == "forward" else f"{doing} of {type(model).__name__}"
    return ModelError(
        f"{what} raised {type(exc).__name__}: {first}", where=where,
        fix=f"run model(*example_inputs) on its own to debug it; check that the inputs' shapes and dtypes are what "
            f"{type(model).__name__}.forward expects")


@contextlib.contextmanager
def user_code(model: nn.Module, inputs: Any, doing: str = "forward") -> Iterator[None]:
    """Run the user's model inside: whatever it raises leaves as a :class:`ModelError` (see :func:`model_raised`)."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - the boundary around the user's code
        raise model_raised(exc, model, inputs, doing) from exc


# ------------------------------------------------------------------------------------------
# repeated blocks
# ------------------------------------------------------------------------------------------
def _signature(m: nn.Module) -> tuple[Any, ...]:
    return (
        tuple((n, type(c).__name__) for n, c in m.named_modules()),
        tuple((n, tuple(p.shape), p.dtype) for n, p in m.named_parameters()),
        tuple((n, tuple(b.shape), b.dtype) for n, b in m.named_buffers()),
    )


def _repeated_stacks(model: nn.Module, min_len: int = 4) -> list[tuple[str, nn.Module, str, int]]:
    """(path, parent, attribute, length) of ModuleLists/Sequentials of identical blocks."""
    stacks = []
    for path, mod in model.named_modules():
        if not isinstance(mod, (nn.ModuleList, nn.Sequential)) or len(mod) < min_len:
            continue
        sig = _signature(mod[0])
        if all(type(b) is type(mod[0]) and _signature(b) == sig for b in list(mod)[1:]):
            parent_path, _, attr = path.rpartition(".")
            parent = model.get_submodule(parent_path) if parent_path else model
            stacks.append((path, parent, attr, len(mod)))
    # keep outermost stacks only (a stack inside a repeated block is replicated with it)
    return [s for s in stacks if not any(s[0].startswith(o[0] + ".") for o in stacks if o is not s)]


@contextlib.contextmanager
def _truncated(stacks: list[tuple[str, nn.Module, str, int]]) -> Iterator[None]:
    originals = []
    try:
        for _path, parent, attr, _n in stacks:
            orig = getattr(parent, attr)
            originals.append((parent, attr, orig))
            setattr(parent, attr, type(orig)(*[orig[0], orig[1]]) if isinstance(orig, nn.Sequential)
                    else nn.ModuleList([orig[0], orig[1]]))
        yield
    finally:
        for parent, attr, orig in reversed(originals):
            setattr(parent, attr, orig)


def _in_block(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _replicate(nodes: list[Node], path: str, n: int, *, reverse: bool = False,
               within: list[str] | None = None) -> tuple[list[Node], dict[str, str]] | None:
    """Expand a 2-block trace of ``path`` into ``n`` blocks; None when the trace is not two equal blocks.

    The block traced second in time is copied ``n - 2`` times after it, each copy reading from the one before.
    ``reverse`` is the backward pass, which runs the blocks last to first: the traced block 1 is then the model's
    block ``n - 1``, the traced block 0 its block ``n - 2``, and the copies blocks ``n - 3`` down to 0.
    ``within`` (one module path per node) says which block a node belongs to where its own module does not."""
    first, second = (f"{path}.1", f"{path}.0") if reverse else (f"{path}.0", f"{path}.1")
    where = within or [x.module for x in nodes]
    idx0 = [i for i, m in enumerate(where) if _in_block(m, first)]
    idx1 = [i for i, m in enumerate(where) if _in_block(m, second)]
    if not idx0 or len(idx0) != len(idx1):
        return None
    lo1, hi1 = idx1[0], idx1[-1]
    if idx1 != list(range(lo1, hi1 + 1)) or [nodes[i].op for i in idx0] != [nodes[i].op for i in idx1]:
        return None
    if reverse and not (idx0 == list(range(idx0[0], idx0[-1] + 1)) and idx0[-1] < lo1):
        return None  # the backward of the last block does not run whole before the first one's

    def real(t: int) -> str:  # the model's block that the t-th block in time is
        return f"{path}.{n - 1 - t if reverse else t}"

    def moved(x: Node, t: int, prefix: str) -> str:  # a node with no module of its own keeps none
        return real(t) + x.module[len(prefix):] if _in_block(x.module, prefix) else x.module

    if reverse:  # the two traced blocks keep their nodes but take the names of the blocks they are
        in0 = set(idx0)
        nodes = [replace(x, module=moved(x, 0, first)) if i in in0 else
                 replace(x, module=moved(x, 1, second)) if lo1 <= i <= hi1 else x for i, x in enumerate(nodes)]
    block0 = {nodes[i].name: pos for pos, i in enumerate(idx0)}
    block1 = [nodes[i] for i in idx1]
    block1_names = {x.name: pos for pos, x in enumerate(block1)}
    out = nodes[: hi1 + 1]
    prev = [x.name for x in block1]
    origin = real(1)
    for k in range(2, n):
        copies = []
        for x in block1:
            copies.append(replace(
                x, name=f"{x.name}__{k}", module=moved(x, k, origin), block=origin,
                args=[f"{a}__{k}" if a in block1_names else prev[block0[a]] if a in block0 else a for a in x.args],
                param_inputs=list(x.param_inputs), extra=dict(x.extra)))
        out.extend(copies)
        prev = [c.name for c in copies]
    last = {x.name: prev[pos] for pos, x in enumerate(block1)}
    for x in nodes[hi1 + 1:]:
        out.append(replace(x, args=[last.get(a, a) for a in x.args]))
    return out, last


def _replicate_training(nodes: list[Node], stacks: list[tuple[str, nn.Module, str, int]]) -> list[Node] | None:
    """The backward and optimizer nodes of a 2-block trace expanded to the model's blocks (the backward runs them
    last to first; the optimizer updates each block's parameters in turn); None when a section does not split into
    equal blocks (then the whole model is traced)."""
    bwd = [x for x in nodes if x.section == "bckwd"]
    opt = [x for x in nodes if x.section == "opt"]
    if bwd + opt != nodes:
        return None
    for path, _parent, _attr, n in stacks:
        b = _replicate(bwd, path, n, reverse=True)
        # an update's ops on a tensor no parameter owns (the step count) belong to the parameter updated next
        within, after = [], ""
        for x in reversed(opt):
            after = x.module or after
            within.append(after)
        o = _replicate(opt, path, n, within=within[::-1])
        if b is None or o is None:
            return None
        bwd, opt = b[0], o[0]
    return bwd + opt


# ------------------------------------------------------------------------------------------
# forward: torch.export -> nodes
# ------------------------------------------------------------------------------------------
def _export(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.export.ExportedProgram:
    with _quiet():
        return torch.export.export(model, args, kwargs, strict=False)


def _nodes_from_export(ep: torch.export.ExportedProgram) -> tuple[list[Node], dict[str, str]]:
    sig = ep.graph_signature
    param_names = {**sig.inputs_to_parameters, **sig.inputs_to_buffers,
                   **getattr(sig, "inputs_to_lifted_tensor_constants", {})}
    param_like: set[str] = set(param_names)
    nodes: list[Node] = []
    for fx in ep.graph.nodes:
        if fx.op != "call_function":
            continue
        op = fx.target
        kind = short_kind(op)
        arg_nodes = [a for a in fx.all_input_nodes]
        ins = []
        flags = []
        for a in arg_nodes:
            val = a.meta.get("val")
            if isinstance(val, torch.Tensor):
                ins.extend(_metas(val))
                flags.append(a.name in param_like)
        try:
            outs = _metas(fx.meta.get("val"))
        except (TypeError, ValueError, RuntimeError) as exc:  # an output size only the data decides
            src, _ = _source_from_stack(fx.meta.get("stack_trace"))
            raise CaptureError(
                f"{kind} returns a tensor whose size depends on the values in it; a compiled graph needs "
                f"every shape fixed before the data is seen ({type(exc).__name__})",
                kind="dynamic-shape", op=str(op), source=src,
                module=(list((fx.meta.get("nn_module_stack") or {"": ("<root>", "")}).values())[-1][0] or "<root>"),
                fix="keep the shape fixed: use a mask and torch.where instead of nonzero/unique/boolean "
                    "indexing, or pad to a fixed size",
            ) from None
        if not ins and not outs and is_custom_op(str(op)):
            continue  # an extension op with no tensor in or out computes nothing (PopTorch's name scopes)
        if kind in VIEW_OPS or kind in {"_to_copy", "to"}:
            if any(a.name in param_like for a in arg_nodes):
                param_like.add(fx.name)
        stack = fx.meta.get("nn_module_stack") or {}
        module, module_type = "", ""
        if stack:
            module, mtype = list(stack.values())[-1]
            module_type = str(mtype).rsplit(".", 1)[-1].strip("'>")
        source, path = _source_from_stack(fx.meta.get("stack_trace"))
        flops, frm = 0, "none"
        if kind not in VIEW_OPS and isinstance(op, torch._ops.OpOverload):
            margs = tree_map(lambda a: a.meta.get("val") if isinstance(a, torch.fx.Node) else a, fx.args)
            mkw = tree_map(lambda a: a.meta.get("val") if isinstance(a, torch.fx.Node) else a, fx.kwargs)
            flops = registry_flops(op, margs, mkw)
            frm = "registry" if flops else "none"
        if not flops:
            flops = vector_flops(kind, ins, outs)
            frm = "vector-model" if flops else frm
        br, bw = node_bytes(kind, ins, outs)
        nodes.append(Node(
            name=fx.name, op=str(op), kind=kind, inputs=ins, outputs=outs,
            args=[a.name for a in arg_nodes], module=module, module_type=module_type, source=source,
            flops=int(flops), flops_from=frm, bytes_read=br, bytes_written=bw, param_inputs=flags,
            param_bytes=sum(m.nbytes for m, f in zip(ins, flags, strict=False) if f), section="fwd",
            extra={"source_path": path} if path else {},
        ))
        nodes[-1].extra["kwargs"] = {k: v for k, v in fx.kwargs.items() if isinstance(v, str | int | float | bool)}  # porting: simple non-tensor kwargs, e.g. gelu's approximate
        replay = _replay_args(fx.args)
        if replay is not None:  # enough to run the op again on fresh tensors (the host model times it)
            nodes[-1].extra["args"] = replay
    # where a user input is mutated in place, remember the line that does it: the export signature
    # lists it when the graph is functionalized; non-strict export keeps ``add_`` on the input itself
    mutated: dict[str, str] = {}
    by_name = {x.name: x for x in nodes}
    for out_name, input_name in getattr(sig, "user_inputs_to_mutate", {}).items():
        src = by_name[out_name].source if out_name in by_name else None
        mutated[str(input_name)] = src or "?"
    user_inputs = {s.arg.name for s in sig.input_specs if s.kind.name == "USER_INPUT"}
    alias_of = {name: name for name in user_inputs}  # node -> the input it is a view of
    for x in nodes:
        if x.args and x.args[0] in alias_of:
            if x.kind in VIEW_OPS:
                alias_of[x.name] = alias_of[x.args[0]]
            elif x.kind.endswith("_") and not x.kind.startswith("_"):
                mutated.setdefault(alias_of[x.args[0]], x.source or "?")
    return nodes, mutated


# ------------------------------------------------------------------------------------------
# training: backward and optimizer recorded on meta tensors
# ------------------------------------------------------------------------------------------
def grad_of(autograd_name: str) -> str:
    """The forward op an autograd function differentiates, normalised for matching an op's kind:
    ``"SpecialErfcxBackward0"`` -> ``"specialerfcx"`` (compare ``kind.replace("_", "")``)."""
    return re.sub(r"Backward\d*$", "", autograd_name.rsplit("::", 1)[-1]).replace("_", "").lower()


class _Recorder(TorchDispatchMode):
    def __init__(self, section: str, tracker: Any, root: str, param_ids: set[int],
                 owner: dict[int, str] | None = None, passthrough: frozenset[str] = frozenset()) -> None:
        super().__init__()
        # the tracker's names of the modules whose forward returned its input itself (a dropout with p=0): in
        # backward ModuleTracker lists such a module from its output's gradient on and never removes it (no
        # gradient of its inputs is computed apart from its output's), so it would claim every later op
        self.passthrough = passthrough
        self.owner = owner or {}  # tensor id -> module path (optimizer state is owned by its parameter)
        self.producer: dict[int, str] = {}  # tensor id -> the node that last wrote it (dataflow edges)
        # tensor id -> a name for a tensor no recorded op made (a weight, an activation the forward saved, the
        # optimizer's state), so that every input of a node is named, as an exported graph's placeholders are
        self.outside: dict[int, str] = {}
        self.keep: list[Any] = []  # outputs kept alive so their ids are not reused
        self.section = section
        self.tracker = tracker
        self.root = root
        self.param_ids = param_ids
        self.nodes: list[Node] = []

    def _outside(self, t: torch.Tensor) -> str:
        """The name of a tensor that no recorded op made (named once; kept alive so its id is not reused)."""
        name = self.outside.get(id(t))
        if name is None:
            name = self.outside[id(t)] = f"{self.section}_input_{len(self.outside)}"
            self.keep.append(t)
        return name

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        kind = short_kind(func)
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        if kind in VIEW_OPS:  # an alias is the tensor it views: same producer, same owner
            src = tensors[0] if tensors else None
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and src is not None:
                    if id(src) in self.producer:
                        self.producer[id(t)] = self.producer[id(src)]
                    else:  # a view of a tensor from outside (a weight's transpose) is that tensor
                        self.outside[id(t)] = self._outside(src)
                    if id(src) in self.owner:
                        self.owner[id(t)] = self.owner[id(src)]
                    self.keep.append(t)
            return out
        ins = _metas(tensors)
        outs = _metas(out)
        if not ins and not outs and is_custom_op(str(func)):  # an annotation (PopTorch's name scopes): no data
            return out
        flags = [id(t) in self.param_ids for t in tensors]
        flops = registry_flops(func, args, kwargs)
        frm = "registry" if flops else "none"
        if not flops:
            flops = vector_flops(kind, ins, outs)
            frm = "vector-model" if flops else frm
        module = next((self.owner[id(t)] for t in tensors if id(t) in self.owner), "")
        if self.tracker is not None:
            parents = [p for p in self.tracker.parents if p != "Global" and p not in self.passthrough]
            if parents:
                deepest = max(parents, key=lambda p: (len(p), p))  # ties by name: the tracker's set has no order
                module = deepest[len(self.root) + 1:] if deepest.startswith(self.root + ".") else ""
        br, bw = node_bytes(kind, ins, outs)
        name = f"{self.section}_{len(self.nodes)}"
        args = [self.producer.get(id(t)) or self._outside(t) for t in tensors]  # one name per tensor input
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.producer[id(t)] = name
                if module and id(t) not in self.owner:
                    self.owner[id(t)] = module  # optimizer state belongs to its parameter's module
                self.keep.append(t)
        # the autograd function whose backward this op belongs to ("SpecialErfcxBackward0" -> "specialerfcx"),
        # so a forward op placed on the host takes its gradient with it (compile(..., fallback="host"))
        grad_fn = torch._C._current_autograd_node() if self.section == "bckwd" else None
        extra = {"grad_of": grad_of(grad_fn.name())} if grad_fn is not None else {}
        self.nodes.append(Node(
            name=name, op=str(func), kind=kind, inputs=ins, outputs=outs, args=args,
            module=module, flops=int(flops), flops_from=frm, bytes_read=br, bytes_written=bw,
            param_inputs=flags, param_bytes=sum(m.nbytes for m, f in zip(ins, flags, strict=False) if f),
            section=self.section, extra=extra,
        ))
        return out


OPTIMIZERS: dict[str, tuple[int, str]] = {
    "adamw": (2, "AdamW: two moments per weight"),
    "adam": (2, "Adam: two moments per weight"),
    "sgd": (1, "SGD with momentum: one velocity per weight"),
    "sgd-plain": (0, "SGD without momentum: no state"),
    "rmsprop": (2, "RMSprop with momentum: a running average of squared gradients and a velocity per weight"),
}
"""The optimizers a training capture records, by name: (state tensors per weight, what they are)."""

OPTIMIZER_STATES: dict[str, str] = {
    "mixed": "fp32 state, and an fp32 master copy of 16-bit weights (mixed precision: Megatron-LM, DeepSpeed, apex)",
    "fp32": "fp32 state, no master copy (PopTorch's accum_type=torch.float32 over 16-bit weights)",
    "16-bit": "state in the weights' 16-bit format, no master copy (PyTorch's and PopTorch's optimizers over a "
              "model.half() model)",
}
"""Where a training step keeps its optimizer state (``ak.compile(optimizer_state=...)``); None: ``"16-bit"`` when
the model's own weights are 16-bit (its optimizer's state follows them), else ``"mixed"``."""


def optimizer_kind(optimizer: Any) -> str | None:
    """The name in :data:`OPTIMIZERS` of a PyTorch optimizer's update (an AdamW, an SGD with or without momentum,
    the vendors' subclasses of them); None for any other optimizer."""
    if isinstance(optimizer, torch.optim.AdamW):
        return "adamw"
    if isinstance(optimizer, torch.optim.Adam):
        return "adam"
    if isinstance(optimizer, torch.optim.SGD):
        return "sgd" if any(g.get("momentum") for g in optimizer.param_groups) else "sgd-plain"
    if isinstance(optimizer, torch.optim.RMSprop) and any(g.get("momentum") for g in optimizer.param_groups):
        return "rmsprop"
    return None


def _make_optimizer(name: str | Callable[..., torch.optim.Optimizer], params: list[torch.Tensor]) -> Any:
    if callable(name):
        return name(params)
    table = {
        "sgd": lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9, foreach=False),
        "sgd-plain": lambda p: torch.optim.SGD(p, lr=1e-3, foreach=False),
        "adam": lambda p: torch.optim.Adam(p, lr=1e-3, foreach=False),
        "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=False),
        "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-3, alpha=0.9, eps=0.01, momentum=0.9, foreach=False),
    }
    if name not in table:
        raise AccelkitError(f"unknown optimizer {name!r}", fix=f"use one of {sorted(table)} or a callable")
    return table[name](params)


def _first_tensor(out: Any) -> torch.Tensor | None:
    leaves = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
    return leaves[0] if leaves else None


def _scalar_loss(out: Any) -> torch.Tensor:
    leaves = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
    if leaves and leaves[0].dim() == 0 and leaves[0].is_floating_point():
        return leaves[0]  # the model computes its own loss (PopTorch / SambaFlow style)
    total = None
    for t in leaves:
        if t.is_floating_point() and t.requires_grad:
            total = t.float().sum() if total is None else total + t.float().sum()
    if total is None:
        raise AccelkitError("training capture needs a floating-point output that depends on parameters",
                            fix="return the loss or the logits from forward")
    return total


def _training_nodes(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any],
                    optimizer: str | Callable[..., torch.optim.Optimizer]) -> tuple[list[Node], list[str]]:
    """The backward pass and the optimizer step of one training step, recorded op by op on fake tensors.

    A model built on the meta device (a large model from its config) is run on fake *CPU* tensors: the meta
    device has no fused attention, so PyTorch would differentiate ``scaled_dot_product_attention`` through its
    math path (the scores materialized, batched matmuls and a softmax backward), where every accelerator stack,
    and the same model captured on the CPU, runs one fused attention backward. Should the model not run that way
    (a meta tensor it keeps outside its parameters and buffers), it is recorded on meta fakes as before."""
    if any(isinstance(t, torch.Tensor) and t.device.type == "meta"
           for t in (*model.parameters(), *model.buffers(), *tree_flatten((args, kwargs))[0])):
        try:
            return _training_nodes_on(model, args, kwargs, optimizer, meta_as_cpu=True)
        except Exception:
            pass
    return _training_nodes_on(model, args, kwargs, optimizer, meta_as_cpu=False)


def _training_nodes_on(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any],
                       optimizer: str | Callable[..., torch.optim.Optimizer],
                       meta_as_cpu: bool) -> tuple[list[Node], list[str]]:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.module_tracker import ModuleTracker

    # Fake tensors: shapes and dtypes flow, nothing is computed, and libraries that skip
    # data-dependent checks while tracing (transformers does) see that they are being traced.
    fake = FakeTensorMode(allow_non_fake_inputs=True)

    def to_fake(t: Any, grad: bool = False) -> Any:
        if not isinstance(t, torch.Tensor):
            return t
        if meta_as_cpu and t.device.type == "meta":  # a fake CPU tensor of its shape: nothing is allocated
            with fake:
                f = torch.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device=torch.device("cpu"))
        else:
            f = fake.from_tensor(t.detach())
        return f.requires_grad_(grad) if grad else f

    params = {n: to_fake(p, p.requires_grad) for n, p in model.named_parameters()}
    buffers = {n: to_fake(b) for n, b in model.named_buffers()}
    fargs = tree_map(to_fake, args)
    fkw = tree_map(to_fake, kwargs)
    notes = []
    trainable = [p for p in params.values() if p.requires_grad]
    param_ids = {id(p) for p in params.values()}
    root = type(model).__name__
    passthrough: set[str] = set()  # the tracker's names of the modules whose forward returned its input itself

    def returns_its_input(name: str) -> Callable[..., None]:
        def hook(_mod: nn.Module, inputs: Any, output: Any) -> None:
            if isinstance(output, torch.Tensor) and any(output is i for i in tree_flatten(inputs)[0]):
                passthrough.add(f"{root}.{name}")
        return hook

    hooks = [m.register_forward_hook(returns_its_input(n)) for n, m in model.named_modules() if n]
    # every module's own weights and buffers, to put back afterwards: where a module is registered under two names
    # (a model's final norm kept as ln_f and as decoder.norm), functional_call can leave the fake copies in the
    # real model (PyTorch 2.13), and the user's weights would be lost
    kept: list[tuple[dict[str, Any], str, Any]] = [
        (table, name, t) for m in model.modules() for table in (m._parameters, m._buffers) for name, t in table.items()]
    try:
        with fake, ModuleTracker() as tracker:
            out = torch.func.functional_call(model, {**params, **buffers}, fargs, fkw)
            for h in hooks:
                h.remove()
            loss = _scalar_loss(out)
            if loss is not _first_tensor(out):
                notes.append("training capture: the model returns no scalar loss, so the loss is the sum of its "
                             "outputs (one reduction; the backward graph is the model's own)")
            rec_b = _Recorder("bckwd", tracker, root, param_ids, passthrough=frozenset(passthrough))
            with rec_b:
                loss.backward()
            opt = _make_optimizer(optimizer, trainable)
            grad_ids = {id(p.grad) for p in trainable if p.grad is not None}
            owner = {}
            for n, p in params.items():
                mod = n.rpartition(".")[0]
                owner[id(p)] = mod
                if p.grad is not None:
                    owner[id(p.grad)] = mod
            # a first step creates the optimizer's state (zeros); record the steady-state second step
            warm = _Recorder("opt", None, root, param_ids | grad_ids, owner)  # kept alive: ids stay unique
            with warm:
                opt.step()
            rec_o = _Recorder("opt", None, root, param_ids | grad_ids, owner)
            with rec_o:
                opt.step()
            del warm
    finally:
        for h in hooks:
            h.remove()
        for table, key, t in kept:
            if table.get(key) is not t:
                table[key] = t
    name = optimizer if isinstance(optimizer, str) else getattr(optimizer, "__name__", "custom")
    notes.append(f"training capture: optimizer step recorded with {name} (foreach=False, one update per tensor)")
    return rec_b.nodes + rec_o.nodes, notes


# ------------------------------------------------------------------------------------------
# the public function
# ------------------------------------------------------------------------------------------
def capture(
    model: nn.Module,
    example_inputs: Any,
    training: bool = False,
    *,
    optimizer: str | Callable[..., torch.optim.Optimizer] = "adamw",
    dedupe_blocks: bool = True,
) -> Graph:
    """Capture ``model`` on ``example_inputs`` as an ATen-level :class:`Graph`.

    ``example_inputs`` is a tensor, a tuple of positional tensors, or a dict of keyword tensors.
    With ``training=True`` the graph also holds the backward pass (``section="bckwd"``) and one
    optimizer step (``section="opt"``, AdamW unless ``optimizer`` says otherwise).
    Identical stacked blocks (``nn.ModuleList`` of equal layers) are traced twice and replicated
    unless ``dedupe_blocks=False``.

    Raises :class:`accelkit.CaptureError` naming the module, the op and the user's ``file:line``
    when the model cannot be captured (data-dependent control flow, ``.item()`` feeding a shape,
    non-tensor outputs).
    """
    if not isinstance(model, nn.Module):
        raise AccelkitError(f"capture needs an nn.Module, not {type(model).__name__}",
                            fix="pass the model object (e.g. MyNet()), not its class or a function")
    boundary.flag("training", training)
    with _ONE_AT_A_TIME:
        return _capture(model, example_inputs, training, optimizer, dedupe_blocks)


_ONE_AT_A_TIME = threading.RLock()
"""Captures run one at a time in a process: torch.export keeps global state, and a capture shortens a model's
stack of blocks while it traces, so two threads (a threaded Dask sweep's workers) capturing one model at once
would each see the other's half-changed model."""


def _without_cache(model: nn.Module, kwargs: dict[str, Any]) -> bool:
    """True for a model that would return a KV-cache object the graph cannot hold: a Hugging Face model whose config
    asks for the cache (``use_cache=True``, every causal LM's and encoder-decoder's default) and whose ``forward``
    takes ``use_cache``, called without it."""
    if "use_cache" in kwargs or not getattr(getattr(model, "config", None), "use_cache", False):
        return False
    try:
        return "use_cache" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _capture(model: nn.Module, example_inputs: Any, training: bool,
             optimizer: str | Callable[..., torch.optim.Optimizer], dedupe_blocks: bool) -> Graph:
    args, kwargs = _normalize_inputs(example_inputs)
    t0 = time.perf_counter()
    modes = {m: m.training for m in model.modules()}  # restored exactly, even mixed train/eval
    model.train(training)
    notes: list[str] = []
    if _without_cache(model, kwargs):
        # the cache is state a serving engine keeps between steps (ak.serve models it), not an output of the step
        kwargs = {**kwargs, "use_cache": False}
        notes.append(f"{type(model).__name__} keeps a KV cache (config.use_cache=True), an object a graph cannot "
                     "return: captured with use_cache=False, the step's computation unchanged (ak.serve models the "
                     "cache of a served model)")
    try:
        stacks = _repeated_stacks(model) if dedupe_blocks else []
        nodes = None
        mutated: dict[str, str] = {}
        renamed: dict[str, str] = {}  # block-1 node -> its copy in the last block
        if stacks:
            try:
                with _truncated(stacks):
                    ep = _export(model, args, kwargs)
                nodes, mutated = _nodes_from_export(ep)
                for path, _p, _a, n in stacks:
                    done = _replicate(nodes, path, n) if nodes is not None else None
                    nodes = done[0] if done else None
                    if done:
                        renamed.update(done[1])
                        notes.append(f"{path}: {n} identical blocks; traced 2 and replicated the second")
            except Exception:  # a model that indexes its layers by number: trace it whole
                nodes = None
            if nodes is None:
                notes, renamed = ["repeated blocks could not be replicated safely; traced every block"], {}
        if nodes is None:
            try:
                ep = _export(model, args, kwargs)
            except Exception as exc:
                raise _explain(exc, model) from exc
            nodes, mutated = _nodes_from_export(ep)
        out_specs = [s for s in ep.graph_signature.output_specs if s.kind.name == "USER_OUTPUT"]
        vals = {n.name: n.meta.get("val") for n in ep.graph.nodes}
        out_args = [getattr(s.arg, "name", "") for s in out_specs]
        outputs = [m for a in out_args for m in _metas(vals.get(a))]
        non_tensor = tuple(_output_type(s.arg) for s in out_specs if _output_type(s.arg))
        if not outputs:  # None alone (or nothing): a None beside tensors is dropped, but no output at all is a bug
            non_tensor = non_tensor or ("NoneType",)
        known = {x.name for x in nodes}
        output_names = [renamed.get(a, a) for a in out_args if a in known]
        input_names = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
        inputs = {a: m for a in input_names for m in _metas(vals.get(a))[:1]}
        if training:
            extra = None
            if renamed:  # the forward was traced as two blocks and replicated: so are the backward and the step
                try:
                    with _truncated(stacks):
                        two, tnotes = _training_nodes(model, args, kwargs, optimizer)
                    extra = _replicate_training(two, stacks)
                except Exception:  # traced whole below, where an error is explained
                    extra = None
            if extra is None:
                try:
                    extra, tnotes = _training_nodes(model, args, kwargs, optimizer)
                except AccelkitError:
                    raise
                except Exception as exc:  # e.g. .item() under fake tensors: DataDependentOutputException
                    raise _explain(exc, model) from exc
            nodes = nodes + extra
            notes.extend(tnotes)
    finally:
        for m, flag in modes.items():
            m.training = flag
    params = {n: TensorMeta(tuple(p.shape), _dtype_name(p.dtype)) for n, p in model.named_parameters()}
    buffers = {n: TensorMeta(tuple(b.shape), _dtype_name(b.dtype)) for n, b in model.named_buffers()}
    user, prefix = _port_wrapped(model)
    name = type(model).__name__ if user is model else f"{type(user).__name__} (ported)"
    g = Graph(nodes=tuple(nodes), inputs=inputs, params=params, outputs=outputs, buffers=buffers, model_name=name,
              wrapper_prefix=prefix, channels_last=channels_last(model, example_inputs),
              training=training, capture_s=time.perf_counter() - t0, notes=notes, mutated_inputs=mutated,
              output_names=output_names, non_tensor_outputs=non_tensor,
              optimizer=("" if not training else optimizer if isinstance(optimizer, str) else "custom"))
    return g


def _output_type(arg: Any) -> str:
    """The type of an output export recorded that is not a tensor ("" for a tensor, or for ``None``, which a
    device program need not hand back)."""
    name = type(arg).__name__
    if name == "TensorArgument":
        return ""
    if name == "ConstantArgument":
        value = getattr(arg, "value", None)
        return "" if value is None else type(value).__name__
    return {"SymIntArgument": "int", "SymFloatArgument": "float", "SymBoolArgument": "bool"}.get(name, name)


# ------------------------------------------------------------------------------------------
# the cache: one capture per model, input shapes and structure (ak.compile and ak.check share it)
# ------------------------------------------------------------------------------------------
_GRAPHS = CACHE.graphs  # ak.cache's captured graphs: model -> {(inputs, training, structure): graph}


def _input_key(example_inputs: Any) -> Any:
    leaves = torch.utils._pytree.tree_flatten(example_inputs)[0]
    return tuple((tuple(t.shape), t.dtype, str(t.device), _nhwc(t)) if isinstance(t, torch.Tensor) else repr(t)
                 for t in leaves)


def _nhwc(t: torch.Tensor) -> bool:
    """True for a 4-D tensor laid out channels last (and not also plain contiguous: one channel or one pixel)."""
    return (t.dim() == 4 and t.is_floating_point() and not t.is_contiguous()
            and t.is_contiguous(memory_format=torch.channels_last))


def channels_last(model: nn.Module, example_inputs: Any) -> bool:
    """Whether the model runs its images channels last: an input, or a convolution weight, in that layout (a
    convolution's output follows either)."""
    leaves = torch.utils._pytree.tree_flatten(example_inputs)[0]
    if any(_nhwc(t) for t in leaves if isinstance(t, torch.Tensor)):
        return True
    return any(_nhwc(p) for _, m in _modules(model) for p in m._parameters.values() if p is not None and p.dim() == 4)


def _modules(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """``model.named_modules()`` as a list, in the same order (each module once), walked without its recursive
    generators: a compile walks the model twice (the structure key, the weights' devices), a sweep compiles
    thousands of times."""
    out: list[tuple[str, nn.Module]] = []
    seen: set[int] = set()
    stack: list[tuple[str, nn.Module]] = [("", model)]
    while stack:
        name, m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        out.append((name, m))
        stack.extend(reversed([(f"{name}.{k}" if name else k, c) for k, c in m._modules.items() if c is not None]))
    return out


def holds_values(model: nn.Module) -> bool:
    """Whether any of the model's parameters or buffers holds values (is not on the meta device)."""
    return any(t is not None and t.device.type != "meta"
               for _, m in _modules(model) for kind in (m._parameters, m._buffers) for t in kind.values())


def _structure_key(model: nn.Module) -> tuple[Any, ...]:
    """What a captured graph depends on besides the inputs: every submodule (its object, class, forward and
    train/eval flag) and every parameter and buffer (object, shape, dtype). Replacing a layer, swapping its
    forward, or re-creating or resizing a weight changes the key, so the workshop's "modify, then compile
    again" never reuses a stale graph. Weight values are not in it: a graph holds shapes, not values, so a
    training step (which updates weights in place) keeps the capture."""
    # one walk over the modules (named_parameters and named_buffers would walk them twice more: a 70 B model's
    # key is taken at every compile); a tied weight is listed under each module that holds it
    modules: list[tuple[Any, ...]] = []
    tensors: list[tuple[Any, ...]] = []
    for name, m in _modules(model):
        modules.append((name, id(m), type(m), getattr(m.forward, "__func__", m.forward), m.training))
        for kind in (m._parameters, m._buffers):
            tensors.extend((f"{name}.{k}" if name else k, id(t), tuple(t.shape), t.dtype, t.dim() == 4 and _nhwc(t))
                           for k, t in kind.items() if t is not None)
    return tuple(modules), tuple(tensors)


def captured(model: nn.Module, example_inputs: Any, training: bool, optimizer: str = "adamw") -> Graph:
    """The model's graph for these input shapes (a training graph with ``optimizer``'s step), captured once and
    reused by later compiles of the same, unchanged model (see :func:`_structure_key`)."""
    structure = _structure_key(model)
    key = (_input_key(example_inputs), training, structure, optimizer if training else "")
    cache = _GRAPHS.setdefault(model, {})
    if key not in cache:
        for stale in [k for k in cache if k[2] != structure]:  # graphs of the model before it changed
            del cache[stale]
        cache[key] = capture(model, example_inputs, training=training, optimizer=optimizer)
    return cache[key]
