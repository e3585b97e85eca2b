"""Measure a model on this host: time and FLOPs per ATen op and per module, peak memory.

Every figure in a :class:`HostProfile` is MEASURED on the CPU running this code, not modelled:

- ``total_time_s``: wall time of one run (forward, or forward + backward with ``training=True``),
  ``time.perf_counter`` around the call, mean of ``runs`` runs after ``warmup`` warm-up runs.
- per-op ``time_s``: self CPU time of each ATen op per run, from ``torch.profiler`` in separate
  runs (the profiler adds a little time to every op, so these add up to a bit more than the
  ATen part of the wall time; compare them with each other, not with ``total_time_s``).
- ``flops``: counted by ``torch.utils.flop_counter.FlopCounterMode`` on one run. It has formulas
  for matmul-type ops (mm, addmm, bmm, convolution, attention) and counts 0 for elementwise,
  normalisation, softmax and embedding ops, so the totals are the matmul FLOPs of the model.
  (Its attention formula is registered for the CUDA kernels only; accelkit adds the CPU kernel
  ``_scaled_dot_product_flash_attention_for_cpu`` with the same formula.)
- ``peak_memory_bytes``: the peak of bytes held by PyTorch's CPU allocator during a run, above
  what was held before it (activations, temporaries, gradients), from the profiler's memory events
  (``profile_memory=True``). Parameters and inputs, allocated before the run, are not included.
- ``per_module``: forward wall time of each module at ``module_depth`` (forward pre/post hooks
  with ``perf_counter``, in the same runs as ``total_time_s``) and its FLOPs (FlopCounterMode's per-module counts; with
  ``training=True`` these include the backward).

What the same model would take on an accelerator is simulated elsewhere (``accelkit.sim``).
"""

from __future__ import annotations

import html
import inspect
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn
from torch.profiler import ProfilerActivity
from torch.profiler import profile as torch_profile
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

from accelkit.boundary import flag, real_weights, whole
from accelkit.errors import AccelkitError, ModelError
from accelkit.graph.capture import user_code
from accelkit.profiler.portability import (
    PortabilityFinding,
    find_portability_issues,
    fix_for,
    format_findings,
)

# torch's flop registry has the SDPA formula for the CUDA attention kernels only; the CPU kernel
# computes the same thing, so it gets the same (PyTorch's own) formula.
# (The module-level formulas are already shape-wrapped; FlopCounterMode wraps custom ones itself.)
_CPU_ATTENTION_FLOPS = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: inspect.unwrap(flop_counter.sdpa_flop),
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward:
        inspect.unwrap(flop_counter.sdpa_backward_flop),
}

FLOPS_NOTE = ("matmul-type ops only, counted by torch's FlopCounterMode; "
              "elementwise, norm, softmax and embedding ops count 0")


@dataclass(frozen=True)
class OpRow:
    """One ATen op as measured: per-run self CPU time, FLOPs and calls, share of the ATen time."""

    op: str        # the profiler's name, e.g. "aten::addmm"
    time_s: float  # self CPU time per run (children excluded), mean over the measured runs
    flops: int     # per run, all calls together (0 where FlopCounterMode has no formula)
    calls: int     # per run
    share: float   # time_s / the summed time_s of all ATen ops


@dataclass(frozen=True)
class ModuleRow:
    """One module at the chosen depth: its forward wall time per run and its FLOPs per run."""

    module: str            # dotted path; "<other>" for what runs outside the listed modules
    type: str              # class name
    forward_time_s: float  # forward only, also with training=True
    flops: int             # forward, plus backward with training=True


@dataclass(repr=False)
class HostProfile:
    """A model MEASURED on this host. ``summary()`` for text, ``top(n)`` for the hot ops."""

    model_name: str
    ops: list[OpRow]                 # sorted by time_s, hottest first
    per_module: list[ModuleRow]
    total_time_s: float              # wall time per run: the median of the ``runs`` fastest measured runs
    run_times_s: list[float]         # each measured run (more than ``runs`` when the first ones disagreed)
    total_flops: int                 # per run
    param_count: int
    param_bytes: int
    peak_memory_bytes: int | None    # None when the profiler gave no memory events
    host: str                        # "CPU model, N torch threads, torch X"
    cpu: str
    threads: int
    training: bool = False
    runs: int = 3
    warmup: int = 1
    portability: list[PortabilityFinding] = field(default_factory=list)
    spread: float = 0.0              # (slowest - fastest) / median of the runs kept: how far they agree
    stable: bool = True              # the kept runs agree within STABLE_SPREAD

    # ---- derived ----------------------------------------------------------------------------
    @property
    def achieved_flops_per_s(self) -> float:
        return self.total_flops / self.total_time_s if self.total_time_s > 0 else 0.0

    @property
    def op_time_s(self) -> float:
        """Summed self time of the ATen ops per run (under the profiler)."""
        return sum(r.time_s for r in self.ops)

    def top(self, n: int = 10) -> list[OpRow]:
        """The ``n`` ops that take the most time."""
        return self.ops[:n]

    def top_flops(self, n: int = 5) -> list[OpRow]:
        """The ``n`` ops with the most FLOPs (ties by name, so the order is stable)."""
        counted = [r for r in self.ops if r.flops > 0]
        return sorted(counted, key=lambda r: (-r.flops, r.op))[:n]

    def to_rows(self) -> list[dict[str, Any]]:
        """The op rows as plain dicts (for pandas, JSON, CSV)."""
        return [asdict(r) for r in self.ops]

    def module_rows(self) -> list[dict[str, Any]]:
        return [asdict(r) for r in self.per_module]

    # ---- views ------------------------------------------------------------------------------
    @property
    def what(self) -> str:
        step = "forward + backward" if self.training else "forward"
        runs = f"{self.runs} run" + ("s" if self.runs != 1 else "")
        warmup = f"{self.warmup} warm-up" + ("s" if self.warmup != 1 else "")
        kept = runs if self.runs == 1 else f"median of the fastest {runs}"
        return f"{self.model_name} {step}, {kept} after {warmup}"

    def headline(self) -> str:
        return f"MEASURED on this host ({self.cpu}, {self.threads} torch threads): {self.what}"

    def totals(self) -> list[tuple[str, str]]:
        runs = ", ".join(f"{t * 1e3:.3g}" for t in self.run_times_s)
        peak = ("n/a (no memory events)" if self.peak_memory_bytes is None else
                f"{_fmt_bytes(self.peak_memory_bytes)} above parameters and inputs (profiler memory events)")
        return [
            ("wall time per run", f"{self.total_time_s * 1e3:.3f} ms (runs: {runs} ms; the fastest "
                                  f"{self.runs} agree within {self.spread:.0%})" if self.stable else
             f"{self.total_time_s * 1e3:.3f} ms, rough: the runs disagree by {self.spread:.0%} even after "
             f"{len(self.run_times_s)} runs (runs: {runs} ms); this machine is busy, measure again when it is idle"),
            ("FLOPs per run", f"{_fmt_count(self.total_flops)}FLOP ({FLOPS_NOTE})"),
            ("achieved", f"{_fmt_count(self.achieved_flops_per_s)}FLOP/s (FLOPs / wall time)"),
            ("parameters", f"{self.param_count:,} ({_fmt_bytes(self.param_bytes)})"),
            ("peak memory", peak),
            ("ATen op time", f"{self.op_time_s * 1e3:.3f} ms per run of self time under torch.profiler"),
            ("host", self.host),
        ]

    def summary(self, n: int = 15) -> str:
        """A text report: totals, the ``n`` hottest ops, the modules, the portability findings."""
        lines = [self.headline()]
        lines += [f"  {k:<18} {v}" for k, v in self.totals()]
        head = f"{'op':<44} {'self ms/run':>11} {'share':>6} {'calls':>6} {'FLOPs':>9}"
        lines += ["", head, "-" * len(head)]
        for r in self.top(n):
            lines.append(f"{r.op[:44]:<44} {r.time_s * 1e3:>11.4f} {r.share:>6.1%} {r.calls:>6} "
                         f"{_fmt_count(r.flops):>9}")
        if len(self.ops) > n:
            rest = self.ops[n:]
            lines.append(f"... {len(rest)} more ops: {sum(r.time_s for r in rest) * 1e3:.4f} ms, "
                         f"{sum(r.share for r in rest):.1%}")
        if self.per_module:
            head = f"{'module':<32} {'type':<24} {'fwd ms/run':>10} {'FLOPs':>9}"
            lines += ["", head, "-" * len(head)]
            for m in self.per_module:
                lines.append(f"{m.module[:32]:<32} {m.type[:24]:<24} {m.forward_time_s * 1e3:>10.4f} "
                             f"{_fmt_count(m.flops):>9}")
        lines += ["", "Portability (from the captured graph):", format_findings(self.portability)]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (f"HostProfile({self.what}: {self.total_time_s * 1e3:.3f} ms/run, "
                f"{_fmt_count(self.total_flops)}FLOP, {len(self.ops)} ops, "
                f"{len(self.portability)} portability finding(s); MEASURED on {self.cpu}, {self.threads} threads)")

    def _repr_html_(self) -> str:
        e = html.escape
        totals = "".join(f"<tr><th style='text-align:left'>{e(k)}</th><td style='text-align:left'>{e(v)}</td></tr>"
                         for k, v in self.totals())
        ops = "".join(
            f"<tr><td style='text-align:left'>{e(r.op)}</td><td>{r.time_s * 1e3:.4f}</td>"
            f"<td>{r.share:.1%}</td><td>{r.calls}</td><td>{_fmt_count(r.flops)}</td></tr>"
            for r in self.top(15))
        mods = "".join(
            f"<tr><td style='text-align:left'>{e(m.module)}</td><td style='text-align:left'>{e(m.type)}</td>"
            f"<td>{m.forward_time_s * 1e3:.4f}</td><td>{_fmt_count(m.flops)}</td></tr>"
            for m in self.per_module)
        if self.portability:
            port = "<ul>" + "".join(
                f"<li><b>{e(f.kind)}</b> {e(f.op or '')} {e(f.source or '')}: {e(f.detail)}"
                f"<br><i>fix:</i> {e(f.fix)}</li>" for f in self.portability) + "</ul>"
        else:
            port = f"<p>{e(format_findings([]))}</p>"
        more = f"<p>... {len(self.ops) - 15} more ops</p>" if len(self.ops) > 15 else ""
        return (
            f"<p><b>{e(self.headline())}</b></p><table>{totals}</table>"
            "<table><tr><th>op</th><th>self ms/run</th><th>share</th><th>calls</th><th>FLOPs</th></tr>"
            f"{ops}</table>{more}"
            "<table><tr><th>module</th><th>type</th><th>fwd ms/run</th><th>FLOPs</th></tr>"
            f"{mods}</table><p><b>Portability</b> (from the captured graph)</p>{port}"
        )


# ---- the measurement ------------------------------------------------------------------------
@contextmanager
def _quiet_fd2() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for the duration: for C++ log lines that bypass ``sys.stderr``
    (in JupyterLab they would show as a red stderr box above the profile). Only the profiler's start and
    stop run inside it, never the model, so nothing the model itself reports is hidden."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def profile(
    model: nn.Module,
    example_inputs: torch.Tensor | tuple[torch.Tensor, ...],
    *,
    runs: int = 3,
    warmup: int = 1,
    training: bool = False,
    module_depth: int = 1,
    check_portability: bool = True,
) -> HostProfile:
    """Measure ``model(*example_inputs)`` on this host with torch.profiler and FlopCounterMode.

    ``training=False`` runs the forward under ``torch.no_grad()`` in eval mode; ``training=True``
    runs forward + backward of a loss in train mode (the forward's first output when it is a
    scalar, else the sum of all its floating-point outputs). The model is left as it was: the
    train/eval flags, gradients and buffers (e.g. BatchNorm statistics) are restored, the global
    random state too, and the caller's input tensors are never modified (each run gets a copy).
    With ``check_portability`` the model is also captured to list what may not port.
    """
    if not isinstance(model, nn.Module):
        raise AccelkitError(
            f"model must be a torch.nn.Module, got {type(model).__name__}",
            fix="Wrap the function in an nn.Module whose forward calls it.")
    inputs = as_input_tuple(example_inputs)
    real_weights(model, entry="ak.profile", fix="profile a model built on the CPU (not under torch.device('meta')); "
                 "for a model too big for this machine, ak.compile(..., target='host') models it instead")
    if any(t.device.type == "meta" for t in inputs):
        raise ModelError("ak.profile measures real work, but the example inputs are on the meta device (shapes, no "
                         "values): nothing would run, and any time would be made up", fix="pass CPU tensors")
    whole("runs", runs, example="runs=3")
    whole("warmup", warmup, at_least=0, example="warmup=1")
    whole("module_depth", module_depth, example="module_depth=1")
    flag("training", training)

    grad_mode = torch.enable_grad if training else torch.no_grad
    with _model_preserved(model, training), torch.random.fork_rng(devices=[]), grad_mode():
        for _ in range(warmup):
            _step(model, _fresh(inputs), training)

        with _module_timer(model, module_depth) as module_times:
            timed = [_step(model, _fresh(inputs), training) for _ in range(runs)]
            # a busy machine makes single runs slow: repeat until the fastest `runs` agree (or the budget ends)
            deadline = time.perf_counter() + MAX_EXTRA_S
            while (_spread(_fastest(timed, runs)) > STABLE_SPREAD and len(timed) < runs * MAX_RUNS_FACTOR
                   and time.perf_counter() < deadline):
                timed.append(_step(model, _fresh(inputs), training))
        kept = _fastest(timed, runs)
        module_scale = runs / len(timed)  # the module timer summed every run

        profiles = []  # one profile per run: each op's time is its median over the runs, so one slow run
        for args in [_fresh(inputs) for _ in range(runs)]:  # cannot crown the wrong op (inputs copied up front)
            prof = torch_profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True)
            with _quiet_fd2():  # libkineto writes "USDT: ... profiler_start" to the process's stderr
                prof.__enter__()
            try:
                _step(model, args, training)
            finally:
                with _quiet_fd2():  # ... and "profiler_stop"
                    prof.__exit__(None, None, None)
            profiles.append(prof)

        counter = _count_flops(model, inputs, training)

    total_time_s = statistics.median(t for _, t in kept)
    forward_time_s = statistics.median(f for f, _ in kept)
    module_times = {k: v * module_scale for k, v in module_times.items()}
    spread = _spread(kept)
    flops_by_op = {_profiler_name(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    cpu, threads = host_cpu(), torch.get_num_threads()
    result = HostProfile(
        model_name=type(model).__name__,
        ops=_op_rows(profiles, flops_by_op),
        per_module=_module_rows(model, module_depth, counter, module_times, runs, forward_time_s),
        total_time_s=total_time_s,
        run_times_s=[t for _, t in timed],
        total_flops=int(counter.get_total_flops()),
        param_count=sum(p.numel() for p in model.parameters()),
        param_bytes=sum(p.numel() * p.element_size() for p in model.parameters()),
        peak_memory_bytes=max((m for m in map(_peak_memory, profiles) if m is not None), default=None),
        host=f"{cpu}, {threads} torch threads, torch {torch.__version__}",
        cpu=cpu,
        threads=threads,
        training=training,
        runs=runs,
        warmup=warmup,
        spread=spread,
        stable=spread <= STABLE_SPREAD,
    )
    if check_portability:
        result.portability = _portability(model, inputs)
    return result


def as_input_tuple(example_inputs: Any) -> tuple[torch.Tensor, ...]:
    """``example_inputs`` as the tuple of positional tensors forward takes, or a clear error."""
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, tuple | list):
        bad = [f"[{i}] {type(t).__name__}" for i, t in enumerate(example_inputs)
               if not isinstance(t, torch.Tensor)]
        if not bad:
            return tuple(example_inputs)
        got = f"a {type(example_inputs).__name__} with non-tensor items: {', '.join(bad)}"
    else:
        got = type(example_inputs).__name__
    raise AccelkitError(
        f"example_inputs must be a tensor or a tuple of tensors, got {got}",
        fix="Pass forward's positional arguments as a tuple of tensors, e.g. (x,) or (input_ids,); "
            "set non-tensor options on the model before profiling.")


def flop_counter_mode() -> FlopCounterMode:
    """torch's FlopCounterMode, with the CPU attention kernel counted like the CUDA ones and a grouped
    convolution's weight gradient counted per group (``accelkit.graph.cost.grouped_conv_backward_flop``)."""
    from accelkit.graph.cost import FLOP_FORMULA_FIXES

    return FlopCounterMode(display=False, custom_mapping={**_CPU_ATTENTION_FLOPS, **FLOP_FORMULA_FIXES})


def host_cpu() -> str:
    """The CPU model name from /proc/cpuinfo, else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


# ---- helpers --------------------------------------------------------------------------------
def _fresh(inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """A copy of the inputs for one run, so a forward that changes its input changes only the copy."""
    return tuple(t.detach().clone().requires_grad_(t.requires_grad) for t in inputs)


def _step(model: nn.Module, args: tuple[torch.Tensor, ...], training: bool) -> tuple[float, float]:
    """One run; returns (forward seconds, whole-run seconds)."""
    if training:  # like optimizer.zero_grad(): each step's backward writes fresh gradients
        for p in model.parameters():
            p.grad = None
    t0 = time.perf_counter()
    with user_code(model, args):
        out = model(*args)
    t1 = time.perf_counter()
    if training:
        loss = _loss_of(out, type(model).__name__)
        with user_code(model, args, "backward"):
            loss.backward()
    t2 = time.perf_counter()
    del out
    return t1 - t0, t2 - t0


def _count_flops(model: nn.Module, inputs: tuple[torch.Tensor, ...], training: bool) -> FlopCounterMode:
    """One more run under FlopCounterMode (after the measured ones, so it never costs them time)."""
    counter = flop_counter_mode()
    try:
        with counter:
            _step(model, _fresh(inputs), training)
    except AccelkitError as err:  # the plain runs worked, so it is the counting that failed
        cause = err.__cause__ or err
        raise AccelkitError(
            f"counting FLOPs with torch's FlopCounterMode failed on {type(model).__name__}: "
            f"{type(cause).__name__}: {cause}",
            fix="Profile the model without its custom ops, or report the op to accelkit.") from cause
    return counter


def _flat_tensors(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):  # includes transformers' ModelOutput
        return [t for v in out.values() for t in _flat_tensors(v)]
    if isinstance(out, tuple | list):
        return [t for v in out for t in _flat_tensors(v)]
    return []


def _loss_of(out: Any, model_name: str) -> torch.Tensor:
    """The training loss: the first output if it is a scalar, else the sum of all outputs."""
    flat = _flat_tensors(out)
    if flat and flat[0].ndim == 0 and flat[0].is_floating_point() and flat[0].requires_grad:
        return flat[0]
    tensors = [t for t in flat if t.is_floating_point() and t.requires_grad]
    if not tensors:
        raise AccelkitError(
            f"training=True, but no output of {model_name}.forward requires grad",
            fix="Check that the model has trainable parameters (requires_grad=True) used in forward, "
                "or profile with training=False.")
    return torch.stack([t.sum() for t in tensors]).sum()


@contextmanager
def _model_preserved(model: nn.Module, training: bool) -> Iterator[None]:
    """Put the model in train/eval mode for profiling; restore modes, gradients and buffers after."""
    modes = [(m, m.training) for m in model.modules()]
    grads = [(p, p.grad) for p in model.parameters()]
    buffers = [(m, key, b, b.detach().clone()) for m in model.modules()
               for key, b in m._buffers.items() if b is not None]
    for p, _ in grads:
        p.grad = None  # backward must not accumulate into the caller's gradient tensors
    model.train(training)
    try:
        yield
    finally:
        for m, was_training in modes:
            m.training = was_training
        for p, g in grads:
            p.grad = g
        with torch.no_grad():
            for m, key, b, saved in buffers:
                m._buffers[key] = b
                b.copy_(saved)


def _modules_at(model: nn.Module, depth: int) -> list[tuple[str, nn.Module]]:
    """The module tree cut at ``depth``: modules at that depth, plus shallower leaves.

    ModuleList / ModuleDict have no forward of their own, so they are not a level: ``h.0``,
    ``h.1`` of a transformer are at the same depth as ``h`` would be.
    """
    out: list[tuple[str, nn.Module]] = []

    def walk(prefix: str, mod: nn.Module, level: int) -> None:
        for name, child in mod.named_children():
            path = prefix + name
            if isinstance(child, nn.ModuleList | nn.ModuleDict):
                walk(path + ".", child, level)
            elif level == depth or next(child.children(), None) is None:
                out.append((path, child))
            else:
                walk(path + ".", child, level + 1)

    walk("", model, 1)
    return out


@contextmanager
def _module_timer(model: nn.Module, depth: int) -> Iterator[dict[str, float]]:
    """Forward wall time per module path at ``depth``, summed over the runs inside the block."""
    totals: dict[str, float] = defaultdict(float)
    starts: dict[str, list[float]] = defaultdict(list)
    handles = []
    for name, mod in _modules_at(model, depth):
        def pre(_m: nn.Module, _args: Any, name: str = name) -> None:
            starts[name].append(time.perf_counter())

        def post(_m: nn.Module, _args: Any, _out: Any, name: str = name) -> None:
            if starts[name]:
                totals[name] += time.perf_counter() - starts[name].pop()

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post, always_call=True))
    try:
        yield totals
    finally:
        for h in handles:
            h.remove()


def _profiler_name(op: Any) -> str:
    """FlopCounterMode's key (the OpOverloadPacket ``aten.mm``) as the profiler names it: ``aten::mm``."""
    return str(op).replace(".", "::", 1)


STABLE_SPREAD = 0.25  # the kept runs agree when the slowest is within 25% of the fastest (of their median)
MAX_RUNS_FACTOR = 5  # at most this many times `runs` measured runs ...
MAX_EXTRA_S = 3.0  # ... within this many extra seconds


def _fastest(timed: list[tuple[float, float]], n: int) -> list[tuple[float, float]]:
    return sorted(timed, key=lambda ft: ft[1])[:n]


def _spread(timed: list[tuple[float, float]]) -> float:
    """(slowest - fastest) / median of the runs' wall times: 0 when they agree exactly."""
    times = [t for _, t in timed]
    mid = statistics.median(times) if times else 0.0
    return (max(times) - min(times)) / mid if mid > 0 else 0.0


def _op_rows(profiles: list[Any], flops_by_op: dict[str, int]) -> list[OpRow]:
    per_run: dict[str, list[tuple[float, int]]] = {}
    for prof in profiles:
        for e in prof.key_averages():
            if e.key.startswith("aten::"):
                per_run.setdefault(e.key, []).append((e.self_cpu_time_total / 1e6, e.count))
    stats: dict[str, tuple[float, int]] = {}
    for op, seen in per_run.items():  # an op missing from a run took no time in it
        seen = seen + [(0.0, 0)] * (len(profiles) - len(seen))
        stats[op] = (statistics.median(t for t, _ in seen), round(statistics.median(c for _, c in seen)))
    for op in flops_by_op:  # an op with FLOPs the profiler did not list keeps its FLOPs in the table
        stats.setdefault(op, (0.0, 0))
    aten_time = sum(t for t, _ in stats.values()) or 1.0
    rows = [OpRow(op, t, flops_by_op.get(op, 0), calls, t / aten_time) for op, (t, calls) in stats.items()]
    return sorted(rows, key=lambda r: (-r.time_s, r.op))


def _module_rows(model: nn.Module, depth: int, counter: FlopCounterMode, times: dict[str, float],
                 runs: int, forward_time_s: float) -> list[ModuleRow]:
    counts = counter.get_flop_counts()
    root = type(model).__name__
    rows = []
    for name, mod in _modules_at(model, depth):
        flops = int(sum(counts.get(f"{root}.{name}", {}).values()))
        rows.append(ModuleRow(name, type(mod).__name__, times.get(name, 0.0) / runs, flops))
    rest_flops = int(counter.get_total_flops()) - sum(r.flops for r in rows)
    rest_time = max(0.0, forward_time_s - sum(r.forward_time_s for r in rows))
    rows.append(ModuleRow("<other>", f"{root} (rest)", rest_time, rest_flops))
    return rows


def _peak_memory(prof: Any) -> int | None:
    """Peak bytes held by allocations made during the profiled runs, from the allocation events."""
    try:
        from torch._C._profiler import _EventType

        events: list[tuple[int, int, int]] = []
        stack = list(prof.profiler.kineto_results.experimental_event_tree())
        while stack:
            e = stack.pop()
            if e.tag == _EventType.Allocation:
                alloc = e.extra_fields
                if alloc.device.type == "cpu":
                    events.append((e.start_time_ns, alloc.alloc_size, alloc.ptr))
            stack.extend(e.children)
    except Exception:  # a private API: without it the figure is reported as unavailable
        return None
    if not events:
        return None
    live: set[int] = set()
    held = peak = 0
    for _, size, ptr in sorted(events, key=lambda ev: ev[0]):
        if size > 0:
            live.add(ptr)
            held += size
        elif ptr in live:  # frees of tensors allocated before profiling are not ours to count
            live.discard(ptr)
            held += size
        peak = max(peak, held)
    return peak


def _portability(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[PortabilityFinding]:
    with torch.random.fork_rng(devices=[]):
        try:
            return find_portability_issues(model, _fresh(inputs))
        except Exception as exc:  # the measured profile stays useful when capture itself breaks
            return [PortabilityFinding(
                kind="capture-error", op=None, module=None, source=None,
                detail=f"capture failed with {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                fix=fix_for("capture-error"))]


def _fmt_count(n: float) -> str:
    for scale, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.3g} "


def _fmt_bytes(n: int) -> str:
    return f"{_fmt_count(n)}B"
