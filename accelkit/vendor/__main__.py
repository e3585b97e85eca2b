"""``python -m accelkit.vendor script.py [args]``: see :mod:`accelkit.vendor`."""

import sys

from accelkit.vendor import main

sys.exit(main())
