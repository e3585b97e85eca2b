"""The performance model's constants live in :mod:`accelkit.constants` (at the bottom of the layers, so the
hardware catalog's capacity figures, the porting check and the model all read the same registry); this name is
kept for readers (``ak.cost.constants``)."""

from accelkit.constants import *  # noqa: F403
from accelkit.constants import __all__  # noqa: F401
