"""accelkit's GPU model against timings measured on real GPUs (``accelkit.sim.measured``).

First the 49 H100 timings the model is checked against (GEMMs, eager training and inference of GPT-2, BERT-base
and ResNet-50, Llama-3-8B prefill), with the goals (median |error| <= 10%, every row within 1.5x). Then the
"unseen" rows: models, sizes, the torch.compile stack and a GPU (an H200) that no constant was checked against,
reported with no goal of their own: they show how far the model holds beyond the rows it was built on. Then the
"kinds" rows: depthwise and windowed networks, an encoder-decoder and fp32 without autocast, on a third H100 whose
host was slow (its host-bound rows shown apart). About 4 minutes."""

from __future__ import annotations

from accelkit.sim.measured import GOAL_MAX_RATIO, GOAL_MEDIAN_ABS_ERROR, validate_measured


def run() -> list[dict]:
    result = validate_measured()
    print(result.table())
    rows: list[dict] = [
        {"name": f"H100 measured {r.case} ({r.stack}): error", "value": round(100 * r.error, 1), "unit": "%",
         "goal": f"within {GOAL_MAX_RATIO:g}x", "ok": r.ratio <= GOAL_MAX_RATIO}
        for r in result.rows
    ]
    rows += [{"name": f"H100 measured {w} ({n} rows): median |error|", "value": round(100 * med, 1), "unit": "%",
              "goal": "", "ok": None} for w, (n, med, _worst) in result.per_workload.items()]
    rows += [
        {"name": "H100 measured rows: median |error|", "value": round(100 * result.median_abs_error, 1),
         "unit": "%", "goal": f"<= {GOAL_MEDIAN_ABS_ERROR:.0%}", "ok": result.median_abs_error <= GOAL_MEDIAN_ABS_ERROR},
        {"name": "H100 measured rows: worst max(modelled/measured, measured/modelled)",
         "value": round(result.max_ratio, 3), "unit": "x", "goal": f"<= {GOAL_MAX_RATIO:g}x",
         "ok": result.max_ratio <= GOAL_MAX_RATIO},
    ]
    unseen = validate_measured(file="unseen")
    print()
    print(unseen.table())
    rows += [{"name": f"unseen measured {w} ({n} rows): median |error|", "value": round(100 * med, 1), "unit": "%",
              "goal": "", "ok": None} for w, (n, med, _worst) in unseen.per_workload.items()]
    rows += [{"name": "unseen measured rows (H100 and H200): median |error|",
              "value": round(100 * unseen.median_abs_error, 1), "unit": "%", "goal": "", "ok": None},
             {"name": "unseen measured rows: worst max(modelled/measured, measured/modelled)",
              "value": round(unseen.max_ratio, 3), "unit": "x", "goal": "", "ok": None}]
    kinds = validate_measured(file="kinds")
    print()
    print(kinds.table())
    rows += [{"name": f"new kinds measured {w} ({n} rows): median |error|", "value": round(100 * med, 1), "unit": "%",
              "goal": "", "ok": None} for w, (n, med, _worst) in kinds.per_workload.items()]
    rows += [{"name": "new kinds measured rows (H100, GPU-bound): median |error|",
              "value": round(100 * kinds.median_abs_error, 1), "unit": "%", "goal": "", "ok": None},
             {"name": "new kinds measured rows: worst max(modelled/measured, measured/modelled)",
              "value": round(kinds.max_ratio, 3), "unit": "x", "goal": "", "ok": None}]
    return rows
