"""What the R1.x Cerebras Model Zoo asks of the Cerebras software when no CS system is attached.

The R1.7 and R1.9 Model Zoos' shared runner (``modelzoo/common/pytorch``: ``run_utils``, ``PyTorchBaseRunner``)
imports the runtime's ``amp``, ``core.cb_model``, ``core.modes`` (and in R1.7 ``core.name_scope``) and the
appliance client's ``AP_DISABLED`` as soon as ``cerebras.framework`` can be found, then asks ``cb_model``
where it runs. Their READMEs document the run on a CPU or GPU (R1.7: ``python run.py --mode train --params
configs/params.yaml``; R1.9: ``python run.py CPU --mode train --params configs/params.yaml``): with no CS system
given (no ``--cs_ip``, ``--compile_only`` or ``--appliance``; target ``CPU``) the runtime answers that the run is
not on a CS system, one process, the master, and the zoo trains with its own PyTorch runner on this CPU. That is
what these modules answer, as the runtime does: the run is measured on this CPU and nothing is modelled (the
zoo's CPU path never reaches a wafer).

The zoo's CS-system path (``--cs_ip``, ``--compile_only``, ``--appliance``, R1.9's ``CSX``) drives the CS
runtime itself (the lowering passes, the appliance client's protobuf stack, the weight-streaming executor):
the first name it asks for that only a CS system answers raises an accelkit error saying what runs instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any, NoReturn

import torch

from accelkit.facades.cerebras import amp as _amp
from accelkit.facades.cerebras.clock import CerebrasError
from accelkit.runtime import facade_log

_FIX = ("run the zoo on its CPU path, as its README documents (R1.7: python run.py --mode train --params "
        "configs/params.yaml, without --cs_ip / --compile_only / --appliance; R1.9: python run.py CPU --mode train "
        "--params configs/params.yaml): it trains on this CPU; for the simulated wafer, the 2.0 Model Zoo's runner "
        "(python run.py CSX --mode train --params configs/params.yaml) or a loop of your own with "
        "cerebras.pytorch's compile / trace / DataExecutor (examples/vendor/cstorch_loop.py)")


def refuse(name: str) -> NoReturn:
    raise CerebrasError(
        f"the R1.x Model Zoo's CS-system path ({name}: the CS runtime behind modelzoo.common.pytorch's "
        "PyTorchCSRunner / PyTorchCSAppliance, and the appliance client's protobuf stack) is not simulated by "
        "accelkit", fix=_FIX)


def _to_cpu(tensor: Any) -> Any:
    return tensor.cpu() if isinstance(tensor, torch.Tensor) else tensor


class _NoSystem:
    """``cb_model`` as the runtime answers with no CS system attached: not on a CS system, one process (the
    master, a streamer and a receiver), step closures run at once; every other name is the CS path's."""

    def use_cs(self) -> bool:
        from accelkit.vendor.synthetic import at_real_sizes

        at_real_sizes("the Model Zoo's runner")  # it sizes its epochs (steps_per_epoch) from the loader's length
        facade_log.accept(
            "Cerebras", "the R1.x Model Zoo's runner with no CS system given",
            "the runtime answers that no CS system is attached (cb_model.use_cs() is False), so the zoo runs its "
            "own PyTorch runner on this CPU, as on a machine with the Cerebras software and no system: its "
            "times are this CPU's, measured, and nothing is modelled (the simulated wafer runs the 2.0 zoo's "
            "'python run.py CSX ...' or a cerebras.pytorch loop)", emulated=True)
        return False

    def is_appliance(self) -> bool:
        return False

    def is_wse_device(self) -> bool:
        return False

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

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("__"):
            raise AttributeError(name)
        refuse(f"cb_model.{name}")


cb_model = _NoSystem()


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
    if name in ("GradScaler", "use_bfloat16"):
        return getattr(_amp, name)
    refuse(name)
