"""What a SambaFlow app reads from the top of the ``sambaflow`` package: its version and its logger.

    from sambaflow import __version__ as sambaflow_version   # lenet/lenet.py stores it in the PEF metadata
    from sambaflow.logging import samba_logger               # generative_nlp/configuration/gpt2_patch.py

(both from github.com/sambanova/tutorials). The version names accelkit's simulation, not a SambaFlow
release, so metadata written by an app says where it ran.
"""

from __future__ import annotations

import logging
from typing import Any

from accelkit._version import __version__ as _accelkit_version

__version__ = f"{_accelkit_version}+accelkit.sim"  # a PEP 440 version with a local label: not a SambaFlow release

class SambaLogger(logging.Logger):
    """A ``logging.Logger`` whose calls also take SambaFlow's ``log_limit=n``: a message is logged at most ``n``
    times (generative_nlp's GPT-2 patch warns once per patched function with ``log_limit=1``)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._counts: dict[str, int] = {}

    def _log(self, level: int, msg: object, args: Any, *rest: Any, log_limit: int | None = None,  # type: ignore[override]
             **kwargs: Any) -> None:
        if log_limit is not None:
            key = str(msg)
            self._counts[key] = self._counts.get(key, 0) + 1
            if self._counts[key] > log_limit:
                return
        super()._log(level, msg, args, *rest, **kwargs)


samba_logger = SambaLogger("sambaflow")  # sambaflow.logging.samba_logger
samba_logger.parent = logging.getLogger()  # handled as a logger called "sambaflow" would be

__all__ = ["__version__", "samba_logger"]
