"""What in a model may not port to an accelerator, found from its captured graph.

An accelerator compiler (SambaNova's, Cerebras', Poplar, GroqFlow) takes the whole forward
as one static graph of standard ATen ops. Six things in a PyTorch model commonly stop that,
and each is found here with the user's ``file:line`` and a fix:

=============================  ==============================================================
kind                           what it is
=============================  ==============================================================
``unsupported-op``             an op outside the ``aten`` / ``prims`` namespaces (a C++ or
                               ``torch.library`` extension): the vendor compiler has no kernel
``non-tensor-output``          forward returns something that is not a tensor (or a
                               tuple/dict of tensors), e.g. a cache object or a Python number
``dtype``                      float64 (double precision): accelerators have no float64 units
``data-dependent-control-flow``  a Python ``if`` / ``while`` on a tensor's value: the graph
                               would depend on the data, so it cannot be compiled once
``host-sync``                  ``.item()`` / ``.tolist()`` (``aten._local_scalar_dense``,
                               ``aten.item``): the device stops and the host reads a value
``inplace-on-input``           an in-place op (``x += 1``, ``x.relu_()``) on a forward input:
                               the device does not own the caller's buffer
=============================  ==============================================================

The method is the capture every later stage uses (:func:`accelkit.capture`, i.e. torch.export).
When capture itself refuses the model (:class:`~accelkit.errors.CaptureError`), that refusal
becomes the finding: capture stops at the first such problem, so a model with several is
best checked again after the first fix.

The kinds and fixes are the porting check's (``ak.check``, :mod:`accelkit.porting.check`), from the rules every
graph compiler shares (``porting/tables/common.toml``): one vocabulary, whether or not a target is named.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from torch import nn

from accelkit.errors import CaptureError
from accelkit.graph.cost import VIEW_OPS
from accelkit.graph.ir import Graph
from accelkit.porting.check import HOST_SYNC_KINDS, is_custom_op
from accelkit.porting.outputs import non_tensor_outputs
from accelkit.porting.support import SupportTable, load_table

KINDS = (
    "unsupported-op",
    "non-tensor-output",
    "dtype",
    "data-dependent-control-flow",
    "host-sync",
    "inplace-on-input",
    "capture-error",
)
"""The kinds the profiler reports: the porting check's own vocabulary (``accelkit.porting.check.KINDS``), for
what is visible without a target: custom ops, non-tensor outputs, float64, data-dependent control flow, host
syncs, in-place writes to inputs, and what stops capture."""

_HOST_SYNC_OPS = HOST_SYNC_KINDS
_WIDE_DTYPES = frozenset({"float64", "complex128"})
_CAPTURE_KINDS = {"data-dependent-control-flow": "data-dependent-control-flow", "host-sync": "host-sync",
                  "non-tensor-output": "non-tensor-output"}  # other capture errors: "capture-error"


@cache
def _generic() -> SupportTable:
    """The rules every graph compiler shares (the porting tables' common.toml): their fixes are the profiler's."""
    return load_table(None)


def fix_for(kind: str) -> str:
    """The porting check's fix for a finding of ``kind``, from the shared rules."""
    table = _generic()
    if kind == "unsupported-op":
        return table.rule("custom-op").fix
    if kind == "dtype":
        return table.dtypes["float64"].fix
    return table.rule(kind).fix


@dataclass(frozen=True)
class PortabilityFinding:
    """One thing that may stop the model from porting, where it is, and how to fix it.

    ``op`` is the ATen overload (``"aten._local_scalar_dense.default"``), ``module`` the dotted
    path of the owning module (``""`` for the root), ``source`` the user's ``file:line``;
    each is ``None`` where unknown. ``count`` is how many graph nodes the finding groups.
    """

    kind: str
    op: str | None
    module: str | None
    source: str | None
    detail: str
    fix: str
    count: int = 1

    def __str__(self) -> str:
        where = ", ".join(p for p in (
            f"module {self.module or '<root>'}" if self.module is not None else None,
            self.source) if p)
        op = f" {self.op}" if self.op else ""
        return f"[{self.kind}]{op}" + (f" at {where}" if where else "") + f": {self.detail}\n  fix: {self.fix}"


def find_portability_issues(model: nn.Module, example_inputs: Any) -> list[PortabilityFinding]:
    """Capture ``model`` and list what may not port to an accelerator, one finding per place.

    ``example_inputs`` is what :func:`accelkit.capture` takes (a tensor, a tuple of tensors or a
    dict of keyword tensors). Never raises on a model that capture refuses: the refusal is returned
    as a finding. The model's train/eval flags are restored afterwards; nothing is computed on
    real data (capture and the output check run on fake tensors).
    """
    from accelkit.graph import capture  # late import: the graph package does not need the profiler

    modes = [(m, m.training) for m in model.modules()] if isinstance(model, nn.Module) else []
    try:
        try:
            graph = capture(model, example_inputs)
        except CaptureError as err:
            kind = _CAPTURE_KINDS.get(err.kind, "capture-error")
            return [PortabilityFinding(
                kind=kind, op=err.op, module=_module_name(err.module), source=err.source,
                detail=err.message.splitlines()[0] if err.message else str(err),
                fix=fix_for(kind),
            )]
        return findings_from_graph(graph) + _non_tensor_outputs(model, example_inputs, graph)
    finally:
        for m, was_training in modes:
            m.training = was_training


def findings_from_graph(graph: Any) -> list[PortabilityFinding]:
    """The findings of an already captured :class:`~accelkit.graph.Graph`, grouped per place."""
    groups: dict[tuple[str, str | None, str | None, str | None], list[str]] = {}

    def add(kind: str, op: str | None, module: str | None, source: str | None, what: str) -> None:
        groups.setdefault((kind, op, _module_name(module), source), []).append(what)

    produced = {n.name for n in graph.nodes}
    wide_nodes: set[str] = set()  # nodes with a float64 output
    downstream = 0  # ops that compute in float64 only because an earlier op did
    aliases_of_input: dict[str, str] = {}  # node or placeholder name -> the user input it views
    for node in graph.nodes:
        namespace, _, rest = node.op.partition(".")
        packet = rest.split(".")[0]
        if is_custom_op(node.op):
            add("unsupported-op", node.op, node.module, node.source, f"{node.op} is not an ATen op")
        if namespace == "aten" and packet in _HOST_SYNC_OPS:
            add("host-sync", node.op, node.module, node.source,
                f"{node.op} copies a tensor value to the host (.item() / .tolist())")
        wide = [str(t) for t in (*node.inputs, *node.outputs) if t.dtype in _WIDE_DTYPES]
        if wide and not packet.startswith(("_assert", "sym_")):  # metadata checks compute nothing
            if any(t.dtype in _WIDE_DTYPES for t in node.outputs):
                wide_nodes.add(node.name)
            # flag where float64 enters (a cast, a float64 parameter/buffer/input), not every op after it
            if any(a in wide_nodes for a in node.args if a != node.name):
                downstream += 1
            else:
                add("dtype", node.op, node.module, node.source,
                    f"{node.op} brings in float64 ({', '.join(dict.fromkeys(wide))})")

        # an input is a placeholder that no node produces and that is not a parameter or buffer
        first = node.args[0] if node.args else None
        if first is not None and first not in produced and not (node.param_inputs[:1] or [False])[0]:
            aliases_of_input.setdefault(first, first)
        user_input = aliases_of_input.get(first) if first is not None else None
        if user_input is not None:
            if node.kind in VIEW_OPS or "getitem" in node.op:
                aliases_of_input[node.name] = user_input
            elif node.kind.endswith("_") and not node.kind.endswith("__"):
                add("inplace-on-input", node.op, node.module, node.source,
                    f"{node.op} writes into the forward input '{user_input}'")

    sources = {k[3] for k in groups if k[0] == "inplace-on-input"}
    for name, source in (getattr(graph, "mutated_inputs", None) or {}).items():
        if source not in sources:  # export's own record, where the node walk above found nothing
            add("inplace-on-input", None, None, source, f"forward modifies its input '{name}' in place")

    for kind_of, tensors in (("parameter", graph.params), ("buffer", getattr(graph, "buffers", {}) or {})):
        for name, meta in tensors.items():
            if meta.dtype in _WIDE_DTYPES:
                owner = name.rpartition(".")[0]
                add("dtype", None, owner, None, f"{kind_of} '{name}' is stored as {meta}")

    findings = []
    for (kind, op, module, source), whats in groups.items():
        detail = whats[0] + (f" ({len(whats)} nodes)" if len(whats) > 1 else "")
        if kind == "dtype" and op is not None and downstream:
            detail += f"; {downstream} later ops compute in float64 because of it"
        findings.append(PortabilityFinding(kind, op, module, source, detail, fix_for(kind), len(whats)))
    return findings


def _module_name(module: str | None) -> str | None:
    """Graph nodes name the root module ``""``, capture errors ``"<root>"``: findings say ``<root>``."""
    return "<root>" if module == "" else module


def _non_tensor_outputs(model: nn.Module, example_inputs: Any, graph: Graph) -> list[PortabilityFinding]:
    found = non_tensor_outputs(model, example_inputs, graph)
    if found is None:
        return []
    return [PortabilityFinding(kind="non-tensor-output", op="output", module="<root>", source=found.source,
                               detail=found.detail, fix=fix_for("non-tensor-output"), count=found.count)]


def format_findings(findings: Iterable[PortabilityFinding]) -> str:
    """The findings one per block, or a line saying there are none."""
    items = list(findings)
    if not items:
        return "No portability issues found (custom ops, non-tensor outputs, float64, data-dependent "\
               "control flow, host syncs, in-place changes to inputs)."
    return "\n".join(str(f) for f in items)
