"""Reading a sweep's table (accelkit.workflow.analysis) and drawing it (accelkit.viz.design_space), on a small
hand-made table whose answers are known."""

from __future__ import annotations

import pandas as pd

from accelkit.viz.design_space import parallel_split, pareto, winner_map
from accelkit.workflow.analysis import data_vs_model, pareto_front, winners


def _table() -> pd.DataFrame:
    rows = [  # model, target, family, batch, chips_used, data replicas, time per sample, status
        ("a", "x1", "gpu", 1, 1, 1, 4.0, "ok"), ("a", "x1", "gpu", 1, 2, 2, 3.0, "ok"),
        ("a", "x1", "gpu", 1, 4, 1, 3.5, "ok"),  # 4 chips, slower than 2: off the front
        ("a", "x1", "gpu", 1, 8, 1, 1.0, "ok"), ("a", "x1", "gpu", 1, 8, 8, 2.0, "ok"),
        ("a", "y1", "rdu", 1, 1, 1, 2.5, "ok"), ("a", "y1", "rdu", 1, 8, 8, 0.5, "ok"),
        ("a", "y1", "rdu", 64, 1, 1, 9.0, "refused"), ("a", "x1", "gpu", 64, 1, 1, 0.2, "ok"),
    ]
    df = pd.DataFrame(rows, columns=["model", "target", "family", "batch", "chips_used", "data",
                                     "time_per_sample_s", "status"])
    df.loc[df.status != "ok", "family"] = None  # a refused row has no family (nothing was modelled)
    return df


def test_the_pareto_front_keeps_only_rows_nothing_beats() -> None:
    front = pareto_front(_table())
    gpu = front[front.family == "gpu"]
    assert list(zip(gpu.chips_used, gpu.time_per_sample_s, strict=True)) == [(1, 0.2)]  # batch 64 beats them all
    rdu = front[front.family == "rdu"]
    assert list(zip(rdu.chips_used, rdu.time_per_sample_s, strict=True)) == [(1, 2.5), (8, 0.5)]


def test_winners_and_the_data_or_model_split() -> None:
    df = _table()
    table = winners(df)
    assert table.loc["a", 1] == "y1" and table.loc["a", 64] == "x1"  # the refused y1 row does not win batch 64
    split = data_vs_model(df)
    assert split.loc["gpu", "data_parallel"] == 2.0 and split.loc["gpu", "model_parallel"] == 1.0
    assert split.loc["gpu", "winner"] == "model" and split.loc["rdu", "winner"] == "data"


def test_the_figures_draw_the_tables() -> None:
    df = _table()
    fig = pareto(df)
    assert {t.name for t in fig.data} >= {"gpu", "rdu"} and len(fig.data) == 4  # points and front per family
    heat = winner_map(df)
    assert heat.data[0].text == (("y1", "x1"),) or [list(r) for r in heat.data[0].text] == [["y1", "x1"]]
    bars = parallel_split(df)
    assert [b.name for b in bars.data] == ["data parallel", "model parallel (tensor or pipeline)"]
    assert list(bars.data[0].x) == [2.0, 0.5] and bars.data[0].orientation == "h"  # labels read across
