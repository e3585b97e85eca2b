"""Optimizers as SambaFlow names them (``sambaflow.samba.optim``).

On the RDU the optimizer step is compiled into the PEF as its own ``opt`` section, next to
``fwd`` and ``bckwd``; passing an optimizer to ``samba.session.compile`` is what makes the
program a training program. Here the update itself is PyTorch's (same arguments, same numbers);
the ``opt`` section's time on the clock is modelled.
"""

from __future__ import annotations

import torch


class SGD(torch.optim.SGD):
    """Stochastic gradient descent, optionally with momentum (``sambaflow.samba.optim.SGD``)."""


class AdamW(torch.optim.AdamW):
    """Adam with decoupled weight decay (``sambaflow.samba.optim.AdamW``)."""


__all__ = ["SGD", "AdamW"]
