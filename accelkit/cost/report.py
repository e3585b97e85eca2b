"""PerfReport: where the modelled time goes, as plain values (no printing or plotting inside the model).

Every figure in a report is MODELLED from the chip's published figures and the compiled program;
``assumptions`` lists what the model assumed. Nothing here was measured on an accelerator.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from accelkit.cost import Parallel
from accelkit.hardware.spec import fmt_sig


@dataclass(frozen=True)
class KernelTime:
    """Modelled time of one kernel on one chip (one micro-batch), and what bounds it."""

    name: str
    group: str
    section: str
    ops: str
    units: str  # where it ran: "PCUs 412 / PMUs 380", "rows 0-899 cols 12-40", "MXM chip 3", "132 SMs"
    flops: int
    bytes: int
    compute_s: float
    memory_s: float
    comm_s: float
    overhead_s: float
    time_s: float
    bound: str  # "compute" | "memory" | "communication" | "latency"
    utilization: float  # achieved FLOP/s over the chip's peak while it runs


@dataclass(frozen=True)
class TimelineEvent:
    name: str
    section: str
    lane: str  # "chip 0", "MXM", "section 3", "stream 0", "all-reduce" ...
    start_s: float
    duration_s: float


PARTS = ("compute", "memory", "communication", "latency", "host", "idle")
"""What a step's seconds are spent on: kernels bound by compute or by memory, collectives and chip hops,
fixed start-up costs (launches, syncs, stream latency), the chip waiting for its host (eager PyTorch issuing
kernels one by one; each call's inputs and outputs over the host link and its round trip), and a pipeline's fill
and drain."""

_PART_OF_BOUND = {"compute": "compute", "memory": "memory", "communication": "communication",
                  "latency": "latency", "host": "host"}


@dataclass(frozen=True)
class Breakdown:
    """One step's modelled seconds on one chip, split two ways, each adding up to :attr:`step_s`.

    ``sections``: forward, backward, optimizer, collectives (``comm``), pipeline fill (``bubble``) and the host
    link (``io``: inputs in, outputs out, the call's round trip), as the step runs them. ``parts``: the same seconds by what they are spent on (:data:`PARTS`): each section's
    seconds are shared among its kernels in proportion to their modelled times and go to what bounds each
    kernel; ``comm`` is communication and ``bubble`` idle. ``utilization`` is one chip's achieved FLOP/s over
    its peak during the step (never above 1). A frozen value: every reader (Session's clock, the figures, the
    widgets) reads the same numbers and none re-derives them.
    """

    step_s: float
    sections: tuple[tuple[str, float], ...]
    parts: tuple[tuple[str, float], ...]
    chips: int
    utilization: float

    @property
    def sections_s(self) -> dict[str, float]:
        return dict(self.sections)

    @property
    def parts_s(self) -> dict[str, float]:
        return dict(self.parts)


def breakdown(sections: dict[str, float], kernels: dict[str, list[KernelTime]], *, chips: int,
              utilization: float) -> Breakdown:
    """The step's :class:`Breakdown` from its sections' seconds and each section's timed kernels (one chip,
    one micro-batch: only their proportions are used). The step time is the sum of the sections."""
    parts = dict.fromkeys(PARTS, 0.0)
    for name, seconds in sections.items():
        if name == "comm":
            parts["communication"] += seconds
            continue
        if name == "bubble":
            parts["idle"] += seconds
            continue
        if name in ("io", "input"):  # the chip waits for the host link, or for the host's input pipeline
            parts["host"] += seconds
            continue
        ks = kernels.get(name, [])
        total = math.fsum(k.time_s for k in ks)
        if not total:  # seconds with no kernel behind them (none today): fixed costs
            parts["latency"] += seconds
            continue
        for k in ks:
            parts[_PART_OF_BOUND.get(k.bound, "latency")] += seconds * k.time_s / total
    return Breakdown(math.fsum(sections.values()), tuple(sections.items()), tuple(parts.items()), chips,
                     utilization)


@dataclass(frozen=True)
class PerfReport:
    """The modelled performance of one compiled program (one training or inference step), a frozen value.

    ``step_time_s`` and ``sections_s`` are read from :attr:`breakdown`, the one place the step's seconds live.
    """

    target: str
    family: str
    mode: str
    precision: str
    batch_size: int
    chips: int
    parallel: Parallel  # typed: read .data / .tensor / .pipeline, never parse str(parallel)
    training: bool
    breakdown: Breakdown
    throughput: float  # samples per second (all chips)
    tokens_per_s: float | None  # where the input is tokens
    kernels: list[KernelTime]
    utilization: dict[str, float]  # "compute", and one entry per memory tier (bandwidth used)
    traffic_bytes: dict[str, int]  # bytes moved per memory tier per step (per chip)
    comm_bytes: int
    energy_j: float | None  # per step, all chips, where the chip's power is published
    events: list[TimelineEvent]
    assumptions: list[str]
    notes: list[str] = field(default_factory=list)
    latency_s: float | None = None  # one sample's path through a spatial pipeline, where it differs
    host_s: float = 0.0  # fallback="host": seconds per step the host CPU runs its partitions (in fwd / bckwd)
    transfer_s: float = 0.0  # ... and moving tensors over the host link, both ways (in fwd / bckwd)
    host_partitions: int = 0  # ... how many partitions run on the host
    stack: str = ""  # the software stack that runs the program ("eager", "compiled", "engine"; a vendor's compiler)
    stack_note: str = ""  # what that stack is, in a sentence
    # the host link, per step and chip: bytes in and out, the round trip one call pays (shared by the
    # device_iterations steps it runs), whether the stack overlaps it with compute; its seconds are section "io"
    io_in_bytes: int = 0
    io_out_bytes: int = 0
    round_trip_s: float = 0.0
    stream_s: float = 0.0  # every step (not overlapped): its data's stream copies, host syncs and bytes
    stream_syncs: int = 0  # ... how many of those copies synchronise with the host each step (Poplar's StreamCopy)
    stream_grouped: bool = False  # ... one per direction (PopART's groupHostSync), not one per tensor
    device_iterations: int = 1
    io_overlapped: bool = False
    io_note: str = ""
    input_rate: float | None = None  # samples/s the host's input pipeline delivers (given); its wait is section "input"
    input_overlap: bool = True  # ... while the chip runs (False: in the training process, between steps)
    output_mode: str = ""  # what each call sends back, where the family has a host loop: "all" or "final"
    optimizer: str = ""  # training: the update each step runs (accelkit.graph.capture.OPTIMIZERS); "" for inference
    optimizer_state: str = ""  # training: where it keeps its state (OPTIMIZER_STATES; "mixed" is left unsaid)

    label = "modelled"

    @property
    def step_time_s(self) -> float:
        """Modelled seconds of one step: the sum of the breakdown's sections."""
        return self.breakdown.step_s

    @property
    def sections_s(self) -> dict[str, float]:
        """fwd / bckwd / opt / comm / bubble / io (and input, where the chip waits for its ``input_rate``) seconds
        per step (a copy of the breakdown's)."""
        return self.breakdown.sections_s

    @property
    def io_s(self) -> float:
        """Seconds per step the chip waits for the host link (inputs, outputs, the call's round trip)."""
        return self.breakdown.sections_s.get("io", 0.0)

    @property
    def input_s(self) -> float:
        """Seconds per step the chip waits for the host's input pipeline (``input_rate``) beyond its own work."""
        return self.breakdown.sections_s.get("input", 0.0)

    @property
    def bound_by(self) -> dict[str, float]:
        """Share of the step by what bounds it: the kernels' time by what bounds each, and the host link's share
        (``io``) and the wait for the input pipeline (``input``) as ``"host"``."""
        total = sum(k.time_s for k in self.kernels) or 1.0
        io = (self.io_s + self.input_s) / self.step_time_s if self.step_time_s else 0.0
        out: dict[str, float] = {}
        for k in self.kernels:
            out[k.bound] = out.get(k.bound, 0.0) + k.time_s / total * (1.0 - io)
        if io:
            out["host"] = out.get("host", 0.0) + io
        return out

    def step_parts(self, sections: tuple[str, ...] | list[str], samples: int | None = None) -> dict[str, float]:
        """The modelled seconds of one step that runs ``sections`` (of fwd / bckwd / opt) on ``samples``
        samples, by part; the parts add up to the step. The one clock every runner uses (``ak.Session``,
        the Cerebras loop, the facades).

        A step that runs the model (fwd or bckwd) carries its collectives (``comm``), the pipeline's
        fill and drain (``bubble``) and its traffic with the host (``io``). A ragged last batch (``samples`` below the program's batch) runs the
        same program on fewer samples: every part scales with it.
        """
        parts = {s: self.sections_s.get(s, 0.0) for s in sections}
        if "fwd" in sections or "bckwd" in sections:
            parts["comm"] = self.sections_s.get("comm", 0.0)
            parts["bubble"] = self.sections_s.get("bubble", 0.0)
            parts["io"] = self.sections_s.get("io", 0.0)
            if self.input_s:
                parts["input"] = self.input_s
        if samples is not None and self.batch_size and samples != self.batch_size:
            parts = {k: v * samples / self.batch_size for k, v in parts.items()}
        return parts

    def io_text(self) -> str:
        """One line on the host link: what crosses it per step, the call's round trip, what the chip waits."""
        per_call = "1 step per call" if self.device_iterations == 1 else f"{self.device_iterations} steps per call"
        moved = (f"{fmt_bytes(self.io_in_bytes)} in, {fmt_bytes(self.io_out_bytes)} out per step"
                 if self.io_in_bytes or self.io_out_bytes else "no data (synthetic)")
        if self.io_overlapped:
            return (f"  host link: {moved}, copied while the previous step computes (the host queues work "
                    f"asynchronously); {fmt_s(self.io_s)} per step left over")
        line = (f"  host link: {moved}; {fmt_s(self.round_trip_s)} round trip per call ({per_call}); the chip waits "
                f"{fmt_s(self.io_s)} per step")
        if self.stream_syncs:  # a runtime whose every copy waits for the host (Poplar): say where the wait goes
            how = ("grouped, one per direction" if self.stream_grouped else
                   "one per input and output tensor, each where the step needs it; group_host_sync=True groups them")
            line += (f"\n  stream copies: {self.stream_syncs} per step ({how}), each a sync with the host: "
                     f"{fmt_s(self.stream_s)} of that wait, whatever the device iterations"
                     + ("; every step's outputs come back (output mode 'all')"
                        if self.training and self.output_mode == "all" else ""))
        return line

    def input_text(self) -> str:
        """One line on the host's input pipeline: its rate, a batch's time from it, what the chip waits."""
        feed = self.batch_size / self.input_rate if self.input_rate else 0.0
        head = (f"  input pipeline: {fmt_sig(self.input_rate or 0.0)} samples/s (given), a batch of {self.batch_size} "
                f"every {fmt_s(feed)}; ")
        if not self.input_overlap:
            return head + ("it runs in the training process between steps (no loader workers), so the chip waits all "
                           f"of it: {fmt_s(self.input_s)} per step")
        if self.input_s:
            return head + f"the chip waits {fmt_s(self.input_s)} per step for it (the bound)"
        return head + "it keeps up with the chip"

    def top(self, n: int = 10) -> list[KernelTime]:
        return sorted(self.kernels, key=lambda k: k.time_s, reverse=True)[:n]

    def summary(self, n: int = 8) -> str:
        tput = f"{fmt_sig(self.throughput)} samples/s"
        if self.tokens_per_s:
            tput += f", {fmt_sig(self.tokens_per_s)} tokens/s"
        lines = [
            f"PerfReport (MODELLED, not measured): {self.target} x {self.chips} [{self.family}], mode {self.mode!r}, "
            f"{self.precision}, batch {self.batch_size}, {'training' if self.training else 'inference'}"
            + (f" ({self.optimizer}" + (f", {self.optimizer_state} state" if self.optimizer_state not in ("", "mixed")
                                        else "") + ")" if self.optimizer else "")
            + (f", stack {self.stack!r}" if self.stack else ""),
            *([f"  stack: {self.stack_note}"] if self.stack_note else []),
            f"  step time {fmt_s(self.step_time_s)}; throughput {tput}"
            + (f"; energy {self.energy_j:.3g} J per step" if self.energy_j else ""),
            "  sections: " + ", ".join(f"{k} {fmt_s(v)}" for k, v in self.sections_s.items() if v),
            "  utilization: " + utilization_text(self.utilization),
            *([f"  host fallback: {self.host_partitions} partition(s) on the host CPU, {fmt_s(self.host_s)} per step; "
               f"transfers over the host link {fmt_s(self.transfer_s)} per step (both inside the sections above)"]
              if self.host_partitions else []),
            *([self.io_text()] if self.round_trip_s or self.io_s else []),
            *([self.input_text()] if self.input_rate else []),
            *bound_text(self.bound_by, self.utilization.get("compute", 0.0)),
            f"  slowest kernels (of {len(self.kernels)}):",
        ]
        for k in self.top(n):
            lines.append(f"    {k.name:<34} {fmt_s(k.time_s):>10} {k.bound:<13} {k.units}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def to_rows(self) -> list[dict[str, Any]]:
        return [asdict(k) for k in self.kernels]

    def to_chrome_trace(self, path: str | os.PathLike[str]) -> str:
        """Write the timeline as Chrome trace JSON (opens in Perfetto or chrome://tracing)."""
        lanes: dict[str, int] = {}
        events: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": f"{self.target} (modelled)"}}]
        for e in self.events:
            tid = lanes.setdefault(e.lane, len(lanes))
            events.append({"name": e.name, "cat": e.section, "ph": "X", "pid": 0, "tid": tid,
                           "ts": e.start_s * 1e6, "dur": max(e.duration_s * 1e6, 0.001),
                           "args": {"section": e.section}})
        for lane, tid in lanes.items():
            events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": lane}})
        doc = {"traceEvents": events, "displayTimeUnit": "ns",
               "otherData": {"accelkit": "modelled timeline, not a measurement", "assumptions": self.assumptions}}
        Path(path).parent.mkdir(parents=True, exist_ok=True)  # "out/trace.json" works in a fresh folder
        with open(path, "w") as f:
            json.dump(doc, f)
        return str(path)


def fmt_pct(v: float) -> str:
    """A share as a percentage a reader can trust: ``"6%"``, ``"0.04%"`` (never ``"0%"`` for a share above zero)."""
    if v <= 0:
        return "0%"
    if v < 0.01:
        return f"{v * 100:.1g}%" if v >= 5e-6 else "<0.001%"
    return f"{v:.0%}"


TINY_UTILIZATION = 0.05  # below this the chip mostly idles: say why instead of printing a bare "0%"


def utilization_text(utilization: dict[str, float]) -> str:
    """``"compute 6%, hbm 2%"``, with tiny shares written out (``0.04%``) and framed for the reader."""
    text = ", ".join(f"{k} {fmt_pct(v)}" for k, v in utilization.items())
    compute = utilization.get("compute")
    if compute is not None and compute < TINY_UTILIZATION:
        text += (" (the model is far too small to fill this chip: most of its compute units idle; "
                 "a bigger batch or model, or a smaller chip, would use more of it)")
    return text


def bound_text(bound_by: dict[str, float], compute_utilization: float) -> list[str]:
    """What sets each kernel's time, in words that agree with the utilization: a kernel "bound by compute" runs
    as fast as the compute units its shape can use, which for a small kernel is a small part of the chip."""
    if not bound_by:
        return []
    shares = ", ".join(f"{k} {fmt_pct(v)}" for k, v in sorted(bound_by.items(), key=lambda kv: -kv[1]))
    line = f"  what limits each kernel (share of the step{'; host: waiting for the host' if 'host' in bound_by else ''}): {shares}"
    if bound_by.get("compute", 0.0) >= 0.5 and compute_utilization < 0.5:
        line += (f"; compute-bound kernels are limited by the compute units their shapes can fill, which reach "
                 f"{fmt_pct(compute_utilization)} of the chip's peak here, not by the chip's full speed")
    if bound_by.get("latency", 0.0) >= 0.5:
        line += ("; latency-bound kernels take their fixed cost however little they compute (a launch, a sync, an "
                 "IPU op's program length): a bigger batch would do more work in about the same time")
    return [line]


def fmt_bytes(n: float) -> str:
    """``"40 B"``, ``"3.1 kB"``, ``"19.3 MB"`` (decimal units)."""
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return f"{n / div:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_s(s: float) -> str:
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"
