"""Graphcore's PopVision tutorials on the simulated IPU: ``libpvti`` trace points, series and heatmaps written under
``PVTI_OPTIONS``, read back with ``pva.openTrace``; a Python process a vendor script starts runs through the
launcher too (the tutorials' walkthroughs run ``subprocess.run(["python3", "poptorch_mnist.py"])``); a script that
splits a dataset by the real set's counts gets a stand-in of that size.

The scripts here are written for the tests, in the shape of the tutorials (nothing in them names accelkit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelkit.facades.poptorch import pvti

INSTRUMENTED = '''
import libpvti as pvti
import time
channel = pvti.createTraceChannel("Tutorial")
events = pvti.createTraceChannel("Instant Events")
loss = pvti.Graph("Loss", "").addSeries("Training Loss")
heat = pvti.HeatmapDouble("weights", [-1.0, 0.0, 1.0], "x")
for epoch in range(2):
    pvti.Tracepoint.event(events, f"Epoch {epoch} begin")
    with pvti.Tracepoint(channel, f"Epoch:{epoch}"):
        with pvti.Tracepoint(channel, "train"):
            time.sleep(0.01)
            loss.add(1.0 / (epoch + 1))
        with pvti.Tracepoint(channel, "validate"):
            time.sleep(0.005)
    heat.add([-2.0, -0.5, 0.5, 0.5, 3.0])
print("done")
'''


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, name: str = "script.py") -> tuple[int, str]:
    from accelkit.vendor import run_script

    (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    run = run_script(tmp_path / name, [], synthetic_data=True, quiet=True)
    return run.exit_code, (run.output or "") + (run.error or "")


def test_trace_points_series_and_heatmaps_are_written_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("PVTI_OPTIONS", json.dumps({"enable": "true", "directory": "reports"}))
    code, out = _run(tmp_path, monkeypatch, INSTRUMENTED)
    assert code == 0, out
    files = list((tmp_path / "reports").glob("*.pvti"))
    assert len(files) == 1 and files[0].name.endswith(f"_{os.getpid()}.pvti")
    assert f"PVTI trace -> reports/{files[0].name}" in out
    trace = pvti.openTrace(files[0])
    (process,) = trace.processes
    (thread,) = process.threads
    assert [e.label for e in thread.events] == ["Epoch 0 begin", "Epoch:0", "Epoch 1 begin", "Epoch:1"]
    epoch = thread.events[1]
    assert [c.label for c in epoch.children()] == ["train", "validate"]
    train, validate = epoch.children()
    assert train.duration >= 10_000 and validate.duration >= 5_000  # microseconds, measured on this host
    assert epoch.duration >= train.duration + validate.duration and thread.events[0].duration == 0
    assert [v for _, v in trace.series[("Loss", "Training Loss")]] == [1.0, 0.5]
    assert [c for _, c in trace.heatmaps["weights"]] == [[1, 1, 2, 1]] * 2  # below -1, [-1, 0), [0, 1), 1 and above


def test_nothing_is_written_unless_pvti_options_enable_it(tmp_path, monkeypatch):
    monkeypatch.delenv("PVTI_OPTIONS", raising=False)
    code, out = _run(tmp_path, monkeypatch, INSTRUMENTED)
    assert code == 0 and "done" in out
    assert not list(tmp_path.rglob("*.pvti")) and "PVTI trace" not in out
    monkeypatch.setenv("PVTI_OPTIONS", "{enable: true}")
    code, out = _run(tmp_path, monkeypatch, INSTRUMENTED)
    assert code == 1 and "PVTI_OPTIONS is not JSON" in out


def test_open_trace_refuses_what_it_cannot_read(tmp_path):
    foreign = tmp_path / "sdk.pvti"
    foreign.write_bytes(b"SQLite format 3\x00" + bytes(100))
    with pytest.raises(pvti.PvtiError, match="not a trace written by accelkit's libpvti"):
        pvti.openTrace(foreign)
    cut = tmp_path / "cut.pvti"
    cut.write_text(json.dumps({"format": pvti.FORMAT, "version": pvti.VERSION}) + '\n{"kind": "ev')
    with pytest.raises(pvti.PvtiError, match="line 2: not a JSON record"):
        pvti.openTrace(cut)
    with pytest.raises(pvti.PvtiError, match="cannot read the trace"):
        pvti.openTrace(tmp_path / "missing.pvti")
    with pytest.raises(pvti.PvtiError, match="Poplar profile"):
        pvti.openReport("profile.pop")


CHILD = '''
import torch
import poptorch
model = torch.nn.Linear(4, 2)
class WithLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = model
    def forward(self, x, y):
        out = self.model(x)
        return out, torch.nn.functional.mse_loss(out, y)
opts = poptorch.Options()
training = poptorch.trainingModel(WithLoss(), opts, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.1))
_, loss = training(torch.ones(8, 4), torch.zeros(8, 2))
print("child loss", round(float(loss), 4))
'''

PARENT = '''
import subprocess, sys
out = subprocess.run([sys.executable, "child.py"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
print(out.stdout.decode())
print("child exit", out.returncode)
'''


def test_a_python_process_the_script_starts_runs_through_the_launcher(tmp_path, monkeypatch):
    from accelkit.vendor import run_script

    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "parent.py").write_text(PARENT)
    monkeypatch.chdir(tmp_path)
    before = os.environ.get("PYTHONPATH")
    run = run_script(tmp_path / "parent.py", [], synthetic_data=True, quiet=True)
    out = run.output or ""
    assert run.exit_code == 0, run.error
    assert "child loss" in out and "child exit 0" in out
    # the child's summary is the parent run's to print: the child's own output (which a parent may parse, as
    # Graphcore's available-memory sweep parses its last line) stays the script's
    assert "MODELLED on gc200 running poptorch" not in out
    (child,) = run.children
    assert "child.py finished" in child and "MODELLED on gc200 running poptorch" in child
    assert "a Python process it started" in run.summary()
    assert os.environ.get("PYTHONPATH") == before and "ACCELKIT_VENDOR_CHILD" not in os.environ
    plain = subprocess.run([sys.executable, "child.py"], cwd=tmp_path, capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert plain.returncode != 0 and "No module named 'poptorch'" in plain.stderr  # outside the launcher


def test_a_split_by_the_real_sets_counts_gets_a_stand_in_of_that_size(tmp_path, monkeypatch):
    code, out = _run(tmp_path, monkeypatch, '''
import torch, torchvision
train = torchvision.datasets.FashionMNIST("data", train=True, download=True)
a, b = torch.utils.data.random_split(train, [50000, 10000], generator=torch.Generator().manual_seed(1))
print("split", len(a), len(b))
small = torchvision.datasets.MNIST("data", train=False, download=True)
c, d = torch.utils.data.random_split(small, [0.8, 0.2])
print("fractions", len(c), len(d))
''')
    assert code == 0, out
    assert "split 50000 10000" in out and "fractions 400 100" in out
    assert "random_split asks for 50000 + 10000 = 60000 samples" in out
