"""Plotly figures of a :class:`~accelkit.profiler.HostProfile`. They return figures, never show them."""

from __future__ import annotations

import plotly.graph_objects as go

from accelkit.profiler.host import HostProfile, _fmt_count


def op_time_bars(profile: HostProfile, n: int = 15) -> go.Figure:
    """Horizontal bars of measured self time per run of the ``n`` hottest ATen ops, hottest on top."""
    rows = profile.top(n)[::-1]  # plotly draws the first bar at the bottom
    fig = go.Figure(go.Bar(
        x=[r.time_s * 1e3 for r in rows],
        y=[r.op for r in rows],
        orientation="h",
        customdata=[[r.calls, f"{r.share:.1%}", _fmt_count(r.flops) + "FLOP"] for r in rows],
        hovertemplate="%{y}<br>%{x:.4f} ms per run<br>calls %{customdata[0]}, share %{customdata[1]}"
                      "<br>%{customdata[2]}<extra></extra>",
        name="self time",
    ))
    fig.update_layout(
        title=f"MEASURED on this host ({profile.cpu}, {profile.threads} thread{'' if profile.threads == 1 else 's'}): "
              f"{profile.model_name}, top {len(rows)} ops by self time",
        xaxis_title="self CPU time per run (ms)",
        yaxis_title=None,
        height=max(300, 24 * len(rows) + 120),
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return fig
