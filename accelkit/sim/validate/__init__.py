"""Moved to :mod:`accelkit.workflow.validate` (checking the model against published results composes capture,
compile, serve and the performance model: a workflow); this old import path keeps working and is that same
module, so its private names and monkeypatching reach it too. (A package, not ``validate.py``, so that git sees
the move as a rename.)"""

import sys

from accelkit.workflow import validate as _moved
from accelkit.workflow.validate import *  # noqa: F403 - the public names, for readers and type checkers

sys.modules[__name__] = _moved
