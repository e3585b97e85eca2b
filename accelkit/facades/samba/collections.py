"""``sambaflow.sambacollections``: the ordered set SambaFlow apps group parameters with.

    emb_params = OrderedSet(itertools.chain(*[emb.parameters() for emb in embeddings]))   # generative_nlp
    optim = samba.optim.AdamW(emb_params, lr=...)

A set that keeps insertion order, so an optimizer built from it sees its parameters in a fixed order
(PyTorch refuses a plain ``set`` for that reason); members are compared by hash, as in a set.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, MutableSet
from typing import Any


class OrderedSet(MutableSet[Any]):
    """``sambaflow.sambacollections.OrderedSet(iterable=())``."""

    def __init__(self, iterable: Iterable[Hashable] = ()) -> None:
        self._items: dict[Hashable, None] = dict.fromkeys(iterable)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def add(self, value: Hashable) -> None:
        self._items[value] = None

    def discard(self, value: Hashable) -> None:
        self._items.pop(value, None)

    def __repr__(self) -> str:
        return f"OrderedSet({list(self._items)!r})"


__all__ = ["OrderedSet"]
