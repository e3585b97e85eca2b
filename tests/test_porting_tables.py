"""The op-support tables agree with what the vendors' own toolchains compile.

Every entry names its evidence; an illustrative restriction (no public evidence either way) is a warning, never
an error; and each vendor's public proof-point architectures compile for its family without a port.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.porting import check, port
from accelkit.porting.support import EVIDENCE, TABLES_DIR, evidence, load_table

FAMILIES = sorted(p.stem for p in TABLES_DIR.glob("*.toml") if p.stem != "common")


def _raw_entries() -> list[tuple[str, str, dict]]:
    out = []
    for path in sorted(TABLES_DIR.glob("*.toml")):
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        out += [(path.name, f"rules.{n}", e) for n, e in raw.get("rules", {}).items()]
        out += [(path.name, "ops " + ", ".join(e["ops"]), e) for e in raw.get("ops", [])]
        out += [(path.name, f"dtypes {e['dtype']}", e) for e in raw.get("dtypes", [])]
    return out


def test_every_entry_that_restricts_names_its_evidence() -> None:
    for file, what, e in _raw_entries():
        if "source" not in e:  # a family file that only turns a common rule off or down inherits its source
            assert set(e) <= {"severity", "reason", "fix"} and e.get("severity") in ("none", "warning", None), \
                (file, what)
            continue
        source = e["source"]
        assert len(source) > 20, (file, what, source)
        # anything firmer than accelkit's own choice points at the public evidence
        if evidence(source) in ("vendor", "derived") and not source.startswith("off by default"):
            assert "http" in source or "catalog" in source or "arithmetic" in source \
                or "parameter count" in source, (file, what, source)


def test_evidence_classes() -> None:
    assert evidence("illustrative: no public example") == "illustrative"
    assert evidence("derived: ISCA 2020") == "derived"
    assert evidence("unconfirmed: slides") == "unconfirmed"
    assert evidence("PopTorch User Guide (https://docs.graphcore.ai/...)") == "vendor"
    assert EVIDENCE[-1] == "illustrative"


@pytest.mark.parametrize("family", FAMILIES)
def test_illustrative_restrictions_are_warnings_at_most(family: str) -> None:
    table = load_table(family)
    entries = list(table.rules.values()) + list(table.ops) + list(table.dtypes.values())
    for e in entries:
        if evidence(e.source) == "illustrative":
            assert e.severity in ("warning", "none"), (family, e)
    # and the cap is what makes them so: the TSP's in-place rule is an error in the file, a warning here
    if family == "static-schedule":
        assert table.rule("inplace-on-input").severity == "warning"


def test_an_illustrative_finding_warns_and_compile_goes_ahead() -> None:
    class Recurrent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.LSTM(4, 6, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.rnn(x)[0]

    x = torch.randn(2, 5, 4)
    report = check(Recurrent(), x, "wse2")
    [f] = report.find(kind="unsupported-op")
    assert report.ok and f.severity == "warning" and f.evidence == "illustrative" and f.recipe == "unroll-rnn"
    assert ak.compile(Recurrent(), x, target="wse2").mode  # compiles; the warning suggests the rewrite


def _precision(target: str) -> str:
    """The chip's 16-bit type (bf16, else fp16), else fp32."""
    peaks = ak.hardware.get(target).peak_flops
    return next(p for p in ("bf16", "fp16", "fp32") if p in peaks)


# ---- proof points ---------------------------------------------------------------------------------------------
def _ids(vocab: int = 300, seq: int = 16) -> torch.Tensor:
    return torch.randint(0, vocab, (2, seq))


def _bert() -> tuple[nn.Module, torch.Tensor]:
    from transformers import BertConfig, BertForSequenceClassification

    cfg = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                     vocab_size=300, hidden_act="gelu")  # exact GELU, as the stock checkpoints
    return BertForSequenceClassification(cfg), _ids()


def _distilbert() -> tuple[nn.Module, torch.Tensor]:
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    cfg = DistilBertConfig(dim=64, n_layers=2, n_heads=2, hidden_dim=128, vocab_size=300, activation="gelu")
    return DistilBertForSequenceClassification(cfg), _ids()


def _roberta() -> tuple[nn.Module, torch.Tensor]:
    from transformers import RobertaConfig, RobertaForSequenceClassification

    cfg = RobertaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                        vocab_size=300, max_position_embeddings=40)
    return RobertaForSequenceClassification(cfg), _ids()


def _electra() -> tuple[nn.Module, torch.Tensor]:
    from transformers import ElectraConfig, ElectraForSequenceClassification

    cfg = ElectraConfig(embedding_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, vocab_size=300)
    return ElectraForSequenceClassification(cfg), _ids()


def _resnet() -> tuple[nn.Module, torch.Tensor]:
    from transformers import ResNetConfig, ResNetForImageClassification

    cfg = ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 64], depths=[1, 1, 1, 1],
                       layer_type="bottleneck", num_labels=10)  # ResNet-50's bottleneck blocks, shrunk
    return ResNetForImageClassification(cfg), torch.randn(2, 3, 64, 64)


def _deit() -> tuple[nn.Module, torch.Tensor]:
    from transformers import DeiTConfig, DeiTForImageClassification

    cfg = DeiTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                     image_size=32, patch_size=8, num_labels=10)
    return DeiTForImageClassification(cfg), torch.randn(2, 3, 32, 32)


class _ConvBnSiLU(nn.Sequential):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class _YoloNano(nn.Module):
    """The shape of a YOLOv6-nano-class detector: a strided conv backbone, an upsample+concat neck, 1x1 heads."""

    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.stem, self.c2, self.c3 = _ConvBnSiLU(3, 8, 2), _ConvBnSiLU(8, 16, 2), _ConvBnSiLU(16, 32, 2)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.neck = _ConvBnSiLU(48, 16)
        self.head = nn.Conv2d(16, 5 + classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p2 = self.c2(self.stem(x))                      # (B, 16, H/4, W/4)
        p3 = self.c3(p2)                                # (B, 32, H/8, W/8)
        y = self.neck(torch.cat([p2, self.up(p3)], 1))  # (B, 48, H/4, W/4) -> (B, 16, H/4, W/4)
        return self.head(y)                             # (B, 5 + classes, H/4, W/4)


def _yolo() -> tuple[nn.Module, torch.Tensor]:
    return _YoloNano(), torch.randn(2, 3, 64, 64)


def _gpt2() -> tuple[nn.Module, torch.Tensor]:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=300, n_positions=64, use_cache=False,
                     activation_function="gelu_new")
    return GPT2LMHeadModel(cfg), _ids()


# GroqFlow's proof points (https://github.com/groq/groqflow/tree/main/proof_points): BERT-tiny/base, DistilBERT,
# ELECTRA, RoBERTa, ResNet-50, DeiT-tiny, YOLOv6-nano, all built with groqit() from the stock model.
# For the other families: BERT and GPT-2 (Cerebras' and SambaNova's model zoos, Graphcore's BERT tutorials, ALCF's
# workshop models). The zoo's science models are covered by test_every_zoo_model_compiles_on_every_target.
PROOF_POINTS = {
    "tsp": [_bert, _distilbert, _roberta, _electra, _resnet, _deit, _yolo],
    "wse2": [_bert, _gpt2],
    "sn40l": [_bert, _gpt2],
    "gc200": [_bert, _gpt2],
    "a100": [_bert, _gpt2, _resnet],
    # AWS's Inf2 / Trn1 performance pages (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/benchmarks/
    # inf2/inf2-performance.html): BERT, RoBERTa, DistilBERT, GPT-2, ResNet-50, ViT compiled with torch-neuronx
    "inf2": [_bert, _distilbert, _roberta, _gpt2, _resnet, _deit],
}
CASES = [pytest.param(t, b, id=f"{t}-{b.__name__.strip('_')}") for t, bs in PROOF_POINTS.items() for b in bs]


@pytest.mark.parametrize("target,build", CASES)
def test_vendor_proof_points_compile_without_a_port(target: str, build) -> None:
    torch.manual_seed(0)
    model, x = build()
    model = model.eval()
    report = check(model, (x,), target)
    assert report.ok, report.summary()
    # what is left are caveats the vendor's own flow also applies (int64 ids narrowed), never a rewrite of the model
    assert {f.kind for f in report.warnings} <= {"dtype"}, report.summary()
    prog = ak.compile(model, (x,), target=target, precision=_precision(target))
    assert prog.mode and prog.report.step_time_s > 0


# ---- the zoo runs everywhere ---------------------------------------------------------------------------------
ZOO_TARGETS = ak.hardware.names()


@pytest.mark.slow
@pytest.mark.parametrize("name", ak.zoo.names())
def test_every_zoo_model_compiles_on_every_target(name: str) -> None:
    entry = ak.zoo.get(name)
    model, inputs = entry.model.eval(), entry.example_inputs
    for target in ZOO_TARGETS:
        precision = _precision(target)
        report = check(model, inputs, target)
        if report.ok:
            prog = ak.compile(model, inputs, target=target, precision=precision)
        else:  # ported where the family needs it, then compiled
            result = port(model, inputs, target)
            assert result.report_after.ok, (target, result.report_after.summary())
            prog = ak.compile(result.model, result.example_inputs, target=target, precision=precision)
        assert prog.report.step_time_s > 0, (name, target)


def test_tables_dir_is_the_shipped_one() -> None:
    assert TABLES_DIR == Path(ak.porting.support.__file__).with_name("tables")
