"""Figures of a compiled program: one per family, coloured by layer, hover names the ops, and light."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.compiler.passes import layer_of
from accelkit.viz.placement import MAX_MARKS, ROW_ORDER, SLICES, mark_count, memory_plan_bars, placement_map

FAMILY_TARGETS = {"wafer-dataflow": "wse2", "reconfigurable-dataflow": "sn40l", "bsp-tiles": "gc200",
                  "static-schedule": "tsp", "gpu": "a100"}


def precision_for(target: str) -> str:
    return "bf16" if "bf16" in ak.hardware.get(target).peak_flops else "fp16"  # gc200, bow, tsp: no bf16


@pytest.fixture(scope="module")
def gpt2_graph() -> ak.Graph:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    m = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500, n_positions=64,
                                   bos_token_id=0, eos_token_id=0, use_cache=False)).eval()
    # Compile the captured graph: these tests are about drawing a placement, not about which ops a
    # target accepts (that is ak.check's job, tested with the porting package).
    return ak.capture(m, (torch.randint(0, 500, (2, 16)),))


@pytest.fixture(scope="module")
def programs(gpt2_graph: ak.Graph) -> dict[str, ak.CompiledProgram]:
    return {fam: ak.compile(gpt2_graph, target=t, precision=precision_for(t)) for fam, t in FAMILY_TARGETS.items()}


def _hovers(fig: go.Figure) -> list[str]:
    return [h for t in fig.data for h in (t.hovertext or ())]


def _layers(prog: ak.CompiledProgram) -> set[str]:
    return {layer_of(k.module) for k in prog.kernels}


@pytest.mark.parametrize("family", FAMILY_TARGETS)
def test_placement_map_per_family(programs: dict[str, ak.CompiledProgram], family: str,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    prog = programs[family]
    monkeypatch.setattr(go.Figure, "show", lambda *a, **k: pytest.fail("figure functions never show"))
    fig = placement_map(prog)
    assert isinstance(fig, go.Figure) and fig.data
    assert 0 < mark_count(fig) <= MAX_MARKS
    # one colour group per layer, one colour per group
    drawn = [t for t in fig.data if t.name != ROW_ORDER]  # the RDU's invisible row-order trace
    groups = {t.legendgroup for t in drawn}
    assert groups == _layers(prog)
    colors = {t.legendgroup: t.marker.color for t in drawn}
    assert all(colors[t.legendgroup] == t.marker.color for t in drawn)
    assert len(set(colors.values())) == len(groups)
    # hovering shows each kernel's op, its FLOPs and its memory
    hover = "\n".join(_hovers(fig))
    for k in prog.kernels:
        assert k.ops[0] in hover
    assert "FLOPs:" in hover and "memory: weights" in hover
    assert prog.spec.name in fig.layout.title.text and prog.mode in fig.layout.title.text


def test_wafer_is_a_few_rectangles_not_one_point_per_core(programs: dict[str, ak.CompiledProgram]) -> None:
    prog = programs["wafer-dataflow"]
    fig = placement_map(prog)
    regions = prog.placement.regions
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rects) == len(regions) + 1  # one per region and the mesh outline
    assert sum(len(t.x) for t in fig.data) == len(regions)  # a hover point per region
    rows, cols = prog.placement.grid
    assert rows * cols == 850_000 and mark_count(fig) <= 2 * len(regions) + 1 < 50
    for r in regions:  # rectangles sit where placement put them
        assert any(s.x0 == r.col0 and s.x1 == r.col0 + r.cols and s.y1 == r.rows for s in rects)


def test_many_regions_are_merged_under_the_budget() -> None:
    class Deep(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(120))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for b in self.blocks:
                x = b(x)
            return x

    graph = ak.capture(Deep(), (torch.randn(4, 8),))
    wafer = ak.compile(graph, target="wse2")
    assert wafer.mode == "pipelined" and len(wafer.placement.regions) == 120
    assert mark_count(placement_map(wafer)) <= 2 * 120 + 1  # at full detail it fits the budget
    small = placement_map(wafer, max_marks=41)
    assert mark_count(small) <= 41
    assert "merged" in small.layout.title.subtitle.text
    assert len({t.legendgroup for t in small.data}) <= 20  # runs of 6 layers share a colour
    assert placement_map(wafer).layout.showlegend is False  # 120 layers: a gradient, not a legend
    for target in ("sn40l", "tsp", "a100", "gc200"):
        fig = placement_map(ak.compile(graph, target=target, precision=precision_for(target)), max_marks=60)
        assert mark_count(fig) <= 60, target


def test_rdu_sections_show_pcus_and_pmus(gpt2_graph: ak.Graph) -> None:
    o1 = ak.compile(gpt2_graph, target="sn40l", fusion="o1")
    o0 = ak.compile(gpt2_graph, target="sn40l", fusion="o0")
    for prog in (o1, o0):
        fig = placement_map(prog)
        sections = {r.slice for r in prog.placement.regions}
        assert {y for t in fig.data for y in t.y} == sections
        pcus = sum(x for t in fig.data if t.xaxis == "x" for x in t.x)
        pmus = sum(x for t in fig.data if t.xaxis == "x2" for x in t.x)
        assert pcus == sum(r.units for r in prog.placement.regions)
        assert pmus == sum(r.memory_units for r in prog.placement.regions)
    assert len({y for t in placement_map(o0).data for y in t.y}) > len({y for t in placement_map(o1).data for y in t.y})


def test_tsp_gantt_bars_are_the_schedule(programs: dict[str, ak.CompiledProgram]) -> None:
    prog = programs["static-schedule"]
    fig = placement_map(prog)
    bars = sorted((b, x, y) for t in fig.data for b, x, y in zip(t.base, t.x, t.y, strict=True))
    assert bars == sorted((r.start_cycle, r.cycles, r.slice) for r in prog.placement.regions)
    assert {y for _, _, y in bars} <= set(SLICES)
    assert f"{prog.placement.extra['total_cycles']:,} cycles" in fig.layout.title.subtitle.text


def test_pipelined_ipus_are_shaded(gpt2_graph: ak.Graph) -> None:
    prog = ak.compile(gpt2_graph, target="gc200", precision="fp16", chips=2, parallel=ak.Parallel(pipeline=2))
    fig = placement_map(prog)
    assert sum(len(t.x) for t in fig.data) == len(prog.placement.regions)  # a bar per superstep
    assert [s.label.text for s in fig.layout.shapes] == ["IPU 0", "IPU 1"]


def test_a_training_pipeline_shades_each_run_of_supersteps_on_its_ipu() -> None:
    """Training runs the forward down the pipeline, the backward up it, a tied head back on IPU 0: the IPUs take
    turns, and each shaded band covers supersteps of one IPU only (not one band per IPU from its first to its last)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=500, use_cache=False))
    ids = torch.randint(0, 500, (2, 16))
    prog = ak.compile(gpt2, (ids,), target="gc200", precision="fp16", chips=2, training=True,
                      stages={"transformer.h.1": 1, "lm_head": 0})
    fig = placement_map(prog)
    chip_at = [r.chip for r in prog.placement.regions]
    bands = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(bands) >= 4  # forward down, head back, backward up and down again
    covered = []
    for band in bands:
        steps = range(int(band.x0 + 0.5), int(band.x1 + 0.5))
        assert len({chip_at[i] for i in steps}) == 1
        covered += steps
    assert covered == list(range(len(chip_at)))  # every superstep in one band, in order
    assert {s.label.text for s in bands if s.label.text} == {"IPU 0", "IPU 1"}


def test_memory_plan_bars_show_each_used_tier(programs: dict[str, ak.CompiledProgram]) -> None:
    for prog in programs.values():
        plan = prog.memory_plan
        fig = memory_plan_bars(prog)
        used = next(t for t in fig.data if t.name == "used")
        cap = next(t for t in fig.data if t.name == "capacity")
        assert dict(zip(used.y, used.x, strict=True)) == plan.tier_use
        assert dict(zip(cap.y, cap.x, strict=True)) == plan.tier_capacity
        assert fig.layout.xaxis.type == "log"
        assert all("weights" in h for h, t in zip(used.hovertext, used.y, strict=True)
                   if plan.placement["weights"] == t)
        assert prog.mode in fig.layout.title.text


def test_a_ported_model_is_drawn_with_the_learners_own_names() -> None:
    """ak.port wraps the model (TensorOutputs(inner=...)); figures show ff.0, not inner.ff.0."""

    class TwoOut(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ff = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
            return self.ff(x), 3  # a non-tensor output: the port wraps the model

    from accelkit.porting.recipes import TensorOutputs

    wrapped = TensorOutputs(TwoOut())
    prog = ak.compile(wrapped, (torch.randn(2, 8),), target="a100")
    assert prog.graph.wrapper_prefix == "inner." and prog.graph.model_name == "TwoOut (ported)"
    fig = placement_map(prog)
    names = {t.legendgroup for t in fig.data}
    assert "ff.0" in names and not any(n.startswith("inner") for n in names)
    assert fig.layout.title.text.startswith("TwoOut (ported) on a100")


def test_rdu_rows_keep_section_order_when_a_widget_redraws(programs: dict[str, ak.CompiledProgram]) -> None:
    """A FigureWidget update can drop the axis' categoryarray; plotly then orders rows by first appearance.
    The invisible first trace lists every section in order, so both ways give 0, 1, 2, ..."""
    fig = placement_map(programs["reconfigurable-dataflow"])
    first = fig.data[0]
    assert first.name == ROW_ORDER and list(first.y) == list(fig.layout.yaxis.categoryarray)
    numbers = [int(label.split()[1].rstrip(":")) for label in first.y]
    assert numbers == sorted(numbers) and len(numbers) > 2
    assert all(len(a.text) <= 20 for a in fig.layout.annotations)  # short subplot titles fit a narrow widget
