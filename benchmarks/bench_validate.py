"""accelkit's performance model against published results: each case's error, and the two goals
(median |error| <= 25%, every case within 2x). Runs ``accelkit.sim.validate.validate()`` (~30 s)."""

from __future__ import annotations

from accelkit.sim.validate import GOAL_MAX_RATIO, GOAL_MEDIAN_ABS_ERROR, validate


def run() -> list[dict]:
    result = validate(progress=False)
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
    rows.append({"name": "validate() wall time", "value": round(result.seconds, 1), "unit": "s", "goal": "",
                 "ok": None})
    return rows
