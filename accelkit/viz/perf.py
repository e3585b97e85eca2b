"""Plotly figures of modelled performance: where a step's time goes, and how chips compare.

    timeline(report)              a Gantt of the step from ``report.events``, one lane per unit group
    roofline(report)              each kernel's FLOPs/byte against the FLOP/s it achieves, under the
                                  chip's compute and bandwidth roofs (``accelkit.sim.estimate.rates``)
    comparison_bars(reports)      step time by section (or throughput) across targets / precisions
    scaling_curves(series)        a metric against chip count (or batch size), ideal linear scaling dashed
    validation_chart(result)      predicted over published for every reference case (the goal's band shaded)

Every function returns a ``plotly.graph_objects.Figure`` and never shows it. Every figure says in its
title that its times are MODELLED. Figures stay light: at most :data:`MAX_MARKS` bars or points;
beyond that, consecutive timeline events of one lane are merged, and roofline points that coincide
(the same kernel in every repeated layer) are drawn once with their count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.colors import qualitative

from accelkit.hardware import AcceleratorSpec, fmt_si, fmt_sig, get
from accelkit.sim.estimate import rates
from accelkit.sim.report import PerfReport, TimelineEvent, fmt_s
from accelkit.viz.style import chip_color, label_positions, log_axis, readable_layer

MAX_MARKS = 1500
"""Most bars or points one figure draws."""

SECTION_COLORS = {"fwd": "#1f77b4", "bckwd": "#ff7f0e", "opt": "#2ca02c", "comm": "#9467bd",
                  "bubble": "#c7c7c7", "io": "#8c564b", "input": "#e377c2"}
BOUND_COLORS = {"compute": "#1f77b4", "memory": "#d62728", "latency": "#7f7f7f", "communication": "#9467bd",
                "host": "#ff7f0e"}
SECTION_LABELS = {"fwd": "forward", "bckwd": "backward", "opt": "optimizer", "comm": "communication",
                  "bubble": "pipeline fill / bubble", "io": "host link (inputs, outputs, round trip)",
                  "input": "waiting for the input pipeline"}


METRIC_UNITS = {"throughput": "samples/s", "tokens_per_s": "tokens/s", "tokens_per_s_per_user": "tokens/s per user",
                "energy_j": "J", "step_time_s": "s", "latency_s": "s", "ttft_s": "s", "chips": "chips",
                "batch_size": "samples"}
"""The unit each report or serving metric is in, for axis titles and labels."""

_METRIC_LABELS = {"throughput": "throughput", "tokens_per_s": "tokens per second",
                  "tokens_per_s_per_user": "tokens per second per user", "energy_j": "energy per step",
                  "step_time_s": "step time", "latency_s": "latency", "ttft_s": "time to first token",
                  "batch_size": "batch size"}


def metric_label(metric: str) -> str:
    """A metric's name as a reader says it: ``tokens_per_s_per_user`` -> "tokens per second per user"."""
    return _METRIC_LABELS.get(metric, metric.replace("_", " "))


def _color(report: Any, i: int) -> str:
    """The chip's own colour when the report names a catalog chip, else the i-th of plotly's palette."""
    try:
        return chip_color(get(report.target))
    except Exception:  # a configuration without a catalog chip: any distinct colour does
        return qualitative.Plotly[i % len(qualitative.Plotly)]


def _unit(seconds: float) -> tuple[float, str]:
    """A scale and unit name that show ``seconds`` as a number between about 1 and 1000."""
    if seconds >= 1:
        return 1.0, "s"
    if seconds >= 1e-3:
        return 1e3, "ms"
    return 1e6, "µs"


def _label(report: PerfReport) -> str:
    return f"{report.target} {report.precision}" + (f" x{report.chips}" if report.chips > 1 else "")


# ---- timeline -------------------------------------------------------------------------------------
def _merge(events: list[TimelineEvent], max_marks: int) -> tuple[list[tuple[TimelineEvent, int, str]], int]:
    """Consecutive events of one lane and section merged in runs, so at most about ``max_marks`` remain.

    Returns (event, how many it stands for, hover text) and the run length used.
    """
    run = max(1, math.ceil(len(events) / max_marks))
    out: list[tuple[TimelineEvent, int, str]] = []
    group: list[TimelineEvent] = []

    def flush() -> None:
        if not group:
            return
        first, last = group[0], group[-1]
        end = last.start_s + last.duration_s
        name = first.name if len(group) == 1 else f"{first.name} … {last.name} ({len(group)} kernels)"
        out.append((TimelineEvent(name, first.section, first.lane, first.start_s, end - first.start_s),
                    len(group), name))
        group.clear()

    for e in events:
        if group and (len(group) >= run or (group[0].lane, group[0].section) != (e.lane, e.section)):
            flush()
        group.append(e)
    flush()
    return out, run


def timeline(report: PerfReport, *, max_marks: int = MAX_MARKS) -> go.Figure:
    """The modelled step as a Gantt chart: one row per lane (section, region, slice), one bar per kernel.

    Bars are coloured by section (forward, backward, optimizer, communication). More than
    ``max_marks`` events are merged into runs of consecutive kernels in the same lane.
    """
    marks, run = _merge(list(report.events), max_marks)
    end = max((e.start_s + e.duration_s for e, _, _ in marks), default=report.step_time_s)
    scale, unit = _unit(max(end, report.step_time_s))
    lanes = list(dict.fromkeys(readable_layer(e.lane) for e, _, _ in marks))
    fig = go.Figure()
    for section in dict.fromkeys(e.section for e, _, _ in marks):
        mine = [(e, n, h) for e, n, h in marks if e.section == section]
        fig.add_trace(go.Bar(
            name=SECTION_LABELS.get(section, section), orientation="h",
            y=[readable_layer(e.lane) for e, _, _ in mine], x=[e.duration_s * scale for e, _, _ in mine],
            base=[e.start_s * scale for e, _, _ in mine],
            marker_color=SECTION_COLORS.get(section, "#8c564b"),
            hovertext=[f"{readable_layer(h)}<br>start {fmt_s(e.start_s)}, {fmt_s(e.duration_s)}" for e, _, h in mine],
            hoverinfo="text"))
    note = f"; runs of up to {run} kernels merged per bar" if run > 1 else ""
    fig.update_layout(
        title=f"{_label(report)} step timeline (MODELLED): {fmt_s(report.step_time_s)}",
        title_subtitle_text=f"{len(report.events)} events, {report.mode} mode{note}",
        barmode="overlay", xaxis_title=f"time ({unit}, modelled)", yaxis_title="lane",
        yaxis={"categoryorder": "array", "categoryarray": lanes, "autorange": "reversed"},
        height=max(300, min(800, 160 + 26 * len(lanes))), margin={"t": 90}, legend_title_text="section")
    return fig


# ---- roofline -------------------------------------------------------------------------------------
def _roofs(r: Any, xs: Sequence[float]) -> go.Figure:
    """A figure with the chip's roofs (matrix and vector compute, one bandwidth roof per memory tier) over an
    intensity range that holds ``xs`` and every ridge point."""
    fig = go.Figure()
    ridges = [r.matmul_flops / bw for bw in r.tier_bw.values()]  # where a bandwidth roof meets compute
    everything = [*xs, *ridges]
    lo, hi = min(everything) / 3, max(everything) * 3
    for name, rate, dash in (("matrix units", r.matmul_flops, "solid"), ("vector units", r.vector_flops, "dot")):
        fig.add_trace(go.Scatter(x=[lo, hi], y=[rate, rate], mode="lines", name=f"{name} {fmt_si(rate, 'FLOP/s')}",
                                 line={"color": "black", "dash": dash, "width": 1.5}, hoverinfo="name"))
    for tier, bw in r.tier_bw.items():
        ridge = r.matmul_flops / bw
        xs_roof = [lo, min(ridge, hi)]
        fig.add_trace(go.Scatter(x=xs_roof, y=[bw * x for x in xs_roof], mode="lines",
                                 name=f"{tier} {fmt_si(bw, 'B/s')}", line={"dash": "dash", "width": 1.5},
                                 hoverinfo="name"))
    return fig


def roofline(report: PerfReport, spec: AcceleratorSpec | str | None = None, *,
             max_marks: int = MAX_MARKS) -> go.Figure:
    """Each kernel's arithmetic intensity (FLOPs per byte it moves) against the FLOP/s it achieves
    per chip, under the chip's roofs: the matrix and vector compute rates and one bandwidth roof per
    memory tier, all as :func:`accelkit.sim.estimate.rates` gives them (peak x efficiency).

    Points are coloured by what bounds the kernel. On dataflow chips a point can sit above a
    bandwidth roof: its bytes stay on chip between fused kernels and never cross that tier.
    """
    spec = get(report.target) if spec is None else (get(spec) if isinstance(spec, str) else spec)
    r = rates(spec, report.precision)
    tensor = report.parallel.tensor
    # (intensity, FLOP/s per chip, bound) -> kernels; repeated layers land on the same point
    points: dict[tuple[float, float, str], list[str]] = {}
    for k in report.kernels:
        if k.flops <= 0 or k.bytes <= 0 or k.time_s <= 0:
            continue
        x, y = k.flops / k.bytes, k.flops / tensor / k.time_s
        key = (round(math.log10(x), 2), round(math.log10(y), 2), k.bound)
        points.setdefault(key, []).append(k.name)
    keys = sorted(points, key=lambda key: -len(points[key]))[:max_marks]
    fig = _roofs(r, [10 ** key[0] for key in keys])
    for bound, color in BOUND_COLORS.items():
        mine = [key for key in keys if key[2] == bound]
        if not mine:
            continue
        hover = []
        for key in mine:
            names = points[key]
            who = names[0] + (f" and {len(names) - 1} more like it" if len(names) > 1 else "")
            hover.append(f"{who}<br>{10 ** key[0]:.3g} FLOP/byte, {fmt_si(10 ** key[1], 'FLOP/s')} ({bound}-bound)")
        fig.add_trace(go.Scatter(
            x=[10 ** key[0] for key in mine], y=[10 ** key[1] for key in mine], mode="markers", name=f"{bound}-bound",
            marker={"color": color, "size": [min(16, 6 + 2 * math.log2(len(points[key]))) for key in mine],
                    "opacity": 0.75}, hovertext=hover, hoverinfo="text"))
    fig.update_layout(
        title=f"{_label(report)} roofline (MODELLED): {sum(len(v) for v in points.values())} kernels",
        title_subtitle_text="roofs are peak x the model's efficiency; marker size grows with repeated kernels",
        xaxis={"type": "log", "title": "arithmetic intensity (FLOPs per byte moved)"},
        yaxis=log_axis([10 ** key[1] for key in keys] + [r.matmul_flops, r.vector_flops], "FLOP/s",
                       title="achieved FLOP/s per chip (modelled)", pad=0.3),
        height=480, margin={"t": 90}, legend_title_text="roofs and kernels")
    return fig


def serving_roofline(estimates: Any) -> go.Figure:
    """Prefill and decode of one or more :class:`~accelkit.sim.serve.ServingEstimate` (same target and precision)
    on the chip's roofline: prefill is a few large matmuls over the whole prompt (far right, near the compute
    roof), decode reads every weight and the KV cache for one token per sequence (far left, on a bandwidth roof);
    a larger batch moves decode to the right. Per chip, modelled."""
    ests = list(estimates) if isinstance(estimates, (list, tuple)) else [estimates]
    if not ests or any(e.prefill is None or e.decode is None for e in ests):
        raise ValueError("serving_roofline needs ServingEstimates from ak.serve (with their prefill and decode)")
    if len({(e.target, e.precision) for e in ests}) > 1:
        raise ValueError("serving_roofline draws one chip's roofs: give estimates of one target and precision "
                         f"(got {sorted({(e.target, e.precision) for e in ests})})")
    spec = get(ests[0].target)
    r = rates(spec, ests[0].precision)
    phases = [(e, p) for e in ests for p in (e.prefill, e.decode)]
    fig = _roofs(r, [p.intensity for _, p in phases])
    xaxis = log_axis([p.intensity for _, p in phases] + [r.matmul_flops / bw for bw in r.tier_bw.values()], "",
                     title="arithmetic intensity (FLOPs per byte moved)", pad=0.3, si=False)
    yaxis = log_axis([p.flops_per_s for _, p in phases] + [r.matmul_flops, r.vector_flops], "FLOP/s",
                     title="achieved FLOP/s per chip (modelled)", pad=0.3)
    labels = [f"{p.name} b={e.batch}" for e, p in phases]
    where = label_positions([p.intensity for _, p in phases], [p.flops_per_s for _, p in phases], labels,
                            x_range=tuple(xaxis["range"]), y_range=tuple(yaxis["range"]))  # type: ignore[arg-type]
    symbols = {"prefill": "diamond", "decode": "circle"}
    for i, ((e, p), label, pos) in enumerate(zip(phases, labels, where, strict=True)):
        color = qualitative.Plotly[(i // 2) % len(qualitative.Plotly)]
        fig.add_trace(go.Scatter(
            x=[p.intensity], y=[p.flops_per_s], mode="markers+text", text=[label], textposition=pos,
            name=f"{p.name}, batch {e.batch}", marker={"color": color, "size": 12, "symbol": symbols[p.name]},
            hovertext=[f"{p.name}, batch {e.batch}: {p.intensity:.3g} FLOP/byte, "
                       f"{fmt_si(p.flops_per_s, 'FLOP/s')} per chip, {fmt_s(p.time_s)}"], hoverinfo="text"))
    first = ests[0]
    fig.update_layout(
        title=f"{first.model} on {first.chips} x {spec.name}, {first.precision}: prefill and decode on the roofline "
              "(MODELLED)",
        title_subtitle_text=f"{first.prompt_tokens} prompt tokens, {first.output_tokens} out; per chip; decode includes "
                            "reading the KV cache; roofs are peak x the model's efficiency",
        xaxis=xaxis, yaxis=yaxis, height=480, margin={"t": 90}, legend_title_text="roofs and phases")
    return fig


# ---- comparisons -------------------------------------------------------------------------------------
def _labelled(reports: Mapping[str, Any] | Sequence[Any]) -> list[tuple[str, Any]]:
    if isinstance(reports, Mapping):
        return list(reports.items())
    return [(_label(r) if isinstance(r, PerfReport) else str(getattr(r, "target", i)), r)
            for i, r in enumerate(reports)]


def _axis_title(metric: str) -> str:
    """"throughput (samples/s, modelled)"; where the unit says it all, just "tokens/s per user (modelled)"."""
    unit, label = METRIC_UNITS.get(metric, ""), metric_label(metric)
    if unit and label.split()[0] == unit.split("/")[0]:
        return f"{unit} (modelled)"
    return f"{label} ({unit}, modelled)" if unit else f"{label} (modelled)"


def comparison_bars(reports: Mapping[str, PerfReport] | Sequence[PerfReport], metric: str = "step_time_s", *,
                    log: bool = False) -> go.Figure:
    """Bars across targets or precisions: ``"step_time_s"`` stacked by section (forward, backward,
    optimizer, communication; for pipeline parallelism one stage's share, with the fill and drain
    bubble on top), or any
    other numeric report attribute (``"throughput"``, ``"tokens_per_s"``, ``"energy_j"``)."""
    items = _labelled(reports)
    labels = [name for name, _ in items]
    fig = go.Figure()
    yaxis: dict[str, object] | None = None
    if metric == "step_time_s":
        scale, unit = _unit(max((r.step_time_s for _, r in items), default=1.0))
        # the report's sections are one chip's share of the step and add up to it (a pipeline's fill and
        # drain is its "bubble" section), so they are drawn as they are
        parts: dict[str, list[float]] = {s: [] for s in ("fwd", "bckwd", "opt", "comm", "bubble", "io", "input")}
        for _, r in items:
            for s in parts:
                parts[s].append(r.sections_s.get(s, 0.0) * scale)
        for s, values in parts.items():
            if any(v > 0 for v in values):
                fig.add_trace(go.Bar(name=SECTION_LABELS[s], x=labels, y=values, marker_color=SECTION_COLORS[s],
                                     hovertemplate=f"%{{x}}<br>{SECTION_LABELS[s]} %{{y:.3g}} {unit}<extra></extra>"))
        ytitle = f"step time ({unit}, modelled)"
        bounds: dict[str, int] = {}
        for _, r in items:
            b = max(r.bound_by, key=r.bound_by.get) if r.bound_by else "-"
            bounds[b] = bounds.get(b, 0) + 1
        sub = "stacked by section; mostly bound by " + ", ".join(
            f"{b} on {n} of {len(items)}" for b, n in sorted(bounds.items(), key=lambda kv: -kv[1]))
    else:
        values = [float(getattr(r, metric) or 0.0) for _, r in items]
        unit = METRIC_UNITS.get(metric, "")
        fig.add_trace(go.Bar(x=labels, y=values, marker_color=[_color(r, i) for i, (_, r) in enumerate(items)],
                             text=[fmt_sig(v) for v in values], textposition="outside", cliponaxis=False,
                             hovertemplate=f"%{{x}}<br>{metric_label(metric)} %{{text}} {unit}<extra></extra>"))
        ytitle = _axis_title(metric)
        sub = f"{len(items)} configuration{'' if len(items) == 1 else 's'}"
        if log:
            yaxis = log_axis(values, unit, title=ytitle, pad=0.3, si=False)
    # many bars: upright labels, so a long name ("a100-40gb") never runs into its neighbour's
    xaxis = {"tickangle": -90} if len(items) > 10 else {}
    fig.update_layout(title=f"{metric_label(metric)} across configurations (MODELLED)", title_subtitle_text=sub,
                      barmode="stack", yaxis=yaxis or {"title": ytitle, "type": "log" if log else "linear"},
                      xaxis=xaxis, margin={"t": 90}, height=420, showlegend=metric == "step_time_s")
    return fig


def scaling_curves(series: Mapping[str, Sequence[Any]], metric: str = "throughput", *, x: str = "chips",
                   ideal: bool = True) -> go.Figure:
    """``metric`` against ``x`` (``"chips"``, or ``"batch_size"`` for a batch sweep), one line per series
    of reports (or serving estimates: anything with both attributes). With ``ideal``, each series'
    linear scaling from its first point is dashed: the most that ``x`` times more chips (or a batch
    ``x`` times larger, at no extra step time) could give."""
    fig = go.Figure()
    unit = METRIC_UNITS.get(metric, "")
    ys: list[float] = []
    used: set[str] = set()
    for i, (name, items) in enumerate(series.items()):
        pts = sorted((int(getattr(it, x)), float(getattr(it, metric))) for it in items)
        if not pts:
            continue
        color = _color(items[0], i)
        if color in used:  # two series on one chip (two precisions, say): tell them apart
            color = qualitative.Plotly[i % len(qualitative.Plotly)]
        used.add(color)
        ys += [v for _, v in pts] + ([pts[0][1] * c / pts[0][0] for c, _ in pts] if ideal else [])
        fig.add_trace(go.Scatter(x=[c for c, _ in pts], y=[v for _, v in pts], mode="lines+markers", name=name,
                                 line={"color": color}, text=[fmt_sig(v) for _, v in pts],
                                 hovertemplate=f"{name}<br>{x.replace('_', ' ')} %{{x}}: {metric_label(metric)} "
                                               f"%{{text}} {unit}<extra></extra>"))
        if ideal:
            c0, v0 = pts[0]
            fig.add_trace(go.Scatter(x=[c for c, _ in pts], y=[v0 * c / c0 for c, _ in pts], mode="lines",
                                     name=f"{name}: ideal", line={"color": color, "dash": "dash", "width": 1},
                                     hoverinfo="skip", showlegend=False))
    label = x.replace("_", " ")
    fig.update_layout(title=f"{metric_label(metric)} against {label} (MODELLED)",
                      title_subtitle_text="dashed: ideal linear scaling from the first point" if ideal else "",
                      xaxis={"type": "log", "title": label, "dtick": math.log10(2)},
                      yaxis=log_axis(ys, unit, title=_axis_title(metric), pad=0.15, si=False),
                      height=420, margin={"t": 90})
    return fig


def _slowness(r: Any) -> float:
    """Modelled time over published time: above 1, accelkit's model is slower than the published run. A row in
    seconds (its ``unit``: latency, time per token, per iteration) is a time; any other is a rate, inverted."""
    return r.predicted / r.published if getattr(r, "unit", "") == "s" else r.published / r.predicted


def validation_chart(result: Any) -> go.Figure:
    """For each reference case (an :class:`accelkit.sim.validate.ValidationResult`), modelled time over
    published time (rates inverted, so above 1 always means the model is slower), on a log axis with
    the goal's band shaded; informational rows as hollow markers (not counted)."""
    rows = list(result.rows)
    info = list(getattr(result, "informational", []))
    fig = go.Figure()
    goal = getattr(result, "goal_ratio", 2.0)
    fig.add_vrect(x0=1 / goal, x1=goal, fillcolor="#2ca02c", opacity=0.08, line_width=0)
    fig.add_vline(x=1.0, line={"color": "black", "width": 1})
    fig.add_trace(go.Scatter(
        x=[_slowness(r) for r in rows], y=[r.case for r in rows], mode="markers", name="validate",
        marker={"size": 10, "color": "#1f77b4"},
        hovertext=[f"{r.case}<br>published {r.published:.4g}, predicted {r.predicted:.4g} ({r.error:+.0%})<br>"
                   f"{r.source}" for r in rows], hoverinfo="text"))
    if info:
        fig.add_trace(go.Scatter(
            x=[_slowness(r) for r in info], y=[r.case for r in info], mode="markers",
            name="informational (not counted)", marker={"size": 10, "color": "#d62728", "symbol": "circle-open"},
            hovertext=[f"{r.case}<br>published {r.published:.4g}, predicted {r.predicted:.4g}, bound {r.bound:.4g}"
                       for r in info], hoverinfo="text"))
    fig.update_layout(
        title="accelkit (MODELLED) over published figures",
        title_subtitle_text=f"median |error| {result.median_abs_error:.0%}, worst {result.max_ratio:.2f}x; "
                            f"shaded: within {goal:g}x",
        xaxis={"type": "log", "title": "modelled time / published time (above 1: the model is slower)",
               "range": [math.log10(0.25), math.log10(8)], "tickvals": [0.25, 0.5, 1, 2, 4, 8],
               "ticktext": ["0.25x", "0.5x", "1x", "2x", "4x", "8x"]},
        yaxis={"autorange": "reversed"}, height=max(300, 60 + 28 * (len(rows) + len(info))), margin={"t": 90})
    return fig


def bench_chart(result: Any) -> go.Figure:
    """Measured against modelled end-to-end latency for every configuration of an
    :class:`accelkit.sim.bench.BenchValidation`, one colour per system, log axes, the 1.5x band shaded."""
    fig = go.Figure()
    rows = list(result.rows)
    if rows:
        lo = min(min(r.case.measured_s, r.predicted_s) for r in rows) / 1.5
        hi = max(max(r.case.measured_s, r.predicted_s) for r in rows) * 1.5
        fig.add_trace(go.Scatter(x=[lo, hi, hi, lo], y=[lo * 1.5, hi * 1.5, hi / 1.5, lo / 1.5], fill="toself",
                                 mode="lines", fillcolor="rgba(44,160,44,0.1)", line={"width": 0}, hoverinfo="skip",
                                 name="within 1.5x"))
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line={"color": "black", "width": 1},
                                 hoverinfo="skip", name="modelled = measured"))
    for s in result.per_system():
        mine = [r for r in rows if s.holds(r.case)]
        fig.add_trace(go.Scatter(
            x=[r.case.measured_s for r in mine], y=[r.predicted_s for r in mine], mode="markers",
            name=f"{s.label}{' (held apart)' if s.held_apart else ''} ({s.rows}, median |error| "
                 f"{s.median_abs_error:.0%})", marker={"size": 6, "opacity": 0.7},
            hovertext=[f"{r.case.name}<br>{r.case.framework}: measured {r.case.measured_s:.3g} s<br>modelled "
                       f"{r.predicted_s:.3g} s ({r.error:+.0%})" for r in mine], hoverinfo="text"))
    fig.update_layout(
        title="accelkit (MODELLED) against LLM-Inference-Bench (MEASURED)",
        title_subtitle_text=f"{len(rows)} configuration{'' if len(rows) == 1 else 's'}, best framework each; "
                            f"median |error| "
                            f"{result.median_abs_error:.0%}; shaded: within 1.5x",
        # ticks at 1, 2 and 5 of each decade ("D2"): plotly labels all nine digits on a short log axis otherwise
        xaxis={"type": "log", "title": "measured end-to-end latency (s)", "dtick": "D2"},
        yaxis={"type": "log", "title": "modelled end-to-end latency (s)", "dtick": "D2"}, height=560,
        # the legend in the empty corner above the diagonal (modelled slower than measured is rare); under the
        # chart, plotly's automargin puts it over the axis title
        margin={"t": 90}, legend={"x": 0.01, "y": 0.99, "xanchor": "left", "yanchor": "top",
                                  "bgcolor": "rgba(255,255,255,0.75)"})
    return fig


__all__ = ["MAX_MARKS", "bench_chart", "comparison_bars", "roofline", "scaling_curves", "serving_roofline", "timeline",
           "validation_chart"]


def stack_comparison(cmp: Any) -> go.Figure:
    """Step time against batch size, one line per software stack (``accelkit.sim.stacks.compare_stacks``):
    where eager PyTorch's line runs flat the host is the bound, and a bigger batch is nearly free (its time per
    sample falls as the batch grows); where a line climbs with the batch, the chip's own work is the bound."""
    fig = go.Figure()
    for i, stack in enumerate(dict.fromkeys(r.stack for r in cmp.rows)):
        mine = [r for r in cmp.rows if r.stack == stack]
        fig.add_trace(go.Scatter(  # dashes tell apart two stacks whose lines coincide (compiled and engine)
            x=[r.batch for r in mine], y=[r.step_s for r in mine], mode="lines+markers", name=stack,
            line={"dash": ("solid", "dash", "dot")[i % 3]},
            hovertext=[f"{stack}, batch {r.batch}: {fmt_si(r.step_s, 's')} per step, {fmt_si(r.per_sample_s, 's')}"
                       f" per sample, host waits {r.host_share:.0%} ({r.bound}-bound)" for r in mine],
            hoverinfo="text"))
    yaxis = log_axis([r.step_s for r in cmp.rows], "", pad=0.15, si=False, title="step time (modelled)")
    yaxis["ticktext"] = [fmt_s(float(t)) for t in yaxis["tickvals"]]  # type: ignore[attr-defined]
    fig.update_layout(title=f"one model on {cmp.target}, {cmp.precision}: step time by stack (MODELLED)",
                      title_subtitle_text="flat: the host issuing ops is the bound, a bigger batch is nearly free",
                      xaxis={"type": "log", "title": "batch size", "tickvals": sorted({r.batch for r in cmp.rows})},
                      yaxis=yaxis, height=420, margin={"t": 90},
                      legend_title_text="software stack")
    return fig
