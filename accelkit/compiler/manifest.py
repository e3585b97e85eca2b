"""Writing a compiled artifact, like a PEF: a folder with a JSON manifest and the weights in safetensors.

    out/model.akp/
        manifest.json         schema version, accelkit version, target spec, graph, kernels,
                              memory plan, placement, and the SHA-256 of both parts
        weights.safetensors   the model's weights (absent for a meta-device model)

This module knows the format and writes it (``CompiledProgram.save``); :mod:`accelkit.compiler.artifact`
reads it back (``ak.load``). Writing needs no compiled-program class, so the program imports this module and
the loader imports the program: no cycle.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from accelkit import boundary
from accelkit.errors import AccelkitError

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
WEIGHTS = "weights.safetensors"
_FIX = "re-create it with prog.save(path) from ak.compile(...)"


class ArtifactError(AccelkitError, ValueError):
    """An artifact that cannot be loaded safely: names the file, what is wrong, and the fix."""


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def inside(root: Path, name: Any, what: str, *, fix: str) -> Path:
    """``root / name`` for a file an artifact names, refused unless it stays inside ``root``: a relative path
    without ``..`` that does not resolve (through symlinks) outside the folder."""
    if not isinstance(name, str) or not name:
        raise ArtifactError(f"{what} is {name!r}, not a file name inside {root}", fix=fix)
    rel = Path(name)
    if rel.is_absolute() or Path(os.path.normpath(name)).is_absolute():
        raise ArtifactError(f"{what} {name!r} is an absolute path; an artifact only reads files inside its folder "
                            f"{root}", fix=fix)
    if ".." in rel.parts or ".." in Path(name.replace("\\", "/")).parts:
        raise ArtifactError(f"{what} {name!r} climbs out of the folder with '..'; an artifact only reads files "
                            f"inside its folder {root}", fix=fix)
    full = root / rel
    base = root.resolve()
    if not full.resolve().is_relative_to(base):
        raise ArtifactError(f"{what} {name!r} is a symlink to {full.resolve()}, outside the artifact's folder "
                            f"{root}; an artifact only reads files inside it", fix=fix)
    return full


def save(prog: Any, path: str | os.PathLike[str]) -> str:
    from safetensors.torch import save_file

    from accelkit._version import __version__
    from accelkit.graph.ir import graph_to_dict

    root = boundary.path("path", path, example="prog.save('out/model.akp')")
    root.mkdir(parents=True, exist_ok=True)
    weights_sha = None
    aliases: dict[str, str] = {}  # tied weights (e.g. GPT-2's lm_head = wte) are stored once
    if prog.weights:
        tensors: dict[str, Any] = {}
        first: dict[tuple[int, tuple[int, ...]], str] = {}
        for k, v in prog.weights.items():
            key = (v.untyped_storage().data_ptr(), tuple(v.shape))
            if key in first:
                aliases[k] = first[key]
            else:
                first[key] = k
                tensors[k] = v.detach().contiguous().cpu()
        save_file(tensors, str(root / WEIGHTS), metadata={"schema_version": str(SCHEMA_VERSION)})
        weights_sha = _sha256(root / WEIGHTS)
    elif (root / WEIGHTS).exists():
        (root / WEIGHTS).unlink()
    placement = asdict(prog.placement)
    body = {
        "schema_version": SCHEMA_VERSION,
        "accelkit_version": __version__,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "target": prog.spec.to_dict(),
        "options": {
            "precision": prog.precision, "batch_size": prog.batch_size, "micro_batch": prog.micro_batch,
            "example_batch": prog.example_batch, "chips": prog.chips, "parallel": asdict(prog.parallel),
            "training": prog.training, "recompute": prog.recompute, "fusion_level": prog.fusion_level,
            "fallback": prog.fallback, "stack": prog.stack,
        },
        "graph": graph_to_dict(prog.graph),
        "passes": [{k: v for k, v in asdict(p).items() if k != "graph"} for p in prog.passes],  # graphs: no
        "kernels": [k.to_dict() for k in prog.kernels],
        "memory_plan": prog.memory_plan.to_dict(),
        "placement": placement,
        "host": prog.host.to_dict() if prog.host is not None else None,  # what this host measured
        # the host CPU that runs a fallback program's host partitions (its measured rates, as compiled)
        "host_spec": prog.host_spec.to_dict() if prog.host_spec is not None else None,
        "weights": {"file": WEIGHTS if weights_sha else None, "sha256": weights_sha, "aliases": aliases},
    }
    manifest = {**body, "checksum": hashlib.sha256(_canonical(body)).hexdigest()}
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    tmp.replace(root / MANIFEST)
    return str(root)


__all__ = ["MANIFEST", "SCHEMA_VERSION", "WEIGHTS", "ArtifactError", "inside", "save"]
