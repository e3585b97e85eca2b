"""Placement: kernels onto the compute units of each kind of chip.

- wafer-dataflow: each layer (region) gets a rectangle of the core mesh sized by its share of the
  FLOPs, so every region takes about as long as the others (a balanced pipeline). Regions are
  column strips laid left to right; none overlap. In weight-streaming mode one layer at a time
  owns the whole wafer, so regions are drawn for the ops inside the largest layer.
- reconfigurable-dataflow: sections run one after another, each owning the chip: PCUs are split
  among a section's kernels by FLOPs, PMUs by the bytes they hold.
- bsp-tiles: each kernel is a superstep (compute, sync, exchange) spread over tiles in
  proportion to its FLOPs; weights held on chip must fit the tiles' memory.
- static-schedule: a cycle-exact schedule of kernels on functional slices (MXM for matmuls, VXM
  for vector ops, MEM for copies) and chips; a kernel waits for its predecessor.
- gpu / cpu: the kernel sequence as launched, one stream.

Every kernel is placed exactly once; invariants are checked by :func:`check_placement`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from accelkit.compiler.memory import USABLE_SRAM_FRACTION, MemoryPlan
from accelkit.compiler.passes import Kernel, layers
from accelkit.cost import constants
from accelkit.errors import AccelkitError
from accelkit.hardware.spec import AcceleratorSpec
from accelkit.sim.estimate import rates, tsp_cycles  # the TSP schedule's cycles follow the performance model


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

    def overlaps(self, other: Region) -> bool:
        return (self.chip == other.chip and self.row0 < other.row0 + other.rows
                and other.row0 < self.row0 + self.rows and self.col0 < other.col0 + other.cols
                and other.col0 < self.col0 + self.cols)


@dataclass(frozen=True)
class Placement:
    family: str
    grid: tuple[int, int]  # rows x cols of the unit array drawn for this chip
    regions: tuple[Region, ...]
    chips: int
    unit_name: str
    notes: tuple[str, ...] = ()
    stages: tuple[tuple[str, ...], ...] = ()  # pipeline stages (layers per chip) when pipelined
    extra: dict[str, Any] = field(default_factory=dict)

    def region_of(self, kernel: str) -> Region:
        for r in self.regions:
            if kernel in r.kernels:
                return r
        raise KeyError(kernel)

    def summary(self, limit: int = 8) -> str:
        lines = [f"{len(self.regions)} regions on {self.chips} chip(s), {self.unit_name} grid "
                 f"{self.grid[0]}x{self.grid[1]}"]
        for r in self.regions[:limit]:
            where = (f"rows {r.row0}-{r.row0 + r.rows - 1}, cols {r.col0}-{r.col0 + r.cols - 1}"
                     if self.family == "wafer-dataflow" else
                     f"cycles {r.start_cycle}-{r.start_cycle + r.cycles}" if self.family == "static-schedule"
                     else f"{r.units} {self.unit_name}s" + (f", {r.memory_units} PMUs" if r.memory_units else ""))
            lines.append(f"  chip {r.chip} {r.name:<28} {len(r.kernels):>3} kernel(s)  {where}")
        if len(self.regions) > limit:
            lines.append(f"  ... {len(self.regions) - limit} more")
        return "\n".join(lines)


class PlacementError(AccelkitError):
    """A placement that breaks an invariant (a kernel unplaced, units over memory, overlaps)."""


def _split(total: int, weights: list[float], minimum: int = 1) -> list[int]:
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


def place(kernels: list[Kernel], spec: AcceleratorSpec, plan: MemoryPlan, *, chips: int,
          pipeline: int = 1, precision: str | None = None) -> Placement:
    fam = spec.family
    unit = spec.unit_name or "unit"
    if fam == "wafer-dataflow":
        return _place_wafer(kernels, spec, plan, chips, pipeline)
    if fam == "reconfigurable-dataflow":
        return _place_rdu(kernels, spec, chips)
    if fam == "bsp-tiles":
        return _place_ipu(kernels, spec, plan, chips, pipeline)
    if fam == "static-schedule":
        return _place_tsp(kernels, spec, plan, chips, precision, pipeline)
    regions = tuple(Region(k.name, (k.name,), 0, 0, i, 1, 1, spec.compute_units, slice="stream 0",
                           section=k.section) for i, k in enumerate(kernels))
    return Placement(fam, (1, max(1, len(kernels))), regions, chips, unit,
                     ("kernels launch one after another on one stream; each uses every SM",))


def _stages(groups: list[tuple[str, list[Kernel]]], n: int) -> list[list[int]]:
    """Split consecutive groups into n stages of about equal FLOPs."""
    flops = [sum(k.flops for k in ks) for _, ks in groups]
    total = sum(flops) or 1
    stages: list[list[int]] = [[] for _ in range(n)]
    acc = 0.0
    for i, f in enumerate(flops):
        s = min(n - 1, int(acc / total * n))
        stages[s].append(i)
        acc += f
    return stages


def _place_wafer(kernels: list[Kernel], spec: AcceleratorSpec, plan: MemoryPlan, chips: int,
                 pipeline: int = 1) -> Placement:
    rows, cols = spec.mesh_shape or (int(math.sqrt(spec.compute_units)),) * 2
    fwd = [k for k in kernels if k.section == "fwd"] or kernels
    if plan.mode == "weight-streaming":
        # one layer at a time on the whole wafer: draw the heaviest layer's kernels as regions
        groups = layers(fwd)
        repeated = [g for g in groups if g[0].rsplit(".", 1)[-1].isdigit()] or groups  # prefer a repeated block
        name, heavy = max(repeated, key=lambda g: sum(k.flops for k in g[1]))
        items: list[tuple[str, tuple[str, ...], int, int]] = [
            (k.name, (k.name,), k.flops, k.param_bytes) for k in heavy]
        notes = [f"weight streaming: each layer in turn owns all {rows * cols:,} cores; drawn: {name}",
                 "weights stream in from MemoryX layer by layer; activations stay on the wafer"]
        rest = [k.name for k in kernels if k.name not in {i[0] for i in items}]
    else:
        groups = layers(kernels)
        items = [(g, tuple(k.name for k in ks), sum(k.flops for k in ks) or 1, sum(k.param_bytes for k in ks))
                 for g, ks in groups]
        notes = ["pipelined: every layer keeps its own region and weights on the wafer; "
                 "region sizes follow FLOPs so each stage takes about as long"]
        if plan.replicas > 1:
            notes.append(f"the model is small: {plan.replicas} replicas could share the wafer (multi-replica)")
        rest = []
    # a region needs cores for its FLOPs (pipeline balance) and for its weights (SRAM beside each core)
    f_tot = sum(i[2] for i in items) or 1
    m_tot = sum(i[3] for i in items) or 1
    need = [max(i[2] / f_tot, i[3] / m_tot) for i in items]
    # over several wafers (pipeline parallel), consecutive layers share a wafer: equal shares of the need
    n_wafers = pipeline if plan.mode == "pipelined" and pipeline > 1 else 1
    wafer_of, acc, total_need = [], 0.0, sum(need) or 1.0
    for x in need:
        wafer_of.append(min(n_wafers - 1, int(acc / total_need * n_wafers)))
        acc += x
    section_of = {k.name: k.section for k in kernels}
    regions = []
    stages = []
    for w_idx in range(n_wafers):
        idx = [i for i, w in enumerate(wafer_of) if w == w_idx]
        if not idx:
            continue
        stages.append(tuple(items[i][0] for i in idx))
        widths = _split(cols, [need[i] for i in idx])
        c = 0
        for i, w in zip(idx, widths, strict=True):
            name, ks, _f, pbytes = items[i]
            regions.append(Region(name, ks, w_idx, 0, c, rows, w, rows * w, memory_bytes=pbytes,
                                  section=section_of[ks[0]]))
            c += w
    if n_wafers > 1:
        notes.append(f"pipelined over {n_wafers} wafers: consecutive layers share a wafer, activations hop between")
    return Placement("wafer-dataflow", (rows, cols), tuple(regions), chips, spec.unit_name or "core",
                     tuple(notes), stages=tuple(stages) if n_wafers > 1 else (), extra={"streamed_kernels": rest})


def _place_rdu(kernels: list[Kernel], spec: AcceleratorSpec, chips: int) -> Placement:
    pcus, pmus = spec.pcus or spec.compute_units, spec.pmus or spec.compute_units
    regions = []
    for idx, (name, ks) in enumerate(layers(kernels)):
        pc = _split(pcus, [k.flops or 1 for k in ks])
        pm = _split(pmus, [k.bytes or 1 for k in ks])
        for k, a, b in zip(ks, pc, pm, strict=True):
            regions.append(Region(k.name, (k.name,), 0, idx, 0, 1, a, a, memory_units=b,
                                  memory_bytes=k.param_bytes, slice=f"section {idx}: {name}", section=k.section))
    side = int(math.sqrt(pcus + pmus))
    grid = tuple(spec.mesh_shape) if spec.mesh_shape else (side, side)
    return Placement("reconfigurable-dataflow", (int(grid[0]), int(grid[1])), tuple(regions), chips, "PCU",
                     ("sections run one after another; inside a section every kernel has its own PCUs "
                      "(compute) and PMUs (on-chip memory) and data flows between them as a pipeline",),
                     extra={"sections": len(layers(kernels))})


def _place_ipu(kernels: list[Kernel], spec: AcceleratorSpec, plan: MemoryPlan, chips: int,
               pipeline: int) -> Placement:
    tiles = spec.compute_units
    groups = layers(kernels)
    n_stages = max(1, pipeline if pipeline > 1 else (plan.chips_needed if plan.mode == "on-chip" else 1))
    n_stages = min(n_stages, chips) if chips > 1 else 1
    stage_of = {}
    stages = _stages(groups, n_stages)
    for s, idxs in enumerate(stages):
        for i in idxs:
            for k in groups[i][1]:
                stage_of[k.name] = s
    regions = []
    for step, k in enumerate(kernels):
        # a superstep uses as many tiles as its FLOPs need, but weights on chip need room too
        units = tiles  # bulk-synchronous: every tile takes part in every superstep
        regions.append(Region(k.name, (k.name,), stage_of.get(k.name, 0), 0, 0, 1, units, units,
                              memory_bytes=k.param_bytes if plan.mode == "on-chip" else 0,
                              start_cycle=step, slice=f"superstep {step}", section=k.section))
    cols = spec.mesh_shape[1] if spec.mesh_shape else constants.value("IPU_TILE_COLUMNS")
    return Placement("bsp-tiles", (max(1, tiles // cols), cols), tuple(regions), chips, "tile",
                     ("each kernel is a superstep: every tile computes its share, all tiles sync, then "
                      "exchange results over the on-chip exchange",)
                     + ((f"pipelined over {n_stages} IPUs (PopTorch BeginBlock style)",) if n_stages > 1 else ()),
                     stages=tuple(tuple(groups[i][0] for i in idxs) for idxs in stages))


def _place_tsp(kernels: list[Kernel], spec: AcceleratorSpec, plan: MemoryPlan, chips: int,
               precision: str | None, pipeline: int = 1) -> Placement:
    """Weights packed chip after chip in program order (a layer larger than one chip's SRAM spans
    several, each computing its share); every kernel gets a fixed cycle count."""
    r = rates(spec, precision or spec.peak_16bit()[0])
    sram = spec.memory_tiers[0]
    cap = max(sram.capacity_bytes * USABLE_SRAM_FRACTION - plan.activation_bytes,
              constants.value("TSP_MIN_WEIGHT_SHARE") * sram.capacity_bytes)
    # kernels that share a weight (GPT-2's embedding and head) each count it; memory holds it once
    counted = sum(k.param_bytes for k in kernels)
    unique = plan.weights_bytes * max(1, pipeline)
    share = min(1.0, unique / counted) if counted else 1.0
    total = counted * share
    if chips > 1 and total:  # spread the weights evenly over every chip the program was given
        cap = min(cap, total / chips * (1 + 1e-9))
    chip, fill = 0, 0.0
    regions = []
    cycle = 0
    for k in kernels:
        if fill >= cap:
            chip, fill = chip + 1, 0.0
        first, rest = chip, float(k.param_bytes) * share
        while rest > 0:
            take = min(cap - fill, rest)
            fill, rest = fill + take, rest - take
            if rest > 0:
                chip, fill = chip + 1, 0.0
        span = chip - first + 1
        cycles = tsp_cycles(k, r, sram.name)
        sl = {"matmul": "MXM", "vector": "VXM", "memory": "MEM"}[k.kind]
        regions.append(Region(k.name, (k.name,), first, 0, 0, 1, 1, span, memory_bytes=k.param_bytes,
                              start_cycle=cycle, cycles=cycles, slice=sl, section=k.section))
        cycle += cycles
    if chip + 1 > chips:
        raise PlacementError(f"the weights need {chip + 1} {spec.name} chips of SRAM; the program has {chips}",
                             fix=f"compile with chips={chip + 1}")
    return Placement("static-schedule", (1, 4), tuple(regions), chips, "functional slice",
                     ("a static schedule: the compiler fixes the cycle of every instruction, so the same "
                      "input always takes the same time",
                      f"weights packed over {chip + 1} chip(s) in program order; data hops chip to chip"),
                     extra={"total_cycles": cycle, "chips_used": chip + 1})


def check_placement(p: Placement, kernels: list[Kernel], spec: AcceleratorSpec, plan: MemoryPlan) -> None:
    """Invariants: every kernel placed once; no region over its units' memory; wafer regions don't overlap."""
    placed = [k for r in p.regions for k in r.kernels] + list(p.extra.get("streamed_kernels", []))
    names = [k.name for k in kernels]
    if sorted(placed) != sorted(names):
        missing = sorted(set(names) - set(placed))[:5]
        raise PlacementError(f"placement lost kernels {missing}", fix="report this as an accelkit bug")
    if p.family == "wafer-dataflow":
        rows, cols = p.grid
        for i, a in enumerate(p.regions):
            if a.col0 + a.cols > cols or a.row0 + a.rows > rows:
                raise PlacementError(f"region {a.name} leaves the {rows}x{cols} mesh")
            for b in p.regions[i + 1:]:
                if a.overlaps(b):
                    raise PlacementError(f"regions {a.name} and {b.name} overlap")
            if plan.mode == "pipelined" and a.memory_bytes > a.units * spec.memory_per_unit_bytes:
                raise PlacementError(f"region {a.name} holds {a.memory_bytes} bytes in {a.units} cores",
                                     fix="use weight streaming (mode='weight-streaming')")
