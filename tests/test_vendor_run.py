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
