"""Moved to :mod:`accelkit.workflow.bench` (validation at scale composes capture, compile and the performance
model: a workflow); this old import path keeps working and is that same module, so its private names and
monkeypatching reach it too. (A package, not ``bench.py``, so that git sees the move as a rename.)"""

import sys

from accelkit.workflow import bench as _moved
from accelkit.workflow.bench import *  # noqa: F403 - the public names, for readers and type checkers

sys.modules[__name__] = _moved
