"""What the R1.x Cerebras Model Zoo asks of ``cerebras.framework.torch`` and accelkit cannot answer.

The R1.x Model Zoo's shared runner (``modelzoo/common/pytorch``: ``run_utils.run``, ``PyTorchBaseRunner``)
imports ``cerebras.framework.torch.amp`` and ``cerebras.framework.torch.core`` (``cb_model``, ``modes``,
``name_scope``) as soon as ``cerebras.framework`` can be found, and drives the CS system's runtime through
them (the appliance client, the lowering passes, the weight-streaming executor). accelkit simulates the
user-facing calls of ``cerebras.framework.torch`` (``initialize``, ``module``, ``dataloader``, ``Session``),
not that runtime, so any name asked of these modules raises an accelkit error that says what to run instead, rather
than letting the zoo fall back to its CPU stubs without a word. The R1.9 zoo's runner asks the same of the
appliance client's protobuf stack, ``cerebras_appliance.pb``: refused in the same words. (The 2.0 zoo's runner needs
only ``cerebras_pytorch.core``'s modes and the client's debug settings, :mod:`accelkit.facades.cerebras.core` and
:mod:`accelkit.facades.cerebras.appliance`: ``python run.py CPU --mode train ...`` runs.)
"""

from __future__ import annotations

from typing import NoReturn

from accelkit.facades.cerebras.clock import CerebrasError


def __getattr__(name: str) -> NoReturn:  # PEP 562: any name the zoo asks these modules for
    if name.startswith("__"):
        raise AttributeError(name)
    raise CerebrasError(
        f"cerebras.framework.torch's R1.x runtime ({name}: the amp / core.cb_model / core.modes / core.name_scope "
        "behind the R1.x Model Zoo's modelzoo.common.pytorch.run_utils; in R1.9 cerebras_pytorch.core and the "
        "appliance client cerebras_appliance's protobuf stack) is not simulated by accelkit",
        fix="run the zoo's model in a loop of your own: cbtorch.initialize / module / dataloader / Session (the CS-2 "
            "script shape, examples/vendor/cbtorch_seed.py), or cerebras.pytorch's compile / trace / DataExecutor "
            "(release 2.x, as gigaGPT's train.py and examples/vendor/cstorch_loop.py do); the 2.0 Model Zoo's runner "
            "runs (python run.py CSX --mode train --params configs/params.yaml, or CPU)")
