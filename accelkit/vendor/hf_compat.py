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
- a layer's output as a forward hook sees it: transformers 4's encoder and decoder layers (``BertLayer``,
  ``GPT2Block``...) returned a tuple, ``(hidden_states, ...)``, and tutorials' hooks iterate it (Graphcore's BERT
  fine-tuning tutorial: ``tuple(poptorch.recomputationCheckpoint(y) for y in outputs)``); transformers 5's
  return the tensor alone, which the same hook would split along the batch. A forward hook registered on such
  a layer (transformers' ``GradientCheckpointingLayer``) is given a tensor output as the 1-tuple transformers 4
  gave it, and a 1-tuple it returns becomes the tensor again: the values are unchanged.
- ``transformers.modeling_utils.Conv1D``: GPT-2's transposed linear layer, which transformers 4.x moved to
  ``transformers.pytorch_utils`` and 5 no longer re-exports from ``modeling_utils``; the same class is answered
  under its old name.

:data:`MARKERS` are the strings that, found in a script or a helper module beside it, ask for this module.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterable, Iterator
from typing import Any

import torch

MARKERS = (".attn.bias", "modeling_utils.Conv1D", "register_forward_hook")


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


def _v4_hooks(original: Any) -> Any:
    """``register_forward_hook`` for transformers' layers, whose hooks see a tensor output as a 1-tuple."""

    def register_forward_hook(self: Any, hook: Any, *args: Any, **kwargs: Any) -> Any:
        def v4_hook(*hook_args: Any) -> Any:
            *head, output = hook_args  # (module, args, output) or, with_kwargs, (module, args, kwargs, output)
            if not isinstance(output, torch.Tensor):
                return hook(*hook_args)
            result = hook(*head, (output,))
            if isinstance(result, (tuple, list)) and len(result) == 1 and isinstance(result[0], torch.Tensor):
                return result[0]
            return result

        return original(self, v4_hook, *args, **kwargs)

    return register_forward_hook


@contextlib.contextmanager
def installed(markers: Iterable[str] | None = None) -> Iterator[list[str]]:
    """The attributes above, on transformers' classes, for the duration of the block; yields the notes of what
    was given back (empty where the installed transformers still has them, or has no such class). ``markers``
    (those of :data:`MARKERS` found in the script) limits it to what the script touches; None gives back all."""
    want = set(MARKERS if markers is None else markers)
    notes: list[str] = []
    if importlib.util.find_spec("transformers") is None:
        yield notes
        return
    try:
        import transformers
        from transformers.models.gpt2 import modeling_gpt2
    except Exception:  # an install that does not import (transformers 4.26 beside huggingface_hub 1.x): the
        yield notes    # script's own import meets the same error, in its own traceback, where the launcher names it
        return

    added: list[tuple[Any, str]] = []
    cls = modeling_gpt2.GPT2Attention
    if ".attn.bias" in want and "bias" not in vars(cls) and "bias" not in getattr(cls, "__annotations__", {}):
        probe = cls.__init__.__code__.co_names  # transformers 4's __init__ registers the buffer itself
        if "register_buffer" not in probe:
            cls.bias = _gpt2_bias()  # type: ignore[attr-defined]
            added.append((cls, "bias"))
            notes.append(f"GPT2Attention.bias, transformers 4's causal-mask buffer, is gone from transformers "
                         f"{transformers.__version__}; accelkit answers it with the same (1, 1, n_positions, "
                         "n_positions) mask for this run (a value the script assigns is kept); attention still "
                         "masks causally")
    from transformers import modeling_utils, pytorch_utils

    if "modeling_utils.Conv1D" in want and not hasattr(modeling_utils, "Conv1D") and hasattr(pytorch_utils, "Conv1D"):
        modeling_utils.Conv1D = pytorch_utils.Conv1D  # type: ignore[attr-defined]
        added.append((modeling_utils, "Conv1D"))  # type: ignore[arg-type]
        notes.append("transformers.modeling_utils.Conv1D (transformers 4's name) is answered by the same class "
                     "from transformers.pytorch_utils")
    try:
        from transformers.modeling_layers import GradientCheckpointingLayer
    except ImportError:  # transformers 4: its layers return tuples themselves
        GradientCheckpointingLayer = None  # noqa: N806
    if "register_forward_hook" in want and GradientCheckpointingLayer is not None \
            and "register_forward_hook" not in vars(GradientCheckpointingLayer):
        GradientCheckpointingLayer.register_forward_hook = _v4_hooks(torch.nn.Module.register_forward_hook)
        added.append((GradientCheckpointingLayer, "register_forward_hook"))
        notes.append(f"forward hooks on transformers' layers (BertLayer, GPT2Block...) see the layer's output as the "
                     f"1-tuple transformers 4 returned (transformers {transformers.__version__} returns the tensor "
                     "alone), and a 1-tuple a hook returns becomes the tensor again; the values are unchanged")
    try:
        yield notes
    finally:
        for owner, name in added:
            delattr(owner, name)


__all__ = ["MARKERS", "installed"]
