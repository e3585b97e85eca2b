"""Session checkpoints: model, optimizer and clock as safetensors + JSON, for bit-exact resume.

    ckpt/
        checkpoint.json        schema version, clock (steps, modelled seconds), optimizer param groups,
                               the non-tensor parts of the optimizer state, RNG bookkeeping
        tensors.safetensors    model state, optimizer state tensors, torch's RNG state

Loading reads JSON and safetensors only (no pickle, no code). After ``load_checkpoint`` the next
steps produce the same parameters, bit for bit, as an uninterrupted run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from accelkit.errors import AccelkitError

SCHEMA = 1
_FIX = "save it again with session.save_checkpoint(path)"


class CheckpointError(AccelkitError, ValueError):
    """A checkpoint that cannot be restored: names the file and what is wrong."""


def _plain(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (int, float, bool, str)) or v is None:
        return v
    raise CheckpointError(f"optimizer state holds a {type(v).__name__}, which a checkpoint cannot store as JSON",
                          fix="use a torch.optim optimizer whose state is tensors and numbers")


def save_checkpoint(session: Any, path: Path) -> str:
    from safetensors.torch import save_file

    path.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, torch.Tensor] = {}
    seen: dict[tuple[int, tuple[int, ...]], str] = {}
    aliases: dict[str, str] = {}
    for k, v in session.model.state_dict().items():
        key = (v.untyped_storage().data_ptr(), tuple(v.shape))
        if key in seen:  # tied weights are stored once
            aliases[f"model.{k}"] = seen[key]
            continue
        seen[key] = f"model.{k}"
        tensors[f"model.{k}"] = v.detach().cpu().contiguous()
    meta: dict[str, Any] = {"schema_version": SCHEMA, "clock": session.state(), "aliases": aliases}
    if session.optimizer is not None:
        sd = session.optimizer.state_dict()
        state_meta: dict[str, dict[str, Any]] = {}
        for idx, st in sd["state"].items():
            state_meta[str(idx)] = {}
            for name, val in st.items():
                if isinstance(val, torch.Tensor):
                    tensors[f"optim.{idx}.{name}"] = val.detach().cpu().contiguous()
                    state_meta[str(idx)][name] = {"tensor": f"optim.{idx}.{name}"}
                else:
                    state_meta[str(idx)][name] = {"value": _plain(val)}
        meta["optimizer"] = {"class": type(session.optimizer).__name__, "param_groups": _plain(sd["param_groups"]),
                             "state": state_meta}
    tensors["rng.torch"] = torch.get_rng_state()
    save_file(tensors, str(path / "tensors.safetensors"), metadata={"schema_version": str(SCHEMA)})
    (path / "checkpoint.json").write_text(json.dumps(meta, indent=1))
    return str(path)


def load_checkpoint(session: Any, path: Path) -> None:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        meta = json.loads((path / "checkpoint.json").read_text())
        tensors = load_file(str(path / "tensors.safetensors"))
    except FileNotFoundError as exc:
        raise CheckpointError(f"{path} is not a session checkpoint ({exc.filename} is missing)", fix=_FIX) from None
    except (json.JSONDecodeError, SafetensorError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path} is truncated or corrupted: {exc}", fix=_FIX) from None
    if meta.get("schema_version") != SCHEMA:
        raise CheckpointError(f"{path} has checkpoint schema {meta.get('schema_version')!r}; this accelkit reads {SCHEMA}",
                              fix=_FIX)
    model_sd = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    for alias, name in meta.get("aliases", {}).items():
        model_sd[alias[len("model."):]] = tensors[name]
    missing, unexpected = session.model.load_state_dict(model_sd, strict=False)
    if missing or unexpected:
        raise CheckpointError(f"{path} does not match this model: missing {missing[:3]}, unexpected {unexpected[:3]}",
                              fix="restore into the same model architecture it was saved from")
    opt_meta = meta.get("optimizer")
    if opt_meta is not None:
        if session.optimizer is None or type(session.optimizer).__name__ != opt_meta["class"]:
            raise CheckpointError(f"{path} holds {opt_meta['class']} state; the session's optimizer is "
                                  f"{type(session.optimizer).__name__ if session.optimizer else 'None'}",
                                  fix="create the session with the same optimizer class")
        state = {int(idx): {name: (tensors[v["tensor"]] if "tensor" in v else v["value"]) for name, v in st.items()}
                 for idx, st in opt_meta["state"].items()}
        session.optimizer.load_state_dict({"state": state, "param_groups": opt_meta["param_groups"]})
    torch.set_rng_state(tensors["rng.torch"])
    clock = meta["clock"]
    session.steps = clock["steps"]
    session.samples = clock["samples"]
    session.simulated_time_s = clock["simulated_time_s"]
    session.sections_s = dict(clock["sections_s"])
