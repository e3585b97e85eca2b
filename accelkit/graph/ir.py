"""The Graph IR: ATen-level nodes with shapes, dtypes, owning module, source line and cost.

A :class:`Graph` is a plain value: a list of :class:`Node` in execution order plus what the
model's parameters and inputs are. Every later stage (check, compile, estimate) reads it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

Shape = tuple[int, ...]

SECTIONS = ("fwd", "bckwd", "opt")


@dataclass(frozen=True)
class TensorMeta:
    """Shape and dtype of one tensor flowing along an edge (no data)."""

    shape: Shape
    dtype: str  # torch dtype name without the "torch." prefix, e.g. "float32"

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPE_BYTES.get(self.dtype, 4)

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


DTYPE_BYTES = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "float8_e4m3fn": 1, "float8_e5m2": 1,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
    "complex64": 8, "complex128": 16,
}


@dataclass(frozen=True)
class Node:
    """One ATen operation of the captured model.

    ``op`` is the ATen overload (``"aten.mm.default"``); ``kind`` is its short name (``"mm"``).
    ``module`` is the dotted path of the owning ``nn.Module`` (``""`` for the root) and
    ``module_type`` its class name; ``source`` is the user's ``file:line`` where PyTorch
    recorded one. ``flops`` come from PyTorch's flop registry where it has a formula, else from
    accelkit's vector-op model (``flops_from`` says which). ``param_inputs`` marks which inputs
    are parameters or buffers. ``section`` is ``fwd``, ``bckwd`` or ``opt``.
    """

    name: str
    op: str
    kind: str
    inputs: list[TensorMeta]
    outputs: list[TensorMeta]
    args: list[str] = field(default_factory=list)  # producer node / placeholder names
    module: str = ""
    module_type: str = ""
    source: str | None = None
    flops: int = 0
    flops_from: str = "none"  # "registry" | "vector-model" | "none"
    bytes_read: int = 0
    bytes_written: int = 0
    param_inputs: list[bool] = field(default_factory=list)
    param_bytes: int = 0
    section: str = "fwd"
    block: str | None = None  # name of the repeated block this node was copied from, if any
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def reads_params(self) -> bool:
        return any(self.param_inputs)

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        outs = ", ".join(map(str, self.outputs))
        where = f"  [{self.module or '<root>'}]" if self.module or self.module_type else ""
        return f"{self.name}: {self.kind}({ins}) -> {outs}{where}"


@dataclass(frozen=True)
class Graph:
    """A captured model: nodes in execution order and what its inputs and parameters are.

    A frozen value: a capture is shared by every program compiled from it (and by the capture cache), so
    nothing may change it in place; a pass makes a new one with ``dataclasses.replace(graph, nodes=...)``.
    Its nodes are a tuple."""

    nodes: tuple[Node, ...]
    inputs: dict[str, TensorMeta]
    params: dict[str, TensorMeta]  # parameters, by their fully qualified name
    outputs: list[TensorMeta]
    buffers: dict[str, TensorMeta] = field(default_factory=dict)  # buffers (running stats, tables)
    model_name: str = ""
    training: bool = False
    capture_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    mutated_inputs: dict[str, str] = field(default_factory=dict)  # user input -> line that mutates it
    output_names: list[str] = field(default_factory=list)  # nodes whose values forward returns
    # the type of each value forward returned that is not a tensor (export keeps Python constants and sizes
    # among the outputs): ("str", "int") for ``return x, "tag", 3``; empty when forward returns tensors only
    non_tensor_outputs: tuple[str, ...] = ()
    # "inner.inner." when ak.port wrapped the user's model (twice): figures strip it from module names
    wrapper_prefix: str = ""
    # the images are laid out channels last (NHWC: ``x.to(memory_format=torch.channels_last)``, or a model whose
    # convolution weights were converted): PyTorch picks other kernels for them (batch norm, cuDNN's layout)
    channels_last: bool = False
    # the optimizer whose step a training capture recorded (a name of accelkit.graph.capture.OPTIMIZERS, "custom"
    # for a callable); "" for an inference capture
    optimizer: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))

    # ---- totals ---------------------------------------------------------------------------
    @property
    def total_flops(self) -> int:
        return sum(n.flops for n in self.nodes)

    @property
    def param_count(self) -> int:
        return sum(m.numel for m in self.params.values())

    @property
    def param_bytes(self) -> int:
        return sum(m.nbytes for m in self.params.values())

    @property
    def total_bytes(self) -> int:
        return sum(n.bytes_read + n.bytes_written for n in self.nodes)

    def flops_by_section(self) -> dict[str, int]:
        out = {s: 0 for s in SECTIONS}
        for n in self.nodes:
            out[n.section] = out.get(n.section, 0) + n.flops
        return out

    def section(self, name: str) -> list[Node]:
        return [n for n in self.nodes if n.section == name]

    # ---- views ----------------------------------------------------------------------------
    def summary_rows(self, depth: int = 1) -> list[dict[str, Any]]:
        """Per-module totals, grouping module paths to ``depth`` dotted components."""
        rows: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
        for n in self.nodes:
            mod = ".".join(n.module.split(".")[:depth]) if n.module else "<root>"
            key = (n.section, mod)
            r = rows.setdefault(key, {"section": n.section, "module": mod, "nodes": 0, "flops": 0,
                                      "bytes": 0, "param_bytes": 0})
            r["nodes"] += 1
            r["flops"] += n.flops
            r["bytes"] += n.bytes_read + n.bytes_written
            r["param_bytes"] += n.param_bytes
        return list(rows.values())

    def summary(self, depth: int = 1) -> str:
        """A per-module table: nodes, FLOPs, bytes moved, parameter bytes (all counted, not timed)."""
        rows = self.summary_rows(depth)
        head = f"{'section':<6} {'module':<40} {'nodes':>6} {'GFLOP':>10} {'MB moved':>10} {'param MB':>9}"
        lines = [
            f"Graph of {self.model_name or 'model'}: {len(self.nodes)} nodes, "
            f"{self.param_count:,} parameters ({self.param_bytes / 1e6:.1f} MB), "
            f"{self.total_flops / 1e9:.3f} GFLOP" + (" (training step)" if self.training else ""),
            head,
            "-" * len(head),
        ]
        for r in rows:
            lines.append(
                f"{r['section']:<6} {r['module'][:40]:<40} {r['nodes']:>6} {r['flops'] / 1e9:>10.3f} "
                f"{r['bytes'] / 1e6:>10.2f} {r['param_bytes'] / 1e6:>9.2f}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        rows = self.summary_rows()
        cells = "".join(
            f"<tr><td>{r['section']}</td><td>{r['module']}</td><td>{r['nodes']}</td>"
            f"<td>{r['flops'] / 1e9:.3f}</td><td>{r['bytes'] / 1e6:.2f}</td></tr>"
            for r in rows
        )
        return (
            f"<p>Graph of {self.model_name or 'model'}: {len(self.nodes)} nodes, "
            f"{self.param_count:,} parameters, {self.total_flops / 1e9:.3f} GFLOP</p>"
            "<table><tr><th>section</th><th>module</th><th>nodes</th><th>GFLOP</th><th>MB moved</th></tr>"
            f"{cells}</table>"
        )

    def table(self, limit: int | None = 30) -> str:
        """The nodes one per line with shapes: what the compiler will see."""
        shown = self.nodes if limit is None else self.nodes[:limit]
        lines = [str(n) for n in shown]
        if limit is not None and len(self.nodes) > limit:
            lines.append(f"... {len(self.nodes) - limit} more nodes")
        return "\n".join(lines)


# ---- plain-data round trip (used by the compiled artifact; JSON only, never pickle) ----------
def _meta_to(m: TensorMeta) -> list[Any]:
    return [list(m.shape), m.dtype]


def _meta_from(v: list[Any]) -> TensorMeta:
    return TensorMeta(tuple(int(d) for d in v[0]), str(v[1]))


def graph_to_dict(g: Graph) -> dict[str, Any]:
    nodes = []
    for n in g.nodes:
        d = dict(n.__dict__)
        d["inputs"] = [_meta_to(m) for m in n.inputs]
        d["outputs"] = [_meta_to(m) for m in n.outputs]
        d["extra"] = {k: v for k, v in n.extra.items() if isinstance(v, (str, int, float, bool, type(None)))}
        nodes.append(d)
    return {
        "model_name": g.model_name, "training": g.training, "capture_s": g.capture_s, "notes": list(g.notes),
        "inputs": {k: _meta_to(v) for k, v in g.inputs.items()},
        "params": {k: _meta_to(v) for k, v in g.params.items()},
        "buffers": {k: _meta_to(v) for k, v in g.buffers.items()},
        "outputs": [_meta_to(m) for m in g.outputs],
        "mutated_inputs": dict(g.mutated_inputs), "output_names": list(g.output_names),
        "wrapper_prefix": g.wrapper_prefix, "non_tensor_outputs": list(g.non_tensor_outputs),
        "channels_last": g.channels_last, "optimizer": g.optimizer, "nodes": nodes,
    }


def graph_from_dict(d: dict[str, Any]) -> Graph:
    nodes = []
    for nd in d["nodes"]:
        nd = dict(nd)
        nd["inputs"] = [_meta_from(m) for m in nd["inputs"]]
        nd["outputs"] = [_meta_from(m) for m in nd["outputs"]]
        nodes.append(Node(**nd))
    return Graph(
        nodes=tuple(nodes), inputs={k: _meta_from(v) for k, v in d["inputs"].items()},
        params={k: _meta_from(v) for k, v in d["params"].items()},
        outputs=[_meta_from(m) for m in d["outputs"]],
        buffers={k: _meta_from(v) for k, v in d.get("buffers", {}).items()},
        model_name=d["model_name"], training=bool(d["training"]), capture_s=float(d["capture_s"]),
        notes=list(d["notes"]), mutated_inputs=dict(d["mutated_inputs"]), output_names=list(d["output_names"]),
        wrapper_prefix=str(d.get("wrapper_prefix", "")),
        non_tensor_outputs=tuple(str(t) for t in d.get("non_tensor_outputs", ())),
        channels_last=bool(d.get("channels_last", False)), optimizer=str(d.get("optimizer", "") or ""),
    )
