"""Re-estimating an already-captured model is cheap: ``ak.compile(...).report`` on GPT-2 small's cached
graph for another target, precision, chip count and batch size, and ``ak.serve`` on Llama-3-8B (meta device) for
another target, batch or chip count (goal: <= 50 ms each, median of 10)."""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch

import accelkit as ak

GOAL_S = 0.050
REPEATS = 10
CHANGES: dict[str, dict[str, Any]] = {
    "another target (sn40l)": {"target": "sn40l"},
    "another precision (a100 fp32)": {"target": "a100", "precision": "fp32"},
    "another chip count (a100 x 8)": {"target": "a100", "chips": 8},
    "another batch size (a100, 64)": {"target": "a100", "batch_size": 64},
    "all four at once (h100 fp16 x 4, batch 16)": {"target": "h100", "precision": "fp16", "chips": 4,
                                                   "batch_size": 16},
}


def _gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    with torch.device("meta"):
        return GPT2LMHeadModel(GPT2Config(use_cache=False)).eval()


SERVE_CHANGES: dict[str, dict[str, Any]] = {
    "serve: another target (sn40l x 8)": {"target": "sn40l", "chips": 8},
    "serve: another batch (h100, 32)": {"target": "h100", "batch": 32},
    "serve: another chip count (wse3 x 2)": {"target": "wse3", "chips": 2},
}


def _median_s(call: Any) -> float:
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _serve_rows() -> list[dict]:
    from accelkit.sim.validate import MODELS

    llama = MODELS["llama3-8b"]()
    base = {"prompt_tokens": 128, "output_tokens": 128}
    t0 = time.perf_counter()
    ak.serve(llama, target="h100", **base)  # captures prefill and decode once
    rows: list[dict] = [{"name": "serve: first prediction (includes capture)", "value": round(time.perf_counter() - t0, 2),
                         "unit": "s", "goal": "", "ok": None}]
    for name, kwargs in SERVE_CHANGES.items():
        median = _median_s(lambda kwargs=kwargs: ak.serve(llama, **base, **kwargs))
        rows.append({"name": name, "value": round(median * 1e3, 2), "unit": "ms", "goal": f"<= {GOAL_S * 1e3:.0f} ms",
                     "ok": median <= GOAL_S})
    return rows


def run() -> list[dict]:
    model = _gpt2()
    inputs = (torch.zeros(1, 128, dtype=torch.long, device="meta"),)
    t0 = time.perf_counter()
    assert ak.compile(model, inputs, target="a100").report.step_time_s > 0  # captures the graph once
    first = time.perf_counter() - t0
    rows: list[dict] = [{"name": "first compile + estimate (includes capture)", "value": round(first, 3),
                         "unit": "s", "goal": "", "ok": None}]
    for name, kwargs in CHANGES.items():
        times = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            report = ak.compile(model, inputs, **kwargs).report
            times.append(time.perf_counter() - t0)
            assert report.step_time_s > 0
        median = statistics.median(times)
        rows.append({"name": f"re-estimate: {name}", "value": round(median * 1e3, 2), "unit": "ms",
                     "goal": f"<= {GOAL_S * 1e3:.0f} ms", "ok": median <= GOAL_S})
    return rows + _serve_rows()
