"""``groqit``: build a PyTorch model for Groq's TSP once, keep the build in a cache, reuse it.

    gmodel = groqit(model, {"x": x})                 # builds: capture, fp16, compile for the chips needed
    gmodel = groqit(model, {"x": x})                 # same model, same input shapes: loaded from the cache
    gmodel = groqit(model, {"x": x}, rebuild="always")

The build cache (GroqFlow's) is a folder per ``build_name`` under the cache directory::

    <cache_dir>/<build_name>/state.json      build status, the key below, chips used, the groqit arguments
    <cache_dir>/<build_name>/program.akp/    the compiled program (CompiledProgram.save)

A build is *stale* when its key no longer matches: a hash of the model's structure (class, module tree,
parameter and buffer names / shapes / dtypes, the class's source) plus the input names, shapes and dtypes
and the build arguments; or when it failed, or was made by another accelkit major.minor version.
GroqFlow's key also covers parameter *values* (re-seed to keep a build fresh); accelkit's does not,
because the compiled schedule depends on shapes only and the numerics use the model passed in.

Rebuild policy (GroqFlow's): ``"if_needed"`` (default) loads a fresh build and rebuilds a stale or missing
one; ``"always"`` rebuilds; ``"never"`` loads whatever build is cached under the name, stale or not
(with a warning), and builds only when there is none.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from itertools import chain
from pathlib import Path
from typing import Any

from torch import nn

from accelkit.facades.groqflow.model import GroqFlowError, GroqModel, bind_inputs, input_shapes
from accelkit.runtime import facade_log

TARGET = "tsp"
REBUILD = ("if_needed", "always", "never")
STATE_FILE = "state.json"
ARTIFACT = "program.akp"


@dataclass
class BuildState:
    """The build's record in the cache (GroqFlow's ``state.yaml``, here JSON)."""

    build_name: str
    build_status: str  # "successful_build" | "failed_build" | "partial_build"
    key: str  # hash of the model's structure + input shapes/dtypes + build arguments
    config: dict[str, Any]  # the groqit arguments that shape the build
    inputs: dict[str, Any]  # name -> shape and dtype
    accelkit_version: str
    num_chips_used: int | None = None
    mode: str | None = None
    build_time_s: float | None = None  # measured on this host
    message: str | None = None  # why the build failed
    cache_dir: str = ""  # not saved: where this state was read from or written to
    loaded_from_cache: bool = False  # not saved: this groqit call reused the cached build

    @property
    def path(self) -> Path:
        return Path(self.cache_dir) / self.build_name

    @property
    def expected_input_shapes(self) -> dict[str, tuple[int, ...]]:
        """GroqFlow's ``state.expected_input_shapes``: each tensor input's shape, by its name in ``forward``."""
        return {k: tuple(v["shape"]) for k, v in self.inputs.items() if "shape" in v}

    @property
    def expected_input_dtypes(self) -> dict[str, str]:
        """GroqFlow's ``state.expected_input_dtypes``: each tensor input's dtype (``int64``, ``float32``...)."""
        return {k: v["dtype"] for k, v in self.inputs.items() if "dtype" in v}

    def save(self) -> None:
        body = {k: v for k, v in asdict(self).items() if k not in ("cache_dir", "loaded_from_cache")}
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / f"{STATE_FILE}.{uuid.uuid4().hex[:12]}.tmp"  # unique: two builds may save at once
        try:
            tmp.write_text(json.dumps(body, indent=1, sort_keys=True))
            tmp.replace(self.path / STATE_FILE)
        finally:
            tmp.unlink(missing_ok=True)

    @classmethod
    def read(cls, cache_dir: Path, build_name: str) -> BuildState | None:
        try:
            body = json.loads((cache_dir / build_name / STATE_FILE).read_text())
            state = cls(**body, cache_dir=str(cache_dir))
        except (OSError, ValueError, TypeError):
            return None
        # the record must be this build's: a build_name inside it would otherwise move state.path elsewhere
        return state if state.build_name == build_name else None


def _check_build_name(name: Any) -> str:
    """A build name is one folder name under the cache directory: never a path that leaves it."""
    fix = "use a plain folder name such as build_name='my_model' (no '/', '\\' or '..'); choose where it goes " \
          "with cache_dir=..."
    if not isinstance(name, str):
        raise GroqFlowError(f"build_name must be a string, not {type(name).__name__} {name!r}", fix=fix)
    if name in ("", ".", "..") or any(sep in name for sep in ("/", "\\", os.sep, "\0")) or Path(name).is_absolute():
        raise GroqFlowError(f"build_name {name!r} is not a plain folder name: the build would be written outside "
                            "cache_dir", fix=fix)
    return name


def default_cache_dir() -> Path:
    """``$GROQFLOW_CACHE_DIR`` (GroqFlow's variable), else ``groqflow`` under accelkit's cache directory."""
    if os.environ.get("GROQFLOW_CACHE_DIR"):
        return Path(os.environ["GROQFLOW_CACHE_DIR"])
    base = os.environ.get("ACCELKIT_CACHE_DIR") or str(Path.home() / ".cache" / "accelkit")
    return Path(base) / "groqflow"


def default_build_name() -> str:
    """GroqFlow names a build after the script that runs ``groqit`` (``my_model.py`` -> ``my_model``)."""
    return Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "groqit_build"


def build_key(model: nn.Module, named_inputs: dict[str, Any], config: dict[str, Any]) -> str:
    h = hashlib.sha256()
    h.update(f"{type(model).__module__}.{type(model).__qualname__}\n{model!r}\n".encode())
    for name, t in chain(model.named_parameters(), model.named_buffers()):
        h.update(f"{name}:{tuple(t.shape)}:{t.dtype}\n".encode())
    try:
        h.update(inspect.getsource(type(model)).encode())  # a changed forward is a changed model
    except (OSError, TypeError):
        pass
    h.update(json.dumps([input_shapes(named_inputs), config], sort_keys=True).encode())
    return h.hexdigest()[:16]


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _stale_reason(state: BuildState, key: str, version: str) -> str | None:
    if state.build_status != "successful_build":
        return f"the last build {state.build_status.replace('_', ' ')}"
    if state.key != key:
        return "the model, its input shapes or the groqit arguments changed since it was built"
    if _major_minor(state.accelkit_version) != _major_minor(version):
        return f"it was built by accelkit {state.accelkit_version}"
    if not (state.path / ARTIFACT / "manifest.json").is_file():
        return "its compiled program is missing"
    return None


def _compile(model: nn.Module, named: dict[str, Any], precision: str, num_chips: int | None) -> Any:
    """Compile for the TSP; without ``num_chips``, on the chips the model needs (a TSP holds the model in
    its 231 MB of SRAM, so a big one spreads over several): ``chips="auto"``, accelkit's one search."""
    from accelkit.workflow.compiling import compile

    return compile(model, named, target=TARGET, precision=precision,
                   chips=num_chips if num_chips is not None else "auto")


# the monitor lines GroqFlow prints per stage of its default PyTorch sequence (groqflow/justgroqit/ignition.py
# and the stages' monitor_message); "Converting to FP16" only when the build is fp16
MONITOR_STAGES = ("Exporting PyTorch to ONNX", "Optimizing ONNX file", "Checking for Op support", "Converting to FP16",
                  "Quantizing ONNX model", "Compiling model", "Assembling model")


def monitor_lines(name: str, precision: str, path: Path) -> str:
    """What GroqFlow's build monitor shows for a finished build: one ticked line per stage, then where it was saved
    (an int8 build quantizes where an fp16 one converts: GroqFlow's pytorch_sequence_with_quantization)."""
    skip = {"Converting to FP16": precision != "fp16", "Quantizing ONNX model": precision != "int8"}
    stages = [s for s in MONITOR_STAGES if not skip.get(s, False)]
    return "\n".join([f'\nBuilding "{name}"', *(f"    \u2713 {s}   " for s in stages), "",
                      f"Woohoo! Saved to {path}"])


HARDWARE_ONLY = {
    "groqview": "asks the Groq compiler for a GroqView file, the cycle-by-cycle picture of the program on the chip; "
                "accelkit's report and timeline figure stand in for it",
    "compiler_flags": "options for Groq's compiler (scheduling, memory layout); they shape the real schedule, which "
                      "accelkit models from the architecture instead",
    "assembler_flags": "options for Groq's assembler (instruction fetch, slice ordering); below the level accelkit "
                       "models",
}


def groqit(model: nn.Module, inputs: Any = None, build_name: str | None = None,
           cache_dir: str | os.PathLike[str] | None = None, monitor: bool = True, rebuild: str | None = None,
           compiler_flags: list[str] | None = None, assembler_flags: list[str] | None = None,
           num_chips: int | None = None, groqview: bool = False, sequence: Any = None,
           quantization_samples: Any = None, *, precision: str = "fp16") -> GroqModel:
    """Build ``model`` for the TSP against example ``inputs`` (a dict keyed by forward's argument names, a
    tuple, or a tensor), or load the build from the cache; returns a callable :class:`GroqModel`.

    ``num_chips`` fixes the chip count (GroqFlow's argument); by default the build uses as many as the
    model needs. ``precision`` is accelkit's: ``fp16`` is GroqFlow's default conversion, ``fp32`` skips it
    (GroqFlow does that with a custom build sequence). ``monitor`` prints one line per build or load.
    See the module docstring for the cache and the ``rebuild`` policy (``None``: ``"if_needed"``).

    The parameters follow GroqFlow's ``groqit(model, inputs, build_name, cache_dir, monitor, rebuild,
    compiler_flags, assembler_flags, num_chips, groqview, sequence, quantization_samples)``
    (github.com/groq/groqflow, groqflow/justgroqit/api.py and docs/user_guide.md). ``groqview``,
    ``compiler_flags`` and ``assembler_flags`` only matter to Groq's tool chain: accepted, recorded (they are
    part of the build's key, as in GroqFlow) and explained in the run's report. ``quantization_samples`` (a list
    of inputs: arrays or tensors for the first input, tuples, or dicts by name) makes an int8 build: the samples
    calibrate each linear and convolution layer's ranges, the layers then compute on int8-rounded values
    (:mod:`accelkit.facades.groqflow.quantize`), and the TSP is modelled at its int8 rate; other samples make
    another build.
    ``sequence`` (GroqFlow's custom build stages, accelkit.facades.groqflow.stages) is read for the precision it
    builds: without ``ConvertOnnxToFp16`` the build is fp32; a stage accelkit cannot follow is refused.
    """
    from accelkit._version import __version__

    precision = _check_arguments(model, quantization_samples, sequence, precision, groqview=groqview,
                                 compiler_flags=compiler_flags, assembler_flags=assembler_flags)
    rebuild = rebuild or "if_needed"
    if rebuild not in REBUILD:
        raise GroqFlowError(f"rebuild={rebuild!r} is not a rebuild policy", fix=f"use one of {list(REBUILD)}")
    if num_chips is not None and (not isinstance(num_chips, int) or num_chips < 1):
        raise GroqFlowError(f"num_chips must be a whole number ≥ 1, got {num_chips!r}", fix="e.g. num_chips=2")
    name = _check_build_name(build_name) if build_name is not None else default_build_name()
    named = bind_inputs(model, inputs)
    root = _cache_root(cache_dir)
    config: dict[str, Any] = {"num_chips": num_chips, "precision": precision, "target": TARGET,
                              "compiler_flags": compiler_flags, "assembler_flags": assembler_flags,
                              "groqview": groqview}
    ranges = None
    if quantization_samples is not None:
        from accelkit.facades.groqflow.quantize import calibrate

        ranges = calibrate(model, quantization_samples, tuple(named))
        config["quantization"] = ranges  # other samples, other ranges: another build (GroqFlow rebuilds too)
    key = build_key(model, named, config)
    state = BuildState.read(root, name)
    if state is not None and rebuild != "always":
        cached = _from_cache(model, named, state, name, key, rebuild, monitor, __version__, ranges)
        if cached is not None:
            return cached
    state = BuildState(build_name=name, build_status="partial_build", key=key, config=config,
                       inputs=input_shapes(named), accelkit_version=__version__, cache_dir=str(root))
    return _build(model, named, state, precision, num_chips, monitor, ranges)


def _check_arguments(model: Any, quantization_samples: Any, sequence: Any, precision: str, **hardware_only: Any) -> str:
    """Refuse what groqit cannot build, record what only Groq's tool chain reads; returns the build's precision
    (a custom ``sequence`` without ``ConvertOnnxToFp16`` builds fp32)."""
    if not isinstance(model, nn.Module):
        raise GroqFlowError(f"groqit builds an nn.Module here, not {type(model).__name__}", fix="pass the model object")
    if quantization_samples is not None:
        if sequence is not None:
            raise GroqFlowError("groqit got both quantization_samples and a custom sequence: GroqFlow quantizes with "
                                "its own build sequence", fix="pass one of the two")
        facade_log.accept("GroqFlow", "groqit(quantization_samples=...)",
                          "post-training int8 quantization: the samples calibrate each linear and convolution layer's "
                          "input and output ranges (min-max, one scale per tensor, as ONNX Runtime's quantize_static "
                          "does by default), those layers compute on int8-rounded values and the TSP is modelled at "
                          "its int8 rate", emulated=True)
        return "int8"
    if sequence is not None:
        from accelkit.facades.groqflow.stages import read_sequence

        precision, stage_names = read_sequence(sequence)
        facade_log.accept("GroqFlow", f"groqit(sequence={sequence.unique_name!r})",
                          f"GroqFlow's build stages {', '.join(stage_names)}: accelkit has no ONNX step, so it reads "
                          f"the sequence for the precision it builds ({precision}"
                          + ("" if precision == "fp16" else ": no ConvertOnnxToFp16") + ") and records the rest")
    for name, value in hardware_only.items():
        if value:
            facade_log.accept("GroqFlow", f"groqit({name}={value!r})", HARDWARE_ONLY[name])
    return precision


def _int8(model: nn.Module, ranges: dict[str, list[float]] | None) -> Callable[[], Any] | None:
    """An int8 build's numerics: a call computes its calibrated layers on their int8 grids (None: not int8)."""
    if not ranges:
        return None
    from accelkit.facades.groqflow.quantize import int8_numerics

    return lambda: int8_numerics(model, ranges)


def _cache_root(cache_dir: Any) -> Path:
    if cache_dir is not None and (not isinstance(cache_dir, (str, os.PathLike))
                                  or isinstance(os.fspath(cache_dir), bytes) or not str(os.fspath(cache_dir)).strip()):
        raise GroqFlowError(f"cache_dir must be a folder path (a str or pathlib.Path), not "
                            f"{type(cache_dir).__name__} {cache_dir!r}", fix="e.g. groqit(model, inputs, cache_dir='builds')")
    return Path(cache_dir) if cache_dir is not None else default_cache_dir()


def _from_cache(model: nn.Module, named: dict[str, Any], state: BuildState, name: str, key: str, rebuild: str,
                monitor: bool, version: str, ranges: dict[str, list[float]] | None = None) -> GroqModel | None:
    """The cached build when the policy allows it (a stale one only with ``rebuild="never"``), else None."""
    from accelkit.compiler.artifact import ArtifactError, load

    stale = _stale_reason(state, key, version)
    usable = stale is None or (rebuild == "never" and state.build_status == "successful_build"
                               and (state.path / ARTIFACT).is_dir())
    if not usable:
        if stale is not None:
            warnings.warn(f"groqit: rebuilding {name!r}: {stale}", stacklevel=3)
        return None
    if stale is not None:
        warnings.warn(f"groqit: loading build {name!r} although it is stale ({stale}), because "
                      "rebuild='never'; it may not match the model", stacklevel=3)
    try:
        prog = load(state.path / ARTIFACT)
    except ArtifactError:
        if rebuild == "never":
            raise
        return None
    state.loaded_from_cache = True
    if monitor:
        print(f"groqit: {name!r} loaded from the build cache ({state.path}), "
              f"{state.num_chips_used} x {TARGET}, mode {state.mode!r}")
    return GroqModel(model, prog, state, named, quantization=ranges, numerics=_int8(model, ranges))


def _build(model: nn.Module, named: dict[str, Any], state: BuildState, precision: str, num_chips: int | None,
           monitor: bool, ranges: dict[str, list[float]] | None = None) -> GroqModel:
    """Compile and save a fresh build, its state file saying how far it got."""
    state.save()
    t0 = time.perf_counter()
    try:
        prog = _compile(model, named, precision, num_chips)
        prog.save(str(state.path / ARTIFACT))
    except Exception as exc:
        state.build_status, state.message = "failed_build", f"{type(exc).__name__}: {exc}"
        state.save()
        raise
    state.build_status = "successful_build"
    state.num_chips_used = prog.chips
    state.mode = prog.mode
    state.build_time_s = time.perf_counter() - t0
    state.save()
    if monitor:
        print(monitor_lines(state.build_name, prog.precision, state.path))
        print(f"groqit: built {state.build_name!r} for {prog.chips} x {TARGET} ({prog.precision}, mode {prog.mode!r}) "
              f"in {state.build_time_s:.1f} s (accelkit's simulated build; the stages above are GroqFlow's names)")
    return GroqModel(model, prog, state, named, quantization=ranges, numerics=_int8(model, ranges))


__all__ = ["ARTIFACT", "REBUILD", "STATE_FILE", "BuildState", "build_key", "default_cache_dir", "groqit"]
