"""Moved to :mod:`accelkit.workflow.peers` (accelkit beside a peer simulator composes the others: a workflow);
this old import path keeps working and is that same module, so its private names and monkeypatching reach it
too. (A package, not ``peers.py``, so that git sees the move as a rename.)"""

import sys

from accelkit.workflow import peers as _moved
from accelkit.workflow.peers import *  # noqa: F403 - the public names, for readers and type checkers

sys.modules[__name__] = _moved
