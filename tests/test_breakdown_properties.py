"""Properties of the modelled step over generated models and every target (Hypothesis).

For any small model Hypothesis builds (linear, convolution, normalisation, residual and attention-like blocks,
random widths and batches), on any catalog chip or a chip read with ``hardware.load``, trained or not, on
one chip or split over several:

- the breakdown's sections and its parts (compute / memory / communication / latency / idle) each add up to
  the step time;
- one chip's utilization stays within [0, 1];
- compiling the same program again gives an identical breakdown;
- the comparison figure stacks exactly the report's sections.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import accelkit as ak
from accelkit.cost.report import PARTS
from accelkit.viz.perf import SECTION_LABELS, comparison_bars
from accelkit.viz.perf import _unit as _unit_of

CATALOG = [n for n in ak.hardware.names() if n != "host"]
LOADED = "loaded"  # a copy of a catalog chip written to TOML and read back with hardware.load


class Residual(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.fc(self.norm(x)))


class Mixer(nn.Module):
    """Attention-like: scores between positions, softmax, weighted sum."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.qk = nn.Linear(width, 2 * width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k = self.qk(x).chunk(2, dim=-1)
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
        return w @ x


class Conv(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(width, width, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (batch, seq, width) in and out
        return torch.nn.functional.gelu(self.conv(x.transpose(1, 2)).transpose(1, 2))


BLOCKS = {"linear": lambda w: nn.Sequential(nn.Linear(w, w), nn.GELU()), "residual": Residual,
          "mixer": Mixer, "conv": Conv, "norm": nn.LayerNorm}


@st.composite
def models(draw: st.DrawFn) -> tuple[nn.Module, tuple[torch.Tensor, ...], str]:
    width = draw(st.sampled_from([8, 16, 32]))
    kinds = draw(st.lists(st.sampled_from(sorted(BLOCKS)), min_size=1, max_size=5))
    torch.manual_seed(draw(st.integers(0, 1000)))
    model = nn.Sequential(*[BLOCKS[k](width) for k in kinds], nn.Linear(width, 4))
    batch, seq = draw(st.sampled_from([2, 4, 8])), draw(st.sampled_from([1, 4]))
    return model, (torch.randn(batch, seq, width),), "+".join(kinds)


def _precision(spec: ak.hardware.AcceleratorSpec) -> str:
    return "bf16" if "bf16" in spec.peak_flops else "fp16"


@pytest.fixture(scope="module")
def loaded_chip(tmp_path_factory: pytest.TempPathFactory) -> ak.hardware.AcceleratorSpec:
    path = Path(tmp_path_factory.mktemp("chips")) / "my_h100.toml"
    path.write_text(ak.hardware.get("h100").to_toml().replace('name = "h100"', 'name = "my_h100"'))
    return ak.hardware.load(path)


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow,
                                                                                    HealthCheck.function_scoped_fixture])
@given(m=models(), target=st.sampled_from([*CATALOG, LOADED]), training=st.booleans(),
       split=st.sampled_from(["one", "data", "model"]))
def test_the_step_adds_up_on_every_target(loaded_chip: ak.hardware.AcceleratorSpec,
                                          m: tuple[nn.Module, tuple[torch.Tensor, ...], str], target: str,
                                          training: bool, split: str) -> None:
    model, x, kinds = m
    spec = loaded_chip if target == LOADED else ak.hardware.get(target)
    kw: dict = {"precision": _precision(spec), "training": training, "batch_size": 8}
    if split == "data":
        kw.update(chips=2, parallel=ak.Parallel(data=2))
    elif split == "model":
        kw.update(chips=2, parallel=ak.families.model_for(spec.family).split(2))
    prog = ak.compile(model, x, target=spec, **kw)
    r = prog.report
    bd = r.breakdown
    why = (spec.name, kinds, training, split)
    assert bd.step_s == r.step_time_s > 0, why
    assert math.fsum(bd.sections_s.values()) == pytest.approx(bd.step_s, rel=1e-12), why
    assert set(bd.parts_s) == set(PARTS) and all(v >= 0 for v in bd.parts_s.values()), why
    assert math.fsum(bd.parts_s.values()) == pytest.approx(bd.step_s, rel=1e-9), why
    assert 0.0 <= bd.utilization <= 1.0 + 1e-12, (why, bd.utilization)
    assert r.parallel.chips == r.chips == bd.chips, why
    again = ak.compile(model, x, target=spec, **kw).report
    assert again.breakdown == bd, why  # identical programs, identical breakdowns
    fig = comparison_bars({spec.name: r})  # the figure stacks exactly the report's sections
    scale, _unit = _unit_of(bd.step_s)
    stacked = {t.name: t.y[0] / scale for t in fig.data}
    assert stacked == pytest.approx({SECTION_LABELS[s]: v for s, v in bd.sections if v > 0}, rel=1e-12), why
