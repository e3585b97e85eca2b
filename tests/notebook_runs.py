"""One papermill run of each notebook per test session, shared by every test that reads it.

`make test` runs each notebook once, at its default parameters and with the solutions applied
(``solutions=True``): test_notebooks.py compares its golden cells with the committed ones (nbval's rules,
:mod:`accelkit.devtools.golden`), test_curriculum.py (test_capstone.py, test_bridge.py for 09 and 10) checks that
every exercise passes on its shipped solution, test_bench_validation.py reads notebook 07's table of the measured
LLM-serving rows it served, and the browser test (test_browser.py) opens the executed copy in
JupyterLab to draw its figures. The solutions change only what the check cells print: an answer cell's variable
feeds its ``teach.check`` call and nothing else (test_curriculum.py checks that), so the golden cells, all outside
the check cells, see the notebook as a learner runs it.

The first test to ask runs the notebook; the others wait for it and read the same file. The runs live in a
folder every pytest-xdist worker of the session shares, keyed by the notebook and its parameters; a lock file
per run keeps two workers from running the same one at once. A run that fails leaves no file behind, so each
test that asks sees the failure. The root conftest.py keeps a notebook's tests in one scheduling unit and starts
the units in ORDER.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from accelkit.devtools.kernels import IpcKernelManager

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
# The parameters of each notebook's shared run: its defaults, with the solutions applied (00 has no exercises).
RUNS: dict[str, dict[str, Any]] = {
    nb: ({} if nb == "00" else {"solutions": True}) for nb in [f"{i:02d}" for i in range(12)]}
# The order the runs start in, the longest first (so that the last to finish are short), and the order the
# browser test draws them in (so that it meets the runs in the order they were made).
ORDER = ("07", "08", "11", "10", "05", "06", "04", "03", "09", "01", "02", "00")
SANITIZE_CFG = ROOT / "tests" / "nbval_sanitize.cfg"


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
                                           progress_bar=False, parameters=parameters,
                                           kernel_manager_class=IpcKernelManager)  # no TCP port to race for
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


def golden_mismatches(nb: str, run: Path) -> list[str]:
    """The golden cells of notebook ``nb`` that its executed copy ``run`` does not reproduce (nbval's rules)."""
    from accelkit.devtools import golden

    return golden.mismatches(notebook_path(nb), run, golden.sanitize_patterns(SANITIZE_CFG))
