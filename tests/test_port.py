"""ak.port: one oracle test per recipe (ported == original within the recipe's stated tolerance,
on the example and on fresh random inputs; the re-check no longer reports the finding; the original
model untouched), refusals beyond tolerance, and the exercise checker of notebook 03.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from accelkit.errors import PortError, UnknownNameError
from accelkit.porting import RECIPES, GatedMLP, PortResult, Tolerance, exercise_check, port
from accelkit.porting.recipes import UnrolledRNN, einsum_as_matmul, tensor_leaves


def assert_close(got: Any, ref: Any, tol: Tolerance) -> None:
    gl, rl = tensor_leaves(got), tensor_leaves(ref)
    assert len(gl) == len(rl)
    for a, b in zip(gl, rl, strict=True):
        assert a.shape == b.shape
        assert tol.allows(a.double(), b.double()), float((a.double() - b.double()).abs().max())


def check_oracle(model: nn.Module, result: PortResult, recipe: str, kind: str, fresh: list[Any]) -> None:
    """The ported model agrees with the original on fresh inputs; the finding is gone; original intact."""
    assert recipe in result.recipes, str(result)
    assert result.verified and result.max_abs_error <= result.tolerance.atol + 1e-12
    assert result.report_before.find(kind=kind)
    assert not [f for f in result.report_after.findings if f.kind == kind and f.severity == "error"], str(result)
    tol = RECIPES[recipe].tolerance
    with torch.no_grad():
        for inputs in fresh:
            args = inputs if isinstance(inputs, tuple) else (inputs,)
            want = model(*[a.clone() for a in args])
            got = result.model(*result.convert_inputs(tuple(a.clone() for a in args)))
            assert_close(got, want, tol)


def same_state(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) and sa[k].dtype == sb[k].dtype for k in sa)


# ---- tanh-gelu ----------------------------------------------------------------------------------
class GeluNet(nn.Module):
    def __init__(self, gain: float = 1.0) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(16, 4)
        with torch.no_grad():
            self.fc2.weight.mul_(gain)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.act(self.fc1(x))))


def test_tanh_gelu_oracle(tsp_without_erf: str) -> None:
    model = GeluNet().eval()
    before = copy.deepcopy(model)
    result = port(model, torch.randn(4, 8), tsp_without_erf)
    check_oracle(model, result, "tanh-gelu", "unsupported-op", [torch.randn(5, 8) * 3 for _ in range(3)])
    assert result.model.inner.act.approximate == "tanh"  # nn.GELU swapped in place, F.gelu wrapped ...
    assert type(model.act) is nn.GELU and model.act.approximate == "none"  # ... in the copy only
    assert same_state(model, before)
    assert 0 < result.max_abs_error <= 1e-3


def test_a_rewrite_beyond_its_tolerance_is_refused(tsp_without_erf: str) -> None:
    with pytest.raises(PortError) as info:
        port(GeluNet(), torch.randn(4, 8), tsp_without_erf, tolerance=1e-9)
    err = info.value
    assert err.recipe == "tanh-gelu" and err.error is not None and err.error > 1e-9
    assert "tanh-gelu" in str(err) and "1e-09" in str(err)
    with pytest.raises(PortError, match="tanh-gelu"):  # a large gain amplifies the GELU difference
        port(GeluNet(gain=1e4), torch.randn(4, 8) * 3, tsp_without_erf)


# ---- einsum / baddbmm ---------------------------------------------------------------------------
@pytest.mark.parametrize("eq,shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 6, 8)]),
    ("i,i->", [(7,), (7,)]),
    ("ij->ji", [(3, 4)]),
    ("bi,bj->bij", [(2, 3), (2, 4)]),
    ("...ij,...jk->...ik", [(2, 5, 3, 4), (2, 5, 4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bij,bjk", [(2, 3, 4), (2, 4, 5)]),
])
def test_einsum_as_matmul_matches_torch_einsum(eq: str, shapes: list[tuple[int, ...]]) -> None:
    ops = [torch.randn(s) for s in shapes]
    assert torch.allclose(einsum_as_matmul(eq, *ops), torch.einsum(eq, *ops), atol=1e-5, rtol=1e-5)


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        q = self.q(x)
        s = torch.einsum("bqd,bkd->bqk", q, x)
        s = torch.baddbmm(bias, q, x.transpose(1, 2), beta=0.5, alpha=0.25) + s
        return s.softmax(-1)


def test_einsum_to_matmul_oracle() -> None:
    model = Attention()
    result = port(model, (torch.randn(2, 5, 8), torch.randn(2, 5, 5)), "sn40l")
    check_oracle(model, result, "einsum-to-matmul", "unsupported-op",
                 [(torch.randn(2, 5, 8), torch.randn(2, 5, 5)) for _ in range(3)])
    ops = {n.kind for n in result.report_after.graph.nodes}  # type: ignore[union-attr]
    assert "bmm" in ops and not ops & {"einsum", "baddbmm"}


# ---- float64 -> float32 -------------------------------------------------------------------------
class Float64Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.fc(x)) + torch.ones(6, dtype=torch.float64)


def test_float64_to_float32_oracle() -> None:
    model = Float64Net().double()
    x = torch.randn(3, 6, dtype=torch.float64)
    result = port(model, x, "gc200")
    check_oracle(model, result, "float64-to-float32", "dtype", [torch.randn(4, 6, dtype=torch.float64)])
    assert result.example_inputs[0].dtype == torch.float32
    assert model.fc.weight.dtype == torch.float64  # the original keeps its dtype
    assert result.report_after.find(kind="dtype") == []


# ---- int64 -> int32 -----------------------------------------------------------------------------
class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(30, 8)
        self.head = nn.Linear(8, 5)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.head(self.emb(ids))  # (B, T, 5)
        return logits, F.cross_entropy(logits.transpose(1, 2), labels)


def test_int64_to_int32_oracle() -> None:
    model = Tagger()
    ids, labels = torch.randint(0, 30, (2, 6)), torch.randint(0, 5, (2, 6))
    result = port(model, (ids, labels), "tsp")
    check_oracle(model, result, "int64-to-int32", "dtype",
                 [(torch.randint(0, 30, (3, 6)), torch.randint(0, 5, (3, 6))) for _ in range(3)])
    assert [t.dtype for t in result.example_inputs] == [torch.int32, torch.int32]
    assert result.report_after.ok


# ---- where-for-if, keep-on-device -----------------------------------------------------------------
class Gate(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return torch.relu(x) * 2
        return torch.tanh(x)


class WithGate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.gate = Gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gate(self.fc(x))


def test_where_for_if_oracle_takes_both_branches() -> None:
    model = WithGate()
    result = port(model, torch.randn(3, 4), "tsp")
    fresh = [torch.randn(3, 4) + s for s in (-5.0, 5.0)]
    assert {bool(model.fc(x).sum() > 0) for x in fresh} == {True, False}
    check_oracle(model, result, "where-for-if", "data-dependent-control-flow", fresh)
    assert result.changes[0].module == "gate"
    assert result.max_abs_error == 0.0
    assert "where" in {n.kind for n in result.report_after.graph.nodes}  # type: ignore[union-attr]


class ItemGate(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = x.abs().max().item()
        if x.mean().item() > 0:
            return x / scale
        return -x


def test_keep_on_device_then_where_for_if() -> None:
    model = ItemGate()
    result = port(model, torch.randn(2, 5), "sn30")
    assert result.recipes == ["keep-on-device", "where-for-if"]
    check_oracle(model, result, "keep-on-device", "host-sync", [torch.randn(2, 5) + s for s in (-3.0, 3.0)])
    assert result.report_after.ok


# ---- pad-to-bucket -------------------------------------------------------------------------------
class RunningMean(nn.Module):
    """Causal: position t sees positions <= t only, so padding at the end changes nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x).cumsum(1)  # (B, T, 3)
        return h / torch.arange(1, x.shape[1] + 1, dtype=torch.float32).view(1, -1, 1)


class MeanPool(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).mean(1, keepdim=True) + x


def test_pad_to_bucket_oracle() -> None:
    model = RunningMean()
    result = port(model, torch.randn(2, 10, 3), "tsp", dynamic_dims={"x": 1})
    check_oracle(model, result, "pad-to-bucket", "dynamic-shape", [torch.randn(2, n, 3) for n in (3, 9, 16)])
    assert result.model.bucket(10) == 16
    [x_meta] = result.report_after.graph.inputs.values()  # type: ignore[union-attr]
    assert x_meta.shape == (2, 10, 3)
    padded = [n for n in result.report_after.graph.nodes if n.kind == "pad"]  # type: ignore[union-attr]
    assert padded and padded[0].outputs[0].shape == (2, 16, 3)


def test_pad_to_bucket_refused_when_padding_changes_the_answer() -> None:
    with pytest.raises(PortError) as info:
        port(MeanPool(), torch.randn(2, 10, 3), "tsp", dynamic_dims={0: 1})
    assert info.value.recipe == "pad-to-bucket" and info.value.error is not None and info.value.error > 1e-3


# ---- unroll-rnn ----------------------------------------------------------------------------------
class Seq2Vec(nn.Module):
    def __init__(self, kind: type[nn.RNNBase]) -> None:
        super().__init__()
        self.rnn = kind(4, 6, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(12, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out)


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU])
def test_unroll_rnn_oracle(kind: type[nn.RNNBase]) -> None:
    model = Seq2Vec(kind)
    result = port(model, torch.randn(2, 5, 4), "tsp")
    check_oracle(model, result, "unroll-rnn", "unsupported-op", [torch.randn(3, 5, 4)])
    assert isinstance(result.model.rnn, UnrolledRNN)
    assert result.model.state_dict().keys() == model.state_dict().keys()  # checkpoints still load


def test_unrolled_rnn_returns_the_same_states() -> None:
    for rnn in (nn.LSTM(3, 4, num_layers=2), nn.GRU(3, 4, bidirectional=True), nn.RNN(3, 4, nonlinearity="relu")):
        x = torch.randn(6, 2, 3)
        want, got = rnn(x), UnrolledRNN(rnn)(x)
        assert_close(got, want, Tolerance(1e-5, 1e-5))


# ---- out-of-place, tensor-outputs, loss-in-forward --------------------------------------------------
class InPlace(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        return x + 1


def test_out_of_place_oracle_leaves_the_callers_tensor_alone() -> None:
    model = InPlace()
    result = port(model, torch.randn(2, 3), "gc200")
    check_oracle(model, result, "out-of-place", "inplace-on-input", [torch.randn(4, 3)])
    x = torch.randn(2, 3)
    keep = x.clone()
    result.model(x)
    assert torch.equal(x, keep)


class Box:
    def __init__(self, t: torch.Tensor, label: str) -> None:
        self.t, self.label = t, label


class BoxOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> Box:
        return Box(self.fc(x), "logits")


def test_tensor_outputs_oracle() -> None:
    model = BoxOut()
    result = port(model, torch.randn(2, 3), "sn40l")
    check_oracle(model, result, "tensor-outputs", "non-tensor-output", [torch.randn(5, 3)])
    assert isinstance(result.model(torch.randn(1, 3)), torch.Tensor)


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def test_loss_in_forward_oracle() -> None:
    model, loss_fn = Regressor(), nn.MSELoss()
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    result = port(model, x, "gc200", training=True, loss_fn=loss_fn, labels=y)
    assert result.recipes == ["loss-in-forward"]
    assert result.report_after.find(kind="loss-outside-model") == [] and result.report_after.ok
    x2, y2 = torch.randn(8, 4), torch.randn(8, 1)
    out, loss = result.model(*result.convert_inputs(x2, labels=y2))
    assert torch.allclose(out, model(x2)) and torch.allclose(loss, loss_fn(model(x2), y2))
    with pytest.raises(PortError, match="loss"):
        port(model, x, "gc200", training=True)  # no loss_fn: the recipe cannot guess one


# ---- the rest ------------------------------------------------------------------------------------
def test_unknown_target() -> None:
    with pytest.raises(UnknownNameError):
        port(InPlace(), torch.randn(2, 3), "nope")


def test_nothing_to_do_on_a_gpu() -> None:
    result = port(GeluNet(), torch.randn(2, 8), "a100")
    assert result.changes == [] and result.verified and result.max_abs_error == 0.0


def test_gpt2_ports_to_tsp() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=32, use_cache=False,
                     activation_function="gelu")
    model = GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 100, (1, 8))
    result = port(model, (ids,), "tsp")
    # exact GELU stays (GroqFlow's BERT proof points compile it); only the int64 ids are narrowed
    assert set(result.recipes) == {"int64-to-int32"}
    assert result.report_after.ok, result.report_after.summary()
    assert result.verified and result.max_abs_error <= 1e-3


def test_port_result_renders(tsp_without_erf: str) -> None:
    result = port(GeluNet(), torch.randn(2, 8), tsp_without_erf)
    text = str(result)
    assert "tanh-gelu" in text and "verified" in text and "tolerance tanh-gelu" in text
    assert "<table>" in result._repr_html_()


# ---- the notebook exercise ------------------------------------------------------------------------
class GatedMLPWhere(GatedMLP):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        h = torch.where(h.mean() > 0, torch.relu(h), torch.tanh(h))
        return self.fc2(h)


def test_exercise_check_passes_the_solution_and_fails_the_original(capsys: pytest.CaptureFixture[str]) -> None:
    assert exercise_check(GatedMLPWhere())
    assert "Exercise solved." in capsys.readouterr().out
    assert not exercise_check(GatedMLP())
    out = capsys.readouterr().out
    assert "[FAIL]" in out and "data-dependent" in out


# ---- gradients: a port that keeps the outputs must keep the gradients for training ----------------
class SqrtIfPositive(nn.Module):
    """Issue 15: where-for-if gives forward error 0, but the untaken sqrt branch makes the gradients NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if h.min() > 0:
            return torch.sqrt(h)
        return h


class ScaleByMax(nn.Module):
    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h * h.abs().max().item()


class ItemScale(nn.Module):
    """Issue 15: keep-on-device lets the gradient flow through what `.item()` cut off."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = ScaleByMax()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale(self.fc(x))


@pytest.mark.parametrize(("model_cls", "recipe", "what"), [(SqrtIfPositive, "where-for-if", "turns gradients NaN"),
                                                         (ItemScale, "keep-on-device", "changes gradients")])
def test_a_recipe_that_changes_gradients_is_inference_only(model_cls: type[nn.Module], recipe: str,
                                                           what: str) -> None:
    torch.manual_seed(0)
    model, x = model_cls(), torch.randn(3, 4)
    result = port(model, x, "tsp")  # inference: ported, and the result says plainly it is inference-only
    assert recipe in result.recipes
    assert any(n.startswith(f"inference only: recipe {recipe} is inference-only") and what in n for n in result.notes)
    assert "inference only" in str(result)
    before = copy.deepcopy(model.state_dict())
    try:  # for training the recipe is refused (or, for .item() under training capture, never applied)
        trained = port(model, x, "tsp", training=True)
        assert recipe not in trained.recipes
    except PortError as err:
        assert err.recipe == recipe and err.fix and f"{recipe} is inference-only" in str(err)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())  # the caller's model untouched


def test_where_for_if_with_nan_gradients_is_refused_for_training() -> None:
    torch.manual_seed(0)
    with pytest.raises(PortError, match="where-for-if is inference-only: .* turns gradients NaN for fc.weight"):
        port(SqrtIfPositive(), torch.randn(3, 4), "tsp", training=True)


def test_a_port_for_training_keeps_the_gradients() -> None:
    torch.manual_seed(0)
    model, x = WithGate(), torch.randn(3, 4)
    result = port(model, x, "tsp", training=True)
    assert result.recipes == ["where-for-if"] and not result.notes
    for m in (model, result.model):
        m.zero_grad()
        m(x).sum().backward()
    for (n, p), q in zip(model.named_parameters(), result.model.parameters(), strict=True):
        assert torch.allclose(p.grad, q.grad), n  # type: ignore[arg-type]


class HalveWhileBig(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while x.abs().sum() > 1:
            x = x / 2
        return x


def test_a_loop_on_a_tensor_is_refused_with_its_line_not_a_hang() -> None:
    with pytest.raises(PortError, match="loop whose condition is a tensor") as err:
        port(HalveWhileBig(), torch.randn(2, 3) * 10, "tsp")
    assert "test_port.py" in (err.value.where or "") and "while x.abs().sum() > 1" in (err.value.where or "")
    assert err.value.recipe == "where-for-if" and "range(N)" in (err.value.fix or "")
