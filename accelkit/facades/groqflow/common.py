"""``groqflow.common.build``: the names GroqFlow's helpers read from it (``DEFAULT_CACHE_DIR``).

Groq's ``demo_helpers`` (the proof points' shared code) do ``from groqflow.common.build import
DEFAULT_CACHE_DIR`` to keep their downloads beside the builds. Here it is accelkit's build cache folder
(``$GROQFLOW_CACHE_DIR``, else ``~/.cache/groqflow``), read when asked, not when imported.
"""

from __future__ import annotations

from typing import Any

from accelkit.facades.groqflow.build import default_cache_dir


def __getattr__(name: str) -> Any:
    if name == "DEFAULT_CACHE_DIR":
        return str(default_cache_dir())
    raise AttributeError(name)


__all__ = ["default_cache_dir"]  # and DEFAULT_CACHE_DIR, answered by __getattr__
