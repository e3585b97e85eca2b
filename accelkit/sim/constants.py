"""The performance model's constants live in :mod:`accelkit.constants`; this name is kept for readers
(notebooks 06 and 07 point here)."""

from accelkit.constants import *  # noqa: F403
from accelkit.constants import __all__  # noqa: F401
