"""What the Cerebras Model Zoo 2.x Trainer (``cszoo fit``, ``python run.py CPU|CSX --params ...``) reads from
``cerebras.pytorch`` and ``cerebras.appliance`` beyond the training-loop API of :mod:`.cstorch`.

The Model Zoo from release 2.3 on (github.com/Cerebras/modelzoo, ``src/cerebras/modelzoo/trainer``) drives a
run through its own ``Trainer`` and callbacks, and releases 2.1-2.2's runner (``run_cstorch_flow``) reads some of the
same helpers. They import helpers that live in the two packages: schedules of steps, the batch size a batch holds,
nested-structure visitors, logging classes, the appliance's environment, storage and error types. Each one here does
what the Cerebras package of the same name does (release 2.10, ``cerebras_pytorch`` on PyPI, BSD-3-Clause), or, where
it needs the real cluster, keeps what it is given and does nothing more (telemetry, the cluster's workflow, compiler
hints), or refuses when used, naming the API and what to do (S3 storage, weight sparsity, tensor listeners).
"""

from __future__ import annotations

import fnmatch
import functools
import inspect
import itertools
import logging
import math
import os
import re
import threading
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import torch
from torch import nn

from accelkit.facades.cerebras.appliance import ApplianceNanError as ApplianceNanError  # the 2.0 zoo's too
from accelkit.facades.cerebras.appliance import DebugArgs
from accelkit.facades.cerebras.appliance import (
    get_debug_args as get_debug_args,  # cerebras.appliance.utils.debug_args
)
from accelkit.facades.cerebras.appliance import update_debug_args_from_keys as update_debug_args_from_keys
from accelkit.facades.cerebras.clock import CerebrasError
from accelkit.facades.cerebras.cstorch import Backend as Backend  # cerebras.pytorch.backend holds these too
from accelkit.facades.cerebras.cstorch import BackendType, use_cs
from accelkit.runtime import facade_log

# --------------------------------------------------------------------------------------------------------------
# cerebras.appliance.log, .environment, .errors, .utils.*


def get_level_name(level: str | int) -> int:
    """``cerebras.appliance.log.get_level_name``: a level name (any case, ``"verbose"`` and ``"trace"`` included,
    as the appliance defines them below DEBUG) or number, as :mod:`logging`'s number."""
    if isinstance(level, int):
        return level
    names = {"trace": 5, "verbose": 15, **{k.lower(): v for k, v in logging.getLevelNamesMapping().items()}}
    key = str(level).lower()
    if key not in names:
        raise ValueError(f"invalid log level {level!r}: use one of {sorted(names)}")
    return names[key]


for _name, _num in (("VERBOSE", 15), ("TRACE", 5)):
    logging.addLevelName(_num, _name)

wsc_logger = logging.getLogger("wsc")  # the appliance's cluster-side log, whose levels the Trainer sets


def collect_wsc_log_settings() -> dict[str, int]:
    """The cluster-side log levels set so far (no cluster here: they are only recorded)."""
    found = {"": wsc_logger.level}
    for name, log in logging.root.manager.loggerDict.items():
        if name.startswith("wsc.") and isinstance(log, logging.Logger):
            found[name[4:]] = log.level
    return found


class ClassLogger:
    """``cerebras.appliance.log.ClassLogger``: a class that logs through ``self.logger``."""

    logger: logging.Logger = logging.getLogger("cerebras")


def named_class_logger(name_or_cls: Any = None) -> Any:
    """``@named_class_logger("Name")`` or ``@named_class_logger``: gives the class its own logger."""
    def attach(cls: type, name: str) -> type:
        cls.logger = logging.getLogger(name)  # type: ignore[attr-defined]
        return cls

    if isinstance(name_or_cls, type):
        return attach(name_or_cls, name_or_cls.__name__)
    return lambda cls: attach(cls, name_or_cls or cls.__name__)


class _ApplianceEnviron(dict):  # type: ignore[type-arg]
    """``cerebras.appliance.environment.appliance_environ``: variables the appliance's workers get; here the one
    process is the worker, so a value set is also put in ``os.environ``."""

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(key, value)
        os.environ[key] = str(value)


appliance_environ = _ApplianceEnviron()


class ApplianceError(CerebrasError):
    """Base of the appliance's errors."""


class ApplianceCompilationError(ApplianceError):
    """The compile failed."""


class ApplianceDeadlockError(ApplianceError):
    """The cluster stopped making progress."""


class ApplianceUnknownError(ApplianceError):
    """Anything else from the cluster."""


class ClusterJobCancelledByCsctl(ApplianceError):
    """``csctl cancel`` stopped the job."""


def retrieve_all_subclasses(cls: type) -> Iterator[type]:
    """``cerebras.appliance.utils.classes.retrieve_all_subclasses``: every subclass, depth first."""
    sub: type
    for sub in cls.__subclasses__():
        yield sub
        yield from retrieve_all_subclasses(sub)


def create_symlink(dst: str | Path, src: str | Path, **kwargs: Any) -> None:
    """``cerebras.appliance.utils.file.create_symlink(dst, src)``: a link at ``dst`` to ``src`` (a relative
    path, as the Trainer writes them under its model dir), replacing an older link there."""
    dst = Path(dst)
    if dst.is_symlink():
        dst.unlink()
    elif dst.exists():
        return  # a real file of that name stays
    dst.symlink_to(src, **kwargs)


def bytes_to_human(size: float, fmt: str = "{value:.2f}{unit}") -> str:
    """``cerebras.appliance.utils.units.bytes_to_human``: 1536 -> ``'1.50KB'``."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(size) < 1024 or unit == "TB":
            return fmt.format(value=size, unit=unit)
        size /= 1024
    return fmt.format(value=size, unit="PB")  # pragma: no cover - the loop returns


_UNITS = {"B": 0, "KB": 1, "MB": 2, "GB": 3, "TB": 4, "PB": 5}


def convert_byte_unit(value: float, target_unit: str, src_unit: str = "B") -> float:
    """``cerebras.appliance.utils.units.convert_byte_unit(2, "MB", src_unit="GB")`` -> 2048 (binary units)."""
    try:
        return value * 1024.0 ** (_UNITS[src_unit.upper()] - _UNITS[target_unit.upper()])
    except KeyError:
        raise ValueError(f"unknown byte unit in {src_unit!r} -> {target_unit!r}: use one of {list(_UNITS)}") from None


def write_debug_args(debug_args: DebugArgs, path: str | Path) -> None:
    """Nothing to write for a simulated appliance."""


def set_default_ini(debug_args: Any, **kwargs: Any) -> None:
    """Appliance tuning flags (``ini``): recorded only."""


def set_ini(debug_args: Any, **kwargs: Any) -> None:
    """Appliance tuning flags (``ini``): recorded only."""


class _NeedsCluster:
    """A client of a service only the Wafer-Scale Cluster runs: refused where it is used, not where imported."""

    api = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise CerebrasError(f"{self.api} talks to a Cerebras Wafer-Scale Cluster's service, which the simulated "
                            "system does not have; leave it out of the run's config (the Trainer runs without it)")


class TelemetryClient:
    """``cerebras.appliance.cluster.client.TelemetryClient``: sends a CSX run's metrics to the cluster's telemetry
    service (the Trainer's default TelemetryLogger opens one on CSX). No cluster here: the metrics pushed are kept
    in ``self.pushed`` (the run's own loggers have them too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.pushed: list[tuple[dict[str, Any], dict[str, str]]] = []

    def __enter__(self) -> TelemetryClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def push(self, metrics: dict[str, Any], labels: dict[str, str] | None = None) -> None:
        self.pushed.append((dict(metrics), dict(labels or {})))


class _S3(_NeedsCluster):
    @staticmethod
    def is_valid_path(path: str | Path) -> bool:
        """Whether ``path`` is an S3 URL (those need the cluster's storage: refused when used)."""
        return str(path).startswith("s3://")

    @staticmethod
    def path_exists(path: str | Path) -> bool:
        return False


class S3Writer(_S3):
    api = "cerebras.appliance.storage.S3Writer (checkpoints in S3)"


class S3Reader(_S3):
    api = "cerebras.appliance.storage.S3Reader (checkpoints in S3)"


class _LocalStorage:
    """What ``cerebras.appliance.storage``'s writers, readers and deleters answer for a path: local files here (an
    ``s3://`` URL needs the cluster's storage, :class:`S3Writer`)."""

    @staticmethod
    def is_valid_path(path: str | Path) -> bool:
        return not str(path).startswith("s3://")

    @staticmethod
    def path_exists(path: str | Path) -> bool:
        return Path(path).exists()

    @staticmethod
    def get_type(path: str | Path) -> type:
        if str(path).startswith("s3://"):
            raise CerebrasError(f"{path}: S3 storage needs the cluster", fix="use a local path")
        return _LocalStorage


class StorageWriter(_LocalStorage):
    """The storage back ends' base class."""


class StorageReader(_LocalStorage):
    """The storage back ends' base class."""


class StorageDeleter(_LocalStorage):
    """``StorageDeleter.get(path).delete()``: removes a local checkpoint (the Trainer keeps the newest few)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def get(cls, path: str | Path) -> StorageDeleter:
        if not cls.is_valid_path(path):
            raise CerebrasError(f"{path}: S3 storage needs the cluster", fix="use a local path")
        return cls(path)

    def delete(self) -> None:
        if self.path.is_dir() and not self.path.is_symlink():
            raise CerebrasError(f"{self.path} is a folder, not a checkpoint", fix="give a checkpoint file")
        self.path.unlink(missing_ok=True)


class H5Reader(StorageReader):
    """Checkpoints in HDF5 (the appliance's format); here checkpoints are PyTorch's (see ``cstorch.save``)."""


# --------------------------------------------------------------------------------------------------------------
# cerebras.pytorch.utils.*


def call_once(error_callable: Callable[[], Any] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``cerebras.pytorch.utils.call_once.call_once()``: the function runs once; later calls return its result."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        lock = threading.Lock()
        out: list[Any] = []

        @functools.wraps(fn)
        def once(*args: Any, **kwargs: Any) -> Any:
            with lock:
                if out:
                    if error_callable:
                        error_callable()
                    return out[0]
                out.append(fn(*args, **kwargs))
            return out[0]
        return once
    return wrap


FilterCallable = Callable[[str, nn.Parameter], bool]


def convert_glob_to_regex(f: str) -> re.Pattern[str]:
    if not isinstance(f, str):
        raise TypeError(f"filter must be a string or list of strings, got {type(f).__name__}")
    return re.compile(fnmatch.translate(f))


def make_param_filter(param_filter: str | list[str] | FilterCallable) -> FilterCallable:
    """A filter ``(name, param) -> bool`` from glob patterns (or a callable of that signature, returned as is)."""
    if callable(param_filter):
        if len(inspect.signature(param_filter).parameters) != 2:
            raise ValueError(f"param_filter {param_filter!r} must take (name, param)")
        return param_filter
    patterns = [convert_glob_to_regex(p) for p in ([param_filter] if isinstance(param_filter, str) else param_filter)]
    return lambda name, param: any(p.fullmatch(name) for p in patterns)


def _visit(struct: Any, select: Callable[[Any], bool], strict: bool,
           scope: list[str]) -> Generator[tuple[list[str], Any], None, None]:
    if isinstance(struct, dict):
        for k, v in struct.items():
            yield from _visit(v, select, strict, [*scope, str(k)])
    elif isinstance(struct, (list, tuple)):
        for i, v in enumerate(struct):
            yield from _visit(v, select, strict, [*scope, str(i)])
    elif select(struct):
        yield scope, struct
    elif strict:
        raise ValueError(f"Unknown data structure: {type(struct).__name__}")


def visit_structure(data_structure: Any, select_fn: Callable[[Any], bool], strict: bool = False,
                    scope: list[str] | None = None) -> Generator[tuple[list[str], Any], None, None]:
    """``cerebras.pytorch.utils.nest.visit_structure``: (scope, item) for each selected item of a nested
    dict/list/tuple, the scope being the keys and indices on the way."""
    yield from _visit(data_structure, select_fn, strict, list(scope or []))


def visit_torch_tensors(data_structure: Any, strict: bool = False,
                        scope: list[str] | None = None) -> Generator[tuple[list[str], torch.Tensor], None, None]:
    yield from _visit(data_structure, lambda x: isinstance(x, torch.Tensor), strict, list(scope or []))


def map_structure(map_fn: Callable[[list[str], Any], Any], data_structure: Any,
                  select_fn: Callable[[Any], bool] | None = None) -> Any:
    def walk(s: Any, scope: list[str]) -> Any:
        if isinstance(s, dict):
            return type(s)((k, walk(v, [*scope, str(k)])) for k, v in s.items())
        if isinstance(s, (list, tuple)):
            items = [walk(v, [*scope, str(i)]) for i, v in enumerate(s)]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return map_fn(scope, s) if select_fn is None or select_fn(s) else s
    return walk(data_structure, [])


def map_torch_tensors(map_fn: Callable[[torch.Tensor], Any], data_structure: Any) -> Any:
    return map_structure(lambda _s, t: map_fn(t), data_structure, lambda x: isinstance(x, torch.Tensor))


def recurse_spec(spec: Any, scope: list[str] | None = None) -> Generator[list[str], None, None]:
    """The scopes of a ``torch.utils._pytree`` spec's leaves, in the order ``tree_flatten`` gives the leaves."""
    if spec.num_leaves == 0:
        return
    scope = list(scope or [])
    context = spec.context
    # children(): torch 2.13's name; children_specs: torch 2.4's, deprecated since
    children = list(spec.children()) if hasattr(spec, "children") else list(spec.children_specs)
    if context:
        if inspect.isclass(context) and issubclass(context, tuple) and hasattr(context, "_fields"):
            context = range(len(context._fields))
        for key, child in zip(context, children, strict=False):
            yield from recurse_spec(child, [*scope, str(key)])
    elif not children:
        yield scope
    else:
        for i, child in enumerate(children):
            yield from recurse_spec(child, [*scope, str(i)])


def _hint(api: str, value: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A compiler hint's decorator: the function it annotates comes back unchanged (it runs as written, in PyTorch
    on this CPU); a hint given (not None) is recorded."""
    if value is not None:
        facade_log.accept("Cerebras", f"{api}({value!r})",
                          "a hint to the Cerebras compiler (which kernel, how many key/value groups) for the ops "
                          "it annotates; the simulated ops run as written")
    return lambda fn: fn


def kernel_annotater(kernel: Any = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``cerebras.pytorch.utils.kernel.kernel_annotater(kernel)``: a decorator naming the compiler's kernel for the
    op it wraps (the 2.x Model Zoo's attention: ``kernel_annotater(attention_kernel)(torch.matmul)(q, k)``);
    the op is given back unchanged, and a kernel named is recorded."""
    return _hint("kernel_annotater", kernel)


def groups_annotater(num_groups: Any = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``cerebras.pytorch.utils.num_kv_groups.groups_annotater(num_groups)``: a decorator telling the compiler the
    grouped-query attention's key/value groups of the op it wraps; the op is given back unchanged, and a number
    of groups is recorded."""
    return _hint("groups_annotater", num_groups)


# --------------------------------------------------------------------------------------------------------------
# cerebras.pytorch.utils.data.*


@dataclass
class Schedule:
    """``cerebras.pytorch.utils.data.Schedule``: the steps at which something happens (checkpoints, evals), a list
    of non-overlapping ranges."""

    @dataclass
    class Range:
        start: int
        end: int
        step: int
        include_last: bool

        def __post_init__(self) -> None:
            if not isinstance(self.start, int) or self.start < 0:
                raise ValueError(f"start ({self.start}) must an integer >= 0.")
            if not isinstance(self.end, int) or self.end <= self.start:
                raise ValueError(f"end ({self.end}) must be an integer greater than start {self.start}.")
            if not isinstance(self.step, int) or self.step < 1:
                raise ValueError(f"step ({self.step}) must be an integer greater than zero.")

        def match(self, index: int) -> bool:
            return self.start <= index < self.end and (
                (index - self.start) % self.step == 0 or (index == self.end - 1 and self.include_last))

        def range(self) -> range:
            return range(self.start, self.end, self.step)

        def __iter__(self) -> Iterator[int]:
            yield from self.range()
            if self.include_last and self.end - 1 not in self.range():
                yield self.end - 1

        def __len__(self) -> int:
            return len(self.range()) + int(self.include_last and self.end - 1 not in self.range())

        @property
        def final_step(self) -> int:
            return self.end - 1 if self.include_last else self.range()[-1]

        def next_immediate_step(self, target: int) -> int:
            if target > self.final_step:
                raise ValueError(f"Target {target} exceeds the last interval step {self.final_step}")
            if target <= self.start:
                return self.start
            return min(self.start + math.ceil((target - self.start) / self.step) * self.step, self.final_step)

    intervals: list[Schedule.Range]

    def __post_init__(self) -> None:
        if any(not isinstance(i, Schedule.Range) for i in self.intervals):
            raise ValueError("intervals must be Schedule.Range")
        for a, b in itertools.pairwise(self.intervals):
            if b.start < a.end:
                raise ValueError(f"Intervals must be non-overlapping ranges, but got {self.intervals}.")

    def match(self, index: int) -> bool:
        return any(i.match(index) for i in self.intervals)

    def __iter__(self) -> Iterator[int]:
        for i in self.intervals:
            yield from i

    def range(self) -> list[range]:
        return [i.range() for i in self.intervals]

    def __len__(self) -> int:
        return sum(len(i) for i in self.intervals)

    @property
    def start(self) -> int | None:
        return self.intervals[0].start if self.intervals else None

    @property
    def final_step(self) -> int | None:
        return self.intervals[-1].final_step if self.intervals else None

    def next_immediate_step(self, target: int) -> int | None:
        if not self.intervals:
            return None
        final = self.intervals[-1].final_step
        if target > final:
            raise ValueError(f"Target {target} exceeds the last interval step {final}")
        for i in self.intervals:
            if target <= i.final_step:
                return i.next_immediate_step(target)
        return None  # pragma: no cover - the check above returns first


def infer_batch_size(data: Any, batch_size: int | None = None) -> int | None:
    """``cerebras.pytorch.utils.data.utils.infer_batch_size``: the first dimension all of a batch's tensors share
    (None, with a warning, when they differ off the system; an error on it)."""

    sizes = {1 if t.dim() == 0 else t.shape[0] for _, t in visit_torch_tensors(data)}
    if not sizes:
        raise RuntimeError("We could not detect any torch tensors in the input data returned by the dataloader: "
                           "return a nested dict/list/tuple of tensors.")
    if len(sizes) > 1:
        if use_cs():
            raise RuntimeError(f"Only uniform batch sizes are supported in CS runs, but the dataloader returned a "
                               f"batch with batch sizes {sizes}.")
        warnings.warn(f"Detected non-uniform batch sizes within the same batch: {sizes}.", stacklevel=2)
        return None
    size = sizes.pop()
    if batch_size is not None and size != batch_size and use_cs():
        raise RuntimeError(f"Only uniform batch sizes are supported in CS runs, but the dataloader returned two "
                           f"different batches with batch sizes {batch_size} and {size}. Make sure to set "
                           "`drop_last=True` in the dataloader.")
    return int(size)


pad_index = -1  # cerebras.pytorch.utils.data.sampler.pad_index: the index a padded sample gets


class DistributedSampler(torch.utils.data.Sampler):
    """``cstorch.utils.data.DistributedSampler(data_source, shuffle=True, seed=None, start_index=0, shard=True,
    batch_size=None, drop_last=True, num_samples=None, pad_last=False)``: the indices of a map-style dataset,
    shuffled (``seed``; each pass over the data reshuffled) or in order, as batches of ``batch_size`` indices (a
    batch sampler, the 2.x Model Zoo's HDF5 loaders' ``batch_sampler``) or one by one. ``num_samples`` sets the
    length of a pass (the dataset repeated, or cut short); ``drop_last`` drops a last short batch, ``pad_last``
    fills it with :data:`pad_index`; ``set_state(samples_streamed)`` / ``start_index`` start that many samples in
    (a restart). On the system the batches are split among the input workers (``shard``); the simulated run
    streams from this one process, which gets them all."""

    def __init__(self, data_source: Any, shuffle: bool = True, seed: int | None = None, start_index: int = 0,
                 shard: bool = True, batch_size: int | None = None, drop_last: bool = True,
                 num_samples: int | None = None, pad_last: bool = False) -> None:
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise CerebrasError(f"DistributedSampler(batch_size={batch_size!r}): a batch is one sample or more",
                                fix="pass a whole number ≥ 1, or None for single indices")
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples < 1):
            raise CerebrasError(f"DistributedSampler(num_samples={num_samples!r}): a pass is one sample or more",
                                fix="pass a whole number ≥ 1, or None for the dataset's length")
        if pad_last and drop_last:
            raise CerebrasError("DistributedSampler(drop_last=True, pad_last=True): a last short batch is either "
                                "dropped or padded", fix="set one of drop_last and pad_last")
        self.data_source = data_source
        self.shuffle, self.seed, self.shard = shuffle, seed, shard
        self.batch_size, self.drop_last, self.pad_last = batch_size, drop_last, pad_last
        self.num_samples = len(data_source) if num_samples is None else num_samples
        if self.num_samples < 1:
            raise CerebrasError("DistributedSampler: the dataset is empty", fix="give it a dataset with samples")
        self.start_index = start_index
        self.epoch = 0
        if shard:
            facade_log.accept("Cerebras", "DistributedSampler(shard=True)",
                              "splits the batches among the cluster's input workers; the simulated run streams "
                              "every batch from this one process", emulated=True)

    def set_state(self, samples_streamed: int) -> None:
        """Start ``samples_streamed`` samples in (the number a checkpoint's loader state records)."""
        self.start_index = int(samples_streamed)

    def _order(self, epoch: int) -> list[int]:
        size = len(self.data_source)
        if not self.shuffle:
            return [i % size for i in range(self.num_samples)]
        gen = torch.Generator()
        gen.manual_seed((self.seed if self.seed is not None else 0) + epoch)
        order: list[int] = []
        while len(order) < self.num_samples:
            order.extend(torch.randperm(size, generator=gen).tolist())
        return order[:self.num_samples]

    def __iter__(self) -> Iterator[Any]:
        epoch, skip = divmod(self.start_index, self.num_samples)
        self.epoch = max(self.epoch, epoch)
        order = self._order(self.epoch)[skip:]
        self.start_index = 0  # a set state applies to the next pass only
        self.epoch += 1
        if self.batch_size is None:
            yield from order
            return
        for i in range(0, len(order), self.batch_size):
            batch = order[i:i + self.batch_size]
            if len(batch) < self.batch_size:
                if self.drop_last:
                    return
                if self.pad_last:
                    batch += [pad_index] * (self.batch_size - len(batch))
            yield batch

    def __len__(self) -> int:
        if self.batch_size is None:
            return self.num_samples
        full, rest = divmod(self.num_samples, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

MbsSetting = None | int | Literal["explore", "auto"] | dict[str, dict[str, int]]


# --------------------------------------------------------------------------------------------------------------
# cerebras.pytorch.core.annotation, .experimental.listener, .backend.ltc_backend, .sparse, .lib


class AnnotationMode:
    """``cerebras.pytorch.core.annotation.AnnotationMode``: how the compiler treats an annotated region (the
    Model Zoo's precision and activation-checkpoint hints). Recorded; the simulated compile does not read them."""

    @dataclass
    class Config:
        enable_fwd: bool
        enable_bwd: bool

    @dataclass
    class Attribute:
        name: str
        value: Any | None

    def __init__(self, config: Any = None) -> None:
        self.config = config


def create_annotation(annotation_cls: Any, *args: Any, **kwargs: Any) -> Callable[..., Any]:
    """A decorator that leaves the function as it is (the annotation is a compiler hint)."""
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        return fn
    return deco


class _Handle:
    def __init__(self, hooks: list[Any] | None = None, hook: Any = None) -> None:
        self.hooks, self.hook = hooks, hook

    def remove(self) -> None:
        if self.hooks is not None and self.hook in self.hooks:
            self.hooks.remove(self.hook)


def register_traced_tensor_hook(hook: Callable[..., Any]) -> _Handle:
    """Hooks on the LTC tracer's tensors: the simulated run traces nothing, so a listener sees none."""
    return _Handle()


def register_after_tensor_to_cpu(hook: Callable[..., Any]) -> _Handle:
    """``hook(tensor, name)`` for each tensor a step on the simulated system hands back to the host, once the step
    has run (the CPU backend hands nothing back: its tensors never left)."""
    from accelkit.facades.cerebras.cstorch import _after_to_cpu_hooks

    _after_to_cpu_hooks.append(hook)
    return _Handle(_after_to_cpu_hooks, hook)


class SparsityAlgorithm:
    """``cerebras.pytorch.sparse.SparsityAlgorithm``: the base of the sparsity algorithms. Weight sparsity is not
    simulated; a config that asks for it is refused where it is applied."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise CerebrasError("cerebras.pytorch.sparse (weight sparsity) is not simulated: remove the `sparsity:` "
                            "section of the config to train the dense model")


def default_sparse_param_filter(name: str, param: nn.Parameter) -> bool:
    """The Model Zoo's default: weights of two or more dimensions, not embeddings or norms."""
    return param.dim() > 1 and "embedding" not in name and "norm" not in name


class _NoNativeLib:
    """``cerebras.pytorch.lib.cerebras_pytorch_lib``, Cerebras' compiled extension: only ``set_attribute`` is
    answered; the rest is refused by name."""

    @staticmethod
    def set_attribute(tensor: torch.Tensor, name: str, value: Any) -> None:
        """``set_attribute(tensor, name, value)``: an attribute on the op that made ``tensor`` in the traced graph
        (the 2.x Model Zoo's decoder layers mark their outputs ``"cs.internal": {"source_vars": [...]}`` for the
        compiler's numeric dumps on CSX). Recorded; the simulated run traces no graph, so the tensor is left as
        it is."""
        facade_log.accept("Cerebras", f"cerebras_pytorch_lib.set_attribute(tensor, {name!r}, ...)",
                          "annotates an op of the compiled graph for the system's compiler and its tensor dumps; "
                          "the simulated run compiles no graph")

    def __getattr__(self, name: str) -> Any:
        raise CerebrasError(f"cerebras.pytorch.lib.cerebras_pytorch_lib.{name}: the Cerebras PyTorch extension "
                            "(compiled code) is not part of the simulation; the Trainer runs without it")


cerebras_pytorch_lib = _NoNativeLib()


# --------------------------------------------------------------------------------------------------------------
# cerebras.pytorch.backend


def get_backend_args(backend_type: str) -> dict[str, Any]:
    """The keyword arguments ``cstorch.backend(backend_type, ...)`` takes, with their defaults (the CSX backend
    also takes the appliance's options, which are recorded: ``cstorch.HARDWARE_ONLY_BACKEND_OPTIONS``)."""
    from accelkit.facades.cerebras import cstorch

    sig = inspect.signature(cstorch.backend)
    args = {n: p.default for n, p in sig.parameters.items()
            if p.kind is p.KEYWORD_ONLY and p.default is not inspect.Parameter.empty}
    if BackendType.from_str(str(getattr(backend_type, "value", backend_type))).is_csx:
        args.update(dict.fromkeys(cstorch.HARDWARE_ONLY_BACKEND_OPTIONS))
    return args


def current_backend_impl(raise_exception: bool = True) -> Any:
    """The backend object (cstorch keeps an implementation behind ``current_backend()``; here they are one)."""
    from accelkit.facades.cerebras import cstorch

    try:
        return cstorch.current_backend()
    except CerebrasError:
        if raise_exception:
            raise
        return None


def one_hot(tensor: torch.Tensor, num_classes: int = -1) -> torch.Tensor:
    """``cerebras.pytorch.nn.functional.one_hot``."""
    return torch.nn.functional.one_hot(tensor, num_classes)


def sparse_matmul(input: torch.Tensor, topk_indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``cerebras.pytorch.nn.functional.sparse_matmul(input, topk_indices, weight)``: each token's product with the
    weights of the experts it was routed to (the Model Zoo's mixture-of-experts layers, ``TopKExpertsSparseLinear``).
    ``weight`` is ``(out, num_experts, in)``, ``topk_indices`` ``(batch, seq, k)``, ``input`` ``(batch, seq, in)``
    (the same token for every expert) or ``(batch, seq, k, in)``; the result is ``(batch, seq, k, out)``, the
    ``k``-th slot ``weight[:, topk_indices[..., k], :] @ input``. On the system only the chosen experts' weights
    are read for each token; here the same products are computed in PyTorch on the gathered weights."""
    if input.dim() == topk_indices.dim():
        input = input.unsqueeze(-2).expand(*topk_indices.shape, input.shape[-1])
    chosen = weight[:, topk_indices.long()]  # (out, batch, seq, k, in)
    return torch.einsum("obski,bski->bsko", chosen, input.to(weight.dtype))


def sparse_act_matmul(input: torch.Tensor, act_mask: torch.Tensor, weight: torch.Tensor,
                      dense_capacity: int | None = None) -> torch.Tensor:
    """``cerebras.pytorch.nn.functional.sparse_act_matmul(input, act_mask, weight, dense_capacity=None)``:
    ``input @ weight.T`` for the tokens whose ``act_mask`` is set, zero for the others (an expert's layer in the
    Model Zoo's token-masked mixture of experts, ``SparseActLinear``): ``input`` ``(batch, seq, in)``, ``act_mask``
    ``(batch, seq)``, ``weight`` ``(out, in)``. On the system only the active tokens are computed;
    ``dense_capacity`` (how many the compiled kernel holds) is recorded: here every active token is computed."""
    if dense_capacity is not None:
        facade_log.accept("Cerebras", f"cstorch.nn.functional.sparse_act_matmul(dense_capacity={dense_capacity!r})",
                          "sizes the system's buffer of active tokens for the compiled kernel; the simulated layer "
                          "computes every active token in PyTorch on this CPU")
    mask = (act_mask != 0).to(input.dtype).unsqueeze(-1)
    return torch.nn.functional.linear(input * mask, weight.to(input.dtype)) * mask


def _iter_tensors(x: Iterable[Any]) -> Iterator[torch.Tensor]:
    for _, t in visit_torch_tensors(x):
        yield t


class Group(SparsityAlgorithm):
    """``cstorch.sparse.Group``: several sparsity algorithms over parameter groups (refused as its base is)."""


class Static(SparsityAlgorithm):
    """``cstorch.sparse.Static``: a fixed sparsity level (refused as its base is: weight sparsity is not simulated)."""

    def __init__(self, sparsity: float | None = None, **kwargs: Any) -> None:
        super().__init__(sparsity, **kwargs)


def map_sparsity_algorithm(algorithm: str) -> type:
    """``cstorch.sparse.map_sparsity_algorithm("static")`` (the 2.2 Model Zoo's config checks): the algorithm's class.
    Only its name is looked up here; making one is refused (weight sparsity is not simulated)."""
    if str(algorithm).lower() != "static":
        raise CerebrasError(f"sparsity algorithm {algorithm!r} is not simulated",
                            fix="remove the `sparsity:` section of the config to train the dense model")
    return Static


def configure_sparsity(*args: Any, **kwargs: Any) -> SparsityAlgorithm:
    """``cstorch.sparse.configure(config)``: refused (weight sparsity is not simulated)."""
    return SparsityAlgorithm()


class RateTracker:
    """``cstorch.utils.tracker.RateTracker``: samples counted against the run's clock, which is the wafer's
    MODELLED clock on a CSX backend and the steps' time measured on this CPU on the CPU backend (the same clock the
    executor's profiler reads). ``rate()`` is smoothed over the samples since it was last asked, as Cerebras' is."""

    def __init__(self, smooth_factor: float | None = None) -> None:
        self._smooth = 0.4 if smooth_factor is None else smooth_factor
        self.reset()

    def reset(self) -> None:
        self._partial_count = 0.0
        self._partial_rate: float | None = None
        self._count = 0.0
        self.reset_time()

    def reset_time(self, offset: float = 0) -> None:
        self._start = self._now() - offset
        self._partial_time = self._start

    @staticmethod
    def _now() -> float:
        from accelkit.facades.cerebras.cstorch import _current, _run_seconds, note_modelled_rate

        if _current and not _current[0].is_cpu:
            note_modelled_rate()
        return _run_seconds()

    def add(self, count: float) -> None:
        self._count += count

    @property
    def total_count(self) -> float:
        """Samples added since the last reset (a property, as cstorch's)."""
        return self._partial_count + self._count

    def elapsed_seconds(self) -> float:
        return self._now() - self._start

    def rate(self) -> float:
        now = self._now()
        delta = now - self._partial_time
        if delta <= 0:
            return 0.0
        current = self._count / delta
        rate = current if self._partial_rate is None else (1 - self._smooth) * current + self._smooth * self._partial_rate
        self._partial_count += self._count
        self._count = 0.0
        self._partial_time, self._partial_rate = now, rate
        return rate

    def global_rate(self) -> float:
        elapsed = self.elapsed_seconds()
        return self.total_count / elapsed if elapsed > 0 else 0.0


class _OpProfiler:
    """``cstorch.profiler.profile(...)``: the appliance's op profiler. The simulated run's own timeline is in its
    report (``accelkit`` writes no chrome trace of the wafer here)."""

    appliance_response = None
    op_profiler_json = None  # the 2.2 zoo's name for the same response

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def __enter__(self) -> _OpProfiler:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def export_chrome_trace(self, path: str | Path) -> None:
        """Nothing is written: the modelled timeline is in the run's accelkit report."""

    def get_summary(self) -> str:
        return ""


def _profile_schedule(start_step: int = 0, end_step: int = 0) -> tuple[int, int]:
    return (start_step, end_step)


class _ExternalLink:
    def __call__(self, value: bool = True) -> Any:
        import contextlib

        return contextlib.nullcontext()


class SelectiveGrad:
    """``cstorch.nn.SelectiveGrad``: gradients kept only for some parameters (a compiler hint); refused."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise CerebrasError("cstorch.nn.SelectiveGrad is not simulated: leave the SelectiveGrad callback out")


class SmoothL1Loss(nn.SmoothL1Loss):
    """``cstorch.nn.SmoothL1Loss(size_average=None, reduce=None, reduction="mean", beta=1.0)``: cstorch's own
    SmoothL1 loss (composed of ops the system's compiler lowers), the same values as ``torch.nn.SmoothL1Loss``:
    half the squared error over ``beta`` where the error is below ``beta``, the absolute error less ``beta / 2``
    elsewhere (the 2.10 Model Zoo's image encoders' ``MaskedSmoothL1Loss`` takes it with ``reduction="none"``)."""


class Compression:
    """``cstorch.experimental.Compression``: weight compression on the wafer; refused."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise CerebrasError("cstorch.experimental.Compression is not simulated: leave the Compression callback out")


def make_constant(value: Any) -> Any:
    """``cstorch.make_constant``: a value the compiler folds into the program; here the value itself."""
    return value


def from_numpy(array: Any) -> torch.Tensor:
    return torch.from_numpy(array)


sparse = SimpleNamespace(SparsityAlgorithm=SparsityAlgorithm, Group=Group, Static=Static, configure=configure_sparsity,
                         map_sparsity_algorithm=map_sparsity_algorithm)
nn_namespace = SimpleNamespace(SelectiveGrad=SelectiveGrad, SmoothL1Loss=SmoothL1Loss,
                               functional=SimpleNamespace(one_hot=one_hot, sparse_matmul=sparse_matmul,
                                                          sparse_act_matmul=sparse_act_matmul))
def create_listener(**params: Any) -> Any:
    """``cstorch.experimental.listener.create_listener(...)``: a listener on the traced graph's tensors (the 2.1
    Model Zoo's ``experimental.listeners`` config); there is no traced graph here, so none can be made."""
    raise CerebrasError("cstorch.experimental.listener.create_listener: tensor listeners watch the traced graph on "
                        "the system, which the simulation does not trace", fix="leave experimental.listeners out of "
                        "the params")


experimental = SimpleNamespace(Compression=Compression,
                               listener=SimpleNamespace(register_traced_tensor_hook=register_traced_tensor_hook,
                                                        create_listener=create_listener))
profiler = SimpleNamespace(profile=_OpProfiler, schedule=_profile_schedule)
storage = SimpleNamespace(serializers=SimpleNamespace(use_external_link=_ExternalLink()))
tracker = SimpleNamespace(RateTracker=RateTracker)
nest = SimpleNamespace(visit_structure=visit_structure, visit_torch_tensors=visit_torch_tensors,
                       map_structure=map_structure, map_torch_tensors=map_torch_tensors, recurse_spec=recurse_spec)


def current_executor() -> Any:
    """``cstorch.current_executor()``: the DataExecutor being iterated."""
    from accelkit.facades.cerebras.cstorch import _executors

    if not _executors:
        raise RuntimeError("No active data executor found")
    return _executors[-1]


_pol_scopes: list[int] = []  # the forward levels of the cstorch.pol scopes being run, innermost last


def current_pol() -> int:
    """``cstorch.current_pol()``: the precision optimization level the backend compiles at: that of the innermost
    :class:`pol` scope given a ``level``, else ``backends.csx.precision.optimization_level`` (1 unless set)."""
    from accelkit.facades.cerebras import cstorch

    return _pol_scopes[-1] if _pol_scopes else cstorch.backends.csx.precision.optimization_level


class pol:  # noqa: N801 - cstorch's name
    """``cstorch.pol(level=None, bwd_level=None)``: compile a region (``with cstorch.pol(...):``, or
    ``cstorch.pol(bwd_level=0)(module)(inputs)`` as the 2.x Model Zoo's LM heads do) at another precision
    optimization level. The region runs as written, in PyTorch on this CPU; ``level`` is what
    :func:`current_pol` answers inside it; the levels are recorded (on the system they choose the compiled
    kernels' numerics, forward and backward; here neither the numerics nor the modelled time depend on them)."""

    def __init__(self, level: int | None = None, bwd_level: int | None = None) -> None:
        for name, value in (("level", level), ("bwd_level", bwd_level)):
            if value not in (None, 0, 1, 2):
                raise CerebrasError(f"cstorch.pol({name}={value!r}): the precision optimization level is 0, 1 or 2",
                                    fix=f"pass {name}=0, 1 or 2, or leave it out")
        self.level, self.bwd_level = level, bwd_level
        facade_log.accept("Cerebras", f"cstorch.pol(level={level!r}, bwd_level={bwd_level!r})",
                          "compiles a region at another precision optimization level on the system; the simulated "
                          "region runs in PyTorch on this CPU in the run's precision, and its modelled time does "
                          "not depend on it")

    def __enter__(self) -> pol:
        if self.level is not None:
            _pol_scopes.append(self.level)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.level is not None:
            _pol_scopes.pop()

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def in_scope(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return in_scope
