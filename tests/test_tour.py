"""``make tour``: the whole workflow headless. It trains on a training target, infers on the TSP through
GroqFlow (an inference flow), and reports accuracy on samples it never trained on."""

from __future__ import annotations

import re

import pytest

from accelkit import tour


def test_tour_trains_then_infers_on_the_tsp_and_reports_held_out_accuracy(capsys: pytest.CaptureFixture[str]) -> None:
    assert tour.main(["--epochs", "2"]) == 0
    out = capsys.readouterr().out
    assert "trained on sn40l" in out  # GroqFlow is an inference flow: no training on the TSP
    m = re.search(r"inference \(GroqFlow on (\d+) x tsp\): held-out accuracy ([\d.]+)% on 256 samples it never "
                  r"trained on", out)
    assert m is not None, out[-800:]
    assert float(m.group(2)) > 30  # well above chance (10%): the model learned the toy task
    assert "on the training batch" not in out
    assert "usable of 231 MB" in out  # one number for the TSP's SRAM, and the share the compiler uses


def test_toy_task_held_out_set_differs_from_the_training_set() -> None:
    (a, _), (b, _) = tour._toy_task(8, seed=1), tour._toy_task(8, seed=2)
    assert not (a == b).all()
