"""Replica-grouped weights and inputs (``tensor.replicaGrouping(...)``, ``opts.inputReplicaGrouping(...)``).

PopTorch's replicas normally hold one copy of every weight and each takes its own slice of the batch. A
weight can instead be *grouped*: its host tensor has one value per group of replicas along its first dimension,
and each replica computes with its group's value (a weight sharded over replicas); inputs can be grouped the same
way, every replica of a group taking the same slice of the batch. Graphcore's user guide shards a product
``X @ W`` so, over 8 replicas: W's 4 column blocks over groups ``{0, 4}, {1, 5}, {2, 6}, {3, 7}`` and X's 2 row
blocks over ``{0-3}, {4-7}`` (``docs/user_guide/replica_grouped_weights.py`` in graphcore/poptorch).

:class:`ReplicaGroups` computes exactly that on this CPU: each replica's forward with its group's weights and its
input group's slice, the replicas' losses averaged into the step's loss (PopTorch's ``ReductionType.Mean``), so each
group's weight gets the mean over all replicas of its replicas' gradients, as the IPUs' grouped all-reduce gives
it. Replicas without grouped weights run the same way (one forward each), so that, as on the IPUs, a batch norm
normalises each replica's own micro-batch and the losses come back one per replica. For the modelled program the
replicas are captured as one data-parallel step with one group's weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from accelkit.facades.poptorch.blocks import REPLICA_LOSSES_ATTR, find_loss
from accelkit.facades.poptorch.options import CommGroupType, PopTorchError, VariableRetrievalMode


@dataclass(frozen=True)
class Grouping:
    """How replicas share a tensor: ``kind`` (``CommGroupType``) and ``size`` (replicas per group)."""

    kind: CommGroupType
    size: int

    def count(self, replicas: int) -> int:
        """How many groups (values) there are over ``replicas`` replicas."""
        if self.kind == CommGroupType.All:
            return 1
        if self.kind == CommGroupType.NoGrouping:
            return replicas
        return replicas // self.size

    def of(self, replica: int, replicas: int) -> int:
        """The group replica ``replica`` belongs to: Consecutive groups are ``{0 .. k-1}, {k .. 2k-1}, ...``;
        Orthogonal groups are ``{0, m, 2m, ...}, {1, m+1, ...}`` for ``m = replicas / k`` groups."""
        if self.kind == CommGroupType.All:
            return 0
        if self.kind == CommGroupType.NoGrouping:
            return replica
        if self.kind == CommGroupType.Consecutive:
            return replica // self.size
        return replica % self.count(replicas)  # Orthogonal


def weight_grouping(name: str, kind: Any, shards: int, mode: Any) -> tuple[Grouping, VariableRetrievalMode]:
    """``tensor.replicaGrouping(comm_group_type, shards, variable_retrieval_mode)``, checked."""
    try:
        kind, mode = CommGroupType(kind), VariableRetrievalMode(mode)
    except ValueError:
        raise PopTorchError(f"{name}.replicaGrouping({kind!r}, {shards!r}, {mode!r}): not a poptorch.CommGroupType "
                            "and a poptorch.VariableRetrievalMode",
                            fix="e.g. replicaGrouping(poptorch.CommGroupType.Orthogonal, 2, "
                                "poptorch.VariableRetrievalMode.OnePerGroup)") from None
    if kind in (CommGroupType.Consecutive, CommGroupType.Orthogonal) and (not isinstance(shards, int) or shards < 1):
        raise PopTorchError(f"{name}.replicaGrouping: the group size must be a whole number of replicas >= 1, got "
                            f"{shards!r}", fix="pass the number of replicas in each group")
    return Grouping(kind, int(shards) if isinstance(shards, int) else 0), mode


def expand_inputs(args: tuple[Any, ...], replicas: int, inputs: Grouping, steps: int) -> tuple[Any, ...]:
    """A call's batches with grouped inputs (``steps`` = deviceIterations x gradientAccumulation micro-steps, each
    holding one slice per input group) laid out as ungrouped replicas take them: each micro-step's slices repeated
    so that replica ``r`` finds its group's slice at its own place (the ``r``-th of ``replicas`` slices)."""
    groups = inputs.count(replicas)
    index = torch.tensor([inputs.of(r, replicas) for r in range(replicas)])

    def spread(a: Any) -> Any:
        if not isinstance(a, torch.Tensor) or not a.dim():
            return a
        per = a.reshape(steps, groups, a.shape[0] // (steps * groups), *a.shape[1:])
        return per.index_select(1, index).reshape(-1, *a.shape[1:])

    return tuple(torch.utils._pytree.tree_map(spread, a) for a in args)


class ReplicaGroups(nn.Module):
    """The model as ``replicas`` replicas run it, some of its weights grouped (see the module's doc): each replica a
    forward of its own, with its own batch statistics (a batch norm normalises each replica's micro-batch, as on the
    IPUs) and its own loss.

    ``forward`` takes one micro-step's inputs, one slice per replica in replica order (grouped inputs already spread
    by :func:`expand_inputs`), and returns the replicas' outputs: batched outputs concatenated in replica order, each
    scalar (the loss) stacked into one value per replica, as PopTorch returns them with ``OutputMode.All``."""

    def __init__(self, model: nn.Module, replicas: int, weights: dict[str, tuple[Grouping, VariableRetrievalMode]],
                 training: bool = True) -> None:
        super().__init__()
        self.model = model
        self.replicas = replicas
        self.training_step = training  # a trainingModel's replicas each return a loss
        self.weights = dict(weights)
        params = dict(model.named_parameters())
        for name, (grouping, mode) in self.weights.items():
            p = params[name]
            groups = grouping.count(replicas)
            if grouping.kind in (CommGroupType.Consecutive, CommGroupType.Orthogonal) and replicas % grouping.size:
                raise PopTorchError(f"{name}.replicaGrouping: groups of {grouping.size} replicas do not divide "
                                    f"replicationFactor ({replicas})",
                                    fix="use a group size that divides the number of replicas")
            if p.dim() == 0 or int(p.shape[0]) != groups:
                raise PopTorchError(f"{name} is grouped over {groups} group(s) of replicas, so its host value needs "
                                    f"one value per group along its first dimension; its shape is {tuple(p.shape)}",
                                    fix=f"give {name} the shape ({groups}, *one replica's shape): the groups' "
                                        "values stacked (scalars cannot be grouped)")
            if mode == VariableRetrievalMode.AllReplicas and groups != replicas:
                raise PopTorchError(f"{name}: VariableRetrievalMode.AllReplicas returns one value per replica, but "
                                    f"{name} holds one per group ({groups} groups of {replicas} replicas)",
                                    fix="use VariableRetrievalMode.OnePerGroup (every replica of a group holds the "
                                        "same value)")

    def _one(self, xs: tuple[Any, ...], group_of: Any, buffers: dict[str, torch.Tensor] | None = None) -> Any:
        """The model on ``xs`` with each grouped weight replaced by its value for ``group_of(grouping)`` (and the
        buffers by ``buffers``, a replica's own copies)."""
        if not self.weights and not buffers:
            return self.model(*xs)
        params = dict(self.model.named_parameters())
        overrides = {name: params[name][group_of(grouping)] for name, (grouping, _) in self.weights.items()}
        return torch.func.functional_call(self.model, {**overrides, **(buffers or {})}, xs, strict=False,
                                          tie_weights=False)

    def forward(self, *args: Any) -> Any:
        leaves = [t for t in torch.utils._pytree.tree_flatten(args)[0] if isinstance(t, torch.Tensor)]
        if any(t.device.type == "meta" or type(t).__name__ == "FakeTensor" for t in leaves) or \
                torch.compiler.is_exporting():
            # the modelled program: the replicas' data-parallel step, each with one group's weights (the first's)
            return self._one(args, lambda grouping: 0)
        cut = [a.chunk(self.replicas) if isinstance(a, torch.Tensor) and a.dim() else None for a in args]
        # each replica updates its own copy of the buffers (a batch norm's running statistics) from the same
        # values; the host keeps the first replica's, as it reads a replicated program's weights
        buffers = dict(self.model.named_buffers())
        copies = [{k: b.detach().clone() for k, b in buffers.items()} for _ in range(self.replicas)]
        outs = [self._one(tuple(c[r] if c is not None else a for a, c in zip(args, cut, strict=True)),
                          lambda grouping, r=r: grouping.of(r, self.replicas), copies[r])
                for r in range(self.replicas)]
        with torch.no_grad():
            for k, b in buffers.items():
                b.copy_(copies[0][k])
        losses = [find_loss(o) for o in outs] if self.training_step else []
        flat = [torch.utils._pytree.tree_flatten(o) for o in outs]
        merged: list[Any] = []
        for i, v in enumerate(flat[0][0]):
            vals = [f[0][i] for f in flat]
            if not isinstance(v, torch.Tensor):
                merged.append(v)
                continue
            t = torch.cat(vals) if v.dim() else torch.stack(vals)
            if losses and any(val is loss for val, loss in zip(vals, losses, strict=True)):
                setattr(t, REPLICA_LOSSES_ATTR, True)
            merged.append(t)
        return torch.utils._pytree.tree_unflatten(merged, flat[0][1])
