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

from accelkit.sim.goals import MEASURED_H100

MEASURED_CSV = Path(__file__).with_name("reference") / "gpu_measured_h100.csv"
GOAL_MEDIAN_ABS_ERROR = MEASURED_H100.median_abs_error
GOAL_MAX_RATIO = MEASURED_H100.max_ratio
SOURCE = ("measured on one NVIDIA H100 SXM5 (80 GB HBM3), PyTorch 2.11.0+cu130, transformers 5.17.0, "
          "2026-11-26: median of 7-10 repetitions, CUDA events")


# the models the rows name, on the meta device (torchvision's ResNet-50 has transformers' ResNet-50's layers)
def _gpt2(training: bool) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    with torch.device("meta"):
        return GPT2LMHeadModel(GPT2Config(use_cache=False)).train(training)


def _bert(mlm: bool, training: bool) -> nn.Module:
    from transformers import BertConfig, BertForMaskedLM, BertModel

    with torch.device("meta"):
        return (BertForMaskedLM if mlm else BertModel)(BertConfig()).train(training)


def _resnet50(training: bool) -> nn.Module:
    from transformers import ResNetConfig, ResNetForImageClassification

    with torch.device("meta"):
        return ResNetForImageClassification(ResNetConfig()).train(training)


def _llama3_8b() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                      intermediate_size=14336, vocab_size=128256, use_cache=False)  # Llama-3-8B
    with torch.device("meta"):
        return LlamaForCausalLM(cfg).eval().to(BF16)  # the rows ran a bf16 model (bf16 weights, no autocast)


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
        lines = [f"{'case':<32} {'stack':<8} {'measured':>10} {'modelled':>10} {'error':>7}  bound"]
        for r in self.rows:
            lines.append(f"{r.case:<32} {r.stack:<8} {r.measured_s * 1e3:>8.3f}ms {r.modelled_s * 1e3:>8.3f}ms "
                         f"{r.error:>+6.0%}  {r.bound}")
        lines.append("")
        for w, (n, med, worst) in self.per_workload.items():
            lines.append(f"  {w:<8} {n:>3} rows  median |error| {med:.0%}  worst {worst:.2f}x")
        lines.append(f"  all      {len(self.rows):>3} rows  median |error| {self.median_abs_error:.1%}  "
                     f"worst {self.max_ratio:.2f}x  ({self.source})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def measured_rows(path: Path = MEASURED_CSV) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _stack_of(row: dict[str, str]) -> str:
    return "eager"  # every row of the H100 file ran in eager PyTorch (its runtime column)


def _run(row: dict[str, str], models: dict[str, nn.Module]) -> tuple[float, str]:
    import accelkit as ak

    # measure.py makes every tensor on the GPU and times with CUDA events: nothing crosses the host link
    kw: dict[str, Any] = {"target": "h100", "precision": "bf16", "stack": _stack_of(row), "synthetic_data": True}
    workload, batch = row["workload"], int(row["batch"])
    seq = int(row["seq"]) if row["seq"] else None

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
    elif workload == "prefill":
        m = model("llama3-8b", _llama3_8b)
        ids = torch.zeros(1, seq or 1, dtype=torch.long, device="meta")
        prog = ak.compile(m, {"input_ids": ids, "logits_to_keep": 1}, batch_size=batch, **kw)
    else:
        training = workload == "train"
        which = row["model"]
        if which.startswith("gpt2"):
            m = model(f"gpt2-{training}", lambda: _gpt2(training))
            ids = torch.zeros(1, seq or 1, dtype=torch.long, device="meta")
            inputs: Any = {"input_ids": ids, "labels": ids} if training else (ids,)
        elif which.startswith("bert"):
            m = model(f"{which}-{training}", lambda: _bert(which.endswith("mlm"), training))
            ids = torch.zeros(1, seq or 1, dtype=torch.long, device="meta")
            inputs = {"input_ids": ids, "labels": ids} if training else (ids,)
        else:
            m = model(f"resnet50-{training}", lambda: _resnet50(training))
            px = torch.zeros(1, 3, 224, 224, device="meta")
            labels = torch.zeros(1, dtype=torch.long, device="meta")
            inputs = {"pixel_values": px, "labels": labels} if training else (px,)
        prog = ak.compile(m, inputs, batch_size=batch, training=training, **kw)
    rep = prog.report
    bound = max(rep.breakdown.parts_s.items(), key=lambda kv: kv[1])[0]
    return rep.step_time_s, bound


def validate_measured(cases: Iterable[str] | None = None, *, progress: bool = False) -> MeasuredValidation:
    """Model every measured row (or those named in ``cases``) and compare with the real GPU's timing."""
    t0 = time.perf_counter()
    rows = measured_rows()
    if cases is not None:
        wanted = set(cases)
        rows = [r for r in rows if r["case"] in wanted]
    models: dict[str, nn.Module] = {}
    out = []
    for r in rows:
        modelled, bound = _run(r, models)
        out.append(MeasuredRow(r["case"], r["workload"], r["model"], int(r["batch"]),
                               int(r["seq"]) if r["seq"] else None, _stack_of(r), float(r["measured_s"]),
                               modelled, bound))
        if progress:
            print(f"  {r['case']:<32} modelled {modelled * 1e3:9.3f} ms  measured {float(r['measured_s']) * 1e3:9.3f} ms",
                  flush=True)
    per: dict[str, tuple[int, float, float]] = {}
    for w in dict.fromkeys(r.workload for r in out):
        sel = [r for r in out if r.workload == w]
        per[w] = (len(sel), statistics.median(abs(r.error) for r in sel), max(r.ratio for r in sel))
    return MeasuredValidation(out, seconds=time.perf_counter() - t0, per_workload=per)


__all__ = ["MEASURED_CSV", "MeasuredRow", "MeasuredValidation", "measured_rows", "validate_measured"]
