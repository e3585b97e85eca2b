"""One papermill run of a notebook per test session, shared by the tests that read it.

The solved run of a notebook (test_curriculum.py, test_capstone.py) and the browser test (test_browser.py, which
opens the executed copy in JupyterLab to draw its figures) need the same execution: the first test to ask runs
it, the others wait for it and read the same file. The runs live in a folder every pytest-xdist worker of the
session shares, keyed by the notebook and its parameters; a lock file per run keeps two workers from running
the same one at once. A run that fails leaves no file behind, so each test that asks sees the failure.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
# The solved run proves every checker passes on its solution; the as-shipped run (nbval) covers the full sizes,
# so the solved run shrinks what only costs time (papermill parameters, as an instructor would for a rehearsal).
SHRINK: dict[str, dict[str, Any]] = {
    "01": {"RUNS": 1}, "05": {"steps": 20}, "07": {"BENCH_EVERY": 1000, "WITH_405B": False},
    "08": {"train_steps": 5, "targets": ["a100", "sn40l", "wse2", "tsp"]},
    "11": {"TARGETS": ["a100", "h100", "gaudi3", "sn40l", "bow", "wse3", "tsp"], "DDP_STEPS": 2}}
# The parameters of each notebook's shared run with the solutions applied (00 has no exercises; 09 and 10 are
# solved with the parameters of their own tests, test_capstone.py and test_bridge.py).
SOLVED: dict[str, dict[str, Any]] = {
    **{nb: {"solutions": True, **SHRINK.get(nb, {})} for nb in ("01", "02", "03", "04", "05", "06", "07", "08",
                                                                  "11")},
    "09": {"model": "vit_tiny:make", "steps": 3, "solutions": True},
    "10": {"batch": 16, "solutions": True},
}


def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this session shares (xdist gives each worker its own basetemp below it).

    ``ACCELKIT_NOTEBOOK_RUNS=<folder>`` keeps the runs there instead, across sessions: while working on figures,
    the browser test then re-draws the notebooks without running them again. A run is keyed by the notebook's
    text and its parameters, not by accelkit's code: clear the folder after changing the package."""
    if os.environ.get("ACCELKIT_NOTEBOOK_RUNS"):
        kept = Path(os.environ["ACCELKIT_NOTEBOOK_RUNS"])
        kept.mkdir(parents=True, exist_ok=True)
        return kept
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    path = shared / "notebook-runs"
    path.mkdir(exist_ok=True)
    return path


def notebook_path(nb: str) -> Path:
    """notebooks/NN_*.ipynb for the two-digit number ``nb``."""
    return next(NOTEBOOK_DIR.glob(f"{nb}_*.ipynb"))


def executed(nb: str, parameters: dict[str, Any], runs: Path) -> Path:
    """The executed copy of notebook ``nb`` run with ``parameters``: run now, or read from an earlier test."""
    import papermill

    source = notebook_path(nb)
    key = hashlib.sha256(json.dumps([source.read_text(), parameters], sort_keys=True).encode()).hexdigest()[:10]
    out = runs / f"{source.stem}-{key}.ipynb"
    with (runs / f"{out.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even if the run raises
        if not out.exists():
            partial = out.with_suffix(".partial.ipynb")
            env = {"PLOTLY_RENDERER": "plotly_mimetype", "ACCELKIT_CACHE_DIR": str(runs / f"cache-{key}")}
            saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)  # the kernel inherits this process's environment
            try:
                papermill.execute_notebook(str(source), str(partial), kernel_name="python3", cwd=str(NOTEBOOK_DIR),
                                           progress_bar=False, parameters=parameters)
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            partial.replace(out)
    return out


def output_text(path: Path) -> str:
    """Every text output of the executed notebook's code cells, joined."""
    import nbformat

    return "".join(o.get("text", "") for c in nbformat.read(str(path), 4).cells if c.cell_type == "code"
                   for o in c.outputs)
