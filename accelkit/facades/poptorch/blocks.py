"""``BeginBlock`` (pipeline stages across IPUs) and ``identity_loss`` (which output is the loss).

Pipelining: a model too big for one IPU's 900 MB of In-Processor Memory is cut into stages, one per
IPU; micro-batches flow through them like an assembly line. PopTorch marks the cuts in the model::

    model.encoder = poptorch.BeginBlock(model.encoder, ipu_id=0)
    model.decoder = poptorch.BeginBlock(model.decoder, ipu_id=1)   # decoder and what follows: IPU 1

Every layer after a ``BeginBlock`` (until the next one) runs on that block's IPU. The blocks fix the number
of IPUs in the pipeline (``ak.Parallel(pipeline=n)``) and which layers each holds (``ak.compile(stages=...)``):
the modelled step waits for the busiest IPU, as the real pipeline does; :func:`pipeline_plan` shows which layers
the blocks put where.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from accelkit.facades.poptorch.options import PopTorchError
from accelkit.runtime import facade_log

BLOCK_ATTR = "_poptorch_begin_block"  # (user_id, ipu_id) on a module that starts a block
LOSS_ATTR = "_poptorch_identity_loss"  # set on the tensor identity_loss returns
REPLICA_LOSSES_ATTR = "_poptorch_replica_losses"  # replicas' losses, one each (replicas.py): the step's is their mean
REDUCTIONS = ("sum", "mean", "none")


def BeginBlock(layer_to_call: nn.Module, user_id: str | None = None,  # noqa: N802 - PopTorch's name
               ipu_id: int | None = None) -> nn.Module:
    """Start a pipeline stage at ``layer_to_call`` on IPU ``ipu_id`` (``poptorch.BeginBlock``); returns the
    layer itself, so ``model.layer = BeginBlock(model.layer, ipu_id=1)`` keeps its parameter names.
    Without ``ipu_id`` the block goes on the IPU after the previous block's. A function (not a module) is returned
    wrapped so that each call runs inside a :class:`Block`, as PopTorch still allows."""
    if ipu_id is not None and (not isinstance(ipu_id, int) or ipu_id < 0):
        raise PopTorchError(f"ipu_id must be a whole number ≥ 0, got {ipu_id!r}", fix="e.g. ipu_id=1")
    if not isinstance(layer_to_call, nn.Module):
        if callable(layer_to_call):  # PopTorch still takes a function (its LegacyBeginBlockFn): run inside a Block
            fn = layer_to_call

            def in_block(*args: Any, **kwargs: Any) -> Any:
                with Block(user_id, ipu_id):
                    return fn(*args, **kwargs)

            return in_block  # type: ignore[return-value]
        raise PopTorchError(f"BeginBlock wraps an nn.Module or a function, not {type(layer_to_call).__name__}",
                            fix="pass a layer of the model, e.g. BeginBlock(model.layer2, ipu_id=1)")
    setattr(layer_to_call, BLOCK_ATTR, (user_id, ipu_id))
    return layer_to_call


def removeBlocks(module: nn.Module) -> None:  # noqa: N802 - PopTorch's name
    """Take every ``BeginBlock`` off ``module`` and the modules inside it (``poptorch.removeBlocks``), so the model
    runs on one IPU again, or is given new blocks (an application's ``deparallelize()`` before it re-parallelizes
    for inference). Functions ``BeginBlock`` wrapped stay wrapped, as in PopTorch."""
    if not isinstance(module, nn.Module):
        raise PopTorchError(f"removeBlocks takes an nn.Module, not {type(module).__name__}",
                            fix="pass the model or the layer that BeginBlock marked")
    for m in module.modules():
        if BLOCK_ATTR in m.__dict__:
            delattr(m, BLOCK_ATTR)


@dataclass(frozen=True)
class PipelineStage:
    """One pipeline stage as :func:`pipeline_plan` found it: the IPU it runs on and the layers (with weights)
    in it. (PopTorch's own ``poptorch.Stage(*block_ids)``, for ``PipelinedExecution``, is
    :class:`~accelkit.facades.poptorch.options.Stage`.)"""

    ipu: int
    user_id: str | None
    layers: tuple[str, ...]
    start: str | None = None  # the module its BeginBlock wraps (None: the layers before the first block)


@dataclass(frozen=True)
class PipelinePlan:
    """Where the model's ``BeginBlock``s put its layers."""

    stages: tuple[PipelineStage, ...]

    @property
    def ipus(self) -> int:
        """IPUs one replica of the model needs (the pipeline's depth)."""
        return max((s.ipu for s in self.stages), default=0) + 1

    @property
    def starts(self) -> tuple[tuple[str, int], ...]:
        """Where each block begins, as ``ak.compile(stages=...)`` takes it: (module name, IPU)."""
        return tuple((s.start, s.ipu) for s in self.stages if s.start is not None)

    def __str__(self) -> str:
        if self.ipus == 1:
            return "1 IPU (no BeginBlock: the whole model on one IPU)"
        return f"pipeline over {self.ipus} IPUs: " + "; ".join(
            f"IPU {s.ipu}{f' ({s.user_id})' if s.user_id else ''}{': ' + ', '.join(s.layers) if s.layers else ''}"
            for s in self.stages)


def block_ipu(user_id: str | None, ipu_id: int | None, block_ipus: dict[str, int], seen: dict[str, int],
              previous: int | None) -> int:
    """The IPU a block runs on, as PopTorch decides it: the execution strategy's stage for its ``user_id``
    (``block_ipus``), else its own ``ipu_id``, else the IPU of an earlier block with the same ``user_id``
    (``seen``), else the IPU after the previous block's (0 for the first)."""
    if user_id is not None and user_id in block_ipus:
        return block_ipus[user_id]
    if ipu_id is not None:
        return ipu_id
    if user_id is not None and user_id in seen:
        return seen[user_id]
    return 0 if previous is None else previous + 1


def pipeline_plan(model: nn.Module, block_ipus: dict[str, int] | None = None) -> PipelinePlan:
    """The stages ``BeginBlock`` marked in ``model``, in the order its layers are registered; ``block_ipus``
    (``Options.block_ipus()``, from ``setExecutionStrategy``) places blocks by their ``user_id``."""
    stages: list[tuple[int, str | None, list[str], str | None]] = [(0, None, [], None)]  # (ipu, user_id, layers, start)
    seen: dict[str, int] = {}
    for name, m in model.named_modules():
        block = getattr(m, BLOCK_ATTR, None)
        if block is not None:
            user_id, ipu_id = block
            prev_ipu, prev_uid, prev_layers, _ = stages[-1]
            started = bool(prev_layers) or prev_uid is not None or len(stages) > 1
            ipu = block_ipu(user_id, ipu_id, block_ipus or {}, seen, prev_ipu if started else None)
            if user_id is not None:
                seen.setdefault(user_id, ipu)
            stages.append((ipu, user_id, [], name or None))
        if not any(True for _ in m.children()) and any(True for _ in m.parameters(recurse=False)):
            stages[-1][2].append(name or "<root>")
    kept = [PipelineStage(ipu, uid, tuple(layers), start) for ipu, uid, layers, start in stages
            if layers or uid is not None or start is not None]
    return PipelinePlan(tuple(kept) or (PipelineStage(0, None, ()),))


class Block:
    """``poptorch.Block(user_id=None, ipu_id=None)``: a context manager inside ``forward`` that puts the layers
    called within it on IPU ``ipu_id`` (without it, on the IPU after the previous block's)::

        def forward(self, x):
            with poptorch.Block(ipu_id=0):
                x = self.layer1(x)
            with poptorch.Block(ipu_id=1):
                x = self.layer2(x)

    Blocks live in ``forward``, so the number of IPUs they use is only known once it runs: the first call of a
    ``trainingModel`` / ``inferenceModel`` runs ``forward`` once without gradients to count them
    (:func:`blocks_in_forward`), and where each begins: the first layer called inside it, which places the layers
    the modelled pipeline waits for, as ``BeginBlock`` does.
    """

    _seen: list[tuple[str | None, int | None]] | None = None  # Blocks entered while blocks_in_forward records

    def __init__(self, user_id: str | None = None, ipu_id: int | None = None) -> None:
        if ipu_id is not None and (not isinstance(ipu_id, int) or ipu_id < 0):
            raise PopTorchError(f"ipu_id must be a whole number ≥ 0, got {ipu_id!r}", fix="e.g. ipu_id=1")
        self.user_id = user_id
        self.ipu_id = ipu_id

    def __enter__(self) -> Block:
        if Block._seen is not None:
            Block._seen.append((self.user_id, self.ipu_id))
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    @staticmethod
    def useAutoId() -> None:  # noqa: N802 - PopTorch's name
        """PopTorch numbers blocks without a ``user_id`` automatically; so does accelkit (nothing to set)."""


def blocks_in_forward(model: nn.Module, args: tuple[Any, ...],
                      block_ipus: dict[str, int] | None = None) -> list[tuple[str | None, int, str | None]]:
    """``(user_id, IPU, first module)`` of every :class:`Block` that ``model(*args)`` enters (one forward, no
    gradients, weights untouched), each placed by :func:`block_ipu`; the first module is the first submodule of
    ``model`` called inside the block (by its name in ``model.named_modules()``; None where the block calls none),
    where the block begins for ``ak.compile(stages=...)``."""
    entered: list[tuple[str | None, int | None]] = []
    firsts: dict[int, str] = {}

    def first_call(name: str) -> Any:
        def hook(_module: nn.Module, _inputs: Any) -> None:
            if entered and len(entered) - 1 not in firsts:
                firsts[len(entered) - 1] = name
        return hook

    Block._seen = entered
    handles = [m.register_forward_pre_hook(first_call(n)) for n, m in model.named_modules() if n]
    was = model.training
    try:
        with torch.no_grad(), torch.random.fork_rng():
            model(*args)
    finally:
        Block._seen = None
        for h in handles:
            h.remove()
        model.train(was)
    placed: list[tuple[str | None, int, str | None]] = []
    seen: dict[str, int] = {}
    for i, (user_id, ipu_id) in enumerate(entered):
        ipu = block_ipu(user_id, ipu_id, block_ipus or {}, seen, placed[-1][1] if placed else None)
        if user_id is not None:
            seen.setdefault(user_id, ipu)
        placed.append((user_id, ipu, firsts.get(i)))
    return placed


def set_available_memory(tensor: torch.Tensor, available_memory_proportion: float) -> torch.Tensor:
    """``poptorch.set_available_memory(tensor, available_memory_proportion)``: on the IPU, the share of tile
    memory (0 to 1) the convolution / matmul that produced ``tensor`` may use for temporaries. It trades cycles
    for memory on the chip and changes no value: accepted, recorded, and ``tensor`` returned unchanged."""
    if not isinstance(available_memory_proportion, (int, float)) or not 0 <= available_memory_proportion <= 1:
        raise PopTorchError(f"available_memory_proportion must be between 0 and 1, got {available_memory_proportion!r}",
                            fix="e.g. poptorch.set_available_memory(x, 0.3)")
    facade_log.accept("PopTorch", f"poptorch.set_available_memory(..., {available_memory_proportion})",
                      "the share of each tile's memory the IPU compiler may give this convolution / matmul for "
                      "temporaries (a cycles-for-memory trade on the chip); the values are the same")
    return tensor


def identity_loss(x: torch.Tensor, reduction: str = "none") -> torch.Tensor:
    """Mark ``x`` as the loss the backward pass starts from (``poptorch.identity_loss``), reduced by
    ``reduction``: ``"sum"``, ``"mean"`` or ``"none"`` (a non-scalar loss then starts from a gradient of
    ones, as for its sum)."""
    if reduction not in REDUCTIONS:
        raise PopTorchError(f"reduction={reduction!r} is not one of {list(REDUCTIONS)}", fix="e.g. reduction='mean'")
    if not isinstance(x, torch.Tensor):
        raise PopTorchError(f"identity_loss needs a tensor, not {type(x).__name__}", fix="pass the loss tensor")
    out = x.sum() if reduction == "sum" else x.mean() if reduction == "mean" else x
    setattr(out, LOSS_ATTR, True)
    return out


def find_loss(out: Any) -> torch.Tensor:
    """The loss among a training model's outputs: the one passed through ``identity_loss``, else the last
    scalar floating-point output that depends on the weights (PopTorch models return ``output, loss``, or
    ``loss, accuracy`` with an accuracy computed from an argmax: PopTorch's user guide), else the last scalar."""
    leaves = [t for t in torch.utils._pytree.tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
    replicas = [t for t in leaves if getattr(t, REPLICA_LOSSES_ATTR, False)]
    if replicas:  # grouped replicas (replicas.py): gradients averaged over the replicas (ReductionType.Mean)
        return replicas[-1].mean()
    marked = [t for t in leaves if getattr(t, LOSS_ATTR, False)]
    scalars = [t for t in leaves if t.dim() == 0 and t.is_floating_point()]
    differentiable = [t for t in scalars if t.requires_grad]
    loss = marked[-1] if marked else differentiable[-1] if differentiable else scalars[-1] if scalars else None
    if loss is None:
        raise PopTorchError(
            "trainingModel needs the model's forward to return its loss: PopTorch compiles forward, loss, "
            "backward and the optimizer step into one IPU program",
            fix="compute the loss in forward and return it, e.g. `return out, poptorch.identity_loss(loss, "
                "reduction='mean')` (or `return out, self.loss_fn(out, labels)`)")
    return loss if loss.dim() == 0 else loss.sum()


class LossFirst(nn.Module):
    """Presents a PopTorch training model to :class:`ak.Session` as ``(loss, outputs)``: the session
    starts the backward pass from the first scalar output."""

    def __init__(self, model: nn.Module, loss_scaling: float = 1.0, reduction_scale: float = 1.0) -> None:
        super().__init__()
        self.model = model
        self.loss_scaling = loss_scaling  # poptorch.optim's loss_scaling: the backward pass starts from loss x this
        # ReductionType.Sum: gradientAccumulation x replicationFactor, the session's mean turned into the sum (the
        # optimizer divides the loss scaling back out, not this)
        self.reduction_scale = reduction_scale

    def forward(self, *args: Any) -> tuple[torch.Tensor, Any]:
        out = self.model(*args)
        loss = find_loss(out)
        scale = self.loss_scaling * self.reduction_scale
        return (loss * scale if scale != 1.0 else loss), out


class BoundKeywords(nn.Module):
    """A model called with keyword arguments (``model(input_ids=ids, attention_mask=mask, return_dict=False)``),
    presented to :class:`ak.Session` as positional tensors: the tensor arguments become inputs, in the order
    of ``forward``'s signature; the others (``return_dict=False``, ``None``) are fixed at the first call, as a
    compiled IPU program fixes them."""

    def __init__(self, model: nn.Module, names: tuple[str, ...], constants: dict[str, Any]) -> None:
        super().__init__()
        self.model = model
        self.names = names
        self.constants = constants

    def forward(self, *tensors: Any) -> Any:
        return self.model(**dict(zip(self.names, tensors, strict=True)), **self.constants)
