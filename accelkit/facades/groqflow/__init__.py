"""``accelkit.facades.groqflow``: Groq's GroqFlow, on the simulated TSP (GroqChip).

    from accelkit.facades.groqflow import groqit              # was: from groqflow import groqit
    gmodel = groqit(model, inputs)                    # build (or load from the build cache)
    gmodel(**inputs)                                  # inference, like the PyTorch model
    gmodel.estimate_performance().latency             # seconds per call, MODELLED on the chips needed
    gmodel.state.build_status                         # "successful_build"

GroqFlow converts the model to fp16 and compiles a static, cycle-exact schedule for one or more TSPs;
the model must fit in their SRAM, so a big one spreads over several chips. Under the GroqFlow names is
:func:`accelkit.compile` (target ``tsp``; when the model does not fit, the compile is repeated with the
chip count the ModeError names), a build cache of ``CompiledProgram.save`` artifacts, and an
:class:`accelkit.Session` that runs the real numerics on this CPU.
"""

from __future__ import annotations

from accelkit.facades.groqflow.build import BuildState, default_cache_dir, groqit
from accelkit.facades.groqflow.model import GroqEstimatedPerformance, GroqFlowError, GroqModel

__all__ = ["BuildState", "GroqEstimatedPerformance", "GroqFlowError", "GroqModel", "default_cache_dir", "groqit"]
