"""ak.Session: the oracle (fp32 equals plain PyTorch exactly), precision emulation, accumulation, clock,
checkpoints with bit-exact resume, the prefetching loader, errors."""

from __future__ import annotations

import copy
import time

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.runtime import CheckpointError, PrefetchLoader, SessionError


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.body(x)


def _data(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 16, generator=g), torch.randint(0, 4, (n,), generator=g)


def _pair(opt_cls=torch.optim.AdamW, **opt_kw):
    torch.manual_seed(0)
    a = Net()
    b = copy.deepcopy(a)
    return a, opt_cls(a.parameters(), lr=1e-2, **opt_kw), b, opt_cls(b.parameters(), lr=1e-2, **opt_kw)


@pytest.mark.parametrize("target", ["sn40l", "tpu-v5e"])
def test_oracle_fp32_session_equals_plain_pytorch_over_steps(target):
    ref, ref_opt, model, opt = _pair()
    loss_fn = nn.CrossEntropyLoss()
    session = ak.Session(model, target=target, optimizer=opt, loss_fn=loss_fn, precision="fp32")
    x, y = _data()
    for i in range(5):
        xb, yb = x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]
        ref_opt.zero_grad()
        ref_out = ref(xb)
        ref_loss = loss_fn(ref_out, yb)
        ref_loss.backward()
        ref_opt.step()
        step = session.run(xb, labels=yb)
        assert torch.equal(step.outputs, ref_out.detach()) and torch.equal(step.loss, ref_loss.detach())
    for (n, p), (_, q) in zip(ref.named_parameters(), model.named_parameters(), strict=True):
        assert torch.equal(p, q), n
    for p, q in zip(ref_opt.state_dict()["state"].values(), opt.state_dict()["state"].values(), strict=True):
        assert all(torch.equal(p[k], q[k]) for k in p)


# issue 12's systems: their timing is their family's, their numerics PyTorch's
NEW_SYSTEMS = ["tpu-v4", "tpu-v5e", "gaudi2", "gaudi3", "mi250", "mi300x", "gh200", "inf2", "trn1"]


@pytest.mark.parametrize("target", NEW_SYSTEMS)
def test_oracle_holds_on_every_new_system(target):
    ref, ref_opt, model, opt = _pair()
    loss_fn = nn.CrossEntropyLoss()
    session = ak.Session(model, target=target, optimizer=opt, loss_fn=loss_fn, precision="fp32")
    x, y = _data(16)
    for i in range(2):
        xb, yb = x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]
        ref_opt.zero_grad()
        ref_loss = loss_fn(ref(xb), yb)
        ref_loss.backward()
        ref_opt.step()
        step = session.run(xb, labels=yb)
        assert torch.equal(step.loss, ref_loss.detach()) and step.simulated_time_s > 0
    assert all(torch.equal(p, q) for p, q in zip(ref.parameters(), model.parameters(), strict=True))


def test_clock_is_modelled_and_accumulates_per_section():
    _, _, model, opt = _pair()
    s = ak.Session(model, target="a100", optimizer=opt, loss_fn=nn.CrossEntropyLoss(), precision="bf16")
    x, y = _data(16)
    full = s.run(x, labels=y)
    fwd_only = s.run(x, labels=y, sections=["fwd"])
    assert 0 < fwd_only.simulated_time_s < full.simulated_time_s
    assert s.simulated_time_s == pytest.approx(full.simulated_time_s + fwd_only.simulated_time_s)
    report = s.report()
    text = str(report)
    assert "MODELLED" in text and "MEASURED" in text and report.steps == 2 and report.samples == 32
    prog = next(iter(s._programs.values()))
    assert full.simulated_time_s >= prog.report.sections_s["fwd"] + prog.report.sections_s["bckwd"]


def test_bf16_emulation_stays_within_documented_tolerance():
    torch.manual_seed(0)
    model = Net().eval()
    x, _ = _data(32)
    ref = model(x).detach()
    out = ak.Session(model, target="sn40l", precision="bf16").run(x).outputs
    assert not torch.equal(out.float(), ref)  # really lower precision
    rel = (out.float() - ref).abs().max() / ref.abs().max()
    assert rel <= ak.runtime.session.TOLERANCE["bf16"]


def test_gradient_accumulation_matches_one_big_batch():
    ref, ref_opt, model, opt = _pair(torch.optim.SGD)
    loss_fn = nn.CrossEntropyLoss()
    x, y = _data(16)
    ref_opt.zero_grad()
    loss_fn(ref(x), y).backward()
    ref_opt.step()
    s = ak.Session(model, target="a100", optimizer=opt, loss_fn=loss_fn, batch_size=16, micro_batch=4)
    step = s.run(x, labels=y)
    assert step.outputs.shape == (16, 4)
    for p, q in zip(ref.parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_model_computing_its_own_loss():
    class WithLoss(Net):
        def forward(self, x, y):
            logits = super().forward(x)
            return nn.functional.cross_entropy(logits, y), logits

    torch.manual_seed(0)
    m = WithLoss()
    s = ak.Session(m, target="gc200", optimizer=torch.optim.SGD(m.parameters(), lr=0.1), precision="fp16")
    x, y = _data(16)
    losses = [float(s.run(x, y).loss) for _ in range(5)]
    assert losses[-1] < losses[0]


def test_checkpoint_resume_is_bit_exact(tmp_path):
    loss_fn = nn.CrossEntropyLoss()
    x, y = _data(64)

    def session():
        torch.manual_seed(0)
        m = Net()
        return ak.Session(m, target="sn40l", optimizer=torch.optim.AdamW(m.parameters(), lr=1e-2), loss_fn=loss_fn)

    straight = session()
    for i in range(6):
        straight.run(x[i * 8:(i + 1) * 8], labels=y[i * 8:(i + 1) * 8])
    first = session()
    for i in range(3):
        first.run(x[i * 8:(i + 1) * 8], labels=y[i * 8:(i + 1) * 8])
    first.save_checkpoint(tmp_path / "ckpt")
    resumed = session()
    torch.manual_seed(123)  # the checkpoint restores the RNG too
    resumed.load_checkpoint(tmp_path / "ckpt")
    assert resumed.steps == 3 and resumed.simulated_time_s == first.simulated_time_s
    for i in range(3, 6):
        resumed.run(x[i * 8:(i + 1) * 8], labels=y[i * 8:(i + 1) * 8])
    for p, q in zip(straight.model.parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(p, q)
    assert resumed.simulated_time_s == pytest.approx(straight.simulated_time_s)


def test_bad_checkpoints_are_refused(tmp_path):
    m = Net()
    s = ak.Session(m, target="a100", optimizer=torch.optim.SGD(m.parameters(), lr=0.1), loss_fn=nn.MSELoss())
    with pytest.raises(CheckpointError, match="missing"):
        s.load_checkpoint(tmp_path / "nothing")
    s.save_checkpoint(tmp_path / "c")
    (tmp_path / "c" / "tensors.safetensors").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="corrupted"):
        s.load_checkpoint(tmp_path / "c")


def test_loader_prefetches_reports_waiting_and_input_bound_runs():
    class Slow:
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __iter__(self):
            for i in range(self.n):
                time.sleep(0.05)
                yield _data(8, seed=i)

    m = Net()
    s = ak.Session(m, target="h100", optimizer=torch.optim.SGD(m.parameters(), lr=0.1), loss_fn=nn.CrossEntropyLoss())
    for xb, yb in s.loader(Slow(5), progress=False):
        s.run(xb, labels=yb)
    assert s.input_wait_s > 0.01  # measured: the loop outran the slow loader
    assert any("input-bound" in n for n in s.report().notes)  # an H100 step is microseconds
    assert list(PrefetchLoader(range(5))) == [0, 1, 2, 3, 4]

    def broken():
        yield 1
        raise RuntimeError("bad sample 2")

    with pytest.raises(RuntimeError, match="bad sample"):
        list(PrefetchLoader(broken()))


def test_tensorboard_scalars(tmp_path):
    m = Net()
    s = ak.Session(m, target="a100", optimizer=torch.optim.SGD(m.parameters(), lr=0.1), loss_fn=nn.CrossEntropyLoss(),
                   log_dir=tmp_path)
    x, y = _data(8)
    s.run(x, labels=y)
    s.close()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(tmp_path))
    ea.Reload()
    assert {"loss", "modelled/samples_per_s"} <= set(ea.Tags()["scalars"])


@pytest.mark.parametrize(("kwargs", "text"), [
    ({"target": "nope"}, "wse2"),
    ({"target": "gc200", "precision": "bf16"}, "fp16"),
    ({"target": "a100", "precision": "fp8"}, "fp32"),
    ({"target": "a100", "batch_size": 10, "micro_batch": 4}, "divisible"),
])
def test_bad_sessions_name_the_fix(kwargs, text):
    with pytest.raises(ak.AccelkitError, match=text):
        ak.Session(Net(), **kwargs)


def test_bad_runs_name_the_fix():
    s = ak.Session(Net(), target="a100")
    with pytest.raises(SessionError, match="optimizer"):
        s.run(torch.randn(2, 16), sections=["fwd", "bckwd", "opt"])
    with pytest.raises(SessionError, match="loss"):
        s.run(torch.randn(2, 16), sections=["fwd", "bckwd"])
    with pytest.raises(SessionError, match="fwd"):
        s.run(torch.randn(2, 16), sections=["forward"])


def test_from_program_times_every_step_with_that_program_and_never_compiles():
    torch.manual_seed(0)
    model = Net().eval()
    x, _ = _data(8)
    prog = ak.compile(model, (x,), target="sn40l", precision="bf16")
    session = ak.Session.from_program(model, prog)
    step = session.run(x)
    assert session.compiled is prog and len(session._programs) == 1
    assert step.simulated_time_s == pytest.approx(prog.report.sections_s["fwd"] + prog.report.io_s)  # and the host link
    assert torch.allclose(step.outputs.float(), model(x), rtol=0, atol=0.05)  # bf16 emulation, real numerics
    assert session.precision == "bf16" and session.target == "sn40l"
