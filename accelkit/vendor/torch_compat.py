"""PyTorch 2.4 behaviour that vendor code relies on, given back on the PyTorch installed here for one vendor run.

The vendors' SDK releases pin an older PyTorch (Cerebras' 2.10 release: torch 2.4). Where a later PyTorch changed
something their pure-Python code touches, and the change does not alter what is computed, this module restores
the older behaviour for the run and says so the first time it is used:

- ``dataclasses.replace`` on a ``torch.utils._pytree.TreeSpec``: in torch 2.4 the spec's dataclass fields were
  ``type``, ``context`` and ``children_specs``; later releases renamed the stored fields ``_context`` and
  ``_children`` while ``__init__`` kept the old names, so ``replace`` (which passes the stored names) fails. The
  Cerebras Model Zoo's Trainer replaces specs when it writes its config back (``trainer/validate.py``). Here
  ``__init__`` also takes the stored names.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

_said: list[str] = []


def _say(note: str) -> None:
    if note not in _said:
        _said.append(note)
        print(f"accelkit vendor-run: {note}")


@contextlib.contextmanager
def installed() -> Iterator[None]:
    from torch.utils import _pytree

    spec_cls = _pytree.TreeSpec
    original = spec_cls.__init__
    fields = {f.name for f in __import__("dataclasses").fields(spec_cls)}
    if "_context" not in fields:  # torch 2.4's layout: nothing to give back
        yield
        return

    @functools.wraps(original)
    def init(self: Any, type: Any = None, context: Any = None, children_specs: Any = None,  # noqa: A002
             *args: Any, _context: Any = None, _children: Any = None, **kwargs: Any) -> None:
        if _context is not None or _children is not None:
            _say("TreeSpec built from its stored fields (_context, _children), as dataclasses.replace does: taken as "
                 "context and children_specs, PyTorch 2.4's names (accelkit.vendor.torch_compat)")
            context = _context if context is None else context
            children_specs = _children if children_specs is None else children_specs
        original(self, type, context, children_specs, *args, **kwargs)

    spec_cls.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        spec_cls.__init__ = original  # type: ignore[method-assign]
        _said.clear()
