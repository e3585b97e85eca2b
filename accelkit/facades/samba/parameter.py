"""``sambaflow.samba.nn.parameter.SambaParameter``: a parameter SambaFlow materialises lazily on the RDU.

generative_nlp's GPT-2 patch (github.com/sambanova/tutorials, configuration/gpt2_patch.py) checks
``isinstance(p, SambaParameter)`` to transpose a lazily made weight, and builds one with
``SambaParameter(shape=..., dtype=..., materializer=fn, requires_grad=...)``. In accelkit every parameter is
an ordinary ``torch.nn.Parameter`` already holding its values, so a model's parameters are never
SambaParameters; one built by an app is materialised at once by calling ``materializer``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch


class SambaParameter(torch.nn.Parameter):
    """A ``torch.nn.Parameter`` made from ``materializer(self)`` (SambaFlow's lazy parameter, made at once)."""

    def __new__(cls, data: torch.Tensor | None = None, requires_grad: bool = True, *,
                shape: Iterable[int] | None = None, dtype: torch.dtype | None = None,
                materializer: Callable[[Any], torch.Tensor] | None = None) -> SambaParameter:
        if data is None:
            if materializer is not None:
                data = materializer(None)
            elif shape is not None:
                data = torch.zeros(tuple(shape), dtype=dtype or torch.float32)
            else:
                data = torch.empty(0)
        if dtype is not None:
            data = data.to(dtype)
        return super().__new__(cls, data, requires_grad)  # type: ignore[no-any-return]

    def torch_tensor(self) -> torch.Tensor:
        """The values as a plain tensor (SambaFlow's ``SambaTensor.torch_tensor``)."""
        return self.detach()


__all__ = ["SambaParameter"]
