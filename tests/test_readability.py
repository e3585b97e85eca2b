"""What a learner reads is true: bytes counted once per precision, the same report from two fresh processes,
grouped findings, hints that point at the idea (never the answer), errors that blame the right thing, a report
whose "bound by" agrees with its utilization, the vendors' own modes, and host measurements that obey physics."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit import teach
from accelkit.porting.check import CompatibilityReport, Finding


def test_precision_scales_bytes_once_whatever_the_example_dtype():
    x32 = torch.randn(1024, 1024)
    moved = {str(x.dtype): ak.compile(nn.ReLU(), (x,), target="a100", precision="fp16").report.traffic_bytes
             for x in (x32, x32.half())}
    assert moved["torch.float32"] == moved["torch.float16"]
    # a ReLU reads and writes 1024 x 1024 two-byte numbers
    assert sum(moved["torch.float16"].values()) == pytest.approx(2 * 2 * 1024 * 1024, rel=0.01)


_SAME_REPORT = """
import torch, accelkit as ak
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 10))
for t in ("a100", "gc200"):
    p = ak.compile(m, (torch.randn(4, 3, 8, 8),), target=t, precision="fp16")
    print(p.report.summary(), p.report.throughput)
"""


def test_a_compile_in_a_fresh_process_gives_the_same_report(tmp_path, capsys):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELKIT_CACHE_DIR": str(tmp_path), "PYTHONHASHSEED": "12345"}
    fresh = subprocess.run([sys.executable, "-c", _SAME_REPORT], env=env, capture_output=True, text=True,
                           timeout=300, check=True).stdout
    exec(compile(_SAME_REPORT, "same_report", "exec"), {})  # noqa: S102 - this test's own code, in this process
    assert fresh and capsys.readouterr().out == fresh


def _finding(module: str, line: int, **kw: object) -> Finding:
    base = dict(kind="unsupported-op", op="aten.sort", count=1, module=module, source=f"model.py:{line}",
                reason="the chip has no sort", fix="sort on the host", rule_source="illustrative: a test rule")
    return Finding(**{**base, **kw})  # type: ignore[arg-type]


def test_identical_findings_are_grouped_with_their_count_and_places():
    same = [_finding(f"h.{i}.attn", 40 + i) for i in range(14)]
    other = _finding("lm_head", 90, op="aten.topk", reason="no topk", fix="topk on the host")
    report = CompatibilityReport("tsp", "static-schedule", "GroqFlow", "GPT2", (*same, other), captured=True)
    text = str(report)
    assert text.count("why: the chip has no sort") == 1 and text.count("why: no topk") == 1
    assert "14 places" in text and "h.0.attn (model.py:40)" in text and "and 8 more" in text
    ops = [_finding("h.0", 7, op=op) for op in ("aten.expand.default", "aten.slice.Tensor", "aten.cumsum.default")]
    grouped = str(CompatibilityReport("tsp", "static-schedule", "GroqFlow", "GPT2", tuple(ops), captured=True))
    assert grouped.count("why:") == 1 and "aten.expand.default (+2 ops)" in grouped and "cumsum.default in h.0" in grouped
    html = report._repr_html_()
    assert html.count("the chip has no sort") == 1 and "14 places" in html


def _program(step_s: float, peak: float) -> SimpleNamespace:
    return SimpleNamespace(precision="fp16", report=SimpleNamespace(step_time_s=step_s),
                           spec=SimpleNamespace(peak=lambda precision: peak))


def test_a_failing_hint_never_prints_the_answer():
    programs = {"fast": _program(1e-3, 4e14), "slow": _program(2.28e-3, 1e14)}
    for wrong in (4.0, 7.5):  # the peak ratio, and a guess
        result = teach.check("06.speedup", wrong, programs=programs, fast="fast", slow="slow", quiet=True)
        assert result.status == "failed"
        assert not any("2.28" in line.text or "2.28" in line.hint for line in result.lines)


def test_the_real_command_lines_exercise_checks_each_line():
    case = dict(batch=64, micro_batch=4, pef_name="app_b64")
    right = ["python app.py compile -b 64 -mb 4 --pef-name=app_b64",
             "python app.py run -b 64 -mb 4 --pef out/app_b64/app_b64.pef"]
    assert teach.check("10.commands", right, quiet=True, **case).status == "passed"
    wrong = teach.check("10.commands", [right[0], "python app.py run -b 32 -mb 4 --pef=out/app_b64/app_b64.pef"],
                        quiet=True, **case)
    assert wrong.status == "failed" and any("run: the batch" in line.text for line in wrong.lines if not line.ok)


def test_labels_of_the_wrong_dtype_blame_the_labels():
    model = nn.Linear(4, 3)
    session = ak.Session(model, target="a100", optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                         loss_fn=nn.functional.cross_entropy)
    with pytest.raises(ak.AccelkitError) as err:
        session.run(torch.randn(2, 4), labels=torch.tensor([0.0, 1.0]).unsqueeze(1))
    text = str(err.value)
    assert "labels" in text and "float32[2, 1]" in text and "int64" in text
    assert "inputs' shapes" not in text


def test_bound_by_agrees_with_a_tiny_utilization():
    prog = ak.compile(nn.Linear(8, 8), (torch.randn(2, 8),), target="wse3")
    summary = prog.report.summary()
    assert "compute 0%" not in summary and "far too small" in summary
    assert "bound by:" not in summary and "what limits each kernel" in summary


def test_a_step_of_fixed_costs_says_a_bigger_batch_would_cost_about_the_same():
    """A tiny model on an IPU: every kernel is shorter than its op's program (IPU_OP_FLOOR_S), so the step is its
    kernels' fixed costs, and the summary says what that means; a large matmul's step does not say it."""
    tiny = ak.compile(nn.Sequential(nn.Linear(8, 8), nn.ReLU()), (torch.randn(2, 8),), target="gc200",
                      precision="fp16", synthetic_data=True, device_iterations=50).report  # no host link
    assert tiny.bound_by["latency"] >= 0.5 and "a bigger batch would do more work" in tiny.summary()
    big = ak.compile(nn.Linear(2048, 2048), (torch.randn(4096, 2048),), target="gc200", precision="fp16").report
    assert big.bound_by.get("latency", 0.0) < 0.5 and "a bigger batch would do more work" not in big.summary()


def test_a_model_too_big_for_the_wafer_streams_its_weights_as_cerebras_does():
    with torch.device("meta"):
        model = nn.Sequential(*[nn.Linear(40_000, 40_000, bias=False) for _ in range(16)])  # 25.6 B weights
    prog = ak.compile(model, (torch.zeros(1, 40_000, device="meta"),), target="wse3", precision="bf16")
    assert prog.mode == "weight-streaming" and not prog.memory_plan.partial
    small = ak.compile(nn.Linear(8, 8), (torch.randn(2, 8),), target="wse3")
    assert small.mode == "pipelined"


def test_each_sram_family_states_its_own_usable_share_and_source():
    sources = {f: ak.constants.usable_sram(ak.hardware.get(t).family).source
               for t in ("wse3", "sn40l", "gc200", "tsp") for f in [ak.hardware.get(t).family]}
    assert len(set(sources.values())) == 4
    assert sum("20B models fit on a single CS-3" in s for s in sources.values()) == 1


def test_a_calibration_that_breaks_physics_is_bounded_said_and_never_cached(monkeypatch, tmp_path):
    import importlib

    cal = importlib.import_module("accelkit.hardware.calibrate")

    monkeypatch.setenv("ACCELKIT_CACHE_DIR", str(tmp_path))
    real = cal._measure

    def slow_cache() -> ak.hardware.AcceleratorSpec:
        spec = real()
        d = spec.to_dict()
        d["memory_tiers"][0]["bandwidth_Bps"] = d["memory_tiers"][1]["bandwidth_Bps"] / 100  # 181 MB/s vs 26 GB/s
        d["on_chip_bandwidth_Bps"] = d["memory_tiers"][0]["bandwidth_Bps"]
        return ak.hardware.AcceleratorSpec.from_dict(d)

    monkeypatch.setattr(cal, "_measure", slow_cache)
    monkeypatch.setattr(cal, "MEASURE_TRIES", 1)
    spec = cal.calibrate(force=True)  # every try disturbed (a busy shared server): bounded for this session
    cache, dram = spec.memory_tiers
    assert cache.bandwidth_Bps == dram.bandwidth_Bps == spec.on_chip_bandwidth_Bps
    said = spec.sources["memory_tiers.cache.bandwidth_Bps"]
    assert "slower than the dram" in said and "lower bound" in said and "not cached" in said
    assert not cal.physics_errors(spec) and not cal.cache_path().exists()


def test_the_fits_table_by_chip_fits_a_notebook_panel():
    wide = ak.hardware.fits_table({"8 B": 8e9, "70 B": 70e9})
    narrow = ak.hardware.fits_table({"8 B": 8e9, "70 B": 70e9}, by_chip=True)
    assert max(map(len, narrow.splitlines())) < 130 < max(map(len, wide.splitlines()))
    rows = narrow.splitlines()[2:]
    assert [r.split()[0] for r in rows] == [s.name for s in ak.hardware.catalog()]
    tsp = next(r for r in rows if r.split()[0] == "tsp")
    assert ak.hardware.fits(8e9, "tsp", bytes_per_param=2).summary() in tsp
    # in a notebook it shows as an HTML table (one row per chip), which scrolls sideways instead of wrapping
    page = narrow._repr_html_()
    assert repr(narrow) == str(narrow) and page.count("<tr>") == len(rows) + 1
    assert page.count("</th>") == len(narrow.head) == 5 and ">tsp</td>" in page


def test_a_table_escapes_its_cells_and_refuses_a_ragged_row():
    from accelkit.hardware.table import Table

    t = Table(["op", "time"], [["a<b", "1 ms"]])
    assert str(t).splitlines()[2] == "a<b  1 ms" and "a&lt;b" in t._repr_html_()
    with pytest.raises(ValueError, match="every row needs 2 cells"):
        Table(["op", "time"], [["x"]])
