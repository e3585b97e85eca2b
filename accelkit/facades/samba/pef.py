"""The PEF-like artifact of a SambaFlow-style app, and the checks made when a run loads it.

SambaFlow compiles an app once into a PEF file; later runs trace the same model against it and the
runtime refuses a PEF that does not match. accelkit's PEF is the folder ``CompiledProgram.save``
writes (``manifest.json`` + ``weights.safetensors``, see :mod:`accelkit.compiler.artifact`) plus one
file of its own, ``samba_app.json``: the app's name, its named inputs (shape, dtype, batch dim) and
whether it was compiled for training. That file records the manifest's checksum, so a PEF that was
compiled again without it is caught too.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from accelkit.facades.samba.tensor import SambaError, SambaTensor

APP_FILE = "samba_app.json"
APP_SCHEMA = 1


@dataclass(frozen=True)
class InputPort:
    """One named input of the compiled program."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # torch dtype without "torch.", e.g. "float32"
    batch_dim: int | None


@dataclass(frozen=True)
class AppInfo:
    """What ``samba.session.compile`` knew beyond the compiled program itself."""

    name: str
    inputs: tuple[InputPort, ...]
    training: bool
    optimizer: str | None  # the optimizer's class name, e.g. "SGD"
    init_output_grads: bool
    manifest_checksum: str

    @property
    def input_names(self) -> list[str]:
        return [p.name for p in self.inputs]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def ports(inputs: tuple[Any, ...]) -> tuple[InputPort, ...]:
    """The named input ports of ``inputs`` (SambaTensors with distinct names), in order."""
    out = []
    for i, t in enumerate(inputs):
        if not isinstance(t, SambaTensor) or not t.sn_name:
            raise SambaError(f"input {i} has no name; the RDU program needs a named input port for each",
                             fix="create inputs with samba.randn(..., name='x', batch_dim=0) or "
                                 "samba.from_torch_tensor(t, name='x', batch_dim=0)")
        out.append(InputPort(t.sn_name, tuple(int(d) for d in t.shape), dtype_name(t.dtype), t.batch_dim))
    names = [p.name for p in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SambaError(f"input names must be unique, {dupes} is used more than once", fix="rename the inputs")
    return tuple(out)


def _manifest_checksum(pef: Path) -> str:
    try:
        return str(json.loads((pef / "manifest.json").read_text()).get("checksum", ""))
    except (OSError, ValueError):
        return ""


def write(pef: str | Path, info: AppInfo) -> None:
    body = {"schema": APP_SCHEMA, **asdict(info), "manifest_checksum": _manifest_checksum(Path(pef))}
    (Path(pef) / APP_FILE).write_text(json.dumps(body, indent=1))


def read(pef: str | Path) -> AppInfo:
    """The app info beside the artifact; refuses a PEF without it or recompiled since."""
    root = Path(pef)
    fix = "compile it with samba.session.compile (python app.py compile ... -p PEF)"
    try:
        body = json.loads((root / APP_FILE).read_text())
        info = AppInfo(name=body["name"], training=bool(body["training"]), optimizer=body["optimizer"],
                       init_output_grads=bool(body["init_output_grads"]),
                       manifest_checksum=body["manifest_checksum"],
                       inputs=tuple(InputPort(p["name"], tuple(p["shape"]), p["dtype"], p["batch_dim"])
                                    for p in body["inputs"]))
    except FileNotFoundError:
        raise SambaError(f"{root} has no {APP_FILE}: it was not written by samba.session.compile", fix=fix) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SambaError(f"{root / APP_FILE} cannot be read ({type(exc).__name__}: {exc})", fix=fix) from None
    if info.manifest_checksum != _manifest_checksum(root):
        raise SambaError(f"{root} was recompiled or edited after {APP_FILE} was written", fix=fix)
    return info


def check_model(prog: Any, model: nn.Module, pef: str) -> None:
    """The model must have the parameters (names and shapes) the PEF was compiled with."""
    recompile = f"recompile the PEF for this model: python app.py compile ... -p {pef}"
    compiled = {k: tuple(m.shape) for k, m in prog.graph.params.items()}
    current = {k: tuple(p.shape) for k, p in model.named_parameters()}
    missing = sorted(set(compiled) - set(current))
    extra = sorted(set(current) - set(compiled))
    changed = sorted(k for k in set(compiled) & set(current) if compiled[k] != current[k])
    if missing or extra or changed:
        parts = []
        if changed:
            k = changed[0]
            parts.append(f"{len(changed)} parameter(s) changed shape, e.g. {k}: {list(compiled[k])} in the PEF, "
                         f"{list(current[k])} in the model")
        if extra:
            parts.append(f"the model has {len(extra)} parameter(s) the PEF lacks, e.g. {extra[0]}")
        if missing:
            parts.append(f"the PEF has {len(missing)} parameter(s) the model lacks, e.g. {missing[0]}")
        raise SambaError(f"{pef} was compiled for a different model than {type(model).__name__}: "
                         + "; ".join(parts), fix=recompile)


def check_inputs(info: AppInfo, inputs: tuple[Any, ...], pef: str) -> None:
    """The traced inputs must be the ones the PEF was compiled for (names, shapes, dtypes)."""
    got = ports(inputs)
    if got != info.inputs:
        def show(ps: tuple[InputPort, ...]) -> str:
            return ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" for p in ps)

        raise SambaError(f"{pef} was compiled for inputs ({show(info.inputs)}), the app now traces "
                         f"({show(got)})",
                         fix=f"compile again with the same batch size and inputs: python app.py compile ... -p {pef}")
