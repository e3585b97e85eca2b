"""The runner the CLI and ModelBox share: models named by spec, random inputs from shapes, running a
saved artifact through a Session, and the error boundary of a command (``guard``).

``accelkit.cli`` keeps only argument parsing; ``accelkit.box`` builds on this module. Loading never runs
code a received artifact carries: a model's code comes from a spec the user names (see ``trusted_spec``).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from accelkit.errors import AccelkitError

CLI_JSON = "cli.json"  # written beside the artifact's manifest by `accelkit compile`
DTYPE_ALIASES = {"fp32": "float32", "f32": "float32", "fp16": "float16", "f16": "float16",
                 "bf16": "bfloat16", "fp64": "float64", "i64": "int64", "i32": "int32"}
SHAPE_HELP = "SHAPE[:DTYPE[:HIGH]], e.g. 8x16:float32 or 4x64:int64:1000 (integers drawn from [0, HIGH))"
_SPEC_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class UsageError(AccelkitError, ValueError):
    """A command that cannot start: a spec that does not import, a bad shape string, an unknown name.

    The CLI prints it on one line and exits with code 2."""

    def one_line(self) -> str:
        return " ".join((self.message + (f"; fix: {self.fix}" if self.fix else "")).splitlines())


# ---- model specs ------------------------------------------------------------------------------
@dataclass
class LoadedModel:
    """What a spec gave: the model, its example inputs (``None`` if the factory gave none) and,
    for ``zoo:NAME``, the zoo entry (whose dataset ``run`` draws batches from)."""

    spec: str
    model: nn.Module
    example_inputs: tuple[Any, ...] | None
    entry: Any = None


def parse_shape(text: str) -> tuple[tuple[int, ...], torch.dtype, int]:
    """``"8x16:float32"`` -> ``((8, 16), torch.float32, 2)``; the last value is integers' upper bound."""
    parts = text.strip().split(":")
    if not 1 <= len(parts) <= 3 or not parts[0]:
        raise UsageError(f"bad input shape {text!r}", fix=f"write {SHAPE_HELP}")
    try:
        shape = tuple(int(d) for d in parts[0].lower().split("x"))
    except ValueError:
        raise UsageError(f"bad input shape {text!r}: {parts[0]!r} is not sizes joined by 'x'",
                         fix=f"write {SHAPE_HELP}") from None
    if any(d < 1 for d in shape):
        raise UsageError(f"bad input shape {text!r}: every size must be ≥ 1", fix=f"write {SHAPE_HELP}")
    name = DTYPE_ALIASES.get(parts[1], parts[1]) if len(parts) > 1 else "float32"
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise UsageError(f"bad input shape {text!r}: {name!r} is not a torch dtype",
                         fix="use float32, bfloat16, float16, int64, int32, bool ...")
    high = 2
    if len(parts) == 3:
        if dtype.is_floating_point or dtype == torch.bool or not parts[2].isdigit() or int(parts[2]) < 1:
            raise UsageError(f"bad input shape {text!r}: HIGH must be a whole number ≥ 1, for integer dtypes only",
                             fix="e.g. 4x64:int64:1000 draws token ids from [0, 1000)")
        high = int(parts[2])
    return shape, dtype, high


def random_tensor(shape: Sequence[int], dtype: torch.dtype, *, low: int = 0, high: int = 2,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Normal floats, or integers in ``[low, high)`` (booleans: 0 or 1)."""
    if dtype.is_floating_point:
        return torch.randn(tuple(shape), generator=generator).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, tuple(shape), generator=generator).bool()
    return torch.randint(low, max(high, low + 1), tuple(shape), generator=generator, dtype=dtype)


def inputs_from_shapes(shapes: Sequence[str], seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Random example inputs from ``--inputs`` strings (each may hold several, comma-separated)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for text in (s for item in shapes for s in item.split(",") if s.strip()):
        shape, dtype, high = parse_shape(text)
        out.append(random_tensor(shape, dtype, high=high, generator=g))
    return tuple(out)


def _zoo(spec: str) -> Any:
    try:
        zoo = importlib.import_module("accelkit.zoo")
    except ImportError:
        zoo = None
    if zoo is None or not callable(getattr(zoo, "get", None)):
        raise UsageError(f"spec {spec!r}: the model zoo (accelkit.zoo) is not available in this installation",
                         fix="name your model as module:factory instead")
    return zoo


def _import_spec_module(module_name: str) -> Any:
    """Import the module a spec names, finding it in the current folder too (as ``python -m`` would).

    The current folder is on ``sys.path`` only while this one import runs, and behind any folder already
    there, so a file in it (``yaml.py`` in a folder you received) never shadows a library accelkit imports
    later. A module already imported is returned as it is."""
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.append(cwd)
    try:
        return importlib.import_module(module_name)
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def resolve_factory(spec: str) -> Callable[[], Any] | nn.Module:
    """Import ``module:factory`` (or check ``zoo:NAME``) without calling anything; UsageError if it fails."""
    if spec.startswith("zoo:"):
        name = spec[4:]
        zoo = _zoo(spec)
        known = list(zoo.names()) if callable(getattr(zoo, "names", None)) else []
        if known and name not in known:
            raise UsageError(f"spec {spec!r}: the zoo has no model {name!r}; it has: {', '.join(known)}",
                             fix="use zoo:NAME with one of those names")
        return lambda: zoo.get(name)
    if not _SPEC_RE.match(spec):
        raise UsageError(f"spec {spec!r} is not module:factory",
                         fix="name a model factory like mypkg.models:make_mlp, or zoo:NAME")
    module_name, attr = spec.split(":")
    try:
        module = _import_spec_module(module_name)
    except ModuleNotFoundError as exc:
        hint = ("make it importable: run from the folder that holds your module, add it to PYTHONPATH, or pip install it"
                if exc.name and module_name.startswith(exc.name) else f"install {exc.name!r}, which it imports")
        raise UsageError(f"spec {spec!r}: cannot import {module_name!r} ({exc})", fix=hint) from None
    except Exception as exc:  # a syntax error or an exception at import time, in the user's module
        raise UsageError(f"spec {spec!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}",
                         fix=f"fix the module so `import {module_name}` works") from None
    factory = getattr(module, attr, None)
    if factory is None:
        public = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        raise UsageError(f"spec {spec!r}: module {module_name!r} has no attribute {attr!r}",
                         fix=f"use one of: {', '.join(public[:12]) or '(no callables found)'}")
    if not (callable(factory) or isinstance(factory, nn.Module)):
        raise UsageError(f"spec {spec!r}: {attr!r} is a {type(factory).__name__}, not a model or a factory",
                         fix="point at a function that returns a model or (model, example_inputs)")
    return factory


def load_model(spec: str, inputs: Sequence[str] | None = None, *, seed: int = 0) -> LoadedModel:
    """Build the model a spec names (seeded), with its example inputs; ``inputs`` (shape strings)
    replaces the factory's example inputs. Every failure is a :class:`UsageError` naming the spec."""
    factory = resolve_factory(spec)
    example = inputs_from_shapes(inputs, seed) if inputs else None  # a bad shape fails before any work
    entry = None
    if isinstance(factory, nn.Module):
        result: Any = factory
    else:
        torch.manual_seed(seed)
        try:
            result = factory()
        except Exception as exc:
            raise UsageError(f"spec {spec!r}: the factory raised {type(exc).__name__}: {exc}",
                             fix="make the factory work when called with no arguments") from None
    if spec.startswith("zoo:"):
        entry, result = result, (result.model, result.example_inputs)
    model: nn.Module | None = result if isinstance(result, nn.Module) else None
    given: Any = None
    if model is None and isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[0], nn.Module):
        model, given = result[0], result[1]
        if isinstance(given, torch.Tensor):
            given = (given,)
        elif isinstance(given, (tuple, list)):
            given = tuple(given)
        else:
            raise UsageError(f"spec {spec!r}: the example inputs are a {type(given).__name__}",
                             fix="return (model, (tensor, ...)): a tensor or a tuple of the forward's arguments")
    if model is None:
        raise UsageError(f"spec {spec!r}: the factory returned a {type(result).__name__}",
                         fix="return an nn.Module, or (model, example_inputs)")
    return LoadedModel(spec, model, example if example is not None else given, entry)


def _need_inputs(loaded: LoadedModel) -> tuple[Any, ...]:
    if loaded.example_inputs is None:
        raise UsageError(f"spec {loaded.spec!r} gives a model but no example inputs",
                         fix="give their shapes, e.g. --inputs 8x16:float32 (repeat for more inputs)")
    return loaded.example_inputs


def _target(name: str) -> str:
    from accelkit import hardware
    from accelkit.errors import UnknownNameError

    try:
        return hardware.get(name).name
    except UnknownNameError as exc:
        raise UsageError(exc.message, fix=exc.fix) from None


# ---- running an artifact ------------------------------------------------------------------------
@dataclass
class RunResult:
    """``run``'s outcome: what ran (real PyTorch on this CPU) and the session's report (modelled clock)."""

    artifact: str
    spec: str
    spec_from: str  # "--spec", "cli.json" or "box.yaml"
    inputs: str  # how the inputs were made
    outputs: str  # the last step's output, as dtype[shape]
    report: Any  # accelkit.runtime.session.SessionReport
    last_inputs: tuple[Any, ...] = field(default=(), repr=False)  # the last step's, to compare against PyTorch
    last_outputs: Any = field(default=None, repr=False)

    def summary(self) -> str:
        return "\n".join([
            f"ran {self.artifact} with the model from {self.spec} ({self.spec_from}) and the artifact's weights",
            f"  inputs: {self.inputs}; last output {self.outputs} (real numerics on this CPU)",
            str(self.report),
        ])

    def __str__(self) -> str:
        return self.summary()


def recorded_cli(artifact: str | os.PathLike[str]) -> dict[str, Any]:
    """``cli.json`` of an artifact compiled through the CLI (``{}`` if there is none)."""
    path = Path(artifact) / CLI_JSON
    if not path.is_file() and not path.is_symlink():
        return {}
    real, base = path.resolve(), Path(artifact).resolve()
    if not real.is_relative_to(base):
        raise AccelkitError(f"{path} is a symlink to {real}, outside the artifact's folder; accelkit only reads "
                            "files inside it", fix="delete it and pass --spec")
    if not real.is_file():
        raise AccelkitError(f"{path} is not a regular file", fix="delete it and pass --spec")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AccelkitError(f"{path} is not valid JSON ({exc})", fix="delete it and pass --spec") from None
    ok = (isinstance(data, dict) and isinstance(data.get("spec"), str)
          and (data.get("inputs") is None or (isinstance(data["inputs"], list)
                                              and all(isinstance(s, str) for s in data["inputs"]))))
    if not ok:
        raise AccelkitError(f"{path} does not hold {{'spec': 'module:factory', 'inputs': [...] or null}}",
                            fix="delete it and pass --spec")
    return data


def trusted_spec(recorded: str, given: str | None, where: str, command: str) -> str:
    """The model code to import for a folder whose data file ``where`` records the spec ``recorded``.

    A received artifact or box must never make accelkit import code the user did not name: a data file in the
    folder could name any module (one shipped beside it, or ``os:getcwd``). So the spec the user names
    (``given``, from the command line or a keyword argument) wins; the recorded one is used on its own only
    when it is ``zoo:NAME`` (accelkit's own code). Otherwise this refuses, with the command to run.
    """
    if given is not None:
        return given
    if recorded.startswith("zoo:"):
        return recorded
    raise UsageError(
        f"{where} names the model code {recorded!r}; accelkit does not import code named by a file inside an "
        "artifact or box folder (a folder you received could name any module)",
        fix=f"name the model yourself if you trust it: {command} --spec {recorded}")


def _dataset_batches(entry: Any, example: tuple[Any, ...], batch: int) -> Iterator[tuple[torch.Tensor, ...]]:
    """Consecutive batches of a zoo entry's training split: for each example input, the field it was cut from."""
    ds = entry.dataset
    fields = list(ds.tensors.values())
    cols = []
    for x in example:
        match = [f for f in fields if isinstance(x, torch.Tensor) and f.dtype == x.dtype
                 and f.shape[1:] == x.shape[1:] and torch.equal(f[: len(x)], x)]
        if not match:
            raise AccelkitError(f"cannot tell which field of {ds.name} feeds the model",
                                fix="run with --spec module:factory to use random inputs")
        cols.append(match[0])
    n = len(ds)
    at = 0
    while True:
        idx = torch.arange(at, at + batch) % n
        at = (at + batch) % n
        yield tuple(c[idx] for c in cols)


def _random_batches(prog: Any, model: nn.Module, example: tuple[Any, ...] | None, batch: int,
                    seed: int) -> Iterator[tuple[torch.Tensor, ...]]:
    """Random inputs of the compiled shapes (batch replaced); integers span the example inputs' range,
    else the model's smallest embedding table, else {0, 1}."""
    metas = list(prog.graph.inputs.values())
    vocab = min((m.num_embeddings for m in model.modules() if isinstance(m, nn.Embedding)), default=2)
    g = torch.Generator().manual_seed(seed)
    while True:
        out = []
        for i, meta in enumerate(metas):
            like = example[i] if example and i < len(example) and isinstance(example[i], torch.Tensor) else None
            low, high = (int(like.min()), int(like.max()) + 1) if like is not None and like.numel() else (0, vocab)
            out.append(random_tensor((batch, *meta.shape[1:]), getattr(torch, meta.dtype), low=low, high=high,
                                     generator=g))
        yield tuple(out)


PROGRESS_FROM_STEPS = 10
"""``run`` shows a progress bar (on stderr) from this many steps on."""


def _check_given_inputs(prog: Any, example: tuple[Any, ...] | None, given: Sequence[str]) -> int:
    """Refuse ``--inputs`` whose shapes are not the compiled program's (a compiled program runs its shapes only,
    as a PEF or a build does; the batch dimension may differ); returns their batch."""
    want = [f"{m.dtype}[{'x'.join(map(str, ('B', *m.shape[1:])))}]" for m in prog.graph.inputs.values()]
    have = [t for t in (example or ()) if isinstance(t, torch.Tensor)]
    same = len(have) == len(want) and all(
        str(t.dtype).removeprefix("torch.") == m.dtype and tuple(t.shape[1:]) == tuple(m.shape[1:]) and t.dim()
        for t, m in zip(have, prog.graph.inputs.values(), strict=False))
    if not same:
        raise UsageError(f"--inputs {' '.join(given)} are not the inputs this artifact was compiled for: "
                         f"{', '.join(want)} (B: any batch)",
                         fix="give inputs of those shapes (only the batch may differ), or compile again with "
                             "these --inputs")
    return int(have[0].shape[0])


def run_artifact(artifact: str | os.PathLike[str], *, spec: str | None = None, steps: int = 1,
                 batch_size: int | None = None, seed: int = 0, inputs: Sequence[str] | None = None,
                 spec_from: str = "--spec", program: Any = None) -> RunResult:
    """Load ``artifact`` (``ak.load``: JSON + safetensors), build the model from ``spec`` (or the spec
    ``cli.json`` records), load the artifact's weights into it and run ``steps`` inference steps
    through :class:`ak.Session` on the compiled target, precision and batch (``program``: the artifact,
    already loaded)."""
    from accelkit.compiler.artifact import load
    from accelkit.runtime.session import Session

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise UsageError(f"steps must be a whole number ≥ 1, got {steps!r}", fix="e.g. --steps 10")
    prog = program if program is not None else load(artifact)
    given = list(inputs) if inputs else None  # the caller's own shapes (cli.json's are the compiled ones)
    if spec is None:
        recorded = recorded_cli(artifact)
        if not recorded:
            raise UsageError(f"{artifact} does not record its model code (it was not compiled by `accelkit compile`)",
                             fix="pass --spec module:factory, the factory the artifact was compiled from")
        spec, spec_from = trusted_spec(recorded["spec"], None, str(Path(artifact) / CLI_JSON),
                                       f"accelkit run {artifact}"), CLI_JSON
        inputs = inputs or recorded.get("inputs")
    loaded = load_model(spec, inputs, seed=seed)
    if prog.weights is None:
        raise AccelkitError(f"{artifact} holds no weights (it was compiled from a meta-device model)",
                            fix="compile a model with real weights to run it")
    try:
        loaded.model.load_state_dict(prog.weights, strict=True)
    except RuntimeError as exc:
        detail = " ".join(str(exc).split())
        raise AccelkitError(f"the weights in {artifact} do not fit the model from {spec!r}: {detail[:400]}",
                            fix="pass the --spec the artifact was compiled from") from None
    model = loaded.model.eval()
    if given:
        batch_size = batch_size or _check_given_inputs(prog, loaded.example_inputs, given)
    batch = batch_size or prog.batch_size
    if loaded.entry is not None and loaded.example_inputs:
        batches = _dataset_batches(loaded.entry, loaded.example_inputs, batch)
        how = f"batches of {batch} from {loaded.entry.dataset.name}"
    else:
        batches = _random_batches(prog, model, loaded.example_inputs, batch, seed)
        how = f"random (seed {seed}), " + ", ".join(
            f"{m.dtype}[{', '.join(map(str, (batch, *m.shape[1:])))}]" for m in prog.graph.inputs.values())
    session = Session(model, target=prog.spec,  # the chip itself: a hardware.load()ed one has no catalog name precision=prog.precision, batch_size=batch,
                      chips=prog.chips, parallel=prog.parallel if batch == prog.batch_size else None,
                      mode="auto" if prog.training else prog.mode)
    if given:
        how = f"--inputs {' '.join(given)} ({how})"
    xs: tuple[Any, ...] = ()
    outputs: Any = None
    done = 0
    try:  # a long run shows its progress, and Ctrl-C stops it with the steps done so far reported
        for _ in tqdm(range(steps), desc=f"run {Path(artifact).name}", unit="step", file=sys.stderr, leave=False,
                      disable=steps < PROGRESS_FROM_STEPS, mininterval=0.5):
            xs = next(batches)
            outputs = session.run(*xs).outputs
            done += 1
    except KeyboardInterrupt:
        if not done:
            raise
        how += f"; interrupted after {done:,} of {steps:,} steps"
    shown = ", ".join(f"{str(t.dtype).removeprefix('torch.')}[{', '.join(map(str, t.shape))}]"
                      for t in torch.utils._pytree.tree_flatten(outputs)[0] if isinstance(t, torch.Tensor)) or "-"
    return RunResult(str(artifact), spec, spec_from, how, shown, session.report(), xs, outputs)


# ---- the commands -------------------------------------------------------------------------------
def guard(fn: Callable[[], int], *, prog: str = "accelkit", debug: bool = False) -> int:
    """Call ``fn`` and turn errors into a message on stderr and an exit code (2 usage, 1 other)."""
    try:
        return fn()
    except UsageError as exc:
        if debug:
            raise
        print(f"{prog}: error: {exc.one_line()}", file=sys.stderr)
        return 2
    except AccelkitError as exc:
        if debug:
            raise
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a path that cannot be read or written
        if debug:
            raise
        print(f"{prog}: error: {exc}\n  fix:   check the path and its permissions", file=sys.stderr)
        return 1
    except Exception as exc:  # the model's own code failed (a shape mismatch in forward, ...)
        if debug:
            raise
        text = " ".join(str(exc).split())[:500]
        print(f"{prog}: error: {type(exc).__name__}: {text}\n  fix:   check the model and its input shapes "
              "(--inputs); rerun with --debug for the traceback", file=sys.stderr)
        return 1
