"""``ak.compile``: capture (once per model and input shapes), check, lower, then the search over parallel splits
and memory plans, each candidate modelled once.

    prog = ak.compile(model, inputs, target="sn40l", chips=4)   # the fastest split and plan that hold
    prog = ak.compile(model, inputs, target="tsp", chips="auto")  # on as many chips as the model needs

The compiler builds one program for one split and one plan (:func:`accelkit.compiler.program.build`); choosing
among them needs the performance model, which sits above the compiler's values, so the choice lives here, in one
function that lists the candidates (:func:`candidates`) and scores them (:func:`fastest`). What to try when
nothing holds (more chips, a smaller chunk of the batch) is one search too, :func:`first_that_fits`, which
``chips="auto"``, GroqFlow's build, the compare widget and serve's prefill share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Literal, TypeVar

from torch import nn

from accelkit.compiler.memory import MemoryPlan, ModeError
from accelkit.compiler.options import CompileOptions, check_stages
from accelkit.compiler.program import CompiledProgram, Lowered, build, lower, memory_plans
from accelkit.cost import Parallel
from accelkit.graph.ir import Graph
from accelkit.hardware.spec import AcceleratorSpec


def splits(options: CompileOptions) -> list[Parallel]:
    """The parallel splits a compile considers: the one it was given, else replicating the model (data parallel)
    and, over several chips, the family's own model-parallel split."""
    if options.parallel is not None:
        return [options.parallel]
    return [Parallel(data=options.chips)] + ([options.family.split(options.chips)] if options.chips > 1 else [])


def candidates(lowered: Lowered, options: CompileOptions) -> list[tuple[Parallel, MemoryPlan]]:
    """Every (split, memory plan) worth modelling: each split that holds the model and gives every replica a
    sample (replicas with no sample are kept only when nothing else holds) and, in training, a whole share of the
    micro-batch (where another split gives one), with each of its plans worth timing
    (a faster mode holding the model in part, the first that holds it all). Raises the first split's
    :class:`ModeError` when no split holds the model."""
    plans: dict[Parallel, list[MemoryPlan]] = {}
    error: ModeError | None = None
    for par in splits(options):
        try:
            plans[par] = memory_plans(lowered, options, par)
        except ModeError as exc:
            error = error or exc
    if not plans:
        assert error is not None
        raise error
    usable = [p for p in plans if p.data <= lowered.batch] or list(plans)
    micro = options.micro_batch
    if micro is not None:  # a micro-batch splits over the replicas in whole samples (see program._batches)
        usable = [p for p in usable if micro % p.data == 0] or usable
    return [(p, plan) for p in usable for plan in plans[p]]


def fastest(programs: list[CompiledProgram]) -> CompiledProgram:
    """The program with the shortest modelled step (fewer model shards on a tie), as a real compiler's
    auto-parallel search picks. Each program is modelled once; the winner keeps its report."""
    if len(programs) == 1:
        return programs[0]
    return min(programs, key=lambda prog: (prog.report.step_time_s, prog.parallel.model_shards))


T = TypeVar("T")
R = TypeVar("R")
MAX_TRIES = 8  # a ModeError names the chips that hold the model, so a second try almost always fits


def first_that_fits(attempt: Callable[[T], R], start: T, after: Callable[[T, ModeError], T | None]) -> R:
    """``attempt(start)``; where that raises :class:`ModeError` (nothing holds), ``attempt`` again on what
    ``after(value, error)`` proposes, until one holds. ``after`` returning None means nothing is left to try: the
    last ModeError is raised, as it is after ``MAX_TRIES`` tries."""
    value = start
    for _ in range(MAX_TRIES - 1):
        try:
            return attempt(value)
        except ModeError as exc:
            proposed = after(value, exc)
            if proposed is None:
                raise
            value = proposed
    return attempt(value)


def more_chips(chips: int, error: ModeError) -> int | None:
    """The chip count a ModeError says would hold the model, when it is more than ``chips``; else None."""
    need = error.chips_needed
    return need if need is not None and need > chips else None


def compile_with(model: nn.Module | Graph, example_inputs: Any, options: CompileOptions) -> CompiledProgram:
    """:func:`compile` for options already checked (a Session's, serve's): nothing is checked or looked up again.
    Where a training batch does not fit and the family's compiler splits it itself (:func:`auto_micro_batch`),
    the program is the one that compiler would pick."""
    lowered = lower(model, example_inputs, options)
    try:
        found = candidates(lowered, options)
    except ModeError as exc:
        program = auto_micro_batch(lowered, options, exc)
        if program is None:
            raise
        return program
    return fastest([build(lowered, options, par, plan) for par, plan in found])


RECOMPUTE_ORDER = ("none", "selective", "full")


def auto_micro_batch(lowered: Lowered, options: CompileOptions, error: ModeError) -> CompiledProgram | None:
    """A training step whose activations do not fit, on a family whose compiler splits the batch itself
    (``family.auto_micro_batch``: Cerebras' micro_batch_size 'auto'), when the caller gave no micro-batch: for
    each recompute level from the one asked for (none, then selective, then full), the largest divisor of the
    batch whose micro-batches fit; of those, the fastest program, with a note saying what the compiler chose.
    None where the family does not do this or nothing fits even one sample at a time with full recompute."""
    family = options.family
    if not (options.training and options.micro_batch is None and family.auto_micro_batch):
        return None
    divisors = [d for d in range(lowered.batch, 0, -1) if lowered.batch % d == 0]
    found: list[tuple[Lowered, CompileOptions, list[tuple[Parallel, MemoryPlan]]]] = []
    for level in RECOMPUTE_ORDER[RECOMPUTE_ORDER.index(options.recompute):]:
        for micro in divisors:
            if level == options.recompute and micro == lowered.batch:
                continue  # what was asked for: it did not fit
            opts = replace(options, micro_batch=micro, recompute=level)
            low = replace(lowered, micro=micro)
            try:
                found.append((low, opts, candidates(low, opts)))
                break  # the largest micro-batch that fits at this level: a smaller one only streams the weights more
            except ModeError:
                continue
    if not found:
        return None
    programs = [build(low, opts, par, plan) for low, opts, cands in found for par, plan in cands]
    best = fastest(programs)
    did = []
    if best.micro_batch < lowered.batch:
        did.append(f"runs it as {lowered.batch // best.micro_batch} micro-batches of {best.micro_batch}, gradients "
                   "accumulated")
    if best.recompute != options.recompute:
        did.append(f"recomputes activations in backward (recompute='{best.recompute}', not "
                   f"'{options.recompute}')")
    why = (f"batch {lowered.batch} does not fit at once ({error.candidates.get(best.mode) or 'its activations'}): "
           f"the compiler {' and '.join(did)}, as {family.auto_micro_batch}; pass micro_batch= (and recompute=) to "
           "choose yourself")
    return replace(best, chosen=why)


def compile(  # noqa: A001 - the workflow's verb, as in the vendors' SDKs
    model: nn.Module | Graph,
    example_inputs: Any = None,
    *,
    target: str | AcceleratorSpec,
    batch_size: int | None = None,
    micro_batch: int | None = None,
    precision: str = "bf16",
    chips: int | Literal["auto"] = 1,
    mode: str = "auto",
    training: bool = False,
    parallel: Parallel | None = None,
    recompute: str = "none",
    fusion: str = "o1",
    fallback: str | None = None,
    stack: str | None = None,
    device_iterations: int = 1,
    synthetic_data: bool = False,
    input_rate: float | None = None,
    input_overlap: bool = True,
    output_mode: str | None = None,
    optimizer: str = "adamw",
    optimizer_state: str | None = None,
    stages: Mapping[str, int] | None = None,
    group_host_sync: bool = False,
) -> CompiledProgram:
    """Compile ``model`` for ``target``: passes, memory plan (execution mode) and placement.

    ``batch_size`` defaults to the example inputs' batch; FLOPs and activation bytes scale with it,
    weights don't. ``micro_batch`` (training) must divide it: gradients accumulate over
    ``batch_size / micro_batch`` micro-batches. Both count every data-parallel replica's samples together (each
    replica runs ``micro_batch / data`` at a time, which must be whole: ``micro_batch=320`` over
    ``ak.Parallel(data=16)`` is PopTorch's ``batch_size=20``). ``parallel`` splits ``chips`` into data, tensor and
    pipeline parallelism (their product must equal ``chips``); without it, ``chips`` replicate the
    model (data parallel) when one chip holds it, else split it into pipeline stages.
    ``chips="auto"`` compiles on one chip, else on as many as the model needs (the count each
    :class:`ModeError` names). ``mode="auto"`` picks the fastest execution mode that holds; naming one forces it.
    ``fusion`` is the RDU's level: ``"o0"`` one op per section, ``"o1"`` one layer per section.
    ``fallback="host"`` runs the ops the target refuses on the host CPU instead of refusing them: the graph is
    split into device and host partitions, the host's are timed on the host (the measured ``"host"`` spec) and
    every tensor that crosses goes over the host link, both ways (see :mod:`accelkit.compiler.fallback`).
    ``stack`` is the software stack that runs the program: on a GPU ``"compiled"`` (torch.compile, the default
    here), ``"eager"`` (PyTorch eager, op by op, what ``ak.Session`` runs by default) or ``"engine"`` (a serving
    engine, ``ak.serve``'s default); every family names its own (``accelkit.families.model_for(family).stacks``).
    The report says which.
    ``device_iterations`` is how many steps one call from the host runs on the device (PopTorch's
    ``deviceIterations``, an on-device loop): every step's inputs and outputs cross the host link, but the call's
    round trip is paid once. ``synthetic_data=True`` makes the inputs on the device (Graphcore's
    ``enableSyntheticData``): nothing crosses the link, which shows the chip's own speed. ``input_rate`` is how
    many samples per second the host's input pipeline delivers (your DataLoader's, measured:
    ``accelkit.profiler.input_rate(loader)``): it loads the next batch while the device computes this one, so a
    step takes at least ``batch / input_rate`` and the report says when the device waits for its data.
    ``input_overlap=False`` says the pipeline runs in the training process between steps (PyTorch's
    ``num_workers=0``, PopTorch's synchronous ``DataLoader``): every batch's loading time adds to its step.
    ``output_mode`` is what each call sends back (PopTorch's ``OutputMode``): ``"final"`` (the call's last step's
    outputs, a training model's default) or ``"all"`` (every step's, an inference model's default); where every
    copy synchronises with the host (Poplar), ``"all"`` in training adds a copy to every step: one per output
    tensor, as one per input tensor comes in, each where the schedule first needs it (PopART's default).
    ``group_host_sync=True`` groups a step's copies into one per direction, at its start and end (PopART's
    ``groupHostSync``, PopTorch's ``opts._Popart.set("groupHostSync", True)``): fewer syncs with the host, the
    inputs kept in memory longer.
    ``optimizer`` is the update a training step runs: ``"adamw"`` (the default), ``"adam"``, ``"sgd"`` (with
    momentum: one velocity per weight), ``"sgd-plain"`` (no state) or ``"rmsprop"`` (with momentum: a running average
    of squared gradients and a velocity per weight); it sets the optimizer step's kernels and the
    optimizer state the memory plan holds (an ``ak.Session`` uses its own optimizer's). ``optimizer_state`` is
    where that state lives: ``"mixed"`` (fp32 state, and an fp32 master copy of 16-bit weights: mixed precision),
    ``"fp32"`` (fp32 state, no master copy: PopTorch's ``accum_type=torch.float32``) or ``"16-bit"`` (the state in
    the weights' 16-bit format, no master copy: what PyTorch's and PopTorch's optimizers keep for a
    ``model.half()`` model); None picks ``"16-bit"`` for a model whose own weights are 16-bit, else ``"mixed"``.
    ``stages`` places a pipeline's layers as the model's own split does, where the family takes one (an IPU:
    PopTorch's ``BeginBlock``): ``{module name: chip}``, each a block that begins at that module's first op and runs
    on that chip until the next block (a chip may hold several: a tied head back on the first IPU); without it, the
    forward's layers are cut where their FLOPs balance. ``parallel``'s pipeline (derived when left out) is the
    number of chips the stages use.
    """
    auto = chips == "auto"
    if auto and stages:  # the model's own split fixes the chips it needs: one per IPU its blocks name
        chips, auto = max(c for _, c in check_stages(stages)) + 1, False
    options = CompileOptions.check(target, precision=precision, batch_size=batch_size, micro_batch=micro_batch,
                                   chips=1 if auto else chips, mode=mode, training=training, parallel=parallel,
                                   recompute=recompute, fusion=fusion, fallback=fallback, stack=stack,
                                   device_iterations=device_iterations, synthetic_data=synthetic_data,
                                   input_rate=input_rate, input_overlap=input_overlap, output_mode=output_mode,
                                   optimizer=optimizer, optimizer_state=optimizer_state, stages=stages,
                                   group_host_sync=group_host_sync)
    if not auto:
        return compile_with(model, example_inputs, options)
    return first_that_fits(lambda n: compile_with(model, example_inputs, options if n == 1 else options.but(chips=n)),
                           1, more_chips)


__all__ = ["candidates", "compile", "compile_with", "fastest", "first_that_fits", "more_chips", "splits"]
