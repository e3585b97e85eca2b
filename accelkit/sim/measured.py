"""``validate_measured``: accelkit's GPU model against timings taken on a real GPU.

``reference/gpu_measured_h100.csv`` holds 49 timings measured on one NVIDIA H100 SXM5 (80 GB HBM3, PyTorch 2.11,
bf16), each the median of 7-10 repetitions timed with CUDA events (``shared/reference/gpu_measured/``, with the
script that took them): GEMMs of Llama-3-8B's layer shapes at 1 to 16,384 tokens, training steps of GPT-2 small,
BERT-base MLM and ResNet-50 in eager PyTorch with bf16 autocast, eager inference of BERT-base, GPT-2 and ResNet-50,
and Llama-3-8B prefill. Each row is run through :func:`accelkit.compile` with the software stack the row names
(``stack="eager"``: every row was timed in eager PyTorch) and the modelled step time is compared with the
measured one: ``error = (modelled - measured) / measured``. Goals: median |error| <= 10%, every row within 1.5x.

No constant is fitted to these rows: the model's figures come from the chip's catalog entry and the GPU family's
registered constants, each with its source (``accelkit.constants``).
"""

from __future__ import annotations

import csv
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from accelkit.hardware.spec import AcceleratorSpec
from accelkit.sim.goals import MEASURED_H100

MEASURED_CSV = Path(__file__).with_name("reference") / "gpu_measured_h100.csv"
MORE_CSV = Path(__file__).with_name("reference") / "gpu_measured_more.csv"
KINDS_CSV = Path(__file__).with_name("reference") / "gpu_measured_kinds.csv"
H200_TOML = Path(__file__).with_name("reference") / "h200.toml"  # not in the catalog: a GPU the model never saw
GOAL_MEDIAN_ABS_ERROR = MEASURED_H100.median_abs_error
GOAL_MAX_RATIO = MEASURED_H100.max_ratio
SOURCE = ("measured on one NVIDIA H100 SXM5 (80 GB HBM3), PyTorch 2.11.0+cu130, transformers 5.17.0, "
          "2026-11-26: median of 7-10 repetitions, CUDA events")
SOURCE_KINDS = ("measured on one NVIDIA H100 SXM5, PyTorch 2.11.0+cu130, transformers 5.17.0, 2026-11-28, by "
                "benchmarks/gpu/measure_new_kinds.py: median of 15 repetitions after 5 warm-ups, CUDA events; on a host "
                "that took 9.03 ms for the first file's BERT-base at batch 1 (4.75 there)")
SOURCE_MORE = ("measured on one NVIDIA H100 SXM5 and one H200 SXM, PyTorch 2.11.0+cu130, transformers 5.17.0, "
               "2026-11-26, by benchmarks/gpu/measure_more.py: median of 15 repetitions after 5 warm-ups, CUDA events")


# the models the rows name, on the meta device (torchvision's ResNet-50 has transformers' ResNet-50's layers)
def _gpt2(training: bool, medium: bool = False) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    size = dict(n_embd=1024, n_layer=24, n_head=16) if medium else {}  # GPT-2 medium (355M) or small (124M)
    with torch.device("meta"):
        return GPT2LMHeadModel(GPT2Config(use_cache=False, **size)).train(training)


def _bert(mlm: bool, training: bool, large: bool = False) -> nn.Module:
    from transformers import BertConfig, BertForMaskedLM, BertModel

    size = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096) if large else {}
    with torch.device("meta"):
        return (BertForMaskedLM if mlm else BertModel)(BertConfig(**size)).train(training)


def _resnet50(training: bool) -> nn.Module:
    from transformers import ResNetConfig, ResNetForImageClassification

    with torch.device("meta"):
        return ResNetForImageClassification(ResNetConfig(num_labels=1000)).train(training)


def _vit_base(training: bool) -> nn.Module:
    from transformers import ViTConfig, ViTForImageClassification

    with torch.device("meta"):
        return ViTForImageClassification(ViTConfig(num_labels=1000)).train(training)  # ViT-B/16, 224x224


class _SegmentationLoss(nn.Module):
    """A U-Net and its per-pixel cross-entropy, as the measured training step ran them."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.net(x), mask)


def _double_conv(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
    )


class _UNet(nn.Module):
    """The measured U-Net: accelkit.zoo.unet2d.UNet2D's layers (the zoo sits in a layer above this module, so the
    network is written out here; tests/test_gpu_stacks.py checks the two are the same network), at Ronneberger
    et al.'s widths, 64 to 1,024."""

    def __init__(self, in_channels: int = 3, classes: int = 4, width: int = 64, depth: int = 4) -> None:
        super().__init__()
        widths = [width * 2**i for i in range(depth + 1)]
        self.down = nn.ModuleList()
        c = in_channels
        for w in widths[:-1]:
            self.down.append(_double_conv(c, w))
            c = w
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = _double_conv(widths[-2], widths[-1])
        self.up = nn.ModuleList(nn.ConvTranspose2d(lo, w, kernel_size=2, stride=2)
                                for lo, w in zip(widths[:0:-1], widths[-2::-1], strict=False))
        self.up_conv = nn.ModuleList(_double_conv(2 * w, w) for w in widths[-2::-1])
        self.head = nn.Conv2d(widths[0], classes, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        for up, conv, skip in zip(self.up, self.up_conv, reversed(skips), strict=True):
            x = conv(torch.cat([up(x), skip], dim=1))
        return self.head(x)


def _unet(training: bool) -> nn.Module:
    with torch.device("meta"):
        net = _UNet()
    return (_SegmentationLoss(net) if training else net).train(training)


def _vision(which: str, training: bool) -> nn.Module:
    """The third file's image models (transformers', from their configs: MobileNetV2 1.0, EfficientNet-B0,
    ConvNeXt-T, Swin-T at 224 x 224, 1,000 classes)."""
    import transformers as tf

    cls, cfg = {
        "mobilenet-v2": (tf.MobileNetV2ForImageClassification, tf.MobileNetV2Config(num_labels=1000)),
        "efficientnet-b0": (tf.EfficientNetForImageClassification, tf.EfficientNetConfig(
            num_labels=1000, width_coefficient=1.0, depth_coefficient=1.0, image_size=224, hidden_dim=1280,
            dropout_rate=0.2)),
        "convnext-tiny": (tf.ConvNextForImageClassification, tf.ConvNextConfig(num_labels=1000)),
        "swin-tiny": (tf.SwinForImageClassification, tf.SwinConfig(num_labels=1000)),
    }[which]
    with torch.device("meta"):
        return cls(cfg).train(training)


def _t5_small(training: bool) -> nn.Module:
    from transformers import T5Config, T5ForConditionalGeneration

    with torch.device("meta"):
        return T5ForConditionalGeneration(T5Config(decoder_start_token_id=0, pad_token_id=0,
                                                   use_cache=False)).train(training)


VISION = ("mobilenet-v2", "efficientnet-b0", "convnext-tiny", "swin-tiny")


def _llama(cfg: dict[str, Any]) -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.device("meta"):
        return LlamaForCausalLM(LlamaConfig(**cfg, use_cache=False)).eval().to(BF16)  # bf16 weights, no autocast


def _llama3_8b() -> nn.Module:
    return _llama(dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                       intermediate_size=14336, vocab_size=128256))


def _llama32_1b() -> nn.Module:
    return _llama(dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                       intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True))


BF16 = torch.bfloat16
GEMM_SHAPES = {"qkv": (4096, 6144), "o_proj": (4096, 4096), "gate_up": (4096, 28672), "down": (14336, 4096)}
"""Llama-3-8B's four weight shapes: (in features, out features)."""


@dataclass(frozen=True)
class MeasuredRow:
    """One measured timing against accelkit's modelled one."""

    case: str
    workload: str
    model: str
    batch: int
    seq: int | None
    stack: str
    measured_s: float
    modelled_s: float
    bound: str  # what bounds the modelled step: "host" (eager issue), "compute", "memory", ...
    target: str = "h100"

    @property
    def error(self) -> float:
        return (self.modelled_s - self.measured_s) / self.measured_s

    @property
    def ratio(self) -> float:
        return max(self.modelled_s / self.measured_s, self.measured_s / self.modelled_s)


@dataclass(frozen=True)
class MeasuredValidation:
    """Every measured row against the model, with the goals."""

    rows: list[MeasuredRow]
    target: str = "h100"
    seconds: float = 0.0
    source: str = SOURCE
    per_workload: dict[str, tuple[int, float, float]] = field(default_factory=dict)  # n, median |err|, worst x
    # rows the machine's own host bounded (eager issue, slower than the host the model assumes): shown, not counted
    host_bound: list[MeasuredRow] = field(default_factory=list)

    label = "measured on a real GPU vs modelled"

    @property
    def median_abs_error(self) -> float:
        return statistics.median(abs(r.error) for r in self.rows) if self.rows else float("nan")

    @property
    def max_ratio(self) -> float:
        return max((r.ratio for r in self.rows), default=float("nan"))

    @property
    def goals(self) -> dict[str, bool]:
        return {f"median |error| <= {GOAL_MEDIAN_ABS_ERROR:.0%}": self.median_abs_error <= GOAL_MEDIAN_ABS_ERROR,
                f"every row within {GOAL_MAX_RATIO:g}x": self.max_ratio <= GOAL_MAX_RATIO}

    @property
    def ok(self) -> bool:
        return all(self.goals.values())

    def table(self) -> str:
        lines = [f"{'case':<38} {'chip':<5} {'stack':<8} {'measured':>10} {'modelled':>10} {'error':>7}  bound"]
        for r in self.rows:
            lines.append(f"{r.case:<38} {r.target:<5} {r.stack:<8} {r.measured_s * 1e3:>8.3f}ms {r.modelled_s * 1e3:>8.3f}ms "
                         f"{r.error:>+6.0%}  {r.bound}")
        lines.append("")
        for w, (n, med, worst) in self.per_workload.items():
            lines.append(f"  {w:<22} {n:>3} rows  median |error| {med:.0%}  worst {worst:.2f}x")
        lines.append(f"  {'all':<22} {len(self.rows):>3} rows  median |error| {self.median_abs_error:.1%}  "
                     f"worst {self.max_ratio:.2f}x  ({self.source})")
        if self.host_bound:
            lines.append("")
            lines.append("bound by that machine's host (eager issue at batch 1, or the GPU busy under 80% of the step in "
                         "its profile), not counted: a slower host than the model's")
            for r in self.host_bound:
                lines.append(f"{r.case:<38} {r.target:<5} {r.stack:<8} {r.measured_s * 1e3:>8.3f}ms "
                             f"{r.modelled_s * 1e3:>8.3f}ms {r.error:>+6.0%}  {r.bound}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def measured_rows(path: Path = MEASURED_CSV) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _stack_of(row: dict[str, str]) -> str:
    return row.get("stack") or "eager"  # the first file's rows all ran in eager PyTorch (its runtime column)


def _optimizer_of(row: dict[str, str]) -> str:
    """The update a training row's step ran, as its runtime column says (the first file: "fused AdamW (GPT-2,
    BERT) / SGD momentum (ResNet-50)"); AdamW where a row does not say."""
    runtime = row.get("runtime") or ""
    if row["model"].lower() == "resnet50" and "SGD momentum (ResNet-50)" in runtime:
        return "sgd"
    return "adamw"


def _target_of(row: dict[str, str]) -> str | AcceleratorSpec:
    from accelkit.hardware import load

    target = row.get("target") or "h100"
    return load(H200_TOML) if target == "h200" else target


def _workload_model(row: dict[str, str], model: Callable[[str, Callable[[], nn.Module]], nn.Module]
                    ) -> tuple[nn.Module, Any]:
    """The model a train/infer/prefill row ran, and its inputs at batch 1."""
    workload, which = row["workload"], row["model"].lower()
    training = workload == "train"
    seq = int(row["seq"]) if row["seq"] else 1
    ids = torch.zeros(1, seq, dtype=torch.long, device="meta")
    if workload == "prefill":
        m = model(which, _llama32_1b if "3.2-1b" in which else _llama3_8b)
        return m, {"input_ids": ids, "logits_to_keep": 1}
    if which == "t5-small":  # trained with teacher forcing (labels), run with the same tokens decoded
        m = model(f"t5-{training}", lambda: _t5_small(training))
        return m, ({"input_ids": ids, "labels": ids} if training else {"input_ids": ids, "decoder_input_ids": ids})
    if which in VISION:
        m = model(f"{which}-{training}", lambda: _vision(which, training))
        px = torch.zeros(1, 3, 224, 224, device="meta")
        labels = torch.zeros(1, dtype=torch.long, device="meta")
        return m, ({"pixel_values": px, "labels": labels} if training else (px,))
    if which.startswith(("gpt2", "bert")):
        if which.startswith("gpt2"):
            m = model(f"{which}-{training}", lambda: _gpt2(training, medium="medium" in which))
        else:  # a training row ran BERT's masked-LM head, an inference row the bare encoder
            m = model(f"{which}-{training}", lambda: _bert(training, training, large="large" in which))
        return m, ({"input_ids": ids, "labels": ids} if training else (ids,))
    if which == "unet":
        side = int(row["seq"] or 256)
        px = torch.zeros(1, 3, side, side, device="meta")
        mask = torch.zeros(1, side, side, dtype=torch.long, device="meta")
        return model(f"unet-{training}", lambda: _unet(training)), ((px, mask) if training else (px,))
    m = model(f"{which}-{training}", lambda: (_vit_base if which.startswith("vit") else _resnet50)(training))
    px = torch.zeros(1, 3, 224, 224, device="meta")
    if which == "resnet50" and not row.get("target"):
        # the first file's ResNet-50 is torchvision's, made channels last (its README: "torchvision ResNet-50
        # (channels_last, ...)"); its inference rows are read as the same network: their timings match it (eager
        # inference at batch 256, 19.7 ms, is the compiled channels-last run's 12.6 ms plus unfused batch norms and
        # ReLUs, with none of the layout conversions and per-plane batch norms an NCHW network pays)
        px = px.to(memory_format=torch.channels_last)
    labels = torch.zeros(1, dtype=torch.long, device="meta")
    return m, ({"pixel_values": px, "labels": labels} if training else (px,))


def _run(row: dict[str, str], models: dict[str, nn.Module]) -> tuple[float, str]:
    import accelkit as ak

    # the scripts make every tensor on the GPU and time with CUDA events: nothing crosses the host link
    precision = "fp32" if (row.get("precision") or "").startswith("fp32") else "bf16"
    kw: dict[str, Any] = {"target": _target_of(row), "precision": precision, "stack": _stack_of(row),
                          "synthetic_data": True}
    workload, batch = row["workload"], int(row["batch"])

    def model(key: str, make: Callable[[], nn.Module]) -> nn.Module:
        if key not in models:
            models[key] = make()
        return models[key]

    if workload == "gemm":
        name = row["case"].split("-")[1]
        if name == "square8192":
            m = model("square8192", lambda: nn.Linear(8192, 8192, bias=False, device="meta", dtype=BF16))
            x = torch.zeros(8192, 8192, device="meta", dtype=BF16)
        else:
            k_in, n_out = GEMM_SHAPES[name]
            m = model(name, lambda: nn.Linear(k_in, n_out, bias=False, device="meta", dtype=BF16))
            x = torch.zeros(batch, k_in, device="meta", dtype=BF16)
        prog = ak.compile(m.eval(), (x,), **kw)
    else:
        m, inputs = _workload_model(row, model)
        train = workload == "train"
        prog = ak.compile(m, inputs, batch_size=batch, training=train,
                          **(kw | {"optimizer": _optimizer_of(row)} if train else kw))
    rep = prog.report
    bound = max(rep.breakdown.parts_s.items(), key=lambda kv: kv[1])[0]
    return rep.step_time_s, bound


FILES = {"h100": MEASURED_CSV, "unseen": MORE_CSV, "kinds": KINDS_CSV}
"""``validate_measured(file=...)``: ``"h100"`` the first 49 rows, ``"unseen"`` the models, sizes, stacks and the
GPU (an H200) that no constant was ever checked against (the rows it repeats from the first file left out),
``"kinds"`` kinds of model none of those held (depthwise and windowed networks, an encoder-decoder, fp32 without
autocast): its rows that set a constant are left out, and those bound by that machine's slow host are shown
apart, uncounted."""
SOURCES = {"h100": SOURCE, "unseen": SOURCE_MORE, "kinds": SOURCE_KINDS}


def validate_measured(cases: Iterable[str] | None = None, *, progress: bool = False,
                      file: str = "h100") -> MeasuredValidation:
    """Model every measured row of ``file`` (or those named in ``cases``) and compare with the real GPU's timing."""
    if file not in FILES:
        from accelkit.errors import UnknownNameError

        raise UnknownNameError(f"no measured file called {file!r}", fix=f"one of {', '.join(FILES)}")
    t0 = time.perf_counter()
    rows = measured_rows(FILES[file])
    if file != "h100":
        rows = [r for r in rows if r.get("seen") != "yes"]
    if cases is not None:
        wanted = set(cases)
        rows = [r for r in rows if r["case"] in wanted]
    models: dict[str, nn.Module] = {}
    out: list[MeasuredRow] = []
    apart: list[MeasuredRow] = []
    for r in rows:
        modelled, bound = _run(r, models)
        row = MeasuredRow(r["case"], r["workload"], r["model"], int(r["batch"]), int(r["seq"]) if r["seq"] else None,
                          _stack_of(r), float(r["measured_s"]), modelled, bound, r.get("target") or "h100")
        (apart if r.get("host_bound") == "yes" else out).append(row)
        if progress:
            print(f"  {r['case']:<32} modelled {modelled * 1e3:9.3f} ms  measured {float(r['measured_s']) * 1e3:9.3f} ms",
                  flush=True)
    per: dict[str, tuple[int, float, float]] = {}
    def group(r: MeasuredRow) -> str:
        return r.workload if file == "h100" else f"{r.target} {r.workload} {r.stack}"

    for w in dict.fromkeys(group(r) for r in out):
        sel = [r for r in out if group(r) == w]
        per[w] = (len(sel), statistics.median(abs(r.error) for r in sel), max(r.ratio for r in sel))
    targets = ", ".join(dict.fromkeys(r.target for r in out)) or "h100"
    return MeasuredValidation(out, target=targets, seconds=time.perf_counter() - t0, per_workload=per,
                              source=SOURCES[file], host_bound=apart)


__all__ = ["FILES", "KINDS_CSV", "MEASURED_CSV", "MORE_CSV", "MeasuredRow", "MeasuredValidation", "measured_rows", "validate_measured"]
