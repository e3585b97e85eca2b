"""``examples_utils``: the helper package of Graphcore's applications (github.com/graphcore/examples-utils), as
they import it beside the simulated ``poptorch`` when it is not installed.

Its ``load_lib(path)`` compiles a C++ source file (a PopART custom operator or pattern, written against Poplar's and
PopART's headers) with ``cppimport`` and loads the library with ``ctypes``. There is no Poplar here to compile
against, and a simulation runs no IPU code, so nothing is compiled or loaded: the file is checked to exist, as the
real function checks, and recorded. The operators such a file defines run only where accelkit knows what they
compute (``poptorch.custom_op`` says which, and names any other it refuses); a PopART pattern changes how the
graph is lowered on the IPU, never the values.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from accelkit.facades.poptorch.options import PopTorchError
from accelkit.runtime import facade_log


class _NotCompiled:
    """What ``load_lib`` returns in place of a ``ctypes`` library: the source it stands for, no symbols."""

    def __init__(self, source: Path) -> None:
        self.source = source

    def __getattr__(self, symbol: str) -> Any:
        if symbol.startswith("__"):
            raise AttributeError(symbol)
        raise PopTorchError(f"{self.source.name} was not compiled here (no Poplar SDK), so it has no symbol {symbol!r}",
                            fix="call its operators through poptorch.custom_op, which runs the ones accelkit knows")

    def __repr__(self) -> str:
        return f"<not compiled: {self.source}>"


def load_lib(filepath: str | os.PathLike[str], timeout: int = 5 * 60) -> _NotCompiled:
    """Record the custom-op source ``filepath`` instead of compiling it against Poplar (there is none here);
    raises ``FileNotFoundError`` for a missing file, as the real function does."""
    path = Path(filepath)
    if not path.exists():
        raise FileNotFoundError(f"File does not exist: {path}")
    facade_log.accept("examples_utils", f"load_lib({path.name!r})",
                      "compiles a PopART custom operator or pattern against Poplar and loads it into the process; "
                      "nothing is compiled here: poptorch.custom_op runs the operators whose computation accelkit "
                      "knows, and a pattern only changes how the IPU runs the graph")
    return _NotCompiled(path.resolve())


def load_lib_all(dir_path: str | os.PathLike[str], timeout: int = 5 * 60, load: bool = True) -> list[Any]:
    """``load_lib`` for every ``.cpp`` file under ``dir_path`` whose first line is ``// cppimport``."""
    found: list[Any] = []
    for directory, _dirs, files in os.walk(dir_path):
        for name in sorted(files):
            path = Path(directory) / name
            if name.startswith(".") or path.suffix != ".cpp":
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                if "cppimport" not in f.readline():
                    continue
            found.append((str(path), load_lib(path, timeout)) if load else str(path))
    return found


__all__ = ["load_lib", "load_lib_all"]
