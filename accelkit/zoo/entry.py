"""A zoo entry: a model, its data, its loss, its metric, a stated quality goal and a plain training loop.

An entry is built from a :class:`Spec` (what each model module declares) and a seed. Its
pieces are made when first read, so ``ak.zoo.get("braggnn").model`` does not generate data it
does not need. Training is ordinary PyTorch on the CPU — the same loop a learner would write —
so a notebook can train the model for real, then capture, compile and simulate it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch
from torch import nn

from accelkit.data.samples import Samples


@dataclass(frozen=True)
class QualityGoal:
    """A stated target: ``metric`` must reach ``threshold`` (from above or below) on the held-out split."""

    metric: str
    threshold: float
    higher_is_better: bool = True
    unit: str = ""

    def met(self, value: float) -> bool:
        return value >= self.threshold if self.higher_is_better else value <= self.threshold

    def __str__(self) -> str:
        sign = "≥" if self.higher_is_better else "≤"
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.metric} {sign} {self.threshold:g}{unit} on the held-out split"


@dataclass(frozen=True)
class Recipe:
    """The training settings an entry reaches its goal with: AdamW, warm-up then cosine decay."""

    steps: int
    lr: float
    batch_size: int
    weight_decay: float = 0.0
    warmup_fraction: float = 0.05
    # Intra-op threads while training (None: PyTorch's current setting). One by default: models
    # this small gain little from more, and on shared cores (a CI box, a busy laptop) extra
    # threads waiting on each other can make a step ten times slower.
    threads: int | None = 1


@dataclass
class Data:
    """An entry's data: the training and held-out splits, plus anything the model needs (a vocabulary)."""

    train: Samples
    heldout: Samples
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Spec:
    """What a zoo model module declares; :class:`ZooEntry` turns it into a model, data and a training loop."""

    name: str
    description: str
    task: str
    source: str
    quality_goal: QualityGoal
    recipe: Recipe
    make_data: Callable[[int], Data]  # seed -> splits
    make_model: Callable[[Data], nn.Module]  # called under torch.manual_seed(seed)
    make_loss_fn: Callable[[], nn.Module]
    example_inputs: Callable[[Samples], tuple[torch.Tensor, ...]]  # from the training split
    batch_loss: Callable[[nn.Module, nn.Module, tuple[torch.Tensor, ...]], torch.Tensor]  # (model, loss_fn, batch)
    metric: Callable[[nn.Module, Samples], float]


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters, counting a tied weight once."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters() if p.requires_grad}.values())


class ZooEntry:
    """One model of the zoo, ready to train, capture and compile.

    ``model`` is a fresh module (weights from ``seed``); ``example_inputs`` a tuple for one
    forward; ``dataset`` the training split and ``heldout`` the held-out split (both
    :class:`~accelkit.data.Samples`, i.e. torch ``Dataset``\\ s); ``loss_fn`` the criterion;
    ``metric(model, dataset)`` the quality measure ``quality_goal`` states a target for;
    ``train()`` a plain PyTorch loop that trains ``model`` in place.
    """

    def __init__(self, spec: Spec, seed: int = 0) -> None:
        self.spec = spec
        self.seed = seed
        self.name = spec.name
        self.description = spec.description
        self.task = spec.task
        self.source = spec.source
        self.quality_goal = spec.quality_goal
        self.recipe = spec.recipe

    # -- the pieces, each made on first use -------------------------------------------------
    @cached_property
    def data(self) -> Data:
        return self.spec.make_data(self.seed)

    @property
    def dataset(self) -> Samples:
        """The training split."""
        return self.data.train

    @property
    def heldout(self) -> Samples:
        """The held-out split the quality goal is measured on."""
        return self.data.heldout

    @cached_property
    def model(self) -> nn.Module:
        data = self.data  # made first: a model may need the data's vocabulary
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            return self.spec.make_model(data)

    @cached_property
    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        return self.spec.example_inputs(self.dataset)

    @cached_property
    def loss_fn(self) -> nn.Module:
        return self.spec.make_loss_fn()

    @property
    def num_parameters(self) -> int:
        return count_parameters(self.model)

    def metric(self, model: nn.Module, dataset: Samples) -> float:
        """The quality measure of ``quality_goal`` for ``model`` on ``dataset`` (eval mode, no gradients)."""
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                return float(self.spec.metric(model, dataset))
        finally:
            model.train(was_training)

    # -- training ----------------------------------------------------------------------------
    def train(self, steps: int | None = None, lr: float | None = None, *, batch_size: int | None = None,
              seed: int | None = None) -> dict[str, Any]:
        """Train ``self.model`` in place with AdamW on the training split; measure the held-out metric.

        Defaults come from ``self.recipe``. Returns ``losses`` (one per step), ``metric``,
        ``goal_met``, ``goal`` (text), ``steps``, ``seconds`` and the settings used. The run is
        reproducible: batches and dropout draw from ``seed`` (default: the entry's seed),
        without touching the global random state. The model is left in eval mode, and PyTorch's
        thread setting as it was (``recipe.threads`` applies during training only).
        """
        r = self.recipe
        steps = r.steps if steps is None else int(steps)
        lr = r.lr if lr is None else float(lr)
        batch_size = r.batch_size if batch_size is None else int(batch_size)
        seed = self.seed if seed is None else seed
        model, loss_fn, ds = self.model, self.loss_fn, self.dataset
        # foreach: one call over all the tensors instead of a Python loop (the same arithmetic, bit for bit; PyTorch
        # picks it by itself only on GPUs), a third off a small model's step on a CPU
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=r.weight_decay, foreach=True)
        warmup = max(1, int(steps * r.warmup_fraction))

        def schedule(step: int) -> float:  # linear warm-up, then cosine decay to 10% of lr
            if step < warmup:
                return (step + 1) / warmup
            progress = (step - warmup) / max(1, steps - warmup)
            return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
        losses: list[float] = []
        t0 = time.perf_counter()
        model.train()
        threads_before = torch.get_num_threads()
        if r.threads is not None:
            torch.set_num_threads(r.threads)
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                g = torch.Generator().manual_seed(seed)
                order, at = torch.randperm(len(ds), generator=g), 0
                for _ in range(steps):
                    if at + batch_size > len(order):  # a new epoch: reshuffle
                        order, at = torch.randperm(len(ds), generator=g), 0
                    batch = ds.batch(order[at:at + batch_size])
                    at += batch_size
                    loss = self.spec.batch_loss(model, loss_fn, batch)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
                    opt.step()
                    sched.step()
                    losses.append(float(loss.detach()))
            train_s = time.perf_counter() - t0
            value = self.metric(model, self.heldout)
        finally:
            torch.set_num_threads(threads_before)
            model.eval()
        return {
            "name": self.name, "losses": losses, "metric": value, "metric_name": self.quality_goal.metric,
            "goal": str(self.quality_goal), "goal_met": self.quality_goal.met(value),
            "steps": steps, "lr": lr, "batch_size": batch_size, "seconds": time.perf_counter() - t0,
            "train_seconds": train_s,
        }

    def summary(self) -> str:
        r = self.recipe
        return (f"{self.name}: {self.description}\n"
                f"  task:    {self.task}\n"
                f"  source:  {self.source}\n"
                f"  data:    {self.dataset.describe()}; held out {len(self.heldout)}\n"
                f"  params:  {self.num_parameters:,}\n"
                f"  goal:    {self.quality_goal} (recipe: {r.steps} steps, lr {r.lr:g}, batch {r.batch_size})")

    def __repr__(self) -> str:
        return f"<ZooEntry {self.name!r} seed={self.seed}: {self.task}>"
