"""``sambaflow.samba.directives``: hints an app gives the RDU compiler about how to map its graph.

    op_fusion(layer, "Encoder")      # generative_nlp's GPT-2 patch: fuse each transformer block

They change how operators are grouped into sections on the chip, never the values: accepted and
recorded (accelkit's compiler fuses per layer itself, SambaFlow's ``o1``).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from accelkit.facades.samba.tensor import SambaError
from accelkit.runtime import facade_log


def op_fusion(module: nn.Module, name: str, *args: Any, **kwargs: Any) -> None:
    """``op_fusion(module, name)``: ask the compiler to fuse ``module``'s operators into one section ``name``."""
    if not isinstance(module, nn.Module):
        raise SambaError(f"op_fusion takes a module, not {type(module).__name__}", fix="e.g. op_fusion(layer, 'Encoder')")
    facade_log.accept("SambaFlow", f"directives.op_fusion(..., {name!r})",
                      "groups the module's operators into one section on the RDU; the values are the same, and "
                      "accelkit's compiler fuses each layer into a section itself (o1)")


__all__ = ["op_fusion"]
