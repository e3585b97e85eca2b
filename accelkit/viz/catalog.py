"""Plotly figures of the hardware catalog: chips side by side, and each family's structure.

Every function returns a ``plotly.graph_objects.Figure`` and never shows it. Hovering a bar or
a point shows where its figure comes from; hatched bars are illustrative (nobody published them).
Figures stay light: a chip's units are drawn in aggregated blocks, never one point per core.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import plotly.graph_objects as go

from accelkit.errors import UnknownNameError
from accelkit.families import model_for
from accelkit.hardware import FAMILY_INFO, AcceleratorSpec, catalog, fmt_bytes, fmt_si, get
from accelkit.viz.style import FAMILY_COLORS, chip_color, label_positions, log_axis

MAX_CELLS = 400
"""Most cells a family diagram draws; units are aggregated into blocks to stay under it."""


@dataclass(frozen=True)
class Metric:
    """A number every chip may have: its label, unit and how to read it (value, source) off a spec."""

    label: str
    unit: str
    read: Callable[[AcceleratorSpec], tuple[float, str] | None]

    def fmt(self, x: float) -> str:
        return fmt_bytes(x) if self.unit == "B" else fmt_si(x, self.unit)

    @property
    def short_unit(self) -> str:
        """The unit on a bar or a tick: "B per GFLOP/s" shows as "B" (the axis title says the rest)."""
        return self.unit.split(" per ")[0]


def titled(label: str, unit: str) -> str:
    """A metric's label with its unit: "memory (B)"; a label that ends in a parenthesis takes the unit inside it,
    "peak 16-bit (bf16, else fp16; FLOP/s)", never a second pair beside it."""
    return f"{label[:-1]}; {unit})" if label.endswith(")") else f"{label} ({unit})"


def _field(name: str) -> Callable[[AcceleratorSpec], tuple[float, str] | None]:
    def read(s: AcceleratorSpec) -> tuple[float, str] | None:
        v = getattr(s, name)
        return None if v is None else (float(v), s.source(name))

    return read


def _peak(precision: str) -> Callable[[AcceleratorSpec], tuple[float, str] | None]:
    def read(s: AcceleratorSpec) -> tuple[float, str] | None:
        v = s.peak_flops.get(precision)
        return None if v is None else (v, s.source(f"peak_flops.{precision}"))

    return read


def _peak_16bit(s: AcceleratorSpec) -> tuple[float, str]:
    p, v = s.peak_16bit()
    return v, f"{p}: {s.source(f'peak_flops.{p}')}"


def _memory_per_flop(s: AcceleratorSpec) -> tuple[float, str]:
    p, v = s.peak_16bit()
    return s.on_chip_memory_bytes / v * 1e9, f"derived: on-chip memory / {p} peak"


def _bytes_per_flop(s: AcceleratorSpec) -> tuple[float, str]:
    p, v = s.peak_16bit()
    return s.on_chip_bandwidth_Bps / v, f"derived: on-chip bandwidth / {p} peak"


def _offchip(attr: str) -> Callable[[AcceleratorSpec], tuple[float, str] | None]:
    def read(s: AcceleratorSpec) -> tuple[float, str] | None:
        if len(s.memory_tiers) < 2:
            return None
        t = s.memory_tiers[1]  # the first tier off chip: HBM, DDR, MemoryX, streaming memory
        return float(getattr(t, attr)), f"{t.name}: {s.source(f'memory_tiers.{t.name}.{attr}')}"

    return read


METRICS: dict[str, Metric] = {
    **{f"peak_flops_{p}": Metric(f"peak {p}", "FLOP/s", _peak(p))
       for p in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")},
    "peak_flops_16bit": Metric("peak 16-bit (bf16, else fp16)", "FLOP/s", _peak_16bit),
    "on_chip_memory_bytes": Metric("on-chip memory", "B", _field("on_chip_memory_bytes")),
    "on_chip_bandwidth_Bps": Metric("on-chip bandwidth", "B/s", _field("on_chip_bandwidth_Bps")),
    "memory_per_unit_bytes": Metric("memory per unit", "B", _field("memory_per_unit_bytes")),
    "memory_per_flop": Metric("on-chip bytes per GFLOP/s (16-bit)", "B per GFLOP/s", _memory_per_flop),
    "bandwidth_per_flop": Metric("on-chip bytes per FLOP (16-bit)", "B/FLOP", _bytes_per_flop),
    "offchip_capacity_bytes": Metric("first off-chip tier: capacity", "B", _offchip("capacity_bytes")),
    "offchip_bandwidth_Bps": Metric("first off-chip tier: bandwidth", "B/s", _offchip("bandwidth_Bps")),
    "compute_units": Metric("compute units", "units", _field("compute_units")),
    "chip_to_chip_Bps": Metric("chip-to-chip bandwidth", "B/s", _field("chip_to_chip_Bps")),
    "clock_hz": Metric("clock", "Hz", _field("clock_hz")),
    "power_w": Metric("power", "W", _field("power_w")),
}
"""Metrics :func:`catalog_bars` and :func:`catalog_scatter` know, by name."""


def _illustrative(source: str) -> bool:
    """True for "illustrative: ..." and for "bf16: illustrative: ..." (a metric's own prefix)."""
    return re.match(r"^(\w+: )?illustrative", source.lower()) is not None


def _metric(name: str) -> Metric:
    if name not in METRICS:
        raise UnknownNameError(f"no metric called {name!r}; known: {', '.join(METRICS)}")
    return METRICS[name]


def _specs(names: Sequence[str | AcceleratorSpec] | None) -> list[AcceleratorSpec]:
    return catalog(names)


def _headroom(axis: dict[str, object], decades: float) -> dict[str, object]:
    """A log axis with room above the tallest bar for its upright value label."""
    lo, hi = cast("list[float]", axis["range"])
    return {**axis, "range": [lo, hi + decades]}


def catalog_bars(metric: str, names: Sequence[str | AcceleratorSpec] | None = None) -> go.Figure:
    """One bar per chip for ``metric`` (see :data:`METRICS`), log scale, coloured by family.

    Hover shows the value and its source; hatched bars are illustrative. Chips that lack the
    metric (an IPU has no bf16) are named under the title.
    """
    m = _metric(metric)
    specs = _specs(names)
    fig = go.Figure()
    missing = [s.name for s in specs if m.read(s) is None]
    rows = [(s, r) for s in specs if (r := m.read(s)) is not None]
    seen: set[str] = set()
    for s, r in rows:  # one trace per chip, its own colour; the legend names each family once (clicks toggle it)
        first = s.family not in seen
        seen.add(s.family)
        fig.add_bar(
            name=s.family if first else s.name, meta=s.name, legendgroup=s.family, showlegend=first, x=[s.name],
            y=[r[0]],
            marker={"color": chip_color(s), "pattern": {"shape": "/" if _illustrative(r[1]) else ""}},
            # upright labels above narrow bars ran into their neighbours: they stand on end
            text=[fmt_si(r[0], m.short_unit)], textposition="outside", textangle=-90, textfont={"size": 11},
            cliponaxis=False,
            customdata=[[s.full_name, r[1]]],
            hovertemplate="<b>%{customdata[0]}</b><br>%{text}<br>source: %{customdata[1]}<extra></extra>",
        )
    subtitle = "hatched: illustrative (no public source); hover for each figure's source"
    if missing:
        subtitle += f"; not on {', '.join(missing)}"
    fig.update_layout(
        title={"text": titled(m.label, m.unit), "subtitle": {"text": subtitle}},
        yaxis=_headroom(log_axis([r[0] for _, r in rows], m.short_unit, title=m.unit, pad=0.3), decades=1.8),
        xaxis={"categoryorder": "array", "categoryarray": [s.name for s, _ in rows], "tickangle": -90},
        legend={"groupclick": "togglegroup", "title": {"text": "family"}}, bargap=0.25, margin={"t": 80},
        height=520,
        uniformtext={"minsize": 10, "mode": "show"},
    )
    return fig


def catalog_scatter(x: str = "on_chip_memory_bytes", y: str = "peak_flops_16bit",
                    names: Sequence[str | AcceleratorSpec] | None = None) -> go.Figure:
    """Chips as points, ``x`` against ``y`` (metrics by name), log-log, one colour per family."""
    mx, my = _metric(x), _metric(y)
    pts = [(s, a, b) for s in _specs(names) if (a := mx.read(s)) is not None and (b := my.read(s)) is not None]
    xaxis = log_axis([a[0] for _, a, _ in pts], mx.short_unit, title=titled(mx.label, mx.unit), pad=0.35)
    yaxis = log_axis([b[0] for _, _, b in pts], my.short_unit, title=titled(my.label, my.unit), pad=0.45)
    # chips at the same point (an H100 and a GH200 share peak and L2) share one label: "gh200 / h100"
    together: dict[tuple[float, float], list[str]] = {}
    for s, a, b in pts:
        together.setdefault((a[0], b[0]), []).append(s.name)
    spots = list(together)
    # a label naming several chips stands in two lines: a long one-line label reached past a neighbour's point
    # ("a100 / a100-40gb" read as the MI250's)
    text = {p: " /<br>".join(together[p]) if len(" / ".join(together[p])) > 12 else " / ".join(together[p])
            for p in spots}
    sides = dict(zip(spots, label_positions([x for x, _ in spots], [y for _, y in spots],
                                            [text[p] for p in spots],
                                            x_range=tuple(xaxis["range"]),  # type: ignore[arg-type]
                                            y_range=tuple(yaxis["range"]),  # type: ignore[arg-type]
                                            width_px=680, height_px=SCATTER_HEIGHT_PX - 170), strict=True))
    fig = go.Figure()
    seen: set[str] = set()
    for s, a, b in pts:  # the legend names each family once (its chips are labelled on the plot)
        names_here = together[(a[0], b[0])]
        first = s.family not in seen
        seen.add(s.family)
        fig.add_scatter(
            name=s.family if first else s.name, meta=s.name, legendgroup=s.family, showlegend=first,
            mode="markers+text",
            x=[a[0]], y=[b[0]], text=[text[(a[0], b[0])] if names_here[0] == s.name else ""],
            textposition=sides[(a[0], b[0])], cliponaxis=False,
            marker={"size": 12, "color": chip_color(s), "line": {"color": "white", "width": 1}},
            customdata=[[s.full_name, mx.fmt(a[0]), a[1], my.fmt(b[0]), b[1]]],
            hovertemplate=(f"<b>%{{customdata[0]}}</b><br>{mx.label}: %{{customdata[1]}} (%{{customdata[2]}})"
                           f"<br>{my.label}: %{{customdata[3]}} (%{{customdata[4]}})<extra></extra>"),
        )
    fig.update_layout(title=f"{my.label} vs {mx.label}", xaxis=xaxis, yaxis=yaxis, height=SCATTER_HEIGHT_PX,
                      legend={"groupclick": "togglegroup", "title": {"text": "family"}}, margin={"t": 70})
    return fig


SCATTER_HEIGHT_PX = 520  # tall enough that the chips' labels find room beside their points
SPECTRUM_WIDTH_PX = 900  # about the width JupyterLab gives a figure in a notebook


def spectrum(names: Sequence[str | AcceleratorSpec] | None = None) -> go.Figure:
    """Every chip placed on the spectrum from general-purpose and programmable (left) to specialised and
    compiler-scheduled (right): one column per family in its rank order (``hardware/families/<family>.toml``),
    its chips as points, and what the family trades (its ``trades`` sentence) beneath. Hover a chip for its
    peak, on-chip memory and execution model."""
    specs = _specs(names)
    families = sorted({s.family for s in specs}, key=lambda f: (FAMILY_INFO[f].rank, f))
    tallest = max((sum(s.family == f for s in specs) for f in families), default=1)  # the most chips in a column
    # the text under a column fits its width: a notebook draws a figure ~900 px wide, 10 px text is ~5.6 px a letter
    column_px = SPECTRUM_WIDTH_PX / (len(families) + 0.2)
    wrap = max(10, int(column_px * 0.85 / 5.6))
    blurbs = {f: textwrap.wrap(FAMILY_INFO[f].trades or FAMILY_INFO[f].execution_model, wrap, break_on_hyphens=False)
              for f in families}
    text_px = 14 * max((len(b) for b in blurbs.values()), default=1) + 10  # the tallest text block, in pixels
    fig = go.Figure()
    for x, fam in enumerate(families):
        for i, s in enumerate(s for s in specs if s.family == fam):
            p16, peak = s.peak_16bit()
            fig.add_scatter(
                x=[x], y=[-i], mode="markers+text", text=[s.name], textposition="middle right",
                name=s.name, legendgroup=fam, showlegend=False, cliponaxis=False,
                marker={"size": 14, "color": chip_color(s), "line": {"color": "white", "width": 1}},
                customdata=[[s.full_name, fmt_si(peak, "FLOP/s"), p16, fmt_bytes(s.on_chip_memory_bytes)]],
                hovertemplate=("<b>%{customdata[0]}</b><br>%{customdata[1]} (%{customdata[2]})<br>"
                               "on chip: %{customdata[3]}<extra></extra>"))
        fig.add_annotation(x=x, y=-tallest + 0.5, xref="x", yref="y", yanchor="top",
                           xanchor="center", showarrow=False, align="left", font={"size": 10},
                           text="<br>".join(blurbs[fam]))
    fig.add_annotation(x=len(families) - 0.5, y=0.6, ax=-0.3, ay=0.6, xref="x", yref="y", axref="x", ayref="y",
                       showarrow=True, arrowhead=2, arrowwidth=1.5, arrowcolor="#888", text="")
    fig.update_layout(
        title={"text": "The spectrum: general-purpose and programmable (left) to specialised and "
                       "compiler-scheduled (right)",
               "subtitle": {"text": "one column per family, in its rank order; beneath it, what the family trades"}},
        # family names on two lines where they have a hyphen, level: rotated ones ran into the title
        xaxis={"tickvals": list(range(len(families))), "tickangle": 0, "tickfont": {"size": 10},
               "ticktext": [f"<b>{f.replace('-', '-<br>')}</b>" for f in families],
               "side": "top", "range": [-0.4, len(families) - 0.2], "showgrid": False, "zeroline": False},
        yaxis={"visible": False, "range": [-tallest - 0.2 - text_px / 50, 0.8]},
        plot_bgcolor="white", height=150 + 50 * (tallest + 1) + text_px,
        margin={"t": 130, "b": 10, "l": 20, "r": 20},
    )
    return fig


_TIER_SYMBOLS = ("circle", "square", "diamond", "triangle-up")


FACET_OVER = 8
"""``memory_tiers_chart`` draws one panel per family when it shows more chips than this."""

CROWDED_PANEL = 4
"""A family panel of more chips than this lists their names in a corner instead of beside each point."""


def memory_tiers_chart(names: Sequence[str | AcceleratorSpec] | None = None, *,
                       by_family: bool | None = None) -> go.Figure:
    """Each chip's memory tiers as a line from fast and small (on chip) to big and slow.

    The marker says which tier it is (circle: on chip, square: the first tier off chip, diamond: the
    next); hover a marker for the tier's name, size, bandwidth and source. ``by_family`` draws one small
    panel per family on shared axes (the default when more than :data:`FACET_OVER` chips are shown: nineteen
    lines on one chart cross each other too often to follow), each chip labelled at its on-chip tier.
    """
    specs = _specs(names)
    facet = len(specs) > FACET_OVER if by_family is None else by_family
    families = list(dict.fromkeys(s.family for s in specs))  # spectrum order (the catalog's)
    cols = min(3, len(families)) if facet else 1
    rows = math.ceil(len(families) / cols) if facet else 1
    if facet:
        from plotly.subplots import make_subplots

        fig = make_subplots(rows=rows, cols=cols, shared_xaxes="all", shared_yaxes="all",
                            subplot_titles=families, horizontal_spacing=0.04, vertical_spacing=0.08)
    else:
        fig = go.Figure()
    caps = [t.capacity_bytes for s in specs for t in s.memory_tiers]
    bws = [t.bandwidth_Bps for s in specs for t in s.memory_tiers]
    # half a decade of room at each end: a small panel spans ~8 decades, and a marker at the edge was cut in half
    xaxis = log_axis(caps, "B", title=None if facet else "capacity per chip", pad=0.5 if facet else 0.25)
    yaxis = log_axis(bws, "B/s", title=None if facet else "bandwidth", pad=0.5 if facet else 0.25)
    # a panel of more chips than can be named beside their points (the GPUs' lines crowd) lists them in its
    # empty lower corner instead; hover names each line
    crowded = {f for f in families if sum(s.family == f for s in specs) > CROWDED_PANEL} if facet else set()
    labels = _on_chip_labels([s for s in specs if s.family not in crowded], xaxis, yaxis, 1100 / cols, 260) \
        if facet else {}
    for s in specs:
        tiers = s.memory_tiers
        where = {}
        if facet:
            i = families.index(s.family)
            where = {"row": i // cols + 1, "col": i % cols + 1}
        fig.add_scatter(
            name=s.name, legendgroup=s.family, legendgrouptitle_text=None if facet else s.family,
            mode="lines+markers", x=[t.capacity_bytes for t in tiers], y=[t.bandwidth_Bps for t in tiers],
            line={"color": chip_color(s)}, showlegend=not facet,
            marker={"size": 9 if facet else 10, "symbol": [_TIER_SYMBOLS[min(i, 3)] for i in range(len(tiers))],
                    "line": {"color": "white", "width": 1}},
            customdata=[[s.name, str(t), s.source(f"memory_tiers.{t.name}.bandwidth_Bps")] for t in tiers],
            hovertemplate="<b>%{customdata[0]}</b> %{customdata[1]}<br>source: %{customdata[2]}<extra></extra>",
            **where,
        )
    # the chips' names go on last, each in a trace of its own, so no chip's line is drawn over a name (the
    # GPUs' lines crowd), with a white halo where a line passes close
    for s in specs:
        if s.name not in labels:
            continue
        text, side = labels[s.name]
        i = families.index(s.family)
        fig.add_scatter(name=f"{s.name} (label)", mode="markers+text", marker={"size": 9, "opacity": 0},
                        x=[s.memory_tiers[0].capacity_bytes],  # the marker: spaced from the point as a name beside it
                        y=[s.memory_tiers[0].bandwidth_Bps], text=[text], textposition=side, cliponaxis=False,
                        textfont={"size": 10, "shadow": "0 0 2px white, 0 0 2px white, 0 0 3px white"},
                        showlegend=False, hoverinfo="skip", row=i // cols + 1, col=i % cols + 1)
    for family in crowded:
        i = families.index(family)
        chips = [s.name for s in specs if s.family == family]
        listed = "<br>".join(", ".join(chips[j:j + 3]) for j in range(0, len(chips), 3))  # three names a line
        fig.add_annotation(text=f"{len(chips)} chips (hover a line):<br>{listed}", showarrow=False,
                           xref="x domain", yref="y domain", x=0.02, y=0.02, xanchor="left", yanchor="bottom",
                           align="left", font={"size": 9}, bgcolor="rgba(255,255,255,0.8)",
                           row=i // cols + 1, col=i % cols + 1)
    subtitle = ("circle: on chip; square: first tier off chip; diamond: the next;"
                + (" x: capacity per chip, y: bandwidth; one panel per family;" if facet else "")
                + " hover a marker for the tier")
    fig.update_layout(title={"text": "Memory tiers: capacity vs bandwidth (per chip)", "subtitle": {"text": subtitle}},
                      legend={"groupclick": "toggleitem"}, margin={"t": 90 if facet else 80})
    if facet:
        fig.update_xaxes(**{k: v for k, v in xaxis.items() if k != "title"})
        fig.update_yaxes(**{k: v for k, v in yaxis.items() if k != "title"})
        fig.update_xaxes(title_text="capacity per chip", row=rows)
        fig.update_yaxes(title_text="bandwidth", col=1)
        fig.update_layout(height=260 * rows + 120, showlegend=False)
    else:
        fig.update_layout(xaxis=xaxis, yaxis=yaxis)
    return fig


def _on_chip_labels(specs: Sequence[AcceleratorSpec], xaxis: dict[str, object], yaxis: dict[str, object],
                    width_px: float, height_px: float) -> dict[str, tuple[str, str]]:
    """One label per group of a family's chips whose on-chip tiers lie within 0.3 decades of each other
    ("inf2 / trn1"), on the first chip of the group, on a side that does not cover another label."""
    out: dict[str, tuple[str, str]] = {}
    for family in dict.fromkeys(s.family for s in specs):
        groups: list[tuple[float, float, list[str]]] = []
        for s in (s for s in specs if s.family == family):
            x, y = math.log10(s.memory_tiers[0].capacity_bytes), math.log10(s.memory_tiers[0].bandwidth_Bps)
            near = next((g for g in groups if abs(g[0] - x) < 0.3 and abs(g[1] - y) < 0.3), None)
            if near:
                near[2].append(s.name)
            else:
                groups.append((x, y, [s.name]))
        # two names a line, above or below the point: a chip's line leaves its on-chip tier to the right
        texts = ["<br>".join(" / ".join(g[2][i:i + 2]) for i in range(0, len(g[2]), 2)) for g in groups]
        sides = label_positions([10 ** g[0] for g in groups], [10 ** g[1] for g in groups], texts,
                                x_range=tuple(xaxis["range"]), y_range=tuple(yaxis["range"]),  # type: ignore[arg-type]
                                width_px=width_px, height_px=height_px, font_px=10,
                                positions=("top center", "bottom center", "top right", "bottom right"))
        for g, text, side in zip(groups, texts, sides, strict=True):
            out[g[2][0]] = (text, side)
    return out


# ---- one structural picture per family


def family_diagram(name: str | AcceleratorSpec) -> go.Figure:
    """The chip's structure, aggregated (at most :data:`MAX_CELLS` cells), with its memory tiers below.

    WSE: the core mesh in blocks, with an illustrative pipelined placement (one rectangle per layer).
    RDU: the PCU/PMU checkerboard, split into sections. IPU: the tile grid, and one superstep.
    TSP: the functional slices as columns. TPU: the TensorCores' MXUs and vector units, ICI links to the torus.
    GPU / CPU: the SMs or cores over L2 / cache and HBM / DRAM.
    NeuronCore: each core's Tensor, Vector, Scalar and GpSimd engines over its state buffer, the HBM, and the
    host CPU over the host link (where ``fallback="host"`` runs the ops the chip lacks).
    Gaudi: the matrix engines (MME) above the grid of programmable TPCs, both over the shared on-die SRAM and
    the HBM; the on-die RoCE ports to the other chips on one side, the host CPU on the other.
    """
    spec = name if isinstance(name, AcceleratorSpec) else get(name)
    kind = model_for(spec.family).diagram
    fig = _DIAGRAMS[kind](spec)
    lines = textwrap.wrap(spec.execution_model, 140, break_on_hyphens=False)  # plotly does not wrap a subtitle
    fig.update_layout(
        title={"text": f"{spec.full_name} [{spec.family}]", "subtitle": {"text": "<br>".join(lines)}},
        xaxis={"visible": False}, yaxis={"visible": False},
        plot_bgcolor="white", margin={"t": 72 + 18 * len(lines), "l": 10, "r": 10, "b": 10}, showlegend=False,
    )
    if kind == "slices":
        fig.update_layout(height=360)  # a strip of slices: cells need not be square
    else:
        fig.update_yaxes(scaleanchor="x")
    return fig


def _grid(rows: int, cols: int, budget: int = MAX_CELLS) -> tuple[int, int, int]:
    """Aggregate a rows x cols grid into blocks of step x step: (grid rows, grid cols, step)."""
    step = max(1, math.ceil(math.sqrt(rows * cols / budget)))
    while math.ceil(rows / step) * math.ceil(cols / step) > budget:
        step += 1
    return math.ceil(rows / step), math.ceil(cols / step), step


def _near_square(n: int) -> tuple[int, int]:
    rows = max(1, int(math.sqrt(n / 2)))
    return rows, math.ceil(n / rows)


def _heatmap(z: list[list[int]], text: list[list[str]], colorscale: list[list[object]],
             zmin: float, zmax: float) -> go.Heatmap:
    return go.Heatmap(z=z, text=text, hovertemplate="%{text}<extra></extra>", colorscale=colorscale,
                      zmin=zmin, zmax=zmax, showscale=False, xgap=1, ygap=1)


def _memory_bands(fig: go.Figure, spec: AcceleratorSpec, width: int, height: int, *, skip_first: bool = True,
                  top_label: str | None = "") -> None:
    """Draw the tiers (off-chip ones, or all) as labelled bands under the unit grid (rows 0..height).

    ``top_label`` goes above the grid: "" means "on chip: <first tier>", None means no label.
    """
    band = max(1.0, height * 0.12)
    half = max(width, 8) / 2  # wide enough for the label, centred under the grid
    y = -0.5
    for t in spec.memory_tiers[1 if skip_first else 0:]:
        y0, y1 = y - band * 0.3 - band, y - band * 0.3
        fig.add_shape(type="rect", x0=(width - 1) / 2 - half, x1=(width - 1) / 2 + half, y0=y0, y1=y1,
                      fillcolor="#dddddd", line={"color": "#888888"})
        fig.add_annotation(x=(width - 1) / 2, y=(y0 + y1) / 2, text=str(t), showarrow=False)
        y = y0
    if top_label is not None:
        fig.add_annotation(x=(width - 1) / 2, y=height - 0.5 + band * 0.5,
                           text=top_label or f"on chip: {spec.memory_tiers[0]}", showarrow=False)


def _wafer(spec: AcceleratorSpec) -> go.Figure:
    rows, cols = spec.mesh_shape or _near_square(spec.compute_units)
    gr, gc, step = _grid(rows, cols)
    per_block = step * step
    layers = [0.15, 0.35, 0.35, 0.15]  # an illustrative 4-layer model, each layer on a rectangle of columns
    bounds = [sum(layers[:i + 1]) for i in range(len(layers))]
    z, text = [], []
    for _ in range(gr):
        zr, tr = [], []
        for c in range(gc):
            layer = next(i for i, b in enumerate(bounds) if (c + 0.5) / gc <= b + 1e-9)
            zr.append(layer + 1)
            tr.append(f"block of {per_block:,} cores ({step} x {step}), "
                      f"{fmt_bytes(per_block * spec.memory_per_unit_bytes)} SRAM<br>"
                      f"pipelined mode: layer {layer + 1} lives here (illustrative)")
        z.append(zr)
        text.append(tr)
    scale: list[list[object]] = [[0, "#c6dbef"], [0.33, "#6baed6"], [0.67, "#2171b5"], [1, "#08306b"]]
    fig = go.Figure(_heatmap(z, text, scale, 1, len(layers)))
    x0 = -0.5
    for i, b in enumerate(bounds):  # label each layer's rectangle
        x1 = b * gc - 0.5
        fig.add_annotation(x=(x0 + x1) / 2, y=gr / 2, text=f"layer {i + 1}", showarrow=False,
                           textangle=-90 if x1 - x0 < 5 else 0,  # a narrow region: read it upwards
                           font={"color": "white" if i else "black"})
        x0 = x1
    _memory_bands(fig, spec, gc, gr, top_label=f"on chip: {spec.memory_tiers[0]}; each cell = {per_block:,} cores")
    return fig


def _rdu(spec: AcceleratorSpec) -> go.Figure:
    pcus = spec.pcus or spec.compute_units
    pmus = spec.pmus or pcus
    rows, cols = spec.mesh_shape or _near_square(pcus + pmus)
    gr, gc, step = _grid(rows, cols, budget=MAX_CELLS // 2)
    per_cell = math.ceil((pcus + pmus) / (gr * gc))
    z, text = [], []
    for r in range(gr):
        zr, tr = [], []
        for c in range(gc):
            section = min(2, 3 * c // gc) + 1
            pcu = (r + c) % 2 == 0
            zr.append(1 if pcu else 2)
            tr.append(f"~{per_cell} {'PCUs (compute)' if pcu else 'PMUs (on-chip memory)'}<br>"
                      f"section {section} of a fused graph (illustrative)")
        z.append(zr)
        text.append(tr)
    fig = go.Figure(_heatmap(z, text, [[0, "#d62728"], [0.5, "#d62728"], [0.5, "#fcbba1"], [1, "#fcbba1"]],
                             1, 2))
    edges = [math.ceil(k * gc / 3) - 0.5 for k in range(4)]  # first column of each section, minus half a cell
    edges[-1] = gc - 0.5
    for x in edges[1:-1]:
        fig.add_shape(type="line", x0=x, x1=x, y0=-0.5, y1=gr - 0.5, line={"color": "black", "width": 3})
    for k in range(3):
        fig.add_annotation(x=(edges[k] + edges[k + 1]) / 2, y=gr - 0.5, yshift=-12, text=f"section {k + 1}",
                           showarrow=False, font={"color": "white"}, bgcolor="black")
    _memory_bands(fig, spec, gc, gr)
    return fig


def _ipu(spec: AcceleratorSpec) -> go.Figure:
    rows, cols = spec.mesh_shape or _near_square(spec.compute_units)
    gr, gc, step = _grid(rows, cols)
    per_cell = step * step
    z = [[1] * gc for _ in range(gr)]
    text = [[f"{per_cell} tiles, {fmt_bytes(per_cell * spec.memory_per_unit_bytes)} private SRAM"] * gc
            for _ in range(gr)]
    fig = go.Figure(_heatmap(z, text, [[0, "#ffffff"], [1, "#9467bd"]], 0, 1))
    # One bulk-synchronous superstep, as a bar above the tiles (illustrative proportions).
    y = gr + 1
    x = -0.5
    for phase, share, color in (("compute", 0.6, "#9467bd"), ("sync", 0.1, "#444444"), ("exchange", 0.3, "#c5b0d5")):
        fig.add_shape(type="rect", x0=x, x1=x + share * gc, y0=y, y1=y + 1.5, fillcolor=color,
                      line={"color": "white"})
        fig.add_annotation(x=x + share * gc / 2, y=y + 0.75, text=phase, showarrow=False,
                           font={"color": "white" if phase != "exchange" else "black"})
        x += share * gc
    fig.add_annotation(x=(gc - 1) / 2, y=y + 2.3, text="one superstep (illustrative proportions)",
                       showarrow=False)
    _memory_bands(fig, spec, gc, gr, top_label=None)  # the superstep bar sits where the label would
    return fig


_SLICE_COLORS = {"MXM": "#ff7f0e", "SXM": "#8c564b", "MEM": "#fdd0a2", "VXM": "#d62728"}
_SLICE_NAMES = {"MXM": "matrix", "SXM": "switch", "MEM": "memory", "VXM": "vector"}


def _tsp(spec: AcceleratorSpec) -> go.Figure:
    slices = dict(spec.functional_slices or {"MEM": spec.compute_units})
    # Mirror the floorplan: west half, the vector unit in the middle, east half.
    west: list[str] = []
    for kind in ("MXM", "SXM"):
        west += [kind] * (slices.get(kind, 0) // 2)
    west += ["MEM"] * (slices.get("MEM", 0) // 2)
    others = [k for k in slices if k not in ("MXM", "SXM", "MEM", "VXM")]
    middle = ["VXM"] * slices.get("VXM", 0) + [k for k in others for _ in range(slices[k])]
    east = list(reversed(west))
    leftovers = {k: slices.get(k, 0) - 2 * (slices.get(k, 0) // 2) for k in ("MXM", "SXM", "MEM")}
    middle += [k for k, n in leftovers.items() for _ in range(n)]
    layout = west + middle + east
    kinds = list(dict.fromkeys(layout))
    code = {k: i for i, k in enumerate(kinds)}
    lanes = 4  # a few rows, to read as slices that span the chip's lanes
    z = [[code[k] for k in layout] for _ in range(lanes)]
    per_mem = fmt_bytes(spec.memory_per_unit_bytes)
    text = [[f"{k} slice" + (f", {per_mem} SRAM" if k == "MEM" else "") for k in layout] for _ in range(lanes)]
    n = max(1, len(kinds) - 1)
    scale: list[list[object]] = []
    for i, k in enumerate(kinds):
        color = _SLICE_COLORS.get(k, "#bbbbbb")
        scale += [[max(0.0, (i - 0.5) / n), color], [min(1.0, (i + 0.5) / n), color]]
    scale[0][0], scale[-1][0] = 0.0, 1.0
    fig = go.Figure(go.Heatmap(z=z, text=text, hovertemplate="%{text}<extra></extra>", colorscale=scale,
                               zmin=0, zmax=n, showscale=False, xgap=1))
    key = "   ".join(f"<span style='color:{_SLICE_COLORS.get(k, '#bbbbbb')}'>■</span> {k} ({_SLICE_NAMES.get(k, k)})"
                       f" x{layout.count(k)}" for k in kinds)
    fig.add_annotation(x=len(layout) / 2, y=lanes - 0.5, yshift=14, text=key, showarrow=False)
    fig.add_annotation(x=len(layout) / 2, y=-1.2, text="streams flow east and west across the slices; "
                       "the compiler schedules every cycle", showarrow=False)
    fig.add_annotation(x=len(layout) / 2, y=lanes + 1.5, text=f"on chip: {spec.memory_tiers[0]} (SRAM only)",
                       showarrow=False)
    return fig


def _torus(spec: AcceleratorSpec) -> go.Figure:
    """TPU: each TensorCore's MXUs (2 x 2 of them per core drawn) over its vector unit, the memory tiers below,
    and the chip's inter-chip links (ICI) to its torus neighbours at the sides."""
    parts = dict(spec.functional_slices or {})
    cores = max(1, spec.compute_units)
    mxus = max(1, parts.get("MXU", 4 * cores) // cores)
    side = max(1, math.ceil(math.sqrt(mxus)))
    width = cores * side + (cores - 1)  # a blank column between TensorCores
    rows = math.ceil(mxus / side) + 1  # the MXUs, then a row for the vector unit
    z = [[0] * width for _ in range(rows)]
    text = [[""] * width for _ in range(rows)]
    for c in range(cores):
        x0 = c * (side + 1)
        for i in range(side):
            z[0][x0 + i] = 2
            text[0][x0 + i] = f"TensorCore {c}: vector unit (elementwise, reductions; fp32)"
        for m in range(mxus):
            r, col = 1 + m // side, x0 + m % side
            z[r][col] = 1
            text[r][col] = f"TensorCore {c}: MXU {m}, a 128 x 128 systolic array (bf16 / int8 multiply-adds)"
    base, light = FAMILY_COLORS[spec.family], "#9edae5"
    scale: list[list[object]] = [[0, "#ffffff"], [0.33, "#ffffff"], [0.34, base], [0.66, base], [0.67, light],
                                 [1, light]]
    fig = go.Figure(_heatmap(z, text, scale, 0, 2))
    for c in range(cores):  # name each TensorCore above its MXUs, each unit in its cells
        x0 = c * (side + 1)
        fig.add_annotation(x=x0 + (side - 1) / 2, y=rows - 0.5, yshift=10, text=f"TensorCore {c}", showarrow=False)
        fig.add_annotation(x=x0 + (side - 1) / 2, y=0, text="vector unit", showarrow=False)
        for m in range(mxus):
            fig.add_annotation(x=x0 + m % side, y=1 + m // side, text="MXU", showarrow=False,
                               font={"color": "white"})  # its size is in the line above the cores: cells are narrow
    dims = spec.torus_dims or 2
    links = f"each MXU a 128 x 128 systolic array; ICI: {2 * dims} links to the chip's neighbours in a {dims}-D torus" + (
        f", {fmt_si(spec.chip_to_chip_Bps, 'B/s')} in all" if spec.chip_to_chip_Bps else "")
    for x, ax in ((-0.5, -40), (width - 0.5, 40)):  # the links leave the chip on both sides
        fig.add_annotation(x=x, y=(rows - 1) / 2, ax=ax, ay=0, text="ICI", showarrow=True, arrowhead=2,
                           arrowside="end+start")
    fig.add_annotation(x=(width - 1) / 2, y=rows - 0.5, yshift=32, text=links, showarrow=False)
    _memory_bands(fig, spec, width, rows, skip_first=False, top_label=None)
    return fig


def _processor(spec: AcceleratorSpec) -> go.Figure:
    rows, cols = _near_square(spec.compute_units)
    z, text = [], []
    for r in range(rows):
        zr, tr = [], []
        for c in range(cols):
            i = r * cols + c
            zr.append(1 if i < spec.compute_units else 0)
            tr.append(f"{spec.unit_name} {i}, {fmt_bytes(spec.memory_per_unit_bytes)} private" if
                      i < spec.compute_units else "")
        z.append(zr)
        text.append(tr)
    fig = go.Figure(_heatmap(z, text, [[0, "#ffffff"], [1, FAMILY_COLORS[spec.family]]], 0, 1))
    _memory_bands(fig, spec, cols, rows, skip_first=False,
                  top_label=f"{spec.compute_units:,} {spec.unit_name}s; each kernel reads and writes the tiers below")
    return fig


_ENGINES = (("Tensor Engine", "systolic array: matmuls, convolutions", 0.46),
            ("Vector Engine", "reductions, normalisation, pooling", 0.18),
            ("Scalar Engine", "elementwise: activations, exp", 0.18),
            ("GpSimd", "custom operators", 0.18))


def _neuron(spec: AcceleratorSpec) -> go.Figure:
    """NeuronCores side by side, each its four engines over its share of the on-chip state buffer; the HBM
    below; the host CPU beside, over the host link that a fallback program's transfers cross."""
    cores = max(1, spec.compute_units)
    color = FAMILY_COLORS[spec.family]
    fig = go.Figure()
    width, gap = 4.0, 0.6
    sbuf = spec.memory_tiers[0]
    hover_x: list[float] = []
    hover_y: list[float] = []
    hover: list[str] = []
    for c in range(cores):
        x0 = c * (width + gap)
        fig.add_shape(type="rect", x0=x0, x1=x0 + width, y0=0, y1=4, line={"color": color, "width": 2})
        fig.add_annotation(x=x0 + width / 2, y=4, yshift=10, text=f"{spec.unit_name} {c}", showarrow=False)
        x = x0 + 0.1
        for name, what, share in _ENGINES:
            w = (width - 0.2) * share
            fig.add_shape(type="rect", x0=x, x1=x + w - 0.05, y0=1.4, y1=3.7, fillcolor=color,
                          opacity=0.9 if name == "Tensor Engine" else 0.45, line={"width": 0})
            wide = name == "Tensor Engine"  # the narrow engines' names stand on end to fit their columns
            fig.add_annotation(x=x + w / 2, y=2.55, text=name.replace(" ", "<br>") if wide else name,
                               textangle=0 if wide else -90, showarrow=False,
                               font={"size": 10, "color": "white" if wide else "black"})
            hover_x.append(x + w / 2)
            hover_y.append(2.55)
            hover.append(f"{spec.unit_name} {c}: {name}, {what}")
            x += w
        fig.add_shape(type="rect", x0=x0 + 0.1, x1=x0 + width - 0.1, y0=0.2, y1=1.2, fillcolor="#f2f2f2",
                      line={"color": "#888888"})
        fig.add_annotation(x=x0 + width / 2, y=0.7, showarrow=False, font={"size": 10},
                           text=f"state buffer {fmt_bytes(sbuf.capacity_bytes / cores)}")
    total = cores * width + (cores - 1) * gap
    for i, t in enumerate(spec.memory_tiers[1:]):
        y1 = -0.4 - i * 1.1
        fig.add_shape(type="rect", x0=0, x1=total, y0=y1 - 0.9, y1=y1, fillcolor="#dddddd", line={"color": "#888888"})
        fig.add_annotation(x=total / 2, y=y1 - 0.45, text=str(t), showarrow=False)
    hx = total + 1.6
    fig.add_shape(type="rect", x0=hx, x1=hx + 2.4, y0=1, y1=3, fillcolor="#b0b0b0", line={"color": "#4d4d4d"})
    fig.add_annotation(x=hx + 1.2, y=2, text="host CPU<br>(fallback ops)", showarrow=False, font={"size": 10})
    link = spec.host_link_Bps
    fig.add_annotation(x=total + 0.05, y=2, ax=hx - 0.05, ay=2, xref="x", yref="y", axref="x", ayref="y",
                       showarrow=True, arrowhead=2, arrowside="end+start", text="")
    fig.add_annotation(x=(total + hx) / 2, y=2, yshift=14, showarrow=False, font={"size": 9},
                       text="host link" + (f" {fmt_si(link, 'B/s')}" if link else " (PCIe)"))
    if spec.chip_to_chip_Bps:
        fig.add_annotation(x=total / 2, y=4.9, showarrow=False, font={"size": 10},
                           text=f"NeuronLink to the other chips: {fmt_si(spec.chip_to_chip_Bps, 'B/s')}")
    fig.add_trace(go.Scatter(x=hover_x, y=hover_y, mode="markers", marker={"size": 18, "opacity": 0},
                             hovertext=hover, hoverinfo="text"))
    return fig


def _box(shapes: list[dict], notes: list[dict], x0: float, x1: float, y0: float, y1: float, text: str, fill: str, *,
         font: str = "black", size: int = 10, line: str = "#888888") -> None:
    """A labelled rectangle of a block diagram (a shape and an annotation, added to the figure in one go)."""
    shapes.append({"type": "rect", "x0": x0, "x1": x1, "y0": y0, "y1": y1, "fillcolor": fill, "line": {"color": line}})
    notes.append({"x": (x0 + x1) / 2, "y": (y0 + y1) / 2, "text": text, "showarrow": False,
                  "font": {"size": size, "color": font}})


def _arrow(notes: list[dict], x0: float, x1: float, y: float) -> None:
    notes.append({"x": x0, "y": y, "ax": x1, "ay": y, "xref": "x", "yref": "y", "axref": "x", "ayref": "y",
                  "showarrow": True, "arrowhead": 2, "arrowside": "end+start", "text": ""})


def _gaudi(spec: AcceleratorSpec) -> go.Figure:
    """Gaudi: the MMEs in a row above the TPC grid, the shared SRAM and the HBM below; the RoCE ports to the right
    (the other Gaudis, inside the server and beyond), the host CPU to the left (the ops the bridge lacks)."""
    shades = model_for(spec.family).shades
    units = dict(spec.functional_slices or {"TPC": spec.compute_units})
    mmes, tpcs = units.get("MME", 1), units.get("TPC", spec.compute_units)
    width = 16.0
    shapes: list[dict] = []
    notes: list[dict] = []
    hx: list[float] = []
    hy: list[float] = []
    hover: list[str] = []
    mw = width / mmes
    for i in range(mmes):  # the matrix engines: every matmul, convolution and batched GEMM
        x0 = i * mw
        _box(shapes, notes, x0 + 0.1, x0 + mw - 0.1, 6.2, 8.2, "MME" if mw < 2.5 else f"MME {i}", shades[2],
             font="white", line=shades[2])
        hx.append(x0 + mw / 2)
        hy.append(7.2)
        hover.append(f"Matrix Multiplication Engine {i}: linear layers, convolutions, batched GEMM")
    notes.append({"x": width / 2, "y": 8.2, "yshift": 12, "showarrow": False, "font": {"size": 11},
                  "text": f"{mmes} matrix engines (MME): every op that lowers to a matmul"})
    per_row = 8 if tpcs <= 32 else 16
    rows = math.ceil(tpcs / per_row)
    cw, ch = width / per_row, 3.4 / rows
    for i in range(tpcs):  # the programmable cores: everything else
        r, c = divmod(i, per_row)
        x0, y1 = c * cw, 5.9 - r * ch
        shapes.append({"type": "rect", "x0": x0 + 0.06, "x1": x0 + cw - 0.06, "y0": y1 - ch + 0.06, "y1": y1,
                       "fillcolor": shades[1], "line": {"color": shades[0], "width": 1}})
        hx.append(x0 + cw / 2)
        hy.append(y1 - ch / 2)
        hover.append(f"{spec.unit_name} {i}: VLIW core, 2048-bit SIMD (softmax, norms, activations, ...)")
    notes.append({"x": width / 2, "y": 4.2, "showarrow": False, "font": {"size": 11},
                  "bgcolor": "rgba(255,255,255,0.8)",
                  "text": f"{tpcs} Tensor Processor Cores (TPC): every other op, programmable"})
    y = 2.2
    for t in spec.memory_tiers:  # the shared on-die SRAM, then HBM
        first = t is spec.memory_tiers[0]
        _box(shapes, notes, 0, width, y - 0.9, y, f"on-die {t}, shared" if first else str(t),
             "#eeeeee" if first else "#dddddd")
        y -= 1.1
    ports = f"{fmt_si(spec.chip_to_chip_Bps, 'B/s')}<br>(both ways)" if spec.chip_to_chip_Bps else ""
    _box(shapes, notes, width + 1.4, width + 4.2, 1.2, 8.2, f"on-die<br>RoCE<br>Ethernet<br>ports<br><br>{ports}",
         shades[0], line=shades[2])
    _arrow(notes, width + 0.05, width + 1.35, 4.7)
    notes.append({"x": width + 2.8, "y": 8.2, "yshift": 12, "showarrow": False, "font": {"size": 10},
                  "text": "to the other Gaudis"})
    _box(shapes, notes, -4.2, -1.4, 3.7, 5.7, "host CPU<br>(ops off the<br>bridge's list)", "#b0b0b0", line="#4d4d4d")
    _arrow(notes, -0.05, -1.35, 4.7)
    link = spec.host_link_Bps
    notes.append({"x": -0.7, "y": 4.7, "yshift": -14, "showarrow": False, "font": {"size": 9},
                  "text": "PCIe" + (f"<br>{fmt_si(link, 'B/s')}" if link else "")})
    fig = go.Figure(go.Scatter(x=hx, y=hy, mode="markers", marker={"size": 14, "opacity": 0}, hovertext=hover,
                               hoverinfo="text"))
    fig.update_layout(shapes=shapes, annotations=notes)
    return fig


_DIAGRAMS: dict[str, Callable[[AcceleratorSpec], go.Figure]] = {
    "mesh": _wafer,
    "sections": _rdu,
    "tiles": _ipu,
    "slices": _tsp,
    "torus": _torus,
    "processor": _processor,
    "neuroncores": _neuron,
    "engines": _gaudi,
}
"""How each kind of diagram is drawn; a family's model names its kind (``ExecutionModel.diagram``)."""
