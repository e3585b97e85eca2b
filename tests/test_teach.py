"""The exercise facility: not-done answers never fail, wrong answers get a precise message and a hint,
and every shipped solution passes its own checker (the second notebook run relies on that)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit import teach
from accelkit.compiler.compile_time import compile_time, recompile_reasons
from accelkit.poptorch.throughput import OptionEffect
from accelkit.teach import checkers, solutions

CONTEXTS = {
    "01.linear_flops": {"batch": 8, "in_features": 16, "out_features": 32},
    "02.ridge_point": {"target": "a100", "precision": "bf16", "tier": "hbm"},
    "02.weights_fit": {"target": "tsp", "params": 200_000_000, "precision": "fp16"},
    "10.recompile": {},
    "10.commands": {"batch": 64, "micro_batch": 4, "pef_name": "app_b64"},
    "09.three_families": {},
}


# one PopTorch call at the defaults: an 11 µs device iteration (update + inputs) and a 20 µs host round trip
EFFECT = OptionEffect("gc200", replicas=1, accumulation=1, device_iterations=1, micro_batch=8, ipus=1,
                      update_s=10.5e-6, feed_s=0.5e-6, round_trip_s=20e-6)


@pytest.fixture(autouse=True)
def _shipped_mode():
    teach.setup(solutions=False)
    yield
    teach.setup(solutions=False)


@pytest.fixture(scope="module")
def prof():
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    return ak.profile(model, (torch.randn(4, 32),), runs=1)


@pytest.fixture(scope="module")
def report():
    from accelkit.porting import GatedMLP

    return ak.check(GatedMLP(), (torch.randn(4, 16),), target="tsp")


@pytest.fixture(scope="module")
def programs():
    entry = ak.zoo.get("ffn_logreg")
    return {t: ak.compile(entry.model, entry.example_inputs, target=t, training=True) for t in ("a100", "h100", "sn40l")}


@pytest.fixture(scope="module")
def session_report():
    model = nn.Linear(8, 2)
    session = ak.Session(model, target="sn40l", optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                         loss_fn=nn.functional.cross_entropy)
    for _ in range(2):
        session.run(torch.randn(4, 8), labels=torch.tensor([0, 1, 0, 1]))
    return session.report()


@pytest.fixture(scope="module")
def estimate():
    return ak.serve(ak.zoo.get("gpt_small").model, target="sn40l", chips=1, prompt_tokens=64, output_tokens=16)


@pytest.fixture(scope="module")
def contexts(prof, report, programs, session_report, estimate):
    from accelkit import poptorch

    options = poptorch.Options().replicationFactor(2).deviceIterations(4)
    options.Training.gradientAccumulation(8)
    return {**CONTEXTS,
            "01.hottest_op": {"prof": prof}, "01.zero_flop_time": {"prof": prof}, "03.first_recipe": {"report": report}, "03.gated_mlp": {},
            "04.intensity": {"program": programs["sn40l"], "index": 0},
            "04.bound": {"program": programs["a100"], "index": 0, "tier": "hbm"},
            "05.throughput": {"report": session_report},
            "05.combined_batch": {"options": options, "micro_batch": 2},
            "05.device_iterations": {"effect": EFFECT, "share": 0.1},
            "06.fastest": {"programs": programs},
            "06.speedup": {"programs": programs, "fast": "sn40l", "slow": "a100"},
            "07.ttft": {"estimate": estimate}, "07.decode_memory_bound": {"estimate": estimate},
            "08.biggest_model": {}, "08.box_batch": {"program": programs["sn40l"]},
            "11.fastest_chip": {"sweep": _SWEEP, "model": "m", "batch": 8},
            "11.allreduce_gap": {"run": _RUN}}


# a sweep's rows and a data-parallel run, as notebook 11 makes them (small stand-ins: the checkers read columns)
_SWEEP = __import__("pandas").DataFrame({
    "status": ["ok", "ok", "ok", "refused"], "model": ["m"] * 4, "batch": [8] * 4, "training": [False] * 4,
    "target": ["a100", "sn40l", "wse3", "tsp"], "time_per_sample_s": [2e-5, 1e-5, 4e-6, float("nan")],
    "chips_used": [1, 1, 1, 2], "precision": ["bf16"] * 4})
_RUN = __import__("types").SimpleNamespace(measured_allreduce_s=8e-3, modelled_allreduce_s=1.6e-5, world_size=2,
                                          target="h100")


def test_every_exercise_has_a_solution_and_a_context(contexts):
    assert set(solutions.SOLUTIONS) == set(teach.exercises._load()) == set(contexts)


def test_at_least_two_exercises_for_each_notebook_01_to_08():
    for nb in ("01", "02", "03", "04", "05", "06", "07", "08"):
        assert len(teach.exercises_for(nb)) >= 2, nb


def test_not_done_never_fails_and_says_what_to_do(contexts, capsys):
    for name in teach.EXERCISES:
        result = teach.check(name, ..., **contexts[name])
        assert result.status == "not done yet" and not result.passed
        out = capsys.readouterr().out
        assert "not done yet" in out and "Replace the `...`" in out and teach.EXERCISES[name].task in out


def test_every_shipped_solution_passes(contexts):
    teach.setup(solutions=True)
    for name in teach.EXERCISES:
        result = teach.check(name, ..., quiet=True, **contexts[name])
        assert result.passed and result.from_solution, str(result)


def test_a_failing_check_raises_only_when_solutions_are_applied():
    result = teach.check("02.ridge_point", 1.0, quiet=True, **CONTEXTS["02.ridge_point"])
    assert result.status == "failed"
    teach.setup(solutions=True)
    with pytest.raises(teach.ExerciseFailed, match="02.ridge_point failed"):
        teach.check("02.ridge_point", 1.0, quiet=True, **CONTEXTS["02.ridge_point"])


@pytest.mark.parametrize(("answer", "message", "hint"), [
    (2039e9 / 312e12, "bandwidth by peak", "peak FLOP/s / bandwidth"),
    (312e12 / 6100e9, "against l2, not hbm", "spec.tier('hbm')"),
    (19.5e12 / 2039e9, "for fp32, not bf16", "spec.peak('bf16')"),
    (312 / 2039, "power of 1,000", "base units"),
    ("153", "should be a number", "expression"),
])
def test_ridge_point_names_each_mistake(answer, message, hint):
    result = teach.check("02.ridge_point", answer, quiet=True, **CONTEXTS["02.ridge_point"])
    assert result.status == "failed"
    (line,) = result.lines
    assert message in line.text and hint in line.hint


@pytest.mark.parametrize(("answer", "message"), [
    (8 * 16 * 32, "multiply-adds"), (2 * 8 * 16 * 32 + 8 * 32, "bias"), (2 * 16 * 32, "one sample"),
])
def test_linear_flops_names_each_mistake(answer, message):
    result = teach.check("01.linear_flops", answer, quiet=True, **CONTEXTS["01.linear_flops"])
    assert result.status == "failed" and message in result.lines[0].text


def test_hottest_op_mistakes(prof):
    assert "not an op of this profile" in teach.check("01.hottest_op", "mm", quiet=True, prof=prof).lines[0].text
    assert teach.check("01.hottest_op", prof.ops[0].op, quiet=True, prof=prof).passed
    if len(prof.ops) > 1:
        text = teach.check("01.hottest_op", prof.ops[1].op, quiet=True, prof=prof).lines[0].text
        assert "number 2" in text or "most FLOPs" in text


def test_recompile_marks_each_wrong_change():
    answer = {c: True for c in checkers.CHANGES}
    result = teach.check("10.recompile", answer, quiet=True)
    failed = [line.text for line in result.lines if not line.ok]
    assert len(failed) == 3 and all(t.endswith("not quite") and "reuse" not in t for t in failed)  # no answer given


def test_three_families_rejects_a_shared_family():
    result = teach.check("09.three_families", ["a100", "h100", "tsp"], quiet=True)
    assert not result.passed and "share a family" in result.lines[1].hint
    assert "not in the catalog" in teach.check("09.three_families", ["a101"], quiet=True).lines[0].text


def test_a_checker_that_raises_on_the_answer_reports_it():
    result = teach.check("01.hottest_op", "aten::mm", quiet=True, prof=None)
    assert result.status == "failed" and "raised AttributeError" in result.lines[0].text


def test_unknown_exercise_lists_the_known_ones():
    with pytest.raises(ak.UnknownNameError, match="02.ridge_point"):
        teach.check("02.ridge", 1.0)


def test_exercises_for_a_notebook():
    assert [e.name for e in teach.exercises_for("02_understand_the_hardware")] == ["02.ridge_point", "02.weights_fit"]


def test_compile_time_and_recompile_reasons():
    entry = ak.zoo.get("ffn_logreg")
    a = ak.compile(entry.model, entry.example_inputs, target="sn40l", training=True)
    b = ak.compile(entry.model, entry.example_inputs, target="sn40l", training=True, batch_size=2 * a.batch_size)
    t = compile_time(a)
    assert t.seconds > 60 and "illustrative" in t.assumptions and "358-1,844" in t.assumptions
    assert "MODELLED" in str(t) and "batch size" in str(t)
    assert any(r.startswith("the batch size") for r in recompile_reasons(a, b))
    assert recompile_reasons(a, a) == []
    # the compile report states it: the program's own value, in its summary
    assert a.compile_time == t and f"real toolchain: {t}" in a.summary()
    gpu = ak.compile(entry.model, entry.example_inputs, target="a100")
    assert compile_time(gpu).seconds == 0
    # more kernels, longer compile
    unet = ak.zoo.get("unet2d")
    big = ak.compile(unet.model, unet.example_inputs, target="sn40l", training=True)
    assert 358 <= compile_time(big).seconds <= 1844 and compile_time(big).seconds > t.seconds


def test_gated_mlp_reports_the_if_left_in_place():
    from accelkit.porting import GatedMLP

    result = teach.check("03.gated_mlp", GatedMLP, quiet=True)
    assert result.status == "failed"
    assert any("data-dependent" in line.text and "torch.where" in line.hint for line in result.lines if not line.ok)


def test_combined_batch_names_the_missing_factor(contexts):
    ctx = contexts["05.combined_batch"]
    result = teach.check("05.combined_batch", 2 * 8 * 2, quiet=True, **ctx)  # no device iterations
    assert "leaves out the device iterations" in result.lines[0].text


@pytest.mark.parametrize(("answer", "message"), [
    (16, "still 10.2% of a call"),  # 20 / (16 x 11 + 20); 17 is the smallest that makes 10%
    (19, "of the time on the IPUs"),  # 20 / (19 x 11) < 10%: the round trip left out of the call
    (40, "a smaller count does too"),
    (2.5, "not a whole number"),
])
def test_device_iterations_names_each_mistake(answer, message):
    result = teach.check("05.device_iterations", answer, quiet=True, effect=EFFECT, share=0.1)
    assert result.status == "failed" and message in result.lines[0].text, result.lines[0]
    assert teach.check("05.device_iterations", 17, quiet=True, effect=EFFECT, share=0.1).passed


def test_throughput_catches_the_measured_rate(contexts):
    report = contexts["05.throughput"]["report"]
    result = teach.check("05.throughput", report.samples / report.host_time_s, quiet=True, report=report)
    assert "MEASURED" in result.lines[0].text and "simulated_time_s" in result.lines[0].hint


def test_speedup_and_ttft_mistakes(contexts):
    ctx = contexts["06.speedup"]
    inverted = ctx["programs"]["sn40l"].report.step_time_s / ctx["programs"]["a100"].report.step_time_s
    assert "fast time by the slow" in teach.check("06.speedup", inverted, quiet=True, **ctx).lines[0].text
    est = contexts["07.ttft"]["estimate"]
    assert "in seconds" in teach.check("07.ttft", est.ttft_s, quiet=True, estimate=est).lines[0].text
    wrong = teach.check("07.decode_memory_bound", est.decode_bound != "memory", quiet=True, estimate=est).lines[0]
    assert wrong.text == "not quite" and est.decode_bound not in wrong.text and "memory bandwidth" in wrong.hint
    right = teach.check("07.decode_memory_bound", est.decode_bound == "memory", quiet=True, estimate=est).lines[0]
    assert f"is {est.decode_bound}-bound" in right.text and "GB of weights" in right.text


def test_fastest_names_a_family_winner_and_a_misspelling(contexts):
    programs = contexts["06.fastest"]["programs"]
    gpu = min(("a100", "h100"), key=lambda t: programs[t].report.step_time_s)  # sn40l is faster than both
    line = teach.check("06.fastest", gpu, quiet=True, programs=programs).lines[0]
    assert "fastest of the gpu chips, but not of all" in line.text and "every family" in line.hint
    assert "did you mean 'sn40l'" in teach.check("06.fastest", "SN40L", quiet=True, programs=programs).lines[0].hint


def test_speedup_names_the_peak_ratio(contexts):
    ctx = contexts["06.speedup"]
    peaks = ak.hardware.get("sn40l").peak("bf16") / ak.hardware.get("a100").peak("bf16")
    line = teach.check("06.speedup", peaks, quiet=True, **ctx).lines[0]
    assert "ratio of their bf16 peak FLOP/s" in line.text and "divide the step times" in line.hint


def test_box_batch_refuses_a_bigger_batch(contexts):
    program = contexts["08.box_batch"]["program"]
    result = teach.check("08.box_batch", [program.batch_size * 2], quiet=True, program=program)
    assert "new compile" in result.lines[0].hint
    b = program.batch_size  # a power of two above 2: b - 1 does not divide it
    line = teach.check("08.box_batch", [1, b - 1, b], quiet=True, program=program).lines[0]
    assert line.text == f"{len([d for d in range(2, b) if b % d == 0])} legal value(s) missing, 1 value(s) not legal"
    entry = ak.zoo.get("ffn_logreg")
    dp = ak.compile(entry.model, entry.example_inputs, target="a100", chips=2, parallel=ak.Parallel(data=2))
    line = teach.check("08.box_batch", [1, dp.batch_size], quiet=True, program=dp).lines[0]
    assert "[1] divide the compiled batch, but not among the 2 data-parallel replicas" in line.text


def test_weights_fit_catches_the_datasheet_capacity():
    ctx = {"target": "tsp", "params": 110_000_000, "precision": "fp16"}  # 220 MB: under 231 MB, over 212 usable
    result = teach.check("02.weights_fit", True, quiet=True, **ctx)
    assert "datasheet capacity" in result.lines[0].text and "usable_on_chip_bytes" in result.lines[0].hint
    assert teach.check("02.weights_fit", False, quiet=True, **ctx).passed


def test_gated_mlp_names_a_condition_taken_per_element():
    from accelkit.porting import GatedMLP

    class PerElement(GatedMLP):
        def forward(self, x):
            h = self.fc1(x)
            return self.fc2(torch.where(h > 0, torch.relu(h), torch.tanh(h)))  # not GatedMLP's rule

    result = teach.check("03.gated_mlp", PerElement, quiet=True)
    (wrong,) = [line for line in result.lines if not line.ok]
    assert wrong.text.startswith("same outputs") and "one condition for the whole tensor" in wrong.hint


def test_zero_flop_time_names_each_mistake():
    from types import SimpleNamespace

    from accelkit.profiler.host import OpRow

    ops = [OpRow("aten::addmm", 6e-3, 1000, 2, 0.6), OpRow("aten::relu", 3e-3, 0, 1, 0.3),
           OpRow("aten::t", 0.5e-3, 0, 2, 0.05), OpRow("aten::mm", 0.5e-3, 200, 1, 0.05)]  # measured: fixed here
    prof = SimpleNamespace(ops=ops, total_time_s=20e-3)

    def first_line(answer):
        return teach.check("01.zero_flop_time", answer, quiet=True, prof=prof).lines[0]

    assert first_line(0.35).ok and "2 of 4 ops" in first_line(0.35).text
    assert "percentage" in first_line(35).text
    assert "DO have counted FLOPs" in first_line(0.65).text
    assert "counts ops, not their time" in first_line(0.5).text
    assert "wall time" in first_line(3.5e-3 / 20e-3).text


def test_prose_helpers_read_well_for_any_list_and_gap():
    from accelkit.teach.prose import and_list, gap_text, ordinal, times_text

    assert and_list([]) == "" and and_list(["a"]) == "a" and and_list(["a", "b"]) == "a and b"
    assert and_list(["a", "b", "c"]) == "a, b and c" and and_list(["a", "b"], conj="or") == "a or b"
    assert gap_text(1.0) == "the same" and gap_text(1.004) == "within 1%" and gap_text(1 / 1.004) == "within 1%"
    assert gap_text(1.12) == "within 12%"
    assert ordinal(2) == "second" and ordinal(11) == "11th" and ordinal(22) == "22nd"
    assert times_text(1.02) == "about the same" and times_text(3.42) == "3.4x" and times_text(24.4) == "24x"
