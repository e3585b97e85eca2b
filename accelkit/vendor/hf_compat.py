"""transformers 4 attributes that vendor tutorials patch, answered on the transformers installed here.

The vendors' tutorials were written against transformers 4.x and reach into its modules. Where a later
transformers removed what they touch, and the removal does not change what the model computes, this module
gives it back for one ``accelkit vendor-run`` and says so once:

- ``GPT2Attention.bias``: transformers 4 kept GPT-2's causal mask as a buffer, ``bias`` of shape
  ``(1, 1, n_positions, n_positions)`` (``True`` on and below the diagonal); SambaNova's generative_nlp
  tutorial reads it and replaces it with an expanded view (``layers.attn.bias.expand(size)``). transformers 5
  builds the causal mask per call instead. Here ``bias`` is answered with that same mask (made on first
  read), and a value the script assigns is kept on the module; attention still masks causally, as it
  did when transformers 4 read the buffer.
- ``transformers.modeling_utils.Conv1D``: GPT-2's transposed linear layer, which transformers 4.x moved to
  ``transformers.pytorch_utils`` and 5 no longer re-exports from ``modeling_utils``; the same class is answered
  under its old name.

:data:`MARKERS` are the strings that, found in a script or a helper module beside it, ask for this module.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from typing import Any

import torch

MARKERS = (".attn.bias", "modeling_utils.Conv1D")


def _gpt2_bias() -> property:
    def get(self: Any) -> torch.Tensor:
        mask = self.__dict__.get("_accelkit_v4_bias")
        if mask is None:
            n = int(getattr(self.config, "n_positions", None) or self.config.max_position_embeddings)
            mask = torch.tril(torch.ones((n, n), dtype=torch.bool)).view(1, 1, n, n)
            self.__dict__["_accelkit_v4_bias"] = mask
        return mask

    def put(self: Any, value: torch.Tensor) -> None:
        self.__dict__["_accelkit_v4_bias"] = value

    return property(get, put, doc="transformers 4's causal-mask buffer, answered by accelkit (see hf_compat)")


@contextlib.contextmanager
def installed() -> Iterator[list[str]]:
    """The attributes above, on transformers' classes, for the duration of the block; yields the notes of what
    was given back (empty where the installed transformers still has them, or has no such class)."""
    notes: list[str] = []
    if importlib.util.find_spec("transformers") is None:
        yield notes
        return
    import transformers
    from transformers.models.gpt2 import modeling_gpt2

    added: list[tuple[Any, str]] = []
    cls = modeling_gpt2.GPT2Attention
    if "bias" not in vars(cls) and "bias" not in getattr(cls, "__annotations__", {}):
        probe = cls.__init__.__code__.co_names  # transformers 4's __init__ registers the buffer itself
        if "register_buffer" not in probe:
            cls.bias = _gpt2_bias()  # type: ignore[attr-defined]
            added.append((cls, "bias"))
            notes.append(f"GPT2Attention.bias, transformers 4's causal-mask buffer, is gone from transformers "
                         f"{transformers.__version__}; accelkit answers it with the same (1, 1, n_positions, "
                         "n_positions) mask for this run (a value the script assigns is kept); attention still "
                         "masks causally")
    from transformers import modeling_utils, pytorch_utils

    if not hasattr(modeling_utils, "Conv1D") and hasattr(pytorch_utils, "Conv1D"):
        modeling_utils.Conv1D = pytorch_utils.Conv1D  # type: ignore[attr-defined]
        added.append((modeling_utils, "Conv1D"))  # type: ignore[arg-type]
        notes.append("transformers.modeling_utils.Conv1D (transformers 4's name) is answered by the same class "
                     "from transformers.pytorch_utils")
    try:
        yield notes
    finally:
        for owner, name in added:
            delattr(owner, name)


__all__ = ["MARKERS", "installed"]
