"""``cerebras_pytorch.core`` (release 2.0): the run modes the 2.0 Model Zoo's runner compares its ``--mode`` with
(``from cerebras_pytorch.core import modes``)."""

from __future__ import annotations

from types import SimpleNamespace

# the values of the Model Zoo's --mode (modelzoo/common/run_utils/cli_parser.py, release 2.0)
modes = SimpleNamespace(TRAIN="train", EVAL="eval", EVAL_ALL="eval_all", TRAIN_AND_EVAL="train_and_eval")

__all__ = ["modes"]
