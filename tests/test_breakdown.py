"""The modelled step adds up, one way, everywhere: a report's sections sum to its step time on every target
(with and without parallelism), one chip's utilization never passes 100%, identical programs give identical
reports, the comparison figure stacks exactly the report's sections, and a Session's (or the Cerebras loop's)
clock is the sum of the parts it recorded."""

from __future__ import annotations

import random

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.viz.perf import comparison_bars

TARGETS = [n for n in ak.hardware.names() if n != "host"]


def _random_mlp(seed: int) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    rng = random.Random(seed)
    widths = [rng.choice([8, 16, 32, 64]) for _ in range(rng.randint(2, 5))]
    layers: list[nn.Module] = []
    for a, b in zip(widths, widths[1:], strict=False):
        layers += [nn.Linear(a, b), rng.choice([nn.ReLU(), nn.GELU(), nn.Tanh()])]
    layers.append(nn.Linear(widths[-1], 4))
    return nn.Sequential(*layers), (torch.randn(rng.choice([1, 4, 8]), widths[0]),)


def _precision(target: str) -> str:
    return "bf16" if "bf16" in ak.hardware.get(target).peak_flops else "fp16"


@pytest.mark.parametrize("seed", range(6))
def test_sections_add_up_and_utilization_stays_within_the_chip(seed: int) -> None:
    model, x = _random_mlp(seed)
    for target in TARGETS:
        for training in (False, True):
            prog = ak.compile(model, x, target=target, precision=_precision(target), training=training,
                              batch_size=16)
            r = prog.report
            assert sum(r.sections_s.values()) == pytest.approx(r.step_time_s, rel=1e-9), (target, training)
            assert 0 <= r.utilization["compute"] <= 1.0, (target, training, r.utilization)
            again = ak.compile(model, x, target=target, precision=_precision(target), training=training,
                               batch_size=16).report
            assert (again.step_time_s, again.sections_s, again.utilization) == \
                (r.step_time_s, r.sections_s, r.utilization)


@pytest.mark.parametrize(("target", "parallel"), [
    ("bow", ak.Parallel(data=4, pipeline=4)),  # BERT-Large on 16 Bow IPUs read 158% before
    ("a100", ak.Parallel(pipeline=4)),
    ("a100", ak.Parallel(data=2, tensor=2)),
    ("sn40l", ak.Parallel(tensor=4)),
])
def test_parallel_training_adds_up_per_chip(target: str, parallel: ak.Parallel) -> None:
    model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.GELU()) for _ in range(8)], nn.Linear(256, 8))
    prog = ak.compile(model, (torch.randn(8, 256),), target=target, precision=_precision(target), training=True,
                      chips=parallel.chips, parallel=parallel, batch_size=256, micro_batch=32)
    r = prog.report
    assert r.parallel == parallel and r.parallel.split() != "one chip"  # typed, never a string to parse
    assert sum(r.sections_s.values()) == pytest.approx(r.step_time_s, rel=1e-9)
    assert 0 < r.utilization["compute"] <= 1.0
    if parallel.pipeline > 1:
        assert r.sections_s["bubble"] > 0
    fig = comparison_bars({target: r})  # the figure stacks exactly the report's sections
    stacked = {t.name: t.y[0] for t in fig.data}
    scale = 1e3 if r.step_time_s < 1 else 1.0
    if r.step_time_s < 1e-3:
        scale = 1e6
    assert sum(stacked.values()) == pytest.approx(r.step_time_s * scale, rel=1e-9)
    assert stacked.get("pipeline fill / bubble", 0.0) == pytest.approx(r.sections_s["bubble"] * scale)


def test_a_session_clock_is_the_sum_of_its_parts_ragged_batches_included() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    session = ak.Session(model, target="bow", optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                         loss_fn=nn.CrossEntropyLoss(), precision="fp32", chips=4,
                         parallel=ak.Parallel(pipeline=4), batch_size=16, micro_batch=4)
    full = session.run(torch.randn(16, 16), labels=torch.randint(0, 4, (16,)))
    report = session.compiled.report
    assert full.simulated_time_s == pytest.approx(report.step_time_s, rel=1e-9)  # the whole step, bubble too
    ragged = session.run(torch.randn(8, 16), labels=torch.randint(0, 4, (8,)))  # a last, smaller batch
    report = session.compiled.report  # the program for these shapes, at the session's batch of 16
    assert report.batch_size == 16 and ragged.simulated_time_s == pytest.approx(report.step_time_s / 2, rel=1e-9)
    assert session.sections_s["bubble"] > 0
    assert sum(session.sections_s.values()) == pytest.approx(session.simulated_time_s, rel=1e-12)
    inference = session.run(torch.randn(16, 16), sections=["fwd"])
    assert inference.simulated_time_s > 0
    assert sum(session.sections_s.values()) == pytest.approx(session.simulated_time_s, rel=1e-12)


def test_the_cerebras_loop_uses_the_session_clock() -> None:
    from accelkit.cerebras.clock import StepClock

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    clock = StepClock(model, target="wse2", precision="fp32")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with clock.watching_optimizers():
        for _ in range(2):
            clock.on_forward((torch.randn(8, 16),), {})
            loss = model(torch.randn(8, 16)).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            clock.end_step()
    s = clock.session
    assert s.steps == 2 and s.simulated_time_s > 0
    assert sum(s.sections_s.values()) == pytest.approx(s.simulated_time_s, rel=1e-12)
