"""ak.check: each kind of finding, on small hand-written models and on transformers models.

Expected source lines are computed with `inspect`, never hard-coded, so editing this file keeps
the tests honest.
"""

from __future__ import annotations

import inspect
import math
import os

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import accelkit as ak
from accelkit.errors import UnknownNameError
from accelkit.porting import RECIPES, CompatibilityReport, check, load_table
from accelkit.porting.support import TABLES_DIR

ACCELERATORS = ["wse2", "wse3", "sn30", "sn40l", "gc200", "bow", "tsp"]


def line_of(obj: object, text: str) -> str:
    """``file.py:line`` of the first line of ``obj``'s source containing ``text``."""
    src, start = inspect.getsourcelines(obj)  # type: ignore[arg-type]
    for i, line in enumerate(src):
        if text in line:
            return f"{os.path.basename(inspect.getsourcefile(obj) or '?')}:{start + i}"  # type: ignore[arg-type]
    raise AssertionError(f"{text!r} not in the source of {obj}")


# ---- small models, each with one problem ------------------------------------------------------
class Gelus(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = nn.GELU()  # exact (erf)
        self.act_tanh = nn.GELU(approximate="tanh")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.fc(x))
        h = self.act_tanh(h)
        return F.gelu(h)


class Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if y.sum() > 0:
            return y * 2
        return -y


class ItemScale(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = x.abs().max().item()
        return x / scale


class Masked(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[x > 0].sum() + x.mean()


class Seq(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).cumsum(1)


class Double(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.fc(x))


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(30, 8)
        self.head = nn.Linear(8, 5)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.head(self.emb(ids))
        return logits, F.cross_entropy(logits.transpose(1, 2), labels)


class Contract(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        s = torch.einsum("bqd,bkd->bqk", q, k)
        return torch.baddbmm(s, q, k.transpose(1, 2), beta=0.5)


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(4, 6, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return out


class InPlace(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        return x + 1


class Box:
    def __init__(self, t: torch.Tensor) -> None:
        self.t = t


class BoxOut(nn.Module):
    def forward(self, x: torch.Tensor) -> Box:
        return Box(x * 2)


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


# ---- targets ------------------------------------------------------------------------------------
def test_unknown_target_raises_the_catalog_error() -> None:
    with pytest.raises(UnknownNameError, match="no system called 'tpu9'"):
        check(Double(), torch.randn(2, 4), "tpu9")


def test_exact_gelu_flagged_where_erf_is_missing_with_module_and_line(tsp_without_erf: str) -> None:
    x = torch.randn(2, 8)
    r = check(Gelus(), x, tsp_without_erf)
    gelu = {f.source: f for f in r.find(kind="unsupported-op", op="aten.gelu.default")}
    module_line, functional_line = line_of(Gelus.forward, "self.act(self.fc(x))"), line_of(Gelus.forward, "F.gelu(h)")
    assert set(gelu) == {module_line, functional_line}, r.summary()  # the tanh one is fine
    assert gelu[module_line].module == "act" and gelu[functional_line].module == "<root>"
    for f in gelu.values():
        assert f.count == 1 and f.recipe == "tanh-gelu" and f.severity == "error"
        assert f.rule_source.startswith("test fixture")
    assert not r.ok
    assert check(Gelus(), x, "a100").ok  # GPUs have erf


def test_exact_gelu_compiles_on_tsp_as_groqflows_bert_proof_points_do() -> None:
    # GroqFlow builds stock Hugging Face BERT (exact GELU, i.e. erf) with groqit:
    # https://github.com/groq/groqflow/tree/main/proof_points/natural_language_processing/bert
    x = torch.randn(2, 8)
    assert check(Gelus(), x, "tsp").find(kind="unsupported-op") == []
    assert not load_table("static-schedule").op_rule("aten.erf.default", "erf", {})

def test_data_dependent_if_is_a_finding_at_the_if_line_not_an_exception() -> None:
    r = check(Branchy(), torch.randn(2, 4), "sn40l")
    assert not r.captured and not r.ok
    [f] = r.find(kind="data-dependent-control-flow")
    assert f.source == line_of(Branchy.forward, "if y.sum() > 0")
    assert f.recipe == "where-for-if"
    assert "torch.where" in f.fix


def test_item_is_a_host_sync_error_on_accelerators_and_a_warning_on_gpus() -> None:
    x = torch.randn(3, 4)
    [f] = check(ItemScale(), x, "gc200").find(kind="host-sync")
    assert f.severity == "error" and f.recipe == "keep-on-device"
    assert f.source == line_of(ItemScale.forward, ".item()")
    [g] = check(ItemScale(), x, "h100").find(kind="host-sync")
    assert g.severity == "warning"


def test_data_dependent_output_size_is_a_dynamic_shape_finding() -> None:
    r = check(Masked(), torch.randn(4, 4), "tsp")  # capture itself cannot size x[mask]
    [f] = r.find(kind="dynamic-shape")
    assert f.severity == "error"
    assert f.source == line_of(Masked.forward, "x[x > 0]")


def test_declared_dynamic_dims_error_on_static_schedule_warning_elsewhere() -> None:
    x = torch.randn(2, 10, 6)
    [f] = check(Seq(), x, "tsp", dynamic_dims={"x": 1}).find(kind="dynamic-shape")
    assert f.severity == "error" and f.recipe == "pad-to-bucket"
    assert f.input_name == "x" and "dim 1" in f.op and "one compile per shape" in f.reason
    assert f.source == line_of(Seq, "def forward")
    [w] = check(Seq(), x, "sn40l", dynamic_dims={0: 1}).find(kind="dynamic-shape")
    assert w.severity == "warning"
    assert check(Seq(), x, "a100", dynamic_dims={0: 1}).find(kind="dynamic-shape") == []


@pytest.mark.parametrize("target", ACCELERATORS)
def test_float64_is_an_error_on_every_accelerator(target: str) -> None:
    r = check(Double().double(), torch.randn(2, 4, dtype=torch.float64), target)
    found = r.find(kind="dtype")
    assert found and all(f.severity == "error" and f.recipe == "float64-to-float32" for f in found)
    assert {f.input_name for f in found} >= {"x"}
    ops = {f.op: f for f in found}
    assert ops["aten.linear.default"].source == line_of(Double.forward, "torch.tanh")
    assert ops["aten.linear.default"].module == "fc"


def test_float64_is_fine_on_a_gpu() -> None:
    assert check(Double().double(), torch.randn(2, 4, dtype=torch.float64), "a100").find(kind="dtype") == []


def test_int64_labels_warn_on_sambanova_and_groq() -> None:
    ids, labels = torch.randint(0, 30, (2, 5)), torch.randint(0, 5, (2, 5))
    warn = check(Tagger(), (ids, labels), "sn40l").find(kind="dtype")
    by_input = {f.input_name: f for f in warn if f.input_name}
    assert set(by_input) == {"ids", "labels"}
    assert all(f.severity == "warning" and f.recipe == "int64-to-int32" for f in warn)
    assert "int32" in by_input["labels"].reason and "experimental" in by_input["labels"].reason
    narrowed = check(Tagger(), (ids, labels), "tsp").find(kind="dtype")
    assert narrowed and all(f.severity == "warning" and "narrowed" in f.reason for f in narrowed)


def test_einsum_and_baddbmm_unsupported_on_sambanova() -> None:
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    r = check(Contract(), (q, k), "sn30")
    ops = {f.op: f for f in r.find(kind="unsupported-op")}
    assert set(ops) == {"aten.einsum.default", "aten.baddbmm.default"}
    assert ops["aten.einsum.default"].source == line_of(Contract.forward, "torch.einsum")
    assert all(f.recipe == "einsum-to-matmul" for f in ops.values())
    assert check(Contract(), (q, k), "wse2").ok


def test_fused_lstm_unsupported_on_tsp_and_wse_with_module_path() -> None:
    x = torch.randn(2, 7, 4)
    for target in ("tsp", "wse3"):
        [f] = check(Recurrent(), x, target).find(kind="unsupported-op")
        assert f.op == "aten.lstm.input" and f.module == "rnn" and f.recipe == "unroll-rnn"
        assert f.source == line_of(Recurrent.forward, "self.rnn(x)")
    assert check(Recurrent(), x, "gc200").find(kind="unsupported-op") == []


def test_inplace_write_to_an_input() -> None:
    [f] = check(InPlace(), torch.randn(2, 3), "gc200").find(kind="inplace-on-input")
    assert f.severity == "error" and f.recipe == "out-of-place" and f.input_name == "x"
    assert f.source == line_of(InPlace.forward, "x.mul_(2)")
    assert "PopTorch" in f.rule_source
    assert check(InPlace(), torch.randn(2, 3), "a100").find(kind="inplace-on-input") == []


def test_non_tensor_output() -> None:
    r = check(BoxOut(), torch.randn(3), "wse2")
    [f] = r.find(kind="non-tensor-output")
    assert f.recipe == "tensor-outputs"
    assert f.source == line_of(BoxOut, "def forward")


def test_the_output_check_runs_forward_once_per_model_and_input_signature() -> None:
    """A sweep over sequence lengths checks outputs once; a changed model (a port swaps a module) or another
    input dtype is checked afresh."""
    from accelkit.porting.outputs import non_tensor_outputs

    class Counted(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor):  # type: ignore[no-untyped-def]
            self.calls += 1
            return self.lin(x), "tag"

    m = Counted()
    for n in (3, 5, 9):
        found = non_tensor_outputs(m, torch.randn(2, n, 4))
        assert found is not None and found.count == 1
    assert m.calls == 2  # the check, then the run that finds the ``return`` line
    non_tensor_outputs(m, torch.randn(2, 3, 4).half())  # another dtype
    assert m.calls == 4
    m.lin = nn.Linear(4, 4)  # the model changed: checked again
    non_tensor_outputs(m, torch.randn(2, 3, 4))
    assert m.calls == 6


def test_the_capture_lists_non_tensor_outputs_so_a_tensor_only_model_is_not_run_again() -> None:
    """Export records forward's outputs: a graph whose outputs are all tensors answers without a fake forward
    (seconds on a 70B model); one with a constant runs it to find the ``return`` line."""
    from accelkit.graph import capture
    from accelkit.porting.outputs import non_tensor_outputs

    class Counted(nn.Module):
        def __init__(self, extra: tuple) -> None:  # type: ignore[type-arg]
            super().__init__()
            self.calls, self.extra = 0, extra
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor):  # type: ignore[no-untyped-def]
            self.calls += 1
            return (self.lin(x), *self.extra)

    plain, tagged = Counted((None,)), Counted(("tag", 3))
    x = torch.randn(2, 4)
    g_plain, g_tagged = capture(plain, x), capture(tagged, x)
    assert g_plain.non_tensor_outputs == () and g_tagged.non_tensor_outputs == ("str", "int")
    calls = plain.calls
    assert non_tensor_outputs(plain, x, g_plain) is None and plain.calls == calls  # forward did not run
    found = non_tensor_outputs(tagged, x, g_tagged)
    assert found is not None and found.count == 2 and "str" in found.detail
    assert check(tagged, x, "wse2", graph=g_tagged).find(kind="non-tensor-output")


def test_loss_outside_model_only_when_training_on_poptorch_like_targets() -> None:
    x = torch.randn(4, 4)
    [f] = check(Regressor(), x, "bow", training=True).find(kind="loss-outside-model")
    assert f.severity == "error" and f.recipe == "loss-in-forward"
    assert check(Regressor(), x, "bow").find(kind="loss-outside-model") == []
    assert check(Regressor(), x, "a100", training=True).find(kind="loss-outside-model") == []


def test_graph_can_be_reused() -> None:
    from accelkit.graph import capture

    x = torch.randn(2, 8)
    g = capture(Gelus(), x)
    assert check(Gelus(), x, "tsp", graph=g).findings == check(Gelus(), x, "tsp").findings


def test_report_renders_as_text_and_html() -> None:
    r = check(Recurrent(), torch.randn(2, 7, 4), "tsp", dynamic_dims={"x": 1})
    text = str(r)
    for word in ("kind", "op", "count", "module", "source", "unsupported-op", "aten.lstm.input", "fix:",
                 "unroll-rnn", "NOT ready", "rule (illustrative):", "rule (derived):"):
        assert word in text
    page = r._repr_html_()
    assert "<table" in page and "aten.lstm.input" in page and "unroll-rnn" in page
    # the why and the fix get a full-width row under their finding; the evidence is said once
    assert page.count("colspan='4'") == len(r.findings) and "rule (derived):" in page
    assert "<b>derived</b>: derived:" not in page and "(derived): derived:" not in page
    assert isinstance(r, CompatibilityReport)


# ---- transformers models ------------------------------------------------------------------------
def test_gpt2_exact_gelu_points_into_the_transformers_file(tsp_without_erf: str) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.activations import GELUActivation

    cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=32, use_cache=False,
                     activation_function="gelu")
    model = GPT2LMHeadModel(cfg).eval()
    r = check(model, (torch.randint(0, 100, (1, 8)),), tsp_without_erf)
    [f] = r.find(kind="unsupported-op", op="gelu")
    assert f.count == 2
    assert f.modules == ("transformer.h.0.mlp.act", "transformer.h.1.mlp.act")
    assert f.source == line_of(GELUActivation.forward, "self.act(")


def test_llama_70b_is_too_large_for_one_tsp_and_the_report_says_how_many() -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    from accelkit.graph import capture

    with torch.device("meta"):
        model = LlamaForCausalLM(LlamaConfig(
            hidden_size=8192, num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8,
            intermediate_size=28672, vocab_size=128256, use_cache=False))
    ids = torch.zeros(1, 16, dtype=torch.long, device="meta")
    graph = capture(model, (ids,))
    r = check(model, (ids,), "tsp", graph=graph)
    [f] = r.find(kind="too-large")
    tsp = ak.hardware.get("tsp")
    assert tsp.on_chip_memory_bytes == 220 * 2**20  # ISCA 2020's 220 MiB (231 MB)
    room = ak.hardware.capacity.usable_bytes(tsp)["sram"]  # what the compiler may fill, as the memory plan
    expected = math.ceil(graph.param_count * 2 / room)  # fp16 weights / the TSP's usable SRAM
    assert f.chips_needed == expected and 600 <= expected <= 700
    assert ak.hardware.fits(graph.param_count, tsp, 2).chips_needed == expected  # one capacity computation
    assert f"{expected:,} chips" in f.reason and "x 2 bytes/parameter at float16" in f.reason
    assert f.severity == "error" and not r.ok
    # a wafer with MemoryX holds it: 141 GB against 2.4 PB of external memory
    assert check(model, (ids,), "wse2", graph=graph).find(kind="too-large") == []
    [t] = check(model, (ids,), "a100", graph=graph, training=True).find(kind="too-large")
    assert t.chips_needed == math.ceil(graph.param_count * 16 / 80e9)


# ---- the tables themselves ---------------------------------------------------------------------
def test_every_table_entry_has_a_source_and_a_known_recipe() -> None:
    families = [p.stem for p in TABLES_DIR.glob("*.toml") if p.stem != "common"]
    assert {"static-schedule", "bsp-tiles", "reconfigurable-dataflow", "wafer-dataflow", "gpu", "cpu"} <= set(families)
    for fam in families:
        for row in load_table(fam).entries():
            assert row["source"].strip(), (fam, row)
            assert not row["recipe"] or row["recipe"] in RECIPES, (fam, row)


def test_a_line_typed_in_a_notebook_cell_is_named_by_cell_and_line() -> None:
    """IPython compiles each cell into a temporary file (``/tmp/ipykernel_1/1776319593.py``) whose name means
    nothing to a learner: findings and capture errors name the cell and the line instead."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("import torch\nimport accelkit as ak", store_history=True)
        result = shell.run_cell(
            "class Branchy(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        if x.sum() > 0:\n"
            "            return x * 2\n"
            "        return x\n"
            "report = ak.check(Branchy(), (torch.randn(4),), target='sn40l')\n", store_history=True)
        result.raise_error()
        [f] = shell.user_ns["report"].find(kind="data-dependent-control-flow")
        number = shell.execution_count - 1  # the cell just run
        assert f.source == f"cell [{number}], line 3"
        assert "ipykernel" not in str(shell.user_ns["report"]) and ".py:" not in f.source
    finally:
        InteractiveShell.clear_instance()
