"""Figures of a sweep (``ak.sweep``): the Pareto front per family, the winning chip per cell, data vs model
parallelism. Each returns a ``plotly.graph_objects.Figure`` and draws nothing itself; every number is modelled."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from accelkit.sim.report import fmt_s
from accelkit.viz.style import FAMILY_COLORS, log_axis
from accelkit.workflow.analysis import data_vs_model, pareto_front, winners

if TYPE_CHECKING:
    import pandas as pd


def _jitter(families: list[str]) -> dict[str, float]:
    """A small factor per family that spreads the families' points side by side around each chip count on a
    log axis, so points of one chip count do not stack in one column."""
    n = len(families)
    return {f: 10 ** (0.035 * (i - (n - 1) / 2)) for i, f in enumerate(families)}


def pareto(df: pd.DataFrame, *, x: str = "chips_used", y: str = "time_per_sample_s",
           models: list[str] | None = None) -> go.Figure:
    """Time per sample against chips used, one panel per model (``models``, default every model of the sweep):
    each family's Pareto front as a line in the family's colour (the configurations no other of the family beats
    on both), and every ok configuration as a faint point of that colour. Within a panel the families sit side by
    side around each chip count; the hover says the real count."""
    from plotly.subplots import make_subplots

    ok = df[df.status == "ok"]
    if models is None:
        models = list(dict.fromkeys(ok.model)) if "model" in ok else [""]
    families = sorted({str(f) for f in ok.family})
    shift = _jitter(families)
    cols = 1 if len(models) == 1 else 2
    rows = math.ceil(len(models) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[str(m) for m in models] if models != [""] else None,
                        horizontal_spacing=0.1, vertical_spacing=0.4 / max(rows, 1))
    seconds = y.endswith("_s")  # a time: ticks as "1 µs", "10 ms"
    name = y[:-2].replace("_", " ") if seconds else y.replace("_", " ")
    for n, model in enumerate(models):
        row, col = n // cols + 1, n % cols + 1
        mine = ok if model == "" else ok[ok.model == model]
        front = pareto_front(mine, x=x, y=y)
        for family in families:
            color = FAMILY_COLORS.get(family, "#444444")
            group, line = mine[mine.family == family], front[front.family == family] if len(front) else front
            if not len(group):
                continue
            what = group.target + " " + group.precision.astype(str) + ", batch " + group.batch.astype(str) \
                if {"precision", "batch"} <= set(group.columns) else group.target
            fig.add_trace(go.Scatter(
                x=group[x] * shift[family], y=group[y], mode="markers", name=f"{family}: every configuration",
                legendgroup=family, showlegend=False, marker={"color": color, "size": 6, "opacity": 0.3},
                customdata=group[x], text=what,
                hovertemplate="%{text}<br>%{customdata} chips, %{y:.3g} s/sample<extra></extra>"), row=row, col=col)
            fig.add_trace(go.Scatter(
                x=line[x] * shift[family], y=line[y], mode="lines+markers", name=family, legendgroup=family,
                showlegend=n == 0, line={"color": color, "width": 2}, marker={"color": color, "size": 9},
                customdata=line[x], text=line.target,
                hovertemplate=f"{family} front: " + "%{text}<br>%{customdata} chips, %{y:.3g} s/sample<extra></extra>"),
                row=row, col=col)
        yaxis = log_axis([float(v) for v in mine[y]], "", pad=0.2, si=False,
                         title=f"{name} (modelled)" if col == 1 else None)
        if seconds:
            yaxis["ticktext"] = [fmt_s(float(t)) for t in yaxis["tickvals"]]  # type: ignore[attr-defined]
        fig.update_yaxes(row=row, col=col, **yaxis)
        chip_counts = sorted({int(c) for c in ok[x]})
        fig.update_xaxes(row=row, col=col, type="log", tickvals=chip_counts,
                         range=[math.log10(min(chip_counts)) - 0.25, math.log10(max(chip_counts)) + 0.25],
                         title="chips used" if row == rows else None)
    fig.update_layout(title="Time per sample against chips used (MODELLED), Pareto front per family",
                      title_subtitle_text="one panel per model; a line falling to the right means more chips buy "
                                          "speed per sample; faint points: every configuration",
                      height=280 * rows + 160, margin={"t": 110}, legend_title_text="family (front)")
    return fig


def winner_map(df: pd.DataFrame, *, index: str = "model", columns: str = "batch",
               order: list[str] | None = None) -> go.Figure:
    """A map ``index`` x ``columns`` whose cells name the chip with the least modelled time per sample, coloured
    by its family; ``order`` lists the rows top to bottom (default: sorted)."""
    table = winners(df, index=index, columns=columns)
    if order is not None:
        table = table.reindex([o for o in order if o in table.index])
    ok = df[df.status == "ok"]
    family_of = dict(zip(ok.target, ok.family, strict=True))
    families: list[str] = sorted({str(family_of[t]) for t in table.values.ravel() if t in family_of})
    code = {f: i for i, f in enumerate(families)}
    z = [[code.get(family_of.get(t, ""), None) if isinstance(t, str) else None for t in row] for row in table.values]
    text = [[t if isinstance(t, str) else "" for t in row] for row in table.values]
    fig = go.Figure(go.Heatmap(z=z, x=[str(c) for c in table.columns], y=[str(i) for i in table.index], text=text,
                               texttemplate="%{text}", colorscale="Viridis", showscale=False,
                               hovertemplate="%{y}, " + columns + " %{x}: %{text}<extra></extra>"))
    fig.update_layout(title="The chip with the least time per sample (MODELLED)",
                      title_subtitle_text=f"by {index} and {columns}<br>colour = family: " + ", ".join(families),
                      xaxis_title=columns, yaxis_title=index, margin={"t": 100})
    return fig


def parallel_split(df: pd.DataFrame) -> go.Figure:
    """Per family, the best modelled time per sample with every chip a replica (data parallel) beside the best
    with the model split over the chips (tensor or pipeline)."""
    table = data_vs_model(df).reset_index()
    labels = [" / ".join(str(v) for v in row) for row in table[[c for c in table.columns
                                                                  if c not in ("data_parallel", "model_parallel", "winner")]].values]
    # one row per family and model, bars across: every label reads horizontally, however many rows
    fig = go.Figure([go.Bar(name="data parallel", y=labels, x=table["data_parallel"], orientation="h"),
                     go.Bar(name="model parallel (tensor or pipeline)", y=labels, x=table["model_parallel"],
                            orientation="h")])
    values = [float(v) for v in [*table["data_parallel"], *table["model_parallel"]]]
    xaxis = log_axis(values, "s", title="time per sample (modelled)", pad=0.1)
    xaxis["ticktext"] = [fmt_s(float(t)) for t in xaxis["tickvals"]]  # type: ignore[attr-defined]
    fig.update_layout(barmode="group", xaxis=xaxis,
                      yaxis={"autorange": "reversed"}, height=160 + 28 * len(labels),
                      legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
                      title="Data or model parallelism, per family (MODELLED; shorter is better)",
                      margin={"t": 110})
    return fig


__all__ = ["parallel_split", "pareto", "winner_map"]
