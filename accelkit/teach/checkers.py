"""The exercises the notebooks ask, each a checker registered under its name.

A checker compares the learner's answer with the value accelkit computes for the same context (read from
the package, never re-derived here) and, for each wrong answer a learner is likely to give, says precisely
what is wrong and gives a hint. Solutions: :mod:`accelkit.teach.solutions`.
"""

from __future__ import annotations

import math
from typing import Any

from accelkit.teach.registry import Line, exercise


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


@exercise("01.zero_flop_time", "time in ops with no counted FLOPs",
          "What share of the measured ATen time in the profile `prof` went to ops the flop counter counts as zero "
          "FLOPs? Answer a fraction between 0 and 1.")
def _check_zero_flop_time(answer: Any, *, prof: Any) -> list[Line]:
    if bad := _not_a_number(answer, "a fraction of the time"):
        return [bad]
    value = float(answer)
    zero = [r for r in prof.ops if r.flops == 0]
    truth = sum(r.share for r in zero)
    text = f"{len(zero)} of {len(prof.ops)} ops have no counted FLOPs and took {truth:.0%} of the measured ATen time"
    if _close(value, truth):
        return [Line(True, text + " on this host")]
    if value > 1 and _close(value / 100, truth):
        return [Line(False, f"{value:g} is a percentage", "answer a fraction between 0 and 1: divide by 100")]
    if _close(value, 1 - truth):
        return [Line(False, f"{value:.2f} is the share of the ops that DO have counted FLOPs",
                     "keep the rows whose flops == 0")]
    if prof.ops and _close(value, len(zero) / len(prof.ops)):
        return [Line(False, f"{value:.2f} counts ops, not their time",
                     "add up each zero-FLOP row's share of the time (row.share), not the number of rows")]
    if prof.total_time_s and _close(value, sum(r.time_s for r in zero) / prof.total_time_s):
        return [Line(False, f"{value:.2f} divides by the wall time of a forward, not by the ATen ops' summed time",
                     "use each row's share (row.share), or divide by prof.op_time_s")]
    return [Line(False, f"{value:.2f} is not the share: {len(zero)} ops with flops == 0 in prof.ops",
                 "for the rows of prof.ops whose flops are 0, add up their share of the time")]


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
                 f"the ridge is where {target}'s {precision} compute and its {tier} bandwidth take equally long: "
                 "spec.peak and spec.tier have the two rates")]


@exercise("02.weights_fit", "do the weights fit on chip?",
          "Do the weights of a model with `params` parameters, stored in `precision`, fit in the on-chip memory "
          "`target`'s compiler may fill (True or False)? Ignore activations.")
def _check_weights_fit(answer: Any, *, target: str, params: int, precision: str) -> list[Line]:
    from accelkit import hardware
    from accelkit.hardware.capacity import usable_on_chip_bytes
    from accelkit.hardware.spec import fmt_bytes

    if not isinstance(answer, bool):
        return [Line(False, f"the answer should be True or False, not {answer!r}",
                     "compare the weights' bytes with hardware.capacity.usable_on_chip_bytes(spec)")]
    spec = hardware.get(target)
    per = _bytes_per(precision)
    fit = hardware.fits(params, spec, bytes_per_param=per)
    size, fits, usable = fit.model_bytes, fit.on_chip, usable_on_chip_bytes(spec)
    text = (f"{params:,} parameters x {per} B ({precision}) = {fmt_bytes(size)} against {fmt_bytes(usable)} "
            f"usable of {fmt_bytes(spec.on_chip_memory_bytes)} on chip")
    if answer == fits:
        return [Line(True, text + (": they fit" if fits else ": they do not fit, so weights live off chip "
                                                              "or on more chips"))]
    if answer == (size <= spec.on_chip_memory_bytes):
        hint = ("the compiler can fill only the usable share of on-chip SRAM (programs, routing and buffers take "
                "the rest): hardware.capacity.usable_on_chip_bytes(spec)")
        return [Line(False, "you compared with the datasheet capacity", hint)]
    wrong_fits = hardware.fits(params, spec, bytes_per_param=4).on_chip
    hint = (f"how many bytes does one {precision} number take?" if wrong_fits == answer
            else "multiply the parameters by the bytes per parameter and compare with the usable on-chip bytes")
    return [Line(False, "not quite", hint)]


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


@exercise("03.gated_mlp", "replace a data-dependent `if`",
          "Rewrite GatedMLP.forward without the Python `if` on a tensor (torch.where picks between both "
          "activations); keep the layers fc1 and fc2. Answer with your module (a class or an instance).")
def _check_gated_mlp(answer: Any, *, target: str = "tsp") -> list[Line]:
    import contextlib
    import io

    from torch import nn

    from accelkit.porting import exercise_check

    model = answer() if isinstance(answer, type) else answer
    if not isinstance(model, nn.Module):
        return [Line(False, f"the answer should be a module, not a {type(answer).__name__}",
                     "answer with your class, e.g. `answer = MyGatedMLP`")]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # porting.exercise_check prints one [PASS]/[FAIL] line per check
        exercise_check(model, target=target)
    lines = [Line(text.startswith("[PASS]"), text[7:]) for text in printed.getvalue().splitlines()
             if text.startswith(("[PASS]", "[FAIL]"))]
    return [line if line.ok else Line(False, line.text, _gated_mlp_hint(line.text)) for line in lines]


_GATED_MLP_HINTS = {  # words in a failing criterion exercise_check prints -> what to do about it
    "keep the layers": "subclass GatedMLP (`class MyGatedMLP(GatedMLP)`) and use self.fc1 and self.fc2; add no layers",
    "data-dependent": "compute both activations, torch.relu(h) and torch.tanh(h), and pick one with "
                      "torch.where(condition, a, b): no Python `if` on a tensor",
    "same outputs": "keep GatedMLP's rule: relu when the mean of fc1(x) is positive (one condition for the whole "
                    "tensor, not one per element), tanh otherwise",
}


def _gated_mlp_hint(text: str) -> str:
    return next((hint for words, hint in _GATED_MLP_HINTS.items() if words in text),
                "read the fix of each error above: the rewrite may use only ops the target supports")


# ---- 04 compile ----------------------------------------------------------------------------------
@exercise("04.intensity", "arithmetic intensity of a kernel",
          "How many FLOPs per byte moved does kernel number `index` of the compiled program `program` do? "
          "(program.kernels[index] has .flops, .bytes_read and .bytes_written)")
def _check_intensity(answer: Any, *, program: Any, index: int) -> list[Line]:
    if bad := _not_a_number(answer, "FLOP per byte"):
        return [bad]
    k = program.kernels[index]
    value, truth = float(answer), k.intensity
    if _close(value, truth):
        return [Line(True, f"{k.name}: {truth:,.1f} FLOP/byte ({k.flops:,} FLOPs over {k.bytes:,} bytes)")]
    if k.bytes_read and _close(value, k.flops / k.bytes_read):
        return [Line(False, "you counted only the bytes read", "a kernel also moves the bytes it writes")]
    if value and _close(1 / value, truth):
        return [Line(False, "that is bytes per FLOP", "divide the FLOPs by the bytes, not the other way round")]
    return [Line(False, f"{value:,.1f} is not {k.name}'s intensity",
                 "intensity is work per byte: every byte the kernel moves counts, both ways")]


@exercise("04.bound", "compute or memory bound?",
          "On `program`'s target, is kernel number `index` bound by compute or by memory bandwidth? Compare its "
          "intensity with the ridge point against `tier` and answer 'compute' or 'memory'.")
def _check_bound(answer: Any, *, program: Any, index: int, tier: str) -> list[Line]:
    if answer not in ("compute", "memory"):
        return [Line(False, f"answer 'compute' or 'memory', not {answer!r}", "two possible answers only")]
    k = program.kernels[index]
    ridge = ridge_point(program.target, program.precision, tier)
    truth = "compute" if k.intensity >= ridge else "memory"
    text = (f"{k.name}: {k.intensity:,.1f} FLOP/byte against a ridge point of {ridge:,.1f} on "
            f"{program.target} ({program.precision}, {tier}): {truth} bound")
    if answer == truth:
        return [Line(True, text)]
    return [Line(False, f"not quite: compare {k.name}'s FLOPs per byte with the ridge point of {program.target} "
                        f"({program.precision}, {tier})",
                 "above the ridge point a kernel waits for compute; below it, for memory")]


# ---- 05 run --------------------------------------------------------------------------------------
@exercise("05.throughput", "modelled throughput",
          "From the Session report `report`, how many samples per second would the target process? "
          "(report.samples, report.simulated_time_s, report.host_time_s)")
def _check_throughput(answer: Any, *, report: Any) -> list[Line]:
    if bad := _not_a_number(answer, "samples per second"):
        return [bad]
    value, truth = float(answer), report.simulated_throughput
    if _close(value, truth):
        return [Line(True, f"{truth:,.0f} samples/s, MODELLED on {report.target}")]
    if report.host_time_s and _close(value, report.samples / report.host_time_s):
        return [Line(False, "that is this laptop's MEASURED rate, not the target's",
                     "use the MODELLED time, report.simulated_time_s")]
    if report.steps and _close(value, report.steps / report.simulated_time_s):
        return [Line(False, "that counts steps per second, not samples", "use report.samples")]
    return [Line(False, f"{value:,.0f} samples/s is not what the report gives",
                 "a rate is how much work per unit of time: which count of work, and which clock, MODELLED or "
                 "MEASURED?")]


@exercise("05.combined_batch", "PopTorch's combined batch",
          "With micro-batch `micro_batch` and the PopTorch `options` (replication, gradient accumulation, device "
          "iterations), how many samples does one call of a poptorch.trainingModel consume?")
def _check_combined_batch(answer: Any, *, options: Any, micro_batch: int) -> list[Line]:
    if bad := _not_a_number(answer, "samples"):
        return [bad]
    value = float(answer)
    truth = micro_batch * options.combined_batch_factor(True)
    g, r, d = options.Training.gradient_accumulation, options.replication_factor, options.device_iterations
    if value == truth:
        return [Line(True, f"{micro_batch} x {g} accumulated x {r} replicas x {d} device iterations = {truth:,}")]
    for name, n in (("device iterations", d), ("replicas", r), ("gradient accumulation", g)):
        if n > 1 and value * n == truth:
            return [Line(False, f"{value:,.0f} leaves out the {name}",
                         "every option that repeats the micro-batch within one call multiplies the samples")]
    return [Line(False, f"{value:,.0f} is not the combined batch",
                 "one call runs the micro-batch again for each accumulated step, each replica and each device "
                 "iteration")]


def device_iterations_for(effect: Any, share: float) -> int:
    """The smallest deviceIterations ``d`` with the host round trip at most ``share`` of a call:
    ``round_trip / (d x update + round_trip) <= share`` (``effect``: an OptionEffect of
    :mod:`accelkit.facades.poptorch.throughput`)."""
    need = (1 - share) / share * effect.round_trip_s / effect.iteration_s
    return max(1, math.ceil(need - 1e-9))


@exercise("05.device_iterations", "enough device iterations",
          "With the device iteration (`effect.iteration_s`) and host round trip (`effect.round_trip_s`) of `effect`, "
          "what is the smallest deviceIterations for which the host round trip is at most `share` of a call?")
def _check_device_iterations(answer: Any, *, effect: Any, share: float) -> list[Line]:
    if bad := _not_a_number(answer, "device iterations"):
        return [bad]
    if answer != int(answer) or answer < 1:
        return [Line(False, f"{answer} is not a whole number of at least 1",
                     "deviceIterations counts loops on the IPU per call: 1, 2, 3, ...")]
    d, truth = int(answer), device_iterations_for(effect, share)
    iteration_us, trip_us = effect.iteration_s * 1e6, effect.round_trip_s * 1e6

    def host(n: int) -> float:
        return effect.round_trip_s / (n * effect.iteration_s + effect.round_trip_s)

    if d == truth:
        below = f"; {d - 1} would leave {host(d - 1):.1%}" if d > 1 else ""
        return [Line(True, f"deviceIterations({d}): the host round trip is {host(d):.1%} of a call "
                           f"({d} x {iteration_us:.3g} µs + {trip_us:.3g} µs){below}")]
    if d < truth:
        return [Line(False, f"with deviceIterations({d}) the host round trip is still {host(d):.1%} of a call, above "
                            f"{share:.0%}", "more iterations per call spread the one round trip over more work")]
    if d == max(1, math.ceil(effect.round_trip_s / (share * effect.iteration_s) - 1e-9)):
        return [Line(False, f"{d} keeps the round trip to {share:.0%} of the time on the IPUs, but a call also "
                            "includes the round trip itself",
                     "the share is round_trip_s / (d x iteration_s + round_trip_s): the call, not the device time")]
    return [Line(False, f"deviceIterations({d}) works ({host(d):.1%}), but a smaller count does too",
                 "look for the smallest count that meets the goal")]


# ---- 06 compare ----------------------------------------------------------------------------------
@exercise("06.fastest", "the fastest target",
          "Of the compiled `programs` ({target: program}), which target has the shortest modelled step time?")
def _check_fastest(answer: Any, *, programs: dict[str, Any]) -> list[Line]:
    from accelkit import hardware

    if not isinstance(answer, str):
        return [Line(False, f"answer one target name as a str, not {answer!r}", "e.g. 'a100', in quotes")]
    times = {t: p.report.step_time_s for t, p in programs.items()}
    ranked = sorted(times, key=lambda t: times[t])
    fastest = [t for t in ranked if times[t] <= times[ranked[0]] * (1 + 1e-9)]  # ties all count
    best = times[ranked[0]]
    if answer in fastest:
        tied = [t for t in fastest if t != answer]
        return [Line(True, f"{answer}: {best * 1e3:.3g} ms per step (MODELLED), the shortest of {len(times)} targets"
                           + (f" (tied with {', '.join(tied)})" if tied else ""))]
    if answer not in times:
        key = answer.lower().replace(" ", "").replace("-", "")
        near = [t for t in times if t.replace("-", "") == key]
        return [Line(False, f"{answer!r} is not one of the {len(times)} compiled targets",
                     f"did you mean {near[0]!r}? Use the names as ak.hardware.names() writes them" if near
                     else f"answer with one of {sorted(times)}")]
    rank = ranked.index(answer) + 1
    where = f"{answer} takes {times[answer] * 1e3:.3g} ms per step, number {rank} of {len(times)}"
    family = programs[answer].report.family
    kin = [t for t in ranked if programs[t].report.family == family]
    if len(kin) > 1 and kin[0] == answer:
        return [Line(False, f"{answer} is the fastest of the {family} chips, but not of all: {where}",
                     "compare across every family: sorted(programs, key=lambda t: programs[t].report.step_time_s)")]
    peak = max(times, key=lambda t: hardware.get(t).peak_16bit()[1])
    if answer == peak:
        return [Line(False, f"{answer} has the highest peak FLOP/s, but not the shortest step: {where}",
                     "a small model rarely reaches the peak: compare program.report.step_time_s")]
    return [Line(False, where, "compare program.report.step_time_s across the targets: min(programs, key=...)")]


@exercise("06.speedup", "how much faster?",
          "How many times faster is `fast` than `slow` per modelled step, for the compiled `programs`?")
def _check_speedup(answer: Any, *, programs: dict[str, Any], fast: str, slow: str) -> list[Line]:
    if bad := _not_a_number(answer, "a ratio"):
        return [bad]
    value = float(answer)
    t_fast, t_slow = programs[fast].report.step_time_s, programs[slow].report.step_time_s
    truth = t_slow / t_fast
    if _close(value, truth, 0.05):
        return [Line(True, f"{fast} is {truth:.3g}x faster than {slow} per step (MODELLED): "
                           f"{t_slow * 1e3:.3g} ms / {t_fast * 1e3:.3g} ms")]
    if value and _close(1 / value, truth, 0.05):
        return [Line(False, "you divided the fast time by the slow one", "speed-up = slow time / fast time")]
    if any(_close(value, d, 0.05) for d in (t_slow - t_fast, (t_slow - t_fast) * 1e3)):
        return [Line(False, "that is the difference of the step times, not their ratio",
                     "speed-up = slow time / fast time")]
    p_fast, p_slow = programs[fast], programs[slow]
    if p_fast.precision == p_slow.precision:
        peaks = p_fast.spec.peak(p_fast.precision) / p_slow.spec.peak(p_slow.precision)
        if _close(value, peaks, 0.05):
            return [Line(False, f"{value:.3g}x is the ratio of their {p_fast.precision} peak FLOP/s, not of their "
                                "modelled step times",
                         "a step is not all at peak (launches, memory-bound kernels): divide the step times")]
    return [Line(False, f"{value:.3g}x is not the ratio of their step times",
                 "each program's report has its modelled step time: how many of the fast steps fit in one slow step?")]


# ---- 07 LLM inference ----------------------------------------------------------------------------
@exercise("07.ttft", "time to first token",
          "From the ServingEstimate `estimate`, how many milliseconds until the first output token (TTFT)?")
def _check_ttft(answer: Any, *, estimate: Any) -> list[Line]:
    if bad := _not_a_number(answer, "milliseconds"):
        return [bad]
    value, truth = float(answer), estimate.ttft_s * 1e3
    if _close(value, truth):
        return [Line(True, f"{truth:,.3g} ms to prefill {estimate.prompt_tokens} prompt tokens (MODELLED)")]
    if _close(value, estimate.ttft_s):
        return [Line(False, "that is in seconds", "multiply by 1,000 for milliseconds")]
    if _close(value, estimate.decode_step_s * 1e3):
        return [Line(False, "that is one decode step (each later token), not the first token",
                     "TTFT is the prefill of the prompt: estimate.ttft_s")]
    if _close(value, estimate.latency_s * 1e3):
        return [Line(False, "that is the whole request's latency", "only until the first token: estimate.ttft_s")]
    return [Line(False, f"{value:,.3g} ms is not the TTFT", "estimate.ttft_s is in seconds")]


@exercise("07.decode_memory_bound", "is decoding memory-bound?",
          "In `estimate`, is each decode step limited by memory bandwidth (reading the weights and the KV cache "
          "for every new token)? Answer True or False.")
def _check_decode_memory_bound(answer: Any, *, estimate: Any) -> list[Line]:
    if not isinstance(answer, bool):
        return [Line(False, f"answer True or False, not {answer!r}", "estimate.summary() names the bound")]
    truth = estimate.decode_bound == "memory"
    where = f"{estimate.chips} x {estimate.target}"
    text = f"decode on {where} is {estimate.decode_bound}-bound (MODELLED)"
    weights = f"{estimate.weights_bytes_per_chip / 1e9:.3g} GB of weights"
    why = {
        "memory": f"each token reads {weights} per chip (and the KV cache), and the memory bandwidth sets the step",
        "communication": f"each chip reads only {weights} from fast memory; passing each token's activations between "
                         f"the {estimate.chips} chips takes longer",
        "latency": f"reading {weights} per chip takes less time than the fixed latencies of every layer (launches, "
                   "syncs, hops across the chip)",
        "compute": "at this batch each weight read feeds enough arithmetic to keep the compute units busy",
        "host": f"reading {weights} per chip takes less time than each token's trip to the host and back (the "
                "runtime hands every step's logits back over the host link)",
    }.get(estimate.decode_bound, "")
    if answer == truth:
        return [Line(True, text + (f": {why}" if why else ""))]
    return [Line(False, "not quite",
                 "compare the time to read each chip's weights at its memory bandwidth with the step's other parts; "
                 "a big model at a small batch is usually memory-bound, a small one on many chips can be bound by "
                 "latency or communication")]


# ---- 08 the zoo ----------------------------------------------------------------------------------
@exercise("08.biggest_model", "the biggest zoo model",
          "Which model of ak.zoo.names() has the most parameters?")
def _check_biggest_model(answer: Any) -> list[Line]:
    from accelkit import zoo

    counts = {n: sum(p.numel() for p in zoo.get(n).model.parameters()) for n in zoo.names()}
    biggest = max(counts, key=lambda n: counts[n])
    if answer == biggest:
        return [Line(True, f"{biggest}: {counts[biggest]:,} parameters")]
    if answer not in counts:
        return [Line(False, f"{answer!r} is not in the zoo", f"one of {sorted(counts)}")]
    return [Line(False, f"{answer} has {counts[answer]:,} parameters; another has more",
                 "sum(p.numel() for p in ak.zoo.get(name).model.parameters())")]


@exercise("08.box_batch", "the batch sizes a box accepts",
          "A model box made from the compiled `program` lets you edit batch_size in box.yaml. Which values are "
          "legal? Answer a sorted list of ints.")
def _check_box_batch(answer: Any, *, program: Any) -> list[Line]:
    from accelkit.box import legal_values

    legal = list(legal_values(program)["batch_size"])
    if not isinstance(answer, (list, tuple)) or not all(isinstance(a, int) for a in answer):
        return [Line(False, "answer a list of whole numbers", "e.g. [1, 2, 4]")]
    if sorted(answer) == sorted(legal):
        return [Line(True, f"{legal}: the compiled batch ({program.batch_size}) and its divisors")]
    too_big = [a for a in answer if a > program.batch_size]
    if too_big:
        return [Line(False, f"{too_big} is more than the compiled batch {program.batch_size}",
                     "a bigger batch needs a new compile; the box can only run the compiled batch or less")]
    missing, extra = sorted(set(legal) - set(answer)), sorted(set(answer) - set(legal))
    replicas = program.parallel.data
    if extra and replicas > 1 and all(a > 0 and program.batch_size % a == 0 for a in extra):
        return [Line(False, f"{extra} divide the compiled batch, but not among the {replicas} data-parallel replicas",
                     f"each replica needs whole samples: only divisors of {program.batch_size} that are multiples "
                     f"of {replicas}")]
    return [Line(False, (f"{len(missing)} legal value(s) missing" if missing else "")
                 + (", " if missing and extra else "") + (f"{len(extra)} value(s) not legal" if extra else ""),
                 "each run splits the compiled batch evenly")]


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
        lines.append(Line(ok, f"{change}: {'recompile' if need else 'reuse the artifact'} ({why})" if ok
                          else f"{change}: not quite",
                          "" if ok else ("shapes, dtypes, batch and chip count are compiled in" if need
                                         else "weights, optimizer values and data are inputs to the program")))
    return lines


def _sambaflow_args(line: Any) -> tuple[str, dict[str, str]] | None:
    """``python app.py compile -b 64 --pef-name=x`` -> ("compile", {"-b": "64", "--pef-name": "x"}); None when the
    line is not ``python <script> <subcommand> ...``."""
    import shlex

    if not isinstance(line, str):
        return None
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    if words[:1] == ["srun"]:  # ALCF launches the same line through Slurm
        words = words[1:]
    if len(words) < 3 or not words[0].startswith("python") or not words[1].endswith(".py"):
        return None
    opts: dict[str, str] = {}
    rest = words[3:]
    i = 0
    while i < len(rest):
        w = rest[i]
        if "=" in w and w.startswith("-"):
            k, _, v = w.partition("=")
            opts[k] = v
        elif w.startswith("-") and i + 1 < len(rest) and not rest[i + 1].startswith("-"):
            opts[w] = rest[i + 1]
            i += 1
        else:
            opts[w] = ""
        i += 1
    return words[2], opts


@exercise("10.commands", "the real command lines",
          "On a SambaNova system, write the two command lines that compile the app `app.py` for batch `batch` and "
          "micro-batch `micro_batch` into a PEF named `pef_name`, then run it: a list of two strings.")
def _check_commands(answer: Any, *, batch: int, micro_batch: int, pef_name: str) -> list[Line]:
    if not isinstance(answer, (list, tuple)) or len(answer) != 2 or not all(isinstance(a, str) for a in answer):
        return [Line(False, "answer a list of two command lines (strings): the compile, then the run",
                     "e.g. ['python app.py compile ...', 'python app.py run ...']")]
    parsed = [_sambaflow_args(a) for a in answer]
    lines = []
    for step, got in zip(("compile", "run"), parsed, strict=True):
        if got is None:
            lines.append(Line(False, f"the {step} line is not `python app.py {step} ...`",
                              "a SambaFlow app is one Python script; its first argument is the subcommand"))
            continue
        sub, opts = got
        if sub != step:
            lines.append(Line(False, f"the {step} line runs the subcommand {sub!r}",
                              "compile first, then run against the PEF it wrote"))
            continue
        b, mb = opts.get("-b", opts.get("--batch-size")), opts.get("-mb", opts.get("--micro-batch-size"))
        ok_batch = b == str(batch) and (mb == str(micro_batch) or (mb is None and micro_batch == batch))
        lines.append(Line(ok_batch, f"{step}: batch and micro-batch as asked" if ok_batch
                          else f"{step}: the batch options are not the ones asked for",
                          "" if ok_batch else "the PEF is compiled for one batch and micro-batch, and run with "
                                              "the same ones: -b and -mb"))
        if step == "compile":
            ok = opts.get("--pef-name") == pef_name
            lines.append(Line(ok, "compile: the PEF is named as asked" if ok else "compile: the PEF is not named "
                              "as asked", "" if ok else "the compiler takes the PEF's name, not a path "
                              "(SambaFlow's compiler arguments)"))
        else:
            pef = opts.get("--pef", "")
            ok = pef.endswith(f"{pef_name}.pef") and f"{pef_name}/" in pef
            lines.append(Line(ok, "run: points at the compiled PEF file" if ok else "run: --pef does not point at "
                              "the file compile wrote", "" if ok else "compile writes out/<name>/<name>.pef; run "
                              "takes that file's path"))
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



# ---- 11 the design space -------------------------------------------------------------------------
@exercise("11.fastest_chip", "the fastest chip per sample",
          "In the sweep `df`, which target has the least modelled time per sample for `model` at batch `batch` "
          "(inference, any precision and chip count the sweep tried)?")
def _check_fastest_chip(answer: Any, *, sweep: Any, model: str, batch: int) -> list[Line]:
    rows = sweep[(sweep.status == "ok") & (sweep.model == model) & (sweep.batch == batch)]
    if "training" in rows:
        rows = rows[~rows.training.astype(bool)]
    if not isinstance(answer, str):
        return [Line(False, f"answer one target name as a str, not {answer!r}", "e.g. 'a100', in quotes")]
    best = rows.loc[rows.time_per_sample_s.idxmin()]
    if answer == best.target:
        return [Line(True, f"{answer}: {best.time_per_sample_s * 1e6:.3g} µs per sample (MODELLED) on "
                           f"{best.chips_used} chip(s), {best.precision}")]
    mine = rows[rows.target == answer]
    if mine.empty:
        return [Line(False, f"{answer!r} has no modelled row for {model} at batch {batch}",
                     "filter df by model, batch and status == 'ok', then take the row with the least "
                     "time_per_sample_s")]
    return [Line(False, f"{answer} takes {mine.time_per_sample_s.min() * 1e6:.3g} µs per sample at best, "
                        f"{best.target} {best.time_per_sample_s * 1e6:.3g} µs",
                 "compare time_per_sample_s (the step over the batch), not step_time_s, across chip counts")]


@exercise("11.allreduce_gap", "measured against modelled all-reduce",
          "How many times longer is the all-reduce MEASURED on this host (`run.measured_allreduce_s`) than the "
          "one MODELLED on the target's links (`run.modelled_allreduce_s`)? A ratio.")
def _check_allreduce_gap(answer: Any, *, run: Any) -> list[Line]:
    bad = _not_a_number(answer, "the ratio")
    if bad:
        return [bad]
    want = run.measured_allreduce_s / run.modelled_allreduce_s
    if _close(float(answer), want):
        return [Line(True, f"{float(answer):,.0f}x: loopback TCP between CPU processes against "
                           f"{run.world_size} x {run.target}'s links (modelled)")]
    if _close(float(answer), 1 / want):
        return [Line(False, f"{float(answer):.3g} is the inverse", "measured over modelled, not modelled over measured")]
    return [Line(False, f"{float(answer):.4g} is not the ratio", "read the two times the run reports and say "
                                                                 "how many times the measured one is the other")]
