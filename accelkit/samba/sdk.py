"""What a SambaFlow app reads from the top of the ``sambaflow`` package: its version and its logger.

    from sambaflow import __version__ as sambaflow_version   # lenet/lenet.py stores it in the PEF metadata
    from sambaflow.logging import samba_logger               # generative_nlp/configuration/gpt2_patch.py

(both from github.com/sambanova/tutorials). The version names accelkit's simulation, not a SambaFlow
release, so metadata written by an app says where it ran.
"""

from __future__ import annotations

import logging

from accelkit._version import __version__ as _accelkit_version

__version__ = f"{_accelkit_version}+accelkit.sim"  # a PEP 440 version with a local label: not a SambaFlow release

samba_logger = logging.getLogger("sambaflow")  # sambaflow.logging.samba_logger: a standard logging.Logger

__all__ = ["__version__", "samba_logger"]
