"""Figures of the hardware catalog: they carry the data, the sources, and stay light."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from accelkit import hardware as hw
from accelkit import viz
from accelkit.errors import UnknownNameError

MAX_POINTS = 500


def _points(fig: go.Figure) -> int:
    n = 0
    for trace in fig.data:
        if getattr(trace, "z", None) is not None:
            n += sum(len(row) for row in trace.z)
        elif getattr(trace, "y", None) is not None:
            n += len(trace.y)
    return n


def test_bars_have_one_bar_per_chip_with_value_and_source() -> None:
    fig = viz.catalog_bars("on_chip_memory_bytes")
    assert isinstance(fig, go.Figure)
    bars = {x: (y, cd) for t in fig.data for x, y, cd in zip(t.x, t.y, t.customdata, strict=True)}
    assert set(bars) == set(hw.names()) - {"host"}
    assert bars["wse2"][0] == 40e9
    assert bars["wse2"][1][1] == hw.get("wse2").source("on_chip_memory_bytes")
    assert fig.layout.yaxis.type == "log"
    assert {t.name for t in fig.data} <= set(hw.FAMILIES)
    assert list(fig.layout.xaxis.categoryarray) == [s.name for s in hw.catalog()]


def test_bars_skip_chips_without_the_metric_and_say_so() -> None:
    fig = viz.catalog_bars("peak_flops_bf16")
    shown = {x for t in fig.data for x in t.x}
    assert {"gc200", "bow", "tsp"}.isdisjoint(shown) and {"a100", "sn40l", "wse2"} <= shown
    assert "not on bow, gc200, tsp" in fig.layout.title.subtitle.text


def test_bars_hatch_illustrative_figures() -> None:
    fig = viz.catalog_bars("peak_flops_fp32")
    hatched = {x for t in fig.data for x, shape in zip(t.x, t.marker.pattern.shape, strict=True) if shape}
    assert {"wse2", "sn40l", "tsp"} <= hatched
    assert not {"a100", "h100", "gc200"} & hatched  # datasheet or unconfirmed, not illustrative


def test_derived_metrics_and_names_filter() -> None:
    fig = viz.catalog_bars("memory_per_flop", names=["a100", "wse2"])
    values = {x: y for t in fig.data for x, y in zip(t.x, t.y, strict=True)}
    assert values["a100"] == pytest.approx(40e6 / 312e12 * 1e9)
    assert values["wse2"] == pytest.approx(40e9 / 7.5e15 * 1e9)
    with pytest.raises(UnknownNameError, match="peak_flops_bf16"):
        viz.catalog_bars("speed")


@pytest.mark.parametrize("metric", sorted(viz.METRICS))
def test_every_metric_draws(metric: str) -> None:
    fig = viz.catalog_bars(metric)
    assert _points(fig) >= 1


def test_scatter_one_trace_per_family() -> None:
    fig = viz.catalog_scatter()
    assert {t.name for t in fig.data} == {s.family for s in hw.catalog()}
    assert sum(len(t.x) for t in fig.data) == len(hw.catalog())
    gc200 = next(t for t in fig.data if t.name == "bsp-tiles")
    i = list(gc200.text).index("gc200")
    assert gc200.y[i] == 250e12  # no bf16 on an IPU: the 16-bit peak is fp16
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"


def test_memory_tiers_chart() -> None:
    fig = viz.memory_tiers_chart(["sn40l", "tsp"])
    assert [list(t.text) for t in fig.data] == [["sram", "hbm", "ddr"], ["sram"]]  # spectrum order


@pytest.mark.parametrize("name", [n for n in hw.names() if n != "host"])
def test_family_diagrams_are_aggregated_and_light(name: str) -> None:
    fig = viz.family_diagram(name)
    assert isinstance(fig, go.Figure) and fig.data
    assert 1 <= _points(fig) <= MAX_POINTS
    assert hw.get(name).family in fig.layout.title.text


def test_wafer_blocks_cover_the_cores() -> None:
    fig = viz.family_diagram("wse2")
    z = fig.data[0].z
    assert len(z) * len(z[0]) <= viz.catalog.MAX_CELLS
    assert "cores" in fig.data[0].text[0][0]
    assert {v for row in z for v in row} == {1, 2, 3, 4}  # four illustrative layer regions


def test_rdu_checkerboard_and_tsp_slices() -> None:
    rdu = viz.family_diagram("sn40l").data[0].z
    assert rdu[0][0] != rdu[0][1] and rdu[0][0] == rdu[1][1]
    tsp = viz.family_diagram("tsp")
    row = tsp.data[0].z[0]
    assert len(row) == 93 and row == row[::-1]  # the floorplan mirrors around the vector unit
    assert "VXM" in tsp.data[0].text[0][len(row) // 2]


def test_diagram_of_a_user_spec(tmp_path) -> None:  # type: ignore[no-untyped-def]
    spec = hw.AcceleratorSpec.from_dict({**hw.get("gc200").to_dict(), "name": "tiny", "mesh_shape": None,
                                         "compute_units": 7})
    fig = viz.family_diagram(spec)
    assert 1 <= _points(fig) <= MAX_POINTS
