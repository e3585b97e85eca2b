"""Validation at scale: accelkit's serving model against LLM-Inference-Bench's measured rows.

LLM-Inference-Bench (Chitty-Venkata et al., Argonne, SC24 workshops, arXiv 2411.00136; repository
argonne-lcf/LLM-Inference-Bench) measured about 4,800 configurations: A100, H100, GH200, MI250, MI300X, Gaudi2
and SN40L; TensorRT-LLM, vLLM, llama.cpp, DeepSpeed-MII and SambaFlow; 7 B to 72 B models, 1 to 8 devices,
prompts and outputs of 128 to 2048 tokens, batches of 1 to 256. Each row is the end-to-end latency of a batch:
the prefill of ``n`` prompt tokens, then ``n`` generated tokens.

Several frameworks ran each configuration; what the hardware does with a good compiler is the best of them, so
each configuration's measured value is its fastest framework's (:func:`bench_rows`). Every configuration on a
system accelkit has (:data:`SYSTEMS`, read from the catalog, so a new catalog entry lights its rows up) and a
model accelkit can build (:data:`MODELS`) is served with ``ak.serve`` at the row's devices (tensor parallel, as
the frameworks ran them), batch and lengths, and compared: ``error = (predicted - measured) / measured``.
A system whose rows measure a software stack rather than the hardware (:attr:`BenchSystem.held_apart` says why,
with numbers from the rows: the AMD parts, measured with vLLM on ROCm only) is shown but not counted in the goals;
where that holds only on several devices (:attr:`BenchSystem.held_apart_above`: Gaudi2, whose multi-card rows measure
DeepSpeed's tensor parallelism), its single-device rows count and the rest are held apart.
A batch whose KV cache does not fit is refused by accelkit (a ``ServingCapacityError``); those rows are counted
apart (the measured rows show 3-16x blow-ups there: preemption and swapping that accelkit does not model).

The CSVs are read at run time from ``shared/reference/llm_inference_bench/`` beside the repository (or
``$ACCELKIT_REFERENCE_DIR``); accelkit does not carry a copy.

    from accelkit.sim.bench import validate_bench
    result = validate_bench()           # ~2-3 min on two cores: every row of every system accelkit has
    print(result.table())               # per system: rows, median |error|, within 1.5x, worst
"""

from __future__ import annotations

import csv
import html
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from accelkit import hardware
from accelkit.compiler.memory import ModeError
from accelkit.compiler.program import Parallel
from accelkit.errors import AccelkitError
from accelkit.hardware.capacity import holding_tiers
from accelkit.hardware.precision import element_bytes
from accelkit.sim.goals import LLM_BENCH
from accelkit.sim.serve import ServingCapacityError, serve

REFERENCE_DIR_ENV = "ACCELKIT_REFERENCE_DIR"
"""Environment variable naming the ``shared/reference`` directory (default: ``<repo>/../shared/reference``)."""

FILES = ("All_results.csv", "SN40L_latency_throughput.csv")
"""LLM-Inference-Bench's ``Plots/All_results.csv`` and ``Plots/Fig_18/SN40L_latency_throughput.csv``."""

FRAMEWORKS = ("TensorRT-LLM", "vLLM", "Deepspeed-MII", "Deepspeed", "sambaflow")
"""The serving frameworks whose best is taken. llama.cpp is left out: its batched rows are not batched serving
(Llama-2-7B, 1024 tokens, batch 64 on one A100 in 18.6 s against TensorRT-LLM's 90.7 s: sequences that stop
early) and it splits a model over GPUs by layers, not tensor parallel."""

GOAL_MEDIAN_ABS_ERROR = LLM_BENCH.median_abs_error  # over every row of the systems accelkit has (but those held apart)
GOAL_MAX_RATIO = LLM_BENCH.max_ratio  # every row within 1.5x


def reference_dir() -> Path:
    """``$ACCELKIT_REFERENCE_DIR`` when set, else ``shared/reference`` beside the repository."""
    env = os.environ.get(REFERENCE_DIR_ENV)
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "reference"


def reference_files(directory: str | Path | None = None) -> list[Path]:
    """The LLM-Inference-Bench CSVs found under ``directory`` (default :func:`reference_dir`)."""
    base = Path(directory) if directory is not None else reference_dir()
    found = []
    for name in FILES:
        for candidate in (base / "llm_inference_bench" / name, base / name):
            if candidate.exists():
                found.append(candidate)
                break
    return found


@dataclass(frozen=True)
class BenchSystem:
    """A measured system and how accelkit runs it."""

    hardware: str  # the CSV's Hardware value
    target: str  # accelkit catalog name
    precision: str
    part: str  # what the measured part is, in words
    held_apart: str = ""  # why the rows are shown but not counted in the goals ("": counted)
    held_apart_above: int = 0  # ``held_apart`` covers only the rows on more than this many devices (0: every row)

    def held_apart_for(self, devices: int) -> str:
        """Why this system's rows on ``devices`` devices are not counted in the goals ("": they are counted)."""
        return self.held_apart if devices > self.held_apart_above else ""

    @property
    def held_apart_rows(self) -> str:
        """The rows ``held_apart`` covers, in words: "" for every row, else " on more than N device(s)"."""
        n = self.held_apart_above
        return f" on more than {n} device{'s' if n != 1 else ''}" if n else ""


ROCM_VLLM = ("vLLM 0.6.1 on ROCm is the only serving framework the bench ran on AMD parts (argonne-lcf/LLM-Inference-"
             "Bench, vLLM/MI250 and vLLM/MI300X READMEs), and the rows measure that stack, not the hardware: at batch 1 "
             "it reads the weights at {bw} of the HBM datasheet bandwidth (vLLM on the H100: 56%, Llama-2-70B on 4), "
             "and {flops}")
"""Why the AMD rows are held apart from the goals, from the measured rows themselves (each system fills it in)."""

DEEPSPEED_HPU = ("DeepSpeed is the only framework the bench ran on Gaudi2, and on 2-8 cards its rows measure that "
                 "framework's tensor-parallel overhead, not the hardware: Llama-2-7B (128 + 128 tokens, batch 1) takes "
                 "0.878 s on 1 card, 0.666 s on 4 and 0.786 s on 8, where reading a card's share of the weights takes "
                 "0.86 ms of the 6.1 ms per token (TensorRT-LLM on the H100: 0.844 s on 1 GPU, 0.48 s on 4), so a model of "
                 "the hardware is faster than these rows (the 70-72 B models' rows there are held apart with them: "
                 "they ran on the same DeepSpeed tensor parallelism). On one card the rows measure the hardware and "
                 "count (the 'x1' line)")
"""Why the Gaudi2 rows on several cards are held apart from the goals, from the measured rows themselves."""

SYSTEMS: dict[str, BenchSystem] = {s.hardware: s for s in (
    BenchSystem("Nvidia A100 GPU", "a100-40gb", "fp16", "A100 SXM4 40 GB (the runs are ALCF jobs: Polaris)"),
    BenchSystem("Nvidia H100 GPU", "h100", "fp16", "H100 SXM5 80 GB"),
    BenchSystem("Nvidia GH200 GPU", "gh200", "fp16", "GH200 Grace Hopper (H100 with 96 GB HBM3)"),
    BenchSystem("AMD MI250 GPU", "mi250", "fp16", "MI250 (two dies, counted as one device)",
                ROCM_VLLM.format(bw="35% (Llama-2-70B on 2 packages, 60 ms per token)",
                                 flops="its batch-64 decode steps run at 100-130 TFLOP/s, 28-36% of the 362 "
                                       "TFLOP/s peak")),
    BenchSystem("AMD MI300X GPU", "mi300x", "fp16", "MI300X 192 GB",
                ROCM_VLLM.format(bw="25-49% (Llama-2-7B: 10 ms per token; Llama-2-70B: 54 ms)",
                                 flops="from batch 32 on its latency grows in proportion to the batch: the decode "
                                       "steps run at 65-75 TFLOP/s, 5% of the 1,307 TFLOP/s peak, less than the MI250 "
                                       "reaches with the same vLLM")),
    BenchSystem("Habana Gaudi2", "gaudi2", "bf16", "Gaudi2 96 GB", DEEPSPEED_HPU, held_apart_above=1),
    BenchSystem("SambaNova SN40L", "sn40l", "bf16", "SN40L sockets (a node of 8)"),
)}
"""The CSV's systems, each with the catalog entry that models it; those the catalog lacks are skipped."""


def _llama_like(hidden: int, layers: int, heads: int, kv: int, ffn: int, vocab: int) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                          num_key_value_heads=kv, intermediate_size=ffn, vocab_size=vocab, use_cache=False)
        with torch.device("meta"):
            return LlamaForCausalLM(cfg).eval()
    return build


def _qwen2(hidden: int, layers: int, heads: int, kv: int, ffn: int, vocab: int) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        from transformers import Qwen2Config, Qwen2ForCausalLM

        cfg = Qwen2Config(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                          num_key_value_heads=kv, intermediate_size=ffn, vocab_size=vocab, use_cache=False)
        with torch.device("meta"):
            return Qwen2ForCausalLM(cfg).eval()
    return build


MODELS: dict[str, Callable[[], nn.Module]] = {
    # shapes from each model's published config.json (hidden, layers, heads, kv heads, ffn, vocab)
    "meta-llama/Llama-2-7b-hf": _llama_like(4096, 32, 32, 32, 11008, 32000),
    "meta-llama/Meta-Llama-3-8B": _llama_like(4096, 32, 32, 8, 14336, 128256),
    "mistralai/Mistral-7B-v0.1": _llama_like(4096, 32, 32, 8, 14336, 32000),  # Llama's layers, 4 k sliding window
    "Qwen/Qwen2-7B": _qwen2(3584, 28, 28, 4, 18944, 152064),
    "meta-llama/Llama-2-70b-hf": _llama_like(8192, 80, 64, 8, 28672, 32000),
    "meta-llama/Meta-Llama-3-70B": _llama_like(8192, 80, 64, 8, 28672, 128256),
    "Qwen/Qwen2-72B": _qwen2(8192, 80, 64, 8, 29568, 152064),
}
"""The CSV's models accelkit builds (on the meta device, from transformers config classes)."""

NOT_MODELLED: dict[str, str] = {
    "mistralai/Mixtral-8x7B-v0.1": "a mixture of experts: its routing picks 2 of 8 experts per token, which a "
                                   "captured graph on the meta device cannot see",
    "Deci/DeciLM-7B": "variable grouped-query attention per layer (no transformers config class here)",
}
"""Models in the CSV that accelkit leaves out, and why (single-row models are left out without a reason)."""


@dataclass(frozen=True)
class BenchCase:
    """One measured configuration: its best framework's latency."""

    hardware: str
    devices: int
    model: str
    n: int  # n prompt tokens and n generated tokens
    batch: int
    measured_s: float
    framework: str
    frameworks: int  # how many frameworks ran it

    @property
    def system(self) -> BenchSystem:
        return SYSTEMS[self.hardware]

    @property
    def held_apart(self) -> str:
        """Why this configuration is not counted in the goals ("": counted): its system's reason, where it applies."""
        return self.system.held_apart_for(self.devices)

    @property
    def name(self) -> str:
        return f"{self.hardware} x{self.devices} {self.model.split('/')[-1]} n={self.n} b={self.batch}"


def bench_rows(files: Iterable[str | Path] | None = None, *, frameworks: Iterable[str] | None = FRAMEWORKS,
               systems: Iterable[str] | None = None) -> list[BenchCase]:
    """One case per configuration (system, devices, model, n, batch) of the measured rows, its latency the
    fastest framework's (of ``frameworks``: the serving frameworks by default, None for every one); every system
    and model, in a fixed order. ``systems`` keeps only those CSV Hardware names."""
    paths = [Path(p) for p in files] if files is not None else reference_files()
    if not paths:
        raise FileNotFoundError(f"no LLM-Inference-Bench CSV under {reference_dir()}; set {REFERENCE_DIR_ENV} to "
                                "the shared/reference directory")
    allowed = None if frameworks is None else set(frameworks)
    keep = None if systems is None else set(systems)
    best: dict[tuple[str, int, str, int, int], tuple[float, str, set[str]]] = {}
    for path in paths:
        with Path(path).open(newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                try:
                    key = (row["Hardware"].strip(), int(row["Num of Hardware"]), row["Model"].strip(),
                           int(row["Input Output Length"]), int(row["Batch Size"]))
                    latency = float(row["Latency"])
                except (KeyError, TypeError, ValueError, AttributeError):
                    continue
                fw = row.get("Framework", "").strip()
                if (allowed is not None and fw not in allowed) or (keep is not None and key[0] not in keep) \
                        or not math.isfinite(latency) or latency <= 0:
                    continue
                old = best.get(key)
                if old is None or latency < old[0]:
                    best[key] = (latency, fw, (old[2] if old else set()) | {fw})
                else:
                    old[2].add(fw)
    return [BenchCase(*key, latency, fw, len(fws)) for key, (latency, fw, fws) in sorted(best.items())]


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchRow:
    """One configuration: measured (best framework) against modelled."""

    case: BenchCase
    predicted_s: float  # MODELLED end-to-end latency
    ttft_s: float
    tpot_s: float

    @property
    def error(self) -> float:
        return (self.predicted_s - self.case.measured_s) / self.case.measured_s

    @property
    def ratio(self) -> float:
        return max(self.predicted_s / self.case.measured_s, self.case.measured_s / self.predicted_s)


@dataclass(frozen=True)
class SystemSummary:
    system: str
    target: str
    rows: int
    median_abs_error: float
    within: float  # share of rows within GOAL_MAX_RATIO
    worst: float  # the largest ratio
    refused: int  # rows whose batch accelkit says does not fit
    devices: tuple[int, ...] = ()  # the line's device counts, where a system's rows are split by them (): every row
    held_apart: str = ""  # why the line's rows are not counted in the goals ("": counted)

    @property
    def label(self) -> str:
        """The system's name, with the line's device counts where its rows are split: "Habana Gaudi2 x2-8"."""
        if not self.devices:
            return self.system
        lo, hi = self.devices[0], self.devices[-1]
        return f"{self.system} x{lo}" + (f"-{hi}" if hi != lo else "")

    def holds(self, case: BenchCase) -> bool:
        """Whether ``case`` is one of this line's configurations."""
        return case.hardware == self.system and case.held_apart == self.held_apart


@dataclass
class BenchValidation:
    """Every measured configuration accelkit models, its error, and what was left out and why."""

    rows: list[BenchRow]
    refused: list[tuple[BenchCase, str]] = field(default_factory=list)  # (case, accelkit's reason)
    below_bound: list[tuple[BenchCase, float]] = field(default_factory=list)  # (case, the weight-read bound, s)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> configurations
    seconds: float = 0.0

    label = "modelled"

    @property
    def counted(self) -> list[BenchRow]:
        """The rows the goals count: every row but those held apart (:attr:`BenchSystem.held_apart`, on the device
        counts it covers)."""
        return [r for r in self.rows if not r.case.held_apart]

    @property
    def refused_counted(self) -> int:
        """Refused configurations of the systems the goals count."""
        return sum(not c.held_apart for c, _ in self.refused)

    @property
    def median_abs_error(self) -> float:
        """Over the counted rows (see :attr:`counted`)."""
        rows = self.counted
        return statistics.median(abs(r.error) for r in rows) if rows else float("nan")

    @property
    def max_ratio(self) -> float:
        return max((r.ratio for r in self.counted), default=float("nan"))

    @property
    def within(self) -> float:
        rows = self.counted
        return sum(r.ratio <= GOAL_MAX_RATIO for r in rows) / len(rows) if rows else float("nan")

    def per_system(self) -> list[SystemSummary]:
        """A line per system; a system held apart on some device counts only (:attr:`BenchSystem.held_apart_above`)
        gets a line for the rows that count and one for those held apart ("Habana Gaudi2 x1", "Habana Gaudi2 x2-8")."""
        out = []
        for hw, sys in SYSTEMS.items():
            cases = [r.case for r in self.rows if r.case.hardware == hw] + \
                [c for c, _ in self.refused if c.hardware == hw]
            for why in sorted({c.held_apart for c in cases}):  # the counted rows ("") first
                split = sys.held_apart_above > 0
                devices = tuple(sorted({c.devices for c in cases if c.held_apart == why})) if split else ()
                line = SystemSummary(hw, sys.target, 0, float("nan"), 0.0, float("nan"), 0, devices, why)
                rows = [r for r in self.rows if line.holds(r.case)]
                errs = [abs(r.error) for r in rows]
                out.append(replace(
                    line, rows=len(rows), median_abs_error=statistics.median(errs) if errs else float("nan"),
                    within=sum(r.ratio <= GOAL_MAX_RATIO for r in rows) / len(rows) if rows else 0.0,
                    worst=max((r.ratio for r in rows), default=float("nan")),
                    refused=sum(line.holds(c) for c, _ in self.refused)))
        return out

    @property
    def goals(self) -> dict[str, bool]:
        return {f"median |error| <= {GOAL_MEDIAN_ABS_ERROR:.0%}": self.median_abs_error <= GOAL_MEDIAN_ABS_ERROR,
                f"every row within {GOAL_MAX_RATIO:g}x": self.max_ratio <= GOAL_MAX_RATIO}

    def worst_rows(self, n: int = 10) -> list[BenchRow]:
        return sorted(self.counted, key=lambda r: -r.ratio)[:n]

    def held_apart(self) -> dict[str, str]:
        """Systems (or a system's device counts, as :meth:`per_system` labels them: "Habana Gaudi2 x2-8") whose rows
        are shown but not counted in the goals, and why."""
        return {s.label: s.held_apart for s in self.per_system() if s.held_apart}

    def table(self, worst: int = 8) -> str:
        head = ("system", "accelkit", "rows", "median |err|", f"within {GOAL_MAX_RATIO:g}x", "worst", "refused")
        apart = self.held_apart()
        lines = [head] + [(s.label + (" *" if s.held_apart else ""), s.target, str(s.rows),
                           f"{s.median_abs_error:.0%}", f"{s.within:.0%}", f"{s.worst:.2f}x", str(s.refused))
                          for s in self.per_system()]
        lines.append(("all" + (" counted" if apart else ""), "", str(len(self.counted)),
                      f"{self.median_abs_error:.0%}", f"{self.within:.0%}", f"{self.max_ratio:.2f}x",
                      str(self.refused_counted)))
        out = ["accelkit (MODELLED) against LLM-Inference-Bench (MEASURED, best framework per configuration)",
               *columns(lines, right={2, 3, 4, 5, 6}),
               f"goals: median |error| <= {GOAL_MEDIAN_ABS_ERROR:.0%} "
               f"({'met' if self.goals[next(iter(self.goals))] else 'MISSED'}), every row within "
               f"{GOAL_MAX_RATIO:g}x ({'met' if self.max_ratio <= GOAL_MAX_RATIO else 'MISSED'})"]
        out += [f"* held apart from the goals: {system}: {why}" for system, why in apart.items()]
        if worst and self.rows:
            out += ["", f"worst {min(worst, len(self.rows))} rows:"]
            lines2 = [("configuration", "best framework", "measured", "modelled", "error")] + [
                (r.case.name, r.case.framework, f"{r.case.measured_s:.3g} s", f"{r.predicted_s:.3g} s",
                 f"{r.error:+.0%}") for r in self.worst_rows(worst)]
            out += columns(lines2, right={2, 3, 4})
        if self.below_bound:
            out.append(f"below the hardware bound: {len(self.below_bound)} configurations measured faster than "
                       "reading the weights once per generated token at the devices' peak bandwidth allows "
                       "(generation that stopped early); not counted")
        if self.refused:
            out.append(f"refused: {len(self.refused)} configurations whose KV cache accelkit says does not fit "
                       "(the measured latency there includes preemption or swapping)")
        for reason, count in self.skipped.items():
            out.append(f"left out: {count} configuration{'s' if count != 1 else ''}: {reason}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        def row(cells: Iterable[str], tag: str = "td") -> str:
            return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"

        parts = ["<p><b>accelkit (MODELLED) against LLM-Inference-Bench (MEASURED, best framework per "
                 "configuration)</b></p><table>",
                 row(("system", "accelkit", "rows", "median |error|", f"within {GOAL_MAX_RATIO:g}x", "worst",
                      "refused"), "th")]
        for s in self.per_system():
            parts.append(row((s.label, s.target, str(s.rows), f"{s.median_abs_error:.0%}", f"{s.within:.0%}",
                              f"{s.worst:.2f}x", str(s.refused))))
        apart = self.held_apart()
        parts.append(row(("all" + (" counted" if apart else ""), "", str(len(self.counted)),
                          f"{self.median_abs_error:.0%}", f"{self.within:.0%}", f"{self.max_ratio:.2f}x",
                          str(self.refused_counted))))
        parts.append("</table>")
        parts += [f"<p>held apart from the goals: {html.escape(system)}: {html.escape(why)}</p>"
                  for system, why in apart.items()]
        parts += [f"<p>left out: {count} configuration{'s' if count != 1 else ''}: {html.escape(reason)}</p>"
                  for reason, count in self.skipped.items()]
        return "".join(parts)


def columns(lines: Sequence[tuple[str, ...]], right: set[int]) -> list[str]:
    """Rows of cells as fixed-width text lines; the columns in ``right`` aligned right (the validation tables)."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return ["  ".join(c.rjust(w) if i in right else c.ljust(w)
                      for i, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip() for line in lines]


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------
def predict(case: BenchCase, model: nn.Module) -> Any:
    """``ak.serve`` for one configuration: the row's devices as one tensor-parallel group, its batch and lengths."""
    sys = case.system
    par = Parallel(tensor=case.devices) if case.devices > 1 else None
    return serve(model, target=sys.target, chips=case.devices, batch=case.batch, prompt_tokens=case.n,
                 output_tokens=case.n, precision=sys.precision, parallel=par)


def weight_read_bound_s(case: BenchCase, model: nn.Module) -> float:
    """The least time ``n`` decode steps can take: every step reads the weights once, at the devices' peak
    bandwidth (no efficiency) of the fastest tier that holds them all. A measurement below it did not generate
    ``n`` tokens per sequence."""
    spec = hardware.get(case.system.target)
    weights = sum(p.numel() for p in model.parameters()) * element_bytes(case.system.precision)
    tiers = holding_tiers(spec)
    tier = next((t for t in tiers if t.capacity_bytes * case.devices >= weights), tiers[-1])
    return case.n * weights / (case.devices * tier.bandwidth_Bps)


def validate_bench(cases: Iterable[BenchCase] | None = None, *, progress: bool = True,
                   models: Mapping[str, nn.Module] | None = None, serve_held_apart: bool = True) -> BenchValidation:
    """Serve every measured configuration of the systems accelkit has (or only ``cases``) and compare.

    Builds each model once (on the meta device); ``models`` (keyed by the CSV's model names) supplies ones you
    already built. ``serve_held_apart=False`` leaves the rows held apart from the goals unserved
    (listed as left out, with why): the goals do not count them, and a quick look need not pay for them. Shows a
    progress bar (tqdm, when installed and ``progress``): the whole set is about 1,600 configurations on six
    systems, 2-3 minutes on two cores.
    """
    start = time.perf_counter()
    have = set(hardware.names())
    all_cases = bench_rows() if cases is None else list(cases)
    result = BenchValidation([])
    todo = []
    for c in all_cases:
        sys = SYSTEMS.get(c.hardware)
        if sys is None or sys.target not in have:
            reason = f"{c.hardware}: not in accelkit's catalog"
        elif c.held_apart and not serve_held_apart:
            reason = f"{c.hardware}{sys.held_apart_rows}: held apart from the goals, not served here: {c.held_apart}"
        elif c.model not in MODELS:
            reason = f"{c.model}: {NOT_MODELLED.get(c.model, 'not built by accelkit (a model with few rows)')}"
        else:
            todo.append(c)
            continue
        result.skipped[reason] = result.skipped.get(reason, 0) + 1
    built: dict[str, nn.Module] = dict(models or {})
    bar = _progress(len(todo), progress)
    # by model and prompt length, so each model's captured graphs are reused while they are needed
    for c in sorted(todo, key=lambda c: (c.model, c.n, c.hardware, c.devices, c.batch)):
        model = built.get(c.model)
        if model is None:
            model = built[c.model] = MODELS[c.model]()
        bound = weight_read_bound_s(c, model)
        if c.measured_s < bound:
            result.below_bound.append((c, bound))
            bar(c)
            continue
        try:
            est = predict(c, model)
        except (ServingCapacityError, ModeError) as exc:
            result.refused.append((c, str(exc).splitlines()[0]))
        except AccelkitError as exc:
            result.skipped[f"accelkit error: {type(exc).__name__}"] = \
                result.skipped.get(f"accelkit error: {type(exc).__name__}", 0) + 1
        else:
            result.rows.append(BenchRow(c, est.latency_s, est.ttft_s, est.tpot_s))
        bar(c)
    bar(None)
    result.rows.sort(key=lambda r: (r.case.hardware, r.case.devices, r.case.model, r.case.n, r.case.batch))
    result.seconds = time.perf_counter() - start
    return result


def _progress(total: int, show: bool) -> Callable[[BenchCase | None], None]:
    if not show or not total:
        return lambda _c: None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm ships with transformers
        return lambda _c: None
    bar = tqdm(total=total, desc="validate (LLM-Inference-Bench)", unit="config")

    def step(c: BenchCase | None) -> None:
        if c is None:
            bar.close()
            return
        bar.set_postfix_str(f"{c.model.split('/')[-1]} n={c.n}", refresh=False)
        bar.update(1)
    return step


__all__ = ["FILES", "FRAMEWORKS", "GOAL_MAX_RATIO", "GOAL_MEDIAN_ABS_ERROR", "MODELS", "NOT_MODELLED", "REFERENCE_DIR_ENV",
           "SYSTEMS", "BenchCase", "BenchRow", "BenchSystem", "BenchValidation", "SystemSummary", "bench_rows",
           "columns", "predict", "reference_dir", "weight_read_bound_s", "reference_files", "validate_bench"]
