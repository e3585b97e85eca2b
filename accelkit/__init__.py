"""accelkit: learn to port PyTorch models to AI accelerators, on a laptop CPU.

The workflow, one function per step, each returning a plain value the next one takes::

    import accelkit as ak
    prof  = ak.profile(model, inputs)                  # 1. measured on this host
    spec  = ak.hardware.get("wse2")                    # 2. the catalog, every figure sourced
    graph = ak.capture(model, inputs)                  #    the graph every later step reads
    report = ak.check(model, inputs, target="tsp")     # 3. what must change, with the fix
    ported = ak.port(model, inputs, target="tsp")      #    rewrites, verified against the original
    prog  = ak.compile(model, inputs, target="wse2")   # 4. passes, memory plan, placement
    prog.report                                        # 5. modelled step time, where it goes
    ak.serve(llm, target="sn40l", chips=8, prompt_tokens=128, output_tokens=128)
    ak.sweep({"braggnn": ak.zoo.get("braggnn")}, ["a100", "sn40l"], batch=[1, 64])  # a DataFrame, on Dask
    prog.save("out/model.akp"); ak.load("out/model.akp")
    ak.cache.clear()                                   # forget captured graphs, findings, host timings
"""

from __future__ import annotations

from accelkit import cache, compiler, constants, facades, hardware, runtime, sim, zoo
from accelkit._version import __version__
from accelkit.compiler import CompiledProgram, Parallel, load
from accelkit.errors import AccelkitError, CaptureError, SpecError, UnknownNameError
from accelkit.graph import Graph, Node, capture
from accelkit.porting import CompatibilityReport, Finding, PortResult, check, port
from accelkit.profiler import HostProfile, profile
from accelkit.runtime import Session, StepResult
from accelkit.sim import PerfReport
from accelkit.sim.stacks import StackComparison, compare_stacks
from accelkit.workflow import load_sweep, save_sweep, sweep
from accelkit.workflow.compiling import compile
from accelkit.workflow.serve import ServingEstimate, serve
from accelkit.workflow.validate import ValidationResult, validate

__all__ = [
    "AccelkitError",
    "CaptureError",
    "CompatibilityReport",
    "CompiledProgram",
    "Finding",
    "Graph",
    "HostProfile",
    "Node",
    "Parallel",
    "PerfReport",
    "PortResult",
    "ServingEstimate",
    "Session",
    "SpecError",
    "StepResult",
    "UnknownNameError",
    "ValidationResult",
    "__version__",
    "cache",
    "capture",
    "check",
    "compile",
    "compiler",
    "constants",
    "facades",
    "hardware",
    "load",
    "load_sweep",
    "port",
    "profile",
    "runtime",
    "save_sweep",
    "serve",
    "compare_stacks",
    "StackComparison",
    "sim",
    "sweep",
    "validate",
    "zoo",
]
