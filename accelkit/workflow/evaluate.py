"""One configuration of a sweep, modelled where it runs (a Dask worker, or this process): a row of numbers or of
the refusal.

    row = evaluate(config, "compile", MODEL_CACHE.get(key, item, "compile"))

:data:`MODEL_CACHE` holds each model a worker was sent, built (a zoo entry or a factory is called there) and
captured once per ``training`` setting; every later configuration of that model on that worker compiles the
frozen graph again for its target and settings, which is the cheap part (passes, memory plan, placement,
estimate). The cache is an explicit object: ``MODEL_CACHE.clear()`` empties it, ``len(MODEL_CACHE)`` says
how many models it holds.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from accelkit.compiler.program import captured
from accelkit.errors import AccelkitError, ArgumentError
from accelkit.graph import Graph
from accelkit.workflow.compiling import compile as compile_program
from accelkit.workflow.grid import call_kwargs, target_name
from accelkit.workflow.serve import serve

# columns every row has, in this order (the grid's keys follow ``kind``)
RESULT_COLUMNS = ("status", "step_time_s", "time_per_sample_s", "throughput", "tokens_per_s", "ttft_s", "tpot_s",
                  "exec_mode", "parallel", "data", "tensor", "pipeline", "chips_used", "bound_by",
                  "memory_per_chip_bytes", "family", "error", "message", "fix", "capture_s", "eval_s", "worker")


@dataclass
class Built:
    """A model as a worker holds it: the module and its example inputs (or why it could not be built), with the
    capture of each ``training`` setting done once (or its error, kept so it is not retried per row)."""

    model: nn.Module | Graph | None
    inputs: Any
    error: BaseException | None = None
    captures: dict[bool, BaseException | None] = field(default_factory=dict)
    capture_s: dict[bool, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # threads of one worker process

    def capture(self, training: bool) -> tuple[BaseException | None, float]:
        """Capture for ``training`` the first time it is asked (then the compiler's graph cache holds it);
        returns the capture's error, if any, and the seconds this call spent capturing (0 after the first)."""
        if isinstance(self.model, Graph):  # captured before it was sent (ak.compile checks its training flag)
            return None, 0.0
        with self.lock:
            if training in self.captures:
                return self.captures[training], 0.0
            assert self.model is not None
            t0 = time.perf_counter()
            for _ in range(2):  # a failure is kept only if it happens again: never cache a one-off
                try:
                    captured(self.model, self.inputs, training)
                    self.captures[training] = None
                    break
                except Exception as exc:  # a model that fails capture refuses its rows, not the sweep
                    self.captures[training] = exc
            self.capture_s[training] = time.perf_counter() - t0
            return self.captures[training], self.capture_s[training]


def build(item: Any) -> Built:
    """A model item as :func:`accelkit.workflow.grid.check_model` accepts it, built: a factory is called, a
    zoo entry's ``.model`` made."""
    try:
        if callable(item) and not isinstance(item, (nn.Module, Graph)) and not hasattr(item, "example_inputs"):
            item = item()
        if isinstance(item, Graph):
            return Built(item, None)
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], nn.Module):
            return Built(item[0], item[1])
        if isinstance(item, nn.Module):
            return Built(item, None)
        if hasattr(item, "model") and hasattr(item, "example_inputs"):
            return Built(item.model, item.example_inputs)
        raise ArgumentError(f"the model factory returned {type(item).__name__}, not a model",
                            fix="return an nn.Module (serving), (module, example_inputs) or an ak.zoo entry")
    except Exception as exc:  # the user's factory or model constructor failed: every row says so
        return Built(None, None, error=exc)


class ModelCache:
    """The models this process was sent, built once each: ``get(key, item)`` builds ``item`` the first time
    ``key`` is asked for and returns the same :class:`Built` after. Keys are unique per sweep and model
    (the sweep names them), so two sweeps never share a stale model; the ``size`` most recent are kept."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._entries: OrderedDict[str, Built] = OrderedDict()
        self._lock = threading.Lock()  # a LocalCluster of threads shares one cache: build each model once

    def get(self, key: str, item: Any) -> Built:
        with ONE_AT_A_TIME, self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            built = self._entries[key] = build(item)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
            return built

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries


MODEL_CACHE = ModelCache()
# torch.export (capture, and ak.serve's captures) is not thread-safe, nor is building a model while another thread
# captures: the threads of one worker process (a LocalCluster with processes=False) take turns, building and
# evaluating. Python's lock would serialise them anyway; processes run in parallel.
ONE_AT_A_TIME = threading.RLock()


def _refusal(exc: BaseException) -> dict[str, Any]:
    accel = isinstance(exc, AccelkitError)
    message = exc.message if isinstance(exc, AccelkitError) else str(exc)
    return {"status": "refused" if accel else "error", "error": type(exc).__name__,
            "message": message.strip().splitlines()[0] if message.strip() else type(exc).__name__,
            "fix": exc.fix if isinstance(exc, AccelkitError) else None}


def _compiled_row(built: Built, config: dict[str, Any]) -> dict[str, Any]:
    prog = compile_program(built.model, built.inputs, **call_kwargs(config, "compile"))  # type: ignore[arg-type]
    r = prog.report
    bound = max(r.bound_by, key=r.bound_by.__getitem__) if r.bound_by else None
    return {"status": "ok", "step_time_s": r.step_time_s, "time_per_sample_s": r.step_time_s / r.batch_size,
            "throughput": r.throughput, "tokens_per_s": r.tokens_per_s, "exec_mode": r.mode,
            "parallel": prog.parallel.split(), "data": prog.parallel.data, "tensor": prog.parallel.tensor,
            "pipeline": prog.parallel.pipeline, "chips_used": r.chips, "bound_by": bound,
            "memory_per_chip_bytes": prog.memory_plan.total_bytes, "family": r.family}


def _served_row(built: Built, config: dict[str, Any]) -> dict[str, Any]:
    est = serve(built.model, **call_kwargs(config, "serve"))  # type: ignore[arg-type]
    return {"status": "ok", "step_time_s": est.latency_s, "time_per_sample_s": est.latency_s / est.batch,
            "throughput": est.batch / est.latency_s, "tokens_per_s": est.tokens_per_s, "ttft_s": est.ttft_s,
            "tpot_s": est.tpot_s, "exec_mode": est.mode, "parallel": est.parallel.split(),
            "data": est.parallel.data, "tensor": est.parallel.tensor, "pipeline": est.parallel.pipeline,
            "chips_used": est.chips, "bound_by": est.decode_bound,
            "memory_per_chip_bytes": est.weights_bytes_per_chip + est.kv_cache_bytes // max(1, est.chips)}


def evaluate(config: dict[str, Any], kind: str, built: Built, worker: str = "local") -> dict[str, Any]:
    """The row of one configuration: its settings, then what the model says (``status`` ``"ok"``), or the
    accelkit error that refused it (``"refused"``: its class, message and fix) or any other exception
    (``"error"``). Never raises for the configuration's sake."""
    with ONE_AT_A_TIME:
        return _evaluate(config, kind, built, worker)


def _evaluate(config: dict[str, Any], kind: str, built: Built, worker: str) -> dict[str, Any]:
    row: dict[str, Any] = {**config, "target": target_name(config["target"]), "kind": kind, "worker": worker,
                           "capture_s": 0.0}
    t0 = time.perf_counter()
    try:
        if built.error is not None:
            raise built.error
        if kind == "compile":
            error, row["capture_s"] = built.capture(bool(config.get("training", False)))
            if error is not None:
                raise error
            t0 = time.perf_counter()
            row.update(_compiled_row(built, config))
        else:
            row.update(_served_row(built, config))
    except Exception as exc:  # a refusal is a row, never an aborted sweep
        row.update(_refusal(exc))
    row["eval_s"] = time.perf_counter() - t0
    return row


__all__ = ["MODEL_CACHE", "ONE_AT_A_TIME", "RESULT_COLUMNS", "Built", "ModelCache", "build", "evaluate"]
