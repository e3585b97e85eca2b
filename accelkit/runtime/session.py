"""``ak.Session``: train and infer with real PyTorch numerics on a simulated accelerator clock.

    session = ak.Session(model, target="sn40l", optimizer=opt, loss_fn=nn.CrossEntropyLoss())
    for x, y in session.loader(train_loader):          # progress bar, prefetch, input-bound check
        step = session.run(x, labels=y)                 # real forward/backward/step on this CPU
        step.loss, step.outputs, step.simulated_time_s  # ... and the modelled time on the target
    print(session.report())                             # simulated totals, labelled as modelled

Numerics: in ``fp32`` a step is exactly the plain PyTorch step (same ops, same order). In ``bf16`` /
``fp16`` the forward runs under ``torch.autocast`` with that dtype, which is how the accelerators'
mixed precision behaves (16-bit matmuls, fp32 master weights and reductions); outputs then differ
from fp32 by roughly the 16-bit rounding: relative error ~1e-2 (bf16, 8-bit mantissa) or ~1e-3
(fp16), which is the documented tolerance.

The clock: the model is compiled once for the target (on the first step, with the real input
shapes) and each step adds the modelled time of the sections it ran (fwd / bckwd / opt and the
multi-chip communication). Nothing about the clock is measured. ``input_rate=`` (samples per second your
DataLoader delivers, measured with ``accelkit.profiler.input_rate``) makes a step wait for the data it cannot be
fed in time, as ``ak.compile``'s does (``input_overlap=False``: a loader in the training process, whose every
batch adds to its step); ``output_mode=`` is PopTorch's OutputMode and ``group_host_sync=`` PopART's groupHostSync,
as ``ak.compile`` takes them; the
optimizer step's time and state follow the session's optimizer (AdamW, Adam, SGD with or without momentum;
another optimizer is modelled as AdamW, and the report says which update it modelled; ``optimizer_state=`` says
where it keeps its state, and ``stages=`` where a pipeline's blocks begin, as ``ak.compile`` takes them);
``recompute=`` trades the memory of kept activations for a recomputed forward, as ``ak.compile`` takes it (PopART's
autoRecomputation); ``session.loader`` measures instead how long this CPU's loop waited.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from accelkit import boundary
from accelkit.compiler.options import CompileOptions
from accelkit.compiler.program import CompiledProgram
from accelkit.cost.report import utilization_text
from accelkit.errors import AccelkitError, CaptureError, ModelError
from accelkit.graph.capture import optimizer_kind, user_code
from accelkit.graph.ir import SECTIONS  # the sections a step runs (also read here by older imports)
from accelkit.hardware.precision import EMULATED as PRECISION_DTYPES
from accelkit.hardware.precision import (
    TOLERANCE,  # noqa: F401 - re-exported
    CpuAutocast,
)
from accelkit.hardware.spec import AcceleratorSpec, fmt_sig
from accelkit.workflow.compiling import compile_with

CHECKPOINT_SCHEMA = 3  # accelkit.runtime.checkpoint.SCHEMA (a test keeps them equal)
PROGRAM_CACHE_SIZE = 16
"""A Session keeps the compiled programs of this many input shapes (the least recently used is dropped first), so
a run over many sequence lengths does not grow without bound; a shape seen again after it was dropped is
compiled again."""


def _needs_inputs(model: nn.Module) -> bool:
    """Whether ``model``'s ``forward`` has a parameter without a default (a counter that reads only its buffers
    takes none)."""
    import inspect

    try:
        params = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               for p in params)


class SessionError(AccelkitError, ValueError):
    """A session used in a way that cannot work: the message says which argument and the fix."""


@dataclass
class StepResult:
    """One step: real ``outputs`` and ``loss`` (computed on this CPU) and the modelled time."""

    outputs: Any
    loss: torch.Tensor | None
    simulated_time_s: float  # modelled on the target, not measured
    host_time_s: float  # measured on this host
    sections: tuple[str, ...]
    step: int
    # each micro-batch's outputs, in order, where the step accumulated gradients over several (else one)
    micro_outputs: tuple[Any, ...] = ()


@dataclass
class SessionReport:
    target: str
    mode: str
    precision: str
    chips: int
    steps: int
    samples: int
    simulated_time_s: float
    host_time_s: float
    input_wait_s: float
    utilization: dict[str, float]
    sections_s: dict[str, float]
    notes: list[str] = field(default_factory=list)
    stack: str = ""  # the software stack the modelled clock runs (eager PyTorch on a GPU unless told otherwise)

    @property
    def simulated_throughput(self) -> float:
        return self.samples / self.simulated_time_s if self.simulated_time_s else 0.0

    def __str__(self) -> str:
        lines = [
            f"Session on {self.chips} x {self.target} (mode {self.mode!r}, {self.precision}): {self.steps} steps, "
            f"{self.samples} samples",
            f"  MODELLED on {self.target}" + (f" running {self.stack}" if self.stack else "")
            + f": {self.simulated_time_s:.4g} s in all, "
            f"{fmt_sig(self.simulated_throughput)} samples/s; "
            + ", ".join(f"{k} {v:.3g} s" for k, v in self.sections_s.items() if v),
            "  modelled utilization: " + utilization_text(self.utilization),
            f"  MEASURED on this host: {self.host_time_s:.4g} s of real PyTorch work"
            + (f", {self.input_wait_s:.3g} s waiting for input" if self.input_wait_s else ""),
        ]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _meta_text(x: Any) -> str:
    leaves = [t for t in torch.utils._pytree.tree_flatten(x)[0] if isinstance(t, torch.Tensor)]
    return ", ".join(f"{str(t.dtype).removeprefix('torch.')}[{', '.join(map(str, t.shape))}]" for t in leaves) or "-"


@contextlib.contextmanager
def _labels_blamed(out: Any, labels: Any) -> Any:
    """A loss_fn that rejects what it was given is about the labels (or the outputs), never the model's inputs:
    the error names both with their dtypes and shapes and says what a loss usually takes."""
    try:
        yield
    except AccelkitError:
        raise
    except Exception as exc:  # noqa: BLE001 - the boundary around the user's loss_fn
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        logits = getattr(out, "logits", None)
        outputs = logits if logits is not None else out
        raise ModelError(
            f"loss_fn(outputs, labels) raised {type(exc).__name__}: {first}",
            where=f"outputs ({_meta_text(outputs)}), labels ({_meta_text(labels)})",
            fix="give labels the dtype and shape your loss_fn takes: e.g. cross_entropy takes class indices as "
                "int64 (labels.long()) of shape (batch,), or class probabilities of the outputs' shape and dtype; "
                "mse_loss takes floats of the outputs' shape (labels.float())") from exc


def _first_tensor(x: Any) -> torch.Tensor | None:
    leaves = torch.utils._pytree.tree_flatten(x)[0]
    return next((t for t in leaves if isinstance(t, torch.Tensor)), None)


def _split(x: Any, n: int) -> list[Any]:
    """Split every tensor with a leading batch dim into n micro-batches (others are repeated)."""
    if n == 1:
        return [x]
    leaves, spec = torch.utils._pytree.tree_flatten(x)
    parts = [t.chunk(n, dim=0) if isinstance(t, torch.Tensor) and t.dim() else [t] * n for t in leaves]
    return [torch.utils._pytree.tree_unflatten([p[i] for p in parts], spec) for i in range(n)]


def _cat(outs: list[Any]) -> Any:
    if len(outs) == 1:
        return outs[0]
    leaves = [torch.utils._pytree.tree_flatten(o) for o in outs]
    spec = leaves[0][1]
    merged = []
    for i in range(len(leaves[0][0])):
        vals = [lv[0][i] for lv in leaves]
        if isinstance(vals[0], torch.Tensor) and vals[0].dim():
            merged.append(torch.cat(vals, dim=0))
        elif isinstance(vals[0], torch.Tensor):
            merged.append(torch.stack(vals).mean())  # a scalar (a loss): the micro-batches' mean
        else:
            merged.append(vals[0])
    return torch.utils._pytree.tree_unflatten(merged, spec)


class Session:
    """Run ``model`` on ``target``: real PyTorch numerics, a simulated clock (see the module docstring)."""

    def __init__(
        self,
        model: nn.Module,
        *,
        target: str | AcceleratorSpec,
        optimizer: torch.optim.Optimizer | None = None,
        loss_fn: Callable[..., torch.Tensor] | None = None,
        precision: str = "fp32",
        batch_size: int | None = None,
        micro_batch: int | None = None,
        chips: int = 1,
        parallel: Any = None,
        mode: str = "auto",
        log_dir: str | os.PathLike[str] | None = None,
        fallback: str | None = None,
        stack: str | None = None,
        device_iterations: int = 1,
        synthetic_data: bool = False,
        input_rate: float | None = None,
        input_overlap: bool = True,
        output_mode: str | None = None,
        optimizer_state: str | None = None,
        stages: Any = None,
        group_host_sync: bool = False,
        recompute: str = "none",
    ) -> None:
        if not isinstance(model, nn.Module):
            raise SessionError(f"Session needs an nn.Module, not {type(model).__name__}",
                               fix="pass the model object, e.g. ak.Session(MyNet(), target='sn40l')")
        if not isinstance(precision, str) or precision not in PRECISION_DTYPES:
            raise SessionError(f"precision {precision!r} cannot be emulated on this CPU",
                               fix=f"use one of {list(PRECISION_DTYPES)}")
        # what compile will be asked for at the first step, refused now rather than after it
        options = CompileOptions.check(target, precision=precision, batch_size=batch_size, micro_batch=micro_batch,
                                       chips=chips, mode=mode, parallel=parallel, fallback=fallback, stack=stack,
                                       device_iterations=device_iterations, synthetic_data=synthetic_data,
                                       input_rate=input_rate, input_overlap=input_overlap, output_mode=output_mode,
                                       optimizer=optimizer_kind(optimizer) or "adamw",
                                       optimizer_state=optimizer_state, stages=stages,
                                       group_host_sync=group_host_sync, recompute=recompute, role="session")
        spec = options.spec
        boundary.optimizer(optimizer)
        boundary.function("loss_fn", loss_fn, takes="a function of (outputs, labels) returning the loss",
                          example="loss_fn=torch.nn.CrossEntropyLoss() (or torch.nn.functional.mse_loss)")
        self.model = model
        self.target = spec.name
        self.spec = spec  # the chip itself: a hardware.load()ed chip is not in the catalog to look up by name
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.precision = precision
        self._numerics = precision  # the precision the CPU computes in (Session.from_program may set another)
        self.batch_size = batch_size
        self.micro_batch = micro_batch
        self.chips = chips
        self.parallel = parallel
        self.mode = mode
        self.fallback = fallback  # "host": ops the target refuses run on the host CPU (ak.compile's fallback)
        self.stack = options.stack  # what the clock models (GPU: eager PyTorch unless told otherwise)
        self.options = options  # checked once; every step's compile shares them
        self.device_iterations = device_iterations  # steps per call from the host (one round trip per call)
        self.synthetic_data = synthetic_data
        self.steps = 0
        self.samples = 0
        self.simulated_time_s = 0.0
        self.host_time_s = 0.0
        self.input_wait_s = 0.0
        self.sections_s = dict.fromkeys((*SECTIONS, "comm", "bubble"), 0.0)
        # compiled programs by input shapes, least recently used first; at most PROGRAM_CACHE_SIZE are kept
        self._programs: OrderedDict[Any, Any] = OrderedDict()
        self._fixed_program: Any = None  # set by from_program: the clock's one program
        self._writer = None
        if log_dir is not None:
            _check_log_dir(log_dir)
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as exc:  # pragma: no cover - tensorboard is a dev dependency
                raise SessionError("log_dir needs the tensorboard package", fix="pip install tensorboard") from exc
            self._writer = SummaryWriter(str(log_dir))

    # ---- the compiled program behind the clock ------------------------------------------
    @classmethod
    def from_program(cls, model: nn.Module, program: Any, optimizer: torch.optim.Optimizer | None = None,
                     loss_fn: Callable[..., torch.Tensor] | None = None, *, numerics: str | None = None) -> Session:
        """A session whose clock is an already compiled program (a saved artifact, a build): every step is
        timed by it and nothing is compiled again, as the vendors' runtimes run a PEF or a build. ``numerics``:
        the precision this CPU computes in when the program's own cannot be emulated by autocast (an int8 build
        whose layers round their values to the int8 grid themselves computes in ``"fp32"``); the session still
        reports the program's precision."""
        if not isinstance(program, CompiledProgram):
            raise SessionError(f"Session.from_program needs a compiled program, not {boundary.got(program)}",
                               fix="pass ak.compile(...) or ak.load('model.akp'), e.g. "
                                   "ak.Session.from_program(model, ak.load('model.akp'))")
        micro = program.micro_batch if program.training and program.micro_batch != program.batch_size else None
        session = cls(model, target=program.spec, optimizer=optimizer, loss_fn=loss_fn,
                      precision=numerics or program.precision, batch_size=program.batch_size, micro_batch=micro,
                      chips=program.chips, parallel=program.parallel, mode=program.mode, fallback=program.fallback)
        session.precision = program.precision  # what the clock runs; the CPU computes at session._numerics
        session._fixed_program = program
        session._programs["fixed"] = program
        return session

    def program(self, inputs: tuple[Any, ...], training: bool) -> CompiledProgram:
        """The compiled program for these input shapes (compiled once, then reused)."""
        if self._fixed_program is not None:
            return self._fixed_program
        first = _first_tensor(inputs)
        batch = self.batch_size or (int(first.shape[0]) if first is not None and first.dim() > 1 else 1)
        key = (tuple((tuple(t.shape), t.dtype) for t in torch.utils._pytree.tree_flatten(inputs)[0]
                     if isinstance(t, torch.Tensor)), training)
        if key in self._programs:
            self._programs.move_to_end(key)  # most recently used last; the least recently used goes first
        else:
            micro = self.micro_batch if training else None
            while len(self._programs) >= PROGRAM_CACHE_SIZE:
                self._programs.popitem(last=False)
            # FLOPs and activations scale from these shapes to batch_size
            options = self.options.but(batch_size=batch, micro_batch=micro, training=training)
            try:
                self._programs[key] = compile_with(self.model, inputs, options)
            except CaptureError:
                if not micro or batch <= micro or batch % micro:
                    raise
                # a model written for one micro-batch (a tensor with one value per micro-batch, such as a mixup
                # coefficient, broadcast over the micro-batch's samples) captures on one micro-batch, as an
                # accelerator's compiler traces it; FLOPs and activations scale from its shapes to batch_size
                self._programs[key] = compile_with(self.model, _split(inputs, batch // micro)[0], options)
        return self._programs[key]

    def require_compiled(self, what: str = "this") -> CompiledProgram:
        """The program behind the clock, or an error saying a step must run first."""
        prog = self.compiled
        if prog is None:
            raise AccelkitError(f"{what} needs a compiled program, and the session has not run a step yet",
                                fix="call session.run(...) (or step) once first")
        return prog

    @property
    def compiled(self) -> CompiledProgram | None:
        """The program behind the clock (the most recently compiled one; None before the first step)."""
        return next(reversed(self._programs.values()), None)

    # ---- one step ---------------------------------------------------------------------
    def _loss(self, out: Any, labels: Any) -> torch.Tensor | None:
        if labels is not None and self.loss_fn is not None:
            if hasattr(out, "logits"):  # a transformers ModelOutput
                logits = out.logits
            else:
                logits = out[0] if isinstance(out, (tuple, list)) else out
            return self.loss_fn(logits, labels)
        first = _first_tensor(out)
        if first is not None and first.dim() == 0:
            return first  # the model computes its own loss (PopTorch / SambaFlow style)
        return None

    def run(self, *inputs: Any, labels: Any = None, sections: Sequence[str] | None = None) -> StepResult:
        """One step. ``sections`` (a subset of fwd / bckwd / opt) defaults to all three when the session has
        an optimizer, else ``fwd``; gradients accumulate over ``batch_size / micro_batch`` micro-batches."""
        secs = self._sections(sections)
        if not inputs and _needs_inputs(self.model):
            raise SessionError("run() needs the model's inputs", fix="session.run(x) or session.run(x, labels=y)")
        boundary.real_weights(self.model, entry="Session.run", fix="build the model on the CPU (not under "
                              "torch.device('meta')) to run it; ak.compile, ak.check and ak.serve take meta models")
        first = _first_tensor(inputs)
        # a 1-D input is one sample (GroqFlow's hello world: 10 values, one inference), as program() batches it
        n = int(first.shape[0]) if first is not None and first.dim() > 1 else 1
        n_micro = 1
        if self.micro_batch and "bckwd" in secs:
            if n % self.micro_batch:
                raise SessionError(f"this batch has {n} samples, not a multiple of micro_batch {self.micro_batch}",
                                   fix="drop the last partial batch (DataLoader(drop_last=True))")
            n_micro = n // self.micro_batch
        prog = self.program(inputs, training="bckwd" in secs)
        t0 = time.perf_counter()
        outs, losses = self._real_step(inputs, labels, secs, n_micro)
        host = time.perf_counter() - t0
        sim = self.tick(prog.report.step_parts(secs, n), n, host)
        loss_val = None
        if losses and losses[0] is not None:
            loss_val = torch.stack([lv for lv in losses if lv is not None]).mean() if n_micro > 1 else losses[0]
        if self._writer is not None:
            if loss_val is not None:
                self._writer.add_scalar("loss", float(loss_val), self.steps)
            self._writer.add_scalar("modelled/samples_per_s", n / sim if sim else 0.0, self.steps)
            self._writer.add_scalar("modelled/step_time_s", sim, self.steps)
        return StepResult(_cat(outs), loss_val, sim, host, secs, self.steps, tuple(outs))

    def _sections(self, sections: Sequence[str] | None) -> tuple[str, ...]:
        """The sections a step runs: those named (checked), else all three with an optimizer, else ``fwd``."""
        if isinstance(sections, str):  # run(x, sections="fwd"): one section, not its letters
            sections = (sections,)
        if sections is not None and not isinstance(sections, (list, tuple, set, frozenset)):
            raise SessionError(f"sections must be a list of section names, not {boundary.got(sections)}",
                               fix=f"e.g. sections=['fwd'] (a subset of {list(SECTIONS)})")
        secs = tuple(sections) if sections is not None else (SECTIONS if self.optimizer is not None else ("fwd",))
        bad = [s for s in secs if s not in SECTIONS]
        if bad:
            raise SessionError(f"unknown section(s) {bad}", fix=f"use a subset of {list(SECTIONS)}")
        if "opt" in secs and self.optimizer is None:
            raise SessionError("section 'opt' needs an optimizer", fix="ak.Session(model, optimizer=..., ...)")
        return secs

    def _real_step(self, inputs: tuple[Any, ...], labels: Any, secs: tuple[str, ...], n_micro: int) -> tuple[
            list[Any], list[torch.Tensor | None]]:
        """The step in real PyTorch on this CPU, at the session's precision: forward (and loss) per micro-batch,
        backward with the gradients accumulated, then the optimizer. Returns the outputs and losses."""
        was_training = self.model.training
        self.model.train("bckwd" in secs)
        outs: list[Any] = []
        losses: list[torch.Tensor | None] = []
        # torch.autocast on this CPU (PyTorch's kernels where oneDNN refuses)
        autocast = CpuAutocast(PRECISION_DTYPES[self._numerics])
        grad = torch.enable_grad() if "bckwd" in secs else torch.no_grad()
        try:
            with grad:
                for xs, ys in zip(_split(inputs, n_micro), _split(labels, n_micro), strict=True):
                    with autocast:
                        with user_code(self.model, xs):
                            out = self.model(*xs)
                        with user_code(self.model, xs, "loss_fn(outputs, labels)"), _labels_blamed(out, ys):
                            loss = self._loss(out, ys)
                    if "bckwd" in secs:
                        if loss is None:
                            raise SessionError("a backward pass needs a loss",
                                               fix="pass loss_fn= and labels=, or return the loss from forward")
                        with user_code(self.model, xs, "backward"):
                            (loss / n_micro if n_micro > 1 else loss).backward()
                    outs.append(out)
                    losses.append(loss.detach() if loss is not None else None)
            if "opt" in secs:
                assert self.optimizer is not None
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
        finally:
            self.model.train(was_training)
        return outs, losses

    __call__ = run

    def tick(self, parts: dict[str, float], samples: int, host_s: float) -> float:
        """Add one step to the clock: its modelled parts (``PerfReport.step_parts``), its samples and the host
        time it took; returns the step's modelled seconds. ``sections_s`` keeps every part, so the session's
        sections add up to ``simulated_time_s``."""
        sim = sum(parts.values())
        for k, v in parts.items():
            self.sections_s[k] = self.sections_s.get(k, 0.0) + v
        self.steps += 1
        self.samples += samples
        self.simulated_time_s += sim
        self.host_time_s += host_s
        return sim

    # ---- loops ------------------------------------------------------------------------
    def loader(self, data: Iterable[Any], *, prefetch: int = 2, desc: str | None = None,
               progress: bool = True) -> Iterator[Any]:
        """Iterate ``data`` with a background prefetch thread and a progress bar; counts time spent
        waiting for input so ``report()`` can say when steps are input-bound."""
        from accelkit.runtime.loader import PrefetchLoader

        pl = PrefetchLoader(data, prefetch=prefetch)
        it: Iterable[Any] = pl
        if progress:
            from tqdm.auto import tqdm

            it = tqdm(pl, desc=desc or f"{self.target}", total=_len(data), leave=False)
        for item in it:
            yield item
            self.input_wait_s = pl.wait_s

    def report(self) -> SessionReport:
        """Simulated totals (modelled), host time (measured) and whether input kept up; the mode and utilization
        are those of the program behind the clock (:attr:`compiled`)."""
        prog = self.compiled
        notes = []
        if self.steps and self.input_wait_s > self.simulated_time_s:
            notes.append(f"input-bound: waiting for data ({self.input_wait_s:.3g} s on this host) exceeds the "
                         f"modelled compute ({self.simulated_time_s:.3g} s); the accelerator would starve")
        return SessionReport(
            target=self.target, mode=prog.mode if prog else "-", precision=self.precision, chips=self.chips,
            steps=self.steps, samples=self.samples, simulated_time_s=self.simulated_time_s,
            host_time_s=self.host_time_s, input_wait_s=self.input_wait_s,
            utilization=dict(prog.report.utilization) if prog else {}, sections_s=dict(self.sections_s),
            notes=notes, stack=self.stack)

    # ---- checkpoints (safetensors + JSON; loading runs no code) ------------------------
    def save_checkpoint(self, path: str | os.PathLike[str]) -> str:
        from accelkit.runtime.checkpoint import save_checkpoint

        return save_checkpoint(self, path)

    def load_checkpoint(self, path: str | os.PathLike[str]) -> None:
        from accelkit.runtime.checkpoint import load_checkpoint

        load_checkpoint(self, path)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()

    def state(self) -> dict[str, Any]:
        return {"steps": self.steps, "samples": self.samples, "simulated_time_s": self.simulated_time_s,
                "sections_s": self.sections_s, "target": self.target, "precision": self.precision}

    def __repr__(self) -> str:
        return f"Session({type(self.model).__name__} on {self.chips} x {self.target}, {self.precision}, " \
               f"{self.steps} steps, {self.simulated_time_s:.3g} s modelled)"


def _check_log_dir(log_dir: Any) -> None:
    fix = "pass a folder path, e.g. ak.Session(..., log_dir='runs/exp1')"
    if not isinstance(log_dir, (str, os.PathLike)) or isinstance(os.fspath(log_dir), bytes):
        raise SessionError(f"log_dir must be a folder path (str or pathlib.Path), not {type(log_dir).__name__} "
                           f"{log_dir!r}", fix=fix)
    if not str(os.fspath(log_dir)).strip():
        raise SessionError("log_dir is an empty path", fix=fix)
    if Path(log_dir).exists() and not Path(log_dir).is_dir():
        raise SessionError(f"log_dir {str(log_dir)!r} is a file, not a folder", fix=fix)


def _len(data: Any) -> int | None:
    try:
        return len(data)
    except TypeError:
        return None

