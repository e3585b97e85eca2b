"""The compiled artifact, like a PEF: a folder with a JSON manifest and the weights in safetensors.

    out/model.akp/
        manifest.json         schema version, accelkit version, target spec, graph, kernels,
                              memory plan, placement, and the SHA-256 of both parts
        weights.safetensors   the model's weights (absent for a meta-device model)

This module reads an artifact back (``ak.load``); the format and its writer (``CompiledProgram.save``) are in
:mod:`accelkit.compiler.manifest`. Loading reads JSON and safetensors only: it never imports or runs code from the artifact (no
pickle anywhere). A truncated, corrupted, edited or wrong-version artifact is refused with an
:class:`ArtifactError` saying which part failed and how to fix it (re-compile and save).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

from accelkit.compiler.manifest import (  # noqa: F401 - the format, re-exported for readers of this module
    _FIX,
    MANIFEST,
    SCHEMA_VERSION,
    WEIGHTS,
    ArtifactError,
    _canonical,
    _sha256,
    inside,
    save,
)
from accelkit.errors import AccelkitError


def load(path: str | os.PathLike[str]) -> Any:
    """Read an artifact written by :meth:`CompiledProgram.save`; refuses anything it cannot trust.

    One error boundary: whatever is wrong with the folder (a missing, truncated, garbled or edited file, a
    field of the wrong type, a zero size), the caller gets an :class:`ArtifactError` naming the file.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ArtifactError(f"ak.load needs the artifact's folder (a str or pathlib.Path), not "
                            f"{type(path).__name__} {path!r}", fix="e.g. ak.load('model.akp')")
    root = Path(path)
    reading = [root / MANIFEST]  # the file being read, for the error
    try:
        prog = _load(root, reading)
        reading[0] = root / MANIFEST
        prog.report  # noqa: B018 - the modelled figures too: a loaded program must be usable, not fail later
        return prog
    except ArtifactError:
        raise
    except AccelkitError as exc:  # e.g. a SpecError from the target: still the artifact's fault
        raise ArtifactError(f"{reading[0]}: {exc.message}", fix=_FIX) from None
    except RecursionError:
        raise ArtifactError(f"{reading[0]} is nested too deeply to be an accelkit artifact", fix=_FIX) from None
    except Exception as exc:  # noqa: BLE001 - the boundary: nothing raw escapes a load
        raise ArtifactError(f"{reading[0]} is corrupted or has malformed fields ({type(exc).__name__}: {exc})",
                            fix=_FIX) from None


def _positive_int(opts: dict[str, Any], key: str, mpath: Path) -> None:
    v = opts.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ArtifactError(f"{mpath}: options.{key} is {v!r}, not a whole number >= 1", fix=_FIX)


def _counts_sane(manifest: dict[str, Any], graph: Any, mpath: Path) -> None:
    """FLOPs and bytes are whole numbers ≥ 0 (a checksum only says the file is as written, not that a writer who
    recomputed it wrote sense)."""
    import math

    for node in graph.nodes:
        if not isinstance(node.flops, int) or isinstance(node.flops, bool) or node.flops < 0:
            raise ArtifactError(f"{mpath}: graph node {node.name!r} has flops {node.flops!r}, not a whole number >= 0",
                                fix=_FIX)
    for k in manifest["kernels"]:
        for key in ("flops", "bytes_read", "bytes_written", "param_bytes", "out_bytes", "saved_bytes"):
            v = k.get(key) if isinstance(k, dict) else None
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                raise ArtifactError(f"{mpath}: kernel {k.get('name') if isinstance(k, dict) else k!r} has {key} "
                                    f"{v!r}, not a number >= 0", fix=_FIX)


def _read_manifest(root: Path) -> tuple[Path, dict[str, Any]]:
    """The manifest's path and contents, once its schema version and checksum say it is as saved."""
    mpath = root / MANIFEST
    if not mpath.is_file():
        raise ArtifactError(f"{root} is not an accelkit artifact: {MANIFEST} is missing", fix=_FIX)
    inside(root, MANIFEST, "the manifest", fix=_FIX)
    try:
        manifest = json.loads(mpath.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{mpath} is truncated or corrupted: {exc}", fix=_FIX) from None
    if not isinstance(manifest, dict):
        raise ArtifactError(f"{mpath} does not hold a manifest object", fix=_FIX)
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ArtifactError(
            f"{mpath} has schema version {version!r} (written by accelkit "
            f"{manifest.get('accelkit_version', '?')}); this accelkit reads schema {SCHEMA_VERSION}",
            fix="compile and save it again with this accelkit version")
    checksum = manifest.pop("checksum", None)
    if checksum != hashlib.sha256(_canonical(manifest)).hexdigest():
        raise ArtifactError(f"{mpath} was modified after it was saved (its checksum does not match)", fix=_FIX)
    return mpath, manifest


def _check_options(opts: dict[str, Any], mpath: Path) -> None:
    """The compile options are the kinds of value ``compile`` accepts (a checksum says the file is as written,
    not that its writer wrote sense)."""
    from accelkit.graph.capture import OPTIMIZER_STATES, OPTIMIZERS

    for key in ("batch_size", "micro_batch", "example_batch", "chips"):
        _positive_int(opts, key, mpath)
    if opts.get("fallback") not in (None, "host"):
        raise ArtifactError(f"{mpath}: options.fallback is {opts.get('fallback')!r}, not None or 'host'", fix=_FIX)
    if opts["batch_size"] % opts["micro_batch"]:
        raise ArtifactError(f"{mpath}: options.micro_batch {opts['micro_batch']} does not divide options.batch_size "
                            f"{opts['batch_size']}", fix=_FIX)
    if not isinstance(opts.get("device_iterations", 1), int) or isinstance(opts.get("device_iterations", 1), bool) \
            or opts.get("device_iterations", 1) < 1:
        raise ArtifactError(f"{mpath}: options.device_iterations is {opts.get('device_iterations')!r}, not a "
                            "positive whole number", fix=_FIX)
    rate = opts.get("input_rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate)
                             or rate <= 0):
        raise ArtifactError(f"{mpath}: options.input_rate is {rate!r}, not a positive number of samples per second",
                            fix=_FIX)
    if opts.get("output_mode") not in (None, "all", "final"):
        raise ArtifactError(f"{mpath}: options.output_mode is {opts.get('output_mode')!r}, not None, 'all' or 'final'",
                            fix=_FIX)
    if opts.get("optimizer", "") not in ("", "custom", *OPTIMIZERS):
        raise ArtifactError(f"{mpath}: options.optimizer is {opts.get('optimizer')!r}, not one of "
                            f"{['', 'custom', *OPTIMIZERS]}", fix=_FIX)
    if opts.get("optimizer_state", "") not in ("", *OPTIMIZER_STATES):
        raise ArtifactError(f"{mpath}: options.optimizer_state is {opts.get('optimizer_state')!r}, not one of "
                            f"{['', *OPTIMIZER_STATES]}", fix=_FIX)
    for key in ("training", "synthetic_data", "input_overlap", "group_host_sync"):
        if not isinstance(opts.get(key, key == "input_overlap"), bool):
            raise ArtifactError(f"{mpath}: options.{key} is {opts.get(key)!r}, not true or false", fix=_FIX)
    for key in ("precision", "recompute", "fusion_level"):
        if not isinstance(opts.get(key), str):
            raise ArtifactError(f"{mpath}: options.{key} is {opts.get(key)!r}, not a name", fix=_FIX)


def _load_weights(root: Path, mpath: Path, winfo: dict[str, Any], graph: Any, reading: list[Path]) -> Any:
    """The weights (None for an artifact saved without them), checked against their SHA-256 and the graph's
    shapes and dtypes, tied weights restored under every name."""
    weights = None
    aliases = winfo.get("aliases", {})
    if not isinstance(aliases, dict) or not all(isinstance(v, str) for v in aliases.values()):
        raise ArtifactError(f"{mpath}: weights.aliases is {aliases!r}, not a table of tied weight names", fix=_FIX)
    if winfo.get("file"):
        wpath = inside(root, winfo["file"], f"{mpath}: the weights file", fix=_FIX)
        if wpath.name != WEIGHTS or not wpath.is_file():
            raise ArtifactError(f"{root}: the weights file {winfo['file']!r} is missing", fix=_FIX)
        if _sha256(wpath) != winfo["sha256"]:
            raise ArtifactError(f"{wpath} is truncated, corrupted or replaced (SHA-256 mismatch)", fix=_FIX)
        from safetensors.torch import load_file

        reading[0] = wpath
        weights = load_file(str(wpath))
        for alias, name in aliases.items():
            if name not in weights:
                raise ArtifactError(f"{mpath}: tied weight {alias!r} points at missing {name!r}", fix=_FIX)
            weights[alias] = weights[name]
        for name, meta in {**graph.params, **graph.buffers}.items():
            if name in weights and tuple(weights[name].shape) != tuple(meta.shape):
                raise ArtifactError(f"{wpath}: weight {name!r} has shape {tuple(weights[name].shape)}, the "
                                    f"compiled graph has {tuple(meta.shape)}", fix=_FIX)
            have = str(weights[name].dtype).removeprefix("torch.") if name in weights else meta.dtype
            if have != meta.dtype:
                raise ArtifactError(f"{wpath}: weight {name!r} is {have}, the compiled graph has {meta.dtype}",
                                    fix=_FIX)
        reading[0] = mpath
    return weights


def _load(root: Path, reading: list[Path]) -> Any:
    from accelkit.compiler.memory import MemoryPlan
    from accelkit.compiler.passes import Kernel, PassResult
    from accelkit.compiler.placement import Placement
    from accelkit.compiler.program import CompiledProgram, Parallel
    from accelkit.cost.host import HostMeasurements
    from accelkit.graph.ir import graph_from_dict
    from accelkit.hardware.spec import AcceleratorSpec

    mpath, manifest = _read_manifest(root)
    opts = manifest["options"]
    _check_options(opts, mpath)
    graph = graph_from_dict(manifest["graph"])
    _counts_sane(manifest, graph, mpath)
    weights = _load_weights(root, mpath, manifest["weights"], graph, reading)
    return CompiledProgram(
        graph=graph,
        spec=AcceleratorSpec.from_dict(manifest["target"], origin=str(mpath)),
        precision=opts["precision"], batch_size=opts["batch_size"], micro_batch=opts["micro_batch"],
        example_batch=opts["example_batch"], chips=opts["chips"], parallel=Parallel(**opts["parallel"]),
        host=HostMeasurements.from_dict(manifest["host"]) if manifest.get("host") is not None else None,
        host_spec=AcceleratorSpec.from_dict(manifest["host_spec"], origin=f"{mpath}: host_spec")
        if manifest.get("host_spec") is not None else None,
        fallback=opts.get("fallback"), stack=str(opts.get("stack") or ""),  # older artifacts: the family's default
        device_iterations=int(opts.get("device_iterations", 1)), synthetic_data=bool(opts.get("synthetic_data", False)),
        input_rate=float(opts["input_rate"]) if opts.get("input_rate") is not None else None,
        input_overlap=bool(opts.get("input_overlap", True)), output_mode=opts.get("output_mode"),
        group_host_sync=bool(opts.get("group_host_sync", False)), chosen=str(opts.get("chosen") or ""),
        # older artifacts: a training program's step ran AdamW, the only update accelkit modelled then
        optimizer=str(opts.get("optimizer", "adamw" if opts["training"] else "")),
        # older artifacts: mixed precision's fp32 state and master copy, the only layout accelkit modelled then
        optimizer_state=str(opts.get("optimizer_state", "mixed" if opts["training"] else "")),
        training=opts["training"], recompute=opts["recompute"], fusion_level=opts["fusion_level"],
        passes=[PassResult(**{**p, "details": tuple(p["details"])}) for p in manifest["passes"]],
        kernels=[Kernel.from_dict(k) for k in manifest["kernels"]],
        memory_plan=MemoryPlan(**{**manifest["memory_plan"],
                                  "spilled_kinds": tuple(manifest["memory_plan"].get("spilled_kinds", ()))}),
        placement=Placement.from_dict(manifest["placement"]),
        weights=weights,
    )
