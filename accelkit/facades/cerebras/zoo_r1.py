"""What the R1.x Cerebras Model Zoo asks of the Cerebras software, on its CPU path and on the simulated CS-2.

The R1.7 and R1.9 Model Zoos' shared runner (``modelzoo/common/pytorch``: ``run_utils``, ``PyTorchBaseRunner``)
imports the runtime's ``amp``, ``core.cb_model``, ``core.modes`` (and in R1.7 ``core.name_scope``) and the
appliance client's ``AP_DISABLED`` as soon as ``cerebras.framework`` can be found, then asks ``cb_model``
where it runs. Their READMEs document the run on a CPU or GPU (R1.7: ``python run.py --mode train --params
configs/params.yaml``; R1.9: ``python run.py CPU --mode train --params configs/params.yaml``): with no CS system
given (no ``--cs_ip``, ``--compile_only`` or ``--appliance``; target ``CPU``) the runtime answers that the run is
not on a CS system, one process, the master, and the zoo trains with its own PyTorch runner on this CPU. That is
what these modules answer, as the runtime does: the run is measured on this CPU and nothing is modelled (the
zoo's CPU path never reaches a wafer).

With ``--cs_ip`` (R1.7's CS path: ``PyTorchCSRunner``, the pipelined CS-2) the zoo starts the runtime with
``cbtorch.initialize(service_workdir=..., cs_ip=...)`` and the same names answer as a CS-2 does: ``cb_model.use_cs()``
is True, the model and the loader go through ``cbtorch.module`` / ``cbtorch.dataloader`` into a ``cbtorch.Session``
(each batch one step on the simulated wafer's modelled clock), the optimizer is wrapped as the runtime's
(:class:`Optimizer`), its learning rate follows the runtime's schedule (:data:`lr_scheduler`: ``Constant``; the others
refused by name), the grad scaler takes the R1 arguments (:func:`GradScaler`), the loop's log lines carry the MODELLED
rate, and checkpoints are written as the runner asks. The rest of the CS path (``--compile_only``, ``--appliance``:
the appliance client's protobuf stack and the weight-streaming executor; R1.9's ``CSX``) raises an accelkit error
saying what runs instead.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any, NoReturn

import torch

from accelkit.facades.cerebras import amp as _amp
from accelkit.facades.cerebras.clock import CerebrasError
from accelkit.runtime import facade_log

_FIX = ("for the simulated wafer run R1.7's pipelined CS path (python run.py --mode train --params "
        "configs/params.yaml --cs_ip <address>, without --compile_only / --appliance), the 2.0 Model Zoo's runner "
        "(python run.py CSX --mode train --params configs/params.yaml) or a loop of your own with cerebras.pytorch's "
        "compile / trace / DataExecutor (examples/vendor/cstorch_loop.py); or run the zoo on its CPU path, as its "
        "README documents (R1.9: python run.py CPU --mode train --params configs/params.yaml): it trains on this CPU")


def refuse(name: str) -> NoReturn:
    raise CerebrasError(
        f"the R1.x Model Zoo's CS-system path ({name}: the CS runtime behind modelzoo.common.pytorch's "
        "PyTorchCSCompiler / PyTorchCSAppliance, and the appliance client's protobuf stack) is not simulated by "
        "accelkit", fix=_FIX)


def _to_cpu(tensor: Any) -> Any:
    return tensor.cpu() if isinstance(tensor, torch.Tensor) else tensor


class RateTracker:
    """``cb_model.RateTracker``: the runtime's samples-per-second tracker (the zoo names the type; on the
    simulated CS-2 the rate comes from the modelled clock, :meth:`_Runtime.print_update`)."""


class _Runtime:
    """``cb_model`` as the runtime answers: with no CS system attached (the CPU path) not on a CS system; once the
    zoo's runner has called ``cbtorch.initialize(service_workdir=..., cs_ip=...)`` (:meth:`attach`), on the simulated
    CS-2. Always one process (the master, a streamer and a receiver); step closures run at once."""

    def __init__(self) -> None:
        self.attached = False
        self.run_steps = 0  # steps of the runtime's optimizer in this run (cb_model.get_run_step; Optimizer.step)
        # the simulated system's name and the running session's MODELLED samples/s (set by cbtorch, which runs them)
        self.describe: Callable[[], tuple[str, float]] = lambda: ("CS-2 (simulated)", 0.0)

    def attach(self) -> None:
        """The zoo's runner started the runtime for a CS system: answer as the simulated CS-2 from now on."""
        self.attached = True
        self.run_steps = 0

    def detach(self) -> None:
        self.attached = False

    def use_cs(self) -> bool:
        from accelkit.vendor.synthetic import at_real_sizes

        at_real_sizes("the Model Zoo's runner")  # it sizes its epochs (steps_per_epoch) from the loader's length
        if self.attached:
            return True
        facade_log.accept(
            "Cerebras", "the R1.x Model Zoo's runner with no CS system given",
            "the runtime answers that no CS system is attached (cb_model.use_cs() is False), so the zoo runs its "
            "own PyTorch runner on this CPU, as on a machine with the Cerebras software and no system: its "
            "times are this CPU's, measured, and nothing is modelled (the simulated wafer runs R1.7's "
            "'python run.py ... --cs_ip <address>', the 2.0 zoo's 'python run.py CSX ...' or a cerebras.pytorch "
            "loop)", emulated=True)
        return False

    def is_appliance(self) -> bool:
        return False

    def is_wse_device(self) -> bool:
        return self.attached

    def is_sync_mode(self) -> bool:
        return False

    def is_master_ordinal(self, local: bool = False) -> bool:
        return True

    def is_streamer(self) -> bool:
        return True

    def is_receiver(self) -> bool:
        return True

    def get_ordinal(self) -> int:
        return 0

    def get_streaming_rank(self) -> int:
        return 0

    def get_streaming_batch_size(self, batch_size: int) -> int:
        return batch_size

    def num_tasks(self) -> int:
        return 1

    def num_streamers(self) -> int:
        return 1

    def num_receivers(self) -> int:
        return 1

    def step_closure(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return fn

    def make_constant(self, tensor: Any) -> Any:
        return tensor

    def set_rng_state(self, seed: Any) -> None:
        return None

    def rendezvous(self, tag: str, payload: Any = None, replicas: Any = None) -> list[Any]:
        return [payload]  # one process: nothing to wait for

    def mesh_reduce(self, tag: str, data: Any, reduce_fn: Callable[[list[Any]], Any]) -> Any:
        return reduce_fn([data])

    def to_cpu(self, tensor: Any) -> Any:
        return _to_cpu(tensor)

    def to_device(self, tensor: Any, device: Any) -> Any:
        return tensor.to(device)

    # ---- the CS path's (the runner calls these once cbtorch.initialize attached the runtime) ------------------
    RateTracker = RateTracker

    def device(self) -> torch.device:
        """The device the runner moves its tensors to: this CPU (the wafer is simulated beside it)."""
        self._cs("device")
        return torch.device("cpu")

    def set_target_num_replicas(self, replicas: int) -> None:
        self._cs("set_target_num_replicas")
        if replicas != 1:
            facade_log.accept("Cerebras", f"cb_model.set_target_num_replicas({replicas})",
                              "several copies of a small model on one wafer (multireplica); one copy is modelled")

    def set_state_names(self, names: Any) -> None:
        self._cs("set_state_names")  # the tensors the system keeps between steps: the runtime's bookkeeping

    def get_run_step(self) -> int:
        self._cs("get_run_step")
        return self.run_steps

    def set_run_config(self, total_steps: int, checkpoint_steps: int, fetch_steps: int) -> None:
        self._cs("set_run_config")  # the steps the system runs and when it fetches values: the loop itself here

    def mark_step(self) -> None:
        self._cs("mark_step")

    def print_metrics_report(self) -> None:
        self._cs("print_metrics_report")

    def metrics_counter_value(self, name: str) -> None:
        return None  # the runtime's compile and programming counters: nothing compiled or programmed here

    def print_update(self, device: Any, step: int, loss: float, mode: str, summary_writer: Any = None) -> None:
        """The runner's log line, as the runtime prints it, with the rate the simulated wafer's clock gives
        (MODELLED) in place of the measured one."""
        self._cs("print_update")
        name, rate = self.describe()
        shown = f"{rate:.2f} samples/sec (MODELLED)" if rate else "- (MODELLED once the first step is done)"
        logging.info(f"| {str(mode).capitalize()} Device={name}, Step={step}, Loss={float(loss):.5f}, Rate={shown}")
        if summary_writer is not None and rate:
            summary_writer.add_scalar("local_samples_per_sec", rate, step)

    def save(self, state_dict: dict[str, Any], file_name: str, master_only: bool = True,
             post_transfer_callback: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        """The runner's checkpoint: fetched from the wafer, then written (PyTorch's format here, nothing in it
        executed when read back: :func:`accelkit.facades.cerebras.cstorch.load`)."""
        self._cs("save")
        from accelkit.facades.cerebras.cstorch import save as _save

        _save(post_transfer_callback(state_dict) if post_transfer_callback else state_dict, file_name)

    def write_to_summary(self, summary_writer: Any, global_step: int, dict_to_write: dict[str, Any] | None = None,
                         **_: Any) -> None:
        self._cs("write_to_summary")
        if summary_writer is not None:
            for key, value in (dict_to_write or {}).items():
                summary_writer.add_scalar(key, value, global_step)

    def _cs(self, name: str) -> None:
        if not self.attached:
            raise CerebrasError(f"cb_model.{name}() asks the CS system's runtime, which is not started",
                                fix="the zoo's runner starts it with cbtorch.initialize(cs_ip=...) (run.py --cs_ip ...); "
                                    "without a CS system the runner never asks this")

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("__"):
            raise AttributeError(name)
        refuse(f"cb_model.{name}")


cb_model = _Runtime()
facade_log.reset_with_each_run(cb_model.detach)


class Optimizer:
    """``cbtorch.optim.Optimizer``: the runtime's wrapper around the script's optimizer (``cbtorch.optimizer``):
    the update itself is the wrapped optimizer's; a checkpoint's optimizer state is written as it is
    (:meth:`convert_state_dict_for_checkpoint`)."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self._optimizer = optimizer
        self.gradient_clipper: Any = None

    def __getattr__(self, name: str) -> Any:  # param_groups, state, zero_grad, step, state_dict...
        return getattr(self.__dict__["_optimizer"], name)

    def step(self, *args: Any, **kwargs: Any) -> Any:
        out = self._optimizer.step(*args, **kwargs)
        cb_model.run_steps += 1  # the run's step counter (cb_model.get_run_step): this optimizer's steps only
        return out

    def zero_grad(self, set_to_none: bool = True) -> None:
        self._optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return self._optimizer.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._optimizer.load_state_dict(state)

    def convert_state_dict_for_checkpoint(self, state: dict[str, Any]) -> dict[str, Any]:
        return state

    def set_main_lr_scheduler(self, scheduler: Any) -> None:  # weight streaming's (refused before it gets here)
        refuse("Optimizer.set_main_lr_scheduler (weight streaming)")


def optimizer(opt: torch.optim.Optimizer) -> Optimizer:
    """``cbtorch.optimizer``: the script's optimizer as the runtime runs it."""
    return opt if isinstance(opt, Optimizer) else Optimizer(opt)


class _Constant:
    """``cbtorch.optim.lr_scheduler.Constant(optimizer, val, decay_steps, disable_lr_steps_reset)``: on the system
    the schedule runs inside the compiled step; here the optimizer's learning rate is set to ``val``."""

    def __init__(self, optimizer: Optimizer, learning_rate: float, decay_steps: int | None = None,
                 disable_lr_steps_reset: bool = False) -> None:
        self.learning_rate = float(learning_rate)
        for group in optimizer.param_groups:
            group["lr"] = self.learning_rate


def _scheduler(name: str) -> Callable[..., NoReturn]:
    def refused(*_: Any, **__: Any) -> NoReturn:
        raise CerebrasError(
            f"cbtorch.optim.lr_scheduler.{name}: the R1.x runtime's {name} schedule runs inside the compiled step on "
            "the system and is not simulated here (a constant learning rate is)",
            fix="give the zoo a constant learning rate (optimizer: learning_rate: 0.001) for the CS path, run the "
                "schedule on the CPU path (without --cs_ip: the zoo's own schedulers run there), or use the 2.0 "
                "zoo's CSX path, whose schedulers accelkit computes")
    return refused


lr_scheduler = SimpleNamespace(Constant=_Constant, **{name: _scheduler(name) for name in (
    "Polynomial", "Exponential", "InverseExponentialTimeDecay", "InverseSquareRootDecay", "CosineDecay", "MultiStep",
    "Step", "CosineAnnealing", "Lambda", "CosineAnnealingWarmRestarts", "Multiplicative", "CyclicLR", "OneCycleLR")})


def GradScaler(loss_scale: Any = None, initial_loss_scale: float | None = None,  # noqa: N802 - the runtime's name
               steps_per_increase: int | None = None, min_loss_scale: float | None = None,
               max_loss_scale: float | None = None, max_gradient_norm: float | None = None,
               mixed_precision: bool = True, **kwargs: Any) -> Any:
    """The R1.x runtime's ``amp.GradScaler`` arguments (``initial_loss_scale``, ``mixed_precision``, unset ones as
    None) onto :class:`accelkit.facades.cerebras.amp.GradScaler` (a static or dynamic loss scale, honoured)."""
    return _amp.GradScaler(
        loss_scale=loss_scale if mixed_precision else None, init_scale=initial_loss_scale,
        steps_per_increase=steps_per_increase or 2000, min_loss_scale=min_loss_scale, max_loss_scale=max_loss_scale,
        max_gradient_norm=max_gradient_norm, **kwargs)


class modes:  # noqa: N801 - the runtime's own name
    """The run modes the zoo's ``--mode`` takes (R1.9 adds ``eval_all``)."""

    TRAIN = "train"
    EVAL = "eval"
    TRAIN_AND_EVAL = "train_and_eval"
    INFERENCE = "inference"
    EVAL_ALL = "eval_all"

    @staticmethod
    def get_modes() -> tuple[str, ...]:
        return (modes.TRAIN, modes.EVAL, modes.TRAIN_AND_EVAL, modes.INFERENCE, modes.EVAL_ALL)

    @staticmethod
    def is_valid(mode: str) -> bool:
        return mode in modes.get_modes()


@contextlib.contextmanager
def name_scope(name: str, raw: bool = False) -> Iterator[None]:
    """A debug name for the ops inside (the CS compiler's op names): nothing to name on this CPU."""
    yield None


def add_debug_name(module: Any, root_name: str | None = None) -> None:
    """R1.9: name a module's ops for the CS compiler's debug output: nothing to name on this CPU."""
    return None


def get_debug_name(module: Any) -> str:
    return ""


# the appliance client's autogen policy (cerebras.pb.stack.autogen_pb2 / cerebras_appliance.pb.stack.autogen_pb2):
# the zoo imports the name and passes it to the CS path's compile settings only
AP_DISABLED = 0


def locate_csperf_log(folder: str) -> None:
    """``cerebras.workflow.python.cs_perf_analyzer.locate_csperf_log``: the system's performance log of a run;
    there is none here (the zoo then reports its input bottleneck as not applicable)."""
    return None


class AssessBottlenecks:
    """``cs_perf_analyzer.AssessBottlenecks``: reads a system's performance log; with none here it is never made."""

    def __init__(self, perf_file: str) -> None:
        refuse("cs_perf_analyzer.AssessBottlenecks (the system's performance log)")


def is_ltc_mlir_mode_enabled() -> bool:
    """R1.9's lazy-tensor lowering to the CS compiler: not on without a CS system."""
    return False


utils = SimpleNamespace(is_ltc_mlir_mode_enabled=is_ltc_mlir_mode_enabled)


# cerebras.framework.torch.amp (R1.7): what the CPU path asks, the grad scaler's settings (none made on the CPU
# path) and the amp state a checkpoint carries (empty without a CS system)
def get_init_params() -> dict[str, Any]:
    return _amp.get_init_params()


def state_dict() -> dict[str, Any]:
    return {}


def load_state_dict(state: dict[str, Any]) -> None:
    return None


def __getattr__(name: str) -> Any:  # PEP 562: names of the CS path asked of these modules
    if name.startswith("__"):
        raise AttributeError(name)
    if name == "_amp_state":  # amp's, for the 16-bit formats
        return SimpleNamespace(half_dtype=_amp.get_half_dtype())
    if name == "use_bfloat16":
        return _amp.use_bfloat16
    refuse(name)
