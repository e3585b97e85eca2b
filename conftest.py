"""pytest's settings for the whole repository: which tests share a pytest-xdist worker, and in what order.

`make test` runs the tests and the notebooks (nbval) in one session on two workers (``-n 2 --dist loadfile``).
A file's tests share a worker, as its module fixtures and a notebook's cells (one kernel) need. The solved
notebook runs of test_curriculum.py are the exception: one unit per notebook, so both workers share those long
runs. The order they go in is FIRST and _rank below.

Here, not in tests/conftest.py, so that a notebook run alone (`pytest --nbval-lax notebooks/NN_x.ipynb -n 2
--dist loadfile`) keeps its cells on one worker too. (xdist's own ``loadgroup`` marks cannot do it with pytest 9,
whose node ids xdist can no longer rename.)
"""

from __future__ import annotations

from typing import Any

import pytest

SPLIT = "tests/test_curriculum.py::test_notebook_with_the_solutions_applied["  # one unit per notebook


def unit(nodeid: str) -> str:
    """The scheduling unit of a test: its file, or its notebook for a solved run."""
    if nodeid.startswith(SPLIT):
        return nodeid
    return nodeid.split("::", 1)[0]


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid)

    return ByUnit(config, log)


# The solved notebook runs (test_curriculum.py; test_capstone.py and test_bridge.py solve 09 and 10) start first,
# both workers sharing them; then the browser test, which draws those runs (tests/notebook_runs.py: a run already
# made is read, one in progress is waited for); then the notebooks under nbval and the other files with a slow test;
# the many short tests last. xdist hands a worker several units at a time, so this is an order of starting, not of
# finishing: the browser test can still reach a run before it is made, and then makes it.
FIRST = (SPLIT, "tests/test_capstone.py", "tests/test_bridge.py")


def _rank(item: pytest.Item, heavy: set[str]) -> int:
    u = unit(item.nodeid)
    if u.startswith(FIRST):
        return 0
    if u == "tests/test_browser.py":
        return 1
    return 2 if u in heavy else 3


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    heavy = {unit(i.nodeid) for i in items if ".ipynb::" in i.nodeid or i.get_closest_marker("slow")}
    items.sort(key=lambda i: _rank(i, heavy))  # stable: a unit's own order is kept
