"""ak.sweep over the design space: the zoo's five models x every chip x batch x precision x chip count (2,280
configurations) on a LocalCluster of one worker process, then of two. Each model is captured once, here, and its
graph sent to the workers, so what is timed is the sweep itself: compile (passes, memory plan, placement,
estimate) per configuration, plus Dask's scheduling.

Figures: the time per configuration after capture (the mean of the workers' own measured ``eval_s``; goal
<= 20 ms on one core), the wall time per configuration on one worker (Dask's overhead included), and the speed-up
from one worker to two (goal >= 1.7x on a 2-core machine; a machine shared with other work gets less: read the
load average printed beside it).
"""

from __future__ import annotations

import logging
import os
import time

import accelkit as ak

GRID = {"batch": [1, 8, 64], "precision": ["bf16", "fp16"], "chips": [1, 2, 4, 8]}
GOAL_PER_CONFIG_S = 0.020
GOAL_SPEEDUP = 1.7


def _warm() -> None:
    import accelkit  # noqa: F401 - each worker imports accelkit (and torch) before the clock starts


def _timed_sweep(models: dict, targets: list[str], workers: int) -> tuple[float, object]:
    import distributed

    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR, scheduler_kwargs={"dashboard_address": ":0"}) as cluster, \
            distributed.Client(cluster) as client:
        client.run(_warm)
        t0 = time.perf_counter()
        df = ak.sweep(models, targets, client=client, progress=False, **GRID)
        return time.perf_counter() - t0, df


def run() -> list[dict]:
    targets = ak.hardware.names(host=False)
    t0 = time.perf_counter()
    models = {}
    for name in ak.zoo.names():
        entry = ak.zoo.get(name)
        models[name] = ak.capture(entry.model, entry.example_inputs)
    capture_s = time.perf_counter() - t0
    one_s, df = _timed_sweep(models, targets, 1)
    two_s, _ = _timed_sweep(models, targets, 2)
    n = len(df)
    per_config = float(df.eval_s.mean())
    speedup = one_s / two_s
    load = os.getloadavg()[0]
    print(f"sweep: {n} configurations ({(df.status == 'ok').sum()} modelled, {(df.status != 'ok').sum()} refused); "
          f"1 worker {one_s:.1f} s, 2 workers {two_s:.1f} s (load average {load:.1f} on {os.cpu_count()} cores)")
    return [
        {"name": "sweep: configurations", "value": n, "unit": "configs", "goal": ">= 2000", "ok": n >= 2000},
        {"name": "sweep: capture of the 5 zoo models (once, on the client)", "value": round(capture_s, 2), "unit": "s"},
        {"name": "sweep: time per configuration after capture (worker's eval_s, mean)", "value": round(per_config * 1e3, 2),
         "unit": "ms", "goal": "<= 20 ms", "ok": per_config <= GOAL_PER_CONFIG_S},
        {"name": "sweep: wall per configuration, 1 worker (Dask included)", "value": round(one_s / n * 1e3, 2),
         "unit": "ms", "goal": "", "ok": None},
        {"name": f"sweep: speed-up 1 -> 2 workers (load average {load:.1f})", "value": round(speedup, 2), "unit": "x",
         "goal": ">= 1.7x", "ok": speedup >= GOAL_SPEEDUP},
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
