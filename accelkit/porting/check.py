"""``ak.check``: will this model run on that accelerator, and if not, what exactly stops it?

The check reads the captured :class:`~accelkit.graph.Graph` (or the :class:`CaptureError` when the
model cannot be captured at all) against the target's op-support table (``porting/tables``) and
its catalog spec, and returns a :class:`CompatibilityReport`: a list of :class:`Finding`, each
with the op, how many nodes, the owning module, the user's ``file:line``, the reason, the fix,
and the name of the ``ak.port`` recipe that applies the fix (``None`` when it takes a person).

Op rules are checked on the forward pass only: the backward pass is derived from it, so a
forward fixed is a backward fixed.
"""

from __future__ import annotations

import contextlib
import html
import inspect
import io
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_flatten

from accelkit.boundary import flag, got
from accelkit.errors import AccelkitError, ArgumentError, CaptureError, source_label
from accelkit.graph.cost import STANDARD_NAMESPACES, VIEW_OPS, is_custom_op  # noqa: F401 - re-exported
from accelkit.graph.ir import DTYPE_BYTES, Graph, Node
from accelkit.graph.values import named_inputs, split_inputs
from accelkit.hardware.capacity import chips_to_hold, holding_tiers, usable_bytes
from accelkit.porting.outputs import non_tensor_outputs
from accelkit.porting.support import Rule, SupportTable, evidence, table_for

KINDS = (
    "unsupported-op", "data-dependent-control-flow", "host-sync", "dynamic-shape", "dtype", "too-large",
    "inplace-on-input", "non-tensor-output", "loss-outside-model", "capture-error",
)
"""Every kind of finding the check reports."""

HOST_SYNC_KINDS = frozenset({"item", "_local_scalar_dense"})
DATA_DEPENDENT_SHAPE_KINDS = frozenset({"nonzero", "nonzero_static", "unique", "_unique", "_unique2",
                                        "unique_dim", "unique_consecutive", "masked_select"})
SAME_DTYPE_KINDS = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "mv", "addmv", "dot",
                              "convolution", "_convolution", "conv1d", "conv2d", "conv3d"})
"""Ops whose tensor operands must share one dtype (PyTorch refuses int64 x float32)."""
_CAPTURE_KIND_TO_RULE = {"data-dependent-control-flow": "data-dependent-control-flow", "host-sync": "host-sync",
                         "non-tensor-output": "non-tensor-output", "unsupported": "capture-error"}


@dataclass(frozen=True)
class Finding:
    """One reason the model does not run (``error``) or runs with a caveat (``warning``) on the target.

    ``count`` is how many graph nodes it covers; ``module`` the first owning module (``modules``
    holds them all); ``source`` the user's ``file:line``. ``recipe`` names the ``ak.port`` recipe
    that fixes it, ``rule_source`` where the rule comes from (a vendor document or ``illustrative``).
    """

    kind: str
    op: str
    count: int
    module: str
    source: str | None
    reason: str
    fix: str
    severity: str = "error"
    recipe: str | None = None
    rule_source: str = ""
    modules: tuple[str, ...] = ()
    input_name: str | None = None  # the forward argument it is about (dtype, dynamic-shape, in-place)
    chips_needed: int | None = None  # too-large: chips whose memory tiers together hold the parameters
    nodes: tuple[str, ...] = ()  # the graph nodes it covers (what compile(..., fallback="host") runs on the host)

    @property
    def evidence(self) -> str:
        """How firm the rule is: ``vendor``, ``derived``, ``unconfirmed`` or ``illustrative`` (see support.py)."""
        return evidence(self.rule_source)

    @property
    def where(self) -> str:
        more = f" (+{len(self.modules) - 1})" if len(self.modules) > 1 else ""
        return f"{self.module or '<root>'}{more}"

    def summary(self) -> str:
        """One short line: severity, kind, op, count, module and source."""
        return (f"{self.severity} {self.kind}: {self.op} x{self.count} in {self.where} at {self.source or '?'}"
                + (f" -> recipe {self.recipe}" if self.recipe else ""))


@dataclass(frozen=True)
class CompatibilityReport:
    """What stands between a model and a target: a list of findings, rendered as text and HTML."""

    target: str
    family: str
    sdk: str
    model_name: str
    findings: tuple[Finding, ...]
    captured: bool
    tables: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    graph: Graph | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when nothing is an error (warnings still deserve a look)."""
        return not self.errors

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def kinds(self) -> list[str]:
        """The kinds found, each once, in report order."""
        return list(dict.fromkeys(f.kind for f in self.findings))

    def recipes(self) -> list[str]:
        """The ``ak.port`` recipes the findings ask for, each once."""
        return list(dict.fromkeys(f.recipe for f in self.findings if f.recipe))

    def find(self, kind: str | None = None, op: str | None = None) -> list[Finding]:
        """Findings of this kind and/or whose op contains ``op``."""
        return [f for f in self.findings if (kind is None or f.kind == kind) and (op is None or op in f.op)]

    def headline(self) -> str:
        verdict = "ready" if self.ok else "NOT ready"
        return (f"{self.model_name} on {self.target} ({self.family}, {self.sdk}): {verdict} - "
                f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)")

    def summary(self) -> str:
        """The headline and one short line per finding (stable text for notebooks and tests)."""
        return "\n".join([self.headline()] + [f"  {f.summary()}" for f in self.findings])

    def groups(self) -> list[list[Finding]]:
        """Findings that say the same thing (same severity, kind, why, fix and rule) about several ops or places, each
        group once, in report order: GPT-2 on a TSP has one int64 warning for a dozen ops."""
        out: dict[tuple[str, ...], list[Finding]] = {}
        for f in self.findings:
            key = (f.severity, f.kind, f.reason, f.fix, f.rule_source, f.recipe or "")
            out.setdefault(key, []).append(f)
        return list(out.values())

    def __str__(self) -> str:
        lines = [self.headline()]
        if not self.captured:
            lines.append("(the model could not be captured, so only what stopped the capture is listed)")
        if not self.findings:
            return "\n".join(lines)
        groups = self.groups()
        rows = [(str(i), g[0].severity, g[0].kind, _ops(g), str(sum(f.count for f in g)), _places(g, 1),
                 g[0].source or "-" if len(g) == 1 else f"{len(g)} places")
                for i, g in enumerate(groups, 1)]
        head = ("#", "severity", "kind", "op", "count", "module", "source")
        widths = [min(48, max(len(r[c]) for r in [head, *rows])) for c in range(len(head))]
        fmt = "  ".join(f"{{:{'>' if c in (0, 4) else '<'}{w}}}" for c, w in enumerate(widths))
        lines += [fmt.format(*head), "-" * (sum(widths) + 2 * (len(widths) - 1))]
        for r, g in zip(rows, groups, strict=True):
            f = g[0]
            lines.append(fmt.format(*(x if len(x) <= 48 else x[:45] + "..." for x in r)))
            if len(g) > 1:
                lines.append(textwrap.fill(f"     at: {_places(g)}", width=110, subsequent_indent=" " * 9))
            lines.append(f"     why: {f.reason}")
            lines.append(f"     fix: {f.fix}" + (f"  [ak.port recipe: {f.recipe}]" if f.recipe else ""))
            lines.append(f"     rule ({f.evidence}): {f.rule_source}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """One short row per group of identical findings (what, how many, where, the recipe), then its why, fix
        and the rule's source once on a full-width row beneath: ten narrow columns made the why ~100 px wide."""
        e = html.escape
        color = {"error": "#b00020", "warning": "#8a6d00"}
        left = "text-align: left; vertical-align: top"
        rows = []
        for g in self.groups():
            f = g[0]
            count = sum(x.count for x in g)
            source = f.rule_source
            shown = source[len(f.evidence) + 1:].strip() if source.lower().startswith(f.evidence + ":") else source
            where = (e(f.where) + (f"<br><small>{e(f.source)}</small>" if f.source else "") if len(g) == 1
                     else f"{len(g)} places:<br><small>{e(_places(g))}</small>")
            rows.append(
                f"<tr style='border-top: 1px solid #ccc'><td style='{left}; color:{color.get(f.severity, 'inherit')}'>"
                f"<b>{e(f.severity)}</b></td><td style='{left}'>{e(f.kind)}</td>"
                f"<td style='{left}'><code>{e(_ops(g))}</code>{f' x{count}' if count > 1 else ''}</td>"
                f"<td style='{left}'>{where}"
                + f"</td><td style='{left}'>{e(f.recipe or '-')}</td></tr>"
                f"<tr><td></td><td colspan='4' style='{left}'>{e(f.reason)}<br><b>fix:</b> {e(f.fix)}<br>"
                f"<small>rule ({e(f.evidence)}): {e(shown)}</small></td></tr>")
        table = ("<table style='width: 100%; table-layout: auto'><tr><th style='text-align: left'>severity</th>"
                 "<th style='text-align: left'>kind</th><th style='text-align: left'>op</th>"
                 "<th style='text-align: left'>module, source</th><th style='text-align: left'>ak.port recipe</th></tr>"
                 f"{''.join(rows)}</table>" if self.findings else "")
        notes = "".join(f"<p><small>note: {e(n)}</small></p>" for n in self.notes)
        return f"<p><b>{e(self.headline())}</b></p>{table}{notes}"


def _ops(group: list[Finding]) -> str:
    """The op of a group of findings, or ``"aten.expand.default (+5 ops)"`` when they are about several."""
    ops = list(dict.fromkeys(f.op for f in group))
    return ops[0] + (f" (+{len(ops) - 1} ops)" if len(ops) > 1 else "")


def _places(group: list[Finding], limit: int = 6) -> str:
    """Where a group of identical findings are: ``"aten.sort in h.0.attn (model.py:41), ... and 9 more"`` (the op
    named where the group has several); with ``limit=1``, the first place and how many more."""
    several = len({f.op for f in group}) > 1
    places = [(f"{f.op.removeprefix('aten.')} in " if several else "") + f"{f.where}"
              + (f" ({f.source})" if f.source else "") for f in group]
    if limit == 1:
        return group[0].where if len(group) == 1 else f"{group[0].module or '<root>'} (+{len(group) - 1} more)"
    shown = ", ".join(places[:limit])
    return shown + (f", and {len(places) - limit} more" if len(places) > limit else "")


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------
def resolve_target(target: Any) -> Any:
    """An :class:`AcceleratorSpec` from a name (the catalog's ``UnknownNameError`` if unknown) or a spec."""
    if isinstance(target, str):
        from accelkit import hardware

        return hardware.get(target)
    if hasattr(target, "family") and hasattr(target, "memory_tiers"):
        return target
    raise AccelkitError(f"target must be a chip name or an AcceleratorSpec, not {type(target).__name__}",
                        fix="e.g. target='tsp'; see accelkit.hardware.names()")


def check_dynamic_dims(model: nn.Module | None, example_inputs: Any, dynamic_dims: Any) -> None:
    """Refuse ``dynamic_dims`` that name no input or a dimension the input does not have (``{0: 7}`` on a 2-D
    input), before any work: ``{name or position: dim or [dims]}``."""
    if dynamic_dims is None:
        return
    fix = "key dynamic_dims by argument name or position, each with a dimension or a list of them, e.g. {'input_ids': 1}"
    if not isinstance(dynamic_dims, Mapping):
        raise ArgumentError(f"dynamic_dims must be a dict, not {got(dynamic_dims)}", fix=fix)
    values = named_inputs(model, example_inputs)
    names = list(values)
    for key, dims in dynamic_dims.items():
        if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(names):
            name = names[key]
        elif isinstance(key, str) and key in values:
            name = key
        else:
            raise ArgumentError(f"dynamic_dims names input {key!r}, but forward's inputs are {names}", fix=fix)
        value = values[name]
        listed = [dims] if isinstance(dims, int) else dims
        if not isinstance(listed, (list, tuple)) or not listed or \
                any(isinstance(d, bool) or not isinstance(d, int) for d in listed):
            raise ArgumentError(f"dynamic_dims[{key!r}] must be a dimension or a list of them, not {got(dims)}",
                                fix=fix)
        rank = value.dim() if isinstance(value, torch.Tensor) else 0
        for d in listed:
            if not 0 <= d < rank:
                raise ArgumentError(f"dynamic_dims[{key!r}] = {dims!r}: input {name!r} has {rank} dimension(s) "
                                    f"(shape {list(value.shape) if rank else '()'}), so dimension {d} does not exist",
                                    fix=f"name a dimension from 0 to {rank - 1}" if rank else fix)


def unwrap(model: nn.Module) -> nn.Module:
    """The user's model inside ``ak.port``'s whole-model wrappers (their ``.inner``), for names and lines."""
    while type(model).__module__ == "accelkit.porting.recipes":
        inner = getattr(model, "inner", None)
        if not isinstance(inner, nn.Module):
            break
        model = inner
    return model


def forward_source(model: nn.Module | None) -> str | None:
    """``file.py:line`` of the model's ``def forward`` (where inputs are declared)."""
    if model is None:
        return None
    try:
        fn = inspect.unwrap(type(unwrap(model)).forward)  # past decorators (transformers wraps forward)
        path = inspect.getsourcefile(fn)
        _, line = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    return source_label(path, line)


def default_dtype(spec: Any) -> str:
    """The chip's default training type: bfloat16 if it has it, else float16, else float32."""
    for d in ("bfloat16", "float16"):
        if d in spec.dtypes:
            return d
    return "float32"


def _fmt_bytes(n: float) -> str:
    from accelkit.hardware.spec import fmt_bytes

    return fmt_bytes(n)


# ------------------------------------------------------------------------------------------
# raw hits -> grouped findings
# ------------------------------------------------------------------------------------------
@dataclass
class _Hit:
    kind: str
    op: str
    module: str
    source: str | None
    reason: str
    fix: str
    severity: str
    recipe: str | None
    rule_source: str
    input_name: str | None = None
    chips_needed: int | None = None
    node: str | None = None  # the graph node it is about


def _hit_from_rule(rule: Rule, op: str, module: str, source: str | None, *, reason: str | None = None,
                   fix: str | None = None, input_name: str | None = None) -> _Hit:
    return _Hit(rule.kind, op, module, source, reason or rule.reason, fix or rule.fix, rule.severity,
                rule.recipe, rule.source, input_name)


def _group(hits: list[_Hit]) -> list[Finding]:
    groups: dict[tuple[Any, ...], list[_Hit]] = {}
    for h in hits:
        if h.severity == "none":
            continue
        key = (h.kind, h.op, h.source, h.reason, h.input_name)
        groups.setdefault(key, []).append(h)
    out = []
    for hs in groups.values():
        h = hs[0]
        modules = tuple(dict.fromkeys(x.module for x in hs))
        out.append(Finding(kind=h.kind, op=h.op, count=len(hs), module=h.module, source=h.source, reason=h.reason,
                           fix=h.fix, severity=h.severity, recipe=h.recipe, rule_source=h.rule_source,
                           modules=modules, input_name=h.input_name, chips_needed=h.chips_needed,
                           nodes=tuple(dict.fromkeys(x.node for x in hs if x.node))))
    order = {"error": 0, "warning": 1}
    return sorted(out, key=lambda f: order.get(f.severity, 2))  # stable: errors first, then graph order


# ------------------------------------------------------------------------------------------
# the individual checks
# ------------------------------------------------------------------------------------------
def _capture_hits(err: CaptureError, table: SupportTable) -> list[_Hit]:
    rule = table.rule(_CAPTURE_KIND_TO_RULE.get(err.kind, "capture-error"))
    module = err.module or "<root>"
    return [_hit_from_rule(rule, err.op or "forward", module, err.source, reason=f"{rule.reason} ({err.message.splitlines()[0]})",
                           fix=f"{rule.fix}" + (f"; {err.fix}" if err.fix and rule.recipe is None else ""))]


def _shape_is_data_dependent(val: Any) -> bool:
    leaves = tree_flatten(val)[0]
    for t in leaves:
        if isinstance(t, torch.Tensor):
            for d in t.shape:
                if isinstance(d, torch.SymInt) and getattr(d.node, "expr", None) is not None \
                        and any(str(s).startswith("u") for s in d.node.expr.free_symbols):
                    return True
    return False


def _data_dependent_shape_hits(model: nn.Module, example_inputs: Any, table: SupportTable) -> list[_Hit]:
    """Export again and find ops whose output size depends on the data (nonzero, unique, x[mask])."""
    from accelkit.graph.capture import _source_from_stack  # the same rule for "the user's line"

    args, kwargs = split_inputs(example_inputs)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            ep = torch.export.export(model, args, kwargs, strict=False)
    except Exception:
        return []
    rule = table.rule("data-dependent-shape")
    hits = []
    for fx in ep.graph.nodes:
        if fx.op != "call_function" or not _shape_is_data_dependent(fx.meta.get("val")):
            continue
        op = str(fx.target)
        if any(k in op for k in ("sym_size", "getitem", "_assert")):
            continue
        stack = fx.meta.get("nn_module_stack") or {}
        module = list(stack.values())[-1][0] if stack else "<root>"
        source, _ = _source_from_stack(fx.meta.get("stack_trace"))
        hits.append(_hit_from_rule(rule, op, module or "<root>", source))
    return hits


def _node_hits(graph: Graph, table: SupportTable, spec: Any) -> list[_Hit]:
    hits: list[_Hit] = []
    user_inputs = set(graph.inputs)
    aliases = set(user_inputs)  # user inputs and views of them
    supported = set(spec.dtypes)
    inplace_rule = table.rule("inplace-on-input")
    for n in graph.nodes:
        if n.section != "fwd":
            continue
        first = len(hits)
        module = n.module or "<root>"
        kwargs = n.extra.get("kwargs", {})
        rule = table.op_rule(n.op, n.kind, kwargs)
        if rule is None and is_custom_op(n.op):
            hits.append(_hit_from_rule(table.rule("custom-op"), n.op, module, n.source))
        if rule is not None:
            args_txt = ", ".join(f"{k}={v!r}" for k, v in rule.when)
            hits.append(_Hit("unsupported-op", n.op + (f" ({args_txt})" if args_txt else ""), module, n.source,
                             rule.reason, rule.fix, rule.severity, rule.recipe, rule.source))
        if n.kind in HOST_SYNC_KINDS:
            hits.append(_hit_from_rule(table.rule("host-sync"), n.op, module, n.source))
        if n.kind in DATA_DEPENDENT_SHAPE_KINDS:
            hits.append(_hit_from_rule(table.rule("data-dependent-shape"), n.op, module, n.source))
        if n.kind in VIEW_OPS and n.args and n.args[0] in aliases:
            aliases.add(n.name)
        elif n.kind.endswith("_") and not n.kind.endswith("__") and n.args and n.args[0] in aliases:
            hits.append(_hit_from_rule(inplace_rule, n.op, module, n.source,
                                       reason=f"{inplace_rule.reason} (the input written is a view of a forward argument)",
                                       input_name=_root_input(n, graph, user_inputs)))
        mixed = sorted({m.dtype for m in n.inputs}) if n.kind in SAME_DTYPE_KINDS else []
        if len(mixed) > 1:  # fails on every machine, this CPU included: say so before compile or a run does
            dtype_rule = table.rule("dtype")
            hits.append(_Hit("dtype", n.op, module, n.source,
                             f"{n.kind} gets tensors of {' and '.join(mixed)}; it needs one dtype, so the model fails "
                             f"when it runs (PyTorch: 'mat1 and mat2 must have the same dtype')",
                             "convert the input to the weights' dtype (x.float()), or pass integer ids through an "
                             "nn.Embedding first", "error", None, dtype_rule.source))
        for meta in {m.dtype for m in n.outputs}:
            if meta not in supported:
                hits.append(_dtype_hit(table, meta, n.op, module, n.source))
        for h in hits[first:]:
            h.node = n.name
    for name, src in graph.mutated_inputs.items():
        if not any(h.kind == "inplace-on-input" and h.source == src for h in hits):
            hits.append(_hit_from_rule(inplace_rule, f"in-place write to input {name}", "<root>", src, input_name=name))
    return hits


def _root_input(node: Node, graph: Graph, user_inputs: set[str]) -> str | None:
    by_name = {n.name: n for n in graph.nodes}
    name = node.args[0] if node.args else None
    while name is not None and name not in user_inputs:
        prev = by_name.get(name)
        name = prev.args[0] if prev is not None and prev.args else None
    return name


def _dtype_hit(table: SupportTable, dtype: str, op: str, module: str, source: str | None,
               input_name: str | None = None) -> _Hit:
    d = table.dtypes.get(dtype)
    if d is not None:
        return _Hit("dtype", op, module, source, f"{dtype}: {d.reason}", d.fix, d.severity, d.recipe, d.source,
                    input_name)
    rule = table.rule("dtype")
    return _hit_from_rule(rule, op, module, source, reason=f"{dtype}: {rule.reason}", input_name=input_name)


def _input_hits(model: nn.Module | None, example_inputs: Any, graph: Graph | None, table: SupportTable,
                spec: Any, dynamic_dims: Mapping[Any, Any] | None) -> list[_Hit]:
    """Inputs of a dtype the chip lacks, and inputs declared to vary in size."""
    hits = []
    src = forward_source(model)
    if graph is not None and graph.inputs:
        metas = {name: (m.dtype, m.shape) for name, m in graph.inputs.items()}
        if model is not None and unwrap(model) is not model:  # a wrapper's forward(*args): use the user's names
            user = list(named_inputs(unwrap(model), example_inputs))
            if len(user) == len(metas):
                metas = dict(zip(user, metas.values(), strict=True))
    else:
        metas = {name: (str(v.dtype).replace("torch.", ""), tuple(v.shape))
                 for name, v in named_inputs(model, example_inputs).items() if isinstance(v, torch.Tensor)}
    for name, (dtype, _shape) in metas.items():
        if dtype not in spec.dtypes:
            hits.append(_dtype_hit(table, dtype, f"input {name}", "<input>", src, input_name=name))
    rule = table.rule("dynamic-input")
    names = list(metas)
    for key, dims in (dynamic_dims or {}).items():
        name = names[key] if isinstance(key, int) and key < len(names) else str(key)
        if name not in metas:
            raise AccelkitError(f"dynamic_dims names input {key!r}, but forward's tensor inputs are {names}",
                                fix="key dynamic_dims by argument name or position, e.g. {'input_ids': 1}")
        for d in ([dims] if isinstance(dims, int) else list(dims)):
            size = metas[name][1][d]
            hits.append(_hit_from_rule(rule, f"input {name} dim {d} (example size {size})", "<input>", src,
                                       input_name=name))
    return hits


def _too_large_hit(param_count: int, spec: Any, table: SupportTable, training: bool) -> _Hit | None:
    rule = table.rule("too-large")
    dtype = default_dtype(spec)
    from accelkit.hardware.catalog import BYTES_PER_PARAM

    bpp = BYTES_PER_PARAM["bf16 training"] if training else DTYPE_BYTES[dtype]
    need = param_count * bpp
    tiers = holding_tiers(spec)
    room = usable_bytes(spec)  # the memory plan's room per chip (accelkit.hardware.capacity)
    cap = sum(room[t.name] for t in tiers)
    chips = chips_to_hold(need, cap)
    if chips <= 1:
        return None
    what = (f"{bpp} bytes/parameter for mixed-precision Adam training" if training
            else f"{bpp} bytes/parameter at {dtype}")
    tier_txt = " + ".join(f"{t.name} {_fmt_bytes(room[t.name])}" for t in tiers)
    reason = (f"{param_count / 1e9:,.2f} B parameters x {what} = {_fmt_bytes(need)}; one {spec.name} holds "
              f"{_fmt_bytes(cap)} usable ({tier_txt}); {_fmt_bytes(need)} / {_fmt_bytes(cap)} = {need / cap:,.1f} "
              f"-> needs {chips:,} chips")
    if spec.max_chips is not None and chips > spec.max_chips:
        reason += f", more than the largest published {spec.name} system ({spec.max_chips:,} chips)"
    fix = f"compile for {chips:,} or more chips (pipeline / tensor parallel), or use a smaller or quantized model"
    hit = _hit_from_rule(rule, "parameters", "<model>", None, reason=reason, fix=fix)
    hit.chips_needed = chips
    return hit


def _loss_hit(graph: Graph, table: SupportTable, model: nn.Module | None) -> _Hit | None:
    rule = table.rule("loss-outside-model")
    if not rule.enabled or any(m.shape == () and m.dtype.startswith(("float", "bfloat")) for m in graph.outputs):
        return None
    return _hit_from_rule(rule, "forward returns " + ", ".join(str(m) for m in graph.outputs), "<root>",
                          forward_source(model))


# ------------------------------------------------------------------------------------------
# the public function
# ------------------------------------------------------------------------------------------
def _capture_or_findings(model: nn.Module, example_inputs: Any, training: bool, table: SupportTable,
                         spec: Any) -> tuple[Graph | None, list[_Hit]]:
    """The model's graph, or (where it cannot be captured) None and the findings that say why, each an error:
    ``ak.compile`` needs the graph, so what stops the capture stops the compile."""
    from accelkit.graph.capture import captured

    hits: list[_Hit] = []
    try:
        with warnings.catch_warnings():  # nn.LSTM's flat-weights export warning says nothing to a learner
            warnings.filterwarnings("ignore", message="The tensor attributes .* were assigned during export")
            return captured(model, example_inputs, training), []  # ak.compile's cache: one capture per model
    except CaptureError as err:
        if err.kind in ("unsupported", "dynamic-shape"):
            hits += _data_dependent_shape_hits(model, example_inputs, table)
        if not hits:
            hits += _capture_hits(err, table)
    except AccelkitError:
        raise
    except Exception as exc:  # capture itself tripped over a data-dependent size
        dd = _data_dependent_shape_hits(model, example_inputs, table) if "data-dependent" in str(exc) \
            or "unbacked" in str(exc) else []
        hits += dd or [_hit_from_rule(table.rule("capture-error"), "forward", "<root>", forward_source(model),
                                      reason=f"capture failed: {type(exc).__name__}: "
                                             f"{str(exc).strip().splitlines()[0][:200]}")]
    for h in hits:  # one verdict with ak.compile, which needs the graph: what stops the capture is an error
        if h.severity == "warning":
            h.severity = "error"
            h.reason += (f"; accelkit cannot capture {type(model).__name__} as one graph because of it, so "
                         f"ak.compile refuses it (a real {spec.name} may run it eagerly, paying this cost)")
    return None, hits


def _graph_hits(graph: Graph, model: nn.Module | None, example_inputs: Any, table: SupportTable, spec: Any,
                training: bool) -> list[_Hit]:
    """What the captured graph shows: its ops, outputs that are not tensors, and (training) the loss."""
    hits = _node_hits(graph, table, spec)
    outputs = non_tensor_outputs(model, example_inputs, graph) if model is not None and example_inputs is not None \
        else None
    if outputs is not None:  # export accepts Python constants among the outputs; a device program does not
        hits.append(_hit_from_rule(table.rule("non-tensor-output"), "output", "<root>", outputs.source,
                                   reason=f"{table.rule('non-tensor-output').reason}: {outputs.detail}"))
    if training:
        loss = _loss_hit(graph, table, model)
        hits += [loss] if loss else []
    return hits


def check(
    model: nn.Module | None,
    example_inputs: Any = None,
    target: Any = "wse2",
    *,
    graph: Graph | None = None,
    training: bool = False,
    dynamic_dims: Mapping[Any, int | Sequence[int]] | None = None,
    name: str | None = None,
) -> CompatibilityReport:
    """Check ``model`` on ``example_inputs`` against ``target``: what stops it, where, and the fix.

    ``target`` is a catalog name (``"tsp"``, ``"sn40l"``, ...; an unknown name raises
    :class:`~accelkit.UnknownNameError`) or an ``AcceleratorSpec``. Pass ``graph=`` to reuse a
    graph from :func:`accelkit.capture`. ``training=True`` checks a training step (and, on
    targets whose SDK wants it, that forward returns the loss). ``dynamic_dims`` declares input
    dimensions that vary between calls, e.g. ``{"input_ids": 1}`` or ``{0: [0, 1]}``. ``name`` is how
    the report names the model (default: its class name).

    A model that cannot be captured does not raise: the report holds a finding from the
    :class:`~accelkit.CaptureError` that points at the line.
    """
    spec = resolve_target(target)
    flag("training", training)
    if model is not None:
        check_dynamic_dims(model, example_inputs, dynamic_dims)
    table = table_for(spec)
    hits: list[_Hit] = []
    notes: list[str] = []
    if graph is not None and not isinstance(graph, Graph):
        raise ArgumentError(f"graph must be a Graph from ak.capture(...), not {got(graph)}",
                            fix="check(graph=ak.capture(model, inputs), target=...), or pass the model itself")
    if graph is None:
        if model is None:
            raise AccelkitError("check needs a model (or graph=)", fix="check(model, example_inputs, target)")
        graph, hits = _capture_or_findings(model, example_inputs, training, table, spec)
    captured = graph is not None
    if graph is not None:
        hits += _graph_hits(graph, model, example_inputs, table, spec, training)
    hits = _input_hits(model, example_inputs, graph, table, spec, dynamic_dims) + hits
    if graph is not None:
        param_count = graph.param_count
    else:
        param_count = sum(p.numel() for p in model.parameters()) if model is not None else 0
    big = _too_large_hit(param_count, spec, table, training)
    if big is not None:
        hits.insert(0, big)
    name = name or (graph.model_name if graph is not None and graph.model_name else type(model).__name__)
    if not captured:
        notes.append("ops were not checked: fix the capture finding first, then check again")
    return CompatibilityReport(
        target=spec.name, family=spec.family, sdk=table.sdk, model_name=name, findings=tuple(_group(hits)),
        captured=captured, tables=table.files, notes=tuple(notes), graph=graph,
    )


__all__ = ["KINDS", "CompatibilityReport", "Finding", "check", "check_dynamic_dims", "default_dtype", "forward_source", "named_inputs",
           "resolve_target", "split_inputs", "unwrap"]
