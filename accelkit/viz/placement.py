"""Plotly figures of a compiled program: where its kernels sit on the chip, and its memory plan.

    placement_map(prog)      the placement, drawn the way each family's tools show it:
                             wafer regions on the core mesh, RDU sections' PCU/PMU allocation,
                             IPU supersteps, the TSP's static schedule (a Gantt of slices against
                             cycles), a GPU's kernel sequence
    memory_plan_bars(prog)   bytes per memory tier, used against capacity (per chip)

Both return a ``plotly.graph_objects.Figure`` and never show it. Colours follow the layer
(the repeated block a kernel belongs to); hovering a mark shows its ops, FLOPs and bytes.
Figures stay light: at most :data:`MAX_MARKS` bars, rectangles and points; beyond that, runs of
one layer (or of identical sections) are merged into one mark, and the title says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.colors import qualitative, sample_colorscale
from plotly.subplots import make_subplots

from accelkit.compiler.memory import MemoryPlan, capacity_text
from accelkit.compiler.passes import Kernel, layer_of
from accelkit.compiler.placement import Region
from accelkit.compiler.program import CompiledProgram
from accelkit.families import model_for
from accelkit.hardware import fmt_bytes, fmt_si
from accelkit.viz.style import ROOT, TOP_LEVEL, log_axis, readable_layer

MAX_MARKS = 400
"""Most bars, rectangles and points a placement figure draws (the wafer has 850,000 cores)."""

SLICES = ("MXM", "VXM", "MEM")
ROW_ORDER = "row order"
"""The name of the RDU map's invisible first trace, which holds the section rows in order."""
_PALETTE = qualitative.Plotly + qualitative.D3  # 20 colours; more layers than that get a gradient  # the TSP's matrix, vector and memory slices, top to bottom


@dataclass(frozen=True)
class _Mark:
    """One thing drawn: a region, or a run of consecutive regions merged to keep the figure light."""

    layer: str  # the colour key
    label: str
    regions: tuple[Region, ...]
    kernels: tuple[Kernel, ...]

    @property
    def flops(self) -> int:
        return sum(k.flops for k in self.kernels)


# ---- shared pieces ----------------------------------------------------------------------------
def _colors(keys: Sequence[str]) -> dict[str, str]:
    """One colour per key, in first-seen order: a qualitative palette, or a gradient for many layers."""
    unique = list(dict.fromkeys(keys))
    if len(unique) <= len(_PALETTE):
        return dict(zip(unique, _PALETTE, strict=False))
    return dict(zip(unique, sample_colorscale("Turbo", [i / (len(unique) - 1) for i in range(len(unique))]),
                    strict=True))


def _kernel_map(prog: CompiledProgram) -> dict[str, Kernel]:
    return {k.name: k for k in prog.kernels}


def _layer(region: Region, kernels: dict[str, Kernel], prefix: str = "") -> str:
    """The layer a region's kernels belong to (``model.layers.3``), read off the first one's module; without
    ``prefix``, the path ``ak.port``'s wrappers add (the learner's own names: ``ff.0``, not ``inner.inner.ff.0``)."""
    k = kernels.get(region.kernels[0]) if region.kernels else None
    if k is None:
        return region.name
    layer = layer_of(k.module)
    if prefix and (prefix.startswith(layer + ".") or layer == ROOT):
        return TOP_LEVEL  # a wrapper's own op, or the user's model itself
    return readable_layer(layer.removeprefix(prefix) if prefix else layer)


_MINOR_OPS = frozenset({"to", "_to_copy", "view", "reshape", "expand", "unsqueeze", "squeeze", "contiguous", "clone",
                        "getitem", "type_as", "float", "half", "bfloat16", "permute", "transpose", "t"})
"""Casts and views: a kernel's first op when a cast leads it (RMSNorm's ``.to(float32)``), never what it does."""


def _main_op(k: Kernel) -> str:
    """What a kernel's bar is labelled with: its first op (``linear``); where that is a cast or a view (an RMSNorm
    starts with ``.to(float32)``), the name of its module (``norm``), else its first op that is neither."""
    if k.ops and k.ops[0] not in _MINOR_OPS:
        return k.ops[0]
    if k.module:
        return k.module.rsplit(".", 1)[-1]
    return next((op for op in k.ops if op not in _MINOR_OPS), k.ops[0] if k.ops else "")


def _ops(kernels: Sequence[Kernel], limit: int = 6) -> str:
    ops = [op for k in kernels for op in k.ops]
    unique = list(dict.fromkeys(ops))
    return "+".join(unique[:limit]) + ("…" if len(unique) > limit else "")


def _hover(title: str, kernels: Sequence[Kernel], *lines: str) -> str:
    """Hover text: the mark, its ops, FLOPs and bytes (weights held, bytes moved)."""
    flops = sum(k.flops for k in kernels)
    weights = sum(k.param_bytes for k in kernels)
    moved = sum(k.bytes for k in kernels)
    head = f"<b>{title}</b>" + (f" ({len(kernels)} kernels)" if len(kernels) > 1 else "")
    return "<br>".join([
        head, f"ops: {_ops(kernels) or '-'}",
        f"FLOPs: {fmt_si(flops, 'FLOP')}" + ("" if flops else " (moves data only)"),
        f"memory: weights {fmt_bytes(weights)}, moves {fmt_bytes(moved)}", *lines])


def _runs(marks: list[_Mark], budget: int) -> list[_Mark]:
    """Merge consecutive marks of one layer until at most ``budget`` remain (coarser if needed)."""
    if len(marks) <= budget:
        return marks
    merged: list[_Mark] = []
    for m in marks:
        if merged and merged[-1].layer == m.layer:
            last = merged[-1]
            merged[-1] = _Mark(last.layer, last.layer, last.regions + m.regions, last.kernels + m.kernels)
        else:
            merged.append(_Mark(m.layer, m.layer, m.regions, m.kernels))
    if len(merged) <= budget:
        return merged
    size = -(-len(merged) // budget)  # still too many layers: merge neighbouring layers too
    out = []
    for i in range(0, len(merged), size):
        chunk = merged[i:i + size]
        label = chunk[0].layer if len(chunk) == 1 else f"{chunk[0].layer} … {chunk[-1].layer}"
        out.append(_Mark(chunk[0].layer, label, tuple(r for c in chunk for r in c.regions),
                         tuple(k for c in chunk for k in c.kernels)))
    return out


def _title(prog: CompiledProgram, what: str, note: str) -> dict[str, object]:
    chips = f"{prog.chips} x " if prog.chips > 1 else ""
    partial = ", in part" if prog.memory_plan.partial else ""
    return {"text": f"{prog.graph.model_name} on {chips}{prog.spec.name} ({prog.mode}{partial}): {what}",
            "subtitle": {"text": note}}


def _modes_note(plan: MemoryPlan) -> str:
    """Every execution mode the compiler weighed and what became of it: ``modes: on-chip (chosen, in part: 3% of
    the weights in sram, the rest streams from hbm); hbm fits``. A mode chosen in part does not hold everything,
    so it never reads "does not fit" beside a title that names it."""
    notes = []
    for m, why in plan.candidates.items():
        if m == plan.mode and plan.partial:
            notes.append(f"{m} (chosen, in part: {plan.resident:.0%} of the {' and '.join(plan.spilled_kinds)} in "
                         f"{plan.resident_tier}, the rest streams from {plan.spill_tier})")
        elif m == plan.mode:
            notes.append(f"{m} fits (chosen)")
        else:
            notes.append(f"{m} {'fits' if why == 'fits' else 'does not fit'}")
    return "modes: " + "; ".join(notes)


def _span(first: str, last_index: int, labels: list[str]) -> str:
    """``section 1: model.layers.0`` to ``sections 1-80: model.layers.0 … model.layers.79 (identical)``."""
    (a, name_a), (b, name_b) = first.split(": ", 1), labels[last_index].split(": ", 1)
    return f"sections {a.split()[-1]}-{b.split()[-1]}: {name_a} … {name_b} (identical)"


def _pct(used: float, capacity: float) -> str:
    share = used / capacity
    return "<1%" if 0 < share < 0.005 else f"{share:.0%}"


def _seconds(t: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def _legend(fig: go.Figure, n_layers: int, title: str) -> None:
    """A legend entry per layer, unless there are too many to read: then the colour runs first to last."""
    if n_layers > len(_PALETTE):
        sub = fig.layout.title.subtitle.text or ""
        fig.update_layout(showlegend=False, title_subtitle_text=f"{sub}; colour: {title}, first (purple) to "
                                                                "last (red)")
    else:  # tall enough that every entry shows without a scrollbar (~29 px an entry, plus the title and margins)
        fig.update_layout(legend_title_text=title)
        need = 29 * n_layers + 200
        if (fig.layout.height or 450) < need:
            fig.update_layout(height=need)


def mark_count(fig: go.Figure) -> int:
    """Bars, points and shapes a figure draws: what :data:`MAX_MARKS` bounds."""
    n = len(fig.layout.shapes or ())
    for trace in fig.data:
        xs = getattr(trace, "x", None)
        n += len(xs) if xs is not None else 0
    return n


# ---- placement --------------------------------------------------------------------------------
def placement_map(prog: CompiledProgram, *, max_marks: int = MAX_MARKS) -> go.Figure:
    """The program's placement as its family's tools would draw it; hover a mark for ops, FLOPs, bytes.

    - wafer (WSE): each region a rectangle of the core mesh (pipelined: one per layer; weight
      streaming: the kernels of the one layer that owns the wafer at a time);
    - RDU: per section, the PCUs (compute) and PMUs (memory) each kernel gets;
    - IPU: supersteps in order, bar height = FLOPs, shaded by the IPU that runs them;
    - TSP: the static schedule as a Gantt of MXM/VXM/MEM slices against cycles;
    - GPU/CPU: the kernel sequence as launched, bar height = FLOPs.
    """
    kind = model_for(prog.placement.family).placement_map
    if kind == "regions":
        return _wafer(prog, max_marks)
    if kind == "sections":
        return _rdu(prog, max_marks)
    if kind == "schedule":
        return _tsp(prog, max_marks)
    return _sequence(prog, max_marks)  # "stream" or "supersteps"


def _wafer(prog: CompiledProgram, max_marks: int) -> go.Figure:
    pl = prog.placement
    rows, cols = pl.grid
    kmap = _kernel_map(prog)
    streaming = prog.mode == "weight-streaming"
    # pipelined regions are layers; in weight streaming they are the kernels of the layer drawn
    marks = [_Mark(r.name, r.name, (r,), tuple(kmap[k] for k in r.kernels if k in kmap)) for r in pl.regions]
    marks = _runs(marks, max(1, (max_marks - 1) // 2))  # a rectangle and a hover point per mark
    colors = _colors([m.layer for m in marks])
    fig = go.Figure()
    shapes = [{"type": "rect", "x0": 0, "x1": cols, "y0": 0, "y1": rows,
               "line": {"color": "#444", "width": 1}, "fillcolor": "rgba(0,0,0,0.03)", "layer": "below"}]
    points: dict[str, list[tuple[float, float, str]]] = {}
    for m in marks:
        c0 = min(r.col0 for r in m.regions)
        c1 = max(r.col0 + r.cols for r in m.regions)
        r0 = min(r.row0 for r in m.regions)
        r1 = max(r.row0 + r.rows for r in m.regions)
        cores = sum(r.units for r in m.regions)
        shapes.append({"type": "rect", "x0": c0, "x1": c1, "y0": r0, "y1": r1, "fillcolor": colors[m.layer],
                       "opacity": 0.75, "line": {"color": "white", "width": 0.5}})
        text = _hover(m.label, m.kernels, f"cores: {cores:,} (cols {c0}-{c1 - 1}, rows {r0}-{r1 - 1})",
                      f"weights on its cores: {fmt_bytes(sum(r.memory_bytes for r in m.regions))}")
        points.setdefault(m.layer, []).append(((c0 + c1) / 2, (r0 + r1) / 2, text))
    for layer, pts in points.items():
        fig.add_scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], hovertext=[p[2] for p in pts],
                        mode="markers", name=layer, legendgroup=layer, hoverinfo="text",
                        marker={"color": colors[layer], "size": 9, "symbol": "square",
                                "line": {"color": "white", "width": 1}})
    what = (f"one layer's {len(pl.regions)} kernels on all {rows * cols:,} {pl.unit_name}s" if streaming
            else f"{len(pl.regions)} regions on the {rows}x{cols} {pl.unit_name} mesh")
    note = pl.notes[0].split(":")[0] + ": " + (
        "weights stream in from MemoryX; the other layers take the wafer in turn" if streaming
        else "each layer keeps its own strip of cores, sized by its FLOPs and weights")
    if len(marks) < len(pl.regions):
        note += f"; {len(pl.regions)} regions merged into {len(marks)} marks"
    fig.update_layout(
        title=_title(prog, what, note), shapes=shapes,
        xaxis={"title": f"mesh column (of {cols})", "range": [0, cols], "showgrid": False, "constrain": "domain"},
        yaxis={"title": f"mesh row (of {rows})", "range": [rows, 0], "showgrid": False,
               "scaleanchor": "x", "scaleratio": 1},
        margin={"t": 90},
    )
    _legend(fig, len(points), "kernel" if streaming else "layer")
    return fig


def _rdu(prog: CompiledProgram, max_marks: int) -> go.Figure:
    pl = prog.placement
    kmap = _kernel_map(prog)
    pcus = prog.spec.pcus or prog.spec.compute_units
    pmus = prog.spec.pmus or prog.spec.compute_units
    sections: dict[str, list[Region]] = {}
    for r in pl.regions:
        sections.setdefault(r.slice, []).append(r)
    rows = [(label, regs, 1) for label, regs in sections.items()]
    if 2 * len(pl.regions) > max_marks:  # collapse runs of identical sections (a repeated block)
        def shape(regs: list[Region]) -> tuple[object, ...]:
            return tuple((tuple(kmap[r.name].ops), r.units, r.memory_units) for r in regs)

        collapsed: list[tuple[str, list[Region], int]] = []
        for label, regs, _ in rows:
            if collapsed and shape(collapsed[-1][1]) == shape(regs):
                collapsed[-1] = (collapsed[-1][0], collapsed[-1][1], collapsed[-1][2] + 1)
            else:
                collapsed.append((label, regs, 1))
        rows = collapsed
    rows_by_label = {label: i for i, label in enumerate(sections)}
    shown, used = [], 0
    for row in rows:
        if used + 2 * len(row[1]) > max_marks:
            break
        shown.append(row)
        used += 2 * len(row[1])
    labels = [label if n == 1 else _span(label, rows_by_label[label] + n - 1, list(sections)) for label, _, n in shown]
    layers = [_layer(r, kmap, prog.graph.wrapper_prefix) for _, regs, _ in shown for r in regs]
    colors = _colors(layers)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.05,
                        subplot_titles=(f"PCUs (of {pcus:,})", f"PMUs (of {pmus:,})"))
    # An invisible first trace holding every row in order: plotly orders categories by first appearance
    # where a redraw drops the axis' categoryarray (a FigureWidget update), so the rows never reorder.
    fig.add_bar(x=[0] * len(labels), y=labels, orientation="h", name=ROW_ORDER, showlegend=False, hoverinfo="skip",
                marker={"color": "rgba(0,0,0,0)"}, row=1, col=1)
    bars: dict[str, dict[str, list[object]]] = {}
    for label, (_, regs, _n) in zip(labels, shown, strict=True):
        pcu0 = pmu0 = 0
        for r in regs:
            k = kmap[r.name]
            b = bars.setdefault(_layer(r, kmap, prog.graph.wrapper_prefix),
                                {key: [] for key in ("y", "pcu", "pcu0", "pmu", "pmu0", "text",
                                                                      "op")})
            b["op"].append(_main_op(k) or r.name)
            b["y"].append(label)
            b["pcu"].append(r.units)
            b["pcu0"].append(pcu0)
            b["pmu"].append(r.memory_units)
            b["pmu0"].append(pmu0)
            b["text"].append(_hover(r.name, [k], f"{r.units:,} PCUs, {r.memory_units:,} PMUs",
                                    f"{r.slice}"))
            pcu0 += r.units
            pmu0 += r.memory_units
    for layer, b in bars.items():
        for col, key in ((1, "pcu"), (2, "pmu")):
            fig.add_bar(x=b[key], base=b[key + "0"], y=b["y"], orientation="h", name=layer, legendgroup=layer,
                        showlegend=col == 1, hovertext=b["text"], hoverinfo="text", text=b["op"],
                        textposition="inside", insidetextanchor="middle",
                        marker={"color": colors[layer], "line": {"color": "white", "width": 0.5}},
                        row=1, col=col)
    n_sections = len(sections)
    note = (f"{n_sections} sections (fusion {prog.fusion_level}) run one after another, each owning the chip;"
            " PCU: compute unit, PMU: on-chip memory unit")
    if len(shown) < len(rows):
        note += f"; first {len(shown)} of {len(rows)} rows shown"
    fig.update_layout(title=_title(prog, f"{len(pl.regions)} kernels in {n_sections} sections", note),
                      barmode="overlay", margin={"t": 100}, uniformtext={"minsize": 8, "mode": "hide"},
                      height=max(320, 26 * len(shown) + 160))
    _legend(fig, len(bars), "layer")
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=labels)
    fig.update_xaxes(range=[0, pcus], nticks=4, row=1, col=1)
    fig.update_xaxes(range=[0, pmus], nticks=4, row=1, col=2)
    return fig


def _sequence(prog: CompiledProgram, max_marks: int) -> go.Figure:
    """IPU supersteps or GPU/CPU kernels in order: bar height = FLOPs, colour = layer."""
    pl = prog.placement
    kmap = _kernel_map(prog)
    ipu = model_for(pl.family).placement_map == "supersteps"
    marks = [_Mark(_layer(r, kmap, prog.graph.wrapper_prefix), r.name, (r,), (kmap[r.name],)) for r in pl.regions]
    marks = _runs(marks, max_marks - (pl.chips if ipu else 0))
    colors = _colors([m.layer for m in marks])
    step_word = "superstep" if ipu else "kernel"
    fig = go.Figure()
    traces: dict[str, dict[str, list[object]]] = {}
    start = 0
    for m in marks:
        n = len(m.regions)
        t = traces.setdefault(m.layer, {"x": [], "y": [], "w": [], "text": []})
        t["x"].append(start + (n - 1) / 2)
        t["w"].append(0.9 if n == 1 else n)
        t["y"].append(max(1, m.flops / n))  # a log axis: data-only steps drawn at 1 FLOP
        chips = sorted({r.chip for r in m.regions})
        where = ([f"IPU {chips[0]}" if len(chips) == 1 else f"IPUs {chips[0]}-{chips[-1]}",
                  f"all {pl.regions[0].units:,} tiles compute, sync, then exchange"] if ipu
                 else [f"launch {start}" + (f"-{start + n - 1}" if n > 1 else ""), "uses every SM"])
        title = m.label if n == 1 else f"{m.layer}: {step_word}s {start}-{start + n - 1}"
        t["text"].append(_hover(title, m.kernels, *where))
        start += n
    for layer, t in traces.items():
        fig.add_bar(x=t["x"], y=t["y"], width=t["w"], name=layer, legendgroup=layer, hovertext=t["text"],
                    hoverinfo="text", marker={"color": colors[layer]})
    shapes = []
    if ipu and 1 < pl.chips <= max_marks // 4:  # shade each run of supersteps one pipelined IPU runs
        runs: list[list[int]] = []  # [chip, first step, last step]
        for step, r in enumerate(pl.regions):
            if runs and runs[-1][0] == r.chip:
                runs[-1][2] = step
            else:
                runs.append([r.chip, step, step])
        wide = max(3, len(pl.regions) // 25)  # a label on a narrower run would run into its neighbours'
        for chip, a, b in runs:
            shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": a - 0.5, "x1": b + 0.5,
                           "y0": 0, "y1": 1, "fillcolor": "#888", "opacity": 0.08 if chip % 2 else 0.16,
                           "line": {"width": 0}, "layer": "below",
                           **({"label": {"text": f"IPU {chip}", "textposition": "top center"}}
                              if b - a + 1 >= wide else {})})
    if ipu:
        what = f"{len(pl.regions)} supersteps" + (f" over {len(pl.stages)} pipelined IPUs" if len(pl.stages) > 1
                                                  else "")
        note = "bulk-synchronous: in every superstep all tiles compute their share, sync, then exchange"
    else:
        what = f"{len(pl.regions)} kernels launched in order on one stream"
        note = "each kernel reads its inputs from HBM and writes its result back; fusion cuts the launches"
    merged = len(marks) < len(pl.regions)
    if merged:
        note += f"<br>runs of one layer merged into one bar ({len(marks)} bars)"
    fig.update_layout(title=_title(prog, what, note), shapes=shapes, barmode="overlay", bargap=0.1,
                      margin={"t": 90}, xaxis={"title": f"{step_word} (in order)", "range": [-0.5, start - 0.5]},
                      yaxis=log_axis([max(1.0, m.flops / len(m.regions)) for m in marks], "FLOP",
                                     title="FLOPs per " + step_word + (" (mean over merged runs)" if merged else "")
                                     + ", log", pad=0.2))
    _legend(fig, len(traces), "layer")
    return fig


def _tsp(prog: CompiledProgram, max_marks: int) -> go.Figure:
    """The static schedule as a Gantt: one row per functional slice, x = cycles."""
    pl = prog.placement
    kmap = _kernel_map(prog)
    marks = [_Mark(_layer(r, kmap, prog.graph.wrapper_prefix), r.name, (r,), (kmap[r.name],)) for r in pl.regions]
    merged = len(marks) > max_marks
    if merged:  # runs of one layer, then one bar per slice each run used
        marks = _runs(marks, max_marks // len(SLICES))
    colors = _colors([m.layer for m in marks])
    traces: dict[str, dict[str, list[object]]] = {}
    for m in marks:
        by_slice: dict[str, list[Region]] = {}
        for r in m.regions:
            by_slice.setdefault(r.slice, []).append(r)
        t0 = m.regions[0].start_cycle
        t1 = m.regions[-1].start_cycle + m.regions[-1].cycles
        chips = sorted({r.chip for r in m.regions})
        chip_text = f"chip {chips[0]}" if len(chips) == 1 else f"chips {chips[0]}-{chips[-1]}"
        for sl, regs in by_slice.items():
            t = traces.setdefault(m.layer, {"x": [], "base": [], "y": [], "text": []})
            a = regs[0].start_cycle if merged else t0
            b = regs[-1].start_cycle + regs[-1].cycles if merged else t1
            busy = sum(r.cycles for r in regs)
            ks = [kmap[k] for r in regs for k in r.kernels]
            t["x"].append(b - a)
            t["base"].append(a)
            t["y"].append(sl)
            t["text"].append(_hover(m.label if not merged else f"{m.label} on {sl}", ks,
                                    f"cycles {a:,}-{b:,}" + (f" ({busy:,} busy on {sl})" if merged else ""),
                                    chip_text))
    fig = go.Figure()
    for layer, t in traces.items():
        fig.add_bar(x=t["x"], base=t["base"], y=t["y"], orientation="h", name=layer, legendgroup=layer,
                    hovertext=t["text"], hoverinfo="text",
                    marker={"color": colors[layer], "line": {"color": "white", "width": 0.3}})
    total = pl.total_cycles or 0
    clock = prog.spec.clock_hz
    note = "every instruction's cycle is fixed at compile time: the same input always takes the same time"
    if clock:
        note += f"<br>{total:,} cycles = {_seconds(total / clock)} at {fmt_si(clock, 'Hz')} (simulated)"
    if merged:
        note += f"; runs of one layer merged, one bar per slice it uses ({mark_count(fig)} bars)"
    what = f"static schedule of {len(pl.regions)} kernels" + (f" on {pl.chips} chips" if pl.chips > 1 else "")
    fig.update_layout(title=_title(prog, what, note), barmode="overlay", margin={"t": 100}, height=380,
                      xaxis={"title": "cycle", "exponentformat": "SI"},
                      yaxis={"title": "functional slice", "categoryorder": "array",
                             "categoryarray": list(SLICES)[::-1]})
    _legend(fig, len(traces), "layer")
    return fig


# ---- memory plan ------------------------------------------------------------------------------
_KINDS = (("weights", "weights"), ("activation", "activations"), ("gradient", "gradients"),
          ("optimizer", "optimizer state"))


def memory_plan_bars(prog: CompiledProgram) -> go.Figure:
    """Bytes per chip in each memory tier the plan uses, against the tier's capacity (log scale).

    Hover a bar for what lives in the tier (weights, activations, gradients, optimizer state);
    the subtitle lists every execution mode and whether it fits.
    """
    plan = prog.memory_plan
    tiers = [t.name for t in prog.spec.memory_tiers if t.name in plan.tier_use]
    tiers += [t for t in plan.tier_use if t not in tiers]
    used = [plan.tier_use[t] for t in tiers]
    cap = [plan.tier_capacity[t] for t in tiers]
    texts = []
    for t, u, c in zip(tiers, used, cap, strict=True):
        lines = [f"{label}: {fmt_bytes(getattr(plan, f'{kind}_bytes'))}" for kind, label in _KINDS
                 if plan.placement.get(kind) == t and getattr(plan, f"{kind}_bytes")]
        other = u - sum(getattr(plan, f"{kind}_bytes") for kind, _ in _KINDS if plan.placement.get(kind) == t)
        if other > 0:
            lines.append(f"streamed layer buffers: {fmt_bytes(other)}" if plan.mode == "weight-streaming"
                         else f"other: {fmt_bytes(other)}")
        texts.append("<br>".join([f"<b>{t}</b>: {fmt_bytes(u)} of {fmt_bytes(c)} ({_pct(u, c)})", *lines]))
    fig = go.Figure()
    fig.add_bar(y=tiers, x=cap, orientation="h", name="capacity", marker={"color": "#cccccc"},
                hovertext=[f"<b>{t}</b> capacity per chip: {capacity_text(c, plan.datasheet_bytes(t))}"
                           for t, c in zip(tiers, cap, strict=True)],
                hoverinfo="text")
    fig.add_bar(y=tiers, x=used, orientation="h", name="used", marker={"color": "#1f77b4"},
                text=[f"{fmt_bytes(u)} ({_pct(u, c)})" for u, c in zip(used, cap, strict=True)],
                textposition="outside", hovertext=texts, hoverinfo="text")
    fig.update_layout(
        title=_title(prog, "bytes per chip by memory tier", _modes_note(plan)),
        barmode="group", legend_title_text=None, margin={"t": 90}, height=max(260, 70 * len(tiers) + 160),
        xaxis=log_axis(used + cap, "B", title="bytes per chip (log); grey: what the compiler may use", pad=0.3),
        yaxis={"categoryorder": "array", "categoryarray": tiers[::-1]},
    )
    return fig


__all__ = ["MAX_MARKS", "mark_count", "memory_plan_bars", "placement_map"]
