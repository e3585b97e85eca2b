"""Memory planning: what lives in which memory tier, and so which execution mode the chip runs.

The plan counts four kinds of bytes per chip, at the compile's precision:

- weights (parameters), split over the chips of tensor and pipeline parallelism;
- activations: for inference the largest working set of one kernel (its inputs and outputs);
  for training every op's output of one micro-batch, kept for the backward pass
  (``recompute="selective"`` keeps each fused kernel's result only, ``"full"`` one tensor per layer);
- gradients (training): one per weight, at the compile precision;
- optimizer state (training): the update's fp32 state per weight (AdamW's or Adam's two moments, SGD's
  momentum velocity, nothing for plain SGD; ``ak.compile(optimizer=...)``, a Session's own optimizer) plus,
  when the weights are 16-bit, their fp32 master copy: 12 bytes per weight for mixed-precision AdamW
  (Micikevicius et al. 2018), 8 for fp32 AdamW, 4 for fp32 SGD with momentum. A model whose own weights are
  16-bit keeps its state in 16 bits and no master copy (4 bytes per weight for AdamW), as PyTorch's and
  PopTorch's optimizers do; ``ak.compile(optimizer_state=...)`` says otherwise (``OPTIMIZER_STATES``).

Modes per family (``auto`` picks the first that holds):

| family | modes, fastest first |
|---|---|
| wafer-dataflow (WSE) | ``pipelined`` (everything in wafer SRAM), ``weight-streaming`` (weights in MemoryX, one layer at a time on the wafer) |
| reconfigurable-dataflow (RDU) | ``on-chip`` (weights in PMU SRAM), ``hbm`` (weights in HBM, activations in SRAM), ``ddr`` (weights in DDR) |
| bsp-tiles (IPU) | ``on-chip`` (In-Processor Memory, pipelined over the chips), ``optimizer-offload`` (optimizer state in streaming memory), ``streaming-memory`` (weights too) |
| static-schedule (TSP) | ``sram`` (SRAM only: the chips needed to hold the weights) |
| gpu / cpu | ``hbm`` / ``dram`` |
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from accelkit import constants
from accelkit.compiler.passes import Kernel
from accelkit.cost.parallel import Parallel
from accelkit.errors import AccelkitError
from accelkit.families import REGISTRY, ExecutionModel, model_for
from accelkit.families.base import Layout, MemoryContext
from accelkit.hardware.capacity import chips_to_hold, usable_bytes
from accelkit.hardware.spec import AcceleratorSpec, fmt_bytes

# Part of on-chip SRAM a compiler can give to tensors (see accelkit.sim.constants, illustrative).
USABLE_SRAM_FRACTION: float = constants.value("USABLE_SRAM_FRACTION")  # the default; see usable_note(family)
OPTIMIZER_BYTES_PER_PARAM = 12  # fp32 master weights + Adam's two fp32 moments (mixed-precision AdamW)


def optimizer_state_bytes(optimizer: str, elem_bytes: float, state: str = "mixed") -> float:
    """Bytes of optimizer state per weight: each state tensor of the update (``optimizer`` names one of
    :data:`accelkit.graph.capture.OPTIMIZERS`; an optimizer accelkit does not know counts as AdamW's two) in fp32,
    or in the weights' 16-bit format where ``state`` is ``"16-bit"``; with ``"mixed"`` (the default) plus the fp32
    master copy that 16-bit weights are trained with (:data:`~accelkit.graph.capture.OPTIMIZER_STATES`)."""
    from accelkit.graph.capture import OPTIMIZERS

    states = OPTIMIZERS.get(optimizer, OPTIMIZERS["adamw"])[0]
    if state == "16-bit":
        return min(4.0, elem_bytes) * states
    return 4.0 * states + (4.0 if elem_bytes < 4 and state == "mixed" else 0.0)

MODES = {family: model.modes for family, model in REGISTRY.items()}
"""Each family's execution modes, fastest first, as its execution model (``accelkit.families``) lists them."""


class ModeError(AccelkitError, ValueError):
    """A model that does not fit the requested (or any) execution mode on the requested chips.

    Structured fields, so callers never parse the text: ``target`` (the chip's name), ``chips``
    (how many were asked for), ``chips_needed`` (the fewest that would hold the model, when more
    chips would help; ``None`` for an unknown mode), ``mode`` (the requested mode, ``"auto"``) and
    ``candidates`` (each mode and why it does or does not fit).
    """

    def __init__(self, message: str, *, fix: str | None = None, target: str | None = None, chips: int | None = None,
                 chips_needed: int | None = None, mode: str = "auto",
                 candidates: dict[str, str] | None = None) -> None:
        super().__init__(message, fix=fix)
        self.target = target
        self.chips = chips
        self.chips_needed = chips_needed
        self.mode = mode
        self.candidates = dict(candidates or {})


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes per chip by kind and the tier each kind lives in; the mode that makes it fit."""

    mode: str
    chips: int
    weights_bytes: int  # per chip, after tensor/pipeline sharding
    activation_bytes: int
    gradient_bytes: int
    optimizer_bytes: int
    placement: dict[str, str]  # kind -> tier name
    tier_use: dict[str, int]  # tier -> bytes used per chip
    tier_capacity: dict[str, int]
    chips_needed: int  # chips this mode needs to hold the model (≥ 1)
    replicas: int = 1  # copies of the model on one chip (the wafer's multi-replica mode)
    candidates: dict[str, str] = field(default_factory=dict)  # mode -> why it does / doesn't fit
    tier_datasheet: dict[str, int] = field(default_factory=dict)  # tier -> the datasheet's capacity
    # partial residency: the share of the mode's on-chip state (weights, and in training their gradients and
    # optimizer state) that the on-chip tier holds; the rest lives in ``spill_tier`` and streams in every pass
    resident: float = 1.0
    spill_tier: str | None = None
    resident_tier: str | None = None  # the tier that holds the resident share
    streamed_bytes: int = 0  # per chip: the state that does not fit on chip
    spilled_kinds: tuple[str, ...] = ()  # the kinds of bytes that share the on-chip tier with the stream
    family: str = ""  # the chip's architecture family (whose usable share of SRAM the plan used)

    @property
    def partial(self) -> bool:
        """True when part of the state streams from ``spill_tier`` (the mode's memory did not hold it all)."""
        return self.spill_tier is not None and self.streamed_bytes > 0

    def datasheet_bytes(self, tier: str) -> int:
        """The tier's capacity as the vendor quotes it (``tier_capacity`` is what the compiler may use)."""
        return self.tier_datasheet.get(tier, self.tier_capacity[tier])

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.activation_bytes + self.gradient_bytes + self.optimizer_bytes

    def summary(self) -> str:
        lines = [f"mode {self.mode!r} on {self.chips} chip(s)"
                 + (f", {self.replicas} replicas per chip" if self.replicas > 1 else "")]
        if self.partial:
            lines.append(f"  partial residency: {self.resident:.0%} of the {' and '.join(self.spilled_kinds)} in "
                         f"{self.resident_tier}; {fmt_bytes(self.streamed_bytes)} per chip stream from "
                         f"{self.spill_tier} every pass (all in {self.resident_tier} from {self.chips_needed} chips)")
        for m, why in self.candidates.items():  # the faster modes that could not hold it, and why
            if m == self.mode:
                break
            lines.append(f"  not {m}: {why}")
        for kind, label in (("weights", "weights"), ("activation", "activations"), ("gradient", "gradients"),
                            ("optimizer", "optimizer")):
            b = getattr(self, f"{kind}_bytes")
            if b:
                where = self.placement.get(kind, "-")
                if self.partial and kind in self.spilled_kinds:
                    where = f"{where} ({self.resident:.0%}) and {self.spill_tier} (the rest)"
                lines.append(f"  {label:<12} {fmt_bytes(b):>10} per chip in {where}")
        for tier, used in self.tier_use.items():
            cap = self.tier_capacity[tier]
            lines.append(f"  tier {tier:<16} {fmt_bytes(used):>10} of {capacity_text(cap, self.datasheet_bytes(tier))}"
                         f" ({used / cap:.0%})")
        if any(self.tier_capacity[t] < self.datasheet_bytes(t) for t in self.tier_use):
            lines.append(f"  ({usable_note(self.family)})")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Footprint:
    """Whole-model bytes at the compile's precision, before any sharding."""

    weights: int
    activations_peak: int  # the largest single-kernel working set (inference)
    activations_stored: int  # what training keeps for backward (one micro-batch)
    largest_layer_weights: int
    training: bool
    elem_bytes: float  # bytes per weight at the compile's precision
    optimizer_state: float = OPTIMIZER_BYTES_PER_PARAM  # training: optimizer bytes per weight (optimizer_state_bytes)

    def per_chip(self, shards: int, parallel: Parallel | None = None) -> tuple[int, int, int, int]:
        """(weights, activations, gradients, optimizer state) bytes on one chip: the model split over ``shards``
        chips (tensor x pipeline), and the training state over the data-parallel replicas where ``parallel``
        shards it (``Parallel.zero``)."""
        split = parallel.sharded if parallel is not None and self.training else (lambda _kind: 1)
        w = math.ceil(self.weights / shards)
        act = math.ceil((self.activations_stored if self.training else self.activations_peak) / max(1, shards))
        grad = math.ceil(w / split("gradient")) if self.training else 0
        opt = math.ceil(self.weights / shards / self.elem_bytes * self.optimizer_state / split("optimizer")) \
            if self.training else 0
        return math.ceil(w / split("weights")), act, grad, opt


def footprint(kernels: list[Kernel], *, weights_bytes: int, training: bool, recompute: str,
              elem_bytes: float, optimizer: str = "adamw", optimizer_state: str = "mixed") -> Footprint:
    fwd = [k for k in kernels if k.section == "fwd"]
    peak = max((k.bytes_read - k.param_bytes + k.bytes_written for k in fwd), default=0)
    if recompute == "full":
        # keep each layer's output (the next layer's input) and recompute the rest in backward: there one layer's
        # forward runs again, and its activations live while that layer's gradients are computed (Korthikanti et
        # al. 2022, 'Reducing Activation Recomputation in Large Transformer Models', section 2: full
        # recomputation stores the input of each transformer layer)
        last: dict[str, int] = {}
        saved: dict[str, int] = {}
        for k in fwd:
            last[k.group] = k.out_bytes
            saved[k.group] = saved.get(k.group, 0) + k.saved_bytes
        stored = sum(last.values()) + max(saved.values(), default=0)
    elif recompute == "selective":  # keep each kernel's result, recompute the cheap ops inside it
        stored = sum(k.out_bytes for k in fwd)
    else:  # keep everything every op produced
        stored = sum(k.saved_bytes for k in fwd)
    layers: dict[str, int] = {}
    for k in fwd:
        layers[k.group] = layers.get(k.group, 0) + k.param_bytes
    return Footprint(weights_bytes, peak, stored, max(layers.values(), default=0), training, elem_bytes,
                     optimizer_state_bytes(optimizer, elem_bytes, optimizer_state))


def capacity_text(usable: int, datasheet: int) -> str:
    """``"185 MB usable of 231 MB"`` where the compiler keeps some back (:data:`USABLE_NOTE` says why), else
    ``"80 GB"``."""
    if usable >= datasheet:
        return fmt_bytes(usable)
    return f"{fmt_bytes(usable)} usable of {fmt_bytes(datasheet)}"


def usable_note(family: str) -> str:
    """Why a tier shows less than its datasheet: the family's own usable share of SRAM and where it comes from."""
    c = constants.usable_sram(family)
    return f"usable: {c.meaning} ({'illustrative: ' if c.illustrative else ''}{c.source})"


USABLE_NOTE = usable_note("")  # the default share's note (families with their own: usable_note(family))


def _tiers(spec: AcceleratorSpec) -> dict[str, int]:
    return usable_bytes(spec)  # the one computation of a chip's room (accelkit.hardware.capacity)


def plan_memory(fp: Footprint, spec: AcceleratorSpec, *, chips: int, model_shards: int,
                mode: str = "auto", parallel: Parallel | None = None) -> MemoryPlan:
    """Choose the execution mode and where each kind of bytes lives, per chip: the first of
    :func:`plan_options` (the fastest mode that holds everything, else the first partial plan).

    ``model_shards`` is tensor x pipeline parallelism (chips that split the weights); data
    parallel replicas each hold a full shard, unless ``parallel.zero`` shards the training state over them.
    Raises :class:`ModeError` naming what would fit.
    """
    return plan_options(fp, spec, chips=chips, model_shards=model_shards, mode=mode, parallel=parallel)[0]


def check_mode(spec: AcceleratorSpec, mode: Any, chips: int = 1) -> tuple[str, ...]:
    """Refuse a mode ``spec``'s family does not have (naming the ones it has); returns the family's modes."""
    modes = MODES[spec.family]
    if mode != "auto" and mode not in modes:
        raise ModeError(f"{spec.name} has no execution mode {mode!r}",
                        fix=f"use mode='auto' or one of {list(modes)}", target=spec.name, chips=chips, mode=mode)
    return modes


def plan_options(fp: Footprint, spec: AcceleratorSpec, *, chips: int, model_shards: int,
                 mode: str = "auto", family: ExecutionModel | None = None,
                 parallel: Parallel | None = None) -> list[MemoryPlan]:
    """The memory plans worth timing, in the family's mode order: each faster mode that holds the model only in
    part (its on-chip tier full, the rest of the state streaming from the next tier every pass) and then the
    first mode that holds everything. The compiler times them all and keeps the fastest, so a model that grows
    past a mode's memory slows down by the bytes that now stream, not by a switch of mode (no cliff).

    Raises :class:`ModeError` naming what would fit when no plan holds the model at all.
    """
    modes = check_mode(spec, mode, chips)
    t = _Tiers(_tiers(spec), {tier.name: int(tier.capacity_bytes) for tier in spec.memory_tiers})
    w, act, grad, opt = fp.per_chip(model_shards, parallel)
    per_chip = {"weights": w, "activation": act, "gradient": grad, "optimizer": opt}
    family_model = family or model_for(spec.family)
    ctx = MemoryContext(tuple(t.caps), t.caps, per_chip, math.ceil(fp.largest_layer_weights / model_shards),
                        fp.training)
    layouts = {layout.mode: layout for layout in family_model.layouts(ctx)}  # fastest first
    plans = {m: _whole(layout, per_chip, chips, t, spec.family) for m, layout in layouts.items()}
    candidates: dict[str, str] = {}
    partials: dict[str, MemoryPlan] = {}
    for m, p in plans.items():
        over = [f"{tier} needs {fmt_bytes(p.tier_use[tier])} of {capacity_text(t.caps[tier], t.sheet[tier])}"
                for tier in p.tier_use if p.tier_use[tier] > t.caps[tier]]
        candidates[m] = "fits" if not over else "does not fit: " + ", ".join(over)
        part = None if not over or family_model.no_partial_residency else _partial(layouts[m], p, per_chip, t)
        if part is not None:
            partials[m] = part
            candidates[m] += f" (in part: {part.resident:.0%} on chip, the rest streams from {part.spill_tier})"
    # every plan carries the verdicts on all modes, complete before it is built
    plans = {m: replace(p, candidates=candidates) for m, p in plans.items()}
    partials = {m: replace(p, candidates=candidates) for m, p in partials.items()}
    options: list[MemoryPlan] = []
    for m in modes if mode == "auto" else (mode,):
        if all(plans[m].tier_use[tier] <= t.caps[tier] for tier in plans[m].tier_use):
            return [*options, plans[m]]
        if m in partials and mode == "auto":  # a mode the user forces must hold everything (the vendor's modes only)
            options.append(partials[m])
    if options:
        return options
    raise _fits_nothing(fp, spec, plans, candidates, t.caps, chips=chips, model_shards=model_shards, mode=mode,
                        parallel=parallel)


@dataclass(frozen=True)
class _Tiers:
    """A chip's memory tiers, fastest first: the capacity the compiler may use and the datasheet's."""

    caps: dict[str, int]
    sheet: dict[str, int]


def _whole(layout: Layout, per_chip: dict[str, int], chips: int, t: _Tiers, family: str) -> MemoryPlan:
    """The plan that holds everything where the layout puts it (whether or not the tiers hold that much)."""
    w, act, grad, opt = (per_chip[k] for k in ("weights", "activation", "gradient", "optimizer"))
    use: dict[str, int] = {}
    for kind, b in per_chip.items():
        if b:
            use[layout.placement[kind]] = use.get(layout.placement[kind], 0) + b
    for tier, b in layout.extra.items():
        use[tier] = use.get(tier, 0) + b
    needed = chips_to_hold(sum(per_chip[k] for k in layout.needed_kinds), t.caps[layout.needed_tier])
    return MemoryPlan(layout.mode, chips, w, act, grad, opt, layout.placement, use, {k: t.caps[k] for k in use},
                      needed, layout.replicas, {}, {k: t.sheet[k] for k in use}, family=family)


def _partial(layout: Layout, plan: MemoryPlan, per_chip: dict[str, int], t: _Tiers) -> MemoryPlan | None:
    """The layout with the tier that decides it filled and the state that does not fit streaming from the next
    tier; None where the chip has no slower tier, activations alone overflow, or the next tier is full too."""
    tier_names, caps = list(t.caps), t.caps
    fast = layout.needed_tier
    at = tier_names.index(fast)
    if at + 1 >= len(tier_names):  # no slower tier to stream from
        return None
    slow = tier_names[at + 1]
    state = [k for k in ("weights", "gradient", "optimizer") if layout.placement[k] == fast and per_chip[k]]
    movable = sum(per_chip[k] for k in state)
    room = caps[fast] - (plan.tier_use.get(fast, 0) - movable)
    if not movable or room <= 0 or room >= movable:
        return None
    streamed = movable - room
    use = dict(plan.tier_use)
    use[fast] = caps[fast]
    use[slow] = use.get(slow, 0) + streamed
    if use[slow] > caps[slow]:  # the next tier cannot hold the rest either
        return None
    return replace(plan, replicas=1, tier_use=use, tier_capacity={k: caps[k] for k in use},
                   tier_datasheet={k: t.sheet[k] for k in use}, resident=room / movable, spill_tier=slow,
                   streamed_bytes=int(streamed), spilled_kinds=tuple(state), resident_tier=fast)


def _fits_nothing(fp: Footprint, spec: AcceleratorSpec, plans: dict[str, MemoryPlan], candidates: dict[str, str],
                  caps: dict[str, int], *, chips: int, model_shards: int, mode: str,
                  parallel: Parallel | None = None) -> ModeError:
    """The error when no plan holds the model: what each mode lacks, and how many chips would hold it (and, for
    training on data-parallel replicas that each hold all of it, that ZeRO would shard it)."""
    # chips that would hold each plan's bytes (activations included) if the model were split further
    need = min(max(chips_to_hold(p.tier_use[t] * model_shards, caps[t]) for t in p.tier_use) for p in plans.values())
    need = max(need, chips + 1)
    why = "; ".join(f"{m}: {c}" for m, c in candidates.items())
    if mode != "auto":
        return ModeError(f"mode {mode!r} cannot hold the model on {chips} {spec.name} chip(s): {candidates[mode]}",
                         fix=f"use mode='auto' (modes that fit: {[m for m, c in candidates.items() if c == 'fits'] or 'none'}),"
                             f" more chips, or a lower precision",
                         target=spec.name, chips=chips, chips_needed=need, mode=mode, candidates=candidates)
    zero = ""
    if fp.training and parallel is not None and parallel.data > 1 and parallel.zero < 3:
        zero = (f"; or shard the training state over the {parallel.data} data-parallel replicas: "
                f"parallel=ak.Parallel(data={parallel.data}, tensor={parallel.tensor}, pipeline={parallel.pipeline}, "
                f"zero={parallel.zero + 1}) (ZeRO-1: the optimizer state, 2: the gradients too, 3: the weights too)")
    return ModeError(
        f"the model ({fmt_bytes(fp.weights)} of weights{', training state' if fp.training else ''}) fits no "
        f"execution mode on {chips} {spec.name} chip(s): {why}",
        fix=f"compile for at least chips={need} (the model is split over them), use a lower precision, "
            f"or pick a target with more memory{zero}",
        target=spec.name, chips=chips, chips_needed=need, candidates=candidates,
    )
