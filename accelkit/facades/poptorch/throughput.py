"""What PopTorch's three batching options do to the clock: one row per setting of the options.

    rows = option_effects(model, (x, y))      # (x, y): one micro-batch; the model returns its loss
    print(summary(rows))                      # one line per setting, times MODELLED

One call of a ``poptorch.trainingModel`` consumes the combined batch, ``micro x gradientAccumulation x
replicationFactor x deviceIterations`` samples, and costs (MODELLED)::

    call = deviceIterations x (one weight update + its stream copies) + one host round trip

- a weight update is the compiled program's modelled step without its host link (``program.report``): the
  ``g`` micro-batches of gradient accumulation one after another, one optimizer update, and with ``r`` replicas
  the all-reduce of the gradients over the IPU-Links;
- each iteration's data are stream copies between the host and the IPUs (the report's ``stream_s``): each
  input tensor of each micro-batch in a copy of its own (one for the images, one for the labels; PopART's
  ``groupHostSync`` would group them), each of which synchronises with the host (``IPU_STREAM_COPY_S``, about 123 µs on real
  IPUs) and moves its bytes at the host's streaming rate (``IPU_HOST_STREAM_BPS``, about 2.1 GB/s, shared by the
  replicas): a cost per iteration, which no option removes;
- the host round trip is what every call pays once, however much it carries (the report's ``round_trip_s``:
  the illustrative ``HOST_TRANSFER_LATENCY_S`` each way, a DMA set-up and a synchronisation).
  ``deviceIterations`` exists to pay it once per many updates.

The executor's own clock (``train.report()``) counts all three, the round trip shared by a call's
iterations (the report's ``io`` section); this table shows them apart, so that what each option buys shows in
one number per sample. Nothing here runs a step: each setting is
compiled (``PoplarExecutor.compile``) for the combined batch, in about a tenth of a second for a small model.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from accelkit.facades.poptorch.executor import trainingModel
from accelkit.facades.poptorch.options import Options, PopTorchError
from accelkit.hardware.spec import fmt_sig

# (replicationFactor, gradientAccumulation, deviceIterations): one option at a time, then all three
SETTINGS: tuple[tuple[int, int, int], ...] = ((1, 1, 1), (1, 1, 16), (1, 8, 1), (4, 1, 1), (4, 8, 16))
LOSS_BYTES = 4  # what comes back per call in training (OutputMode.Final): the fp32 loss


def options(replicas: int = 1, accumulation: int = 1, device_iterations: int = 1, target: str = "gc200") -> Options:
    """``poptorch.Options().replicationFactor(r).deviceIterations(d)`` with ``Training.gradientAccumulation(g)``."""
    opts = Options(target).replicationFactor(replicas).deviceIterations(device_iterations)
    opts.Training.gradientAccumulation(accumulation)
    return opts


@dataclass(frozen=True)
class OptionEffect:
    """One setting of the options and its modelled cost; every time is MODELLED, none measured."""

    target: str
    replicas: int
    accumulation: int
    device_iterations: int
    micro_batch: int
    ipus: int
    update_s: float  # one weight update on the IPUs: g micro-batches, the optimizer, the all-reduce
    feed_s: float  # one iteration's stream copies: the host syncs and the inputs' bytes
    round_trip_s: float  # once per call: a host transfer in and one out (set-up and sync each), the loss back

    @property
    def iteration_s(self) -> float:
        """One device iteration: a weight update and its stream copies."""
        return self.update_s + self.feed_s

    @property
    def combined_batch(self) -> int:
        """Samples one call consumes: micro x gradientAccumulation x replicationFactor x deviceIterations."""
        return self.micro_batch * self.accumulation * self.replicas * self.device_iterations

    @property
    def call_s(self) -> float:
        return self.device_iterations * self.iteration_s + self.round_trip_s

    @property
    def per_update_s(self) -> float:
        """Time per weight update, the host round trip shared among the call's updates."""
        return self.call_s / self.device_iterations

    @property
    def per_sample_s(self) -> float:
        return self.call_s / self.combined_batch

    @property
    def host_share(self) -> float:
        """The share of a call spent on its one host round trip (the inputs' bytes are not in it)."""
        return self.round_trip_s / self.call_s

    @property
    def round_trips_per_1k(self) -> float:
        """Host round trips per 1,000 samples."""
        return 1000 / self.combined_batch


def _tile(inputs: tuple[Any, ...], n: int) -> tuple[Any, ...]:
    """Each batched tensor of one micro-batch repeated ``n`` times along dim 0 (a combined batch's shapes)."""
    return tuple(t.repeat(n, *([1] * (t.dim() - 1))) if isinstance(t, torch.Tensor) and t.dim() else t
                 for t in inputs)


def effect(model: nn.Module, micro_inputs: tuple[Any, ...], opts: Options) -> OptionEffect:
    """The modelled cost of one call of ``trainingModel(model, options=opts)`` fed micro-batches shaped like
    ``micro_inputs`` (the model must return its loss, as PopTorch requires)."""
    if not isinstance(micro_inputs, tuple) or not micro_inputs:
        raise PopTorchError("micro_inputs should be a tuple of one micro-batch's inputs, e.g. (x, labels)",
                            fix="pass (x, y) with x.shape[0] the micro-batch size")
    first = micro_inputs[0]
    if not isinstance(first, torch.Tensor) or not first.dim():
        raise PopTorchError("the first input has no batch dimension", fix="pass batched tensors, batch first")
    micro = int(first.shape[0])
    train = trainingModel(copy.deepcopy(model), options=opts)
    combined = _tile(micro_inputs, opts.combined_batch_factor(True))
    program = train.compile(*combined)
    rep = program.report  # one weight update (g micro-batches and the optimizer), and its share of the host link
    feed = rep.stream_s  # every iteration: its stream copies (a host sync each) and their bytes
    update = math.fsum(v for k, v in rep.sections_s.items() if k not in ("io", "input"))
    return OptionEffect(opts.target, opts.replication_factor, opts.Training.gradient_accumulation, opts.device_iterations,
                        micro, train.chips, update, feed, rep.round_trip_s)


def option_effects(model: nn.Module, micro_inputs: tuple[Any, ...],
                   settings: Iterable[Options | tuple[int, int, int]] = SETTINGS,
                   target: str = "gc200") -> list[OptionEffect]:
    """One :class:`OptionEffect` per setting: an ``Options`` object, or ``(replicationFactor,
    gradientAccumulation, deviceIterations)`` on ``target``."""
    return [effect(model, micro_inputs, s if isinstance(s, Options) else options(*s, target=target))
            for s in settings]


def summary(rows: Sequence[OptionEffect]) -> str:
    """The rows as plain text (times MODELLED, three significant figures)."""
    targets = sorted({e.target for e in rows})
    lines = [f"MODELLED on {' / '.join(targets)}: one call = deviceIterations x (one weight update + its "
             "stream copies) + one host round trip",
             f"{'replicas':>8} {'accumulate':>10} {'iterations':>10} {'combined':>8} {'IPUs':>4} {'per call':>9} "
             f"{'per update':>10} {'per sample':>10} {'host share':>10} {'trips/1k':>8}"]
    for e in rows:
        lines.append(f"{e.replicas:>8} {e.accumulation:>10} {e.device_iterations:>10} {e.combined_batch:>8,} "
                     f"{e.ipus:>4} {fmt_sig(e.call_s * 1e6):>6} µs {fmt_sig(e.per_update_s * 1e6):>7} µs "
                     f"{fmt_sig(e.per_sample_s * 1e6):>7} µs {e.host_share:>10.1%} {fmt_sig(e.round_trips_per_1k):>8}")
    return "\n".join(lines)


__all__ = ["SETTINGS", "OptionEffect", "effect", "option_effects", "options", "summary"]
