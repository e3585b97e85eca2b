"""``poptorch.trainingModel`` / ``inferenceModel``: a PyTorch model as one IPU program, called like the model.

    class Net(nn.Module):
        def forward(self, x, labels=None):
            out = self.body(x)
            if labels is None:
                return out
            return out, self.loss(out, labels)          # PopTorch style: the loss is computed in forward

    opts = poptorch.Options().replicationFactor(2)
    opts.Training.gradientAccumulation(4)
    train = poptorch.trainingModel(Net(), options=opts, optimizer=torch.optim.SGD(net.parameters(), lr=0.1))
    out, loss = train(x, labels)                        # forward, backward and the update: one call
    infer = poptorch.inferenceModel(net)                # shares the weights with the training model
    print(train.report())                               # modelled time on the IPUs

PopTorch compiles forward, loss, backward and the optimizer step into one program for the IPUs, so the
loss must come out of ``forward``. Underneath is an :class:`ak.Session` on ``gc200`` (or ``bow``) with
``chips = IPUs per replica x replicationFactor`` and ``ak.Parallel(data=replicas, pipeline=IPUs)``; the
numerics are real PyTorch on this CPU (fp32, or fp16 for a ``model.half()`` model), the time is modelled.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any

import torch
from torch import nn

from accelkit.compiler.program import CompiledProgram, Parallel
from accelkit.errors import CaptureError
from accelkit.facades.poptorch import export
from accelkit.facades.poptorch.blocks import (
    BoundKeywords,
    LossFirst,
    PipelinePlan,
    PipelineStage,
    blocks_in_forward,
    pipeline_plan,
)
from accelkit.facades.poptorch.options import (
    Options,
    OutputMode,
    PopTorchError,
    ReductionType,
    VariableRetrievalMode,
    _PhasedExecution,
    loading_note,
)
from accelkit.facades.poptorch.partials import FloatPartials, MixedUpcast, wants_float_partials
from accelkit.facades.poptorch.replicas import Grouping, ReplicaGroups, expand_inputs, weight_grouping
from accelkit.runtime import facade_log
from accelkit.runtime.session import Session, SessionReport, StepResult

DEFAULT_LR = 0.01  # PopTorch's trainingModel uses SGD(lr=0.01) when no optimizer is given


def precision_of(model: nn.Module) -> str:
    """fp16 for a ``model.half()`` model, else fp32; the IPU has no bfloat16."""
    dtypes = {p.dtype for p in model.parameters() if p.is_floating_point()}
    if torch.bfloat16 in dtypes:
        raise PopTorchError("the model is bfloat16, which the IPU does not have (it computes in fp16 and fp32)",
                            fix="use model.half() for fp16, or model.float() for fp32")
    return "fp16" if torch.float16 in dtypes else "fp32"


def _chunks(args: tuple[Any, ...], n: int) -> list[tuple[Any, ...]]:
    """Split every batched tensor in ``args`` into ``n`` equal parts along dim 0 (one per device iteration),
    inside tuples, lists and dicts too (PyTorch Lightning passes its batch as one ``(x, y)`` argument). Each part
    reaches the model dense, as PopTorch's copy to the IPU makes it: a slice such as ``batch[:, :-1]`` can then be
    ``view``-ed as on the IPU."""
    leaves, spec = torch.utils._pytree.tree_flatten(args)
    parts = [[c.contiguous() for c in t.chunk(n, dim=0)] if isinstance(t, torch.Tensor) and t.dim()
             else [t] * n for t in leaves]
    return [tuple(torch.utils._pytree.tree_unflatten([p[i] for p in parts], spec)) for i in range(n)]


def _holds_tensors(value: Any) -> bool:
    """A tensor, or a container (dict, list, tuple) with a tensor among its leaves."""
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (dict, list, tuple)):
        return any(isinstance(t, torch.Tensor) for t in torch.utils._pytree.tree_flatten(value)[0])
    return False


class _Constants:
    """The tensors a model holds as plain attributes (``self.i = torch.tensor([0.])``, not a parameter nor a
    buffer), which PopTorch bakes into the IPU program as constants when it first traces the model: every call
    computes from their values at that moment, and what a call does to them never comes back to the host (PopTorch's
    user guide, "Buffers": a counter kept so returns 1 at every call). Their values at the first call are kept."""

    def __init__(self, model: nn.Module) -> None:
        self.slots = [(m, name) for m in model.modules() for name, v in vars(m).items()
                      if isinstance(v, torch.Tensor) and not name.startswith("_")]
        self.traced = [getattr(m, name).detach().clone() for m, name in self.slots]

    def restore(self) -> None:
        """Give each its traced value again (a fresh copy: the model may change it in place)."""
        for (m, name), value in zip(self.slots, self.traced, strict=True):
            object.__setattr__(m, name, value.clone())


class _TracedConstants:
    """Around one call of a wrapped model: the model's plain tensor attributes hold their traced values while it
    runs; afterwards the host keeps what the first call (PopTorch's trace, on the host) left in them, and after any
    later call what it held before the call."""

    def __init__(self, executor: Any) -> None:
        self.executor = executor

    def __enter__(self) -> _TracedConstants:
        ex = self.executor
        self.first = ex.__dict__.get("_constants") is None
        if self.first:
            ex._constants = _Constants(ex.model)
        self.host = [getattr(m, name) for m, name in ex._constants.slots]
        # the buffers as they are before the first call's look at the model (its Blocks, its capture)
        self.buffers = [(b, b.detach().clone()) for b in ex.model.buffers()] if self.first else []
        ex._constants.restore()
        return self

    def compiled(self) -> None:
        """After the compile: what looking at the model did to its constants and buffers is undone (PopTorch's
        trace runs on copies of the buffers; the IPU program starts from the traced constants)."""
        self.executor._constants.restore()
        with torch.no_grad():
            for buffer, value in self.buffers:
                buffer.copy_(value)
        self.buffers = []

    def __exit__(self, *exc: Any) -> None:
        if self.first:
            return  # the host keeps what the trace did to them
        for (m, name), value in zip(self.executor._constants.slots, self.host, strict=True):
            object.__setattr__(m, name, value)


def _recompute(kind: int, ipus: int) -> str:
    """accelkit's ``recompute`` for PopART's ``autoRecomputation`` (RecomputationType: None, Standard, NormOnly,
    Pipeline, RecomputeAll) on a model over ``ipus`` pipeline stages."""
    if kind in (1, 2):
        return "selective"
    if kind == 4 or (kind == 3 and ipus > 1):
        return "full"
    return "none"


def _state_format(optimizer: Any, model: nn.Module) -> str | None:
    """Where PopTorch keeps the optimizer state of ``model``'s weights (accelkit's ``optimizer_state``): in the
    weights' own 16-bit format unless an ``accum_type`` asks for fp32, and never with an fp32 master copy; None
    for fp32 weights (fp32 state, as accelkit's default)."""
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    if dtype not in (torch.float16, torch.bfloat16):
        return None
    state = optimizer._state_dtype(dtype) if hasattr(optimizer, "_state_dtype") else dtype
    return "fp32" if state == torch.float32 else "16-bit"


def _output_mode(o: Options) -> str | None:
    """What the clock takes from ``options.outputMode``: ``"all"`` where every iteration's outputs come back
    (``All``, or ``EveryN`` with a period of 1), ``"final"`` where one copy per call does (``Final``, ``Sum``, a
    longer ``EveryN`` period: its few copies are not counted), None for PopTorch's default by model kind."""
    mode = o.output_mode
    if mode == OutputMode.Default:
        return None
    every = mode == OutputMode.All or (mode == OutputMode.EveryN and getattr(o, "output_return_period", 1) == 1)
    return "all" if every else "final"


def _merge(outs: list[Any], mode: OutputMode = OutputMode.All) -> Any:
    """Outputs of several device iterations as one: batched tensors concatenated (``OutputMode.All`` /
    ``EveryN``: the iterations given) or summed (``OutputMode.Sum``); scalars stacked."""
    if mode == OutputMode.Sum:
        return torch.utils._pytree.tree_map(lambda *ts: torch.stack(ts).sum(0) if isinstance(ts[0], torch.Tensor)
                                            else ts[-1], *outs)
    if len(outs) == 1:
        return outs[0]
    flat = [torch.utils._pytree.tree_flatten(o) for o in outs]
    merged = []
    for i, v in enumerate(flat[0][0]):
        vals = [f[0][i] for f in flat]
        if isinstance(v, torch.Tensor):
            merged.append(torch.cat(vals) if v.dim() else torch.stack(vals))
        else:
            merged.append(v)
    return torch.utils._pytree.tree_unflatten(merged, flat[0][1])


class _GroupableWeight:
    """``poptorch_model.<weight>``: PopTorch's ``ReplicaGroupingWrapper`` (``_poplar_executor.py``): the weight's
    attributes, and ``replicaGrouping(comm_group_type, shards, variable_retrieval_mode)``, which gives each group
    of replicas its own value of the weight (:mod:`.replicas`)."""

    def __init__(self, executor: PoplarExecutor, name: str, weight: nn.Parameter) -> None:
        self._executor, self._name, self._weight = executor, name, weight

    def replicaGrouping(self, comm_group_type: Any, shards: int, variable_retrieval_mode: Any) -> None:  # noqa: N802
        if self._executor.__dict__.get("_session") is not None:
            raise PopTorchError(f"{self._name}.replicaGrouping(...) after the model's first call: the program is "
                                "compiled then, with the weights as they were grouped",
                                fix="call replicaGrouping before the first call (or compile) of the PopTorch model")
        self._executor.per_replica_params[self._name] = weight_grouping(self._name, comm_group_type, shards,
                                                                        variable_retrieval_mode)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._weight, name)

    def __repr__(self) -> str:
        return f"{self._name} of the PopTorch model (PopTorch's ReplicaGroupingWrapper): {self._weight!r}"


class PoplarExecutor:
    """A model compiled for IPUs (what ``trainingModel`` / ``inferenceModel`` return); call it like the model.

    The first call fixes the combined batch (``micro x gradientAccumulation x replicationFactor x
    deviceIterations`` samples) and compiles the program; every call then runs ``deviceIterations`` steps.
    """

    def __init__(self, model: nn.Module, options: Options | None, optimizer: torch.optim.Optimizer | None,
                 training: bool) -> None:
        if not isinstance(model, nn.Module):
            raise PopTorchError(f"PopTorch wraps an nn.Module, not {type(model).__name__}", fix="pass the model object")
        if training and optimizer is None:
            optimizer = torch.optim.SGD(model.parameters(), lr=DEFAULT_LR)
        self.model = model
        # PopTorch keeps a copy of the options (later changes to the script's object do not reach a wrapped model)
        # and resolves OutputMode.Default on it: Final in training, All in inference
        self.options = options.clone() if options is not None else Options()
        if self.options.output_mode == OutputMode.Default:
            self.options.outputMode(OutputMode.Final if training else OutputMode.All)
        self.optimizer = optimizer if training else None
        self._share_rounding(self.optimizer)
        self._anchored_grads: dict[str, torch.Tensor] = {}  # Gradient___<param> -> the last step's gradient
        if training and self.optimizer is not None:
            self.optimizer.register_step_post_hook(self._keep_anchored_grads)
        self.training = training
        self.pipeline: PipelinePlan = pipeline_plan(model, self.options.block_ipus())
        self._block_starts: tuple[tuple[str, int], ...] = ()  # where forward's poptorch.Blocks begin: (module, IPU)
        self._session: Session | None = None
        self._bound: BoundKeywords | None = None  # the first call's keyword layout, when it used keywords
        self._combined_batch: int | None = None
        self._example: tuple[Any, ...] | None = None  # one device iteration's inputs, for the program
        self._compiled_shown = False  # PopTorch's "Graph compilation" bar, printed once per model
        # poptorch_model.<weight>.replicaGrouping(...): weight name -> (grouping, retrieval mode), replicas.py
        self.per_replica_params: dict[str, tuple[Grouping, VariableRetrievalMode]] = {}

    def _share_rounding(self, optimizer: torch.optim.Optimizer | None) -> None:
        """A poptorch.optim optimizer stores fp16 weights and state with the options' rounding (stochastic or not)."""
        if optimizer is not None and hasattr(optimizer, "stochastic_rounding"):
            optimizer.stochastic_rounding = bool(self.options.Precision.stochastic_rounding)  # type: ignore[attr-defined]

    # ---- the session behind the calls ----------------------------------------------------------
    @property
    def chips(self) -> int:
        """IPUs the program runs on: the pipeline's IPUs x the replicas."""
        return self.pipeline.ipus * self.options.replication_factor

    def _compile_with_bar(self, session: Session, example: tuple[Any, ...]) -> CompiledProgram:
        """Compile for ``example`` (once; later calls reuse the program) and, the first time, print PopTorch's
        ``Graph compilation: 100%|...| 100/100 [mm:ss<00:00]`` bar in a script's output (stdout; none in a notebook,
        where a time measured on this machine would change every run); the time in it is
        this machine's (accelkit's compile), not the IPU compiler's, which the report models."""
        t0 = time.perf_counter()
        program = session.program(example, training=session.optimizer is not None)
        if not self._compiled_shown and not _in_notebook():  # a script's output, not a notebook's
            self._compiled_shown = True
            mins, secs = divmod(round(time.perf_counter() - t0), 60)
            bar = "\u2588" * 10
            print(f"Graph compilation: 100%|{bar}| 100/100 [{mins:02d}:{secs:02d}<00:00]", flush=True)
            # this CPU computes every replica's samples of every device iteration: say so when that is minutes
            per_step = sum(k.flops for k in program.kernels) * program.parallel.data
            samples = program.batch_size * self.options.device_iterations
            facade_log.cpu_work(f"poptorch.{'trainingModel' if self.training else 'inferenceModel'}"
                                f"({type(self.model).__name__})", per_step * self.options.device_iterations,
                                f"{samples} samples' {'training steps' if self.training else 'inference'}")
        return program

    def _session_for(self, args: tuple[Any, ...]) -> Session:
        first = next((t for t in torch.utils._pytree.tree_flatten(args)[0] if isinstance(t, torch.Tensor) and t.dim()),
                     None)
        no_inputs = not any(isinstance(t, torch.Tensor) for t in torch.utils._pytree.tree_flatten(args)[0])
        if first is None and not no_inputs:
            raise PopTorchError("the inputs have no batched tensor", fix="pass tensors with a batch dimension first")
        # a model that takes no input (PopTorch's buffer example, a counter) runs one sample per micro-batch
        n = self.options.combined_batch_factor(self.training) if first is None else int(first.shape[0])
        if self._session is not None:
            if n != self._combined_batch:
                raise PopTorchError(f"this model was compiled for batches of {self._combined_batch} samples, got {n} "
                                    "(an IPU program has fixed shapes)",
                                    fix="use poptorch.DataLoader(options, dataset, batch_size=micro), which drops "
                                        "the last partial batch, or build a new model for the new shape")
            return self._session
        o = self.options
        ga = o.Training.gradient_accumulation if self.training else 1
        # grouped inputs reach the session spread over the replicas (replicas.expand_inputs)
        factor = o.combined_batch_factor(self.training) * o.input_group_size
        if n % factor:
            raise PopTorchError(
                f"a batch of {n} samples does not split into deviceIterations ({o.device_iterations}) x "
                + (f"replicationFactor ({o.replication_factor})" if o.input_group_size == 1 else
                   f"input groups ({o.replication_factor} replicas / inputReplicaGrouping's {o.input_group_size})")
                + (f" x gradientAccumulation ({ga})" if self.training else "") + f" = {factor} micro-batches",
                fix=f"use batches of a multiple of {factor} samples: poptorch.DataLoader(options, dataset, "
                    "batch_size=micro) builds them")
        step = n // o.device_iterations  # samples per weight update (per iteration, in inference)
        runs: nn.Module = self._bound if self._bound is not None else self.model
        grouped = bool(self.per_replica_params) or o.input_group_size > 1
        if self.pipeline.ipus == 1:  # no BeginBlock: maybe poptorch.Block inside forward
            # (the replicas' inputs, one replica's share, when grouped weights need their group's value)
            probe = ReplicaGroups(runs, o.replication_factor, self.per_replica_params, training=self.training) \
                if grouped else runs
            # one micro-batch (a weight update's ga of them each hold replicas x micro samples), as PopTorch traces
            # it: an input with one value per micro-batch (a mixup coefficient) broadcasts over that micro-batch
            blocks = blocks_in_forward(probe, _chunks(_chunks(args, o.device_iterations)[0], ga)[0], o.block_ipus())
            if blocks and max(ipu for _, ipu, _ in blocks) > 0:
                on = {ipu: [u or "Block" for u, i, _ in blocks if i == ipu] for ipu in sorted({i for _, i, _ in blocks})}
                self.pipeline = PipelinePlan(tuple(PipelineStage(ipu, ", ".join(dict.fromkeys(uids)), ())
                                                   for ipu, uids in on.items()))
                self._block_starts = tuple((m, i) for _, i, m in blocks if m)
        if grouped and self.pipeline.ipus > 1:
            raise PopTorchError("replica-grouped weights or inputs on a pipelined model: accelkit groups the "
                                "replicas of a model on one IPU",
                                fix="run the grouped model without BeginBlocks, or the pipeline without grouping")
        if self.pipeline.ipus == 1 and (grouped or o.replication_factor > 1):
            # each replica its own forward: its own losses, its own batch statistics (replicas.py)
            runs = ReplicaGroups(runs, o.replication_factor, self.per_replica_params, training=self.training)
        r, ipus = o.replication_factor, self.pipeline.ipus
        scaling = float(getattr(self.optimizer, "loss_scaling", 1.0))
        summed = o.Training.reduction == ReductionType.Sum  # gradients added over micro-batches and replicas
        wrapped = LossFirst(runs, scaling, float(o.Training.gradient_accumulation * r) if summed else 1.0) \
            if self.training else runs
        # the BeginBlocks (or the Blocks forward entered) place the layers, named as the session sees them: inside
        # its wrappers
        starts = pipeline_plan(wrapped, o.block_ipus()).starts if ipus > 1 else ()
        if ipus > 1 and not starts and self._block_starts:
            prefix = "model." if wrapped is not runs else ""
            starts = tuple((prefix + m, i) for m, i in self._block_starts)
        # a block that begins at a layer without weights (a loss module, a dropout) may run nothing the compiler
        # sees on its own: the layers with weights place the pipeline
        modules = dict(wrapped.named_modules())
        starts = tuple((m, i) for m, i in starts
                       if m in modules and any(True for _ in modules[m].parameters()))
        if starts and max(i for _, i in starts) + 1 != ipus:  # the last IPU holds no layer with weights
            starts = ()  # the compiler's own split over the same IPUs
        self._session = Session(
            wrapped, target=o.target, optimizer=self.optimizer, stages=starts or None,
            precision=precision_of(self.model), batch_size=step, micro_batch=step // ga if ga > 1 else None,
            chips=r * ipus, parallel=Parallel(data=r, pipeline=ipus), device_iterations=o.device_iterations,
            synthetic_data=bool(getattr(o, "synthetic_data", False)), output_mode=_output_mode(o),
            group_host_sync=bool(getattr(o, "group_host_sync", False)),
            recompute=_recompute(getattr(o, "recomputation", 0), ipus),
            # phased execution streams each phase's weights in from Streaming Memory
            mode="streaming-memory" if isinstance(o.execution_strategy, _PhasedExecution) else "auto",
            optimizer_state=_state_format(self.optimizer, self.model) if self.training else None)
        self._combined_batch = n
        facade_log.register_run(repr(self), self.report)
        return self._session

    def _positional(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """The call's inputs as positional tensors. Keyword calls (``model(input_ids=ids, return_dict=False)``,
        as Graphcore's BERT tutorial makes them) are bound to ``forward``'s signature; the first call fixes
        which arguments are tensors and the values of the others, as the compiled program does."""
        if not kwargs and self._bound is None:
            return args
        import inspect

        sig = inspect.signature(self.model.forward)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise PopTorchError(f"the call does not match {type(self.model).__name__}.forward: {exc}",
                                fix="call the PopTorch model with the arguments its forward takes") from None
        given: dict[str, Any] = {}
        for k, v in bound.arguments.items():
            kind = sig.parameters[k].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                given.update(v)  # forward(..., **kwargs): e.g. transformers' return_dict
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                raise PopTorchError(f"{type(self.model).__name__}.forward takes *{k}; keyword calls need named "
                                    "arguments", fix="call the model positionally, or give forward named arguments")
            else:
                given[k] = v
        # a tensor, or a dict / list / tuple of them (PyG's x_dict and edge_index_dict), is an input, streamed to
        # the IPU every call as PopTorch flattens it; anything else is a setting the program fixes
        names = tuple(k for k, v in given.items() if _holds_tensors(v))
        constants = {k: v for k, v in given.items() if k not in names}
        if self._bound is None:
            self._bound = BoundKeywords(self.model, names, constants)
        elif (names, constants) != (self._bound.names, self._bound.constants):
            raise PopTorchError(
                f"this model was compiled for tensors {list(self._bound.names)} and settings {self._bound.constants}, "
                f"this call passes tensors {list(names)} and settings {constants} (an IPU program is fixed at its "
                "first call)", fix="call it the same way every time, or wrap the model again for the new call")
        return tuple(given[k] for k in names)

    def _spread(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """With grouped inputs (``opts.inputReplicaGrouping``), the call's batches laid out one slice per replica
        (each replica's group's), as the session's data-parallel replicas take them (replicas.expand_inputs)."""
        o = self.options
        if o.input_group_size == 1:
            return args
        first = next((t for t in torch.utils._pytree.tree_flatten(args)[0] if isinstance(t, torch.Tensor) and t.dim()),
                     None)
        steps = o.device_iterations * (o.Training.gradient_accumulation if self.training else 1)
        if first is None or int(first.shape[0]) % (steps * o.input_groups()):
            raise PopTorchError(
                f"the batch dimension ({None if first is None else int(first.shape[0])}) must be a multiple of "
                f"deviceIterations ({o.device_iterations}) x (replicationFactor ({o.replication_factor}) / "
                f"inputReplicaGrouping's input_group_size ({o.input_group_size}))"
                + (f" x gradientAccumulation ({o.Training.gradient_accumulation})" if self.training else "")
                + f" = {steps * o.input_groups()}, as PopTorch requires",
                fix="give each call a batch of that many micro-batches: one slice per input group per step")
        return expand_inputs(args, o.replication_factor, Grouping(o.input_group_type, o.input_group_size), steps)

    # ---- calls ----------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run ``deviceIterations`` steps on this batch; keyword arguments go to the model's ``forward``.
        What comes back follows ``options.outputMode``: by default (``OutputMode.Default``) a training model
        returns the last iteration's outputs (e.g. ``(output, loss)``) and an inference model every
        iteration's, concatenated; ``All``, ``Final``, ``Sum`` and ``EveryN`` are honoured as PopTorch does."""
        if getattr(self, "_destroyed", False):
            raise PopTorchError(f"this {'trainingModel' if self.training else 'inferenceModel'} was destroyed "
                                "(poptorch_model.destroy())",
                                fix="wrap the model again: poptorch.trainingModel(model, opts, optimizer) or "
                                    "poptorch.inferenceModel(model, opts)")
        args = self._spread(self._positional(args, kwargs))
        self.model.train(self.training)  # as PopTorch does before it traces: a trainingModel and an inferenceModel
        # may wrap the same model object (PopTorch's user guide compiles both from one)
        kind = "trainingModel" if self.training else "inferenceModel"
        try:
            # the first call runs the model (counting its Blocks, compiling): PyTorch's errors there name this call
            # mixed float16 / float32 products computed in float32, as PopTorch 3 does (partials.py)
            with facade_log.vendor_call(f"poptorch.{kind}({type(self.model).__name__})(...)"), MixedUpcast(), \
                    _TracedConstants(self) as constants:
                session = self._session_for(args)
                chunks = _chunks(args, self.options.device_iterations)
                self._example = chunks[0]
                self._compile_with_bar(session, chunks[0])
                constants.compiled()  # what the capture did to the constants and buffers is not what the IPU runs
                # fp16 products summed in fp32 partials, as the IPU does by default (partials.py)
                with FloatPartials() if wants_float_partials(self.model, chunks[0]) else contextlib.nullcontext():
                    steps: list[StepResult] = [session.run(*chunk) for chunk in chunks]
        except CaptureError as exc:  # capturing the model ran our loss check: report that, not the capture
            if isinstance(exc.__cause__, PopTorchError):
                raise exc.__cause__ from None
            raise
        self._latencies = [s.simulated_time_s for s in steps]
        outs = [s.outputs[1] if self.training else s.outputs for s in steps]
        # a training step's micro-batches (gradientAccumulation): PopTorch returns each one's outputs, as it does
        # each device iteration's (Final: the last micro-batch's; Sum and All: over every micro-batch)
        micro = [m[1] if self.training else m for s in steps for m in (s.micro_outputs or (None,)) if m is not None]
        micro = micro if len(micro) >= len(outs) else outs
        mode = self.options.output_mode
        if mode == OutputMode.Default:
            mode = OutputMode.Final if self.training else OutputMode.All
        if mode == OutputMode.Final:
            out = micro[-1]
        elif mode == OutputMode.EveryN:
            out = _merge(outs[self.options.output_return_period - 1::self.options.output_return_period])
        else:
            out = _merge(micro, mode)
        return torch.utils._pytree.tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, out)

    def compile(self, *args: Any, **kwargs: Any) -> CompiledProgram:
        """Compile for these inputs without running a step (``PoplarExecutor.compile``); returns the program."""
        args = self._spread(self._positional(args, kwargs))
        self.model.train(self.training)  # as PopTorch does before it traces: a trainingModel and an inferenceModel
        # may wrap the same model object (PopTorch's user guide compiles both from one)
        with MixedUpcast(), _TracedConstants(self) as constants:
            session = self._session_for(args)
            self._example = _chunks(args, self.options.device_iterations)[0]
            program = self._compile_with_bar(session, self._example)
            constants.compiled()
            return program

    def compileAndExport(self, filename: str | os.PathLike[str], *args: Any, export_model: bool = True,  # noqa: N802
                         **kwargs: Any) -> None:
        """Compile for these inputs and write the weights and compile settings to ``filename`` (PopTorch writes
        the IPU executable there; see :mod:`accelkit.facades.poptorch.export`)."""
        self.compile(*args, **kwargs)
        export.export(self, filename, export_model=export_model)

    def loadExecutable(self, filename: str | os.PathLike[str]) -> None:  # noqa: N802 - PopTorch's name
        """Use what ``compileAndExport`` wrote: its weights, loaded into this model."""
        export.load_executable(self, filename)

    def setOptimizer(self, optimizer: torch.optim.Optimizer) -> None:  # noqa: N802 - PopTorch's name
        """Use ``optimizer`` for the following steps (e.g. a new learning rate)."""
        if not self.training:
            raise PopTorchError("an inferenceModel has no optimizer", fix="use setOptimizer on the trainingModel")
        self.optimizer = optimizer
        self._share_rounding(optimizer)
        if self._session is not None:
            self._session.optimizer = optimizer
            if isinstance(self._session.model, LossFirst):
                self._session.model.loss_scaling = float(getattr(optimizer, "loss_scaling", 1.0))

    def _keep_anchored_grads(self, optimizer: Any, *_: Any) -> None:
        """After each optimizer step (before the gradients are cleared): copy the anchored gradients."""
        params = dict(self.model.named_parameters())
        for long_name in self.options.anchored.values():
            p = params.get(long_name.removeprefix("Gradient___")) if long_name.startswith("Gradient___") else None
            if p is not None and p.grad is not None:
                self._anchored_grads[long_name] = p.grad.detach().clone()

    def getTensorNames(self) -> list[str]:  # noqa: N802 - PopTorch's name
        """The program's tensor names that ``opts.anchorTensor`` can ask for here: each parameter and, for a
        training model, its gradient ``Gradient___<parameter>`` and its value after the update
        ``UpdatedVar___<parameter>`` (PopART's naming). PopART's other internal
        tensors (activations, optimizer state) have no name in accelkit's program."""
        names = [n for n, _ in self.model.named_parameters()]
        return names + ([f"{k}___{n}" for k in ("Gradient", "UpdatedVar") for n in names] if self.training else [])

    def getAnchoredTensor(self, short_name: str) -> torch.Tensor:  # noqa: N802 - PopTorch's name
        """The value of the tensor anchored as ``short_name`` (``opts.anchorTensor``) after the last call: a
        weight (``UpdatedVar___<weight>``: after the step's update), or the last step's gradient of one (unscaled, as
        the optimizer used it)."""
        long_name = self.options.anchored.get(short_name)
        if long_name is None:
            raise PopTorchError(f"no tensor is anchored as {short_name!r}",
                                fix=f"call opts.anchorTensor({short_name!r}, <tensor name>) before building the model; "
                                    "anchored: " + (", ".join(self.options.anchored) or "none"))
        params = dict(self.model.named_parameters())
        grad = long_name.startswith("Gradient___")
        updated = long_name.startswith("UpdatedVar___")  # PopART's name for a weight after the step's update
        param = params.get(long_name.removeprefix("Gradient___").removeprefix("UpdatedVar___"))
        if param is None or ((grad or updated) and not self.training):
            raise PopTorchError(f"opts.anchorTensor(..., {long_name!r}): accelkit's program has no tensor of that name",
                                fix="anchor a parameter, its Gradient___ or its UpdatedVar___ name; "
                                    "poptorch_model.getTensorNames() lists them")
        if not grad:
            return param.detach().clone()  # the weight, which after a training call is the updated one
        if long_name not in self._anchored_grads:
            raise PopTorchError(f"{long_name} has no value yet: the model has not run a training step",
                                fix="read anchored gradients after calling the trainingModel")
        return self._anchored_grads[long_name].clone()

    def copyWeightsToHost(self) -> None:  # noqa: N802 - PopTorch's name
        """PopTorch copies the trained weights from the IPUs to the host model. The simulated IPUs train the
        host model's own parameters, so there is nothing to copy."""

    def copyWeightsToDevice(self) -> None:  # noqa: N802 - PopTorch's name
        """PopTorch copies the host model's weights to the IPUs (after the script changed them, or loaded a
        checkpoint). The simulated IPUs compute on the host model's own parameters: nothing to copy."""

    copyWeightsToDeviceIfNeeded = copyWeightsToDevice  # noqa: N815 - PopTorch's name

    def detachFromDevice(self) -> None:  # noqa: N802 - PopTorch's name
        """Release the IPUs (PopTorch). Nothing is held here."""

    def attachToDevice(self) -> None:  # noqa: N802 - PopTorch's name
        """Attach the IPUs again after :meth:`detachFromDevice` (PopTorch). Nothing is held here."""

    def isAttachedToDevice(self) -> bool:  # noqa: N802 - PopTorch's name
        return not getattr(self, "_destroyed", False)

    def isCompiled(self) -> bool:  # noqa: N802 - PopTorch's name
        """Whether the model has been compiled (by its first call or :meth:`compile`), as PopTorch says."""
        return self._example is not None

    @property
    def _executable(self) -> CompiledProgram | None:
        """PopTorch's compiled executable, None until compiled: PyTorch Lightning's IPU strategy reads this
        private attribute to know whether to attach or detach a model; here it is the compiled program."""
        return self.program

    def destroy(self) -> None:
        """Free the IPUs and the compiled program (PopTorch): the host model keeps its trained weights, and a
        later call on this wrapper is refused, as PopTorch refuses it. The modelled report of the steps run so
        far stays readable."""
        self._destroyed = True

    def getLatency(self) -> tuple[float, float, float]:  # noqa: N802 - PopTorch's name
        """``(minimum, maximum, average)`` latency in seconds of the device iterations of the last call
        (``PoplarExecutor.getLatency``): on the IPU, measured from each iteration's inputs reaching the device to
        its outputs coming back; here each iteration's MODELLED step time (inputs, compute, outputs)."""
        latencies = self.__dict__.get("_latencies")
        if not latencies:
            raise PopTorchError("getLatency(): the model has not run yet (the latency is that of the last call)",
                                fix="call the model on a batch first, then read poptorch_model.getLatency()")
        facade_log.accept("PopTorch", "poptorch_model.getLatency()",
                          "the IPU's measured latency of each device iteration of the last call; here the "
                          "MODELLED step time of each, in seconds", emulated=True)
        return min(latencies), max(latencies), sum(latencies) / len(latencies)

    # ---- results --------------------------------------------------------------------------------
    @property
    def simulated_time_s(self) -> float:
        """Modelled time on the IPUs of every step so far (not measured)."""
        return self._session.simulated_time_s if self._session is not None else 0.0

    @property
    def program(self) -> CompiledProgram | None:
        """The compiled program (memory plan, placement, ``parallel``), once the first call compiled it."""
        if self._session is None or self._example is None:
            return None
        return self._session.program(self._example, training=self.training)

    def report(self) -> SessionReport:
        """Modelled totals (labelled MODELLED) and measured host time, with the IPU layout."""
        if self._session is None:
            raise PopTorchError("the model has not run yet", fix="call it on a batch first")
        rep = self._session.report()
        o = self.options
        rep.notes.insert(0, f"{self.pipeline}; x {o.replication_factor} replica(s) = {self.chips} IPU(s); "
                            f"deviceIterations {o.device_iterations}"
                            + (f", gradientAccumulation {o.Training.gradient_accumulation}" if self.training else ""))
        note = loading_note(self._combined_batch or 0, rep.simulated_time_s / rep.samples if rep.samples else 0.0)
        if note:
            rep.notes.append(note)
        return rep

    def __getattr__(self, name: str) -> Any:
        """What PopTorch's executor does not have itself is the wrapped model's (``poptorch_model.train()``,
        ``poptorch_model.conv1``), as in PopTorch (``PoplarExecutor.__getattr__``)."""
        model = self.__dict__.get("model")
        if model is None or name.startswith("__"):
            raise AttributeError(name)
        try:
            value = getattr(model, name)
        except AttributeError:
            raise AttributeError(f"neither poptorch's PoplarExecutor (as accelkit answers it) nor the wrapped "
                                 f"{type(model).__name__} has an attribute {name!r}") from None
        # a weight comes back wrapped, as PopTorch wraps it, to take replicaGrouping(...); its other attributes
        # are the weight's
        return _GroupableWeight(self, name, value) if isinstance(value, nn.Parameter) else value

    def __repr__(self) -> str:
        kind = "trainingModel" if self.training else "inferenceModel"
        return f"{kind}({type(self.model).__name__} on {self.chips} x {self.options.target})"


def trainingModel(model: nn.Module, options: Options | None = None,  # noqa: N802 - PopTorch's name
                  optimizer: torch.optim.Optimizer | None = None) -> PoplarExecutor:
    """``poptorch.trainingModel``: each call runs forward, loss, backward and the optimizer step on the IPUs.
    ``model.forward`` must compute and return the loss (see :func:`~accelkit.facades.poptorch.blocks.find_loss`);
    without ``optimizer``, SGD with lr=0.01 (PopTorch's default)."""
    return PoplarExecutor(model, options, optimizer, training=True)


def inferenceModel(model: nn.Module | PoplarExecutor, options: Options | None = None) -> PoplarExecutor:  # noqa: N802
    """``poptorch.inferenceModel``: each call runs the forward pass on the IPUs (no gradients). Given a wrapped
    training model, it wraps the same model, so the two share their weights (PopTorch keeps them in sync)."""
    if isinstance(model, PoplarExecutor):
        model = model.model
    return PoplarExecutor(model, options, None, training=False)



def load(filename: str | os.PathLike[str], edit_opts_fn: Any = None) -> PoplarExecutor:
    """``poptorch.load(filename, edit_opts_fn=None)``: the model ``compileAndExport`` wrote, wrapped again (see
    :mod:`accelkit.facades.poptorch.export`: in the process that exported it)."""
    model, options, optimizer, training = export.restore(filename, edit_opts_fn)
    return PoplarExecutor(model, options, optimizer, training=training)


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (an IPython shell talking to a notebook)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return type(shell).__name__ == "ZMQInteractiveShell"

__all__ = ["PoplarExecutor", "inferenceModel", "load", "precision_of", "trainingModel"]
