"""The design space a sweep covers: models x targets x a grid of ``ak.compile`` / ``ak.serve`` settings.

    plan = grid.expand(models, ["a100", "sn40l"], batch=[1, 8], precision="bf16")
    plan.configs[0]     # {"model": "braggnn", "target": "a100", "batch": 1, "precision": "bf16"}

Everything here runs on the caller's side, before a single configuration is modelled: an unknown grid key, an
empty list, an unknown target or a model that is not a model is an accelkit error naming it. What only the
configuration itself can tell (a precision the chip lacks, a model too big for the chips) is left to the
sweep, where it becomes a refusal row.

Grid keys are the keyword arguments of :func:`accelkit.compile` and, for serving (a grid with
``prompt_tokens`` and ``output_tokens``), of :func:`accelkit.serve`, read from their signatures: an argument
either function gains (such as ``stack``) is a grid key without a change here. ``batch`` is the batch in both
(``batch_size`` in ``ak.compile``'s words is accepted too).
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from torch import nn

from accelkit import hardware
from accelkit.boundary import flag, got, whole
from accelkit.errors import ArgumentError
from accelkit.graph import Graph
from accelkit.hardware.spec import AcceleratorSpec
from accelkit.workflow.compiling import compile as compile_program
from accelkit.workflow.serve import serve

SERVING_KEYS = ("prompt_tokens", "output_tokens")
# the arguments a sweep sets itself, or that are no setting: never grid keys
_NOT_GRID = {"model", "example_inputs", "target"}
# one name for the batch in both functions (ak.compile calls it batch_size, ak.serve batch)
ALIASES = {"batch_size": "batch"}


def _keywords(fn: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in _NOT_GRID)


def compile_keys() -> tuple[str, ...]:
    """The grid keys of a compile sweep: ``ak.compile``'s keyword arguments (``batch_size`` as ``batch``)."""
    return tuple(ALIASES.get(k, k) for k in _keywords(compile_program))


def serve_keys() -> tuple[str, ...]:
    """The grid keys of a serving sweep: ``ak.serve``'s keyword arguments."""
    return _keywords(serve)


@dataclass(frozen=True)
class Plan:
    """A validated sweep: the models by name, the targets, the grid (key -> values) and every configuration
    (a dict per row, in the order the grid lists them: model, target, then each key)."""

    models: dict[str, Any]
    targets: tuple[str | AcceleratorSpec, ...]
    grid: dict[str, tuple[Any, ...]]
    kind: str  # "compile" or "serve"
    configs: tuple[dict[str, Any], ...]


def _model_name(item: Any, index: int) -> str:
    name = getattr(item, "name", None)
    if isinstance(name, str) and name:
        return name
    model = item[0] if isinstance(item, tuple) and item else getattr(item, "model", item)
    return f"{type(model).__name__}_{index}" if isinstance(model, nn.Module) else f"model_{index}"


def check_model(name: str, item: Any, kind: str) -> None:
    """Refuse, before the sweep starts, what can never be a model: a model is an ``nn.Module`` (serving), a
    ``(module, example_inputs)`` pair, an object with ``.model`` and ``.example_inputs`` (an ``ak.zoo`` entry),
    a captured ``ak.Graph`` (compile sweeps: sent as it is, nothing captured on the workers) or a function of no
    arguments that returns one of those (built on the worker, once)."""
    example = "models={'mlp': (MyNet(), (torch.randn(8, 16),))} or {'braggnn': ak.zoo.get('braggnn')}"
    if isinstance(item, Graph):
        if kind == "serve":
            raise ArgumentError(f"model {name!r} is a captured Graph: ak.serve needs the model itself",
                                fix="pass the causal LM module (the meta device is welcome)")
        return
    if isinstance(item, tuple):
        if len(item) != 2 or not isinstance(item[0], nn.Module):
            raise ArgumentError(f"model {name!r} is a tuple that is not (nn.Module, example_inputs): {got(item)}",
                                fix=f"e.g. {example}")
        return
    if isinstance(item, nn.Module):
        if kind == "compile":
            raise ArgumentError(f"model {name!r} is a bare nn.Module: ak.compile needs its example inputs too",
                                fix="pass (model, example_inputs), e.g. "
                                    "models={'mlp': (MyNet(), (torch.randn(8, 16),))}")
        return
    if hasattr(item, "model") and hasattr(item, "example_inputs"):
        return
    if callable(item):
        return
    raise ArgumentError(f"model {name!r} is not a model: {got(item)}", fix=f"e.g. {example}")


def _models(models: Any, kind: str) -> dict[str, Any]:
    if isinstance(models, Mapping):
        named = {str(k): v for k, v in models.items()}
    elif isinstance(models, (nn.Module, tuple)) or not isinstance(models, Iterable) or isinstance(models, str):
        raise ArgumentError(f"models must be a dict of name -> model (or a list of models), not {got(models)}",
                            fix="e.g. ak.sweep({'braggnn': ak.zoo.get('braggnn')}, ['a100'])")
    else:
        items = list(models)
        named = {}
        for i, item in enumerate(items):
            name = _model_name(item, i)
            named[name if name not in named else f"{name}_{i}"] = item
    if not named:
        raise ArgumentError("models is empty: a sweep needs at least one model",
                            fix="e.g. ak.sweep({n: ak.zoo.get(n) for n in ak.zoo.names()}, ['a100'])")
    for name, item in named.items():
        check_model(name, item, kind)
    return named


def _targets(targets: Any) -> tuple[str | AcceleratorSpec, ...]:
    if isinstance(targets, (str, AcceleratorSpec)):
        targets = [targets]
    if not isinstance(targets, Iterable):
        raise ArgumentError(f"targets must be a list of chip names, not {got(targets)}",
                            fix="e.g. targets=['a100', 'sn40l'] (ak.hardware.names() lists them)")
    out = tuple(targets)
    if not out:
        raise ArgumentError("targets is empty: a sweep needs at least one chip",
                            fix="e.g. targets=ak.hardware.names(host=False) for every chip in the catalog")
    for t in out:
        if isinstance(t, AcceleratorSpec):
            continue
        if not isinstance(t, str):
            raise ArgumentError(f"a target must be a chip's name or a loaded spec, not {got(t)}",
                                fix="e.g. targets=['a100', 'sn40l'] (ak.hardware.names() lists them)")
        hardware.get(t)  # an UnknownNameError that lists the catalog
    return out


def _values(key: str, value: Any) -> tuple[Any, ...]:
    """A grid value: a list (or tuple, range, set) of settings, or one setting."""
    if isinstance(value, (list, tuple, range, set, frozenset)):
        values = tuple(sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value)
        if not values:
            raise ArgumentError(f"grid key {key}= is an empty list: the sweep would have no configuration",
                                fix=f"give {key} at least one value, or leave it out for the default")
        return values
    return (value,)


def _check_value(key: str, value: Any) -> None:
    """The checks that need no target (the rest are each configuration's, and refuse a row, not the sweep)."""
    if key in ("chips", "batch", "micro_batch", *SERVING_KEYS) and not (key == "micro_batch" and value is None):
        whole(key, value, example=f"{key}=[1, 2, 4]")
    elif key == "training":
        flag(key, value)
    elif key in ("precision", "mode") and not isinstance(value, str):
        raise ArgumentError(f"{key} must be a name, not {got(value)}", fix=f"e.g. {key}=['bf16', 'fp16']"
                            if key == "precision" else f"e.g. {key}='auto'")


def expand(models: Any, targets: Any, **grid: Any) -> Plan:
    """Validate a sweep's models, targets and grid, and list its configurations (nothing is modelled yet)."""
    keys = {ALIASES.get(k, k): k for k in grid}
    if len(keys) < len(grid):
        raise ArgumentError("the grid names the batch twice (batch and batch_size)", fix="keep one: batch=[...]")
    serving = [k for k in SERVING_KEYS if k in keys]
    kind = "serve" if serving else "compile"
    allowed = serve_keys() if serving else compile_keys()
    if serving and len(serving) < len(SERVING_KEYS):
        missing = next(k for k in SERVING_KEYS if k not in keys)
        raise ArgumentError(f"a serving sweep needs both prompt_tokens and output_tokens; {missing} is missing",
                            fix=f"add {missing}=[...] to the grid")
    unknown = [keys[k] for k in keys if k not in allowed]
    if unknown:
        what = "ak.serve (a serving sweep: the grid names prompt_tokens)" if serving else "ak.compile"
        raise ArgumentError(f"grid key {unknown[0]!r} is not an argument of {what}",
                            fix=f"use keys from: {', '.join(allowed)}"
                                + ("; for a compile sweep leave prompt_tokens/output_tokens out" if serving else ""))
    values = {ALIASES.get(k, k): _values(ALIASES.get(k, k), v) for k, v in grid.items()}
    for key, vals in values.items():
        for v in vals:
            _check_value(key, v)
    named = _models(models, kind)
    chips = _targets(targets)
    configs = tuple({"model": m, "target": t, **dict(zip(values, combo, strict=True))}
                    for m in named for t in chips for combo in itertools.product(*values.values()))
    return Plan(models=named, targets=chips, grid=values, kind=kind, configs=configs)


def call_kwargs(config: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The keyword arguments of ``ak.compile`` or ``ak.serve`` for one configuration (its target included)."""
    kw = {k: v for k, v in config.items() if k != "model"}
    if kind == "compile" and "batch" in kw:
        kw["batch_size"] = kw.pop("batch")
    return kw


def target_name(target: str | AcceleratorSpec) -> str:
    return target.name if isinstance(target, AcceleratorSpec) else target


__all__ = ["ALIASES", "SERVING_KEYS", "Plan", "call_kwargs", "check_model", "compile_keys",
           "expand", "serve_keys", "target_name"]
