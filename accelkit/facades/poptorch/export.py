"""PopTorch's precompilation: ``poptorch_model.compileAndExport(filename, *inputs)``, ``poptorch.load(filename)``
and ``poptorch_model.loadExecutable(filename)`` (PopTorch's user guide, "Precompilation and caching").

PopTorch writes the compiled IPU executable into the file, with the model's weights and, unless
``export_model=False``, the model's Python object pickled, so that ``poptorch.load`` can rebuild the model.
accelkit writes the weights (safetensors) and what the program was compiled for (JSON in the safetensors header),
and never pickles or unpickles anything: a file is data, whoever made it. So ``poptorch.load(filename)`` restores the
model only in the process that exported it (it keeps the model object for the run); in another process it is
refused, naming what to write instead: build the model, wrap it, and ``loadExecutable(filename)``, which reads the
weights from the file into it.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import torch

from accelkit.facades.poptorch.options import PopTorchError
from accelkit.runtime import facade_log

FORMAT = "accelkit-poptorch-export"
VERSION = 1
_EXPORTED: dict[str, tuple[torch.nn.Module, Any, Any, bool]] = {}  # token -> (model, options, optimizer, training)


def export(executor: Any, filename: str | os.PathLike[str], export_model: bool = True) -> Path:
    """Write ``executor``'s weights and compile settings to ``filename`` (atomically: a temporary file, renamed)."""
    from safetensors.torch import save_file

    path = Path(filename)
    token = uuid.uuid4().hex
    o = executor.options
    meta = {"format": FORMAT, "version": VERSION, "training": executor.training, "token": token,
            "model": type(executor.model).__name__, "export_model": bool(export_model),
            "device_iterations": o.device_iterations, "replication_factor": o.replication_factor,
            "gradient_accumulation": o.Training.gradient_accumulation if executor.training else 1,
            "inputs": [list(t.shape) for t in torch.utils._pytree.tree_flatten(executor._example or ())[0]
                       if isinstance(t, torch.Tensor)]}
    tensors = {k: v.detach().contiguous().clone() for k, v in executor.model.state_dict().items()
               if isinstance(v, torch.Tensor)}
    tmp = path.with_name(path.name + ".part")
    save_file(tensors, str(tmp), metadata={"accelkit": json.dumps(meta)})
    tmp.replace(path)
    if export_model:
        _EXPORTED[token] = (executor.model, o.clone(), executor.optimizer, executor.training)
    facade_log.accept("PopTorch", "poptorch_model.compileAndExport(...)",
                      "writes the compiled IPU executable with the weights (and, by default, the model's Python "
                      "object, pickled); accelkit writes the weights and the compile settings, never a pickle, so "
                      "poptorch.load(file) restores the model in this process only: elsewhere, build the model and "
                      "call loadExecutable(file)", emulated=True)
    return path


def _read(filename: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The file's settings and weights; a file accelkit did not write (a real PopTorch executable, anything else)
    is refused, naming it."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file, safe_open

    path = Path(filename)
    if not path.is_file():
        raise PopTorchError(f"no exported executable at {path}",
                            fix="write one first: poptorch_model.compileAndExport(filename, *inputs)")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = json.loads((f.metadata() or {}).get("accelkit", "{}"))
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        meta, tensors = {}, {}
        why = f" ({type(exc).__name__})"
    else:
        why = ""
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise PopTorchError(f"{path} is not an executable accelkit exported{why}: a real PopTorch executable holds "
                            "IPU code, which the simulation cannot run",
                            fix="export it here with poptorch_model.compileAndExport(filename, *inputs)")
    return meta, tensors


def restore(filename: str | os.PathLike[str], edit_opts_fn: Any = None) -> tuple[torch.nn.Module, Any, Any, bool]:
    """What ``poptorch.load(filename, edit_opts_fn=None)`` wraps again: the exported model (with the file's weights),
    its options (changed by ``edit_opts_fn(opts)`` first), its optimizer and whether it trains."""
    meta, tensors = _read(filename)
    kept = _EXPORTED.get(meta["token"])
    if kept is None:
        why = ("it was exported with export_model=False" if not meta.get("export_model") else
               "accelkit keeps the model object only in the process that exported it (PopTorch pickles it into the "
               "file; accelkit never unpickles)")
        kind = "trainingModel" if meta.get("training") else "inferenceModel"
        raise PopTorchError(f"poptorch.load({str(filename)!r}): the file holds {meta.get('model')}'s weights but not "
                            f"the model: {why}",
                            fix=f"build the model and load the weights into it: poptorch.{kind}(model, "
                                "opts).loadExecutable(filename)")
    model, options, optimizer, training = kept
    options = options.clone()
    if edit_opts_fn is not None:
        edit_opts_fn(options)
    _load_weights(model, tensors, filename)
    return model, options, optimizer, training


def load_executable(executor: Any, filename: str | os.PathLike[str]) -> None:
    """``poptorch_model.loadExecutable(filename)``: the exported weights into this wrapped model, whose kind
    (training or inference) must be the file's."""
    meta, tensors = _read(filename)
    if bool(meta.get("training")) != executor.training:
        kinds = ("trainingModel", "inferenceModel")
        raise PopTorchError(f"{filename} was exported from a {kinds[0] if meta.get('training') else kinds[1]}; this is "
                            f"a {kinds[0] if executor.training else kinds[1]}",
                            fix="load it into the same kind of model it was exported from")
    _load_weights(executor.model, tensors, filename)
    facade_log.accept("PopTorch", "poptorch_model.loadExecutable(...)",
                      "loads a precompiled IPU executable instead of compiling; here the file's weights are loaded "
                      "into the model and the program is modelled as usual", emulated=True)


def _load_weights(model: torch.nn.Module, tensors: dict[str, torch.Tensor], filename: Any) -> None:
    state = model.state_dict()
    missing = sorted(set(state) - set(tensors))
    wrong = sorted(k for k in state if k in tensors and tuple(tensors[k].shape) != tuple(state[k].shape))
    if missing or wrong:
        raise PopTorchError(f"{filename} does not fit {type(model).__name__}: "
                            + (f"missing {missing[:3]}" if missing else f"other shapes for {wrong[:3]}"),
                            fix="load it into the model it was exported from")
    with torch.no_grad():
        for k, v in state.items():
            v.copy_(tensors[k].to(v.dtype))


__all__ = ["FORMAT", "export", "load_executable", "restore"]
