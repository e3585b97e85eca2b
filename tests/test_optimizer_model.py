"""What a training step's kernels move: the optimizer a step runs sets its modelled update and the optimizer state
the memory plan holds (``ak.compile(optimizer=...)``, a Session's own optimizer, an artifact's record of it), and a
fused kernel reads each tensor from outside itself once."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.errors import CompileError


def _mlp(wide: int = 256) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, wide), nn.ReLU(), nn.Linear(wide, 10)), (torch.randn(32, 64),)


def test_the_update_and_its_state_follow_the_optimizer() -> None:
    model, x = _mlp(wide=32768)  # 2.4 M weights: the update is bound by the bytes it moves, not by its launches
    params = sum(p.numel() for p in model.parameters())
    progs = {o: ak.compile(model, x, target="a100", precision="fp32", training=True, optimizer=o)
             for o in ("adamw", "adam", "sgd", "sgd-plain", "rmsprop")}
    state = {o: p.memory_plan.optimizer_bytes for o, p in progs.items()}
    # fp32 weights need no master copy: AdamW's two moments, SGD's one velocity, plain SGD nothing, RMSprop (with
    # momentum) its running average of squared gradients and a velocity
    assert state == {"adamw": 8 * params, "adam": 8 * params, "sgd": 4 * params, "sgd-plain": 0,
                     "rmsprop": 8 * params}
    opt_s = {o: p.report.sections_s["opt"] for o, p in progs.items()}
    assert opt_s["adamw"] > opt_s["sgd"] > opt_s["sgd-plain"] > 0  # fewer state tensors read and written
    assert opt_s["rmsprop"] > opt_s["sgd"]
    assert progs["sgd"].report.sections_s["fwd"] == pytest.approx(progs["adamw"].report.sections_s["fwd"])
    assert "training (sgd)" in progs["sgd"].report.summary()
    mixed = ak.compile(model, x, target="a100", precision="bf16", training=True)  # the default: AdamW
    assert mixed.optimizer == "adamw" and mixed.memory_plan.optimizer_bytes == 12 * params  # + the fp32 master
    assert ak.compile(model, x, target="a100").optimizer == ""  # inference runs no update
    with pytest.raises(CompileError, match="optimizer='lamb' is not one of"):
        ak.compile(model, x, target="a100", training=True, optimizer="lamb")


@pytest.mark.parametrize(("make", "kind"), [
    (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), "sgd"),
    (lambda p: torch.optim.SGD(p, lr=0.1), "sgd-plain"),
    (lambda p: torch.optim.Adam(p, lr=1e-3), "adam"),
    (lambda p: torch.optim.RMSprop(p, lr=1e-3, momentum=0.9), "rmsprop"),
    (lambda p: torch.optim.RMSprop(p, lr=1e-3), "adamw"),  # no model of its own: modelled as AdamW, and said
])
def test_a_session_models_its_own_optimizers_update(make, kind: str) -> None:
    model, (x,) = _mlp()
    y = torch.randint(0, 10, (32,))
    session = ak.Session(model, target="a100", optimizer=make(model.parameters()), loss_fn=nn.CrossEntropyLoss())
    session.run(x, labels=y)
    assert session.compiled is not None and session.compiled.optimizer == kind
    assert f"training ({kind})" in session.compiled.report.summary()


def test_an_artifact_keeps_the_optimizer(tmp_path) -> None:
    model, x = _mlp()
    prog = ak.compile(model, x, target="gc200", precision="fp32", training=True, optimizer="sgd")
    prog.save(tmp_path / "m.akp")
    back = ak.load(tmp_path / "m.akp")
    assert back.optimizer == "sgd" and back.memory_plan.optimizer_bytes == prog.memory_plan.optimizer_bytes
    assert back.report.step_time_s == pytest.approx(prog.report.step_time_s)


def test_a_fused_kernel_reads_each_outside_tensor_once_whichever_op_reads_it() -> None:
    from accelkit.compiler.passes import fusion
    from accelkit.graph.cost import node_bytes
    from accelkit.graph.ir import Node, TensorMeta

    def node(name: str, kind: str, args: list[str], shapes: list[tuple[int, ...]], out: tuple[int, ...]) -> Node:
        ins, outs = [TensorMeta(s, "float32") for s in shapes], [TensorMeta(out, "float32")]
        br, bw = node_bytes(kind, ins, outs)
        return Node(name=name, op=f"aten.{kind}", kind=kind, inputs=ins, outputs=outs, args=args, module="block",
                    bytes_read=br, bytes_written=bw, section="bckwd")

    x, w, saved = (64, 128), (128, 256), (64, 256)  # 32 kB, 128 kB, 64 kB
    group = [node("mm", "mm", ["x", "w"], [x, w], saved),
             node("gelu_bwd", "gelu_backward", ["mm", "saved"], [saved, saved], saved),  # reads `saved` from outside
             node("mul", "mul", ["gelu_bwd", "saved"], [saved, saved], saved)]  # ...and again: it stays on chip
    (kernel,), _ = fusion(group, family="gpu")
    assert len(kernel.nodes) == 3
    assert kernel.bytes_read == 4 * (64 * 128 + 128 * 256 + 64 * 256)  # x, w and the saved activation, once each
    assert kernel.bytes_written == 4 * 64 * 256  # the last op's result; the others stay inside


def test_where_the_optimizer_keeps_its_state() -> None:
    """Mixed precision keeps fp32 state and an fp32 master copy (12 bytes per weight for AdamW); a model whose own
    weights are 16-bit keeps its optimizer's state in 16 bits and no master (PyTorch's and PopTorch's optimizers:
    4 bytes per weight), unless told otherwise; fp32 state without a master copy is PopTorch's accum_type=float32."""
    model, x = _mlp(wide=4096)
    params = sum(p.numel() for p in model.parameters())

    def state(m: nn.Module, xs: tuple[torch.Tensor], **kw: object) -> ak.CompiledProgram:
        return ak.compile(m, xs, target="gc200", precision="fp16", training=True, **kw)

    mixed = state(model, x)
    assert mixed.optimizer_state == "mixed" and mixed.memory_plan.optimizer_bytes == 12 * params
    half = nn.Sequential(*[m for m in _mlp(wide=4096)[0]]).half()
    x16 = (x[0].half(),)
    own = state(half, x16)
    assert own.optimizer_state == "16-bit" and own.memory_plan.optimizer_bytes == 4 * params
    assert "training (adamw, 16-bit state)" in own.report.summary()
    assert "training (adamw)" in mixed.report.summary()
    assert state(half, x16, optimizer_state="fp32").memory_plan.optimizer_bytes == 8 * params
    assert state(half, x16, optimizer_state="mixed").memory_plan.optimizer_bytes == 12 * params
    assert state(model, x, optimizer="sgd", optimizer_state="16-bit").memory_plan.optimizer_bytes == 2 * params
    assert ak.compile(model, x, target="gc200", precision="fp16").optimizer_state == ""  # inference: no state
    with pytest.raises(CompileError, match="optimizer_state='bf16' is not one of"):
        state(model, x, optimizer_state="bf16")


def test_poptorch_keeps_a_half_models_optimizer_state_in_its_accum_type() -> None:
    from accelkit.facades import poptorch

    def program(**accum: torch.dtype) -> ak.CompiledProgram:
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).half()

        class WithLoss(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.net = net

            def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                out = self.net(x)
                return out, nn.functional.cross_entropy(out.float(), y)

        model = WithLoss()
        opt = poptorch.optim.AdamW(model.parameters(), lr=1e-3, **accum)
        trained = poptorch.trainingModel(model, poptorch.Options(), opt)
        trained(torch.randn(8, 16).half(), torch.randint(0, 4, (8,)))
        session = trained._session
        assert session is not None and session.compiled is not None
        return session.compiled

    assert program().optimizer_state == "16-bit"
    assert program(accum_type=torch.float32).optimizer_state == "fp32"


def test_an_artifact_keeps_where_the_state_lives(tmp_path) -> None:
    model, x = _mlp()
    prog = ak.compile(model, x, target="gc200", precision="fp16", training=True, optimizer_state="fp32")
    prog.save(tmp_path / "m.akp")
    back = ak.load(tmp_path / "m.akp")
    assert back.optimizer_state == "fp32" and back.memory_plan.optimizer_bytes == prog.memory_plan.optimizer_bytes


def test_a_mixed_precision_update_moves_fp32_weights_gradients_and_state() -> None:
    """A fused AdamW over an fp32 model trained at bf16 reads the fp32 weight, gradient and two moments and writes
    the weight and moments: 28 bytes a weight, as measured on an H100 (1.13 ms for BERT-base's 110 M weights); a
    model.half() model's 16-bit state moves half that."""
    model, x = _mlp(wide=4096)
    params = sum(p.numel() for p in model.parameters())

    def update_bytes(m: nn.Module, xs: tuple[torch.Tensor], precision: str) -> float:
        prog = ak.compile(m, xs, target="h100", precision=precision, training=True, stack="compiled")
        return sum(k.bytes_read + k.bytes_written for k in prog.kernels if k.section == "opt")

    assert update_bytes(model, x, "bf16") == pytest.approx(28 * params, rel=0.01)
    assert update_bytes(model, x, "fp32") == pytest.approx(28 * params, rel=0.01)
    half = nn.Sequential(*_mlp(wide=4096)[0]).half()
    assert update_bytes(half, (x[0].half(),), "fp16") == pytest.approx(14 * params, rel=0.01)
