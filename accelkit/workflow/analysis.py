"""Reading a sweep: the Pareto front, the winner of each cell of a map, data against model parallelism.

    front = pareto_front(df, x="chips_used", y="time_per_sample_s", by="family")
    wins = winners(df, index="model", columns="batch")          # the fastest target per (model, batch)
    split = data_vs_model(df)                                   # per family: best data-parallel vs model-parallel

Each takes the DataFrame :func:`accelkit.sweep` returns and keeps its ``status == "ok"`` rows; every figure in the
result is modelled, as the sweep's are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df.status == "ok"]


def pareto_front(df: pd.DataFrame, *, x: str = "chips_used", y: str = "time_per_sample_s",
                 by: str = "family") -> pd.DataFrame:
    """The rows no other row of the same ``by`` group beats on both ``x`` and ``y`` (less is better in both):
    for each group, walking up ``x``, the rows that lower the best ``y`` seen so far."""
    rows = []
    for _, group in _ok(df).groupby(by, sort=True):
        best = float("inf")
        for _, row in group.sort_values([x, y]).iterrows():
            if row[y] < best:
                best = row[y]
                rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows).reset_index(drop=True) if rows else _ok(df).iloc[0:0]


def winners(df: pd.DataFrame, *, index: str = "model", columns: str = "batch",
            y: str = "time_per_sample_s") -> pd.DataFrame:
    """A table ``index`` x ``columns`` whose cells name the target with the least ``y`` among the ok rows of that
    cell (every other setting of the sweep taken at its best)."""
    ok = _ok(df)
    best = ok.loc[ok.groupby([index, columns])[y].idxmin()]
    return best.pivot(index=index, columns=columns, values="target")


def data_vs_model(df: pd.DataFrame, *, by: str = "family", y: str = "time_per_sample_s") -> pd.DataFrame:
    """Per ``by`` group (and model, when the sweep has several): the best ``y`` of data-parallel rows (every chip a
    replica; column ``data_parallel``) and of model-parallel rows (tensor or pipeline split; ``model_parallel``),
    and which wins (``winner``: ``"data"``, ``"model"`` or ``"neither"``). Rows on one chip are left out:
    they have no split to choose."""
    ok = _ok(df)
    ok = ok[ok.chips_used > 1].assign(split=lambda d: ["data_parallel" if m == c else "model_parallel"
                                                       for m, c in zip(d["data"], d["chips_used"], strict=True)])
    keys = [by, "model"] if "model" in ok and ok.model.nunique() > 1 else [by]
    table = ok.pivot_table(index=keys, columns="split", values=y, aggfunc="min")
    for col in ("data_parallel", "model_parallel"):
        if col not in table:
            table[col] = float("nan")
    table = table[["data_parallel", "model_parallel"]]
    table.columns.name = None
    table["winner"] = [_winner(d, m) for d, m in zip(table["data_parallel"], table["model_parallel"], strict=True)]
    return table


def _winner(data: Any, model: Any) -> str:
    if data != data and model != model:  # both NaN: neither split held
        return "neither"
    if model != model or (data == data and data <= model):
        return "data"
    return "model"


__all__ = ["data_vs_model", "pareto_front", "winners"]
