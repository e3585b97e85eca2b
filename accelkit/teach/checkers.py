"""The exercises the notebooks ask, each a checker registered under its name.

A checker compares the learner's answer with the value accelkit computes for the same context (read from
the package, never re-derived here) and, for each wrong answer a learner is likely to give, says precisely
what is wrong and gives a hint. Solutions: :mod:`accelkit.teach.solutions`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from accelkit.teach.exercises import Line, exercise


def _close(a: float, b: float, rel: float = 0.02) -> bool:
    return math.isclose(a, b, rel_tol=rel)


def _not_a_number(answer: Any, what: str) -> Line | None:
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return Line(False, f"the answer should be a number ({what}), not a {type(answer).__name__}",
                    "write the expression that computes it, e.g. `answer = 2 * 3`")
    return None


# ---- 01 profile ----------------------------------------------------------------------------------
def linear_flops(batch: int, in_features: int, out_features: int) -> int:
    """FLOPs of one nn.Linear forward, as PyTorch's own flop counter counts them."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    layer = torch.nn.Linear(in_features, out_features)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        layer(torch.zeros(batch, in_features))
    return int(counter.get_total_flops())


@exercise("01.linear_flops", "FLOPs of a linear layer",
          "How many FLOPs does one forward pass of nn.Linear(in_features, out_features) do on a batch? "
          "Count as PyTorch's flop counter does.")
def _check_linear_flops(answer: Any, *, batch: int, in_features: int, out_features: int) -> list[Line]:
    if bad := _not_a_number(answer, "FLOPs"):
        return [bad]
    value = float(answer)
    truth = linear_flops(batch, in_features, out_features)
    macs = batch * in_features * out_features
    if value == truth:
        return [Line(True, f"{truth:,} FLOPs: 2 x batch x in x out (a multiply-add is two FLOPs)")]
    if value == macs:
        return [Line(False, f"{value:,.0f} counts multiply-adds, not FLOPs",
                     "each multiply-add is two floating-point operations: double it")]
    if value == truth + batch * out_features or value == macs + batch * out_features:
        return [Line(False, f"{value:,.0f} adds the bias; the flop counter counts only the matrix multiply",
                     "the flop counter gives elementwise ops (the bias add) zero: leave the bias out")]
    if value in (2 * in_features * out_features, in_features * out_features):
        return [Line(False, f"{value:,.0f} is for one sample", f"multiply by the batch ({batch})")]
    return [Line(False, f"{value:,.0f} FLOPs is not what the flop counter counts",
                 "the layer multiplies a (batch, in) matrix by an (in, out) one: each output element needs "
                 "`in` multiply-adds")]


@exercise("01.hottest_op", "the hottest op",
          "Which ATen op took the most measured time in the profile `prof`? Give its name as the profiler "
          "writes it (e.g. 'aten::mm').")
def _check_hottest_op(answer: Any, *, prof: Any) -> list[Line]:
    if not isinstance(answer, str):
        return [Line(False, f"the answer should be an op name (a str), not a {type(answer).__name__}",
                     "copy the name from the `op` column of prof.summary(), e.g. 'aten::addmm'")]
    hottest = prof.top(1)[0]
    names = [row.op for row in prof.ops]
    if answer == hottest.op:
        return [Line(True, f"{hottest.op}: {hottest.share:.0%} of the measured ATen time on this host")]
    if answer not in names:
        near = [n for n in names if answer.split("::")[-1] in n]
        return [Line(False, f"{answer!r} is not an op of this profile",
                     f"did you mean one of {near[:3]}?" if near else "use the name with its 'aten::' prefix")]
    if answer == prof.top_flops(1)[0].op:
        return [Line(False, f"{answer} does the most FLOPs, but is not the op that took the most time",
                     "sort by measured time (prof.top), not by FLOPs: a cheap op called often can win")]
    rank = names.index(answer) + 1
    return [Line(False, f"{answer} is number {rank} by measured time, not number 1",
                 "prof.ops is sorted by time, hottest first")]


# ---- 02 understand the hardware --------------------------------------------------------------------
def ridge_point(target: str, precision: str, tier: str) -> float:
    """FLOP per byte where the ``tier`` bandwidth roof meets the ``precision`` compute roof."""
    from accelkit import hardware

    spec = hardware.get(target)
    return spec.peak(precision) / spec.tier(tier).bandwidth_Bps


@exercise("02.ridge_point", "the ridge point",
          "At how many FLOPs per byte does a kernel on `target` stop being limited by the `tier` memory's "
          "bandwidth and become limited by the `precision` compute peak (the roofline's ridge point)?")
def _check_ridge_point(answer: Any, *, target: str, precision: str, tier: str) -> list[Line]:
    from accelkit import hardware

    if bad := _not_a_number(answer, "FLOP per byte"):
        return [bad]
    value = float(answer)
    spec = hardware.get(target)
    truth = ridge_point(target, precision, tier)
    if _close(value, truth):
        return [Line(True, f"{truth:,.0f} FLOP/byte: a kernel doing fewer FLOPs per byte it moves waits for "
                           f"{tier}; more, and it waits for the compute units")]
    if value > 0 and _close(1 / value, truth):
        return [Line(False, "you divided bandwidth by peak: that is bytes per FLOP",
                     "ridge point = peak FLOP/s / bandwidth B/s")]
    for other in spec.peak_flops:
        if other != precision and _close(value, ridge_point(target, other, tier)):
            return [Line(False, f"that is the ridge point for {other}, not {precision}",
                         f"use spec.peak({precision!r})")]
    for t in spec.memory_tiers:
        if t.name != tier and _close(value, ridge_point(target, precision, t.name)):
            return [Line(False, f"that is the ridge point against {t.name}, not {tier}",
                         f"use spec.tier({tier!r}).bandwidth_Bps")]
    for scale in (1e3, 1e6, 1e9, 1e12):
        if _close(value * scale, truth) or _close(value, truth * scale):
            return [Line(False, "the units are off by a power of 1,000",
                         "both figures in base units: FLOP/s (not TFLOP/s) and B/s (not GB/s)")]
    return [Line(False, f"{value:,.1f} FLOP/byte is not the ridge point",
                 f"divide {target}'s {precision} peak by its {tier} bandwidth (spec.peak, spec.tier)")]


@exercise("02.weights_fit", "do the weights fit on chip?",
          "Do the weights of a model with `params` parameters, stored in `precision`, fit in `target`'s "
          "on-chip memory (True or False)? Ignore activations.")
def _check_weights_fit(answer: Any, *, target: str, params: int, precision: str) -> list[Line]:
    from accelkit import hardware
    from accelkit.hardware.spec import fmt_bytes

    if not isinstance(answer, bool):
        return [Line(False, f"the answer should be True or False, not {answer!r}",
                     "compare the weights' bytes with spec.on_chip_memory_bytes")]
    spec = hardware.get(target)
    fit = hardware.fits(params, spec, bytes_per_param=_bytes_per(precision))
    size, fits = fit.model_bytes, fit.on_chip
    text = (f"{params:,} parameters x {_bytes_per(precision)} B ({precision}) = {fmt_bytes(size)} against "
            f"{fmt_bytes(spec.on_chip_memory_bytes)} on chip")
    if answer == fits:
        return [Line(True, text + (": they fit" if fits else ": they do not fit, so weights live off chip"))]
    wrong_fits = hardware.fits(params, spec, bytes_per_param=4).on_chip
    hint = (f"a {precision} number takes {_bytes_per(precision)} bytes" if wrong_fits == answer
            else "multiply the parameters by the bytes per parameter and compare with spec.on_chip_memory_bytes")
    return [Line(False, f"not quite: {text}", hint)]


def _bytes_per(precision: str) -> int:
    import torch

    from accelkit.runtime.session import PRECISION_DTYPES  # the precisions a Session emulates; fp32: None

    if precision not in PRECISION_DTYPES:
        raise ValueError(f"precision {precision!r}: use one of {list(PRECISION_DTYPES)}")
    return (PRECISION_DTYPES[precision] or torch.float32).itemsize


# ---- 03 modify -----------------------------------------------------------------------------------
@exercise("03.first_recipe", "read a compatibility report",
          "Which `port` recipe fixes the first error in `report`? Give the recipe's name.")
def _check_first_recipe(answer: Any, *, report: Any) -> list[Line]:
    errors = [f for f in report.findings if f.severity == "error"]
    if not errors:
        return [Line(False, "this report has no errors, so there is nothing to fix",
                     "run the exercise on a report that is not ready")]
    first = errors[0]
    if answer == first.recipe:
        return [Line(True, f"{first.recipe}: {first.fix}")]
    recipes = [f.recipe for f in report.findings]
    if answer in recipes:
        f = report.findings[recipes.index(answer)]
        return [Line(False, f"{answer} fixes a {f.severity} ({f.kind}), not the first error",
                     "look only at findings whose severity is 'error', in order")]
    return [Line(False, f"{answer!r} is not a recipe this report names",
                 "each finding's `recipe` column names the fix port() applies")]


# ---- 10 on the real machines ----------------------------------------------------------------------
CHANGES = {  # what a learner changes between two runs -> the trigger it touches (None: reuse the artifact)
    "batch size 32 -> 64": "batch_size",
    "sequence length 128 -> 256": "input_shapes",
    "bf16 -> fp32": "precision",
    "1 chip -> 2 chips": "chips",
    "learning rate 1e-3 -> 1e-4": None,
    "load other weights from a checkpoint": None,
    "next epoch of the same-shaped data": None,
}


@exercise("10.recompile", "what triggers a recompile",
          "For each change in teach.checkers.CHANGES, say whether the compiled artifact must be built again: "
          "answer a dict {change: True or False}.")
def _check_recompile(answer: Any) -> list[Line]:
    from accelkit.compiler.compile_time import RECOMPILE_TRIGGERS

    if not isinstance(answer, dict):
        return [Line(False, f"the answer should be a dict {{change: True/False}}, not a {type(answer).__name__}",
                     "start from {change: ... for change in CHANGES}")]
    lines = []
    for change, trigger in CHANGES.items():
        if change not in answer:
            lines.append(Line(False, f"{change!r}: no answer", "give every change in CHANGES a True or False"))
            continue
        need = trigger is not None
        why = (f"the artifact is specialised to {RECOMPILE_TRIGGERS[trigger]}" if trigger is not None
               else "the artifact holds the program, not these values")
        ok = answer[change] is need
        lines.append(Line(ok, f"{change}: {'recompile' if need else 'reuse the artifact'} ({why})",
                          "" if ok else ("shapes, dtypes, batch and chip count are compiled in" if need
                                         else "weights, optimizer values and data are inputs to the program")))
    return lines


# ---- 09 the capstone -----------------------------------------------------------------------------
@exercise("09.three_families", "three families",
          "Pick three targets from the catalog, each of a different architecture family, to compile your "
          "model for (a list of three names).")
def _check_three_families(answer: Any) -> list[Line]:
    from accelkit import hardware

    if not isinstance(answer, (list, tuple)) or not all(isinstance(a, str) for a in answer):
        return [Line(False, "the answer should be a list of target names", "e.g. ['a100', ...]")]
    names = set(hardware.names())
    unknown = [a for a in answer if a not in names]
    if unknown:
        return [Line(False, f"not in the catalog: {unknown}", f"choose from {sorted(names)}")]
    families = {a: hardware.get(a).family for a in answer}
    lines = [Line(len(answer) == 3, f"{len(answer)} targets", "exactly three, please")]
    distinct = len(set(families.values())) == len(answer)
    lines.append(Line(distinct, "families: " + ", ".join(f"{a} {f}" for a, f in families.items()),
                      "two of them share a family: swap one for a chip of another family"))
    return lines


def family_names(names: Iterable[str]) -> list[str]:
    from accelkit import hardware

    return [hardware.get(n).family for n in names]
