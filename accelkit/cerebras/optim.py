"""Optimizers under Cerebras' names (``cstorch.optim``): PyTorch's, since the numerics run on this CPU.

On the system the optimizer step is part of the compiled program (in weight streaming it runs where
the weights live, beside MemoryX); its time on the clock is modelled.
"""

from __future__ import annotations

from torch.optim import SGD, Adam, AdamW

__all__ = ["SGD", "Adam", "AdamW"]
