"""ak.compile(..., fallback="host"): the ops a target refuses run on the host CPU, in partitions, with the
transfers over the host link charged both ways; the default still refuses; a Session trains with plain
PyTorch's numbers; a saved artifact keeps the partitioning."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.errors import CaptureError, CompileError
from accelkit.porting import GatedMLP

TARGET = "tsp"  # its table refuses float64 (common.toml: no accelerator in the catalog computes in it)


class Wide(nn.Module):
    """A layer computed in float64 between two the chip runs: the TSP has no float64 arithmetic."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.b = nn.Linear(32, 4)

    def forward(self, x):
        h = torch.relu(self.a(x))
        h = torch.exp(h.double() * 0.5).float()  # float64: only the host computes it
        return self.b(h)


class WritesInput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        x.mul_(2)
        return self.fc(x)


def _compile(**kw):
    torch.manual_seed(0)
    return ak.compile(Wide(), (torch.randn(8, 16),), target=TARGET, precision="fp32", **kw)


def test_default_refuses_naming_the_op_the_line_and_the_fallback():
    with pytest.raises(CompileError) as err:
        _compile()
    msg = str(err.value)
    assert "float64" in msg and "test_fallback.py:" in msg and "fallback='host'" in msg
    with pytest.raises(CompileError, match="not a fallback"):
        _compile(fallback="cpu")


def test_fallback_partitions_and_charges_the_host_link_both_ways():
    prog = _compile(fallback="host", training=True)
    where = [k.runs_on for k in prog.kernels]
    assert "device" in where and "host" in where
    links = [k for k in prog.kernels if k.runs_on == "link"]
    for section in ("fwd", "bckwd"):  # the backward of the float64 ops runs on the host too
        dirs = {k.extra["direction"] for k in links if k.section == section}
        assert dirs == {"to host", "to device"}, section
    assert all(k.bytes_read > 0 for k in links)
    assert prog.host_partitions == 2 and prog.passes[-1].name == "partition"
    assert {r.slice for r in prog.placement.host_regions} == {"host CPU", "host link"}
    rep = prog.report
    assert rep.host_partitions == 2 and rep.host_s > 0 and rep.transfer_s > 0
    times = {k.name: k.time_s for k in rep.kernels}
    assert rep.transfer_s == pytest.approx(sum(times[k.name] for k in links))
    assert {"host CPU", "host link"} <= {e.lane for e in rep.events}
    assert any("fallback 'host'" in n for n in rep.notes) and any("PCIe 4.0" in a for a in rep.assumptions)
    # the transfer time is the host link's: a faster link moves the same bytes sooner
    fast = dataclasses.replace(prog.spec, host_link_Bps=1e15)
    faster = ak.compile(prog.model, (torch.randn(8, 16),), target=fast, precision="fp32", training=True,
                        fallback="host").report
    assert faster.transfer_s < rep.transfer_s and faster.step_time_s < rep.step_time_s
    assert rep.step_time_s - faster.step_time_s == pytest.approx(rep.transfer_s - faster.transfer_s, rel=1e-6)


def test_what_the_host_cannot_fix_stays_an_error():
    with pytest.raises(CaptureError):  # no graph to partition: a Python `if` on a tensor's value
        ak.compile(GatedMLP(), (torch.randn(4, 16),), target=TARGET, precision="fp32", fallback="host")
    # PopTorch streams inputs to the IPU: a write into one never reaches the caller, wherever the op runs
    with pytest.raises(CompileError, match="(?s)inplace-on-input.*fallback=.host. does not help"):
        ak.compile(WritesInput(), (torch.randn(8, 16),), target="gc200", precision="fp16", fallback="host")


def test_session_with_host_fallback_trains_exactly_as_plain_pytorch():
    torch.manual_seed(0)
    ref = Wide()
    model = copy.deepcopy(ref)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    session = ak.Session(model, target=TARGET, optimizer=opt, loss_fn=loss_fn, precision="fp32", fallback="host")
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        x, y = torch.randn(8, 16, generator=g), torch.randint(0, 4, (8,), generator=g)
        ref_opt.zero_grad()
        ref_loss = loss_fn(ref(x), y)
        ref_loss.backward()
        ref_opt.step()
        step = session.run(x, labels=y)
        assert torch.equal(step.loss, ref_loss.detach())
    for (n, p), (_, q) in zip(ref.named_parameters(), model.named_parameters(), strict=True):
        assert torch.equal(p, q), n
    prog = session.compiled
    assert prog is not None and prog.host_partitions == 2
    assert session.simulated_time_s == pytest.approx(3 * prog.report.step_time_s)


def test_saved_artifact_keeps_the_partitioning(tmp_path):
    prog = _compile(fallback="host")
    loaded = ak.load(prog.save(tmp_path / "wide.akp"))
    assert [(k.name, k.runs_on) for k in loaded.kernels] == [(k.name, k.runs_on) for k in prog.kernels]
    assert loaded.placement.host_regions == prog.placement.host_regions
    assert loaded.fallback == "host" and loaded.host_spec == prog.host_spec
    assert loaded.report.host_s == pytest.approx(prog.report.host_s)
    assert loaded.report.transfer_s == pytest.approx(prog.report.transfer_s)
