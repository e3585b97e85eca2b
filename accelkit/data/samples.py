"""``Samples``: the one dataset type accelkit's generators return.

A ``Samples`` is a few named tensors that share their first dimension (one row per sample).
Indexing gives a tuple of rows, so it plugs into ``torch.utils.data.DataLoader`` as any
``Dataset`` does; ``batch(idx)`` gathers many rows at once, which the zoo's training loops use
because it is much faster than collating one sample at a time on a CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch.utils.data import Dataset


class Samples(Dataset[tuple[torch.Tensor, ...]]):
    """Named tensors of equal length; ``ds[i]`` is the tuple of their ``i``-th rows, in ``fields`` order.

    ``extras`` holds per-sample tensors that are not model inputs or targets (a Bragg peak's
    true widths, the text of a sentence's words, ...); ``info`` holds plain facts about the data
    (the seed, the generator's settings) so a notebook can print how it was made.
    """

    def __init__(self, name: str, tensors: Mapping[str, torch.Tensor], *,
                 extras: Mapping[str, Any] | None = None, info: Mapping[str, Any] | None = None) -> None:
        lengths = {k: int(t.shape[0]) for k, t in tensors.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"{name}: every field needs the same number of rows, got {lengths}")
        self.name = name
        self.tensors = dict(tensors)
        self.extras = dict(extras or {})
        self.info = dict(info or {})

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.tensors)

    def __len__(self) -> int:
        return int(next(iter(self.tensors.values())).shape[0])

    def __getitem__(self, index: int) -> tuple[torch.Tensor, ...]:
        return tuple(t[index] for t in self.tensors.values())

    def __getattr__(self, field: str) -> torch.Tensor:
        tensors = self.__dict__.get("tensors", {})
        if field in tensors:
            return tensors[field]
        raise AttributeError(f"{type(self).__name__} {self.__dict__.get('name', '')!r} has no field {field!r}")

    def batch(self, index: torch.Tensor | slice) -> tuple[torch.Tensor, ...]:
        """The rows at ``index`` (a tensor of indices or a slice) of every field, in ``fields`` order."""
        return tuple(t[index] for t in self.tensors.values())

    def subset(self, index: torch.Tensor | slice, name: str | None = None) -> Samples:
        """A new ``Samples`` with the rows at ``index`` (extras that are per-sample are sliced too)."""
        n = len(self)
        rows = index if isinstance(index, slice) else index.tolist()

        def pick(v: Any) -> Any:
            if isinstance(v, torch.Tensor) and v.shape[:1] == (n,):
                return v[index]
            if isinstance(v, list) and len(v) == n:
                return v[rows] if isinstance(rows, slice) else [v[i] for i in rows]
            return v

        extras = {k: pick(v) for k, v in self.extras.items()}
        return Samples(name or self.name, {k: t[index] for k, t in self.tensors.items()},
                       extras=extras, info=self.info)

    def split(self, heldout: int) -> tuple[Samples, Samples]:
        """``(train, heldout)``: the last ``heldout`` rows are held out (the generators shuffle already)."""
        if not 0 < heldout < len(self):
            raise ValueError(f"{self.name}: heldout must be between 1 and {len(self) - 1}, got {heldout}")
        cut = len(self) - heldout
        return (self.subset(slice(0, cut), f"{self.name}[train]"),
                self.subset(slice(cut, None), f"{self.name}[heldout]"))

    def describe(self) -> str:
        shapes = ", ".join(f"{k} {tuple(t.shape)} {str(t.dtype).replace('torch.', '')}"
                           for k, t in self.tensors.items())
        return f"{self.name}: {len(self)} samples; {shapes}"

    def __repr__(self) -> str:
        return f"<Samples {self.describe()}>"
