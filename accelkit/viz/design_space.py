"""Figures of a sweep (``ak.sweep``): the Pareto front per family, the winning chip per cell, data vs model
parallelism. Each returns a ``plotly.graph_objects.Figure`` and draws nothing itself; every number is modelled."""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

from accelkit.sim.report import fmt_s
from accelkit.viz.style import log_axis
from accelkit.workflow.analysis import data_vs_model, pareto_front, winners

if TYPE_CHECKING:
    import pandas as pd


def pareto(df: pd.DataFrame, *, x: str = "chips_used", y: str = "time_per_sample_s") -> go.Figure:
    """Every ok configuration as a point (time per sample against chips used), and each family's Pareto front
    as a line: the configurations no other of the family beats on both."""
    ok = df[df.status == "ok"]
    front = pareto_front(df, x=x, y=y)
    fig = go.Figure()
    for family, group in ok.groupby("family", sort=True):
        fig.add_trace(go.Scatter(x=group[x], y=group[y], mode="markers", name=f"{family}", opacity=0.35,
                                 legendgroup=str(family), text=group.target + " " + group.model,
                                 hovertemplate="%{text}<br>%{x} chips, %{y:.3g} s/sample<extra></extra>"))
        line = front[front.family == family]
        fig.add_trace(go.Scatter(x=line[x], y=line[y], mode="lines+markers", name=f"{family} front",
                                 legendgroup=str(family), showlegend=False, text=line.target + " " + line.model,
                                 hovertemplate="front: %{text}<br>%{x} chips, %{y:.3g} s/sample<extra></extra>"))
    seconds = y.endswith("_s")  # a time: ticks as "1 µs", "10 ms"
    yaxis = log_axis([float(v) for v in ok[y]], "", pad=0.2, si=False,
                     title=f"{y[:-2].replace('_', ' ') if seconds else y.replace('_', ' ')} (modelled)")
    if seconds:
        yaxis["ticktext"] = [fmt_s(float(t)) for t in yaxis["tickvals"]]  # type: ignore[attr-defined]
    fig.update_layout(title="Time per sample against chips used (MODELLED), Pareto front per family",
                      xaxis={"type": "log", "title": "chips used", "tickvals": sorted({int(c) for c in ok[x]})},
                      yaxis=yaxis, height=40 * len(ok.family.unique()) + 200)  # the legend's column fits, no scroll
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
