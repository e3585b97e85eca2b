"""``accelkit vendor-run``: programs written for the vendors' SDKs, in the shape of their first tutorials
(tests/vendor_scripts/, nothing in them names accelkit), run unchanged as subprocesses. Each runs to the end,
its loss falls, and the launcher prints the modelled time and report. Also: the vendor names never shadow
a real SDK, an error inside a vendor call names the call and the fix."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "vendor_scripts"
LOSSES = re.compile(r"first loss (\d+\.\d+) last loss (\d+\.\d+)")


def vendor_run(tmp_path: Path, script: str, *args: str, synthetic: bool = True, module: bool = False,
               ok: bool = True) -> subprocess.CompletedProcess[str]:
    """Copy ``script`` into ``tmp_path`` (apps write their PEFs beside themselves) and launch it."""
    shutil.copy(SCRIPTS / script, tmp_path / script)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GROQFLOW_CACHE_DIR": str(tmp_path / "groqflow-cache")}
    launcher = ["-m", "accelkit.vendor"] if module else ["-m", "accelkit.cli", "vendor-run"]
    cmd = [sys.executable, *launcher, *(["--synthetic-data"] if synthetic else []), script, *args]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    if ok:
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
    return proc


def falls(out: str) -> tuple[float, float]:
    m = LOSSES.search(out)
    assert m, out
    first, last = float(m.group(1)), float(m.group(2))
    assert last < 0.8 * first, out
    return first, last


# ---- SambaNova SambaFlow --------------------------------------------------------------------------
def test_sambaflow_logreg_compiles_then_trains_on_mnist(tmp_path):
    out = vendor_run(tmp_path, "samba_logreg.py", "compile", "-b", "32", "-p", "out/logreg/logreg.pef").stdout
    assert "compiled 'logreg'" in out and (tmp_path / "out/logreg/logreg.pef/manifest.json").is_file()
    assert "sambaflow.samba.utils.argparser" in out  # answered by accelkit, for this run only
    proc = vendor_run(tmp_path, "samba_logreg.py", "run", "-b", "32", "-p", "out/logreg/logreg.pef",
                      "--num-steps", "40")
    falls(proc.stdout)
    assert "Test Accuracy" in proc.stdout
    assert "SambaFlow app on out/logreg/logreg.pef" in proc.stdout and "MODELLED on sn40l" in proc.stdout
    assert "40 steps" in proc.stdout
    assert "torchvision.datasets.MNIST" in proc.stderr and "nothing downloaded" in proc.stderr


# ---- Cerebras -------------------------------------------------------------------------------------
def test_cbtorch_seed_session_with_model_optimizer_criterion_trains_then_evaluates(tmp_path):
    out = vendor_run(tmp_path, "cbtorch_seed.py", synthetic=False).stdout
    falls(out)
    assert "cerebras.framework.torch" in out
    train, evaluate = out.split("cbtorch.Session (mode='train')")[1].split("cbtorch.Session (mode='eval')")
    assert "MODELLED on wse2" in train and "32 steps" in train and "opt" in train  # each optimizer.step(): a step
    assert "16 steps" in evaluate and "bckwd" not in evaluate  # each forward under mode='eval': a step
    assert "execution mode on the CS-2" in out


def test_cstorch_loop_traces_steps_checkpoints_and_names_the_int32_label_fix(tmp_path):
    out = vendor_run(tmp_path, "cstorch_loop.py", synthetic=False).stdout
    falls(out)
    assert "checkpoint_25.mdl', 'checkpoints/checkpoint_50.mdl', 'checkpoints/checkpoint_60.mdl']" in out
    assert "last holds step 60" in out and "60 steps" in out and "MODELLED on wse2" in out
    assert "cstorch.backend(compile_dir='/tmp/compile_dir') accepted, not simulated" in out
    assert list((tmp_path / "cerebras_artifacts").glob("*.akp"))  # the compiled program, in artifact_dir

    proc = vendor_run(tmp_path, "cstorch_loop.py", "--int32-labels", synthetic=False, ok=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr  # the call, the line and the fix; not PyTorch's traceback
    assert "the @cstorch.trace step training_step() failed" in proc.stderr
    line = (SCRIPTS / "cstorch_loop.py").read_text().splitlines().index("    loss = loss_fn(outputs, targets)") + 1
    assert f"cstorch_loop.py:{line}: loss = loss_fn(outputs, targets)" in proc.stderr  # the script's own line
    assert "labels.long()" in proc.stderr
