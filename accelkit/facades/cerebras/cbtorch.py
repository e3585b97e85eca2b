"""Cerebras' first PyTorch integration (``cerebras.framework.torch``, imported as ``cbtorch``), simulated.

The shape of a CS-2 training script of that era::

    cerebras.initialize(cs_ip="10.0.0.1:9000")           # cbtorch.initialize: which system to run on
    model = cerebras.module(Net())                       # cbtorch.module: the model the system will run
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = cerebras.dataloader(train_loader)           # cbtorch.dataloader: each batch is one step
    with cerebras.Session(loader, mode="train") as session:   # cbtorch.Session
        for x, y in loader:                              # an ordinary PyTorch loop
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    print(session.report())     # modelled time, and the execution mode: pipelined or weight streaming

The loop's numerics are the user's own PyTorch calls on this CPU; each batch drawn from the Cerebras
dataloader closes one step on the wafer's modelled clock (see :mod:`accelkit.facades.cerebras.clock`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch
import torch.optim.optimizer as torch_optimizer
from torch import nn

from accelkit.facades.cerebras import zoo_r1
from accelkit.facades.cerebras.clock import SYSTEMS, CerebrasError, ClockResults, StepClock, check_system
from accelkit.facades.cerebras.system_inputs import SystemLabels, for_capture, half_dtype_of
from accelkit.hardware.precision import CpuAutocast
from accelkit.runtime import facade_log

MODES = ("train", "eval")


@dataclass(frozen=True)
class System:
    """The simulated Cerebras system a script runs on (what ``initialize`` set up)."""

    target: str  # accelkit catalog name of the wafer: wse2 (CS-2) or wse3 (CS-3)
    precision: str
    mode: str  # execution mode: "auto" lets the compiler choose pipelined or weight-streaming
    cs_ip: str | None  # recorded only: accelkit contacts no system

    def __str__(self) -> str:
        return (f"simulated Cerebras {SYSTEMS[self.target]} ({self.target}), {self.precision}, execution mode "
                f"{self.mode}" + (f"; cs_ip {self.cs_ip} ignored (nothing is contacted)" if self.cs_ip else ""))


class _State:
    """The script's system, its registered models and the running session (cbtorch keeps these globally)."""

    def __init__(self) -> None:
        self.system: System | None = None
        self.modules: list[CerebrasModule] = []
        self.active: Session | None = None


_state = _State()


def _reset() -> None:
    """Each vendor script starts with no system, no models and no running session."""
    _state.system, _state.modules, _state.active = None, [], None
    _env.service_workdir = "."


facade_log.reset_with_each_run(_reset)


# the keywords the R1.x Model Zoo's runner passes on its CS-system path (modelzoo/common/pytorch/pytorch_base_runner.py)
_ZOO_RUNTIME_KEYWORDS = ("service_workdir", "compile_dir", "compile_only", "appliance", "use_appliance_data",
                         "use_cbfloat16")


def initialize(cs_ip: str | None = None, *, system: str = "wse2", precision: str = "fp32",
               mode: str = "auto", **runtime: Any) -> System:
    """Choose the system the script runs on (``cbtorch.initialize``).

    ``cs_ip`` is the real system's address; accelkit accepts it and ignores it (the wafer is simulated,
    nothing is contacted). ``system`` picks the wafer (``wse2`` = CS-2, the default; ``wse3`` = CS-3),
    ``precision`` the arithmetic (``fp32`` runs exactly as plain PyTorch; ``bf16`` / ``fp16`` emulate the
    system's mixed precision) and ``mode`` the execution mode (``auto``, ``pipelined``, ``weight-streaming``;
    the real system decides this itself).
    """
    from accelkit.families.wafer import MODEL as WAFER

    zoo = {k: v for k, v in runtime.items() if k in _ZOO_RUNTIME_KEYWORDS}
    if zoo:  # the R1.x zoo's runner starting the CS runtime itself (its CS-system path)
        _zoo_runtime(cs_ip, zoo)
        runtime = {k: v for k, v in runtime.items() if k not in zoo}
    if runtime:
        raise CerebrasError(f"cbtorch.initialize() got unexpected keyword arguments: {', '.join(runtime)}",
                            fix="initialize(cs_ip=..., system='wse2' or 'wse3', precision=..., mode=...)")
    allowed = ("auto", *WAFER.modes)
    if mode not in allowed:
        raise CerebrasError(f"{mode!r} is not an execution mode of the wafer", fix=f"use one of {list(allowed)}")
    _state.system = System(target=check_system(system), precision=precision, mode=mode, cs_ip=cs_ip)
    if cs_ip:
        facade_log.accept("Cerebras", f"cbtorch.initialize(cs_ip={cs_ip!r})",
                          "the address of the CS system to run on; the wafer is simulated, nothing is contacted")
    _state.modules = []
    return _state.system


def _zoo_runtime(cs_ip: str | None, settings: dict[str, Any]) -> None:
    """The R1.7 zoo's runner starting the runtime for a CS system (``--cs_ip``): its pipelined path runs on the
    simulated CS-2; compiling only, the appliance (weight streaming) and cbfloat16 are refused by name."""
    for name in ("compile_only", "appliance", "use_cbfloat16"):
        if settings.get(name):
            zoo_r1.refuse(f"cbtorch.initialize({name}=True)")
    if not cs_ip:
        zoo_r1.refuse("cbtorch.initialize() without a cs_ip")
    for name in ("service_workdir", "compile_dir", "use_appliance_data"):
        if name in settings:
            facade_log.accept("Cerebras", f"cbtorch.initialize({name}={settings[name]!r})",
                              "where the runtime keeps its compile artifacts and logs, and how the appliance reads data: "
                              "nothing is compiled or streamed to a system here")
    _env.service_workdir = settings.get("service_workdir") or "."
    zoo_r1.cb_model.attach()


# what the runtime keeps for the run: its environment (cbtorch.env()) and state (cbtorch.state()), as the R1.7 zoo
# reads them; the runtime's own rate tracker is not kept (the modelled rate is in the log lines and the report)
_env = SimpleNamespace(weight_streaming_mode=False, appliance=False, service_workdir=".")
_runtime_state = SimpleNamespace(rate_tracker=None)


def env() -> SimpleNamespace:
    """``cbtorch.env()``: the run's settings (pipelined, not the appliance; the service folder)."""
    return _env


def state() -> SimpleNamespace:
    """``cbtorch.state()``: the runtime's state (no rate tracker: accelkit's clock is MODELLED)."""
    return _runtime_state


def device_name() -> str:
    """How the R1.7 runtime's log lines name the device: the simulated system."""
    system = _state.system
    return f"{SYSTEMS.get(system.target, system.target)} (simulated)" if system is not None else "CPU"


def _modelled_rate() -> float:
    """The running session's MODELLED samples per second so far (0 before its first step)."""
    active = _state.active
    session = active.clock.session if active is not None and active.clock is not None else None
    return session.samples / session.simulated_time_s if session is not None and session.simulated_time_s else 0.0


zoo_r1.cb_model.describe = lambda: (device_name(), _modelled_rate())  # the runtime's log lines (print_update)


def _system(step: str) -> System:
    if _state.system is None:
        raise CerebrasError(f"{step} before initialize()",
                            fix="call accelkit.facades.cerebras.initialize(cs_ip=...) first, as with cbtorch.initialize")
    return _state.system


class CerebrasModule(nn.Module):
    """The model as the system runs it (what ``cbtorch.module`` returns): call it like the original.

    Parameters are the original's (an optimizer may be built from either). Inside a ``Session`` each call
    is reported to the session's clock; outside one it simply runs the model.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.module = model

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        active = _state.active
        half = None
        if active is not None and active.module is self and active.clock is not None:
            half = active.half_inputs(args, kwargs)
            active.clock.on_forward(*for_capture((args, kwargs), self.module) if half else (args, kwargs))
        with CpuAutocast({"fp16": torch.float16, "bf16": torch.bfloat16}.get(half or "")):
            return self.module(*args, **kwargs)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        """The model's own state, under its own names: a checkpoint written here loads into the bare model (the
        R1.7 zoo's CPU path reads what its CS path wrote), as the runtime's module is the model itself."""
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        return self.module.load_state_dict(state_dict, strict=strict, assign=assign)

    def __getattr__(self, name: str) -> Any:
        """The model's own attributes too: the runtime hands the script its model back (the R1.7 zoo reads
        ``model.accuracy_metric`` from what ``cbtorch.module`` returned)."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("module"), name)


def module(model: nn.Module, device: Any = None) -> CerebrasModule:
    """Register ``model`` to run on the system (``cbtorch.module``; the R1.7 zoo passes the runtime's
    ``device``, which changes nothing here); returns the wrapped model to call."""
    _system("module()")
    if not isinstance(model, nn.Module):
        raise CerebrasError(f"module() needs an nn.Module, not {type(model).__name__}", fix="pass the model object")
    wrapped = model if isinstance(model, CerebrasModule) else CerebrasModule(model)
    _state.modules.append(wrapped)
    return wrapped


class CerebrasDataLoader:
    """A PyTorch loader whose every batch is one step on the system (what ``cbtorch.dataloader`` returns)."""

    def __init__(self, loader: Iterable[Any]) -> None:
        self.loader = loader

    def __iter__(self) -> Iterator[Any]:
        for batch in self.loader:
            active = _state.active
            if active is not None and active.clock is not None:
                active.clock.end_step()  # the previous batch's step is complete
            yield batch
        active = _state.active
        if active is not None and active.clock is not None:
            active.clock.end_step()

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]


def dataloader(loader: Iterable[Any]) -> CerebrasDataLoader:
    """Feed ``loader``'s batches to the system, one step each (``cbtorch.dataloader``)."""
    _system("dataloader()")
    return loader if isinstance(loader, CerebrasDataLoader) else CerebrasDataLoader(loader)


class Session(ClockResults):
    """A run on the system, used as a context manager around the training loop (``cbtorch.Session``).

    Two call forms, both of the CS-2 era:

    - ``Session(loader, mode="train")`` with the loader from :func:`dataloader` and the model from
      :func:`module`: each batch drawn from the loader closes one step;
    - ``Session(model, optimizer, criterion, mode="train")`` (the seed snippet's form): the model, its
      optimizer and loss; each ``optimizer.step()`` closes one training step (each forward one eval step).
      Without a prior :func:`initialize`, the system is a CS-2 (``wse2``) in fp32, and the model need not
      have gone through :func:`module`.

    ``mode="train"`` puts the model in training mode and counts forward, backward and optimizer sections
    as they happen; ``mode="eval"`` puts it in eval mode (forward only). After the block,
    :attr:`simulated_time_s` and :meth:`report` give the modelled time and the execution mode. An error
    PyTorch raises in the loop is re-raised naming the Session and the fix (e.g. int64 labels).
    """

    def __init__(self, dataloader: CerebrasDataLoader | nn.Module | None = None,
                 optimizer: torch.optim.Optimizer | str | None = None, criterion: Any = None,
                 mode: str = "train") -> None:
        self._labels: Any = None
        self._half: str | None = None
        if isinstance(optimizer, str) and criterion is None:  # Session(loader, "train"): the R1.7 zoo's call
            mode, optimizer = optimizer, None
        if mode not in MODES:
            raise CerebrasError(f"Session mode {mode!r} is not one of {list(MODES)}", fix="mode='train' or 'eval'")
        self.optimizer: torch.optim.Optimizer | None = optimizer if not isinstance(optimizer, str) else None
        self.criterion = criterion
        self.train_mode = mode
        self.clock: StepClock | None = None
        self._hooks: list[Any] = []
        self._optimizer_watch: Any = None
        if isinstance(dataloader, nn.Module):  # Session(model, optimizer, criterion, mode=...)
            if _state.system is None:
                initialize()
            self.system = _system("Session()")
            model = dataloader
            self.module = model if isinstance(model, CerebrasModule) else next(
                (m for m in _state.modules if m.module is model), None) or CerebrasModule(model)
            self._bare = None if any(m is self.module for m in _state.modules) or model is self.module else model
            self.dataloader: CerebrasDataLoader | None = None
            self._steps_on_optimizer = True
            return
        system = _system("Session()")
        if not _state.modules:
            raise CerebrasError("Session() found no model to run",
                                fix="wrap the model first: model = accelkit.facades.cerebras.module(model), or pass it: "
                                    "Session(model, optimizer, criterion, mode='train')")
        if dataloader is not None and not isinstance(dataloader, CerebrasDataLoader):
            raise CerebrasError("Session needs the loader returned by cerebras.dataloader(...)",
                                fix="loader = accelkit.facades.cerebras.dataloader(loader), then iterate that loader")
        self.system = system
        self.dataloader = dataloader
        self.module = _state.modules[-1]
        self._bare = None
        self._steps_on_optimizer = False

    def half_inputs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        """16-bit inputs to an fp32 model on the R1.7 zoo's CS path (its loaders make float16 inputs for the
        system): the program runs in that mixed precision, as the system's compiler takes them; said once."""
        if not zoo_r1.cb_model.attached or self.clock is None:
            return None
        if self._half is None:
            weights = next((p.dtype for p in self.module.module.parameters() if p.is_floating_point()),
                           torch.float32)
            self._half = (half_dtype_of((args, kwargs)) or "") if weights == torch.float32 else ""
            if self._half:
                self.clock.use_precision(self._half)
                print(f"cbtorch: the model's inputs are 16-bit ({self._half}): the CS-2 runs it in mixed precision "
                      f"({self._half} arithmetic, fp32 weights and accumulation)")
        return self._half or None

    def __enter__(self) -> Session:
        if _state.active is not None:
            raise CerebrasError("a Session is already running", fix="finish one `with Session(...)` block first")
        clock = StepClock(self.module.module, target=self.system.target, precision=self.system.precision,
                          mode=self.system.mode, stack="cbtorch")
        self.clock = clock
        self.module.train(self.train_mode == "train")
        if self._bare is not None:  # the script calls its own model, not a cbtorch.module: watch that one
            def on_call(_m: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
                if self.train_mode == "eval":
                    clock.end_step()  # in eval, every forward is a step
                clock.on_forward(args, kwargs)

            self._hooks.append(self._bare.register_forward_pre_hook(on_call, with_kwargs=True))
        self._optimizer_watch = clock.watching_optimizers()
        self._optimizer_watch.__enter__()  # before the hook below: the update is part of the step it closes
        if self._steps_on_optimizer:
            def end_step(*_: Any) -> None:
                clock.end_step()  # optimizer.step() closes the training step

            self._hooks.append(torch_optimizer.register_optimizer_step_post_hook(end_step))
        _state.active = self
        if zoo_r1.cb_model.attached:  # the zoo's labels arrive as int32, as the system takes them
            self._labels = SystemLabels()
            self._labels.__enter__()
        facade_log.register_run(f"cbtorch.Session (mode={self.train_mode!r})", self.report)
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.active = None
        if self._labels is not None:
            self._labels.__exit__(None, None, None)
            self._labels = None
        for h in self._hooks:
            h.remove()
        self._hooks = []
        if self.clock is not None:
            if exc[0] is None:
                self.clock.end_step()
            self._optimizer_watch.__exit__(*exc)
            self.clock.close()
        if exc[1] is not None:
            with facade_log.vendor_call(f"the loop inside `with cbtorch.Session(..., mode={self.train_mode!r})`"):
                raise exc[1]

    # ---- results --------------------------------------------------------------------------------
    def _clock(self) -> StepClock:
        if self.clock is None:
            raise CerebrasError("this Session has not run yet", fix="use it as `with Session(loader) as session:`")
        return self.clock



def save(state_dict: dict[str, Any], checkpoint_file: Any) -> None:
    """``cbtorch.save``: the R1.x Model Zoo's runner writes its checkpoints with it (PyTorch's format here, as
    ``cstorch.save``)."""
    from accelkit.facades.cerebras.cstorch import save as _save

    _save(state_dict, checkpoint_file)


def load(checkpoint_file: Any, map_location: Any = None, **kwargs: Any) -> Any:
    """``cbtorch.load``: read a checkpoint written by :func:`save` (nothing in the file is executed)."""
    from accelkit.facades.cerebras.cstorch import load as _load

    return _load(checkpoint_file, map_location=map_location, **kwargs)


# the runtime's namespaces the R1.7 zoo's CS runner names: its optimizer wrapper and schedules, and its loader type
optim = SimpleNamespace(Optimizer=zoo_r1.Optimizer, lr_scheduler=zoo_r1.lr_scheduler)
optimizer = zoo_r1.optimizer
data = SimpleNamespace(DataLoader=CerebrasDataLoader)
utils = SimpleNamespace(data=SimpleNamespace(dataloader=data))

__all__ = ["CerebrasDataLoader", "CerebrasModule", "Session", "System", "data", "dataloader", "device_name", "env",
           "initialize", "load", "module", "optim", "optimizer", "save", "state", "utils"]
