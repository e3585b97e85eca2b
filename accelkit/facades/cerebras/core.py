"""``cerebras_pytorch.core``: the run modes the Model Zoo's runner compares its ``--mode`` with (``from
cerebras_pytorch.core import modes``, release 2.0) and, for the R1.9 zoo's runner, ``cb_model`` answering as the
runtime does with no CS system attached (:mod:`accelkit.facades.cerebras.zoo_r1`)."""

from __future__ import annotations

# the values of the Model Zoo's --mode (modelzoo/common/run_utils/cli_parser.py, releases 1.9 and 2.0)
from accelkit.facades.cerebras.zoo_r1 import cb_model, modes, name_scope

__all__ = ["cb_model", "modes", "name_scope"]
