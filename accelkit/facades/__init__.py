"""The vendor SDK facades: code written for a vendor's SDK runs here on accelkit's simulation.

- :mod:`accelkit.facades.samba`: SambaNova SambaFlow (``sambaflow.samba``: ``from_torch_model_``, ``session.run``)
- :mod:`accelkit.facades.cerebras`: Cerebras ``cerebras.pytorch`` (``cstorch``) and ``cerebras.framework.torch``
- :mod:`accelkit.facades.poptorch`: Graphcore PopTorch (``poptorch.trainingModel``, ``Options``, ``BeginBlock``)
- :mod:`accelkit.facades.groqflow`: Groq GroqFlow (``groqit``, ``GroqModel``)

Each runs the model's real numerics through PyTorch on the CPU and reads its modelled time from the one
``Clock`` of :mod:`accelkit.runtime`. ``accelkit vendor-run`` (:mod:`accelkit.vendor`) answers the vendors' own
module names with these facades, so a vendor's script runs unchanged.

The facades lived at ``accelkit.samba``, ``accelkit.cerebras``, ``accelkit.poptorch`` and ``accelkit.groqflow``
before; those import paths keep working and give the same module objects (:mod:`accelkit.facades.old_paths`).
Importing this package imports no facade: each is imported when it is first used.
"""

from __future__ import annotations

from accelkit.facades import old_paths

old_paths.install()

__all__ = ["old_paths"]
