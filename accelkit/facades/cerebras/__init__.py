"""``accelkit.facades.cerebras``: the two shapes of Cerebras' PyTorch integration, on a simulated wafer.

- :mod:`~accelkit.facades.cerebras.cbtorch` (``cerebras.framework.torch``, the CS-2's first PyTorch API):
  ``initialize(cs_ip=...)``, ``module(model)``, ``dataloader(loader)`` and ``with Session(loader, mode=...)``
  around an ordinary PyTorch loop.
- :mod:`~accelkit.facades.cerebras.cstorch` (``cerebras.pytorch``, today's API): ``backend("CSX")``,
  ``compile(model, backend)``, a ``@trace`` decorated step and ``DataExecutor(loader, num_steps=...)``
  (also reachable as ``utils.data.DataExecutor``, as in cstorch); ``amp`` (``set_half_dtype``, ``GradScaler``,
  ``optimizer_step``) and ``metrics`` (``AccuracyMetric``, ``PerplexityMetric``).

Both leave the loop to the user and time it step by step on an :class:`accelkit.Session` for ``wse2``
(CS-2) or ``wse3`` (CS-3): the numerics are the user's PyTorch calls on this CPU, the wafer's time is
modelled, and the report names the execution mode the compiler chose, pipelined (the whole model in
wafer SRAM) or weight streaming (weights streamed in from MemoryX layer by layer).
"""

from __future__ import annotations

from accelkit.facades.cerebras import (
    amp,
    distributed,
    metrics,
    optim,
    utils,  # noqa: E402 - after cstorch, which it imports
)
from accelkit.facades.cerebras.cbtorch import (
    CerebrasDataLoader,
    CerebrasModule,
    Session,
    System,
    dataloader,
    initialize,
    module,
)
from accelkit.facades.cerebras.clock import CerebrasError, StepClock
from accelkit.facades.cerebras.cstorch import (
    Backend,
    CompiledModel,
    DataExecutor,
    DataLoader,
    backend,
    backends,
    checkpoint_closure,
    compile,
    current_backend,
    current_torch_device,
    load,
    manual_seed,
    save,
    step_closure,
    summarize_scalar,
    summarize_tensor,
    trace,
    use_cs,
)
from accelkit.facades.cerebras.zoo2 import (  # the 2.x Model Zoo Trainer's reads
    current_executor,
    current_pol,
    experimental,
    from_numpy,
    make_constant,
    pol,
    profiler,
    sparse,
    storage,
)
from accelkit.facades.cerebras.zoo2 import nn_namespace as nn
from accelkit.facades.cerebras.zoo_r1 import add_debug_name, get_debug_name, name_scope  # R1.9's, for its zoo

__version__ = "2.10.0+accelkit.sim"  # the cerebras.pytorch release whose API the 2.x Trainer support follows
_generating_docs = False  # read by the 2.x Model Zoo (it defines stand-in classes while Cerebras builds its docs)

__all__ = [
    "Backend",
    "CerebrasDataLoader",
    "CerebrasError",
    "CerebrasModule",
    "CompiledModel",
    "DataExecutor",
    "DataLoader",
    "Session",
    "StepClock",
    "System",
    "amp",
    "backend",
    "backends",
    "distributed",
    "checkpoint_closure",
    "compile",
    "current_backend",
    "current_torch_device",
    "dataloader",
    "initialize",
    "load",
    "manual_seed",
    "metrics",
    "module",
    "optim",
    "save",
    "step_closure",
    "summarize_scalar",
    "summarize_tensor",
    "trace",
    "use_cs",
    "utils",
    "add_debug_name",
    "current_executor",
    "current_pol",
    "experimental",
    "from_numpy",
    "make_constant",
    "nn",
    "pol",
    "profiler",
    "sparse",
    "storage",
    "get_debug_name",
    "name_scope",
]
