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

import errno
import hashlib
import json
import os
import shutil
import sys
import uuid
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
    """Write ``prog`` to the folder ``path``, all or nothing.

    The artifact is written into a new sibling folder with a unique name (``.<name>.saving-…``), flushed, and
    only then put in place: by one rename when ``path`` is new or empty, else by exchanging the two folders
    at once (Linux ``renameat2``; elsewhere two renames, a moment apart). Whatever else the old folder held
    (``cli.json``, a PEF's ``samba_app.json``) is carried over. A process killed at any point leaves the
    previous artifact or the new one, never a mix; two processes saving one path each write their own folder,
    and the last one to finish wins. A folder holding sub-folders (not an artifact's) is written file by file
    instead, each file by its own atomic rename."""
    root = boundary.path("path", path, example="prog.save('out/model.akp')")
    manifest, tensors = _contents(prog)
    try:
        return _save(manifest, tensors, root)
    except OSError as exc:  # a folder that cannot be written: no room, no permission, a file in the way
        raise ArtifactError(f"cannot write the artifact {root} ({exc.strerror or exc}"
                            f"{': ' + exc.filename if exc.filename else ''})",
                            fix="check the path and its permissions (and that the disk has room)") from None


def _save(manifest: dict[str, Any], tensors: dict[str, Any] | None, root: Path) -> str:
    given, root = str(root), Path(os.path.abspath(root))
    root.parent.mkdir(parents=True, exist_ok=True)
    if root.exists() and not root.is_dir():
        raise ArtifactError(f"{root} is a file, not an artifact folder", fix="check the path: save to a folder")
    if root.is_dir() and (any(p.is_dir() for p in root.iterdir()) or Path(os.path.abspath(os.curdir)).is_relative_to(root.resolve())):
        _write_in_place(root, manifest, tensors)  # never swap away a folder with more in it, or the one you are in
        return given
    tmp = root.parent / f".{root.name}.saving-{uuid.uuid4().hex[:12]}"
    try:
        tmp.mkdir()
        _write(tmp, manifest, tensors)
        _swap_in(tmp, root)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return given


def _contents(prog: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The manifest (less the weights' checksum, known once they are written) and the tensors to write."""
    from accelkit._version import __version__
    from accelkit.graph.ir import graph_to_dict

    aliases: dict[str, str] = {}  # tied weights (e.g. GPT-2's lm_head = wte) are stored once
    tensors: dict[str, Any] | None = None
    if prog.weights:
        tensors = {}
        first: dict[tuple[int, tuple[int, ...]], str] = {}
        for k, v in prog.weights.items():
            key = (v.untyped_storage().data_ptr(), tuple(v.shape))
            if key in first:
                aliases[k] = first[key]
            else:
                first[key] = k
                tensors[k] = v.detach().contiguous().cpu()
    body = {
        "schema_version": SCHEMA_VERSION,
        "accelkit_version": __version__,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "target": prog.spec.to_dict(),
        "options": {
            "precision": prog.precision, "batch_size": prog.batch_size, "micro_batch": prog.micro_batch,
            "example_batch": prog.example_batch, "chips": prog.chips, "parallel": asdict(prog.parallel),
            "training": prog.training, "recompute": prog.recompute, "fusion_level": prog.fusion_level,
            "fallback": prog.fallback, "stack": prog.stack, "device_iterations": prog.device_iterations,
            "synthetic_data": prog.synthetic_data, "input_rate": prog.input_rate,
            "input_overlap": prog.input_overlap, "output_mode": prog.output_mode, "optimizer": prog.optimizer,
            "group_host_sync": prog.group_host_sync,
            "chosen": prog.chosen,
            "optimizer_state": prog.optimizer_state,
        },
        "graph": graph_to_dict(prog.graph),
        "passes": [{k: v for k, v in asdict(p).items() if k != "graph"} for p in prog.passes],  # graphs: no
        "kernels": [k.to_dict() for k in prog.kernels],
        "memory_plan": prog.memory_plan.to_dict(),
        "placement": prog.placement.to_dict(),
        "host": prog.host.to_dict() if prog.host is not None else None,  # what this host measured
        # the host CPU that runs a fallback program's host partitions (its measured rates, as compiled)
        "host_spec": prog.host_spec.to_dict() if prog.host_spec is not None else None,
        "weights": {"file": None, "sha256": None, "aliases": aliases},
    }
    return body, tensors


def _write(folder: Path, body: dict[str, Any], tensors: dict[str, Any] | None, *, suffix: str = "") -> None:
    """Write the weights and the manifest into ``folder`` (names + ``suffix``), flushed to disk."""
    from safetensors.torch import save_file

    body = {**body, "weights": dict(body["weights"])}
    if tensors is not None:
        save_file(tensors, str(folder / (WEIGHTS + suffix)), metadata={"schema_version": str(SCHEMA_VERSION)})
        _fsync(folder / (WEIGHTS + suffix))
        body["weights"].update(file=WEIGHTS, sha256=_sha256(folder / (WEIGHTS + suffix)))
    manifest = {**body, "checksum": hashlib.sha256(_canonical(body)).hexdigest()}
    with open(folder / (MANIFEST + suffix), "w") as f:
        f.write(json.dumps(manifest, indent=1, sort_keys=True))
        f.flush()
        os.fsync(f.fileno())


def _write_in_place(root: Path, body: dict[str, Any], tensors: dict[str, Any] | None) -> None:
    """Each file under a unique temporary name, then renamed over the old one (the manifest last)."""
    suffix = f".{uuid.uuid4().hex[:12]}.tmp"
    try:
        _write(root, body, tensors, suffix=suffix)
        if tensors is not None:
            os.replace(root / (WEIGHTS + suffix), root / WEIGHTS)
        else:
            (root / WEIGHTS).unlink(missing_ok=True)
        os.replace(root / (MANIFEST + suffix), root / MANIFEST)
    finally:
        for name in (WEIGHTS, MANIFEST):
            (root / (name + suffix)).unlink(missing_ok=True)


def _swap_in(tmp: Path, root: Path) -> None:
    """Put the finished folder ``tmp`` at ``root``; ``tmp`` ends up holding the previous folder (if any)."""
    _fsync(tmp)
    try:
        os.rename(tmp, root)  # root new (or an empty folder): one atomic rename
        _fsync(root.parent)
        return
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR):
            raise
    for item in root.iterdir():  # keep what else the folder holds (cli.json, samba_app.json, ...)
        if item.name not in (MANIFEST, WEIGHTS) and item.is_file() and not (tmp / item.name).exists():
            shutil.copy2(item, tmp / item.name)
    _fsync(tmp)
    if not _exchange(tmp, root):  # no atomic exchange here: two renames, a moment apart
        aside = root.parent / f".{root.name}.old-{uuid.uuid4().hex[:12]}"
        os.rename(root, aside)
        os.rename(tmp, root)
        os.rename(aside, tmp)
    _fsync(root.parent)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False where that is not available."""
    if sys.platform != "linux":
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):  # an old kernel or a filesystem without it
        return False
    raise OSError(err, os.strerror(err), str(b))


def _fsync(path: Path) -> None:
    """Flush a file, or a folder's entries, to disk (a no-op where a folder cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["MANIFEST", "SCHEMA_VERSION", "WEIGHTS", "ArtifactError", "inside", "save"]
