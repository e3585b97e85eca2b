"""The host (CPU) execution model: ops replayed on this CPU at their captured shapes, eager overhead."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.sim import host, host_validation


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.head(self.pool(torch.relu(self.conv(x))).flatten(1))


def test_nodes_record_replayable_arguments():
    g = ak.capture(Small(), (torch.randn(2, 3, 16, 16),))
    conv = next(n for n in g.nodes if n.kind == "conv2d")
    assert conv.extra["args"][0] == {"tensor": [[2, 3, 16, 16], "float32"]}
    assert conv.extra["args"][3:] == [[1, 1], [1, 1]]  # stride, padding
    t = host.op_time_s(conv.op, conv.extra["args"], conv.extra.get("kwargs", {}))
    assert t is not None and t > 0
    assert host.op_time_s(conv.op, conv.extra["args"], {}) == t  # cached per op and shapes
    assert host.op_time_s("aten.not_an_op.default", [], {}) is None


def test_host_estimate_uses_profiled_ops_in_fp32_only():
    model, x = Small().eval(), (torch.randn(2, 3, 16, 16),)
    spec = ak.hardware.calibrate()
    fp32 = ak.compile(model, x, target=spec, precision="fp32")
    profiled = fp32.report.kernels
    assert all(k.time_s > 0 for k in profiled)
    # every kernel of this model replays, so each takes at least its measured op time
    from accelkit.families.cpu import host_profiled as _host_profiled

    times = _host_profiled(fp32, fp32.kernels, 1.0)
    assert set(times) == {k.name for k in fp32.kernels}
    for k in profiled:
        if k.name in times:
            assert k.time_s >= times[k.name]
    extras = [k for k in profiled if k.group == "<eager>"]  # views and constants eager PyTorch still runs
    assert len(extras) == 1 and extras[0].time_s >= 0 and extras[0].bound == "latency"
    assert host.dispatch_overhead_s() >= 0
    validation = host_validation.validate_host({"small": (model, x)})
    case = validation.cases[0]
    assert case.predicted_s > 0 and case.measured_s > 0 and "median |error|" in validation.table()


def test_the_report_only_reads_what_compile_measured_on_the_host(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """Compiling for the host measures it once (HostMeasurements on the program); the performance model then
    only reads those numbers, so it measures nothing itself and a saved program reports the same."""
    from accelkit.cost import host as cost_host

    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))
    prog = ak.compile(model, (torch.randn(4, 64),), target="host", precision="fp32")
    assert prog.host is not None and prog.host.dispatch_s >= 0 and prog.host.op_s
    assert ak.compile(model, (torch.randn(4, 64),), target="a100").host is None  # datasheet targets: nothing

    def no_measuring(*_a: object, **_k: object) -> float:
        raise AssertionError("the performance model measured the host")

    for name in ("op_time_s", "dispatch_overhead_s", "view_op_s", "measure_forward_s"):
        monkeypatch.setattr(cost_host, name, no_measuring)
    report = prog.report
    assert report.step_time_s > 0
    saved = ak.load(prog.save(str(tmp_path / "host.akp")))
    assert saved.host == prog.host
    assert saved.report.step_time_s == pytest.approx(report.step_time_s, rel=1e-12)
