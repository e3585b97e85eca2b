"""Compiler passes: an explicit, named pipeline over the captured graph.

Each pass takes the working node list and returns a :class:`PassResult` saying whether it
changed anything and what, so a notebook can show the graph after every pass.

    legality -> constant folding -> dead-code elimination -> fusion (into kernels) -> kernel matching
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from accelkit.cost.kernel import Generated, Kernel, layer_of, layers  # noqa: F401 - re-exported: the compiler's output
from accelkit.families import ExecutionModel, model_for
from accelkit.graph.capture import OPTIMIZERS
from accelkit.graph.cost import (
    GATHER_OPS,
    MATMUL_KINDS,
    VIEW_OPS,
    WeightShapes,
    attention_score_flops,
    matmul_dims,
)
from accelkit.graph.ir import Graph, Node

# Ops that only exist for tracing (asserts, symbolic sizes): never run on a chip.
_TRACE_ONLY = frozenset({"_assert_tensor_metadata", "_assert_scalar", "sym_size", "sym_numel",
                         "sym_stride", "_assert_async", "sym_constrain_range_for_size"})


@dataclass(frozen=True)
class PassResult:
    """What one pass did: ``changed`` and a one-line ``summary``; ``details`` lists the items. ``graph`` is
    the graph after the pass (``graph.table()`` shows it), so each pass can be looked at on its own; it
    shares the captured graph's nodes (no copy) and a loaded artifact has none (``None``)."""

    name: str
    changed: bool
    summary: str
    nodes_before: int
    nodes_after: int
    details: tuple[str, ...] = ()
    graph: Graph | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.name:<16} {self.nodes_before:>6} -> {self.nodes_after:<6} {self.summary}"


# ---------------------------------------------------------------------------------------------
def legality(nodes: list[Node], *, findings: list[Any]) -> tuple[list[Node], PassResult]:
    """Refuses nothing itself: lists what the compatibility check found (errors stop compile earlier, except
    those ``compile(..., fallback="host")`` hands to the host CPU)."""
    warn = [f"{'host CPU: ' if f.severity == 'error' else ''}{f.kind}: {f.op} ({f.source or f.module or '?'}) {f.fix}"
            for f in findings]
    kinds: dict[str, int] = {}
    for f in findings:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    to_host = sum(f.severity == "error" for f in findings)
    summary = "every op is supported" if not warn else (
        f"{len(warn) - to_host} warning(s)" + (f", {to_host} error(s) the host CPU takes over" if to_host else "")
        + ": " + ", ".join(f"{n} {k}" for k, n in kinds.items()))
    return nodes, PassResult("legality", False, summary, len(nodes), len(nodes), tuple(warn))


def constant_folding(nodes: list[Node], *, input_names: set[str]) -> tuple[list[Node], PassResult]:
    """Nodes that read no user input (only parameters and constants) run once at compile time."""
    live: set[str] = set(input_names)
    kept, folded = [], []
    for n in nodes:
        if n.section != "fwd" or any(a in live for a in n.args) or n.kind in _TRACE_ONLY:
            live.add(n.name)
            kept.append(n)
        elif n.kind in VIEW_OPS and not n.args:
            kept.append(n)  # a view of nothing: left for dead-code elimination
        else:
            folded.append(n)
    details = tuple(f"{n.name}: {n.kind} [{n.module or '<root>'}]" for n in folded)
    return kept, PassResult("constant-folding", bool(folded),
                            f"folded {len(folded)} node(s) that depend only on weights and constants"
                            + (f" ({', '.join(sorted({n.kind for n in folded})[:6])})" if folded else ""),
                            len(nodes), len(kept), details)


def dead_code(nodes: list[Node], *, output_names: set[str]) -> tuple[list[Node], PassResult]:
    """Drops trace-only nodes and forward nodes whose results nobody reads."""
    used: set[str] = set(output_names)
    for n in nodes:
        used.update(n.args)
    kept, dropped = [], []
    for n in reversed(nodes):
        dead = n.kind in _TRACE_ONLY or (n.section == "fwd" and n.name not in used and output_names)
        if dead:
            dropped.append(n)
        else:
            kept.append(n)
    kept.reverse()
    return kept, PassResult("dead-code", bool(dropped), f"removed {len(dropped)} node(s) with no consumer "
                            "or only there for tracing", len(nodes), len(kept),
                            tuple(f"{n.name}: {n.kind}" for n in reversed(dropped)))


def _model(family: str | ExecutionModel) -> ExecutionModel:
    """The family's execution model: given (looked up once by the caller), or looked up by its name."""
    return family if isinstance(family, ExecutionModel) else model_for(family)


def fusion(nodes: list[Node], *, family: str | ExecutionModel, level: str = "o1",
           host: frozenset[str] = frozenset(),
           weight_shapes: frozenset[tuple[int, ...]] | WeightShapes = frozenset(),
           update: tuple[int, dict[str, int]] | None = None) -> tuple[list[Kernel], PassResult]:
    """Groups nodes into kernels, and kernels into layers (``Kernel.group``).

    A matmul-type op starts a kernel and the elementwise ops after it fuse into it as an epilogue
    (as torch.compile's inductor does); a kernel never spans two layers; views vanish. What a
    layer becomes depends on the family (see placement):

    - ``reconfigurable-dataflow``: ``o1`` makes each layer one section (SambaFlow's o1 mode fuses
      operators into sections); ``o0`` makes every op a section of its own.
    - ``wafer-dataflow``: each layer becomes one region of the mesh.
    - ``bsp-tiles``: each kernel is a set of codelets on the tiles (one superstep);
      ``static-schedule``: a block of the static schedule; ``gpu``/``cpu``: one launched kernel.

    Nodes in ``host`` (``compile(..., fallback="host")``) never share a kernel with nodes that are not.
    ``weight_shapes`` (the parameters' shapes) mark the tensors whose bytes do not grow with the batch
    (``Kernel.fixed_*``). ``update`` is the optimizer's (state tensors per weight, each module's own parameter
    bytes): a fused optimizer kernel updates its module's weights in place, reading each weight, its gradient and
    its state once and writing the weight and its state once (a multi-tensor update), which the bytes of the ops
    it fuses do not say (each op mutates a tensor an earlier op of the kernel made).
    """
    model = _model(family)
    # a family with fusion levels fuses nothing at its first (SambaFlow o0: every op a section of its own)
    unfused = bool(model.fusion_levels) and level == model.fusion_levels[0]
    compute = [n for n in nodes if n.kind not in VIEW_OPS]
    groups: list[list[Node]] = []
    for n in compute:
        # the optimizer's scalar bookkeeping (step counters, bias corrections) belongs to no module:
        # it rides along with the update it serves instead of starting a kernel of its own
        joins = groups and n.section == "opt" and not n.module
        starts = not joins and (unfused or n.kind in MATMUL_KINDS
                                or not groups or (groups[-1][0].section, layer_of(groups[-1][0].module))
                                != (n.section, layer_of(n.module)))
        if groups and (n.name in host) != (groups[-1][-1].name in host):
            starts = True
        if starts:
            groups.append([n])
        else:
            groups[-1].append(n)
    # a view is the tensor it views: resolve names so fused kernels see their own intermediates
    alias = {n.name: n.args[0] for n in nodes if n.kind in VIEW_OPS and n.args}

    def root(name: str) -> str:
        seen = 0
        while name in alias and seen < 64:
            name, seen = alias[name], seen + 1
        return name

    shapes = weight_shapes if isinstance(weight_shapes, WeightShapes) else WeightShapes(frozenset(weight_shapes))
    kernels = [_kernel(i, g, root, shapes) for i, g in enumerate(groups)]
    if unfused:  # every op is a group (an RDU section) of its own
        kernels = [replace(k, group=k.name) for k in kernels]
    elif update is not None:
        states, own = update
        # the weight read once (its parameter bytes), its gradient and state as large at any batch
        kernels = [replace(k, bytes_read=(2 + states) * own[k.module], bytes_written=(1 + states) * own[k.module],
                           param_bytes=own[k.module], fixed_bytes_read=(1 + states) * own[k.module],
                           fixed_bytes_written=(1 + states) * own[k.module])
                   if k.section == "opt" and own.get(k.module) else k for k in kernels]
    n_groups = len(layers(kernels))
    unit = model.fusion_unit
    return kernels, PassResult(
        "fusion", len(kernels) != len(nodes),
        f"{len(compute)} ops -> {len(kernels)} kernels in {n_groups} {unit} "
        f"({model.family}{', ' + level if model.fusion_levels else ''}); "
        f"{len(nodes) - len(compute)} views folded into their consumers", len(nodes), len(kernels),
        tuple(f"{k.name}: {'+'.join(k.ops[:6])}{'…' if len(k.ops) > 6 else ''}" for k in kernels[:200]))


def kernel_matching(kernels: list[Kernel], *, family: str | ExecutionModel, nodes: list[Node] | None = None) -> tuple[
        list[Kernel], PassResult]:
    """Matches each fused kernel to the toolchain's hand-written kernel library (the family's
    ``kernel_library``). A kernel with an op the library does not cover is left over: the compiler generates
    code for it (the Cerebras stack's route for ops outside its kernel library), and it runs at the family's
    ``generated_efficiency`` of a library kernel's rate: ``Kernel.generated`` names the ops and its
    ``efficiency`` is the factor the cost layer applies to the whole kernel, weighted by FLOPs (given the
    ``nodes``), so a library matmul with a generated epilogue slows only by its epilogue's share. A family without
    a library (GPU, CPU) has a library kernel for every op."""
    model = _model(family)
    library = model.kernel_library
    if library is None:
        return kernels, PassResult("kernel-matching", False, "every op has a library kernel", len(kernels),
                                   len(kernels))
    eff = model.generated_efficiency.value if model.generated_efficiency else 1.0
    by_name = {n.name: n for n in nodes or ()}
    out, details = [], []
    for k in kernels:
        left = sorted({op for op in k.ops if op not in library and op not in VIEW_OPS and op not in _TRACE_ONLY})
        if left:
            # without the nodes, the whole kernel counts as generated
            gen = sum(by_name[n].flops for n in k.nodes if n in by_name and by_name[n].kind in left) \
                if by_name else k.flops
            share = k.flops / (k.flops - gen + gen / eff) if k.flops else eff
            k = replace(k, generated=Generated(tuple(left), share))
            details.append(f"{k.name} [{k.module or '<root>'}] {k.source or ''}: generated for {', '.join(left)}")
        out.append(k)
    n = len(details)
    ops = sorted({op for k in out if k.generated for op in k.generated.ops})
    summary = (f"{len(out) - n} kernels from the library, {n} generated"
               + (f" (for {', '.join(ops[:5])}{'…' if len(ops) > 5 else ''}; those ops at {eff:.0%} of a library "
                  "kernel's rate)" if n else ""))
    return out, PassResult("kernel-matching", bool(n), summary, len(kernels), len(out), tuple(details))


def _kernel(i: int, group: list[Node], root: Callable[[str], str] = lambda a: a,
            weight_shapes: WeightShapes | None = None) -> Kernel:
    lead = next((n for n in group if n.kind in MATMUL_KINDS), group[0])
    kind = "matmul" if lead.kind in MATMUL_KINDS else ("vector" if any(n.flops for n in group) else "memory")
    internal = {n.name for n in group}
    # bytes: what enters the group from outside, and what leaves it (intermediates stay on chip)
    readers = [n for n in group if not any(root(a) in internal for a in n.args)] or group[:1]
    read = _reads_from_outside(group, internal, root)
    consumed_inside = {root(a) for n in group for a in n.args}
    writers = [n for n in group if n.name not in consumed_inside] or group[-1:]
    written = sum(n.bytes_written for n in writers)
    fixed = _fixed(group, readers, writers, weight_shapes or WeightShapes(frozenset()))
    return Kernel(
        name=f"k{i}_{lead.kind}", kind=kind, group=layer_of(lead.module), section=lead.section,
        nodes=tuple(n.name for n in group), ops=tuple(n.kind for n in group), module=lead.module, source=lead.source,
        flops=sum(n.flops for n in group), bytes_read=read, bytes_written=written,
        param_bytes=sum(n.param_bytes for n in group), out_bytes=group[-1].bytes_written,
        saved_bytes=sum(n.bytes_written for n in group),
        matmul_dims=matmul_dims(lead.kind, list(lead.inputs)),
        fixed_bytes_read=fixed[0], fixed_bytes_written=fixed[1], fixed_flops=fixed[2],
        vector_flops=sum(n.flops for n in group if n.kind not in MATMUL_KINDS),
        score_flops=sum(attention_score_flops(n.kind, list(n.inputs)) for n in group),
    )


def _reads_from_outside(group: list[Node], internal: set[str], root: Callable[[str], str]) -> int:
    """Bytes a fused kernel reads from memory: each tensor it takes from outside itself, once, however many of its
    ops read it (an intermediate one op makes and the next consumes stays on chip). A node whose inputs are not all
    named (an exported op with a size among its inputs) counts its whole read, unless it reads something made
    inside the kernel."""
    seen: set[str] = set()
    read = 0
    for n in group:
        if len(n.args) != len(n.inputs):
            if not any(root(a) in internal for a in n.args):
                read += n.bytes_read
            continue
        sizes = [m.nbytes for m in n.inputs]
        if n.kind in GATHER_OPS and sizes:  # a table is read only where indexed (node_bytes' rule)
            sizes[0] = n.bytes_written
        for a, size in zip(n.args, sizes, strict=True):
            r = root(a)
            if r not in internal and r not in seen:
                seen.add(r)
                read += size
    return read


def _fixed(group: list[Node], readers: list[Node], writers: list[Node],
           weight_shapes: WeightShapes) -> tuple[int, int, int]:
    """(bytes read, bytes written, FLOPs) of a kernel that do not grow with the batch, though no parameter is read:
    weight-shaped tensors (a weight's gradient and what adds it up, a weight cast to 16 bits). A matmul's FLOPs
    grow with the tokens it contracts over, whatever its output's shape; an elementwise op on a weight's gradient
    does the same work at any batch."""
    if not weight_shapes:
        return 0, 0, 0

    def made_by(n: Node) -> list[str | None]:
        return list(n.args) if len(n.args) == len(n.inputs) else [None] * len(n.inputs)

    read = sum(t.nbytes for n in readers
               for t, is_param, a in zip(n.inputs, n.param_inputs or [False] * len(n.inputs), made_by(n), strict=False)
               if not is_param and weight_shapes.fixed(tuple(t.shape), a))
    written = sum(t.nbytes for n in writers for t in n.outputs if weight_shapes.fixed(tuple(t.shape), n.name))
    flops = sum(n.flops for n in group if n.kind not in MATMUL_KINDS and n.outputs
                and all(weight_shapes.fixed(tuple(t.shape), n.name) for t in n.outputs))
    return (min(read, sum(n.bytes_read for n in readers)), min(written, sum(n.bytes_written for n in writers)),
            flops)


def run_pipeline(graph: Graph, *, family: str | ExecutionModel, level: str, findings: list[Any],
                 host: frozenset[str] = frozenset()) -> tuple[
        list[Node], list[Kernel], list[PassResult]]:
    """The named pipeline; returns the surviving nodes, the kernels and each pass's result. ``family`` is the
    family's name or its execution model (looked up once by the caller)."""
    family = _model(family)
    steps: list[tuple[str, Callable[..., Any], dict[str, Any]]] = [
        ("legality", legality, {"findings": findings}),
        ("constant-folding", constant_folding, {"input_names": set(graph.inputs)}),
        ("dead-code", dead_code, {"output_names": set(graph.output_names)}),
    ]
    nodes = list(graph.nodes)
    results = []
    for _name, fn, kw in steps:
        nodes, res = fn(nodes, **kw)
        results.append(replace(res, graph=replace(graph, nodes=tuple(nodes))))
    weight_shapes = WeightShapes.of(graph, nodes)
    update = None
    if graph.training and graph.optimizer in OPTIMIZERS:
        own: dict[str, int] = {}
        for name, meta in graph.params.items():
            module = name.rsplit(".", 1)[0] if "." in name else ""
            own[module] = own.get(module, 0) + meta.nbytes
        update = (OPTIMIZERS[graph.optimizer][0], own)
    kernels, res = fusion(nodes, family=family, level=level, host=host, weight_shapes=weight_shapes, update=update)
    results.append(replace(res, graph=replace(graph, nodes=tuple(nodes))))  # fusion groups nodes into kernels
    kernels, res = kernel_matching(kernels, family=family, nodes=nodes)
    results.append(replace(res, graph=results[-1].graph))  # matching labels kernels; the nodes stay as fused
    return nodes, kernels, results
