"""``CompileOptions``: what a compile is asked for, checked once and frozen.

    options = CompileOptions.check("sn40l", precision="bf16", chips=8)   # every refusal names the argument
    options.spec        # the chip, looked up once
    options.family      # its family's execution model, looked up once
    options.rates       # what one chip delivers at the precision, computed once (on first use)
    options.stack       # the software stack, resolved to a name ("eager", "compiled", "engine", ...)

``ak.compile``, ``ak.Session`` and ``ak.serve`` check their arguments into one of these and pass it down, so a
step that builds several programs (serve's prefill and decode, the search over parallel splits) neither checks
the arguments again nor looks the chip, its family or its rates up again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

from accelkit import hardware
from accelkit.boundary import flag, got, instance, maybe_whole, nearby_divisors, one_of, whole
from accelkit.compiler.fallback import FALLBACKS
from accelkit.compiler.memory import check_mode
from accelkit.cost import Parallel
from accelkit.cost.rates import Rates
from accelkit.errors import CompileError, PrecisionError
from accelkit.families import ExecutionModel, model_for
from accelkit.graph.capture import OPTIMIZER_STATES, OPTIMIZERS
from accelkit.hardware.spec import AcceleratorSpec

RECOMPUTE = ("none", "selective", "full")
FUSION_LEVELS = ("o0", "o1")
# what each step sends back to the host (PopTorch's OutputMode): every step's outputs, or the call's last step's
OUTPUT_MODES = ("all", "final")

Role = Literal["compile", "session", "serve"]
"""Whose default software stack applies when none is named: ``ak.compile``'s, a Session's or a server's."""


@dataclass(frozen=True)
class CompileOptions:
    """What one compile is asked for, after every argument was checked (:meth:`check`). Frozen: a program built
    from it, and every program of a search over splits and memory plans, share it unchanged."""

    spec: AcceleratorSpec
    precision: str = "bf16"
    batch_size: int | None = None  # None: the example inputs' batch
    micro_batch: int | None = None  # None: the whole batch at once
    chips: int = 1
    mode: str = "auto"
    training: bool = False
    parallel: Parallel | None = None  # None: the search picks the split
    recompute: str = "none"
    fusion: str = "o1"
    fallback: str | None = None
    stack: str = ""  # resolved: the family's default for the role when none was named
    device_iterations: int = 1
    synthetic_data: bool = False
    input_rate: float | None = None  # samples/s the host's input pipeline delivers (None: never the bound)
    input_overlap: bool = True  # the pipeline loads the next batch while the chip runs (False: in the training process)
    output_mode: str | None = None  # "all" or "final" (PopTorch's OutputMode); None: training "final", inference "all"
    group_host_sync: bool = False  # one stream copy per direction per step (PopART's groupHostSync), not one per tensor
    optimizer: str = "adamw"  # the update a training step runs (accelkit.graph.capture.OPTIMIZERS)
    optimizer_state: str | None = None  # where it keeps its state (OPTIMIZER_STATES); None: by the weights' dtype
    stages: tuple[tuple[str, int], ...] = ()  # where a pipeline's blocks begin: (module, chip), BeginBlock's way
    family: ExecutionModel = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.family is None:  # built directly (not through check): look the family up once, here
            object.__setattr__(self, "family", model_for(self.spec.family))

    @classmethod
    def check(cls, target: Any, *, precision: Any = "bf16", batch_size: Any = None, micro_batch: Any = None,
              chips: Any = 1, mode: Any = "auto", training: Any = False, parallel: Any = None,
              recompute: Any = "none", fusion: Any = "o1", fallback: Any = None, stack: Any = None,
              device_iterations: Any = 1, synthetic_data: Any = False, input_rate: Any = None,
              input_overlap: Any = True, output_mode: Any = None, optimizer: Any = "adamw",
              optimizer_state: Any = None, stages: Any = None, group_host_sync: Any = False,
              role: Role = "compile") -> CompileOptions:
        """Check what a compile is asked for before any work starts; every refusal names the argument and the
        fix. ``role`` picks the default stack when ``stack`` is None (a Session runs eager PyTorch on a GPU, a
        server its engine)."""
        spec = target if isinstance(target, AcceleratorSpec) else hardware.get(target)
        if not isinstance(precision, str):
            raise CompileError(f"precision must be a precision's name, not {got(precision)}",
                               fix=f"use one of {list(spec.peak_flops)}, e.g. precision='fp32'")
        try:
            spec.peak(precision)
        except PrecisionError as exc:  # the fix in this function's words, not spec.peak's
            raise PrecisionError(exc.message, fix=f"pass precision={next(iter(spec.peak_flops))!r} (or another of "
                                                  f"{list(spec.peak_flops)})") from None
        one_of("recompute", recompute, RECOMPUTE, error=CompileError)
        one_of("fusion", fusion, FUSION_LEVELS, error=CompileError)
        if fallback not in FALLBACKS:
            raise CompileError(f"fallback={fallback!r} is not a fallback",
                               fix="use fallback=None (refuse what the target cannot run) or fallback='host'")
        flag("training", training)
        flag("synthetic_data", synthetic_data)
        input_rate = check_input_rate(input_rate)
        flag("input_overlap", input_overlap)
        flag("group_host_sync", group_host_sync)
        if output_mode is not None:
            one_of("output_mode", output_mode, OUTPUT_MODES, error=CompileError)
        one_of("optimizer", optimizer, tuple(OPTIMIZERS), error=CompileError)
        if optimizer_state is not None:
            one_of("optimizer_state", optimizer_state, tuple(OPTIMIZER_STATES), error=CompileError)
        whole("device_iterations", device_iterations, example="device_iterations=50", error=CompileError)
        check_mode(spec, mode)
        family = model_for(spec.family)
        stack_name = family.stack(stack, serving=role == "serve", session=role == "session")
        whole("chips", chips, example="chips=4", error=CompileError)
        maybe_whole("batch_size", batch_size, example="batch_size=32", error=CompileError)
        maybe_whole("micro_batch", micro_batch, example="micro_batch=8", error=CompileError)
        _divides(batch_size, micro_batch)
        if parallel is not None:
            instance("parallel", parallel, Parallel, takes="an ak.Parallel (or None: accelkit picks the split)",
                     example="parallel=ak.Parallel(data=2, pipeline=2)", error=CompileError)
            if parallel.chips != chips:
                raise CompileError(f"parallel={parallel} uses {parallel.chips} chips but chips={chips}",
                                   fix=f"pass chips={parallel.chips}, or change the Parallel factors so their "
                                       f"product is {chips}")
        if spec.max_chips is not None and chips > spec.max_chips:
            raise CompileError(f"{chips} chips is more than the largest {spec.name} system ({spec.max_chips})",
                               fix=f"use at most {spec.max_chips} chips")
        blocks = check_stages(stages)
        if blocks:
            if not family.pipeline_blocks:
                raise CompileError(f"stages= places a pipeline's blocks by the model's own split (PopTorch's "
                                   f"BeginBlock); {spec.name}'s model ({family.family}) splits a pipeline itself",
                                   fix="leave stages out (ak.Parallel(pipeline=n) still pipelines the model), or "
                                       "compile for an IPU (target='gc200' or 'bow')")
            n = max(c for _, c in blocks) + 1
            if parallel is None:
                if chips % n:
                    raise CompileError(f"stages= puts blocks on {n} chips, which does not divide chips={chips}",
                                       fix=f"pass chips={n} (or a multiple of it: replicas of the pipeline)")
                parallel = Parallel(data=chips // n, pipeline=n)
            elif parallel.pipeline != n:
                raise CompileError(f"stages= puts blocks on {n} chips but parallel={parallel} has a pipeline of "
                                   f"{parallel.pipeline}",
                                   fix=f"pass parallel=ak.Parallel(data={max(1, chips // n)}, pipeline={n}), or "
                                       f"number the stages' chips 0-{parallel.pipeline - 1}")
        return cls(spec=spec, precision=precision, batch_size=batch_size, micro_batch=micro_batch, chips=chips,
                   mode=mode, training=training, parallel=parallel, recompute=recompute, fusion=fusion,
                   fallback=fallback, stack=stack_name, device_iterations=device_iterations,
                   synthetic_data=synthetic_data, input_rate=input_rate, input_overlap=input_overlap,
                   output_mode=output_mode, optimizer=optimizer, optimizer_state=optimizer_state, stages=blocks,
                   group_host_sync=group_host_sync, family=family)

    def but(self, **changes: Any) -> CompileOptions:
        """The same options with ``batch_size``, ``micro_batch``, ``parallel``, ``training`` or ``chips`` changed
        (each checked; None is a value: ``but(micro_batch=None)`` drops the micro-batch). The chip, its family and
        its rates are not looked up again: the copy shares them."""
        unknown = sorted(set(changes) - {"batch_size", "micro_batch", "parallel", "training", "chips"})
        if unknown:
            raise CompileError(f"CompileOptions.but cannot change {unknown}",
                               fix="check new options with CompileOptions.check(...) instead")
        for name in ("batch_size", "micro_batch"):
            if name in changes:
                maybe_whole(name, changes[name], example=f"{name}=8", error=CompileError)
        if "training" in changes:
            flag("training", changes["training"])
        if "chips" in changes:
            whole("chips", changes["chips"], example="chips=4", error=CompileError)
            if self.spec.max_chips is not None and changes["chips"] > self.spec.max_chips:
                raise CompileError(f"{changes['chips']} chips is more than the largest {self.spec.name} system "
                                   f"({self.spec.max_chips})", fix=f"use at most {self.spec.max_chips} chips")
        chips = changes.get("chips", self.chips)
        par = changes.get("parallel", self.parallel if "chips" in changes else None)
        if par is not None:
            instance("parallel", par, Parallel, takes="an ak.Parallel", example="parallel=ak.Parallel(data=2)",
                     error=CompileError)
            if par.chips != chips:
                raise CompileError(f"parallel={par} uses {par.chips} chips but chips={chips}",
                                   fix=f"use a split whose factors multiply to {chips}")
            if self.stages and par.pipeline != max(c for _, c in self.stages) + 1:
                n = max(c for _, c in self.stages) + 1
                raise CompileError(f"these options place a pipeline's blocks on {n} chips (stages=); "
                                   f"parallel={par} has a pipeline of {par.pipeline}",
                                   fix=f"keep pipeline={n}: vary the replicas (data=) instead")
        out = replace(self, **changes)
        _divides(out.batch_size, out.micro_batch)
        if "rates" in self.__dict__:  # computed already: the copy, just built, shares it (same chip and precision)
            out.__dict__["rates"] = self.__dict__["rates"]
        return out

    @cached_property
    def rates(self) -> Rates:
        """What one chip delivers at this precision, as its family's model says (computed once, on first use).
        A measured target's rates depend on the model measured on this host: see ``CompiledProgram.rates``."""
        return self.family.rates(self.spec, self.precision)


def check_stages(stages: Any) -> tuple[tuple[str, int], ...]:
    """``stages`` as (module, chip) pairs: a mapping ``{"encoder.layer.6": 1, ...}`` or pairs; () for None."""
    if stages is None:
        return ()
    example = 'stages={"transformer.h.4": 1, "transformer.h.8": 2}'
    if isinstance(stages, Mapping):
        pairs = list(stages.items())
    elif isinstance(stages, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in stages):
        pairs = [tuple(p) for p in stages]
    else:
        raise CompileError(f"stages must map a module's name to the chip its block starts on, not {got(stages)}",
                           fix=f"e.g. {example}")
    out = []
    for module, chip in pairs:
        if not isinstance(module, str) or not module:
            raise CompileError(f"stages names modules by their names in model.named_modules(), not {got(module)}",
                               fix=f"e.g. {example}")
        if isinstance(chip, bool) or not isinstance(chip, int) or chip < 0:
            raise CompileError(f"stages[{module!r}] must be a chip's index (a whole number >= 0), not {got(chip)}",
                               fix=f"e.g. {example}")
        out.append((module, chip))
    if not out:
        raise CompileError("stages is empty", fix=f"leave it out, or name where blocks begin: {example}")
    return tuple(out)


def check_input_rate(rate: Any) -> float | None:
    """``input_rate``: None, or a positive, finite number of samples per second."""
    if rate is None:
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
        raise CompileError(f"input_rate must be the samples per second your input pipeline delivers (a number above "
                           f"0), not {got(rate)}",
                           fix="measure it: accelkit.profiler.input_rate(your_dataloader), or leave input_rate=None "
                               "when the pipeline keeps up")
    return float(rate)


def _divides(batch_size: int | None, micro_batch: int | None) -> None:
    if batch_size is not None and micro_batch is not None and batch_size % micro_batch:
        raise CompileError(f"batch_size {batch_size} is not divisible by micro_batch {micro_batch}",
                           fix=f"use a micro_batch that divides {batch_size}, e.g. "
                               f"{nearby_divisors(batch_size, micro_batch)}")


__all__ = ["FUSION_LEVELS", "OUTPUT_MODES", "RECOMPUTE", "CompileOptions", "Role"]
