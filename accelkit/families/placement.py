"""Where kernels run on a chip: ``Region`` and ``Placement`` (plain values), and the helpers the families'
placement methods share. Each family's ``ExecutionModel.place`` builds its own (``accelkit.families``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any

from accelkit.cost.kernel import Kernel, layers
from accelkit.errors import AccelkitError


@dataclass(frozen=True)
class Region:
    """A rectangle of mesh rows/cols (wafer) or a unit range (others) assigned to kernels."""

    name: str  # the layer or kernel
    kernels: tuple[str, ...]
    chip: int
    row0: int
    col0: int
    rows: int
    cols: int
    units: int  # compute units (cores, PCUs, tiles, slices) it uses
    memory_units: int = 0  # PMUs on an RDU
    memory_bytes: int = 0  # bytes it holds in on-chip memory
    start_cycle: int = 0  # static schedule only
    cycles: int = 0
    slice: str = ""  # TSP functional slice / GPU stream
    section: str = "fwd"
    where: str = ""  # how the family says where it is ("rows 0-849, cols 0-99", "cycles 0-110")

    def overlaps(self, other: Region) -> bool:
        return (self.chip == other.chip and self.row0 < other.row0 + other.rows
                and other.row0 < self.row0 + self.rows and self.col0 < other.col0 + other.cols
                and other.col0 < self.col0 + self.cols)


@dataclass(frozen=True)
class Placement:
    """Where a program's kernels run. What one family alone records is typed too: ``sections`` (an RDU's
    count of sections), ``total_cycles`` and ``chips_used`` (a TSP's static schedule), ``streamed_kernels``
    (a wafer in weight streaming: the kernels that take the whole wafer in turn, not drawn as regions).
    ``extra`` is a read-only view of those under their old names, for readers and saved artifacts."""

    family: str
    grid: tuple[int, int]  # rows x cols of the unit array drawn for this chip
    regions: tuple[Region, ...]
    chips: int
    unit_name: str
    notes: tuple[str, ...] = ()
    stages: tuple[tuple[str, ...], ...] = ()  # pipeline stages (layers per chip) when pipelined
    host_regions: tuple[Region, ...] = ()  # compile(..., fallback="host"): host kernels and host-link transfers
    sections: int | None = None  # RDU: sections the fused kernels form (each one load of the chip)
    total_cycles: int | None = None  # TSP: the static schedule's length
    chips_used: int | None = None  # TSP: chips the schedule spans
    streamed_kernels: tuple[str, ...] = ()  # wafer, weight streaming: the kernels not drawn as regions

    def __post_init__(self) -> None:
        object.__setattr__(self, "streamed_kernels", tuple(self.streamed_kernels))

    @property
    def extra(self) -> Mapping[str, Any]:
        """The family's own figures under their old string keys, read-only (absent where unset)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in ("sections", "total_cycles", "chips_used")
                               if getattr(self, k) is not None}
        if self.streamed_kernels:
            out["streamed_kernels"] = list(self.streamed_kernels)
        return MappingProxyType(out)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values, as a saved artifact stores them (the family's figures under ``extra``)."""
        out = {k: v for k, v in asdict(self).items() if k not in _TYPED}
        out["extra"] = dict(self.extra)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Placement:
        """The placement :meth:`to_dict` wrote."""
        d = dict(d)
        extra = dict(d.pop("extra", None) or {})
        unknown = sorted(set(extra) - set(_TYPED))
        if unknown:
            raise ValueError(f"placement extra has unknown key(s) {unknown}; known: {sorted(_TYPED)}")
        d["regions"] = tuple(Region(**{**r, "kernels": tuple(r["kernels"])}) for r in d["regions"])
        d["host_regions"] = tuple(Region(**{**r, "kernels": tuple(r["kernels"])}) for r in d.get("host_regions", ()))
        d["grid"] = tuple(d["grid"])
        d["notes"] = tuple(d["notes"])
        d["stages"] = tuple(tuple(s) for s in d["stages"])
        return cls(**d, **extra)

    def region_of(self, kernel: str) -> Region:
        for r in self.regions:
            if kernel in r.kernels:
                return r
        raise KeyError(kernel)

    def summary(self, limit: int = 8) -> str:
        lines = [f"{len(self.regions)} regions on {self.chips} chip(s), {self.unit_name} grid "
                 f"{self.grid[0]}x{self.grid[1]}"]
        for r in self.regions[:limit]:
            where = r.where or f"{r.units} {self.unit_name}s" + (f", {r.memory_units} PMUs" if r.memory_units else "")
            lines.append(f"  chip {r.chip} {r.name:<28} {len(r.kernels):>3} kernel(s)  {where}")
        if len(self.regions) > limit:
            lines.append(f"  ... {len(self.regions) - limit} more")
        for r in self.host_regions[:limit]:
            lines.append(f"  {r.slice:<6} {r.name:<28} {r.where}")
        if len(self.host_regions) > limit:
            lines.append(f"  ... {len(self.host_regions) - limit} more on the host")
        return "\n".join(lines)


_TYPED = ("sections", "total_cycles", "chips_used", "streamed_kernels")
"""The typed fields that saved artifacts store under ``extra``."""


class PlacementError(AccelkitError):
    """A placement that breaks an invariant (a kernel unplaced, units over memory, overlaps)."""


def split_units(total: int, weights: list[float], minimum: int = 1) -> list[int]:
    """Integers ≥ minimum, proportional to weights, summing to at most total (largest remainder)."""
    n = len(weights)
    if n == 0:
        return []
    if total < n * minimum:
        raise PlacementError(f"{n} kernels need at least {n * minimum} units, the chip has {total}",
                             fix="use more chips or a coarser fusion level")
    s = sum(weights) or n
    share = [minimum + (total - n * minimum) * (w if sum(weights) else 1) / s for w in weights]
    out = [int(math.floor(x)) for x in share]
    rest = total - sum(out)
    for i in sorted(range(n), key=lambda i: share[i] - out[i], reverse=True)[:rest]:
        out[i] += 1
    return out


def within(module: str, prefix: str) -> bool:
    """``module`` is ``prefix`` or one of its submodules (``"h.1.attn"`` is within ``"h.1"``, ``"h.10"`` is not)."""
    return module == prefix or (bool(prefix) and module.startswith(prefix + "."))


def pipeline_stages(kernels: list[Kernel], n: int, starts: tuple[tuple[str, int], ...] = ()) -> dict[str, int]:
    """The pipeline stage (chip) of each kernel, by name: a layer's forward, backward and optimizer kernels all on
    the stage that holds the layer. ``starts``: where blocks begin, as PopTorch's ``BeginBlock`` says it (module
    name, chip): from the first kernel of that module on, in the forward's order, everything runs on that chip until
    the next block begins (a chip may hold several blocks: a tied head back on the first IPU); before the first,
    chip 0. Without ``starts``, the forward's layers in order, cut into ``n`` stages of about equal FLOPs."""
    fwd = [k for k in kernels if k.section == "fwd"]
    stage: dict[str, int] = {}
    if starts:
        nested = sorted(starts, key=lambda s: len(s[0]))  # a block inside another begins after it
        cur, prev = 0, None
        for k in fwd:
            for module, chip in nested:
                if within(k.module, module) and (prev is None or not within(prev, module)):
                    cur = chip
            stage[k.name] = cur
            prev = k.module
    else:
        units = layers(fwd)
        for s, idxs in enumerate(balanced_stages(units, n)):
            for i in idxs:
                for k in units[i][1]:
                    stage[k.name] = s
    by_module: dict[str, int] = {}
    by_group: dict[str, int] = {}
    for k in fwd:  # the first call of a module decides (a shared module runs where it was first called)
        by_module.setdefault(k.module, stage[k.name])
        by_group.setdefault(k.group, stage[k.name])
    last = stage[fwd[-1].name] if fwd else 0  # the loss is the forward's end: its backward starts there
    for k in kernels:
        if k.name in stage:
            continue
        if k.module in by_module:
            stage[k.name] = by_module[k.module]
            continue
        outer = [m for m in by_module if within(k.module, m)]  # the forward module it belongs to
        inner = [m for m in by_module if within(m, k.module)] if k.module else []  # a module it holds
        if outer:
            stage[k.name] = by_module[max(outer, key=len)]
        elif inner:
            stage[k.name] = by_module[inner[-1]]
        else:
            stage[k.name] = by_group.get(k.group, last)
    return stage


def balanced_stages(groups: list[tuple[str, list[Kernel]]], n: int) -> list[list[int]]:
    """Split consecutive groups into n stages (none empty while there are groups enough) so that the busiest
    holds as few FLOPs as it can: a pipeline runs at its busiest stage's pace. The least cap that a greedy packing
    fits in n stages, found by bisection; stages split further (never past the cap) until there are n."""
    flops = [float(sum(k.flops for k in ks)) for _, ks in groups]
    g, n = len(flops), max(1, n)
    if g <= n:
        return [[i] for i in range(g)] + [[] for _ in range(n - g)]

    def pack(cap: float) -> list[list[int]]:
        out: list[list[int]] = [[]]
        load = 0.0
        for i, f in enumerate(flops):
            if out[-1] and load + f > cap:
                out.append([])
                load = 0.0
            out[-1].append(i)
            load += f
        return out

    lo, hi = max(flops), sum(flops)
    for _ in range(60):  # the cap to a part in 2^60 of the total
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if len(pack(mid)) <= n else (mid, hi)
    stages = pack(hi)
    while len(stages) < n:  # more IPUs than the cap needs: split the busiest stage that has two groups or more
        s = max((i for i, st in enumerate(stages) if len(st) > 1), key=lambda i: sum(flops[j] for j in stages[i]))
        st = stages[s]
        total, acc, cut = sum(flops[j] for j in st), 0.0, 1
        for k, j in enumerate(st[:-1], start=1):  # where the two halves balance best
            acc += flops[j]
            if abs(total - 2 * acc) <= abs(total - 2 * sum(flops[j2] for j2 in st[:cut])):
                cut = k
        stages[s:s + 1] = [st[:cut], st[cut:]]
    return stages
