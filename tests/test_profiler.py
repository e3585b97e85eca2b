"""ak.profile (measured on this host) and find_portability_issues (from the captured graph)."""

from __future__ import annotations

import inspect
from pathlib import Path

import plotly.graph_objects as go
import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import accelkit as ak
from accelkit.errors import AccelkitError
from accelkit.profiler import HostProfile, PortabilityFinding, find_portability_issues
from accelkit.profiler.figures import op_time_bars
from accelkit.profiler.host import host_cpu

B, D, OUT = 16, 32, 8  # batch, hidden width, output width of the MLP below


def mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(D, D), nn.ReLU(),           # (B, D) @ (D, D) + b -> addmm
        nn.Linear(D, D), nn.ReLU(),           # addmm
        nn.Linear(D, OUT, bias=False),        # (B, D) @ (D, OUT) -> mm
    )


def row(prof: HostProfile, op: str):
    found = [r for r in prof.ops if r.op == op]
    assert found, f"no row for {op}: {[r.op for r in prof.ops]}"
    return found[0]


@pytest.fixture(scope="module")
def mlp_profile() -> HostProfile:
    return ak.profile(mlp(), torch.randn(B, D), check_portability=False)


# ---- what is measured ------------------------------------------------------------------------
def test_matmul_rows_count_2mnk_flops_per_call(mlp_profile: HostProfile) -> None:
    addmm, mm = row(mlp_profile, "aten::addmm"), row(mlp_profile, "aten::mm")
    assert addmm.calls == 2 and mm.calls == 1
    assert addmm.flops == addmm.calls * 2 * B * D * D
    assert mm.flops == mm.calls * 2 * B * D * OUT
    assert row(mlp_profile, "aten::relu").flops == 0  # FlopCounterMode has no elementwise formula
    assert all(r.time_s >= 0 for r in mlp_profile.ops) and addmm.time_s > 0


def test_total_flops_equal_flop_counter_mode(mlp_profile: HostProfile) -> None:
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        mlp()(torch.randn(B, D))
    assert mlp_profile.total_flops == counter.get_total_flops() == 2 * B * D * (2 * D + OUT)
    assert sum(r.flops for r in mlp_profile.ops) == mlp_profile.total_flops
    assert sum(m.flops for m in mlp_profile.per_module) == mlp_profile.total_flops
    assert mlp_profile.achieved_flops_per_s == pytest.approx(mlp_profile.total_flops / mlp_profile.total_time_s)


def test_totals_rows_and_shares(mlp_profile: HostProfile) -> None:
    p = mlp_profile
    assert p.param_count == 2 * (D * D + D) + D * OUT
    assert p.param_bytes == 4 * p.param_count
    kept = sorted(p.run_times_s)[:3]  # runs repeat until the fastest three agree
    assert len(p.run_times_s) >= 3 and p.total_time_s == pytest.approx(kept[1]) and p.spread >= 0
    assert sum(r.share for r in p.ops) == pytest.approx(1.0)
    times = [r.time_s for r in p.ops]
    assert times == sorted(times, reverse=True) and p.top(2) == p.ops[:2]
    assert {"op", "time_s", "flops", "calls", "share"} <= set(p.to_rows()[0])
    assert [m.module for m in p.per_module] == ["0", "1", "2", "3", "4", "<other>"]
    assert p.peak_memory_bytes is not None and p.peak_memory_bytes >= B * D * 4  # one activation at least


def test_summary_says_measured_on_this_host(mlp_profile: HostProfile) -> None:
    first = mlp_profile.summary().splitlines()[0]
    assert first.startswith("MEASURED on this host")
    assert host_cpu() in first and f"{torch.get_num_threads()} torch threads" in first
    assert "aten::addmm" in mlp_profile.summary()
    assert "MEASURED on this host" in mlp_profile._repr_html_()


def test_op_time_bars_hottest_on_top(mlp_profile: HostProfile) -> None:
    fig = op_time_bars(mlp_profile, n=3)
    assert isinstance(fig, go.Figure) and len(fig.data) == 1
    bars = fig.data[0]
    assert len(bars.y) == 3 and bars.y[-1] == mlp_profile.ops[0].op  # plotly draws the last bar on top
    assert bars.x[-1] == pytest.approx(mlp_profile.ops[0].time_s * 1e3)


def test_training_profiles_forward_and_backward() -> None:
    model, x = mlp(), torch.randn(B, D)
    prof = ak.profile(model, x, training=True, runs=1, check_portability=False)
    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    assert prof.total_flops == counter.get_total_flops() > 2 * B * D * (2 * D + OUT)
    assert row(prof, "aten::mm").calls > 1  # the backward's weight and input gradients
    assert prof.summary().splitlines()[0].endswith("forward + backward, 1 run after 1 warm-up")


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        # (B, H, S, Dh) x3 -> (B, H, S, Dh): QK^T and AV, two (S, Dh) x (Dh, S)-sized matmuls per head
        return nn.functional.scaled_dot_product_attention(q * self.w, k, v)


@pytest.mark.parametrize("training", [False, True])
def test_cpu_attention_counted_with_torchs_sdpa_formula(training: bool) -> None:
    b, h, s, dh = 2, 4, 16, 8
    qkv = tuple(torch.randn(b, h, s, dh) for _ in range(3))
    prof = ak.profile(Attention(), qkv, runs=1, training=training, check_portability=False)
    one_matmul = 2 * b * h * s * s * dh
    # forward: QK^T and AV; torch's backward formula: 5 (recomputed scores, dV, dP, dQ, dK)
    assert prof.total_flops == (7 if training else 2) * one_matmul


# ---- the model is left as it was --------------------------------------------------------------
class WithState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(D, D)
        self.bn = nn.BatchNorm1d(D)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)  # changes the caller's tensor: the profiler must hand each run a copy
        return self.drop(self.bn(self.fc(x)))


@pytest.mark.parametrize("training", [False, True])
def test_profiling_leaves_model_inputs_and_rng_unchanged(training: bool) -> None:
    model, x = WithState(), torch.randn(B, D)
    model.train()
    model.bn.eval()  # a mixed state, which model.train(flag) alone would not restore
    model.fc.weight.grad = torch.ones_like(model.fc.weight)
    grad = model.fc.weight.grad
    state = {k: v.clone() for k, v in model.state_dict().items()}
    x_before = x.clone()
    torch.manual_seed(1)
    expected_random = torch.rand(3)
    torch.manual_seed(1)

    ak.profile(model, x, training=training, check_portability=False)

    assert torch.equal(torch.rand(3), expected_random)
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    assert model.training and model.fc.training and not model.bn.training
    assert model.fc.weight.grad is grad and torch.equal(grad, torch.ones_like(grad))
    assert model.fc.bias.grad is None
    assert torch.equal(x, x_before)


# ---- bad input -----------------------------------------------------------------------------
def test_model_must_be_a_module() -> None:
    with pytest.raises(AccelkitError, match="nn.Module, got function"):
        ak.profile(lambda x: x, torch.randn(2))  # type: ignore[arg-type]


@pytest.mark.parametrize("inputs, got", [
    ([1, 2], "non-tensor items: \\[0\\] int, \\[1\\] int"),
    ({"x": torch.randn(2)}, "got dict"),
    ("text", "got str"),
])
def test_example_inputs_must_be_tensors(inputs: object, got: str) -> None:
    with pytest.raises(AccelkitError, match=got) as info:
        ak.profile(mlp(), inputs)  # type: ignore[arg-type]
    assert info.value.fix and "tuple" in info.value.fix


def test_forward_error_names_the_exception_and_the_model() -> None:
    with pytest.raises(AccelkitError, match="Sequential.forward raised RuntimeError") as info:
        ak.profile(mlp(), torch.randn(B, D + 1))
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "float32[16, 33]" in str(info.value)


def test_bad_run_counts() -> None:
    with pytest.raises(AccelkitError, match="runs must be a whole number ≥ 1"):
        ak.profile(mlp(), torch.randn(B, D), runs=0)


# ---- portability: one small model per kind, each line found by inspect -----------------------
def line_of(obj: object, marker: str) -> str:
    """``test_profiler.py:<line>`` of the first line of ``obj``'s source that contains ``marker``."""
    lines, start = inspect.getsourcelines(obj)  # type: ignore[arg-type]
    for i, text in enumerate(lines):
        if marker in text:
            return f"{Path(__file__).name}:{start + i}"
    raise AssertionError(f"{marker!r} not in the source of {obj}")


@torch.library.custom_op("accelkit_test::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class CustomOp(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.accelkit_test.twice(x) + 1


class NonTensorOutput(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, str]:
        return x * 2, "done"


class Float64Buffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", torch.ones(D, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * self.scale).relu() + 1  # float64 enters at the mul and flows on


class DataDependentIf(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x * 2
        return x


class HostSync(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        peak = x.abs().max().item()
        return x / peak


class InplaceOnInput(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x * 2


CASES = [
    ("unsupported-op", CustomOp, "accelkit_test.twice"),
    ("non-tensor-output", NonTensorOutput, "return x * 2"),
    ("dtype", Float64Buffer, "x * self.scale"),
    ("data-dependent-control-flow", DataDependentIf, "if x.sum()"),
    ("host-sync", HostSync, ".item()"),
    ("inplace-on-input", InplaceOnInput, "x.add_(1)"),
]


@pytest.mark.parametrize("kind, model_cls, marker", CASES, ids=[c[0] for c in CASES])
def test_each_kind_is_found_at_its_line(kind: str, model_cls: type[nn.Module], marker: str) -> None:
    findings = find_portability_issues(model_cls(), (torch.randn(B, D),))
    expected = line_of(model_cls, marker)
    assert any(f.kind == kind and f.source == expected for f in findings), findings
    found = next(f for f in findings if f.kind == kind)
    assert isinstance(found, PortabilityFinding) and found.fix and found.detail
    # one vocabulary: the porting check on an accelerator reports the same kind, with the same fix
    report = ak.check(model_cls(), (torch.randn(B, D),), "sn40l")
    same = [f for f in report.findings if f.kind == kind]
    assert same, (kind, report.findings)
    assert found.fix in {f.fix for f in same}, (found.fix, [f.fix for f in same])


def test_ops_named_and_grouped_per_place() -> None:
    [sync] = [f for f in find_portability_issues(HostSync(), (torch.randn(B, D),)) if f.kind == "host-sync"]
    assert sync.op is not None and ("item" in sync.op or "_local_scalar_dense" in sync.op)
    float64 = [f for f in find_portability_issues(Float64Buffer(), (torch.randn(B, D),)) if f.kind == "dtype"]
    at_ops = [f for f in float64 if f.op is not None]
    assert [f.op for f in at_ops] == ["aten.mul.Tensor"]  # where float64 enters, not every op after it
    assert "2 later ops compute in float64" in at_ops[0].detail
    assert [f.detail for f in float64 if f.op is None] == ["buffer 'scale' is stored as float64[32]"]


def test_clean_model_has_no_findings() -> None:
    assert find_portability_issues(mlp(), (torch.randn(B, D),)) == []


def test_profile_reports_what_capture_refuses_without_raising() -> None:
    model = DataDependentIf().train()
    prof = ak.profile(model, torch.randn(B, D), runs=1)
    assert [f.kind for f in prof.portability] == ["data-dependent-control-flow"]
    assert prof.portability[0].source == line_of(DataDependentIf, "if x.sum()")
    assert "data-dependent-control-flow" in prof.summary()
    assert model.training
