"""The vendor-shaped facades, each used the way its vendor's tutorials use it, on small models.

Each test checks real behaviour: the numerics equal plain PyTorch in fp32 (the oracle) or the documented
16-bit tolerance, the loss falls, the clock is modelled (> 0, labelled), and what the facade is about:
the PEF checks (SambaFlow), the execution mode (Cerebras), the IPU pipeline (PopTorch), the build cache
(GroqFlow).
"""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch import nn

from accelkit.runtime.session import TOLERANCE


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models: one thread is faster than two fighting over a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _blobs(n: int = 128, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=g)
    centers = torch.randn(4, 16, generator=g) * 3
    return centers[y] + torch.randn(n, 16, generator=g), y


def _mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))


def _plain_steps(model: nn.Module, opt: torch.optim.Optimizer, batches) -> list[float]:
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


# ---- SambaNova: SambaFlow ---------------------------------------------------------------------------
class WithLoss(nn.Module):
    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, width), nn.GELU(), nn.Linear(width, 4))

    def forward(self, x, y):
        logits = self.body(x)
        return nn.functional.cross_entropy(logits, y), logits


def test_samba_app_runs_on_its_pef_equals_plain_pytorch_and_refuses_a_mismatch(tmp_path, capsys):
    import accelkit.facades.samba as samba
    from accelkit.facades.samba import utils
    from accelkit.facades.samba.sambaloader import SambaLoader

    args = utils.parse_app_args(["compile", "-b", "16", "-p", str(tmp_path / "app.pef")])
    assert (args.command, args.batch_size, args.micro_batch_size, args.inference) == ("compile", 16, None, False)
    inputs = (samba.randn(16, 16, name="x", batch_dim=0), samba.randint(4, (16,), name="y", batch_dim=0))
    assert inputs[0].sn_name == "x" and inputs[0].batch_dim == 0 and inputs[0].rdu() is inputs[0]
    assert type(inputs[0] + 1) is torch.Tensor  # ops give plain tensors: usable as normal tensors
    model = WithLoss()
    ref = copy.deepcopy(model)
    with pytest.raises(samba.SambaError, match="from_torch_model_"):
        samba.session.compile(model, inputs, None, name="app", pef=args.pef)
    samba.from_torch_model_(model)
    optim = samba.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    prog = samba.session.compile(model=model, inputs=inputs, optim=optim, name="app", init_output_grads=True,
                                 pef=args.pef)
    assert prog.target == "sn40l" and prog.training and "compiled 'app'" in capsys.readouterr().out

    utils.parse_app_args(["run", "-b", "16", "-p", args.pef])
    outputs = utils.trace_graph(model, inputs, optim, pef=args.pef)
    assert [o.sn_name for o in outputs] == [o.sn_name for o in model.output_tensors] and outputs[0].sn_grad == 1
    x, y = _blobs(96)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)
    losses = []
    for _ in range(2):
        for xb, yb in SambaLoader(loader, ["x", "y"]):
            loss, logits = samba.session.run(input_tensors=[xb, yb], output_tensors=outputs,
                                             section_types=["fwd", "bckwd", "opt"])
            ref_opt.zero_grad()
            ref_loss, ref_logits = ref(samba.to_torch(xb), samba.to_torch(yb))
            ref_loss.backward()
            ref_opt.step()
            assert torch.equal(samba.to_torch(loss), ref_loss.detach())  # fp32: exactly plain PyTorch
            assert torch.equal(samba.to_torch(logits), ref_logits.detach())
            losses.append(float(samba.to_torch(loss)))
    samba.session.to_cpu(model)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        assert torch.equal(p, q)
    assert losses[-1] < losses[0]
    text = str(samba.session.report())
    assert samba.session.simulated_time_s > 0 and "MODELLED on sn40l" in text and "12 steps" in text

    # what SambaFlow refuses: wrong loader names, a batch of another size, a model the PEF was not compiled for
    with pytest.raises(samba.SambaError, match="do not match the PEF's inputs"):
        next(iter(SambaLoader(loader, ["y", "x"])))
    with pytest.raises(samba.SambaError, match="static shapes"):
        samba.session.run(input_tensors=[x[:8], y[:8]], output_tensors=outputs)
    other = samba.from_torch_model_(WithLoss(width=48))
    with pytest.raises(samba.SambaError, match="different model") as exc:
        utils.trace_graph(other, inputs, samba.optim.SGD(other.parameters(), lr=0.1), pef=args.pef)
    assert "recompile" in exc.value.fix
    # inference on the training PEF, as SambaFlow runs it: traced without an optimizer, fwd sections only
    before = [p.detach().clone() for p in model.parameters()]
    outputs = utils.trace_graph(model, inputs, None, pef=args.pef)
    loss, logits = samba.session.run(input_tensors=[x[:16], y[:16]], output_tensors=outputs, section_types=["fwd"])
    ref_loss, ref_logits = ref(x[:16], y[:16])
    assert torch.equal(samba.to_torch(logits), ref_logits.detach())
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before, strict=True))
    with pytest.raises(samba.SambaError, match="without an optimizer"):
        samba.session.run(input_tensors=[x[:16], y[:16]], output_tensors=outputs,
                          section_types=["fwd", "bckwd", "opt"])


def test_samba_app_args_document_each_subcommand(capsys):
    from accelkit.facades.samba.utils import COMMANDS, parse_app_args

    with pytest.raises(SystemExit):
        parse_app_args(["--help"])
    top = capsys.readouterr().out
    assert all(c in top for c in COMMANDS)
    with pytest.raises(SystemExit):
        parse_app_args(["run", "--help"])
    run_help = capsys.readouterr().out
    for flag in ("-b", "--batch-size", "-mb", "--micro-batch-size", "--inference", "-p", "--pef"):
        assert flag in run_help
    args = parse_app_args(["measure-performance", "-b", "8", "--inference", "-p", "out/x.pef"])
    assert args.command == "measure-performance" and args.inference and args.pef == "out/x.pef"


# ---- Cerebras: cerebras.framework.torch (cbtorch) and cerebras.pytorch (cstorch) ---------------------
def test_cerebras_cbtorch_session_times_a_plain_loop_and_reports_the_mode():
    import accelkit.facades.cerebras as cerebras

    x, y = _blobs()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)
    system = cerebras.initialize(cs_ip="10.0.0.1:9000")
    assert "ignored" in str(system)
    net = _mlp()
    ref = copy.deepcopy(net)
    model = cerebras.module(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    train_loader = cerebras.dataloader(loader)
    losses = []
    with cerebras.Session(train_loader, mode="train") as session:
        for _ in range(2):
            for xb, yb in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
    ref_losses = _plain_steps(ref, torch.optim.SGD(ref.parameters(), lr=0.1), list(loader) * 2)
    assert losses == ref_losses and losses[-1] < losses[0]  # the user's own loop: exactly plain PyTorch
    report = session.report()
    assert report.steps == 16 and report.samples == 256 and session.simulated_time_s > 0
    assert all(report.sections_s[s] > 0 for s in ("fwd", "bckwd", "opt"))
    assert session.mode == "pipelined" == report.mode
    assert "MODELLED on wse2" in str(report) and "pipelined execution" in str(report)


def test_cerebras_cstorch_traced_steps_with_a_data_executor(tmp_path):
    import accelkit.facades.cerebras as cstorch

    x, y = _blobs()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)
    backend = cstorch.backend("CSX", mode="weight-streaming", artifact_dir=str(tmp_path))
    model = _mlp()
    compiled = cstorch.compile(model, backend)
    optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()

    @cstorch.trace
    def training_step(xb, yb):
        loss = criterion(compiled(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    seen = []

    @cstorch.step_closure
    def log(loss):
        seen.append(loss.item())

    executor = cstorch.utils.data.DataExecutor(loader, num_steps=12)  # 12 > 8 batches: the loader restarts
    for xb, yb in executor:
        log(training_step(xb, yb))
    assert executor.on_final_iteration and len(seen) == 12 and seen[-1] < seen[0]
    report = backend.report()
    assert report.steps == 12 and backend.simulated_time_s > 0 and report.sections_s["opt"] > 0
    assert backend.mode == "weight-streaming" and "weight streaming" in str(report)
    assert (tmp_path / "Sequential_train.akp" / "manifest.json").is_file()  # the compile artifact


# ---- Graphcore: PopTorch --------------------------------------------------------------------------
class PopNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = nn.Linear(16, 32)
        self.l2 = nn.Linear(32, 32)
        self.l3 = nn.Linear(32, 4)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels=None):
        out = self.l3(torch.relu(self.l2(torch.relu(self.l1(x)))))
        if labels is None:
            return out
        return out, self.loss(out, labels)


def test_poptorch_training_and_inference_models_equal_plain_pytorch():
    import accelkit.facades.poptorch as poptorch

    x, y = _blobs()
    model = PopNet()
    ref = copy.deepcopy(model)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.2)
    train = poptorch.trainingModel(model, options=poptorch.Options(),
                                   optimizer=torch.optim.SGD(model.parameters(), lr=0.2))
    losses = []
    for i in range(0, 128, 16):
        out, loss = train(x[i:i + 16], y[i:i + 16])  # PopTorch returns what forward returns
        ref_opt.zero_grad()
        ref_out, ref_loss = ref(x[i:i + 16], y[i:i + 16])
        ref_loss.backward()
        ref_opt.step()
        assert torch.equal(out, ref_out.detach()) and torch.equal(loss, ref_loss.detach())
        losses.append(float(loss))
    assert losses[-1] < losses[0] and not out.requires_grad
    infer = poptorch.inferenceModel(model, poptorch.Options().deviceIterations(2))
    with torch.no_grad():
        assert torch.equal(infer(x[:32]), ref(x[:32]))  # two device iterations, outputs concatenated
    report = str(train.report())
    assert train.simulated_time_s > 0 and "MODELLED on gc200" in report and "1 IPU" in report

    class NoLoss(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(16, 4)

        def forward(self, x):
            return self.fc(x)

    with pytest.raises(poptorch.PopTorchError, match="return its loss"):
        poptorch.trainingModel(NoLoss())(x[:16])
    with pytest.raises(poptorch.PopTorchError, match="bfloat16"):
        poptorch.inferenceModel(_mlp().bfloat16())(x[:16].bfloat16())


def test_poptorch_splits_a_batch_passed_inside_a_tuple_per_device_iteration():
    """PyTorch Lightning's IPU strategy calls the trainingModel with its batch as one ``(x, y)`` argument and the
    batch index as a tensor: each device iteration gets its own micro-batch of both (it got the whole combined
    batch, 500 times over, in Graphcore's shakespeare-rnn example), and the steps equal plain PyTorch's on those
    micro-batches. Lightning also asks whether IPUs are there and reads the executor's ``_executable``."""
    import accelkit.facades.poptorch as poptorch

    class LightningShaped(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = PopNet()
            self.seen: list[int] = []

        def forward(self, batch, batch_idx):
            x, y = batch
            self.seen.append(x.shape[0])
            return self.net(x, y)[1]

    x, y = _blobs()
    model = LightningShaped()
    ref = copy.deepcopy(model.net)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.2)
    train = poptorch.trainingModel(model, options=poptorch.Options().deviceIterations(4),
                                   optimizer=torch.optim.SGD(model.parameters(), lr=0.2))
    assert poptorch.ipuHardwareIsAvailable() and poptorch.ipuHardwareVersion() == "ipu2"
    assert train._executable is None and not train.isCompiled()
    loss = train((x[:32], y[:32]), torch.zeros(4))
    assert train._executable is train.program and train.isCompiled()
    assert set(model.seen[-4:]) == {8}  # four device iterations of 8 samples each, not 32 four times
    for i in range(0, 32, 8):
        ref_opt.zero_grad()
        ref_loss = ref(x[i:i + 8], y[i:i + 8])[1]
        ref_loss.backward()
        ref_opt.step()
    assert torch.equal(loss, ref_loss.detach())  # the call's last iteration (OutputMode.Final), bit for bit
    assert all(torch.equal(p, q) for p, q in zip(model.net.parameters(), ref.parameters(), strict=True))
    assert train.report().samples == 32


def test_poptorch_beginblock_pipelines_over_ipus_and_replicas_multiply_them():
    import accelkit.facades.poptorch as poptorch

    class PipeNet(PopNet):
        def forward(self, x, labels):
            out = super().forward(x)
            per_sample = nn.functional.cross_entropy(out, labels, reduction="none")
            return poptorch.identity_loss(per_sample, reduction="mean"), out  # the marked output is the loss

    x, y = _blobs(64)
    model = PipeNet()
    model.l2 = poptorch.BeginBlock(model.l2, "middle", ipu_id=1)
    model.l3 = poptorch.BeginBlock(model.l3, "head", ipu_id=2)
    assert poptorch.pipeline_plan(model).ipus == 3
    opts = poptorch.Options(target="bow").replicationFactor(2)
    opts.Training.gradientAccumulation(4)
    ref = copy.deepcopy(model)
    train = poptorch.trainingModel(model, opts, optimizer=torch.optim.SGD(model.parameters(), lr=0.2))
    with pytest.raises(poptorch.PopTorchError, match="micro-batches"):
        train(x[:12], y[:12])  # 12 samples do not split into 2 replicas x 4 accumulated micro-batches
    loss, _ = train(x[:32], y[:32])
    prog = train.program
    assert (prog.parallel.pipeline, prog.parallel.data, prog.chips, prog.target) == (3, 2, 6, "bow")
    # the blocks place the layers, forward, backward and update alike: l1 before the first block on IPU 0
    chip = {name: r.chip for r in prog.placement.regions for name in r.kernels}
    on = {}
    for k in prog.kernels:
        layer = k.module.rsplit(".", 1)[-1]
        if layer in ("l1", "l2", "l3"):
            on.setdefault(layer, set()).add(chip[k.name])
    assert on == {"l1": {0}, "l2": {1}, "l3": {2}}
    assert "pipeline over 3 IPUs" in str(train.report()) and "6 IPU(s)" in str(train.report())
    # gradient accumulation over 4 micro-batches equals one step on the whole batch, up to summation order
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.2)
    last = ref(x[24:32], y[24:32])[0].detach()  # OutputMode.Final: the last micro-batch's loss, as PopTorch returns
    ref_loss = ref(x[:32], y[:32])[0]
    ref_loss.backward()
    ref_opt.step()
    torch.testing.assert_close(loss, last)
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q)


def test_poptorch_options_effect_on_the_clock():
    from accelkit.constants import value
    from accelkit.facades.poptorch import PopTorchError, throughput

    x, y = _blobs(8)
    base, iters, accum, both = throughput.option_effects(PopNet(), (x, y), [(1, 1, 1), (1, 1, 16), (1, 8, 1),
                                                                            (4, 8, 16)])
    assert (base.combined_batch, iters.combined_batch, accum.combined_batch, both.combined_batch) == (8, 128, 64, 4096)
    assert both.ipus == 4 and both.round_trips_per_1k == pytest.approx(1000 / 4096)
    # device iterations: the same weight update, the host round trip paid once per 16 of them
    assert iters.update_s == base.update_s and iters.round_trip_s == base.round_trip_s
    assert iters.call_s == pytest.approx(16 * (base.update_s + base.feed_s) + base.round_trip_s)
    assert iters.per_update_s < base.per_update_s and iters.host_share < base.host_share
    assert base.round_trip_s == pytest.approx(2 * value("HOST_TRANSFER_LATENCY_S"))  # a transfer in and one out
    # the executor's own clock carries the same host link: the round trip shared by the call's 16 iterations
    import accelkit.facades.poptorch as poptorch

    train = poptorch.trainingModel(PopNet(), options=throughput.options(1, 1, 16))
    rep = train.compile(*(t.repeat(16, *([1] * (t.dim() - 1))) for t in (x, y))).report
    assert rep.device_iterations == 16 and rep.io_s == pytest.approx(iters.feed_s + iters.round_trip_s / 16)
    assert base.feed_s > 0 and accum.feed_s == pytest.approx(8 * base.feed_s, rel=0.01)  # 8 micro-batches' inputs, 1 loss
    assert iters.feed_s == base.feed_s > value("IPU_STREAM_COPY_S")  # each iteration's copy syncs with the host
    # gradient accumulation: 8 micro-batches, one optimizer update: longer updates, less time per sample
    assert 4 * base.update_s < accum.update_s < 8 * base.update_s and accum.per_sample_s < base.per_sample_s
    assert both.per_sample_s < min(iters.per_sample_s, accum.per_sample_s)
    assert "MODELLED on gc200" in throughput.summary([base, both]) and "4,096" in throughput.summary([both])
    with pytest.raises(PopTorchError, match="batch dimension"):
        throughput.effect(PopNet(), (torch.tensor(1.0),), throughput.options())


# ---- Groq: GroqFlow ---------------------------------------------------------------------------------
class GroqNet(nn.Module):
    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.fc = nn.Linear(16, width)
        self.out = nn.Linear(width, 4)

    def forward(self, x):
        return self.out(torch.relu(self.fc(x)))


def test_groqit_builds_once_loads_from_cache_and_rebuilds_a_changed_model(tmp_path):
    from accelkit.facades.groqflow import groqit

    x = torch.randn(8, 16)
    model = GroqNet().eval()
    gmodel = groqit(model, {"x": x}, cache_dir=tmp_path, build_name="net", monitor=False)
    assert gmodel.state.build_status == "successful_build" and not gmodel.state.loaded_from_cache
    state = json.loads((tmp_path / "net" / "state.json").read_text())
    assert state["build_status"] == "successful_build" and state["num_chips_used"] == 1

    again = groqit(model, {"x": x}, cache_dir=tmp_path, build_name="net", monitor=False)
    assert again.state.loaded_from_cache  # same structure, same input shapes: a cache hit
    with torch.no_grad():
        ref = model(x)
    out = again(x=x)
    assert out.shape == ref.shape and not torch.equal(out.float(), ref)  # GroqFlow's fp16, really
    assert (out.float() - ref).abs().max() / ref.abs().max() <= TOLERANCE["fp16"]
    assert torch.equal(again(x), out)  # positional too; a fixed schedule gives the same answer
    perf = again.estimate_performance()
    assert perf.latency > 0 and perf.throughput > 0 and perf.label == "modelled" and "MODELLED" in str(perf)

    with pytest.warns(UserWarning, match="rebuilding"):
        wider = groqit(GroqNet(width=64), {"x": x}, cache_dir=tmp_path, build_name="net", monitor=False)
    assert not wider.state.loaded_from_cache
    assert not groqit(GroqNet(width=64), {"x": x}, cache_dir=tmp_path, build_name="net", rebuild="always",
                      monitor=False).state.loaded_from_cache
    with pytest.raises(ValueError, match="pad the inputs"):
        wider(x=torch.randn(4, 16))

    with torch.device("meta"):  # ~200 M weights: more than one TSP's 231 MB of SRAM holds in fp16
        big = nn.Sequential(nn.Linear(8192, 8192), nn.Linear(8192, 8192), nn.Linear(8192, 8192))
    gbig = groqit(big, torch.randn(1, 8192, device="meta"), cache_dir=tmp_path, build_name="big", monitor=False)
    assert gbig.state.num_chips_used > 1 and gbig.estimate_performance().chips == gbig.state.num_chips_used
