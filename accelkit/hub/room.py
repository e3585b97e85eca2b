"""The instructor's view of the room: who passed which exercise, where most attendees are stuck, and the
checker's hint they were shown. Reads the verdict files the attendees' checks append to
(:mod:`accelkit.teach.progress`); no answer or code is ever in them.

In the instructor's notebook (``~/room.ipynb`` on the hub)::

    from accelkit.hub import room
    r = room.load()          # every verdict in the room, one row each
    room.board(r)            # attendee x exercise: passed, failed (tries) or not tried
    room.stuck(r)            # per exercise: tried, passed, still failing, the commonest hint
    room.figure(r)           # the same as a chart

From the console, as root: ``python -m accelkit.hub room``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from accelkit.teach import progress

COLUMNS = ["attendee", "exercise", "passed", "time", "hint"]


def progress_dir() -> Path:
    """The room's verdict folder: ``$ACCELKIT_ROOM_DIR``, else the folder of this user's own verdict file (the
    hub sets it), else HUB_DIR's."""
    room_dir = os.environ.get("ACCELKIT_ROOM_DIR", "").strip()
    if room_dir:
        return Path(room_dir)
    own = progress.target()
    if own is not None:
        return own.parent
    from accelkit.hub.settings import REPO

    return Path(os.environ.get("HUB_DIR", "").strip() or REPO / ".hub") / "progress"


def load(folder: Path | None = None) -> pd.DataFrame:
    """Every verdict of every attendee, oldest first (files this user cannot read are skipped). The folder holds
    ``<attendee>.jsonl`` (one server: ``make hub``) or ``<attendee>/progress.jsonl`` (Kubernetes: a volume per
    attendee, deploy/values.yaml)."""
    folder = Path(folder) if folder is not None else progress_dir()
    files = [(p.stem, p) for p in folder.glob("*.jsonl")] + [(p.parent.name, p) for p in folder.glob("*/progress.jsonl")]
    rows = [(who, v.exercise, v.passed, v.time, v.hint) for who, path in sorted(files) for v in progress.read(path)]
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["time"] = pd.to_datetime(df["time"], utc=True, errors="coerce")
    return df.sort_values("time", kind="stable").reset_index(drop=True)


def board(df: pd.DataFrame) -> pd.DataFrame:
    """One row per attendee, one column per exercise: "passed", "failed (N tries)" or "" (not tried)."""
    if df.empty:
        return pd.DataFrame()

    def cell(group: pd.DataFrame) -> str:
        return "passed" if group["passed"].any() else f"failed ({len(group)} tr{'y' if len(group) == 1 else 'ies'})"

    cells = {key: cell(g) for key, g in df.groupby(["attendee", "exercise"])}
    table = pd.Series(cells).unstack(fill_value="")
    table.index.name, table.columns.name = "attendee", "exercise"
    return table


def stuck(df: pd.DataFrame) -> pd.DataFrame:
    """Per exercise: attendees who tried, passed, are still failing, and the hint most of those were shown.
    Sorted with the exercise most attendees are stuck on first."""
    columns = ["tried", "passed", "still failing", "commonest hint"]
    if df.empty:
        return pd.DataFrame(columns=columns)
    rows = {}
    for exercise, g in df.groupby("exercise"):
        passed = set(g.loc[g["passed"], "attendee"])
        failing = g[~g["attendee"].isin(passed) & ~g["passed"]]
        hints = failing.groupby("attendee")["hint"].last().value_counts()
        rows[exercise] = (g["attendee"].nunique(), len(passed), failing["attendee"].nunique(),
                          hints.index[0] if len(hints) else "")
    table = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    table.index.name = "exercise"
    return table.sort_values(["still failing", "tried"], ascending=False)


def figure(df: pd.DataFrame) -> go.Figure:
    """Per exercise, attendees who passed and attendees still failing, as stacked bars."""
    table = stuck(df).sort_index()
    fig = go.Figure([
        go.Bar(name="passed", x=list(table.index), y=list(table["passed"]), marker_color="#2ca02c"),
        go.Bar(name="still failing", x=list(table.index), y=list(table["still failing"]), marker_color="#d62728",
               hovertext=list(table["commonest hint"])),
    ])
    fig.update_layout(barmode="stack", title="The room: attendees per exercise (hover a red bar for the hint)",
                      xaxis_title="exercise", yaxis_title="attendees", height=380)
    return fig
