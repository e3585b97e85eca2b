"""Cerebras' current PyTorch API (``cerebras.pytorch``, imported as ``cstorch``), simulated.

The shape of a training script for a CS-2 / CS-3 today::

    backend = cerebras.backend("CSX")                  # cstorch.backend: the system the run uses
    compiled = cerebras.compile(model, backend)        # cstorch.compile: the model as the system runs it
    optimizer = cerebras.optim.SGD(model.parameters(), lr=0.1)

    @cerebras.trace                                    # cstorch.trace: one call of this function = one step
    def training_step(x, y):
        loss = criterion(compiled(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    executor = cerebras.DataExecutor(loader, num_steps=100)   # cstorch.utils.data.DataExecutor
    for x, y in executor:
        loss = training_step(x, y)
    print(backend.report())     # modelled time and the execution mode (weight streaming, pipelined)

On the real system ``trace`` captures the step once and the wafer runs it; values come back through
``step_closure`` functions. Here the step runs eagerly on this CPU (real numerics, so a step closure is
simply called), and each traced call adds the modelled time of the sections it ran (see
:mod:`accelkit.facades.cerebras.clock`).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import torch
from torch import nn

from accelkit.facades.cerebras.amp import half_precision, on_capturing, on_half_dtype
from accelkit.facades.cerebras.clock import SYSTEMS, CerebrasError, ClockResults, StepClock, check_system
from accelkit.facades.cerebras.system_inputs import SystemLabels, for_capture, half_dtype_of
from accelkit.hardware.precision import EMULATED, CpuAutocast
from accelkit.runtime import facade_log

F = TypeVar("F", bound=Callable[..., Any])
BACKEND_TYPES = ("CSX", "CPU")


class BackendType(str):
    """The backend's kind, ``"CSX"`` or ``"CPU"`` (``cerebras.pytorch.backend.BackendType``): a string that also
    has what cstorch's enum has, ``.name``, ``.is_csx``/``.is_cpu``/``.is_gpu``, ``BackendType.CSX`` and
    ``BackendType.from_str("csx")``."""

    CPU: BackendType
    CSX: BackendType
    GPU: BackendType

    @property
    def name(self) -> str:
        return str(self)

    @property
    def is_cpu(self) -> bool:
        return self == "CPU"

    @property
    def is_csx(self) -> bool:
        return self == "CSX"

    @property
    def is_gpu(self) -> bool:
        return self == "GPU"

    @classmethod
    def from_str(cls, value: str) -> BackendType:
        kind = str(value).upper()
        if kind not in ("CPU", "CSX", "GPU"):
            raise CerebrasError(f"unknown backend type {value!r}", fix="use 'CSX', 'CPU' (or 'GPU' on a GPU machine)")
        return cls(kind)


BackendType.CPU, BackendType.CSX, BackendType.GPU = BackendType("CPU"), BackendType("CSX"), BackendType("GPU")


class _Device(contextlib.nullcontext):  # type: ignore[type-arg]
    """``backend.device``: a context that changes nothing here, named by the backend's kind."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        # the device's settings the 2.1 Model Zoo's runner sets (tracing the weights' initialization lazily, dropping
        # the input data on the appliance): kept; the simulated run initializes eagerly and computes on the data
        self.config = SimpleNamespace(lazy_initialization=True, drop_data=False)

    def __str__(self) -> str:
        return self.kind


class _Cluster:
    """``backend.cluster``: the Wafer-Scale Cluster's job (its workflow, storage, resources). The simulated system
    is one wafer and no cluster: a workflow starts at once and holds nothing."""

    workflow_id = None
    client = None
    config = None
    active_resources = None

    def start_workflow(self, *args: Any, **kwargs: Any) -> bool:
        return True

    def stop_workflow(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to stop."""

    def check_storage_connectivity(self, *args: Any, **kwargs: Any) -> None:
        """The model dir is on this machine."""


class Backend(ClockResults):
    """The system a run uses (what ``cstorch.backend`` returns): the wafer, precision and execution mode."""

    def __init__(self, backend_type: str, *, system: str, precision: str, mode: str,
                 artifact_dir: str | None) -> None:
        self.backend_type = BackendType(backend_type)
        self.target = check_system(system)
        self.precision = precision
        self.execution_mode = mode
        self.artifact_dir = artifact_dir
        self.clock: StepClock | None = None
        self.tracing = False
        self._saved: set[int] = set()
        self.cpu_steps = 0  # a CPU backend's traced steps and their measured seconds
        self.cpu_seconds = 0.0

    # what the 2.x Model Zoo's Trainer reads of a backend (cstorch keeps it on the backend's implementation, _impl)
    is_e2e_execution = True  # a run that trains (compile_only / validate_only are refused in backend())
    appliance = None  # no appliance: no compile response to read FLOPs from (the report has the modelled ones)

    @property
    def is_tracing(self) -> bool:
        """False while the step runs: its tensors hold their values (an eager step on this CPU), so what cstorch
        defers to a step closure can run at once. True while the step's program is captured to model its time
        (the model's forward runs once more, on inputs without values), as cstorch's is while it traces: code
        that reads values there (the Model Zoo's ``summarize_scalar`` from inside a model) defers them to a step
        closure, which the capture drops (the step itself has already run it with the values)."""
        return self.clock is not None and self.clock.capturing

    @property
    def _impl(self) -> Backend:
        return self

    @property
    def cluster(self) -> _Cluster:
        return _Cluster()

    def use_precision(self, precision: str) -> None:
        """Run in ``precision`` (``cstorch.amp.set_half_dtype``): before the first step only, as the compiled
        program is fixed by then. A CPU backend stays in fp32, as cstorch's does."""
        if precision == self.precision or self.is_cpu:
            return
        clock = self.clock
        if clock is not None:
            if clock.session.steps:
                raise CerebrasError(f"the half dtype changed to {precision} after {clock.session.steps} step(s) ran "
                                    f"in {self.precision}", fix="call cstorch.amp.set_half_dtype(...) before the "
                                                                "first traced step (e.g. before cstorch.compile)")
            clock.use_precision(precision)  # the same clock: a step being traced keeps its events
        self.precision = precision

    def _clock(self) -> StepClock:
        if self.is_cpu:
            raise CerebrasError("a CPU backend has no modelled wafer: its steps ran on this CPU only",
                                fix="use cstorch.backend('CSX') for the modelled Cerebras system")
        if self.clock is None:
            raise CerebrasError("this backend has no compiled model",
                                fix="compiled = accelkit.facades.cerebras.compile(model, backend) first")
        return self.clock

    def _save_artifact(self) -> None:
        prog = self._clock().last_program
        if self.artifact_dir is None or prog is None or id(prog) in self._saved:
            return
        kind = "train" if prog.training else "eval"
        prog.save(str(Path(self.artifact_dir) / f"{prog.graph.model_name or 'model'}_{kind}.akp"))
        self._saved.add(id(prog))


    @property
    def is_cpu(self) -> bool:
        """True for ``backend("CPU")`` (the script's CPU path: no half dtype, steps on this CPU, nothing
        modelled); False for ``"CSX"``, the simulated Cerebras system."""
        return self.backend_type == "CPU"

    @property
    def is_csx(self) -> bool:
        """True for ``backend("CSX")``, the simulated Cerebras system."""
        return self.backend_type == "CSX"

    @property
    def is_gpu(self) -> bool:
        """False: cstorch's GPU backend is refused here (there is no CUDA device)."""
        return False

    @property
    def device(self) -> contextlib.AbstractContextManager[None]:
        """``with backend.device:`` builds the model for the system; here its weights stay on this CPU. Printed, it
        is the backend's kind (``CSX``, ``CPU``), as the Model Zoo's log lines show it."""
        return _Device(self.backend_type)

    def cpu_report(self) -> str:
        """What a CPU backend's run was: real steps on this CPU, no modelled wafer time."""
        return (f"cstorch CPU backend: {self.cpu_steps} traced step(s) ran on this CPU in {self.cpu_seconds:.2f} s "
                "(MEASURED on this host, as on Cerebras' own CPU backend); no Cerebras system was modelled: use "
                "backend('CSX') for the wafer's modelled time")

    def __repr__(self) -> str:
        if self.is_cpu:
            return f"Backend('CPU': this CPU, {self.precision})"
        return f"Backend({self.backend_type!r}: simulated {SYSTEMS[self.target]}, {self.precision})"


class _DebugSettings:
    """``cstorch.backends.csx.debug``: the appliance's debug knobs (memory for its compile and execute jobs...).
    Setting one is accepted and recorded; reading one gives back what was set."""

    def __setattr__(self, name: str, value: Any) -> None:
        facade_log.accept("Cerebras", f"cstorch.backends.csx.debug.{name} = {value!r}",
                          "sizes or tunes the appliance's jobs on the cluster; the simulated run has no cluster jobs")
        object.__setattr__(self, name, value)


class _PrecisionSettings:
    """``cstorch.backends.csx.precision``: the compiler's precision optimization level (POL), ``optimization_level``
    0, 1 (cstorch's default) or 2. Read back as set (the 2.x Model Zoo's language models choose their attention
    softmax's precision and the LM head's ``cstorch.pol`` from it); setting it is recorded: on the system it trades
    the compiled kernels' numerics for speed, while here the numerics are PyTorch's on this CPU in the run's
    precision and the modelled time does not depend on it."""

    _level: int

    def __init__(self) -> None:
        object.__setattr__(self, "_level", 1)

    @property
    def optimization_level(self) -> int:
        return int(self._level)

    @optimization_level.setter
    def optimization_level(self, value: int) -> None:
        if value not in (0, 1, 2):
            raise CerebrasError(f"cstorch.backends.csx.precision.optimization_level = {value!r}: the precision "
                                "optimization level is 0, 1 or 2", fix="set it to 0, 1 (the default) or 2")
        facade_log.accept("Cerebras", f"cstorch.backends.csx.precision.optimization_level = {value!r}",
                          "chooses the compiled kernels' numerics on the system; the simulated run computes in "
                          "PyTorch on this CPU in the run's precision, and its modelled time does not depend on it")
        object.__setattr__(self, "_level", int(value))

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "optimization_level":
            raise CerebrasError(f"cstorch.backends.csx.precision.{name} is not a cstorch precision setting",
                                fix="set cstorch.backends.csx.precision.optimization_level (0, 1 or 2)")
        object.__setattr__(self, name, value)


_PERFORMANCE_SETTINGS = {
    "micro_batch_size": "splits each batch into micro-batches the wafer runs one after another, accumulating their "
                        "gradients (an int, 'auto', 'explore' or None); the simulated step computes the whole batch, "
                        "with the same result",
    "transfer_processes": "how many processes move weights and tensors between the appliance and the system; the "
                          "simulated run has no appliance transfers",
}


class _PerformanceSettings:
    """``cstorch.backends.csx.performance``: the system's performance knobs (``micro_batch_size``,
    ``transfer_processes``), as the 2.x Model Zoo's ``ScopedTrainFlags`` / ``ScopedValidateFlags`` callbacks set
    them for a training or validation loop and put them back (or delete them) after it. Setting one is accepted and
    recorded; reading one gives back what was set; another name is refused."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _PERFORMANCE_SETTINGS:
            raise CerebrasError(f"cstorch.backends.csx.performance.{name} is not a cstorch performance setting",
                                fix=f"set one of {sorted(_PERFORMANCE_SETTINGS)}, or a debug setting under "
                                    "cstorch.backends.csx.debug")
        facade_log.accept("Cerebras", f"cstorch.backends.csx.performance.{name} = {value!r}",
                          _PERFORMANCE_SETTINGS[name])
        object.__setattr__(self, name, value)


def _reset_precision() -> None:
    object.__setattr__(backends.csx.precision, "_level", 1)
    vars(backends.csx.performance).clear()  # one script's micro-batch size does not carry over to the next


backends = SimpleNamespace(csx=SimpleNamespace(debug=_DebugSettings(), precision=_PrecisionSettings(),
                                               performance=_PerformanceSettings()))
facade_log.reset_with_each_run(_reset_precision)


def manual_seed(seed: int) -> None:
    """``cstorch.manual_seed(seed)``: seed the model's initialization and the step's random numbers (PyTorch's
    generator: the numerics run on this CPU)."""
    torch.manual_seed(seed)


def use_cs() -> bool:
    """``cstorch.use_cs()``: True when the current backend is a Cerebras system (``"CSX"``, simulated here), False
    for the CPU backend (the 2.0 Model Zoo's data loaders pick their dtypes by it). False too while a step's
    program is captured (:attr:`Backend.is_tracing`): the graph captured is the fp32 model's, its precision the
    run's, set apart (:func:`~accelkit.facades.cerebras.system_inputs.for_capture`), so a model's own casts to the
    half dtype on the system (the Model Zoo's ``maybe_to_half_dtype``: a mixture of experts' router input before
    its fp32 gate) are the program's precision there, not a mixed-dtype op."""
    return bool(_current) and not _current[0].is_cpu and not _current[0].is_tracing


def summarize_tensor(name: str, tensor: Any) -> None:
    """``cstorch.summarize_tensor(name, tensor)``: a tensor sent to TensorBoard from inside the traced step; kept,
    as its mean, with :func:`summarize_scalar`'s values."""
    summarize_scalar(name, tensor)


def summarize_scalar(name: str, value: Any) -> None:
    """``cstorch.summarize_scalar(name, value)``: on the system, a value sent to TensorBoard from inside the traced
    step. Here it is kept, with the step it came from, in :data:`summaries` (read it after the run)."""
    b = _current[0] if _current else None
    steps = b.cpu_steps if b is not None and b.is_cpu else b.clock.session.steps if b and b.clock else 0
    summaries.append((str(name), steps, float(value.detach().float().mean()) if hasattr(value, "detach")
                      else float(value)))


summaries: list[tuple[str, int, float]] = []  # (name, steps done, value) from summarize_scalar
facade_log.reset_with_each_run(summaries.clear)


_current: list[Backend] = []  # the most recent backend is the one traced steps run on
facade_log.reset_with_each_run(_current.clear)


def _use_half_dtype(precision: str) -> None:
    if _current:
        _current[0].use_precision(precision)  # cstorch.amp.set_half_dtype reaches the current backend


on_half_dtype(_use_half_dtype)
on_capturing(lambda: any(b.is_tracing for b in _current))  # amp.get_half_dtype: fp32 in the captured program


HARDWARE_ONLY_BACKEND_OPTIONS = {
    "compile_dir": "where the Cerebras compiler keeps its outputs on the cluster; accelkit's programs are saved "
                   "to artifact_dir",
    "cluster_config": "how many CSX systems and worker nodes the appliance uses (cstorch.distributed."
                      "ClusterConfig); the simulated run is one system",
    "retrace_every_iteration": "re-traces the step each iteration on the real system; here every step runs "
                               "eagerly anyway",
    "max_checkpoints": "how many of the newest checkpoints the appliance keeps; every checkpoint the script saves is "
                       "written here",
    "use_cs_grad_accum": "lets the system split a batch into micro-batches and accumulate their gradients on the "
                         "wafer; the simulated step computes the whole batch, with the same result",
    "micro_batch_size": "the micro-batch the system's gradient accumulation uses; the simulated step computes the "
                        "whole batch, with the same result",
    "drop_data": "drops the input data on the appliance (to time the system without the host's input pipeline); "
                 "accelkit still computes on the script's batches",
}


def backend(backend_type: str | None = None, *args: Any, artifact_dir: str | None = None, compile_only: bool = False,
            validate_only: bool = False, system: str = "wse2", precision: str | None = None, mode: str = "auto",
            mixed_precision: bool = False, **kwargs: Any) -> Backend:
    """Create the backend a run uses (``cstorch.backend(backend_type, *args, **kwargs)``, docs.cerebras.net
    "cerebras.pytorch.backend"); it becomes the current backend.

    ``"CSX"`` is a Cerebras system: ``system`` picks the wafer (``wse2`` = CS-2, ``wse3`` = CS-3).
    ``"CPU"`` is cstorch's CPU backend (for a quick check before a run on the system): the steps run eagerly on
    this CPU in fp32, ``backend.is_cpu`` is True, and nothing is modelled (its report says so). ``"GPU"`` is
    refused: there is no GPU to run on here.
    ``precision``: ``fp32`` (exactly plain PyTorch), ``bf16`` or ``fp16`` (mixed precision, emulated); by default
    the half dtype set by ``cstorch.amp.set_half_dtype``, else ``fp32``.
    ``mode``: ``auto`` (the compiler picks), ``weight-streaming`` or ``pipelined``. ``artifact_dir``: where
    each compiled program is saved (``CompiledProgram.save``), as cstorch keeps its compile artifacts.
    CSX options that only matter on the appliance (``compile_dir``, ``cluster_config``,
    ``retrace_every_iteration``, and the 2.0 Model Zoo's ``max_checkpoints``, ``use_cs_grad_accum``,
    ``micro_batch_size``, ``drop_data``) are accepted and recorded; ``compile_only`` / ``validate_only`` (compile
    or check without training) change what runs and are refused when true. ``mixed_precision=True`` on the CPU
    backend runs the model under ``torch.autocast`` in bfloat16 on this CPU, as cstorch's CPU backend does.
    """
    if backend_type is None:  # cstorch.backend(): the current backend (the 2.x Trainer reuses it), else a CSX one
        if _current:
            return current_backend()
        backend_type = "CSX"
    backend_type = str(getattr(backend_type, "value", backend_type)).upper()
    if backend_type not in BACKEND_TYPES:
        raise CerebrasError(f"backend type {backend_type!r} is not simulated here" + (
            " (cstorch's GPU backend runs on a CUDA device; accelkit runs on this CPU)" if backend_type == "GPU"
            else ""), fix="use 'CSX' (the simulated Cerebras system) or 'CPU' (this CPU, nothing modelled)")
    for name, on in (("compile_only", compile_only), ("validate_only", validate_only)):
        if on:
            raise CerebrasError(f"cstorch.backend(..., {name}=True) stops the run before training, which accelkit "
                                "does not simulate", fix=f"drop {name}=True; for the compile alone use "
                                "accelkit.compile(model, inputs, target='wse2')")
    unknown = sorted(set(kwargs) - set(HARDWARE_ONLY_BACKEND_OPTIONS))
    if args or unknown:
        raise CerebrasError(f"cstorch.backend got arguments accelkit does not know: {list(args) + unknown}",
                            fix=f"use artifact_dir, system, precision, mode, or {sorted(HARDWARE_ONLY_BACKEND_OPTIONS)}")
    for name, value in kwargs.items():
        facade_log.accept("Cerebras", f"cstorch.backend({name}={value!r})", HARDWARE_ONLY_BACKEND_OPTIONS[name])
    from accelkit.families.wafer import MODEL as WAFER

    allowed = ("auto", *WAFER.modes)
    if mode not in allowed:
        raise CerebrasError(f"{mode!r} is not an execution mode of the wafer", fix=f"use one of {list(allowed)}")
    b = Backend(backend_type, system=system, precision=precision or half_precision() or "fp32", mode=mode,
                artifact_dir=artifact_dir)
    if b.is_cpu:
        # cstorch's half dtype applies to the system, not the CPU backend; its own mixed_precision is bfloat16 autocast
        b.precision = precision or ("bf16" if mixed_precision else "fp32")
        facade_log.register_run("cstorch.backend('CPU')", b.cpu_report)
    _current[:] = [b]
    return b


_new_backend = backend  # compile() takes a parameter called backend


def current_backend(raise_exception: bool = True, raise_warning: bool = True) -> Backend:
    """The backend traced steps run on (``cstorch.current_backend``); None before one is made when
    ``raise_exception=False``."""
    if not _current and not raise_exception:
        return None  # type: ignore[return-value]
    if not _current:
        raise CerebrasError("no backend yet", fix="backend = accelkit.facades.cerebras.backend('CSX')")
    return _current[0]


def current_torch_device() -> torch.device:
    """``cstorch.current_torch_device()``: the torch device of the current backend, where a model puts the tensors
    it makes inside its step (the 2.10 Model Zoo's self-supervised image encoders put their loss accumulator
    there). On the system that is the backend's lazy device; here every backend's numerics run on this CPU, so it
    is ``torch.device("cpu")``, as cstorch answers before any backend is made."""
    return torch.device("cpu")


class CompiledModel(nn.Module):
    """The model as the system runs it (what ``cstorch.compile`` returns); call it inside a traced step.

    Its parameters are the original model's. Called outside a ``trace``-decorated step it just runs.
    """

    def __init__(self, model: nn.Module, backend: Backend) -> None:
        super().__init__()
        self.module = model
        self.backend = backend

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self.backend.is_csx and self.backend.precision == "fp32":
            self._half_inputs_mean_mixed_precision(args, kwargs)
        if self.backend.tracing and self.backend.clock is not None:
            self.backend.clock.on_forward(*for_capture((args, kwargs), self.module))
        dtype = EMULATED.get(self.backend.precision)  # mixed precision: 16-bit arithmetic, as the wafer's
        with CpuAutocast(dtype):
            return self.module(*args, **kwargs)

    def _half_inputs_mean_mixed_precision(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """16-bit inputs to a CSX model that set no half dtype: the program runs in that mixed precision, as the
        system's compiler takes them (:mod:`accelkit.facades.cerebras.system_inputs`); said once."""
        precision = half_dtype_of((args, kwargs))
        if precision is not None:
            self.backend.use_precision(precision)
            print(f"cstorch: the compiled model's inputs are 16-bit ({precision}): the CSX program runs in mixed "
                  f"precision ({precision} arithmetic, fp32 weights and accumulation), as the Cerebras system "
                  "trains")


def compile(model: nn.Module, backend: Backend | str | None = None) -> CompiledModel:  # noqa: A001 - cstorch's name
    """Prepare ``model`` to run on ``backend`` (``cstorch.compile``); the program itself is compiled at the
    first traced step, when the input shapes are known. ``backend`` may be a :class:`Backend`, ``"CSX"``,
    or omitted (the current backend, else a new CSX one)."""
    if not isinstance(model, nn.Module):
        raise CerebrasError(f"compile needs an nn.Module, not {type(model).__name__}", fix="pass the model object")
    if isinstance(backend, str):
        b = _new_backend(backend)
    elif backend is None:
        b = _current[0] if _current else _new_backend()
    else:
        b = backend
    # cstorch sets model.device to the backend's torch device (the 2.x Model Zoo's callbacks put tensors there);
    # the numerics run on this CPU for either backend
    vars(model)["device"] = torch.device("cpu")
    if b.is_cpu:
        return CompiledModel(model, b)  # the model runs as it is, on this CPU
    if b.clock is not None:
        raise CerebrasError("this backend already runs a compiled model",
                            fix="create another backend for a second model: accelkit.facades.cerebras.backend('CSX')")
    b.clock = StepClock(model, target=b.target, precision=b.precision, mode=b.execution_mode)
    _current[:] = [b]
    facade_log.register_run(lambda: f"cstorch.compile({type(model).__name__}) on {b!r}", b.report)
    return CompiledModel(model, b)


def trace(fn: F) -> F:
    """Mark ``fn`` as one step on the system (``cstorch.trace``): forward, backward and optimizer calls made
    inside it are that step's sections; each call adds their modelled time to the current backend."""
    @functools.wraps(fn)
    def step(*args: Any, **kwargs: Any) -> Any:
        b = current_backend()
        if b.is_cpu:  # cstorch's CPU backend runs the step eagerly: timed here, nothing modelled
            start = time.perf_counter()
            with facade_log.vendor_call(f"the @cstorch.trace step {fn.__name__}()"):
                out = fn(*args, **kwargs)
            b.cpu_steps += 1
            b.cpu_seconds += time.perf_counter() - start
            return out
        clock = b._clock()
        b.tracing = True
        try:
            with clock.watching_optimizers(), facade_log.vendor_call(f"the @cstorch.trace step {fn.__name__}()"), \
                    SystemLabels():  # int32 labels, as the system takes them
                out = fn(*args, **kwargs)
        finally:
            b.tracing = False
        clock.end_step()
        b._save_artifact()
        _arrived_on_host(out)
        return out

    return step  # type: ignore[return-value]


# hooks told of each tensor a CSX step hands back to the host (cerebras.pytorch.backend.ltc_backend's
# register_after_tensor_to_cpu: the 2.x Trainer's DurationProfiler timestamps the batches by them)
_after_to_cpu_hooks: list[Callable[[torch.Tensor, str], Any]] = []
facade_log.reset_with_each_run(_after_to_cpu_hooks.clear)


def _arrived_on_host(out: Any) -> None:
    if not _after_to_cpu_hooks:
        return
    from accelkit.graph.values import tensor_leaves

    for i, t in enumerate(tensor_leaves(out)):
        for hook in list(_after_to_cpu_hooks):
            hook(t, f"output_{i}")


def step_closure(fn: F) -> F:
    """``cstorch.step_closure``: on the system, a function run on the host once the step's values arrive.
    Here the values are already on the host, so the function is called straight away; called while a step's
    program is captured (:attr:`Backend.is_tracing`), where no values exist, it is not called (the step itself
    called it)."""
    @functools.wraps(fn)
    def closure(*args: Any, **kwargs: Any) -> Any:
        if any(b.is_tracing for b in _current):
            return None
        return fn(*args, **kwargs)

    return closure  # type: ignore[return-value]


_executors: list[DataExecutor] = []  # the executor being iterated (checkpoint_closure asks it)
_executor_count = [0]  # executors iterated in this run (each gets its own artifact folder)
facade_log.reset_with_each_run(lambda: _executor_count.__setitem__(0, 0))


def checkpoint_closure(fn: F) -> F:
    """``cstorch.checkpoint_closure``: the decorated function (typically one calling :func:`save`) runs only on
    the steps the running :class:`DataExecutor` checkpoints: every ``checkpoint_steps``-th step and the last
    one, as on the system, where the weights are fetched from the wafer only then. Outside an executor
    (or one without ``checkpoint_steps``) it runs on every call."""
    @functools.wraps(fn)
    def closure(*args: Any, **kwargs: Any) -> Any:
        ex = _executors[-1] if _executors else None
        if ex is not None and not ex.on_checkpoint_step:
            return None
        return fn(*args, **kwargs)

    return closure  # type: ignore[return-value]


def save(state_dict: dict[str, Any], checkpoint_file: str | Path) -> None:
    """``cstorch.save(state_dict, checkpoint_file)``: write a checkpoint (model / optimizer state dicts, step
    counters). Cerebras writes its H5-based format; here ``torch.save`` writes PyTorch's, which :func:`load`
    reads back without running code (``weights_only=True``)."""

    Path(checkpoint_file).parent.mkdir(parents=True, exist_ok=True)
    torch.save(state_dict, checkpoint_file)


def load(checkpoint_file: str | Path, map_location: Any = None, **kwargs: Any) -> Any:
    """``cstorch.load(checkpoint_file, map_location=None)``: read a checkpoint written by :func:`save` (tensors,
    numbers, strings and containers only: nothing in the file is executed)."""

    try:
        return torch.load(checkpoint_file, map_location=map_location, weights_only=True)
    except (OSError, RuntimeError) as exc:
        raise CerebrasError(f"cannot read the checkpoint {checkpoint_file}: {exc}",
                            fix="give a file written by cstorch.save") from None


_loader_count = [0]


def _samples_in(batch: Any) -> int:
    """The samples in a batch: the first dimension its tensors share (0 when they share none), as cstorch's
    ``infer_batch_size`` reads it (a scalar counts as one)."""
    sizes = {1 if t.dim() == 0 else int(t.shape[0]) for t in torch.utils._pytree.tree_flatten(batch)[0]
             if isinstance(t, torch.Tensor)}
    return sizes.pop() if len(sizes) == 1 else 0


class DataLoader:
    """``cstorch.utils.data.DataLoader(input_fn, *args)``: a loader built by calling ``input_fn(*args)``."""

    def __init__(self, input_fn: Callable[..., Iterable[Any]], *args: Any, **kwargs: Any) -> None:
        self.input_fn = input_fn
        self.args = args
        self.kwargs = kwargs
        self._loader: Iterable[Any] | None = None
        _loader_count[0] += 1
        self.id = _loader_count[0]  # cstorch numbers its loaders (the 2.x Trainer names validation runs by it)
        self.micro_batch_size = None  # the system's gradient-accumulation split: the whole batch here
        self.samples_streamed = 0  # samples in the batches handed out so far, every pass

    @property
    def loader(self) -> Iterable[Any]:
        if self._loader is None:
            self._loader = self.input_fn(*self.args, **self.kwargs)
        return self._loader

    dataloader = loader  # cstorch's name for the loader input_fn built

    def __iter__(self) -> Iterator[Any]:
        for batch in self.loader:
            self.samples_streamed += _samples_in(batch)
            yield batch

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def _restartable_loader(self, api: str) -> Any:
        loader = self.loader
        if not all(hasattr(loader, name) for name in ("state_dict", "load_state_dict", "aggregate_state_dict",
                                                      "deaggregate_state_dict")):
            raise CerebrasError(f"cstorch.utils.data.DataLoader.{api}: the loader {type(loader).__name__} that "
                                "input_fn built keeps no position (it has no state_dict, load_state_dict, "
                                "aggregate_state_dict and deaggregate_state_dict)",
                                fix="give the loader those four methods, as the Model Zoo's RestartableDataLoader "
                                    "has, or leave its state out of the checkpoint")
        return loader

    def state_dict(self) -> dict[str, Any]:
        """cstorch's loader state: the loader's own ``state_dict()``, taken while
        ``cstorch.distributed.get_worker_state()`` answers the samples streamed so far (on the system each input
        worker's; here this one process's), then its ``aggregate_state_dict([...])``."""
        from accelkit.facades.cerebras import distributed

        loader = self._restartable_loader("state_dict")
        with distributed.worker_state(self.samples_streamed):
            worker = loader.state_dict()
        return dict(loader.aggregate_state_dict([worker]))

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Give the loader a saved state back: its ``deaggregate_state_dict`` then ``load_state_dict`` (the Model
        Zoo's restartable loader moves its sampler that many samples in)."""
        loader = self._restartable_loader("load_state_dict")
        loader.load_state_dict(loader.deaggregate_state_dict(state_dict, strict=strict), strict=strict)

    @property
    def batch_size(self) -> int | None:
        """The batch size of the loader ``input_fn`` built (None when it has none)."""
        return getattr(self.loader, "batch_size", None)

    # cstorch 2.0's restartable loaders save their position in a checkpoint; this one starts again from the
    # beginning (the 2.0 Model Zoo's runner asks before saving or loading that state)
    is_restartable = False


def _release_workers(loader: Any) -> None:
    """A torch ``DataLoader(persistent_workers=True)`` (gigaGPT's) keeps its worker processes for a next pass. The
    executor stays referenced by the run's report, so they would live until the interpreter exits, and its exit
    then waits on their queues for ever: shut them down when the executor's pass ends, as deleting the loader
    would. A later pass starts new workers."""
    inner = getattr(loader, "_loader", loader)
    it = getattr(inner, "_iterator", None)
    if it is not None and hasattr(it, "_shutdown_workers"):
        it._shutdown_workers()
        inner._iterator = None


class DataExecutor:
    """Feed ``num_steps`` batches to the run (``cstorch.utils.data.DataExecutor(dataloader, num_steps=None,
    checkpoint_steps=None, ...)``), starting the loader again when it runs out. Without ``num_steps``, one
    pass over the loader. ``checkpoint_steps`` is honoured: it decides when :func:`checkpoint_closure`
    functions run. ``activation_steps``, ``cs_config``, ``writer`` and ``micro_batch_size`` are accepted
    and recorded (they tune what the appliance sends back to the host and how it splits batches)."""

    def __init__(self, dataloader: Iterable[Any], num_steps: int | None = None, checkpoint_steps: Any = None,
                 activation_steps: int | None = None, cs_config: Any = None, writer: Any = None,
                 micro_batch_size: Any = None, profiler_activities: Any = None, listeners: Any = None) -> None:
        schedule = hasattr(checkpoint_steps, "match") and hasattr(checkpoint_steps, "intervals")
        if checkpoint_steps is not None and not schedule and (
                not isinstance(checkpoint_steps, int) or checkpoint_steps < 0):
            raise CerebrasError(f"checkpoint_steps must be a whole number ≥ 0 or a Schedule, got {checkpoint_steps!r}",
                                fix="e.g. checkpoint_steps=100")
        # a whole number: every that many steps and the last; a cstorch Schedule (the 2.x Trainer's): its
        # 0-indexed steps
        self.checkpoint_steps = checkpoint_steps or None
        self._artifact_dir: Path | None = None
        for name, value in (("activation_steps", activation_steps), ("cs_config", cs_config),
                            ("micro_batch_size", micro_batch_size),
                            ("profiler_activities", profiler_activities or None), ("listeners", listeners or None)):
            if value is not None:
                facade_log.accept("Cerebras", f"DataExecutor({name}={value!r})",
                                  "tunes the appliance (how often values come back to the host, the cluster, how "
                                  "the batch is split on the wafer); the simulated step is the same")
        if num_steps is not None and (not isinstance(num_steps, int) or num_steps < 1):
            raise CerebrasError(f"num_steps must be a whole number ≥ 1, got {num_steps!r}", fix="e.g. num_steps=100")
        if num_steps is None:
            try:
                num_steps = len(dataloader)  # type: ignore[arg-type]
            except TypeError:
                raise CerebrasError("num_steps is needed for a loader without a length",
                                    fix="DataExecutor(loader, num_steps=...)") from None
        self.dataloader = dataloader
        self.num_steps = num_steps
        self.user_iteration = 0  # steps yielded so far
        self.samples = 0  # samples in the batches yielded so far
        self.profiler = _Profiler(self)

    @property
    def on_final_iteration(self) -> bool:
        return self.user_iteration == self.num_steps

    @property
    def on_checkpoint_step(self) -> bool:
        """This step is one whose weights a :func:`checkpoint_closure` saves."""
        every = self.checkpoint_steps
        if every is not None and not isinstance(every, int):
            return bool(every.match(self.user_iteration - 1))
        return every is not None and (self.user_iteration % every == 0 or self.on_final_iteration)

    @property
    def iteration(self) -> int:
        """The current step, counted from 0 (``user_iteration`` counts from 1)."""
        return self.user_iteration - 1

    @property
    def artifact_dir(self) -> Path:
        """This executor's folder under the backend's ``artifact_dir`` (``executors/000001``, with ``latest``
        linking to it), made when it is first iterated, as cstorch's."""
        if self._artifact_dir is None:
            raise CerebrasError("DataExecutor must be iterated before having an artifact directory",
                                fix="read executor.artifact_dir inside the loop over the executor")
        return self._artifact_dir

    def _setup_artifact_dir(self) -> None:
        b = _current[0] if _current else None
        root = Path(getattr(b, "artifact_dir", None) or "cerebras_logs") / "executors"
        _executor_count[0] += 1
        self._artifact_dir = root / f"{_executor_count[0]:06d}"
        self._artifact_dir.mkdir(parents=True, exist_ok=True)
        latest = root / "latest"
        if latest.is_symlink():
            latest.unlink()
        if not latest.exists():
            latest.symlink_to(self._artifact_dir.name)

    def __iter__(self) -> Iterator[Any]:
        self._setup_artifact_dir()
        _executors.append(self)
        try:
            yield from self._batches()
        finally:
            _executors.remove(self)
            _release_workers(self.dataloader)

    def _batches(self) -> Iterator[Any]:
        self.user_iteration = 0
        while self.user_iteration < self.num_steps:
            empty = True
            for batch in self.dataloader:
                empty = False
                self.user_iteration += 1
                self.samples += _batch_samples(batch)
                yield batch
                if self.user_iteration >= self.num_steps:
                    return
            if empty:
                raise CerebrasError("the dataloader yielded no batches", fix="check the dataset is not empty")

    def __len__(self) -> int:
        return self.num_steps


def _batch_samples(batch: Any) -> int:
    """Samples in a batch: the first dimension of its first tensor (1 when it has none)."""
    import torch

    from accelkit.graph.values import tensor_leaves

    leaves = tensor_leaves(batch)
    first = leaves[0] if leaves else None
    return int(first.shape[0]) if isinstance(first, torch.Tensor) and first.dim() else 1


class _RateTracker:
    """``executor.profiler.rate_tracker``: samples per second, MODELLED from the wafer's clock (on the system, a
    measurement). ``rate`` and ``global_rate`` are both the run's samples over its modelled time so far; on a CPU
    backend, over the steps' time measured on this CPU."""

    def __init__(self, executor: DataExecutor) -> None:
        self.executor = executor

    @property
    def global_rate(self) -> float:
        b = _current[0] if _current else None
        if b is not None and b.is_cpu:  # measured: the CPU backend's steps on this CPU
            return self.executor.samples / b.cpu_seconds if b.cpu_seconds > 0 else 0.0
        seconds = _run_seconds()
        if seconds > 0:
            note_modelled_rate()
        return self.executor.samples / seconds if seconds > 0 else 0.0

    rate = global_rate

    @property
    def total_samples(self) -> int:
        """The samples of the batches handed out so far (the 2.1 Model Zoo's runner prints them at the end)."""
        return self.executor.samples

    @property
    def total_time(self) -> float:
        """Seconds of the run so far: MODELLED on the wafer, measured on this CPU for the CPU backend."""
        return _run_seconds()


def note_modelled_rate() -> None:
    """Say once per run that the rates a script prints on the system are the modelled clock's."""
    if not _said_rate:
        _said_rate.append(True)
        print("accelkit: the executor's Rate / GlobalRate are MODELLED samples/s (the wafer's modelled clock), "
              "not measured")


def _run_seconds() -> float:
    """The current backend's time so far: measured on this CPU for the CPU backend, else the wafer's modelled."""
    b = _current[0] if _current else None
    if b is not None and b.is_cpu:
        return b.cpu_seconds
    return b.clock.session.simulated_time_s if b is not None and b.clock is not None else 0.0


class _Profiler:
    """``executor.profiler``: gigaGPT reads ``rate_tracker.rate`` / ``.global_rate``; the 2.0 Model Zoo's runner calls
    ``rate()``, ``global_rate()``, ``total_samples()`` and ``total_time()`` (seconds: MODELLED on the wafer, measured
    on this CPU for the CPU backend)."""

    def __init__(self, executor: DataExecutor) -> None:
        self.rate_tracker = _RateTracker(executor)
        self.executor = executor

    def rate(self) -> float:
        return self.rate_tracker.rate

    def global_rate(self) -> float:
        return self.rate_tracker.global_rate

    def total_samples(self) -> int:
        return self.executor.samples

    def total_time(self) -> float:
        return _run_seconds()


_said_rate: list[bool] = []
facade_log.reset_with_each_run(_said_rate.clear)


__all__ = ["Backend", "CompiledModel", "DataExecutor", "DataLoader", "backend", "checkpoint_closure", "compile",
           "manual_seed", "summarize_tensor", "use_cs",
           "current_backend", "load", "save", "step_closure", "summarize_scalar", "trace"]
