"""``accelkit.facades.samba``: SambaNova's SambaFlow app shape, on the simulated SN40L RDU.

Written so a SambaFlow tutorial app runs with only its imports changed::

    import accelkit.facades.samba as samba                         # was: from sambaflow import samba
    from accelkit.facades.samba import utils                       # was: import sambaflow.samba.utils as utils
    from accelkit.facades.samba.sambaloader import SambaLoader     # was: from sambaflow.samba.sambaloader import ...

    x = samba.randn(32, 20, name="features", batch_dim=0)  # named inputs with a batch dimension
    samba.from_torch_model_(model)
    optim = samba.optim.SGD(model.parameters(), lr=0.05)
    samba.session.compile(model, (x, y), optim, name="app", init_output_grads=True, pef="out/app.pef")
    outputs = utils.trace_graph(model, (x, y), optim, pef="out/app.pef")
    loss, logits = samba.session.run(input_tensors=[x, y], output_tensors=outputs)

Under the SambaFlow names is :func:`accelkit.compile` (target ``sn40l``, written as a PEF-like folder with
``CompiledProgram.save``) and an :class:`accelkit.Session` on that artifact: the numerics are real PyTorch on
this CPU (fp32 unless the app uses bfloat16), the RDU's time is modelled. What differs from SambaFlow:
nothing is placed on hardware, ``mapping`` is ignored, and output gradients other than the loss's
(``init_output_grads=True``) are not supported.
"""

from __future__ import annotations

from accelkit.facades.samba import directives, env, optim, sambaloader, utils
from accelkit.facades.samba.parameter import SambaParameter
from accelkit.facades.samba.runtime import SambaSession, session
from accelkit.facades.samba.tensor import (
    SambaError,
    SambaTensor,
    addmm,
    from_torch_model_,
    from_torch_tensor,
    randint,
    randn,
    to_torch,
)

__all__ = [
    "SambaError",
    "SambaParameter",
    "SambaSession",
    "SambaTensor",
    "addmm",
    "directives",
    "env",
    "from_torch_model_",
    "from_torch_tensor",
    "optim",
    "randint",
    "randn",
    "sambaloader",
    "session",
    "to_torch",
    "utils",
]
