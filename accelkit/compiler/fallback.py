"""CPU fallback: ``ak.compile(..., fallback="host")`` runs the ops a target refuses on the host CPU.

    findings (check)  ->  host_nodes(graph, findings)   which graph nodes the host runs
    kernels (fusion)  ->  partition(kernels, graph, host)  host kernels marked, a transfer kernel at each
                                                          boundary, both ways (the "partition" pass)
    placement         ->  with_host(placement, kernels)  host partitions and transfers beside the chip's

What a host can run that the chip cannot (:data:`HOST_FIXABLE`): an op the target's support table refuses,
an op in a dtype the chip has no arithmetic for, an extension (custom) op, a ``.item()`` that reads a value
on the host. Whatever stops the graph itself (a capture error, data-dependent control flow or shapes, a
loss the SDK wants inside the model, a model too large for the chips) the host cannot fix: those stay errors.

The backward of a host op runs on the host too: a backward node whose module's forward ran on the host
entirely, or which differentiates a host op (its ``grad_of``), goes with it. Tensors that cross between a
host and a device partition are moved over the host link (PCIe, ...), each once per step and direction;
the host holds the weights of the ops it runs, and the model's inputs and outputs start and end on the host
as on every target, so neither crosses.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from accelkit.compiler.passes import PassResult
from accelkit.cost.kernel import Kernel, OffDevice
from accelkit.families.placement import Placement, Region
from accelkit.graph.cost import VIEW_OPS
from accelkit.graph.ir import Graph, Node

FALLBACKS = (None, "host")
"""What ``compile(fallback=...)`` accepts: ``None`` refuses what the target cannot run, ``"host"`` runs it on
the host CPU."""

HOST_FIXABLE = frozenset({"unsupported-op", "dtype", "host-sync"})
"""Kinds of finding the host can take over (op by op); every other error stays an error."""

ON = "on"
"""The old ``Kernel.extra`` key saying where a kernel runs (now ``Kernel.off_device``: None on the device, ``on``
``"host"`` on the host CPU, ``"link"`` for a transfer over the host link, with its ``direction``)."""


def host_fixable(finding: Any) -> bool:
    """True when running the finding's ops on the host CPU removes it (see :data:`HOST_FIXABLE`)."""
    return finding.kind in HOST_FIXABLE and bool(finding.nodes or finding.input_name)


def host_nodes(graph: Graph, findings: list[Any], dtypes: tuple[str, ...]) -> frozenset[str]:
    """The graph nodes the host runs: the forward nodes the host-fixable errors name, every forward node that
    reads a tensor of a dtype one of them refuses (``dtypes``: the chip's), and the element picks (``getitem``)
    of a host op's results; then the backward nodes of those ops (see the module docstring)."""
    fwd = [n for n in graph.nodes if n.section == "fwd"]
    by_name = {n.name: n for n in fwd}
    errors = [f for f in findings if f.severity == "error" and host_fixable(f)]
    host: set[str] = {name for f in errors for name in f.nodes}
    refused = {m.dtype for f in errors if f.kind == "dtype" for name in f.nodes for m in by_name[name].outputs
               if m.dtype not in dtypes}
    refused |= {graph.inputs[f.input_name].dtype for f in errors
                if f.kind == "dtype" and f.input_name in graph.inputs and graph.inputs[f.input_name].dtype not in dtypes}
    for n in fwd:
        if n.kind not in VIEW_OPS and any(m.dtype in refused for m in n.inputs):
            host.add(n.name)
        elif n.kind == "getitem" and n.args and n.args[0] in host:  # one result of a host op stays with it
            host.add(n.name)
    if not host:
        return frozenset()
    compute = [n for n in fwd if n.kind not in VIEW_OPS and n.args]  # (a constant it creates runs anywhere)
    mods: dict[str, list[bool]] = {}
    for n in compute:
        mods.setdefault(n.module, []).append(n.name in host)
    whole = {m for m, flags in mods.items() if m and all(flags)}  # modules that run on the host entirely
    kinds = {(n.module, n.kind.replace("_", "").lower()) for n in fwd if n.name in host}
    for n in graph.nodes:
        if n.section == "bckwd" and (n.module in whole or (n.module, n.extra.get("grad_of")) in kinds):
            host.add(n.name)
    return frozenset(host)


def _producer_bytes(nodes: dict[str, Node], name: str) -> int:
    n = nodes.get(name)
    return sum(m.nbytes for m in n.outputs) if n is not None else 0


def partition(kernels: list[Kernel], graph: Graph, host: frozenset[str]) -> tuple[list[Kernel], PassResult]:
    """Mark the kernels the host runs and put a transfer kernel at each host partition's edges: what the
    partition reads from device kernels goes to the host before it, what device kernels read from it goes
    back after it. A partition is a run of consecutive host kernels in one section (fwd, bckwd)."""
    if not host:
        return kernels, PassResult("partition", False, "every op runs on the device", len(kernels), len(kernels))
    by_name = {n.name: n for n in graph.nodes}
    alias = {n.name: n.args[0] for n in graph.nodes if n.kind in VIEW_OPS and n.args}

    def root(name: str) -> str:
        seen = 0
        while name in alias and seen < 64:
            name, seen = alias[name], seen + 1
        return name

    on_host = [bool(k.nodes) and all(n in host for n in k.nodes if by_name[n].kind not in VIEW_OPS)
               for k in kernels]
    made_by = {n: i for i, k in enumerate(kernels) for n in k.nodes}  # node -> kernel index
    reads = [{root(a) for n in k.nodes for a in by_name[n].args} for k in kernels]
    runs: list[list[int]] = []
    for i, k in enumerate(kernels):
        if on_host[i]:
            if runs and runs[-1][-1] == i - 1 and kernels[i - 1].section == k.section:
                runs[-1].append(i)
            else:
                runs.append([i])
    out: list[Kernel] = []
    part_of = {i: p + 1 for p, r in enumerate(runs) for i in r}
    moved_in = moved_out = 0
    for i, k in enumerate(kernels):
        part = part_of.get(i, 0)
        run = runs[part - 1] if part else []
        inside = {n for j in run for n in kernels[j].nodes}
        if run and i == run[0]:
            came = {p for j in run for p in reads[j] if p in made_by and not on_host[made_by[p]] and p not in inside}
            if came:
                size = sum(_producer_bytes(by_name, p) for p in came)
                moved_in += size
                out.append(_transfer(k, f"{k.name}_to_host", "to host", size, len(came), part))
        if part:  # the host runs eager PyTorch: no kernel library, nothing generated
            k = replace(k, generated=None, off_device=OffDevice("host", part))
        out.append(k)
        if run and i == run[-1]:
            leaves = {p for j, rd in enumerate(reads) if not on_host[j] for p in rd if p in inside}
            if leaves:
                size = sum(_producer_bytes(by_name, p) for p in leaves)
                moved_out += size
                out.append(_transfer(k, f"{kernels[run[0]].name}_to_device", "to device", size, len(leaves), part))
    n_host = sum(on_host)
    details = tuple(f"host partition {p + 1} ({kernels[r[0]].section}): "
                    + ", ".join(f"{kernels[j].name} [{kernels[j].module or '<root>'}]" for j in r) for p, r in
                    enumerate(runs))
    n_moves = sum(1 for k in out if k.runs_on == "link")
    summary = (f"{n_host} kernel(s) on the host CPU in {len(runs)} partition(s); {n_moves} transfers over "
               f"the host link ({moved_in / 1e6:.3g} MB to the host, {moved_out / 1e6:.3g} MB back, at the "
               "captured batch)")
    return out, PassResult("partition", True, summary, len(kernels), len(out), details)


def _transfer(k: Kernel, name: str, direction: str, nbytes: int, tensors: int, part: int) -> Kernel:
    return Kernel(name=name, kind="memory", group=k.group, section=k.section, nodes=(), ops=(f"copy {direction}",),
                  module=k.module, source=k.source, flops=0, bytes_read=nbytes, bytes_written=0, param_bytes=0,
                  out_bytes=nbytes, saved_bytes=0, off_device=OffDevice("link", part, direction, tensors))


def where(k: Kernel) -> str:
    """``"device"``, ``"host"`` or ``"link"``: where a compiled kernel runs (``Kernel.runs_on``)."""
    return k.runs_on


def device_kernels(kernels: list[Kernel]) -> list[Kernel]:
    return [k for k in kernels if k.off_device is None]


def partitions(kernels: list[Kernel]) -> int:
    """How many host partitions a compiled program has."""
    return max((k.partition for k in kernels), default=0)


def with_host(placement: Placement, kernels: list[Kernel], host_name: str) -> Placement:
    """The chip's placement plus one region per host kernel and transfer (``Placement.host_regions``)."""
    regions = []
    for k in kernels:
        w, part = where(k), k.partition
        if w == "host":
            regions.append(Region(k.name, (k.name,), 0, 0, 0, 1, 1, 1, slice="host CPU", section=k.section,
                                  where=f"host partition {part} ({host_name})"))
        elif w == "link":
            regions.append(Region(k.name, (k.name,), 0, 0, 0, 1, 1, 1, slice="host link", section=k.section,
                                  where=f"{k.off_device.direction if k.off_device else None}, host partition {part}"))
    if not regions:
        return placement
    n_host = sum(1 for r in regions if r.slice == "host CPU")
    note = (f"{n_host} kernel(s) run on the host CPU in {partitions(kernels)} partition(s); tensors crossing "
            "between host and device go over the host link, both ways")
    return replace(placement, host_regions=tuple(regions), notes=(*placement.notes, note))


__all__ = ["FALLBACKS", "HOST_FIXABLE", "ON", "device_kernels", "host_fixable", "host_nodes", "partition", "partitions",
           "where", "with_host"]
