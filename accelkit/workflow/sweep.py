"""``ak.sweep``: every combination of models x targets x settings, modelled on Dask, one DataFrame row each.

    df = ak.sweep({n: ak.zoo.get(n) for n in ak.zoo.names()}, ak.hardware.names(host=False),
                  batch=[1, 8, 64], precision=["bf16", "fp16"], chips=[1, 8], training=[False, True])
    df[df.status == "ok"].groupby("target").time_per_sample_s.min()     # modelled, per chip
    save_sweep(df, "out/space.parquet"); df = load_sweep("out/space.parquet")

Where it runs: a ``dask.distributed.LocalCluster`` sized to this machine, started and closed by the call
(``workers=`` and ``processes=`` size it); ``client=`` (a ``dask.distributed.Client``) or the environment
variable ``ACCELKIT_DASK_SCHEDULER=tcp://host:port`` runs the same sweep on a cluster you already have (a
``dask scheduler`` with ``dask worker`` processes, or ``dask-jobqueue``'s ``PBSCluster`` / ``SLURMCluster``).
The configurations of one model go out in chunks; each worker builds and captures a model once and compiles
that frozen graph for each of its configurations (:mod:`accelkit.workflow.evaluate`). A configuration that is
refused (a ``ModeError``, a precision the chip lacks) is a row with the error's class, message and fix.

Every time in the result is modelled (``step_time_s``, ``throughput``...), except ``capture_s`` and
``eval_s``: the seconds accelkit itself took on its worker, measured.
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accelkit._version import __version__
from accelkit.boundary import got, path, whole
from accelkit.errors import AccelkitError, ArgumentError
from accelkit.workflow.evaluate import MODEL_CACHE, RESULT_COLUMNS, evaluate
from accelkit.workflow.grid import Plan, expand

if TYPE_CHECKING:
    import pandas as pd

SCHEDULER_ENV = "ACCELKIT_DASK_SCHEDULER"
CHUNKS_PER_WORKER = 4  # chunks each worker gets per model: enough to balance, few enough to keep overhead low
CONNECT_TIMEOUT_S = 10.0  # how long a scheduler named by address has to answer
MAX_CHUNK = 64  # configurations per task at most (a progress bar that moves; a cancel that lands quickly)


class SweepError(AccelkitError, RuntimeError):
    """A sweep that cannot run at all: no Dask installed, a scheduler that does not answer, a model that
    cannot be sent to the workers, a file that is not a saved sweep. (A configuration's own refusal is a row.)"""


def _dask() -> Any:
    try:
        import distributed
    except ImportError:  # pragma: no cover - distributed is a dependency of accelkit
        raise SweepError("ak.sweep runs on Dask, and dask.distributed is not installed",
                         fix="pip install 'dask[distributed]' (make setup installs it)") from None
    return distributed


def _run_chunk(key: str, item: Any, kind: str, chunk: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict]]:
    """A task on a worker: the rows of a chunk of one model's configurations (the model built and captured once
    per worker, in :data:`~accelkit.workflow.evaluate.MODEL_CACHE`)."""
    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):  # pragma: no cover - run outside a worker
        worker = "local"
    built = MODEL_CACHE.get(key, item)
    return [(i, evaluate(config, kind, built, worker)) for i, config in chunk]


@contextmanager
def _client(client: Any, workers: int | None, processes: bool) -> Iterator[Any]:
    """The client to run on, and whether this call owns it (then it is closed, with its cluster, on the way out)."""
    distributed = _dask()
    if client is not None:
        if not isinstance(client, distributed.Client):
            raise ArgumentError(f"client must be a dask.distributed.Client, not {got(client)}",
                                fix="client=dask.distributed.Client('tcp://host:8786'), or leave it out "
                                    "(a LocalCluster on this machine)")
        yield client
        return
    address = os.environ.get(SCHEDULER_ENV, "").strip()
    if address:
        try:
            own = distributed.Client(address, timeout=f"{CONNECT_TIMEOUT_S}s")
        except (OSError, TimeoutError) as exc:
            raise SweepError(f"no Dask scheduler answers at {address} ({SCHEDULER_ENV}): {exc}",
                             fix=f"start one (`dask scheduler`, then `dask worker {address}`), or unset "
                                 f"{SCHEDULER_ENV} to run on this machine") from None
        try:
            yield own
        finally:
            own.close()
        return
    import logging

    n = workers or max(1, os.cpu_count() or 1)
    # no dashboard; the scheduler's own HTTP server on any free port (not 8787, which another cluster may hold)
    cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=processes,
                                       dashboard_address=None, silence_logs=logging.ERROR,
                                       scheduler_kwargs={"dashboard_address": ":0"})
    own = distributed.Client(cluster)
    try:
        yield own
    finally:
        own.close()
        cluster.close()


def _chunks(plan: Plan, workers: int) -> list[tuple[str, list[tuple[int, dict[str, Any]]]]]:
    """The configurations grouped by model and cut in chunks, each chunk one task."""
    by_model: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, config in enumerate(plan.configs):
        by_model.setdefault(config["model"], []).append((i, config))
    out = []
    for name, items in by_model.items():
        size = max(1, min(MAX_CHUNK, math.ceil(len(items) / (workers * CHUNKS_PER_WORKER))))
        out += [(name, items[j:j + size]) for j in range(0, len(items), size)]
    return out


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="sweep", unit="config")


def sweep(models: Any, targets: Any, *, client: Any = None, workers: int | None = None, processes: bool = True,
          progress: bool = True, **grid: Any) -> pd.DataFrame:
    """Model every combination of ``models`` x ``targets`` x ``grid`` on Dask; one row per configuration.

    ``models``: a dict name -> model, where a model is ``(nn.Module, example_inputs)``, an ``ak.zoo`` entry
    (``ak.zoo.get("braggnn")``), a function of no arguments returning either (called on each worker: the way to
    send a large model), a captured ``ak.Graph`` (sent as it is: the workers compile it and capture nothing),
    or, for serving, a bare causal LM module. ``targets``: chip names (or loaded specs).
    ``grid``: keyword arguments of ``ak.compile`` (``batch``, ``chips``, ``precision``, ``mode``, ``training``,
    ``micro_batch``, ``parallel``, ...) each a list of values or one value; with ``prompt_tokens`` and
    ``output_tokens`` every configuration is served with ``ak.serve`` instead. A bad grid is an error before
    anything starts; a refused configuration is a row (``status`` ``"refused"``, ``error``, ``message``, ``fix``).

    Runs on ``client`` when given, else on the scheduler named by ``$ACCELKIT_DASK_SCHEDULER``, else on a
    ``LocalCluster`` of ``workers`` (default: one per core) single-threaded workers (``processes=False``: threads
    of this process, quick to start, one at a time under Python's lock) started and closed by this call. Ctrl-C
    cancels what is left and closes the cluster the call started.
    """
    plan = expand(models, targets, **grid)
    if workers is not None:
        whole("workers", workers, example="workers=2")
    import pandas as pd

    rows: list[dict[str, Any] | None] = [None] * len(plan.configs)
    token = uuid.uuid4().hex[:8]
    with _client(client, workers, processes) as c:
        distributed = _dask()
        n_workers = max(1, len(c.scheduler_info().get("workers", {})) or (workers or 1))
        try:
            items = {name: c.scatter(item, hash=False) for name, item in plan.models.items()}
        except Exception as exc:  # pickling a model a worker cannot rebuild
            raise SweepError(f"a model could not be sent to the Dask workers: {type(exc).__name__}: {exc}",
                             fix="pass a function that builds the model (models={'m': make_model}, defined in an "
                                 "importable module): each worker calls it once") from None
        futures = [c.submit(_run_chunk, f"{name}@{token}", items[name], plan.kind, chunk, pure=False)
                   for name, chunk in _chunks(plan, n_workers)]
        bar = _progress(len(plan.configs), progress)
        try:
            for future in distributed.as_completed(futures):
                done = future.result()
                for i, row in done:
                    rows[i] = row
                if bar is not None:
                    bar.update(len(done))
        except KeyboardInterrupt:
            c.cancel(futures)
            raise
        finally:
            if bar is not None:
                bar.close()
            c.cancel(list(items.values()))
    return _frame(pd, plan, [r for r in rows if r is not None])


def _frame(pd: Any, plan: Plan, rows: list[dict[str, Any]]) -> pd.DataFrame:
    columns = ["model", "target", "kind", *plan.grid, *RESULT_COLUMNS]
    df = pd.DataFrame.from_records(rows, columns=columns)
    df.attrs["accelkit_sweep"] = {"version": __version__, "kind": plan.kind, "grid": {k: [repr(v) for v in vals]
                                                                                     for k, vals in plan.grid.items()}}
    return df


def save_sweep(df: pd.DataFrame, file: str | os.PathLike[str]) -> Path:
    """Write a sweep's DataFrame to Parquet (settings that are objects, such as an ``ak.Parallel``, as text)."""
    out = path("file", file, example="save_sweep(df, 'out/space.parquet')")
    if "accelkit_sweep" not in df.attrs or "status" not in df.columns:
        raise ArgumentError("save_sweep saves the DataFrame ak.sweep returned; this one has no sweep columns",
                            fix="df = ak.sweep(...); save_sweep(df, 'out/space.parquet')")
    out.parent.mkdir(parents=True, exist_ok=True)
    copy = df.copy()
    for col in copy.columns:
        if copy[col].dtype == object and not all(v is None or isinstance(v, str) for v in copy[col]):
            copy[col] = [None if v is None else str(v) for v in copy[col]]
    copy.to_parquet(out, index=False)
    return out


def load_sweep(file: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a sweep saved with :func:`save_sweep` (a missing file or another Parquet table is a ``SweepError``)."""
    src = path("file", file, example="load_sweep('out/space.parquet')")
    import pandas as pd

    if not src.is_file():
        raise SweepError(f"no saved sweep at {src}", fix="save one first: save_sweep(ak.sweep(...), path)")
    try:
        df = pd.read_parquet(src)
    except Exception as exc:
        raise SweepError(f"{src} is not a Parquet file: {exc}", fix="load a file written by save_sweep") from None
    if "status" not in df.columns or "model" not in df.columns:
        raise SweepError(f"{src} is a Parquet table but not a saved sweep (no model/status columns)",
                         fix="load a file written by save_sweep")
    return df


__all__ = ["SCHEDULER_ENV", "SweepError", "load_sweep", "save_sweep", "sweep"]
