"""``cerebras.pytorch.utils``: ``data`` (the loader and executor, ``compute_num_steps``), ``tensorboard`` (a summary
writer), ``nest`` (``visit_torch_tensors``) and ``CSConfig`` (the cluster's settings, recorded).

``from cerebras.pytorch.utils.tensorboard import SummaryWriter`` (gigaGPT) gets PyTorch's own writer when
the ``tensorboard`` package is installed, else :class:`ScalarWriter`, which keeps the same ``add_scalar``
calls as CSV lines in ``<log_dir>/scalars.csv``.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from accelkit.facades.cerebras.clock import CerebrasError
from accelkit.facades.cerebras.cstorch import DataExecutor, DataLoader
from accelkit.facades.cerebras.zoo2 import (
    DistributedSampler,
    Schedule,
    infer_batch_size,
    nest,
    tracker,
    visit_torch_tensors,
)
from accelkit.runtime import facade_log


def compute_num_steps(dataloader: Any, initial_step: int = 0, num_steps: int | None = None,
                      max_steps: int | None = None, num_epochs: int | None = None,
                      steps_per_epoch: int | None = None, grad_accum_steps: int = 1) -> int:
    """``cstorch.utils.data.compute_num_steps``: how many steps a run takes, from the Model Zoo's ``runconfig``
    (``num_steps``; else ``num_epochs`` x ``steps_per_epoch``, an epoch being the loader's length when not given;
    else ``max_steps``), never past ``max_steps`` counted from ``initial_step``. A step is ``grad_accum_steps``
    batches. The executor starts the loader again when it runs out, so an epoch may be longer than the loader."""
    if num_steps is not None and num_epochs is not None:
        raise CerebrasError("runconfig sets both num_steps and num_epochs", fix="keep one of them")
    if num_steps is not None:
        steps = num_steps
    elif num_epochs is not None:
        per_epoch = steps_per_epoch if steps_per_epoch is not None else len(dataloader) // max(grad_accum_steps, 1)
        steps = num_epochs * per_epoch
    elif max_steps is not None:
        steps = max_steps - initial_step
    else:
        raise CerebrasError("runconfig sets none of num_steps, num_epochs and max_steps",
                            fix="set num_steps (or num_epochs, or max_steps) in the params' runconfig")
    if max_steps is not None:
        steps = min(steps, max_steps - initial_step)
    if steps <= 0:
        raise CerebrasError(f"this run would take {steps} steps (initial step {initial_step}, max_steps {max_steps})",
                            fix="raise max_steps, or start from an earlier checkpoint")
    return steps * max(grad_accum_steps, 1)


data = SimpleNamespace(DataExecutor=DataExecutor, DataLoader=DataLoader, compute_num_steps=compute_num_steps,
                       Schedule=Schedule, infer_batch_size=infer_batch_size, DistributedSampler=DistributedSampler,
                       )




class CSConfig:
    """``cstorch.utils.CSConfig(num_csx=..., max_wgt_servers=..., mgmt_address=..., ...)``: the Wafer-Scale
    Cluster's settings for a job (systems, weight and activation servers, the management address). Each setting
    given is recorded as a hardware-only option: the simulated run is one CS system's either way."""

    def __init__(self, **settings: Any) -> None:
        for name, value in settings.items():
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if isinstance(value, (str, int, float, list, tuple)) and not isinstance(value, bool) and value != 0:
            facade_log.accept("Cerebras", f"CSConfig({name}={value!r})",
                              "configures the Wafer-Scale Cluster the job runs on (systems, servers, addresses); the "
                              "simulated run is one system's")


class ScalarWriter:
    """``add_scalar(tag, value, step)`` written as ``tag,step,value`` lines (when tensorboard is not installed)."""

    def __init__(self, log_dir: str | os.PathLike[str] | None = None, **_: Any) -> None:
        self.log_dir = os.fspath(log_dir or "runs")
        os.makedirs(self.log_dir, exist_ok=True)
        self.path = os.path.join(self.log_dir, "scalars.csv")

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, **_: Any) -> None:
        with open(self.path, "a") as f:
            f.write(f"{tag},{global_step if global_step is not None else ''},{float(scalar_value)}\n")

    def flush(self) -> None:
        """Lines are written as they come."""

    def close(self) -> None:
        """Nothing is held open."""


def _summary_writer() -> Any:
    base: Any
    try:
        from torch.utils.tensorboard import SummaryWriter as base
    except ImportError:
        base = ScalarWriter

    class SummaryWriter(base):  # type: ignore[misc, valid-type]
        """cstorch's writer: PyTorch's (or :class:`ScalarWriter`), with cstorch's ``base_step`` (the step a resumed
        run starts counting from) kept as an attribute."""

        def __init__(self, *args: Any, base_step: int = 0, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.base_step = base_step
            # cstorch's folder for what TensorBoard's events cannot hold (tensors), beside the events file
            events = getattr(getattr(self, "_get_file_writer", lambda: None)(), "event_writer", None)
            name = os.path.basename(getattr(events, "_file_name", "")) or f"events.out.tfevents.{os.getpid()}"
            self.cs_events_dir = Path(self.log_dir) / name.replace("events.out.tfevents.", "events.out.csevents.")
            self.cs_events_dir.mkdir(parents=True, exist_ok=True)

        def add_tensor(self, name: str, tensor: torch.Tensor, step: int) -> None:
            """``writer.add_tensor(name, tensor, step)``: the tensor in ``<cs_events_dir>/tensors/<name>/<step>``
            (safetensors here; cstorch writes PyTorch's format)."""
            from safetensors.torch import save_file

            folder = self.cs_events_dir / "tensors" / name
            folder.mkdir(parents=True, exist_ok=True)
            save_file({"tensor": tensor.detach().cpu().contiguous()}, str(folder / f"{step}.safetensors"))

    return SummaryWriter


SummaryWriter = _summary_writer()  # cerebras.pytorch.utils.tensorboard.SummaryWriter
tensorboard = SimpleNamespace(SummaryWriter=SummaryWriter)


def extract_loss(model_outputs: Any) -> torch.Tensor:
    """The loss among a model's outputs, as the Model Zoo's runners take it (R1.7-1.9: ``from
    cerebras.framework.torch.utils import extract_loss``): the outputs themselves when a tensor, the first of a
    tuple or list, else their ``loss`` attribute (a Hugging Face model output)."""
    if isinstance(model_outputs, torch.Tensor):
        return model_outputs
    if isinstance(model_outputs, (list, tuple)) and model_outputs:
        return model_outputs[0]
    if hasattr(model_outputs, "loss"):
        return model_outputs.loss
    raise CerebrasError(f"extract_loss: no loss in the model's outputs (a {type(model_outputs).__name__})",
                        fix="return the loss from the model's forward: a tensor, a tuple whose first item is the "
                            "loss, or an object with a .loss attribute")


# R1.9's runner asks whether the lazy-tensor lowering to the CS compiler is on (cbtorch.utils.utils): not without a
# CS system (accelkit.facades.cerebras.zoo_r1)
utils = SimpleNamespace(is_ltc_mlir_mode_enabled=lambda: False)

__all__ = ["CSConfig", "DataExecutor", "DataLoader", "DistributedSampler", "Schedule", "ScalarWriter", "SummaryWriter", "compute_num_steps", "data",
           "extract_loss", "infer_batch_size", "nest", "tensorboard", "tracker", "utils", "visit_torch_tensors"]
