"""accelkit's performance model against published results: each case's error, and the two goals
(median |error| <= 15%, every case within 1.5x); the vendors' small models, the published GPU-like rows
(NVIDIA's DeepLearningExamples tables, Intel's Gaudi pages) and the dataflow chips' published training runs (ALCF's
CS-3), each table with its own median; then every
LLM-Inference-Bench configuration of the systems accelkit has, per system (median |error| <= 15%, every row
within 1.5x). Runs ``accelkit.sim.validate.validate()`` (~3 min)."""

from __future__ import annotations

import statistics

from accelkit.sim import bench
from accelkit.sim.validate import GOAL_MAX_RATIO, GOAL_MEDIAN_ABS_ERROR, validate


def run() -> list[dict]:
    result = validate(progress=False, gpu=False)  # the H100 timings: bench_gpu_measured.py
    rows: list[dict] = [
        {"name": f"error {r.case}", "value": round(100 * r.error, 1), "unit": "%",
         "goal": f"within {GOAL_MAX_RATIO:g}x", "ok": r.ratio <= GOAL_MAX_RATIO}
        for r in result.rows
    ]
    rows += [
        {"name": "median |error|", "value": round(100 * result.median_abs_error, 1), "unit": "%",
         "goal": f"<= {GOAL_MEDIAN_ABS_ERROR:.0%}", "ok": result.median_abs_error <= GOAL_MEDIAN_ABS_ERROR},
        {"name": "worst case, max(pred/pub, pub/pred)", "value": round(result.max_ratio, 3), "unit": "x",
         "goal": f"<= {GOAL_MAX_RATIO:g}x", "ok": result.max_ratio <= GOAL_MAX_RATIO},
    ]
    rows += [{"name": f"informational {r.case}: published / predicted", "value": round(r.gap, 2), "unit": "x",
              "goal": "", "ok": None} for r in result.informational]
    # the vendors' small models and the published GPU-like rows: each table with its own median (goal 15%)
    for label, table in (("small model", result.small), ("GPU-like", result.gpu_like),
                         ("dataflow training", result.dataflow_training)):
        rows += [{"name": f"{label} {r.case} ({r.stack})" + (f" (sets {r.sets}: not counted)" if r.sets else ""),
                  "value": round(100 * r.error, 1), "unit": "%",
                  "goal": "" if r.sets else f"within {GOAL_MAX_RATIO:g}x",
                  "ok": None if r.sets else r.ratio <= GOAL_MAX_RATIO} for r in table]
        counted = [r for r in table if not r.sets]  # a row whose figure set a constant does not check the model
        if counted:
            med = statistics.median(abs(r.error) for r in counted)
            rows.append({"name": f"{label} rows ({len(counted)}): median |error|", "value": round(100 * med, 1),
                         "unit": "%", "goal": f"<= {GOAL_MEDIAN_ABS_ERROR:.0%}", "ok": med <= GOAL_MEDIAN_ABS_ERROR})
    if result.bench is not None:
        print(result.bench.table(worst=10))
        for s in result.bench.per_system():
            rows += [{"name": f"measured rows {s.label} ({s.rows}): median |error|",
                      "value": round(100 * s.median_abs_error, 1), "unit": "%",
                      "goal": f"<= {bench.GOAL_MEDIAN_ABS_ERROR:.0%}", "ok": s.median_abs_error <= bench.GOAL_MEDIAN_ABS_ERROR},
                     {"name": f"measured rows {s.label}: within {bench.GOAL_MAX_RATIO:g}x", "value": round(100 * s.within, 1),
                      "unit": "%", "goal": "100%", "ok": s.within >= 1.0}]
        b = result.bench
        rows += [{"name": f"measured rows, counted {len(b.counted)} of {len(b.rows)}: median |error|", "value": round(100 * b.median_abs_error, 1),
                  "unit": "%", "goal": f"<= {bench.GOAL_MEDIAN_ABS_ERROR:.0%}",
                  "ok": b.median_abs_error <= bench.GOAL_MEDIAN_ABS_ERROR},
                 {"name": "measured rows, worst max(pred/meas, meas/pred)", "value": round(b.max_ratio, 2), "unit": "x",
                  "goal": f"<= {bench.GOAL_MAX_RATIO:g}x", "ok": b.max_ratio <= bench.GOAL_MAX_RATIO}]
    rows.append({"name": "validate() wall time", "value": round(result.seconds, 1), "unit": "s", "goal": "",
                 "ok": None})
    return rows
