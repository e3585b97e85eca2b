"""What composes the others across a design space: ``ak.sweep`` over models x targets x settings, on Dask.

    grid     the models, targets and settings a sweep covers, validated before anything starts
    evaluate one configuration on a worker (its model built and captured once there): a row
    sweep    the Dask side: a LocalCluster or your cluster, chunks, progress, Ctrl-C; Parquet in and out

Dask, pandas and pyarrow are imported when a sweep runs, not with accelkit.
"""

from __future__ import annotations

from accelkit.workflow.sweep import SCHEDULER_ENV, SweepError, load_sweep, save_sweep, sweep

__all__ = ["SCHEDULER_ENV", "SweepError", "load_sweep", "save_sweep", "sweep"]
