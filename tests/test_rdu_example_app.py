"""The SambaFlow-style example app (examples/rdu_classifier_app.py) runs unchanged against accelkit.samba, as a workshop runs it:
compile, then run against the PEF, for training and for inference (and the oracle ``test`` command)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "examples" / "rdu_classifier_app.py"
LOSSES = re.compile(r"first loss (\d+\.\d+) last loss (\d+\.\d+)")

pytestmark = pytest.mark.skipif(not APP.is_file(), reason=f"the example app is not at {APP}")


def _app(cwd: Path, *args: str) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # a tiny model: one thread beats two on a busy machine
    proc = subprocess.run([sys.executable, str(APP), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _losses(out: str) -> tuple[float, float]:
    m = LOSSES.search(out)
    assert m, out
    return float(m.group(1)), float(m.group(2))


def test_training_app_compiles_then_runs_and_its_loss_falls(tmp_path):
    out = _app(tmp_path, "compile", "-b", "32", "-mb", "4", "-p", "out/classifier.pef")
    assert "micro-batches of 4" in out and (tmp_path / "out/classifier.pef/manifest.json").is_file()
    out = _app(tmp_path, "run", "-b", "32", "-mb", "4", "-p", "out/classifier.pef")
    first, last = _losses(out)
    assert last < first
    assert "MODELLED on sn40l" in out and "192 steps" in out
    out = _app(tmp_path, "test", "-b", "32", "-mb", "4", "-p", "out/classifier.pef")
    assert "(the oracle)" in out and "-> PASS" in out


def test_inference_app_compiles_then_runs(tmp_path):
    out = _app(tmp_path, "compile", "-b", "32", "--inference", "-p", "out/classifier_inf.pef")
    assert "inference" in out
    out = _app(tmp_path, "run", "-b", "32", "--inference", "-p", "out/classifier_inf.pef")
    _losses(out)  # forward only: the loss is reported, the weights do not move
    assert "MODELLED on sn40l" in out and "bckwd" not in out
