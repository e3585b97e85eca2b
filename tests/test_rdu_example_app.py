"""The SambaFlow-style example app (examples/rdu_classifier_app.py) runs unchanged against accelkit.samba, as a workshop runs it:
compile, then run against the PEF. For inference here; for training (compile, run, and the oracle ``test``
command) notebook 10 runs it, and test_bridge.py checks what that run printed."""

from __future__ import annotations

import os
import re
import runpy
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


def test_inference_app_compiles_then_runs(tmp_path, monkeypatch, capsys):
    # the compile in this process (as `python app.py compile ...` runs it: its __main__, its argv), the run as its own
    # program: one interpreter start, not two
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(APP), "compile", "-b", "32", "--inference", "-p", "out/classifier_inf.pef"])
    runpy.run_path(str(APP), run_name="__main__")
    out = capsys.readouterr().out
    assert "inference" in out and (tmp_path / "out" / "classifier_inf.pef" / "manifest.json").is_file()
    out = _app(tmp_path, "run", "-b", "32", "--inference", "-p", "out/classifier_inf.pef")
    _losses(out)  # forward only: the loss is reported, the weights do not move
    assert "MODELLED on sn40l" in out and "bckwd" not in out
