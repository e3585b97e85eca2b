"""Figures of modelled performance (accelkit.viz.perf): they draw what the report says, and stay light."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
import torch

import accelkit as ak
from accelkit.compiler import Parallel
from accelkit.sim.estimate import rates
from accelkit.sim.validate import InformationalRow, ValidationResult, ValidationRow
from accelkit.viz.perf import MAX_MARKS, comparison_bars, roofline, scaling_curves, timeline, validation_chart


@pytest.fixture(scope="module")
def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    m = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=256, n_head=4, vocab_size=1000, n_positions=128,
                                   use_cache=False, bos_token_id=0, eos_token_id=0)).eval()
    return m, (torch.randint(0, 1000, (4, 128)),)


@pytest.fixture(scope="module")
def reports(gpt2):
    model, x = gpt2
    return {
        "a100": ak.compile(model, x, target="a100", batch_size=256).report,
        "sn40l": ak.compile(model, x, target="sn40l").report,
        "train": ak.compile(model, x, target="a100", training=True, batch_size=8, micro_batch=2).report,
        "pipe": ak.compile(model, x, target="a100", training=True, batch_size=8, micro_batch=2, chips=4,
                           parallel=Parallel(pipeline=4)).report,
    }


def _marks(fig: go.Figure) -> int:
    return sum(len(t.x) for t in fig.data if t.x is not None)


def test_timeline_draws_every_event(reports):
    r = reports["train"]
    fig = timeline(r)
    assert isinstance(fig, go.Figure) and "MODELLED" in fig.layout.title.text
    bars = [t for t in fig.data if isinstance(t, go.Bar)]
    assert sum(len(t.x) for t in bars) == len(r.events)
    assert {t.name for t in bars} == {"forward", "backward", "optimizer"}
    scale = 1e3 if r.step_time_s >= 1e-3 else 1e6
    ends = [b + d for t in bars for b, d in zip(t.base, t.x, strict=True)]
    assert max(ends) == pytest.approx(max(e.start_s + e.duration_s for e in r.events) * scale)


def test_timeline_merges_when_there_are_too_many_events(reports):
    r = reports["train"]
    fig = timeline(r, max_marks=20)
    bars = [t for t in fig.data if isinstance(t, go.Bar)]
    assert _marks(fig) <= 20 + 2 * len({(e.lane, e.section) for e in r.events})  # runs break at lane changes
    total = sum(sum(t.x) for t in bars)
    assert total == pytest.approx(sum(e.duration_s for e in r.events) * (1e3 if r.step_time_s >= 1e-3 else 1e6),
                                  rel=1e-6)  # merged bars cover the same time
    assert "merged" in fig.layout.title.subtitle.text


def test_roofline_points_sit_under_the_gpu_roofs(reports):
    r = reports["a100"]
    fig = roofline(r)
    roofs = rates(ak.hardware.get("a100"), r.precision)
    points = [t for t in fig.data if t.mode == "markers"]
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(lines) == 2 + len(roofs.tier_bw)  # matrix, vector, one per memory tier
    assert {t.name for t in points} <= {"compute-bound", "memory-bound", "latency-bound", "communication-bound"}
    assert {"compute-bound", "memory-bound"} <= {t.name for t in points}
    for t in points:
        for x, y in zip(t.x, t.y, strict=True):
            # rounding to 0.01 decades when merging points: allow 2.5%
            assert y <= roofs.matmul_flops * 1.025 and y <= roofs.tier_bw["hbm"] * x * 1.05
    assert sum(len(t.x) for t in points) <= MAX_MARKS
    assert fig.layout.xaxis.type == "log" and "MODELLED" in fig.layout.title.text


def test_roofline_merges_repeated_layers(reports):
    r = reports["sn40l"]
    fig = roofline(r, "sn40l")
    n_points = sum(len(t.x) for t in fig.data if t.mode == "markers")
    assert 0 < n_points < sum(1 for k in r.kernels if k.flops > 0)  # two identical layers share points


def test_comparison_bars_stack_to_the_step_time(reports):
    chosen = {k: reports[k] for k in ("a100", "sn40l", "pipe")}
    fig = comparison_bars(chosen)
    longest = max(r.step_time_s for r in chosen.values())
    scale = 1e3 if longest >= 1e-3 else 1e6
    assert fig.layout.yaxis.title.text.startswith(f"step time ({'ms' if scale == 1e3 else 'µs'}")
    for i, r in enumerate(chosen.values()):
        assert sum(t.y[i] for t in fig.data) == pytest.approx(r.step_time_s * scale, rel=1e-6)
    assert "pipeline fill / bubble" in {t.name for t in fig.data}  # the pipeline's step is longer than its sections
    tput = comparison_bars(list(chosen.values()), metric="throughput")
    assert list(tput.data[0].y) == [r.throughput for r in chosen.values()]


def test_scaling_curves_have_an_ideal_line(gpt2):
    model, x = gpt2
    series = {"a100 data parallel": [ak.compile(model, x, target="a100", training=True, batch_size=32, chips=c,
                                                parallel=Parallel(data=c)).report for c in (1, 2, 4, 8)]}
    fig = scaling_curves(series)
    measured, ideal = fig.data
    assert list(measured.x) == [1, 2, 4, 8] and list(ideal.y) == pytest.approx([measured.y[0] * c for c in (1, 2, 4, 8)])
    assert all(m <= i * (1 + 1e-9) for m, i in zip(measured.y, ideal.y, strict=True))  # never beats linear


def test_validation_chart_inverts_rates():
    rows = [ValidationRow("fast", "s", 1, "m", "tokens_per_s_per_user", 100.0, 200.0, 1.0, "src", "c", ""),
            ValidationRow("slow", "s", 1, "m", "latency_s", 1.0, 1.5, 0.5, "src", "c", ""),
            ValidationRow("per token", "s", 1, "m", "tpot_s", 0.005, 0.004, -0.2, "src", "c", "")]  # a time too
    info = [InformationalRow("beyond", "s", 16, "m", "tokens_per_s_per_user", 400.0, 100.0, 150.0, 6e13, 2.5e13,
                             "hbm", "src", "c", "")]
    fig = validation_chart(ValidationResult(rows, info))
    validate, informational = fig.data
    assert list(validate.x) == pytest.approx([0.5, 1.5, 0.8])  # twice the published rate = half the time
    assert list(informational.x) == [4.0]
    assert "MODELLED" in fig.layout.title.text
