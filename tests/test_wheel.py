"""A built accelkit wheel, installed into a clean venv, runs notebook 00 (rooms elsewhere install it so).

The new venv holds accelkit only as the installed wheel; its other dependencies (PyTorch and the rest, minutes
to install) come from this project's venv through a .pth line, which adds that folder to sys.path without
running its .pth files, so the editable accelkit there is out of sight. The test proves that accelkit is
imported from the new venv's site-packages and that its data (hardware catalog, support tables, reference
tables, corpus) load from inside the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NB00 = ROOT / "notebooks" / "00_accelerator_landscape.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _run(*cmd: str | Path, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def test_wheel_in_a_clean_venv_runs_notebook_00(tmp_path: Path) -> None:
    # build from a copy of the sources, so the checkout gets no build/ or egg-info
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "accelkit", src / "accelkit", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path / "dist", src)
    wheel = next((tmp_path / "dist").glob("accelkit-*.whl"))
    shipped = set(zipfile.ZipFile(wheel).namelist())
    for data in ("accelkit/hardware/systems/sn40l.toml", "accelkit/porting/tables/reconfigurable-dataflow.toml",
                 "accelkit/sim/reference/published_results.csv", "accelkit/data/corpus/hardware.txt",
                 "accelkit/hub/room.ipynb"):
        assert data in shipped, f"{data} is not in the wheel"

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    py = venv / "bin" / "python"
    purelib = Path(_run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    (purelib / "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "--no-index", "-q", wheel)

    # notebook 00 as shipped, plus a last cell that says where its kernel's accelkit (and corpus) came from
    kernels = venv / "share" / "jupyter" / "kernels" / "wheel"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({"argv": [str(py), "-m", "ipykernel_launcher", "-f",
                                                             "{connection_file}"],
                                                    "display_name": "wheel", "language": "python"}))
    nb = json.loads(NB00.read_text())
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                        "source": "import accelkit, accelkit.data\n"
                                  "print('FROM', accelkit.__file__, len(accelkit.data.corpus_topics()))"})
    (tmp_path / "00.ipynb").write_text(json.dumps(nb))
    out = tmp_path / "00_out.ipynb"
    _run(py, "-m", "papermill", "-k", "wheel", "-p", "include_host", "False", tmp_path / "00.ipynb", out,
         cwd=tmp_path, env={**os.environ, "PLOTLY_RENDERER": "plotly_mimetype",
                            "ACCELKIT_CACHE_DIR": str(tmp_path / "cache")})
    cells = [c for c in json.loads(out.read_text())["cells"] if c["cell_type"] == "code"]
    outputs = [o for c in cells for o in c["outputs"]]
    assert [o for o in outputs if o["output_type"] == "error"] == []
    text = "".join("".join(o["text"]) for o in outputs if o["output_type"] == "stream")
    assert "sn40l" in text and "HBM bandwidth source" in text
    assert sum("application/vnd.plotly.v1+json" in o.get("data", {}) for o in outputs) >= 5  # the figures
    where, topics = text.rsplit("FROM ", 1)[1].split()[:2]
    assert Path(where).is_relative_to(purelib), f"the kernel's accelkit came from {where}, not the wheel in {purelib}"
    assert topics == "4"  # the corpus, read from inside the wheel
