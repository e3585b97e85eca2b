"""pytest's settings for the whole repository: which tests share a pytest-xdist worker, and in what order.

`make test` runs the tests and the notebooks (nbval) in one session on two workers (``-n 2 --dist loadfile``).
A file's tests share a worker, as its module fixtures and a notebook's cells (one kernel) need. The solved
notebook runs of test_curriculum.py are the exception: one unit per notebook, so both workers share those long
runs. The longest units go first, the many short ones after, so the two workers finish together.

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long units first (notebooks under nbval, files with a slow test): xdist hands out units in the order
    they first appear, and one long notebook started last would keep one worker busy while the other waits."""
    heavy = {unit(i.nodeid) for i in items if ".ipynb::" in i.nodeid or i.get_closest_marker("slow")}
    items.sort(key=lambda i: unit(i.nodeid) not in heavy)  # stable: a unit's own order is kept
