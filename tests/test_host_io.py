"""The host's share of a step: each call's inputs and outputs over the host link and its round trip (modelled)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.constants import value
from accelkit.errors import CompileError
from accelkit.families import model_for


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        out = self.fc(x)
        return out if labels is None else nn.functional.cross_entropy(out, labels)


def test_groqflow_hello_world_pays_pcie_each_way_as_groqflows_own_estimate():
    x = torch.rand(10)  # GroqFlow's hello world: one input of 10 values is one sample, not ten
    rep = ak.compile(nn.Linear(10, 5), (x,), target="tsp", precision="fp16").report
    assert rep.batch_size == 1
    assert (rep.io_in_bytes, rep.io_out_bytes) == (10 * 2, 5 * 2)  # fp16 in, fp16 out
    lat, bw = value("GROQFLOW_PCIE_LATENCY_S"), value("GROQFLOW_PCIE_BPS")
    groqflow = lat + 20 / bw + rep.sections_s["fwd"] + lat + 10 / bw  # estimate_performance()'s sum
    assert rep.step_time_s == pytest.approx(groqflow, rel=1e-9)
    assert rep.io_s > 100 * rep.sections_s["fwd"]  # a one-layer model is all PCIe latency
    assert rep.breakdown.parts_s["host"] == pytest.approx(rep.io_s)
    assert any(e.lane == "host link" for e in rep.events)
    assert "host link:" in rep.summary() and "round trip per call" in rep.summary()


def test_device_iterations_share_the_round_trip_and_synthetic_data_moves_nothing():
    m, x, y = Tiny(), torch.randn(16, 32), torch.randint(0, 8, (16,))

    def rep(**kw):
        return ak.compile(m, (x, y), target="gc200", precision="fp32", training=True, **kw).report

    one, fifty, synthetic = rep(), rep(device_iterations=50), rep(device_iterations=50, synthetic_data=True)
    assert one.io_in_bytes == 16 * 32 * 4 + 16 * 8 and one.io_out_bytes == 4  # images and labels in, the loss out
    moved = one.io_s - one.round_trip_s
    assert one.round_trip_s == pytest.approx(2 * value("HOST_TRANSFER_LATENCY_S"))
    assert fifty.io_s == pytest.approx(moved + one.round_trip_s / 50)
    assert synthetic.io_in_bytes == synthetic.io_out_bytes == 0
    assert synthetic.io_s == pytest.approx(one.round_trip_s / 50)
    assert synthetic.step_time_s < fifty.step_time_s < one.step_time_s
    compute = {k: v for k, v in one.sections_s.items() if k != "io"}
    assert compute == {k: v for k, v in fifty.sections_s.items() if k != "io"}  # the chip's own work is the same


def test_ipu_streams_sync_with_the_host_every_step_at_one_rate_for_all_replicas():
    """Poplar's stream copies synchronise with the host each time (Graphcore's lightweight-profiling tutorial, real
    IPUs): device iterations do not amortise them, each micro-batch pays one per input tensor (PopART schedules each
    on its own; groupHostSync groups them), and one host process streams every replica's data at its one rate
    (Graphcore's tutorial 6 on hardware: about 2.1 GB/s)."""
    m = Tiny()

    def rep(batch: int = 16, **kw):
        x, y = torch.randn(batch, 32), torch.randint(0, 8, (batch,))
        return ak.compile(m, (x, y), target="gc200", precision="fp32", training=True, **kw).report

    sync, rate = value("IPU_STREAM_COPY_S"), value("IPU_HOST_STREAM_BPS")
    one, fifty = rep(), rep(device_iterations=50)
    moved = one.io_in_bytes + one.io_out_bytes
    # the inputs and the labels: a copy each; the loss comes with the call
    assert one.stream_s == pytest.approx(2 * sync + moved / rate)
    assert fifty.stream_s == one.stream_s and fifty.io_s == pytest.approx(one.stream_s + one.round_trip_s / 50)
    assert one.stream_s > 5 * one.round_trip_s  # for a small model the stream copies, not the call, are the host's cost
    accumulated = rep(64, micro_batch=16)  # four micro-batches per update: four times the copies
    assert accumulated.stream_s == pytest.approx(8 * sync + 4 * moved / rate, rel=0.01)
    # two replicas, each with a batch of 16: twice the bytes through the one host per step, the same syncs
    two = rep(32, chips=2, parallel=ak.Parallel(data=2))
    assert two.io_in_bytes == one.io_in_bytes and two.stream_s == pytest.approx(2 * sync + 2 * moved / rate, rel=0.01)
    inference = ak.compile(m, (torch.randn(16, 32),), target="gc200", precision="fp32").report
    assert inference.stream_s == pytest.approx(2 * sync + (inference.io_in_bytes + inference.io_out_bytes) / rate)
    assert (one.stream_syncs, fifty.stream_syncs, accumulated.stream_syncs, inference.stream_syncs) == (2, 2, 8, 2)
    assert "stream copies: 2 per step (one per input and output tensor" in fifty.summary()
    # PopART's groupHostSync: one copy per direction, the same bytes
    grouped = rep(group_host_sync=True)
    assert grouped.stream_syncs == 1 and grouped.stream_s == pytest.approx(one.stream_s - sync)
    assert "stream copies: 1 per step (grouped, one per direction)" in grouped.summary()
    assert rep(64, micro_batch=16, group_host_sync=True).stream_syncs == 4
    assert rep(synthetic_data=True).stream_s == 0.0 and rep(synthetic_data=True).stream_syncs == 0
    assert model_for("gpu").host_io.stream_sync is None  # CUDA copies need no sync of their own per step


def test_an_asynchronous_host_only_shows_what_the_step_cannot_hide():
    assert model_for("gpu").host_io.overlapped and model_for("cpu").host_io is None
    small = ak.compile(Tiny(), (torch.randn(64, 32),), target="h100", precision="bf16").report
    assert small.round_trip_s == 0.0 and small.io_s == 0.0  # copied while the previous step ran
    # a copy with almost no compute behind it: the link is the bound, and only its excess shows
    wide = ak.compile(nn.ReLU(), (torch.randn(4096, 4096),), target="h100", precision="fp32").report
    link = (wide.io_in_bytes + wide.io_out_bytes) / (ak.hardware.get("h100").host_link_Bps / 2)
    assert wide.io_s == pytest.approx(link - (wide.step_time_s - wide.io_s), rel=1e-6) and wide.io_s > 0
    assert "copied while the previous step computes" in wide.summary() and "stream copies" not in wide.summary()
    host = ak.compile(Tiny(), (torch.randn(8, 32),), target="host").report
    assert host.io_s == 0.0 and "host link:" not in host.summary()


def test_options_are_checked_kept_by_artifacts_and_sessions(tmp_path):
    m, x = Tiny(), torch.randn(8, 32)
    with pytest.raises(CompileError, match="device_iterations"):
        ak.compile(m, (x,), target="gc200", precision="fp16", device_iterations=0)
    with pytest.raises(ak.errors.ArgumentError, match="synthetic_data"):
        ak.compile(m, (x,), target="gc200", precision="fp16", synthetic_data="yes")
    prog = ak.compile(m, (x,), target="gc200", precision="fp16", device_iterations=20, synthetic_data=True)
    prog.save(tmp_path / "art")
    back = ak.load(tmp_path / "art")
    assert (back.device_iterations, back.synthetic_data) == (20, True)
    assert back.report.step_time_s == pytest.approx(prog.report.step_time_s)
    session = ak.Session(m, target="gc200", device_iterations=20)
    session.run(x)
    assert session.compiled.report.device_iterations == 20


def test_a_slow_input_pipeline_bounds_the_step_and_a_fast_one_changes_nothing(tmp_path):
    """The host's input pipeline loads the next batch while the device runs this one: a step takes at least
    batch / input_rate, the excess is the chip waiting for the host; with synthetic data nothing is loaded."""
    m, x, y = Tiny(), torch.randn(16, 32), torch.randint(0, 8, (16,))

    def rep(**kw):
        return ak.compile(m, (x, y), target="gc200", precision="fp32", training=True, device_iterations=50,
                          **kw).report

    free, fast, slow = rep(), rep(input_rate=1e9), rep(input_rate=2000.0)
    assert fast.step_time_s == pytest.approx(free.step_time_s) and fast.input_s == 0.0
    assert "keeps up with the chip" in fast.summary()
    assert slow.step_time_s == pytest.approx(16 / 2000.0) and slow.throughput == pytest.approx(2000.0)
    assert slow.input_s == pytest.approx(16 / 2000.0 - free.step_time_s)
    assert slow.breakdown.parts_s["host"] == pytest.approx(slow.io_s + slow.input_s)
    assert "waits" in slow.input_text() and "(the bound)" in slow.summary()
    assert any(e.lane == "host input pipeline" for e in slow.events)
    assert rep(input_rate=2000.0, synthetic_data=True).input_s == 0.0  # data made on the chip: no loader
    for bad in (0, -5.0, float("nan"), "fast", True):
        with pytest.raises(CompileError, match="input_rate"):
            rep(input_rate=bad)
    prog = ak.compile(m, (x, y), target="gc200", precision="fp32", training=True, input_rate=2000.0)
    prog.save(tmp_path / "art")
    assert ak.load(tmp_path / "art").report.input_s == pytest.approx(prog.report.input_s)
    session = ak.Session(m, target="gc200", input_rate=2000.0)
    session.run(x)
    assert session.sections_s["input"] > 0 and session.simulated_time_s == pytest.approx(16 / 2000.0)


def test_input_rate_measures_a_loader_on_this_host():
    from accelkit.profiler import input_rate

    ds = torch.utils.data.TensorDataset(torch.randn(256, 32), torch.randint(0, 8, (256,)))
    rate = input_rate(torch.utils.data.DataLoader(ds, batch_size=16), batches=8, repeats=3, warmup=1, min_time_s=0)
    assert rate.samples == 8 * 16 and rate.batches == 8 and len(rate.passes) == 3
    assert rate.samples_per_s == pytest.approx(sorted(rate.passes)[1]) and rate.samples_per_s > 0
    assert "MEASURED" in str(rate) and rate.label == "measured"
    with pytest.raises(ak.errors.AccelkitError, match="no tensor"):
        input_rate([["a", "b"]] * 4, warmup=0)
    with pytest.raises(ak.errors.AccelkitError, match="repeats"):
        input_rate([torch.zeros(2, 3)], repeats=0)


def test_a_loader_in_the_training_process_adds_its_whole_time_and_every_steps_outputs_add_a_copy(tmp_path):
    """``input_overlap=False`` (no loader workers: PopTorch's synchronous DataLoader, PyTorch's num_workers=0) loads
    each batch between steps, so all of its time adds to the step, however fast the chip; ``output_mode="all"``
    (PopTorch's OutputMode.All) streams every training step's outputs back, one more copy that syncs with the host."""

    class WithPreds(Tiny):
        def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
            out = self.fc(x)
            return nn.functional.cross_entropy(out, labels), out.softmax(1)

    m, x, y = WithPreds(), torch.randn(16, 32), torch.randint(0, 8, (16,))

    def rep(**kw):
        return ak.compile(m, (x, y), target="gc200", precision="fp32", training=True, device_iterations=50,
                          **kw).report

    free, fast_async, fast_sync = rep(), rep(input_rate=1e6), rep(input_rate=1e6, input_overlap=False)
    assert fast_async.input_s == 0.0  # hidden behind the step
    assert fast_sync.input_s == pytest.approx(16 / 1e6) and fast_sync.step_time_s == pytest.approx(
        free.step_time_s + 16 / 1e6)
    assert "in the training process between steps" in fast_sync.summary()
    slow_sync = rep(input_rate=2000.0, input_overlap=False)
    assert slow_sync.step_time_s == pytest.approx(free.step_time_s + 16 / 2000.0)  # not max(step, load): the sum
    final, every = free, rep(output_mode="all")
    # images and labels in; with "all", the loss and the predictions back: a copy per tensor
    assert (final.output_mode, every.output_mode, final.stream_syncs, every.stream_syncs) == ("final", "all", 2, 4)
    assert every.io_out_bytes == 4 + 16 * 8 * 4 and final.io_out_bytes == 4  # the loss and the predictions
    rate = value("IPU_HOST_STREAM_BPS")
    assert every.stream_s - final.stream_s == pytest.approx(2 * value("IPU_STREAM_COPY_S") + 16 * 8 * 4 / rate)
    assert "output mode 'all'" in every.summary() and "output mode" not in final.summary()
    # an inference model sends every step's outputs by default; "final" sends the call's last step's only
    infer = {mode: ak.compile(Tiny(), (x,), target="gc200", precision="fp32", device_iterations=50,
                              output_mode=mode).report for mode in (None, "all", "final")}
    assert infer[None].stream_s == infer["all"].stream_s > infer["final"].stream_s
    assert (infer["all"].stream_syncs, infer["final"].stream_syncs) == (2, 1)
    for bad, name in (("every", "output_mode"), ("no", "input_overlap"), ("yes", "group_host_sync")):
        with pytest.raises(ak.errors.AccelkitError, match=name):  # named, with the fix
            rep(**{name: bad})
    prog = ak.compile(m, (x, y), target="gc200", precision="fp32", training=True, input_rate=2000.0,
                      input_overlap=False, output_mode="all", group_host_sync=True)
    prog.save(tmp_path / "art")
    back = ak.load(tmp_path / "art")
    assert (back.input_overlap, back.output_mode, back.group_host_sync) == (False, "all", True)
    assert back.report.step_time_s == pytest.approx(prog.report.step_time_s)
    session = ak.Session(m, target="gc200", input_rate=2000.0, input_overlap=False, output_mode="all")
    session.run(x, y)
    assert session.compiled.report.output_mode == "all" and not session.compiled.report.input_overlap
