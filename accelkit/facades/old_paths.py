"""The facades' old import paths: ``accelkit.samba``, ``accelkit.poptorch``, ... are the modules under
:mod:`accelkit.facades`, the same objects (``accelkit.poptorch is accelkit.facades.poptorch``).

An import hook (:class:`OldPathFinder`, first on ``sys.meta_path``) answers only the names in :data:`MOVED` and
their sub-modules: ``import accelkit.samba.utils`` imports ``accelkit.facades.samba.utils`` and records it under
both names in ``sys.modules``, so nothing is imported twice and a class is one class under either path.
``accelkit`` installs the hook when it is imported, before any of these names can be asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

MOVED: dict[str, str] = {
    "accelkit.samba": "accelkit.facades.samba",
    "accelkit.cerebras": "accelkit.facades.cerebras",
    "accelkit.poptorch": "accelkit.facades.poptorch",
    "accelkit.groqflow": "accelkit.facades.groqflow",
}
"""old package name -> where it lives now."""


def new_name(fullname: str) -> str | None:
    """Where the module ``fullname`` lives now (``accelkit.samba.utils`` -> ``accelkit.facades.samba.utils``),
    or None when it did not move."""
    for old, new in MOVED.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old):]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Gives the module at its new name; the import system records it under the old name too."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run (the module ran under its new name); the import system set ``__spec__`` to the old
        name's spec: give the module its own back."""
        if self._spec is not None:
            module.__spec__ = self._spec


class OldPathFinder(importlib.abc.MetaPathFinder):
    """Answers the old import paths in :data:`MOVED` (see the module docstring); every other name: None."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Put the hook first on ``sys.meta_path`` (once): a leftover ``accelkit/samba/`` folder of byte-code must
    not be found as a namespace package before it."""
    if not any(isinstance(f, OldPathFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, OldPathFinder())


__all__ = ["MOVED", "OldPathFinder", "install", "new_name"]
