"""Options checked once and passed down: ``CompileOptions``, ``build`` (one program, no search), the search in the
workflow layer (each candidate modelled once), and one ``ak.serve`` call looking the chip, its rates and its family
up once per configuration."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
import torch
from torch import nn

import accelkit as ak
import accelkit.families
from accelkit.compiler import CompileOptions, build, lower
from accelkit.errors import CompileError
from accelkit.workflow import compiling


def _mlp() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), (torch.randn(8, 16),)


def test_options_are_checked_once_and_frozen() -> None:
    opts = CompileOptions.check("a100", precision="fp16", chips=2, batch_size=8, micro_batch=4)
    assert opts.spec.name == "a100" and opts.family.family == opts.spec.family and opts.stack == "compiled"
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.chips = 4  # type: ignore[misc]
    assert CompileOptions.check("a100", role="session").stack == "eager"  # a Session's default stack
    assert CompileOptions.check("a100", role="serve").stack == "engine"
    copy = opts.but(batch_size=16, micro_batch=None)
    assert (copy.batch_size, copy.micro_batch, copy.spec) == (16, None, opts.spec) and opts.batch_size == 8
    assert copy.rates is opts.but().rates or copy.rates == opts.rates
    with pytest.raises(CompileError, match="not divisible by micro_batch 3"):
        opts.but(batch_size=8, micro_batch=3)
    with pytest.raises(CompileError, match="uses 4 chips but chips=2"):
        opts.but(parallel=ak.Parallel(data=4))
    with pytest.raises(CompileError, match="cannot change"):
        opts.but(precision="fp32")


def test_build_makes_one_program_and_the_search_models_each_candidate_once() -> None:
    model, x = _mlp()
    opts = CompileOptions.check("a100", chips=4, precision="fp32")
    lowered = lower(model, x, opts)
    pairs = compiling.candidates(lowered, opts)
    assert {p for p, _plan in pairs} == {ak.Parallel(data=4), opts.family.split(4)}
    one = build(lowered, opts, *pairs[0])
    assert one.parallel == pairs[0][0] and one.options is opts and one.chips == 4
    fusion = next(p for p in one.passes if p.name == "fusion")
    assert f"({opts.spec.family})" in fusion.summary  # the family's name, as before (the model is passed down)
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.batch_size = 64  # type: ignore[misc]
    estimate_module = sys.modules["accelkit.sim.estimate"]  # the package's `estimate` is the function
    calls: list[Any] = []
    real = estimate_module.estimate

    def counting(prog: Any) -> Any:
        calls.append(prog)
        return real(prog)

    with mock.patch.object(estimate_module, "estimate", counting):
        prog = ak.compile(model, x, target="a100", chips=4, precision="fp32")
        report = prog.report
    assert len(calls) == len(pairs) and len({id(p) for p in calls}) == len(pairs)  # each candidate once
    assert report is prog.report and any(c is prog for c in calls)  # the winner keeps the report it was chosen by
    assert report.step_time_s == min(c.report.step_time_s for c in calls)


def test_a_session_reports_the_program_behind_its_clock() -> None:
    model, _x = _mlp()
    session = ak.Session(model, target="a100", precision="fp32")
    session.run(torch.randn(2, 16))
    session.run(torch.randn(64, 16))  # another shape: another program, now behind the clock
    prog = session.compiled
    assert prog is not None and prog.batch_size == 64
    assert session.report().utilization == dict(prog.report.utilization)
    assert session.options.stack == session.stack == "eager"


def test_one_cache_object_holds_graphs_findings_and_host_timings_and_clears() -> None:
    from accelkit.cost import host

    model, x = _mlp()
    first = ak.compile(model, x, target="host", precision="fp32")
    held = ak.cache.info()
    assert held["graphs"] >= 1 and held["findings"] >= 1 and held["passes"] >= 1 and held["op_times"] >= 1
    assert {"dispatch_overhead_s", "view_op_s"} <= set(ak.cache.CACHE.host_timings)
    assert ak.compile(model, x, target="host", precision="fp32").graph is first.graph  # kept: the same capture
    ak.cache.clear()
    assert ak.cache.info() == {"graphs": 0, "findings": 0, "passes": 0, "host_timings": 0, "op_times": 0}
    assert host._OP_TIMES is ak.cache.CACHE.op_times  # cleared in place: older readers see the same container
    again = ak.compile(model, x, target="host", precision="fp32")
    assert again.graph is not first.graph and ak.cache.info()["graphs"] == 1  # captured afresh


def test_the_pass_pipeline_runs_once_per_graph_family_and_fusion_level(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelkit.compiler import program

    calls: list[tuple[str, str]] = []
    real = program.run_pipeline

    def counted(graph, *, family, level, findings, host):  # type: ignore[no-untyped-def]
        calls.append((family.family, level))
        return real(graph, family=family, level=level, findings=findings, host=host)

    monkeypatch.setattr(program, "run_pipeline", counted)
    model, x = _mlp()
    a = ak.compile(model, x, target="sn40l", precision="bf16")
    b = ak.compile(model, x, target="sn40l", precision="bf16", chips=2)  # another split: the same passes
    assert calls == [("reconfigurable-dataflow", "o1")]
    assert [k.name for k in a.kernels] == [k.name for k in b.kernels] and a.passes == b.passes
    o0 = ak.compile(model, x, target="sn40l", precision="bf16", fusion="o0")  # another level: run again
    gpu = ak.compile(model, x, target="h100", precision="bf16")  # another family: run again
    assert calls[1] == ("reconfigurable-dataflow", "o0") and calls[2][0] == "gpu"
    assert [k.group for k in o0.kernels] != [k.group for k in a.kernels] and gpu.spec.name == "h100"  # o0: a section per op
    model[0] = nn.Linear(16, 32)  # a modified model is captured again, and its passes run again
    ak.compile(model, x, target="sn40l", precision="bf16")
    assert len(calls) == 4


@pytest.fixture(scope="module")
def tiny_llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=128, vocab_size=256, use_cache=False)
    with torch.device("meta"):
        return LlamaForCausalLM(cfg).eval()


def _counting(counts: Counter[str]) -> Iterator[Any]:
    """Patches that count option checks, spec and family look-ups, and rate computations, wherever they are
    called from (every accelkit module that imported the function by name)."""
    catalog = sys.modules["accelkit.hardware.catalog"]
    looked_up = {"spec": catalog.get, "family": accelkit.families.model_for}
    for what, fn in looked_up.items():
        def wrap(*a: Any, _fn: Any = fn, _what: str = what, **k: Any) -> Any:
            counts[_what] += 1
            return _fn(*a, **k)
        for name, module in list(sys.modules.items()):
            if name.startswith("accelkit") and module is not None:
                for attr, value in list(vars(module).items()):
                    if value is fn:
                        yield mock.patch.object(module, attr, wrap)
    check = CompileOptions.check.__func__  # type: ignore[attr-defined]

    def checking(cls: Any, *a: Any, **k: Any) -> Any:
        counts["options checked"] += 1
        return check(cls, *a, **k)

    yield mock.patch.object(CompileOptions, "check", classmethod(checking))
    for family in accelkit.families.REGISTRY.values():  # every rate computation, whichever family's
        cls = type(family)

        def computing(self: Any, *a: Any, _rates: Any = cls.rates, _cls: Any = cls, **k: Any) -> Any:
            if type(self) is _cls:
                counts["rates"] += 1
            return _rates(self, *a, **k)
        yield mock.patch.object(cls, "rates", computing)


@pytest.mark.parametrize("kwargs", [{"target": "h100"}, {"target": "sn40l", "chips": 4, "batch": 4}])
def test_one_serve_call_checks_and_looks_up_once(tiny_llama: nn.Module, kwargs: dict[str, Any]) -> None:
    """Prefill and decode (and, without a split, each split tried) share the options checked at the call: the
    chip, its family and its rates are looked up once, not once per compile or per estimate."""
    base = {"prompt_tokens": 16, "output_tokens": 4}
    expected = ak.serve(tiny_llama, **base, **kwargs)  # captures prefill and decode once
    counts: Counter[str] = Counter()
    patches = list(_counting(counts))
    for p in patches:
        p.start()
    try:
        again = ak.serve(tiny_llama, **base, **kwargs)
    finally:
        for p in reversed(patches):
            p.stop()
    assert again.latency_s == expected.latency_s  # the same figures, counted
    assert counts == Counter({"options checked": 1, "spec": 1, "family": 1, "rates": 1}), counts


def test_one_search_for_what_fits_more_chips_or_a_smaller_chunk() -> None:
    from accelkit.compiler.memory import ModeError

    tried: list[int] = []

    def attempt(n: int) -> str:
        tried.append(n)
        if n < 3:
            raise ModeError(f"{n} chips hold nothing", target="tsp", chips=n, chips_needed=3)
        return f"on {n}"

    assert compiling.first_that_fits(attempt, 1, compiling.more_chips) == "on 3" and tried == [1, 3]
    with pytest.raises(ModeError, match="1 chips"):  # nothing left to try: the ModeError itself
        compiling.first_that_fits(attempt, 1, lambda n, e: None)


def test_chips_auto_compiles_on_as_many_chips_as_the_model_needs() -> None:
    from accelkit.compiler.memory import ModeError

    with torch.device("meta"):  # 8 x 16.8 M weights: 268 MB in fp16, more than one TSP's SRAM holds
        model = nn.Sequential(*[nn.Linear(4096, 4096) for _ in range(8)])
    x = torch.zeros(1, 4096, device="meta")
    with pytest.raises(ModeError) as refused:
        ak.compile(model, (x,), target="tsp", precision="fp16")
    prog = ak.compile(model, (x,), target="tsp", precision="fp16", chips="auto")
    assert prog.chips == refused.value.chips_needed > 1
    assert ak.compile(_mlp()[0], _mlp()[1], target="tsp", precision="fp16", chips="auto").chips == 1
    with pytest.raises(CompileError, match="chips"):
        ak.compile(model, (x,), target="tsp", precision="fp16", chips="many")
