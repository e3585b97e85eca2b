"""Shared test set-up: stable plotly output, seeded torch, a throwaway cache, notebook timings."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
import torch

# Plotly's mimetype renderer: drawn by JupyterLab, no random div ids (the Makefile exports the same).
os.environ.setdefault("PLOTLY_RENDERER", "plotly_mimetype")
# The tests run in two pytest-xdist workers on the 2-core CI machines: one thread each. Two threads per
# worker fight each other (and any other process) and small ops slow down a thousandfold.
torch.set_num_threads(1)

# nbval (`pytest --nbval-lax tests`) must not take the browser test's notebook for a notebook to compare: it is data
collect_ignore_glob = ["browser/*.ipynb"]

NOTEBOOK_RUN_TIME = "notebook_run_time_s"  # user_properties key set by tests/test_browser.py
NOTEBOOKS_BUDGET_S = 300.0  # project goal: every notebook, run together, within 5 minutes


def pytest_configure(config: pytest.Config) -> None:
    # Set before any test module imports accelkit, so nothing is written under $HOME;
    # notebook kernels started by the tests inherit it too.
    if "ACCELKIT_CACHE_DIR" not in os.environ:
        cache_dir = tempfile.mkdtemp(prefix="accelkit-test-cache-")
        os.environ["ACCELKIT_CACHE_DIR"] = cache_dir
        config.add_cleanup(lambda: shutil.rmtree(cache_dir, ignore_errors=True))


@pytest.fixture(autouse=True)
def _seed_torch() -> None:
    torch.manual_seed(0)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    times: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()):
                if key == NOTEBOOK_RUN_TIME and getattr(report, "when", None) == "call":
                    times[report.nodeid.rpartition("[")[2].rstrip("]")] = float(value)
    if not times:
        return
    terminalreporter.write_sep("-", "notebook run times")
    for name, seconds in sorted(times.items()):
        terminalreporter.write_line(f"{seconds:8.1f} s  {name}")
    total = sum(times.values())
    verdict = "within" if total <= NOTEBOOKS_BUDGET_S else "OVER"
    terminalreporter.write_line(f"{total:8.1f} s  total ({verdict} the {NOTEBOOKS_BUDGET_S:.0f} s goal)")


@pytest.fixture
def tsp_without_erf(tmp_path, monkeypatch):
    """A test-only TSP op table that lacks erf, to exercise the ``tanh-gelu`` recipe and a module/line finding.

    No shipped table restricts exact GELU any more: GroqFlow's proof points compile stock Hugging Face BERT
    (exact GELU), so the TSP table has no such entry. This copy of the tables adds one for the test only.
    """
    from accelkit.porting import support

    tables = tmp_path / "tables"
    shutil.copytree(support.TABLES_DIR, tables)
    with (tables / "static-schedule.toml").open("a", encoding="utf-8") as f:
        f.write('\n[[ops]]\nops = ["aten.gelu.default"]\nwhen = { approximate = "none" }\n'
                'reason = "this test-only compiler has no erf"\n'
                'fix = "use the tanh approximation: nn.GELU(approximate=\'tanh\')"\n'
                'recipe = "tanh-gelu"\nsource = "test fixture: a hypothetical compiler without erf"\n')
    monkeypatch.setattr(support, "TABLES_DIR", tables)
    support.load_table.cache_clear()
    yield "tsp"
    support.load_table.cache_clear()
