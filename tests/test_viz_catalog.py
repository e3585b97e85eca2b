"""Figures of the hardware catalog: they carry the data, the sources, and stay light."""

from __future__ import annotations

import re

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
    assert {t.legendgroup for t in fig.data} <= set(hw.FAMILIES)  # the legend groups chips by family
    assert len({t.marker.color for t in fig.data}) == len(fig.data)  # each chip its own colour
    assert list(fig.layout.xaxis.categoryarray) == [s.name for s in hw.catalog()]
    # SI ticks with the unit named: "1 GB", never plotly's "1B" (billions) or "10¹⁵"
    assert "1 GB" in fig.layout.yaxis.ticktext and all(t.endswith("B") for t in fig.layout.yaxis.ticktext)


def test_bars_skip_chips_without_the_metric_and_say_so() -> None:
    fig = viz.catalog_bars("peak_flops_bf16")
    shown = {x for t in fig.data for x in t.x}
    assert {"gc200", "bow", "tsp"}.isdisjoint(shown) and {"a100", "sn40l", "wse2"} <= shown
    assert "not on bow, gc200, tsp" in fig.layout.title.subtitle.text


def test_bars_hatch_illustrative_figures() -> None:
    fig = viz.catalog_bars("peak_flops_fp32")
    hatched = {x for t in fig.data for x in t.x if t.marker.pattern.shape}
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


def test_scatter_one_trace_per_chip_grouped_by_family() -> None:
    fig = viz.catalog_scatter()
    assert [t.meta for t in fig.data] == [s.name for s in hw.catalog()]  # one trace per chip, named in meta
    assert {t.legendgroup for t in fig.data} == {s.family for s in hw.catalog()}
    # the legend names each family once (its chips are labelled on the plot): no legend long enough to scroll
    assert sorted(t.name for t in fig.data if t.showlegend is not False) == sorted({s.family for s in hw.catalog()})
    assert len({t.marker.color for t in fig.data}) == len(fig.data)  # sn30 and sn40l differ
    gc200 = next(t for t in fig.data if t.meta == "gc200")
    assert gc200.y[0] == 250e12  # no bf16 on an IPU: the 16-bit peak is fp16
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    # bow and gc200 sit almost on one point: their labels go to different sides
    bow = next(t for t in fig.data if t.meta == "bow")
    assert bow.textposition != gc200.textposition
    assert not any("e+" in t or "10" in t and "¹" in t for t in fig.layout.yaxis.ticktext)


def test_spectrum_places_every_chip_in_its_family_column_in_rank_order() -> None:
    from accelkit.hardware import FAMILY_INFO
    from accelkit.viz import spectrum

    specs = hw.catalog()
    fig = spectrum()
    families = [t.replace("<b>", "").replace("</b>", "").replace("<br>", "") for t in fig.layout.xaxis.ticktext]
    assert families == sorted({s.family for s in specs}, key=lambda f: FAMILY_INFO[f].rank)
    column = {t.text[0]: families[int(t.x[0])] for t in fig.data}
    assert column == {s.name: s.family for s in specs}  # every chip once, in its family's column
    said = " ".join(a.text.replace("<br>", " ") for a in fig.layout.annotations)
    for f in families:  # what each family trades is said beneath it
        assert FAMILY_INFO[f].trades and FAMILY_INFO[f].trades in said
    assert [t.replace("<b>", "").replace("</b>", "").replace("<br>", "") for t in spectrum(["tsp", "a100"]).layout.xaxis.ticktext] \
        == ["gpu", "static-schedule"]


def test_chips_at_the_same_point_share_one_label() -> None:
    """An H100 and a GH200 have the same peak and L2: one label names both (two labels drew over each other)."""
    fig = viz.catalog_scatter(names=["h100", "gh200", "a100"])
    texts = [t.text[0] for t in fig.data]
    assert sorted(texts) == sorted(["", "gh200 / h100", "a100"]) or sorted(texts) == sorted(["", "h100 / gh200", "a100"])
    assert all(sum(n in t.split(" / ") for t in texts) == 1 for n in ("h100", "gh200", "a100"))



def test_a_long_shared_label_stands_in_two_lines() -> None:
    """"a100 / a100-40gb" on one line reached past the MI250's point beside it and read as its label: a shared label
    longer than a short pair ("gh200 / h100") breaks after each name's slash."""
    fig = viz.catalog_scatter(names=["a100", "a100-40gb", "mi250", "h100", "gh200"])
    texts = sorted(t.text[0] for t in fig.data if t.text[0])
    assert "a100 /<br>a100-40gb" in texts and "mi250" in texts
    assert "gh200 / h100" in texts  # short enough for one line

def test_label_positions_keep_labels_apart() -> None:
    from accelkit.viz.style import label_positions

    # two points 1 px apart and one far away: the pair's labels must go to different sides
    pos = label_positions([1e9, 1.01e9, 1e12], [1e15, 1e15, 1e15], ["sn30", "sn40l", "wse2"],
                          x_range=(8, 13), y_range=(14, 16))
    assert pos[0] != pos[1] and pos[2] == "top center"


def test_memory_tiers_chart() -> None:
    fig = viz.memory_tiers_chart(["sn40l", "tsp"])
    tiers = [[cd[1].split()[0] for cd in t.customdata] for t in fig.data]
    assert tiers == [["sram", "hbm", "ddr"], ["sram"]]  # spectrum order; the hover names each tier
    assert list(fig.data[0].marker.symbol) == ["circle", "square", "diamond"]  # on chip, then off
    assert fig.data[0].line.color != fig.data[1].line.color
    assert fig.layout.showlegend is not False and not any(t.text and any(t.text) for t in fig.data)


def test_memory_tiers_chart_draws_a_panel_per_family_for_the_whole_catalog() -> None:
    names = [n for n in hw.names() if n != "host"]
    assert len(names) > viz.catalog.FACET_OVER  # nineteen crossing lines on one chart could not be followed
    fig = viz.memory_tiers_chart(names)
    families = {hw.get(n).family for n in names}
    crowded = {f for f in families if sum(hw.get(n).family == f for n in names) > viz.catalog.CROWDED_PANEL}
    assert crowded == {"gpu"}  # its chips' names piled onto each other's points and lines
    lists = [a for a in fig.layout.annotations if "hover a line" in a.text]
    titles = [a.text for a in fig.layout.annotations if a not in lists]
    assert sorted(titles) == sorted(families)  # one titled panel per family
    panel = {t.name: (t.xaxis, t.yaxis) for t in fig.data}
    for family in families:  # a family's chips share its panel, and no other family is in it
        axes = {panel[n] for n in names if hw.get(n).family == family}
        others = {panel[n] for n in names if hw.get(n).family != family}
        assert len(axes) == 1 and not axes & others, family
    # every chip is named once: on its on-chip tier, in a text trace drawn after every line (no line crosses a
    # name), chips at the same spot sharing a label ("inf2 / trn1"); a crowded panel's chips in one list in the
    # panel's empty lower corner
    texts = [t for t in fig.data if t.name.endswith(" (label)")]
    labels = [lab for t in texts for lab in t.text if lab]
    listed = [n for a in lists for n in re.split(", |<br>", a.text.split(":<br>", 1)[1])]
    assert len(lists) == len(crowded) and all((a.x, a.y, a.xanchor, a.yanchor) == (0.02, 0.02, "left", "bottom")
                                              for a in lists)
    assert sorted(n for lab in labels for n in re.split(" / |<br>", lab)) + sorted(listed) == \
        sorted(n for n in names if hw.get(n).family not in crowded) + sorted(
            n for n in names if hw.get(n).family in crowded)
    assert "inf2 / trn1" in labels and not any(t.text for t in fig.data if t not in texts)
    assert fig.data[-len(texts):] == tuple(texts)  # drawn last
    for t in texts:
        chip = hw.get(t.name.removesuffix(" (label)"))
        assert (t.x[0], t.y[0]) == (chip.memory_tiers[0].capacity_bytes, chip.memory_tiers[0].bandwidth_Bps)
        assert (t.xaxis, t.yaxis) == panel[chip.name]
    # one panel per family on request, even for few chips; one chart when asked
    assert len(viz.memory_tiers_chart(["sn40l", "tsp"], by_family=True).layout.annotations) == 2
    assert not viz.memory_tiers_chart(names, by_family=False).layout.annotations


@pytest.mark.parametrize("name", [n for n in hw.names() if n != "host"])
def test_family_diagrams_are_aggregated_and_light(name: str) -> None:
    fig = viz.family_diagram(name)
    assert isinstance(fig, go.Figure) and fig.data
    assert 1 <= _points(fig) <= MAX_POINTS
    assert hw.get(name).family in fig.layout.title.text
    # the execution-model sentence is wrapped (plotly does not wrap a subtitle: a long one ran off the figure)
    lines = fig.layout.title.subtitle.text.split("<br>")
    assert " ".join(lines) == hw.get(name).execution_model and max(map(len, lines)) <= 140


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
