"""Session checkpoints: model, optimizer and clock as safetensors + JSON, for bit-exact resume.

    ckpt/
        checkpoint.json        schema version, clock (steps, modelled seconds), optimizer param groups,
                               the non-tensor parts of the optimizer state, RNG bookkeeping, and the
                               SHA-256 and size of the tensor file
        tensors.safetensors    model state, optimizer state tensors, torch's RNG state

Saving is all or nothing: the whole checkpoint is written into a temporary sibling folder
(``.ckpt.tmp-…``), flushed to disk, then renamed into place; the previous checkpoint is moved
aside (``.ckpt.old-…``) only for the instant between the two renames and deleted once the new
one is in place. A process killed at any point leaves either the previous checkpoint or the new
one: if it died between the renames, ``load_checkpoint`` reads the previous one from its
``.old`` folder. The next save removes whatever a killed save left behind.

Loading reads JSON and safetensors only (no pickle, no code), and checks everything (checksum,
keys, shapes, dtypes, optimizer groups, clock fields) before it touches the model or the
optimizer: a checkpoint that does not fit is refused with a :class:`CheckpointError` naming what
differs, and the session is left as it was. After ``load_checkpoint`` the next steps produce the
same parameters, bit for bit, as an uninterrupted run.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import shutil
import uuid
import warnings
from pathlib import Path
from typing import Any

import torch

from accelkit.errors import AccelkitError

SCHEMA = 3  # 2: the tensor file's SHA-256 is recorded (1 had none); 3: checkpoint.json's own checksum
META = "checkpoint.json"
TENSORS = "tensors.safetensors"
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


def _folder(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)) or isinstance(os.fspath(path), bytes) or not str(os.fspath(path)):
        raise CheckpointError(f"a checkpoint path must be a folder path (str or pathlib.Path), not "
                              f"{type(path).__name__} {path!r}", fix="e.g. session.save_checkpoint('ckpt/step100')")
    return Path(os.path.abspath(path))


def _siblings(path: Path, kind: str) -> list[Path]:
    """The ``.<name>.tmp-*`` (a save in progress or killed) or ``.<name>.old-*`` (the previous checkpoint, moved
    aside for a moment) folders next to ``path``, newest first."""
    prefix = f".{path.name}.{kind}-"
    if not path.parent.is_dir():
        return []
    found = []
    for p in path.parent.iterdir():
        if p.name.startswith(prefix):
            try:
                found.append((p.stat().st_mtime_ns, p))
            except FileNotFoundError:  # another save of the same path finished and removed it meanwhile
                continue
    return [p for _, p in sorted(found, key=lambda t: t[0], reverse=True)]


def _abandoned(tmp: Path) -> bool:
    """A ``.<name>.tmp-<pid>-<id>`` folder whose saving process is gone (a save killed half way); a folder of a
    save still running (another process saving the same path) is left alone."""
    pid = tmp.name.rsplit(".tmp-", 1)[-1].split("-")[0]
    if not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False
    return False


def _remove(paths: list[Path]) -> None:
    for p in paths:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def _fsync_dir(folder: Path) -> None:
    """Make a rename inside ``folder`` durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _sha256(path: Path, *, sync: bool = False) -> tuple[str, int]:
    """SHA-256 and size of a file; with ``sync``, also flushed to disk."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
        if sync:
            os.fsync(f.fileno())
    return h.hexdigest(), size


def _write_json(path: Path, body: dict[str, Any]) -> None:
    with open(path, "w") as f:
        f.write(json.dumps(body, indent=1))
        f.flush()
        os.fsync(f.fileno())


def save_checkpoint(session: Any, path: str | os.PathLike[str]) -> str:
    from safetensors.torch import save_file

    given = str(Path(path)) if isinstance(path, (str, os.PathLike)) else path
    path = _folder(path)
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

    if path.exists() and not path.is_dir():
        raise CheckpointError(f"{path} is a file, not a checkpoint folder", fix="save the checkpoint to a folder path")
    if path.is_dir():
        other = sorted(p.name for p in path.iterdir() if p.name not in (META, TENSORS))
        if other:  # the whole folder is replaced: never take the user's files with it
            raise CheckpointError(f"{path} holds files that are not part of a checkpoint ({', '.join(other[:5])}); "
                                  "saving replaces the whole folder", fix="save the checkpoint to a new or empty folder")
    from accelkit.compiler.manifest import _swap_in

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CheckpointError(f"cannot create the folder {path.parent} ({exc.strerror})",
                              fix="save to a folder you can write to") from None
    _remove([t for t in _siblings(path, "tmp") if _abandoned(t)])  # what a killed save left behind
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:12]}"  # unique to this save
    try:
        tmp.mkdir()
        save_file(tensors, str(tmp / TENSORS), metadata={"schema_version": str(SCHEMA)})
        sha, size = _sha256(tmp / TENSORS, sync=True)
        meta["tensors"] = {"file": TENSORS, "sha256": sha, "bytes": size}
        meta["checksum"] = _checksum(meta)
        _write_json(tmp / META, meta)
        _fsync_dir(tmp)
        _swap_in(tmp, path)  # one atomic exchange on Linux; tmp then holds the previous checkpoint
    except OSError as exc:
        raise CheckpointError(f"cannot write the checkpoint {path} ({exc.strerror or exc})",
                              fix="save to a folder you can write to, on a disk with room") from None
    finally:
        _remove([tmp])
    _remove(_siblings(path, "old"))
    return given  # as the caller named it (a relative path stays relative)


def _checksum(meta: dict[str, Any]) -> str:
    body = {k: v for k, v in meta.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _committed(path: Path) -> Path:
    """The folder to read: ``path``, or the previous checkpoint when a save died between its two renames."""
    if (path / META).is_file():
        return path
    for old in _siblings(path, "old"):
        if (old / META).is_file():
            warnings.warn(f"{path} is missing because a save was interrupted; loading the previous checkpoint "
                          f"from {old.name} (the next save_checkpoint tidies up)", stacklevel=3)
            return old
    return path


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def _check_model(session: Any, tensors: dict[str, torch.Tensor], aliases: Any, where: Path) -> dict[str, Any]:
    if not isinstance(aliases, dict):
        raise CheckpointError(f"{where / META}: 'aliases' is not a table of tied weights", fix=_FIX)
    model_sd = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    for alias, name in aliases.items():
        if not isinstance(alias, str) or not alias.startswith("model.") or name not in tensors:
            raise CheckpointError(f"{where / META}: tied weight {alias!r} points at missing {name!r}", fix=_FIX)
        model_sd[alias[len("model."):]] = tensors[name]
    expected = session.model.state_dict()
    if aliases != _ties(expected):
        raise CheckpointError(f"{where / META}: its tied weights {aliases} are not this model's {_ties(expected)}",
                              fix="restore into the same model architecture it was saved from")
    missing = [k for k in expected if k not in model_sd]
    unexpected = [k for k in model_sd if k not in expected]
    if missing or unexpected:
        raise CheckpointError(f"{where} does not match this model: the model has {missing[:5]} which the checkpoint "
                              f"lacks, the checkpoint has {unexpected[:5]} which the model lacks",
                              fix="restore into the same model architecture it was saved from")
    params = dict(session.model.named_parameters())
    for k, have in expected.items():
        got = model_sd[k]
        kind = "parameter" if k in params else "buffer"
        if _shape(got) != _shape(have):
            raise CheckpointError(f"{kind} {k}: checkpoint has shape {_shape(got)}, model has {_shape(have)}",
                                  where=str(where), fix="restore into the same model architecture it was saved from")
        if got.dtype != have.dtype:
            raise CheckpointError(f"{kind} {k}: checkpoint has dtype {got.dtype}, model has {have.dtype}",
                                  where=str(where), fix="restore into a model with the dtypes it was saved from")
    return model_sd


def _ties(state: dict[str, torch.Tensor]) -> dict[str, str]:
    """``model.<name>`` -> the first ``model.<name>`` sharing its storage and shape, as ``save_checkpoint`` writes."""
    seen: dict[tuple[int, tuple[int, ...]], str] = {}
    ties: dict[str, str] = {}
    for k, v in state.items():
        key = (v.untyped_storage().data_ptr(), tuple(v.shape))
        if key in seen:
            ties[f"model.{k}"] = seen[key]
        else:
            seen[key] = f"model.{k}"
    return ties


def _reference_state(opt: torch.optim.Optimizer) -> dict[int, dict[str, Any]] | None:
    """What this optimizer's state looks like after a step (names, tensor or number, shape, dtype): one step of a
    copy of it on zero gradients, over copies of the parameters. ``None`` where that cannot be run."""
    try:
        groups = []
        for g in opt.param_groups:
            params = [torch.zeros_like(p, requires_grad=True) for p in g["params"]]
            for p in params:
                p.grad = torch.zeros_like(p)
            groups.append({**g, "params": params})
        ref = type(opt)(groups, **{k: v for k, v in opt.defaults.items() if k not in ("params",)})
        ref.step()
        state = ref.state_dict()["state"]
    except Exception:  # noqa: BLE001 - an optimizer that needs a closure, or a custom one: no reference
        return None
    return {int(i): dict(st) for i, st in state.items()}


def _check_group_settings(opt: torch.optim.Optimizer, groups: list[dict[str, Any]], where: Path) -> None:
    """The optimizer's own constructor checks each group's settings (betas in [0, 1), lr >= 0, ...)."""
    for i, g in enumerate(groups):
        settings = {k: (tuple(v) if isinstance(v, list) else v) for k, v in g.items() if k in opt.defaults}
        try:
            make: Any = type(opt)
            make([torch.zeros(1, requires_grad=True)], **settings)
        except TypeError:
            return  # a custom optimizer whose constructor does not take its group settings: nothing to check
        except Exception as exc:  # noqa: BLE001 - torch.optim raises ValueError for a bad setting
            raise CheckpointError(f"{where}: parameter group {i} holds settings {type(opt).__name__} refuses: "
                                  f"{exc}", fix=_FIX) from None


def _same_kind(saved: Any, have: Any) -> bool:
    if have is None or saved is None:
        return True
    if isinstance(have, bool) or isinstance(saved, bool):
        return isinstance(have, bool) and isinstance(saved, bool)
    if isinstance(have, (int, float)):
        return isinstance(saved, (int, float))
    if isinstance(have, (list, tuple)):
        return isinstance(saved, list) and len(saved) == len(have)
    return isinstance(saved, type(have))


def _check_optimizer(session: Any, opt_meta: Any, tensors: dict[str, torch.Tensor], where: Path) -> dict[str, Any]:
    fix = "create the session with the same optimizer (class and parameter groups) it was saved with"
    if not isinstance(opt_meta, dict):
        raise CheckpointError(f"{where / META}: 'optimizer' is not a table", fix=_FIX)
    opt = session.optimizer
    if opt is None or type(opt).__name__ != opt_meta["class"]:
        raise CheckpointError(f"{where} holds {opt_meta['class']} state; the session's optimizer is "
                              f"{type(opt).__name__ if opt else 'None'}", fix=fix)
    current = opt.state_dict()
    groups = opt_meta["param_groups"]
    if not isinstance(groups, list) or len(groups) != len(current["param_groups"]):
        raise CheckpointError(f"{where}: the checkpoint has {len(groups) if isinstance(groups, list) else groups!r} "
                              f"parameter groups, the optimizer {len(current['param_groups'])}", fix=fix)
    for i, (saved, have) in enumerate(zip(groups, current["param_groups"], strict=True)):
        if not isinstance(saved, dict) or set(saved) != set(have):
            raise CheckpointError(f"{where}: parameter group {i} has settings {sorted(saved) if isinstance(saved, dict) else saved!r}"
                                  f", the optimizer's has {sorted(have)}", fix=fix)
        if saved["params"] != have["params"]:
            raise CheckpointError(f"{where}: parameter group {i} holds {len(saved['params'])} parameters in the "
                                  f"checkpoint, {len(have['params'])} in the optimizer", fix=fix)
        for key, value in saved.items():
            if not _same_kind(value, have[key]):
                raise CheckpointError(f"{where}: parameter group {i}'s {key} is {value!r} in the checkpoint, a "
                                      f"{type(have[key]).__name__} in the optimizer", fix=_FIX)
    _check_group_settings(opt, groups, where)
    reference = _reference_state(opt) if not current["state"] else current["state"]
    ids = {p for g in current["param_groups"] for p in g["params"]}
    state: dict[int, dict[str, Any]] = {}
    for idx, st in opt_meta["state"].items():
        if not idx.isdigit() or int(idx) not in ids or not isinstance(st, dict):
            raise CheckpointError(f"{where}: optimizer state for parameter {idx!r}, which the optimizer does not have",
                                  fix=fix)
        entry: dict[str, Any] = {}
        for name, v in st.items():
            if "tensor" in v:
                if v["tensor"] not in tensors:
                    raise CheckpointError(f"{where}: optimizer state {name!r} of parameter {idx} names tensor "
                                          f"{v['tensor']!r}, which is not in {TENSORS}", fix=_FIX)
                entry[name] = tensors[v["tensor"]]
                have_t = current["state"].get(int(idx), {}).get(name)
                if isinstance(have_t, torch.Tensor) and (_shape(have_t), have_t.dtype) != (
                        _shape(entry[name]), entry[name].dtype):
                    raise CheckpointError(f"optimizer state {name} of parameter {idx}: checkpoint has "
                                          f"{_shape(entry[name])} {entry[name].dtype}, optimizer has "
                                          f"{_shape(have_t)} {have_t.dtype}", where=str(where), fix=fix)
            else:
                entry[name] = v["value"]
        want = (reference or {}).get(int(idx))
        if want is not None:
            _check_state_entry(entry, want, f"{where}: optimizer state of parameter {idx}")
        state[int(idx)] = entry
    return {"state": state, "param_groups": groups}


def _check_state_entry(entry: dict[str, Any], want: dict[str, Any], what: str) -> None:
    """The saved state of one parameter has the names, kinds (tensor or number), shapes and dtypes the optimizer
    itself keeps, so the first step after a load cannot fail on it."""
    if set(entry) != set(want):
        raise CheckpointError(f"{what} holds {sorted(entry)}; the optimizer keeps {sorted(want)}", fix=_FIX)
    for name, have in want.items():
        got = entry[name]
        if isinstance(have, torch.Tensor):
            if not isinstance(got, torch.Tensor):
                raise CheckpointError(f"{what}: {name} is {got!r}, where the optimizer keeps a tensor", fix=_FIX)
            if (_shape(got), got.dtype) != (_shape(have), have.dtype):
                raise CheckpointError(f"{what}: {name} is {_shape(got)} {got.dtype}; the optimizer keeps "
                                      f"{_shape(have)} {have.dtype}", fix=_FIX)
        elif isinstance(got, torch.Tensor) or not _same_kind(got, have):
            raise CheckpointError(f"{what}: {name} is {got!r}, where the optimizer keeps a "
                                  f"{type(have).__name__}", fix=_FIX)


def _check_clock(clock: Any, where: Path) -> dict[str, Any]:
    def bad(field: str, value: Any, want: str) -> CheckpointError:
        return CheckpointError(f"{where / META}: clock.{field} is {value!r}, not {want}", fix=_FIX)

    if not isinstance(clock, dict):
        raise CheckpointError(f"{where / META}: 'clock' is not a table", fix=_FIX)
    for key in ("steps", "samples"):
        v = clock[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise bad(key, v, "a whole number >= 0")
    t = clock["simulated_time_s"]
    if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t) or t < 0:
        raise bad("simulated_time_s", t, "seconds >= 0")
    sections = clock["sections_s"]
    if not isinstance(sections, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in sections.values()):
        raise bad("sections_s", sections, "a table of seconds per section")
    return clock


def load_checkpoint(session: Any, path: str | os.PathLike[str]) -> None:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    where = _committed(_folder(path))
    try:
        _regular(where, META)
        meta = json.loads((where / META).read_text())
        if not isinstance(meta, dict):
            raise CheckpointError(f"{where / META} does not hold a checkpoint table", fix=_FIX)
        if meta.get("schema_version") != SCHEMA:
            raise CheckpointError(f"{where} has checkpoint schema {meta.get('schema_version')!r}; this accelkit "
                                  f"reads {SCHEMA}", fix=_FIX)
        if meta.get("checksum") != _checksum(meta):
            raise CheckpointError(f"{where / META} was modified after it was saved (its checksum does not match)",
                                  fix=_FIX)
        tinfo = meta["tensors"]
        if not isinstance(tinfo, dict) or tinfo.get("file") != TENSORS:
            raise CheckpointError(f"{where / META}: 'tensors' does not name {TENSORS}", fix=_FIX)
        _regular(where, TENSORS)
        sha, size = _sha256(where / TENSORS)
        if (sha, size) != (tinfo.get("sha256"), tinfo.get("bytes")):
            raise CheckpointError(f"{where / TENSORS} is truncated, corrupted or replaced (its SHA-256 does not "
                                  f"match the one in {META})", fix=_FIX)
        tensors = load_file(str(where / TENSORS))
        model_sd = _check_model(session, tensors, meta.get("aliases", {}), where)
        opt_meta = meta.get("optimizer")
        opt_sd = _check_optimizer(session, opt_meta, tensors, where) if opt_meta is not None else None
        rng = tensors.get("rng.torch")
        now = torch.get_rng_state()
        if rng is None or rng.dtype != now.dtype or _shape(rng) != _shape(now):
            raise CheckpointError(f"{where / TENSORS}: torch's RNG state is missing or malformed", fix=_FIX)
        clock = _check_clock(meta["clock"], where)
    except CheckpointError:
        raise
    except FileNotFoundError as exc:
        raise CheckpointError(f"{where} is not a session checkpoint ({exc.filename} is missing)", fix=_FIX) from None
    except (json.JSONDecodeError, SafetensorError, UnicodeDecodeError, RecursionError) as exc:
        raise CheckpointError(f"{where} is truncated or corrupted: {type(exc).__name__}: {exc}", fix=_FIX) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise CheckpointError(f"{where / META} is corrupted or has malformed fields ({type(exc).__name__}: {exc})",
                              fix=_FIX) from None
    # everything checked; should applying it still fail, the session is put back as it was (all or nothing)
    before = _snapshot(session)
    try:
        session.model.load_state_dict(model_sd, strict=True)
        if opt_sd is not None:
            session.optimizer.load_state_dict(opt_sd)
        torch.set_rng_state(rng)
    except Exception as exc:  # noqa: BLE001 - the boundary: a failed load changes nothing
        _restore(session, before)
        raise CheckpointError(f"{where} could not be applied ({type(exc).__name__}: {' '.join(str(exc).split())[:300]});"
                              " the session is unchanged", fix=_FIX) from None
    session.steps = clock["steps"]
    session.samples = clock["samples"]
    session.simulated_time_s = clock["simulated_time_s"]
    session.sections_s = dict(clock["sections_s"])


def _regular(where: Path, name: str) -> None:
    """Refuse a file that is not a regular file inside the checkpoint folder (a symlink out of it, /dev/zero, a
    FIFO): reading one could leak another file's contents or never end."""
    full = where / name
    if not full.exists() and not full.is_symlink():
        raise FileNotFoundError(2, "missing", str(full))
    real = full.resolve()
    if not real.is_relative_to(where.resolve()):
        raise CheckpointError(f"{full} is a symlink to {real}, outside the checkpoint folder", fix=_FIX)
    if not real.is_file():
        raise CheckpointError(f"{full} is not a regular file", fix=_FIX)


def _snapshot(session: Any) -> tuple[Any, Any, torch.Tensor]:
    model = {k: v.detach().clone() for k, v in session.model.state_dict().items()}
    opt = copy.deepcopy(session.optimizer.state_dict()) if session.optimizer is not None else None
    return model, opt, torch.get_rng_state()


def _restore(session: Any, before: tuple[Any, Any, torch.Tensor]) -> None:
    model, opt, rng = before
    session.model.load_state_dict(model, strict=True)
    if opt is not None:
        session.optimizer.load_state_dict(opt)
    torch.set_rng_state(rng)
