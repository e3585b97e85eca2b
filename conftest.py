"""pytest's settings for the whole repository: which tests share a pytest-xdist worker, and in what order.

`make test` runs one pytest session on two workers (``-n 2 --dist loadfile``). A file's tests share a worker, as
its module fixtures need. A notebook's run is the exception: it is one unit of its own, holding every test that
reads the notebook's one run at its defaults (tests/notebook_runs.py: its golden cells, its exercises), so that no
worker waits for a run the other is making. The units start in the order of _rank, not in xdist's own (which
puts the files with the most tests first, and so the long single tests last).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))
from notebook_runs import ORDER  # noqa: E402  (tests/ is not a package)

# the tests that read notebook NN's run at its defaults: the unit "notebook NN"
RUN_READERS = re.compile(
    r"^tests/test_notebooks\.py::test_notebook_runs_and_its_golden_cells_match\[(\d\d)\]$"
    r"|^tests/test_curriculum\.py::test_notebook_with_the_solutions_applied\[(\d\d)\]$"
    r"|^tests/test_capstone\.py::test_capstone_notebook_on_a_model_outside_the_zoo\[lstm_tagger\]$(?P<c>)"
    r"|^tests/test_bridge\.py::test_notebook_10_with_solutions$(?P<b>)"
    r"|^tests/test_bench_validation\.py::test_every_row_of_the_systems_accelkit_has_meets_the_median_goal$(?P<v>)")


def unit(nodeid: str) -> str:
    """The scheduling unit of a test: its notebook's run, or its file."""
    m = RUN_READERS.match(nodeid)
    if m:
        nb = m.group(1) or m.group(2) or ("09" if m.group("c") is not None else "07" if m.group("v") is not None
                                          else "10")
        return f"notebook {nb}"
    return nodeid.split("::", 1)[0]


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid)

    config.option.loadscopereorder = False  # keep the order of pytest_collection_modifyitems
    return ByUnit(config, log)


# The notebook runs start first, the longest first (notebook_runs.ORDER), both workers sharing them; then the
# browser test, which draws those runs in the same order (it waits for a run in progress, or makes one not yet
# started); then the files with a slow test, the longest first; the many short tests last. xdist hands a worker a
# unit when it has two tests or fewer left, so this is an order of starting, not of finishing.
SLOWEST_FILES = ("tests/test_vendor_run.py", "tests/test_hub.py", "tests/test_rdu_example_app.py",
                 "tests/test_zoo.py", "tests/test_bench_validation.py", "tests/test_porting_tables.py")


def _rank(item: pytest.Item, slow: set[str]) -> tuple[int, int]:
    u = unit(item.nodeid)
    if u.startswith("notebook "):
        return 0, ORDER.index(u[-2:])
    if u == "tests/test_capstone.py":  # its other run (a second model)
        return 0, len(ORDER)
    if u == "tests/test_browser.py":
        return 1, 0
    if u in SLOWEST_FILES:
        return 2, SLOWEST_FILES.index(u)
    return (3 if u in slow else 4), 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = {unit(i.nodeid) for i in items if i.get_closest_marker("slow")}
    items.sort(key=lambda i: _rank(i, slow))  # stable: a unit's own order is kept
