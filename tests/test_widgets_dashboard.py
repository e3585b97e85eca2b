"""WorkflowDashboard and CompareTargets: lazy tabs per workflow step, and one model on every target.

Expected source lines are computed with `inspect`, never hard-coded, as in test_check.py.
"""

from __future__ import annotations

import inspect
import os

import plotly.graph_objects as go
import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.widgets import CompareTargets, WorkflowDashboard
from accelkit.widgets.dashboard import STEPS, RunResult

transformers = pytest.importorskip("transformers")

Inputs = tuple[torch.Tensor, ...]


def _gpt2(activation: str = "gelu_new") -> nn.Module:
    cfg = transformers.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, bos_token_id=0,
                                  eos_token_id=0, use_cache=False, activation_function=activation)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(cfg).eval()


@pytest.fixture(scope="module")
def gpt2() -> tuple[nn.Module, Inputs]:
    return _gpt2(), (torch.randint(0, 1000, (2, 32), generator=torch.Generator().manual_seed(0)),)


class Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if y.sum() > 0:
            return y * 2
        return -y


def line_of(obj: object, text: str) -> str:
    """``file.py:line`` of the first line of ``obj``'s source containing ``text``."""
    src, start = inspect.getsourcelines(obj)  # type: ignore[arg-type]
    i = next(i for i, line in enumerate(src) if text in line)
    return f"{os.path.basename(inspect.getsourcefile(obj) or '?')}:{start + i}"  # type: ignore[arg-type]


def _title(fig: go.FigureWidget) -> str:
    return fig.layout.title.text or ""


# ---- WorkflowDashboard ------------------------------------------------------------------------------
def test_tabs_in_workflow_order_profile_first_the_rest_lazy(gpt2: tuple[nn.Module, Inputs]) -> None:
    dash = WorkflowDashboard(*gpt2, target="sn40l")
    assert STEPS == ("profile", "check", "port", "compile", "run")
    assert list(dash.tabs.titles) == list(STEPS) and len(dash.tabs.children) == len(STEPS)
    assert dash.step == "profile" and dash.target == "sn40l" and dash.precision == "bf16"
    text = dash.summary_text("profile")
    assert text.startswith("MEASURED on this host") and "wall time per run" in text
    assert isinstance(dash.outcome("profile").value, ak.HostProfile)
    [bars] = dash.figures["profile"]
    assert isinstance(bars, go.FigureWidget) and len(bars.data) == 1 and "MEASURED" in _title(bars)
    for step in ("check", "port", "compile", "run"):  # nothing else ran yet
        assert "runs when this tab is opened" in dash.summaries[step].value


def test_target_change_updates_check_compile_and_run(gpt2: tuple[nn.Module, Inputs]) -> None:
    model, inputs = gpt2
    dash = WorkflowDashboard(model, inputs, target="sn40l")
    profiled = dash.outcome("profile")
    dash.set(step="check")
    assert dash.summary_text("check").startswith("GPT2LMHeadModel on sn40l (reconfigurable-dataflow")
    assert "on sn40l" in dash.summaries["check"].value and "<table" in dash.tables["check"].value
    dash.set(step="compile")
    placement, memory = dash.figures["compile"]
    text = dash.summary_text("compile")
    assert "target: sn40l (reconfigurable-dataflow)" in text and "step time: " in text and "(modelled)" in text
    assert text.startswith("model: as given") and "sn40l" in _title(placement)
    assert [t.name for t in memory.data] == ["capacity", "used"]

    dash.set(target="wse2")  # the open tab runs again for the new target, redrawn in place
    assert dash.figures["compile"] == [placement, memory] and "wse2" in _title(placement)
    assert "target: wse2 (wafer-dataflow)" in dash.summary_text("compile")
    assert "target: wse2" in dash.summaries["compile"].value
    # the oracle: the tab's program is what ak.compile gives for the same arguments
    prog = dash.outcome("compile").value
    assert prog.summary() == ak.compile(model, inputs, target="wse2", precision="bf16").summary()
    assert dash.summary_text("check").startswith("GPT2LMHeadModel on wse2 (wafer-dataflow")
    assert dash.outcome("profile") is profiled  # measured once, whatever the target

    dash.set(target="tsp", step="run")
    run = dash.outcome("run").value
    assert isinstance(run, RunResult) and len(run.steps) == 3 and run.session.target == "tsp"
    assert run.max_rel_error <= run.tolerance  # real fp16 numerics against plain fp32 PyTorch
    text = dash.summary_text("run")
    assert "ak.Session on tsp, fp16" in text and "within the fp16 tolerance" in text
    assert f"step time: {ak.sim.report.fmt_s(run.steps[-1].simulated_time_s)} (modelled)" in text
    [gantt] = dash.figures["run"]
    assert "tsp" in _title(gantt) and "timeline (MODELLED)" in _title(gantt) and len(gantt.data) > 0


def test_capture_error_is_shown_in_the_check_tab_with_its_line() -> None:
    dash = WorkflowDashboard(Branchy(), (torch.randn(2, 4),), target="sn40l")
    dash.set(step="check")
    text = dash.summary_text("check")
    where = line_of(Branchy.forward, "if y.sum() > 0")
    assert "NOT ready" in text and "could not be captured" in text
    assert "error data-dependent-control-flow: " in text and f"at {where}" in text
    assert where in dash.tables["check"].value
    # compile takes the model the way the check leaves it: through ak.port's where-for-if rewrite
    dash.set(step="compile")
    assert dash.outcome("compile").error is None
    assert dash.summary_text("compile").startswith("model: ported by ak.port (where-for-if)")


def test_errors_are_shown_in_the_tab_not_raised() -> None:
    class Broken(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("this model is broken")

    dash = WorkflowDashboard(Broken(), (torch.randn(2, 4),), target="gc200")
    out = dash.outcome("profile")
    assert isinstance(out.error, ak.AccelkitError) and out.value is None
    assert out.summary_text.startswith("profile on this host failed\nModelError:\n"
                                       "Broken.forward raised RuntimeError: this model is broken")
    assert "#c00000" in dash.summaries["profile"].value
    assert dash._panes["profile"].plots.layout.display == "none"
    dash.set(step="compile")
    assert dash.outcome("compile").error is not None and "compile for gc200 failed" in dash.summary_text("compile")
    with pytest.raises(ValueError, match="no step"):
        dash.set(step="deploy")


# ---- CompareTargets -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compare(gpt2: tuple[nn.Module, Inputs]) -> CompareTargets:
    return CompareTargets(*gpt2)


def test_a_row_per_target(compare: CompareTargets, gpt2: tuple[nn.Module, Inputs]) -> None:
    expected = [n for n in ak.hardware.names() if n != "host"]
    assert sorted(r["target"] for r in compare.rows) == sorted(expected) == sorted(compare.targets)
    assert all(r["reason"] is None for r in compare.rows)
    precisions = {r["target"]: r["precision"] for r in compare.rows}
    assert precisions["sn40l"] == "bf16" and precisions["gc200"] == "fp16"  # auto: bf16 where the chip has it
    row = next(r for r in compare.rows if r["target"] == "wse2")
    # the oracle: each row is ak.compile's modelled report for the same arguments
    report = ak.compile(*gpt2, target="wse2", precision="bf16").report
    assert (row["step_time_s"], row["throughput"], row["mode"]) == \
        (report.step_time_s, report.throughput, report.mode)
    assert compare.summary_text.startswith(f"MODELLED: GPT2LMHeadModel on {len(expected)} targets, sorted by step time")


def test_sorting_orders_rows_table_and_bars(compare: CompareTargets) -> None:
    compare.sort("step time")
    times = [r["step_time_s"] for r in compare.rows]
    assert times == sorted(times)
    order = [r["target"] for r in compare.rows]
    table = compare.table.value
    assert [table.index(f"<b>{t}</b>") for t in order] == sorted(table.index(f"<b>{t}</b>") for t in order)
    assert list(compare.bars.data[0].x) == order  # the bars follow the table
    assert compare.bars.layout.yaxis.title.text.startswith("step time")
    compare.sort("throughput")
    throughputs = [r["throughput"] for r in compare.rows]
    assert throughputs == sorted(throughputs, reverse=True) and compare.sort_control.value == "throughput"
    # sorted by throughput, the bars show throughput (largest first), so the change is visible
    assert list(compare.bars.data[0].y) == throughputs
    assert compare.bars.layout.yaxis.title.text.startswith("throughput (samples/s")
    compare.sort("energy")  # targets without published power come last
    energies = [r["energy_j"] for r in compare.rows]
    known = [e for e in energies if e is not None]
    assert known == sorted(known) and energies[: len(known)] == known
    with pytest.raises(ValueError, match="cannot sort by"):
        compare.sort("price")
    compare.sort("step_time_s")  # a row key works too
    assert compare.sort_by == "step time"


def test_detail_dropdown_redraws_the_detail_figure(compare: CompareTargets) -> None:
    figure = compare.detail

    def drawn() -> tuple[str, str]:
        return _title(figure), repr([list(t.x)[:3] for t in figure.data])

    compare.set(detail="sn40l", view="timeline")
    before = drawn()
    assert "sn40l" in before[0] and "timeline" in before[0]
    compare.detail_control.value = "tsp"
    after = drawn()
    assert compare.detail is figure and after != before and "tsp" in after[0]
    assert "tsp (static-schedule)" in compare.detail_summary.value
    compare.view_control.value = "roofline"
    assert "tsp fp16 roofline (MODELLED)" in _title(figure) and drawn() != after


def test_a_model_too_big_for_one_chip_gets_the_chips_it_needs() -> None:
    # GPT-2 small's 249 MB of fp16 weights overflow one TSP (231 MB): the table shows it on the chips the
    # ModeError names, as notebook 06's table does, instead of a red error; chips=1 keeps the error
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(use_cache=False)).eval()
    inputs = (torch.zeros(1, 64, dtype=torch.long, device="meta"),)
    with pytest.raises(ak.compiler.ModeError) as err:
        ak.compile(model, inputs, target="tsp", precision="fp16")
    assert err.value.chips_needed == 2 and err.value.target == "tsp" and err.value.chips == 1
    row = CompareTargets(model, inputs, targets=["tsp"]).rows[0]
    assert row["reason"] is None and row["chips"] == err.value.chips_needed
    row = CompareTargets(model, inputs, targets=["tsp"], chips=1).rows[0]
    assert row["reason"].startswith("ModeError:")
    assert "bound by" in CompareTargets(model, inputs, targets=["tsp"]).table.value  # the columns explained


def test_targets_that_cannot_compile_show_the_reason(tsp_without_erf: str) -> None:
    # exact GELU needs erf, which this test's TSP table lacks (a port); 100,000 sequences do not fit one IPU
    model = _gpt2(activation="gelu")
    inputs = (torch.randint(0, 1000, (2, 32)),)
    compare = CompareTargets(model, inputs, targets=["tsp", "gc200", "a100"], batch_size=100_000, chips=1)
    rows = {r["target"]: r for r in compare.rows}
    assert rows["a100"]["reason"] is None and rows["a100"]["step_time_s"] > 0
    assert rows["tsp"]["reason"].startswith("CompileError:") and "gelu" in rows["tsp"]["reason"]
    assert "ak.port" in rows["tsp"]["fix"]
    assert rows["gc200"]["reason"].startswith("ModeError:") and "fits no execution mode" in rows["gc200"]["reason"]
    assert rows["tsp"]["step_time_s"] is None and rows["gc200"]["mode"] is None
    assert [r["target"] for r in compare.rows][0] == "a100"  # what did not compile sorts last
    assert "cannot compile: CompileError" in compare.summary_text
    assert "#c00000" in compare.table.value and "fits no execution mode" in compare.table.value
    assert list(compare.detail_control.options) == ["a100"]
    with pytest.raises(ValueError, match="no detail for 'tsp': CompileError"):
        compare.set(detail="tsp")
    assert list(compare.bars.data[0].x) == ["a100"]


def test_compare_targets_names_each_rows_stack_and_takes_one_per_family(gpt2: tuple[nn.Module, Inputs]) -> None:
    default = CompareTargets(*gpt2, targets=["h100", "gaudi2", "sn40l"])
    stacks = {r["target"]: r["stack"] for r in default.rows}
    assert stacks == {"h100": "compiled", "gaudi2": "lazy", "sn40l": "sambaflow"}  # ak.compile's defaults
    assert "<th>stack</th>" in default.table.value and "compiled" in default.summary_text
    eager = CompareTargets(*gpt2, targets=["h100", "gaudi2", "sn40l"], stack="eager")  # where a family has it
    assert {r["target"]: r["stack"] for r in eager.rows} == {"h100": "eager", "gaudi2": "eager", "sn40l": "sambaflow"}
    assert eager.programs["h100"].report.step_time_s > default.programs["h100"].report.step_time_s
    per_family = CompareTargets(*gpt2, targets=["h100", "gaudi2"], stack={"gpu": "engine"})
    assert {r["target"]: r["stack"] for r in per_family.rows} == {"h100": "engine", "gaudi2": "lazy"}


def test_the_dashboard_compiles_and_runs_on_the_stack_it_is_given(gpt2: tuple[nn.Module, Inputs]) -> None:
    dash = WorkflowDashboard(*gpt2, target="h100", stack="eager")
    dash.set(step="compile")
    assert dash.outcome("compile").value.stack == "eager"
    assert "stack eager" in dash.status.value
    plain = WorkflowDashboard(*gpt2, target="h100")
    assert plain.stack_for("h100") == "compiled" and plain.stack_for("h100", session=True) == "eager"
    assert dash.stack_for("sn40l") == "sambaflow"  # a family without it: its own


def test_a_stack_no_family_has_is_refused_by_name(gpt2: tuple[nn.Module, Inputs]) -> None:
    for bad in ("tensorrt", 3, {"gpu": "tensorrt"}):
        with pytest.raises(ak.compiler.CompileError, match="names no software stack") as err:
            CompareTargets(*gpt2, targets=["h100"], stack=bad)  # type: ignore[arg-type]
        assert "'eager'" in err.value.fix and "'xla'" in err.value.fix
    with pytest.raises(ak.compiler.CompileError, match="names no software stack"):
        WorkflowDashboard(*gpt2, target="h100", stack="tensorrt")
