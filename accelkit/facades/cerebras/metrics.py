"""Evaluation metrics as ``cerebras.pytorch.metrics`` (``cstorch.metrics``) defines them.

    accuracy = cstorch.metrics.AccuracyMetric("accuracy")

    @cstorch.trace
    @torch.no_grad()
    def eval_step(inputs, targets):
        outputs = compiled_model(inputs)
        accuracy(labels=targets, predictions=outputs.argmax(-1).int())   # update, then compute
        return loss_fn(outputs, targets)

    print(float(accuracy))        # the metric over every step so far

A :class:`Metric` is an ``nn.Module`` whose state lives in buffers; calling it updates and computes, as in
cstorch (``Metric(name)``, ``reset``/``update``/``compute``, ``num_updates``, ``register_state``, a registry
read by :func:`get_all_metrics`). On the system the state is updated on the wafer and read back by a step
closure; here the step runs on this CPU, so the value is simply there.
"""

from __future__ import annotations

import abc
import warnings
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from accelkit.runtime import facade_log

_registry: defaultdict[str, list[Metric]] = defaultdict(list)
facade_log.reset_with_each_run(_registry.clear)


class Metric(nn.Module, abc.ABC):
    """``cstorch.metrics.Metric(name)``: subclass it with ``reset`` (register the state), ``update`` (add a step's
    values) and ``compute`` (the value from the state). ``compute_on_system`` (older releases) is accepted and
    recorded: where the metric is computed on the appliance."""

    def __init__(self, name: str, compute_on_system: bool | None = None) -> None:
        super().__init__()
        self.name = name
        self.num_updates = 0
        self._cached: Any = None
        _registry[name].append(self)
        if compute_on_system is not None:
            facade_log.accept("Cerebras", f"metrics.{type(self).__name__}(compute_on_system={compute_on_system})",
                              "whether the appliance computes the metric on the system or on its workers; here it "
                              "is computed on this CPU either way")
        self.reset()

    @abc.abstractmethod
    def reset(self) -> None:
        """Initialise the metric's state."""

    @abc.abstractmethod
    def update(self, *args: Any, **kwargs: Any) -> None:
        """Add one step's values to the state."""

    @abc.abstractmethod
    def compute(self) -> Any:
        """The metric's value from the state."""

    def register_state(self, name: str, tensor: torch.Tensor, persistent: bool = False) -> None:
        """A state tensor, kept as a buffer (in ``state_dict`` only if ``persistent``)."""
        self.register_buffer(name, tensor, persistent=persistent)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Update with this step's values, then compute."""
        self.update(*args, **kwargs)
        self.num_updates += 1
        self._cached = self.compute()
        return self._cached

    def __float__(self) -> float:
        return float(self._cached if self._cached is not None else self.compute())


class AccuracyMetric(Metric):
    """``cstorch.metrics.AccuracyMetric(name)``: the share of ``predictions`` equal to ``labels`` over every update
    (``update(labels, predictions, weights=None, dtype=None)``; a weight of 0 leaves a position out)."""

    total_correct_predictions: torch.Tensor
    total_num_tokens: torch.Tensor

    def reset(self) -> None:
        self.register_state("total_correct_predictions", torch.tensor(0.0))
        self.register_state("total_num_tokens", torch.tensor(0.0))
        self._dtype: torch.dtype | None = None
        self.num_updates = 0
        self._cached = None

    def update(self, labels: torch.Tensor, predictions: torch.Tensor, weights: torch.Tensor | None = None,
               dtype: torch.dtype | None = None) -> None:
        if labels.shape != predictions.shape:
            warnings.warn(f"Shapes mismatch in accuracy metric: labels {tuple(labels.shape)}, predictions "
                          f"{tuple(predictions.shape)}", stacklevel=2)
            predictions = predictions.reshape(labels.shape)
        correct = (labels == predictions).float()
        if weights is None:
            self.total_correct_predictions.add_(correct.sum())
            self.total_num_tokens.add_(float(correct.numel()))
        else:
            self.total_correct_predictions.add_((correct * weights).sum())
            self.total_num_tokens.add_((weights > 0).float().sum())
        self._dtype = dtype

    def compute(self) -> torch.Tensor:
        result = self.total_correct_predictions / self.total_num_tokens
        return result.to(self._dtype) if self._dtype is not None else result


class PerplexityMetric(Metric):
    """``cstorch.metrics.PerplexityMetric(name)``: exp of the mean loss per token over every update
    (``update(labels, loss, weights=None, dtype=None)``, ``loss`` summed over the step's tokens)."""

    total_loss: torch.Tensor
    total_num_tokens: torch.Tensor

    def reset(self) -> None:
        self.register_state("total_loss", torch.tensor(0.0))
        self.register_state("total_num_tokens", torch.tensor(0.0))
        self._dtype: torch.dtype | None = None
        self.num_updates = 0
        self._cached = None

    def update(self, labels: torch.Tensor, loss: torch.Tensor, weights: torch.Tensor | None = None,
               dtype: torch.dtype | None = None) -> None:
        tokens = (weights > 0).float().sum() if weights is not None else torch.tensor(float(labels.numel()))
        self.total_loss.add_(loss.detach().float())
        self.total_num_tokens.add_(tokens)
        self._dtype = dtype

    def compute(self) -> torch.Tensor:
        result = torch.exp(self.total_loss / self.total_num_tokens)
        return result.to(self._dtype) if self._dtype is not None else result


class MeanMetric(Metric):
    """``cstorch.metrics.MeanMetric(name)``: the mean of every value given to ``update(value, weight=None)``,
    weighted when weights are given (the Model Zoo's DPO model logs its rewards with it)."""

    total_value: torch.Tensor
    total_weight: torch.Tensor

    def reset(self) -> None:
        self.register_state("total_value", torch.tensor(0.0))
        self.register_state("total_weight", torch.tensor(0.0))
        self.num_updates = 0
        self._cached = None

    def update(self, value: torch.Tensor | float, weight: torch.Tensor | float | None = None) -> None:
        v = torch.as_tensor(value, dtype=torch.float32).detach()
        w = torch.ones_like(v) if weight is None else torch.as_tensor(weight, dtype=torch.float32).expand_as(v)
        self.total_value.add_((v * w).sum())
        self.total_weight.add_(w.sum())

    def compute(self) -> torch.Tensor:
        return self.total_value / self.total_weight


class FBetaScoreMetric(Metric):
    """``cstorch.metrics.FBetaScoreMetric(num_classes, beta=1.0, average_type="micro", ignore_labels=None, name=)``:
    F-beta over every update's ``labels`` and ``predictions`` (class ids), from their confusion matrix: ``micro``
    pools the counts of the classes kept, ``macro`` averages each class's score. ``ignore_labels`` leaves those
    classes out of the averages (BERT token classification's padding class). Its state is updated with fixed shapes
    (one-hot products), so it runs inside a step compiled for the CS system, as the Model Zoo's BERT classifier
    and token classifier call it when their configs set ``compute_eval_metrics``."""

    confusion: torch.Tensor

    def __init__(self, num_classes: int, beta: float = 1.0, average_type: str = "micro",
                 ignore_labels: list[int] | None = None, name: str = "fbeta") -> None:
        if num_classes < 2 or beta <= 0 or average_type not in ("micro", "macro"):
            raise ValueError(f"FBetaScoreMetric: num_classes >= 2, beta > 0 and average_type 'micro' or 'macro' "
                             f"(got {num_classes}, {beta}, {average_type!r})")
        self.num_classes, self.beta, self.average_type = num_classes, float(beta), average_type
        self.ignore_labels = list(ignore_labels or [])
        super().__init__(name)

    def reset(self) -> None:
        self.register_state("confusion", torch.zeros(self.num_classes, self.num_classes))
        self.num_updates = 0
        self._cached = None

    def update(self, labels: torch.Tensor, predictions: torch.Tensor, dtype: torch.dtype | None = None) -> None:
        # shapes fixed before the data is seen (one-hot products, a mask for the classes kept), as a step compiled
        # for the system needs them: no bincount or boolean indexing, whose sizes depend on the values
        # (a label outside 0 .. num_classes-1, a padding id, is left out, as cstorch leaves it out)
        n = self.num_classes
        labels, predictions = labels.reshape(-1).long(), predictions.reshape(-1).long()
        valid = ((labels >= 0) & (labels < n)).float().unsqueeze(1)
        truth = nn.functional.one_hot(labels.clamp(0, n - 1), n).float() * valid
        guess = nn.functional.one_hot(predictions.clamp(0, n - 1), n).float()
        self.confusion.add_(truth.T @ guess)

    def compute(self) -> torch.Tensor:
        keep = torch.tensor([float(c not in self.ignore_labels) for c in range(self.num_classes)])
        tp = self.confusion.diagonal() * keep
        fp = self.confusion.sum(0) * keep - tp  # predicted as the class, labelled otherwise
        fn = self.confusion.sum(1) * keep - tp
        b2 = self.beta ** 2
        if self.average_type == "micro":
            tp, fp, fn = tp.sum(), fp.sum(), fn.sum()
        num, den = (1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp
        score = torch.where(den > 0, num / den.clamp(min=1e-12), torch.zeros_like(num))
        return score if self.average_type == "micro" else (score * keep).sum() / keep.sum()


def get_all_metrics() -> Iterator[tuple[str, Metric]]:
    """Every metric made in this run, by name (``name.i`` when several share a name)."""
    for name, metrics in _registry.items():
        for i, metric in enumerate(metrics):
            yield (f"{name}.{i}" if len(metrics) > 1 else name), metric


__all__ = ["AccuracyMetric", "FBetaScoreMetric", "MeanMetric", "Metric", "PerplexityMetric", "get_all_metrics"]
