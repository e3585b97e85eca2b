"""``compare_peers``: accelkit's serving latency and GenZ's, side by side, against measured rows.

GenZ (``pip install genz-llm``, module ``GenZ``; Abhimanyu Bambhaniya et al., "Demystifying AI Platform
Design for Distributed Inference of Next-Generation LLM models") is an analytical LLM-inference
simulator. Both tools are given the same system figures and the same models, and both are compared with
LLM-Inference-Bench's measured end-to-end latencies (``shared/reference/llm_inference_bench/
All_results.csv``: prefill of ``n`` prompt tokens plus ``n`` generated tokens, for the whole batch).

    from accelkit.sim.peers import compare_peers
    result = compare_peers()            # ~40 s: 24 cases, both tools
    print(result.table())
    result.median_abs_error("accelkit", "A100"), result.median_abs_error("genz", "A100")

The cases (:func:`peer_rows`) are a small fixed set both tools cover: one A100 or H100, Llama-3-8B and
Llama-2-7B, ``n`` = 128 and 1024, batch 1, 16 and 64; the measured value of a configuration is its
best framework's (the minimum latency over frameworks). Without GenZ installed the GenZ column is empty
and the result says how to install it (``pip install -e '.[peers]'``); nothing raises.
"""

from __future__ import annotations

import contextlib
import html
import io
import math
import statistics
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from accelkit import hardware
from accelkit.compiler.memory import ModeError
from accelkit.sim.bench import (
    FILES,
    FRAMEWORKS,
    REFERENCE_DIR_ENV,
    bench_rows,
    reference_dir,
    reference_files,
)
from accelkit.sim.serve import ServingCapacityError, serve

INSTALL_HINT = "install the [peers] extra: pip install -e '.[peers]'"
GENZ_DIST = "genz-llm"
PRECISION = "fp16"

TOOLS = ("accelkit", "genz")


@dataclass(frozen=True)
class PeerSystem:
    """One measured system and the figures both tools are given."""

    short: str  # the name the table uses
    hardware: str  # the CSV's Hardware value
    part: str  # what the measured part is
    targets: tuple[str, ...]  # accelkit catalog names, the first one the catalog has is used
    tflops: float  # dense fp16/bf16 peak
    mem_bw_GBps: float
    mem_GB: float
    icn_GBps: float  # chip-to-chip (GenZ's ICN; unused with one chip)


SYSTEMS: dict[str, PeerSystem] = {
    "Nvidia A100 GPU": PeerSystem("A100", "Nvidia A100 GPU", "A100 SXM4 40 GB (Polaris)", ("a100-40gb", "a100"),
                                  312.0, 1555.0, 40.0, 150.0),
    "Nvidia H100 GPU": PeerSystem("H100", "Nvidia H100 GPU", "H100 SXM5 80 GB", ("h100",), 989.0, 3350.0, 80.0,
                                  450.0),
}


@dataclass(frozen=True)
class PeerModel:
    short: str
    genz_name: str  # the name in GenZ's model registry
    shape: tuple[int, int, int, int, int, int]  # hidden, layers, heads, kv heads, ffn, vocab


MODELS: dict[str, PeerModel] = {
    "meta-llama/Meta-Llama-3-8B": PeerModel("llama3-8b", "meta-llama/Llama-3.1-8B",
                                            (4096, 32, 32, 8, 14336, 128256)),
    "meta-llama/Llama-2-7b-hf": PeerModel("llama2-7b", "meta-llama/Llama-2-7B", (4096, 32, 32, 32, 11008, 32000)),
}
"""The CSV's model names; GenZ's registry holds Llama-3.1-8B, the same shapes as Llama-3-8B."""

LENGTHS = (128, 1024)
BATCHES = (1, 16, 64)


# ---------------------------------------------------------------------------------------------
# the measured rows
# ---------------------------------------------------------------------------------------------
def reference_csv() -> Path:
    """LLM-Inference-Bench's ``All_results.csv`` (found as :func:`accelkit.sim.bench.reference_files` finds it)."""
    found = [p for p in reference_files() if p.name == FILES[0]]
    return found[0] if found else reference_dir() / "llm_inference_bench" / FILES[0]


@dataclass(frozen=True)
class PeerCase:
    """One configuration and its measured latency (the best framework's)."""

    hardware: str
    model: str
    n: int  # n prompt tokens and n generated tokens
    batch: int
    measured_s: float
    framework: str

    @property
    def system(self) -> PeerSystem:
        return SYSTEMS[self.hardware]

    @property
    def name(self) -> str:
        return f"{self.system.short} {MODELS[self.model].short} n={self.n} b={self.batch}"


def peer_rows(path: str | Path | None = None, frameworks: Iterable[str] | None = FRAMEWORKS) -> list[PeerCase]:
    """The measured cases both tools cover, one per configuration (hardware, model, n, batch), its
    measured latency the minimum over ``frameworks`` (the serving frameworks the validation takes; None for
    every one, llama.cpp too); in a fixed order (hardware, model, n, batch). The rows are read by
    :func:`accelkit.sim.bench.bench_rows`, the one reader of LLM-Inference-Bench's CSVs."""
    path = Path(path) if path is not None else reference_csv()
    if not path.exists():
        raise FileNotFoundError(f"{path} not found; set {REFERENCE_DIR_ENV} to the shared/reference directory")
    cases = [c for c in bench_rows([path], frameworks=frameworks, systems=SYSTEMS)
             if c.model in MODELS and c.devices == 1 and c.n in LENGTHS and c.batch in BATCHES]
    order = {name: i for i, name in enumerate(SYSTEMS)} | {name: i for i, name in enumerate(MODELS)}
    return [PeerCase(c.hardware, c.model, c.n, c.batch, c.measured_s, c.framework)
            for c in sorted(cases, key=lambda c: (order[c.hardware], order[c.model], c.n, c.batch))]


# ---------------------------------------------------------------------------------------------
# the two tools
# ---------------------------------------------------------------------------------------------
def accelkit_target(system: PeerSystem) -> str:
    """The accelkit catalog entry for ``system`` (the first of its targets the catalog has)."""
    names = hardware.names()
    return next((t for t in system.targets if t in names), system.targets[-1])


def _target_memory(target: str) -> str:
    """The target's largest memory tier in words, e.g. '80 GB at 2,039 GB/s'."""
    spec = hardware.get(target)
    tier = max(spec.memory_tiers, key=lambda t: t.capacity_bytes)
    return f"{tier.capacity_bytes / 1e9:.0f} GB at {tier.bandwidth_Bps / 1e9:,.0f} GB/s"


def build_model(model: str) -> nn.Module:
    """The CSV model ``model`` as a transformers Llama on the meta device."""
    from transformers import LlamaConfig, LlamaForCausalLM

    hidden, layers, heads, kv, ffn, vocab = MODELS[model].shape
    cfg = LlamaConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=kv, intermediate_size=ffn, vocab_size=vocab, use_cache=False)
    with torch.device("meta"):
        return LlamaForCausalLM(cfg).eval()


def accelkit_latency(case: PeerCase, model: nn.Module) -> float:
    """accelkit's end-to-end latency (s): ``serve(...).latency_s``."""
    est = serve(model, target=accelkit_target(case.system), chips=1, batch=case.batch, prompt_tokens=case.n,
                output_tokens=case.n, precision=PRECISION)
    return float(est.latency_s)


def genz_version() -> str | None:
    """The installed genz-llm version, or None when GenZ cannot be imported."""
    try:
        import GenZ  # noqa: F401
    except Exception:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(GENZ_DIST)
    except PackageNotFoundError:
        return "unknown"


def genz_system(system: PeerSystem) -> dict[str, Any]:
    """GenZ's custom-system dict (TFLOPS, GB/s, GB, GB/s), the form ``Systems/system_configs.py`` uses."""
    return {"Flops": system.tflops, "Memory_BW": system.mem_bw_GBps, "Memory_size": system.mem_GB,
            "ICN": system.icn_GBps, "real_values": True}


def _genz_cache() -> Path:
    from GenZ.Models import get_language_model

    return Path(get_language_model.DATA_PATH) / "model"


def genz_latency(case: PeerCase) -> tuple[float, float, float]:
    """GenZ's (prefill s, decode step s, end-to-end s) for ``case``: ``prefill_moddeling`` over the
    prompt plus ``n`` x ``decode_moddeling`` at the mean context (``n`` prompt + ``n/2`` generated
    tokens), greedy (``Bb=1``), GenZ's default efficiencies (``system_eff=1``: the ideal roofline)."""
    from GenZ import decode_moddeling, prefill_moddeling

    kw: dict[str, Any] = {"model": MODELS[case.model].genz_name, "batch_size": case.batch,
                          "input_tokens": case.n, "system_name": genz_system(case.system), "bits": "bf16"}
    cache = _genz_cache()
    before = set(cache.iterdir()) if cache.is_dir() else set()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            prefill_ms = float(prefill_moddeling(**kw)["Latency"])
            decode_ms = float(decode_moddeling(**kw, output_tokens=case.n // 2, Bb=1)["Latency"])
    finally:  # GenZ writes each model it builds as a CSV under /tmp/genz/data/model: remove ours
        if cache.is_dir():
            for p in set(cache.iterdir()) - before:
                with contextlib.suppress(OSError):
                    p.unlink()
    prefill_s, decode_s = prefill_ms / 1e3, decode_ms / 1e3
    return prefill_s, decode_s, prefill_s + case.n * decode_s


# ---------------------------------------------------------------------------------------------
# the result
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PeerRow:
    case: str
    system: str
    model: str
    n: int
    batch: int
    framework: str
    measured: float  # s, LLM-Inference-Bench
    accelkit: float  # s, MODELLED
    genz: float | None  # s, GenZ's model; None when GenZ is not installed or failed on this case

    @property
    def accelkit_error(self) -> float:
        return (self.accelkit - self.measured) / self.measured

    @property
    def genz_error(self) -> float | None:
        return None if self.genz is None else (self.genz - self.measured) / self.measured

    def error(self, tool: str) -> float | None:
        return self.accelkit_error if tool == "accelkit" else self.genz_error


@dataclass
class PeersResult:
    """Per-case latencies of both tools against the measured ones, and each tool's median |error|."""

    rows: list[PeerRow]
    genz_version: str | None = None  # None: GenZ not installed
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    label = "modelled"

    @property
    def genz_available(self) -> bool:
        return self.genz_version is not None

    @property
    def systems(self) -> list[str]:
        return list(dict.fromkeys(r.system for r in self.rows))

    def _rows(self, system: str | None, shared: bool) -> list[PeerRow]:
        rows = [r for r in self.rows if system is None or r.system == system]
        both = [r for r in rows if r.genz is not None]
        return both if shared and both else rows

    def median_abs_error(self, tool: str, system: str | None = None, *, shared: bool = True) -> float | None:
        """Median |error| of ``tool`` ('accelkit' or 'genz') over ``system``'s rows (all rows when None);
        None when the tool has no prediction there. ``shared``: only the rows both tools predict (when
        GenZ predicts any), so the two medians are over the same cases."""
        if tool not in TOOLS:
            raise ValueError(f"tool must be one of {TOOLS}, got {tool!r}")
        errors = [e for r in self._rows(system, shared) if (e := r.error(tool)) is not None]
        return statistics.median(abs(e) for e in errors) if errors else None

    def cases(self, system: str | None = None, *, shared: bool = True) -> int:
        """How many rows the medians of ``system`` are over."""
        return len(self._rows(system, shared))

    @property
    def medians(self) -> dict[str, dict[str, float | None]]:
        """{system: {'accelkit': median |error|, 'genz': median |error| or None}}."""
        return {s: {t: self.median_abs_error(t, s) for t in TOOLS} for s in self.systems}

    def ahead(self, system: str) -> bool | None:
        """accelkit's median |error| below GenZ's on ``system`` (None without GenZ figures)."""
        ak, gz = self.median_abs_error("accelkit", system), self.median_abs_error("genz", system)
        return None if ak is None or gz is None else ak < gz

    def table(self) -> str:
        """Fixed-width text: every case, then each system's median |error| for both tools, then the notes."""
        head = ("case", "framework", "measured s", "accelkit s", "err", "GenZ s", "err")
        lines: list[tuple[str, ...]] = [head]
        for r in self.rows:
            gz, gze = r.genz, r.genz_error
            lines.append((r.case, r.framework, _num(r.measured), _num(r.accelkit), f"{r.accelkit_error:+.0%}",
                          "-" if gz is None else _num(gz), "-" if gze is None else f"{gze:+.0%}"))
        out = ["accelkit and GenZ (both MODELLED) against LLM-Inference-Bench (measured, best framework)",
               *_columns(lines, right={2, 3, 4, 5, 6}), ""]
        summary: list[tuple[str, ...]] = [("system", "cases", "accelkit median |err|", "GenZ median |err|",
                                           "closer")]
        for s in self.systems:
            ak, gz, ahead = self.median_abs_error("accelkit", s), self.median_abs_error("genz", s), self.ahead(s)
            summary.append((s, str(self.cases(s)), _pct(ak), _pct(gz),
                            "-" if ahead is None else ("accelkit" if ahead else "GenZ")))
        out += _columns(summary, right={1, 2, 3})
        out += self._left_out()
        if not self.genz_available:
            out += ["", f"GenZ is not installed: {INSTALL_HINT}"]
        if self.notes:
            out += ["", "notes:", *(f"- {n}" for n in self.notes)]
        return "\n".join(out)

    def _left_out(self) -> list[str]:
        """A line per system whose medians leave out cases GenZ could not run."""
        out = []
        for s in self.systems:
            left = self.cases(s, shared=False) - self.cases(s)
            if left:
                out.append(f"{s}: medians over the {self.cases(s)} cases both tools predict; accelkit over all "
                           f"{self.cases(s, shared=False)}: {_pct(self.median_abs_error('accelkit', s, shared=False))}")
        return out

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        def row(cells: Iterable[str], tag: str = "td") -> str:
            return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"

        parts = ["<p><b>accelkit and GenZ (both MODELLED) against LLM-Inference-Bench (measured, best "
                 "framework)</b></p><table>",
                 row(("case", "system", "model", "n", "batch", "framework", "measured s", "accelkit s", "error",
                      "GenZ s", "error"), "th")]
        for r in self.rows:
            gze = r.genz_error
            parts.append(row((r.case, r.system, r.model, str(r.n), str(r.batch), r.framework, _num(r.measured),
                              _num(r.accelkit), f"{r.accelkit_error:+.0%}", "-" if r.genz is None else _num(r.genz),
                              "-" if gze is None else f"{gze:+.0%}")))
        parts.append("</table><table>")
        parts.append(row(("system", "accelkit median |error|", "GenZ median |error|", "closer"), "th"))
        for s in self.systems:
            ahead = self.ahead(s)
            parts.append(row((s, _pct(self.median_abs_error("accelkit", s)), _pct(self.median_abs_error("genz", s)),
                              "-" if ahead is None else ("accelkit" if ahead else "GenZ"))))
        parts.append("</table>")
        parts += [f"<p>{html.escape(line)}</p>" for line in self._left_out()]
        if not self.genz_available:
            parts.append(f"<p>GenZ is not installed: <code>{html.escape(INSTALL_HINT)}</code></p>")
        if self.notes:
            parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in self.notes) + "</ul>")
        return "".join(parts)


def _num(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 100 else f"{x:,.0f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _columns(lines: Sequence[tuple[str, ...]], right: set[int]) -> list[str]:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return ["  ".join(c.rjust(w) if i in right else c.ljust(w)
                      for i, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip() for line in lines]


def _notes(cases: Sequence[PeerCase], version: str | None) -> list[str]:
    notes = ["measured: LLM-Inference-Bench (arXiv 2411.00136) All_results.csv, end-to-end latency of the whole "
             "batch (prefill of n tokens + n generated tokens); per configuration the minimum over frameworks ("
             + ", ".join(f"{fw} {k}" for fw, k in Counter(c.framework for c in cases).most_common()) + ")"]
    for s in dict.fromkeys(c.system for c in cases):
        target = accelkit_target(s)
        notes.append(f"{s.short}: measured part {s.part}; GenZ given {s.tflops:g} TFLOPS, {s.mem_bw_GBps:,.0f} GB/s, "
                     f"{s.mem_GB:g} GB; accelkit target {target!r} ({_target_memory(target)})")
    notes.append(f"accelkit: serve(model, target, chips=1, batch, prompt_tokens=n, output_tokens=n, "
                 f"precision={PRECISION!r}).latency_s, Llama models on the meta device")
    if version is not None:
        notes.append(f"GenZ {version}: prefill_moddeling + n x decode_moddeling at the mean context (n prompt + n/2 "
                     "generated tokens); its default efficiencies (system_eff=1, the ideal roofline); bits='bf16' "
                     "(GenZ has no fp16; same 2 bytes and peak); Bb=1 (greedy; GenZ's default Bb=4 is beam search); "
                     "models from its registry (" + ", ".join(sorted({MODELS[c.model].genz_name for c in cases}))
                     + "; Llama-3.1-8B has Llama-3-8B's shapes)")
    return notes


def compare_peers(rows: Sequence[PeerCase] | None = None, progress: bool = True, *,
                  models: Mapping[str, nn.Module] | None = None) -> PeersResult:
    """Run every case (default :func:`peer_rows`) through accelkit and GenZ and compare with the measured
    latency. Each model is built once (meta device) and reused; ``models`` (keyed by the CSV's model
    name) supplies ones already built. Never raises for GenZ: without it the GenZ column is None."""
    cases = list(peer_rows() if rows is None else rows)
    version = genz_version()
    built: dict[str, nn.Module] = dict(models or {})
    result = PeersResult([], genz_version=version, notes=_notes(cases, version))
    failed: list[str] = []
    start = time.perf_counter()
    for i, case in enumerate(cases, 1):
        t0 = time.perf_counter()
        model = built.get(case.model)
        if model is None:
            model = built[case.model] = build_model(case.model)
        try:
            ak = accelkit_latency(case, model)
        except (ServingCapacityError, ModeError) as exc:  # the batch does not fit: left out, as validation does
            result.notes.append(f"accelkit refused {case.name} (left out): {str(exc).splitlines()[0]}")
            continue
        gz: float | None = None
        if version is not None:
            try:
                gz = genz_latency(case)[2]
            except Exception as exc:  # a peer's failure is reported in the table, never raised
                failed.append(f"{case.name}: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0].strip()}")
            if gz is not None and not (math.isfinite(gz) and gz > 0):
                failed.append(f"{case.name}: GenZ gave {gz!r}")
                gz = None
        row = PeerRow(case.name, case.system.short, case.model, case.n, case.batch, case.framework,
                      case.measured_s, ak, gz)
        result.rows.append(row)
        if progress:
            said = "GenZ -" if row.genz_error is None else f"GenZ {_num(gz or 0)} s ({row.genz_error:+.0%})"
            print(f"peers [{i:>2}/{len(cases)}] {case.name:<28} measured {_num(case.measured_s)} s; accelkit "
                  f"{_num(ak)} s ({row.accelkit_error:+.0%}); {said}; {time.perf_counter() - t0:.1f} s", flush=True)
    if version is None:
        result.notes.append(f"GenZ not installed: {INSTALL_HINT}")
    result.notes += [f"GenZ failed on {f}" for f in failed]
    result.seconds = time.perf_counter() - start
    return result


__all__ = ["BATCHES", "INSTALL_HINT", "LENGTHS", "MODELS", "REFERENCE_DIR_ENV", "SYSTEMS", "PeerCase", "PeerModel",
           "PeerRow", "PeerSystem", "PeersResult", "accelkit_latency", "accelkit_target", "build_model",
           "compare_peers", "genz_latency", "genz_system", "genz_version", "peer_rows", "reference_csv"]
