"""The capstone: the learner's model from each kind of name, the checks each step records, and notebook 09
run (with papermill parameters) on two models that are not in the zoo, shipped in examples/models."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch import nn

from accelkit.cli import UsageError
from accelkit.teach.capstone import Capstone, default_labels, default_loss, load_model

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "examples" / "models"
NOTEBOOK = ROOT / "notebooks" / "09_port_your_own_model.ipynb"


class Pasted(nn.Module):  # what a learner pastes in the notebook
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def test_load_model_from_each_kind_of_name():
    model, inputs = load_model("lstm_tagger:make", path=MODELS)
    assert type(model).__name__ == "LSTMTagger" and inputs[0].shape == (4, 16)
    model, inputs = load_model("ffn_logreg")  # a bare zoo name
    assert type(model).__name__ == "FFNLogReg" and len(inputs) >= 1
    model, inputs = load_model(Pasted, torch.randn(8, 16))
    assert isinstance(model, Pasted) and inputs[0].shape == (8, 16)
    with pytest.raises(UsageError, match="without example inputs"):
        load_model(Pasted())
    with pytest.raises(UsageError, match="cannot import"):
        load_model("no_such_module_here:make")
    with pytest.raises(UsageError, match="cannot make a model from a int"):
        load_model(3)


def test_default_loss_fits_a_tagger_and_a_classifier():
    tagger, (ids,) = load_model("lstm_tagger:make", path=MODELS)
    labels = default_labels(tagger, (ids,))
    assert labels.shape == ids.shape and default_loss(tagger(ids), labels).ndim == 0


def test_steps_record_checks_and_a_failing_step_says_why():
    cap = Capstone.load(Pasted, (torch.randn(8, 16),))
    cap.check(["a100", "h100"])
    cap.compile()
    failed = [line for step, line in cap.checks if not line.ok]
    assert [line.text for line in failed] == ["1 architecture families: gpu"]
    assert "three different families" in failed[0].hint
    assert not cap.passed and "1 of 3 checks failed" in cap.summary()
    run = cap.train("a100", steps=4, lr=0.1)
    assert run.losses[-1] < run.losses[0] and "MODELLED" in str(run.report)


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize(("params", "name", "ported"), [
    # the notebook's default model: its one run in make test, shared with its golden cells and the browser test
    ({}, "LSTMTagger", True),  # the fused LSTM is unrolled, int64 ids narrowed
    ({"model": "vit_tiny:make", "steps": 3}, "TinyViT", False),  # exact GELU, LayerNorm, attention: tsp takes it
], ids=["lstm_tagger", "vit_tiny"])
def test_capstone_notebook_on_a_model_outside_the_zoo(params, name, ported, tmp_path_factory):
    from notebook_runs import RUNS, executed, output_text, runs_dir

    text = output_text(executed("09", {**RUNS["09"], **params}, runs_dir(tmp_path_factory)))
    assert re.search(rf"CAPSTONE {name}: all \d+ checks passed", text), text[-2000:]
    assert "Exercise 09.three_families" in text and "Solved (with the shipped solution)." in text
    assert ("port: [PASS] tsp:" in text) == ported and "MODELLED" in text
