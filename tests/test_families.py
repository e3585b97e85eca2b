"""One execution model per family, in a registry (accelkit.families): the performance model, the memory
plans and their modes, the timeline lanes and the model-parallel split come from it, and no other module
compares a family's name as a string, apart from the files still listed below (each to be moved into its
family's module)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit import families
from accelkit.compiler.memory import MODES
from accelkit.families.base import ExecutionModel, Timed, TimingContext

ROOT = Path(ak.__file__).parent
# a family's name in quotes; "cpu" as a torch device (device("cpu"), autocast("cpu"), .type == "cpu") is not one
FAMILY_RE = re.compile(r'(?<!device\()(?<!autocast\()(?<!type == )'
                       r'"(cpu|gpu|bsp-tiles|reconfigurable-dataflow|wafer-dataflow|static-schedule)"')

STILL_COMPARING = {  # file -> how many family-name strings it still holds (a ratchet: may only go down)
    "compiler/passes.py": 4,  # RDU sections and wafer regions in fusion
    "compiler/compile_time.py": 4,  # published compile times per family
    "viz/catalog.py": 7,  # a diagram per family (next: the diagram's data from the model)
    "viz/placement.py": 4,  # a placement map per family
    "viz/style.py": 8,  # each family's shades (data, keyed by family)
    "hardware/spec.py": 19,  # the catalog's schema: the families and their execution-model sentences
    "hardware/calibrate.py": 1,  # the host is a "cpu"
    "cost/constants.py": 12,  # launch overheads and the families each constant applies to
    "cerebras/cstorch.py": 1,  # the Cerebras facade checks its target is a wafer
    "cerebras/cbtorch.py": 1,
    "tour.py": 1,  # GroqFlow for inference on a TSP
}


def test_the_registry_has_every_catalog_family_and_their_modes() -> None:
    assert set(families.REGISTRY) == set(ak.hardware.FAMILIES)
    for family, model in families.REGISTRY.items():
        assert isinstance(model, ExecutionModel) and model.family == family and model.modes
        assert MODES[family] == model.modes  # the memory plan's modes are the model's
    with pytest.raises(ak.AccelkitError, match="no execution model for family 'optical'"):
        families.model_for("optical")


def test_no_module_compares_a_family_name_outside_the_registry() -> None:
    found = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("families/"):
            continue
        text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith("#"))
        n = len(FAMILY_RE.findall(text))
        if n:
            found[rel] = n
    grown = {f: (n, STILL_COMPARING.get(f, 0)) for f, n in found.items() if n > STILL_COMPARING.get(f, 0)}
    assert grown == {}, f"family names compared outside accelkit.families (file: (now, allowed)): {grown}"


def test_estimate_times_kernels_with_the_family_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The performance model asks the registry: a model swapped in for a family changes the report."""
    prog = ak.compile(nn.Linear(16, 16), (torch.randn(4, 16),), target="a100")
    base = prog.report.step_time_s

    class Slow(type(families.REGISTRY["gpu"])):  # type: ignore[misc]
        def time(self, kernels: list, ctx: TimingContext) -> Timed:
            t = super().time(kernels, ctx)
            return Timed(t.kernels, t.step_s * 10, t.latency_s)

    monkeypatch.setitem(families.REGISTRY, "gpu", Slow())
    again = ak.compile(nn.Linear(16, 16), (torch.randn(4, 16),), target="a100").report
    assert again.step_time_s == pytest.approx(10 * base, rel=1e-9)


def test_model_split_follows_the_family() -> None:
    assert families.model_for("gpu").split(8) == ak.Parallel(tensor=8)
    assert families.model_for("static-schedule").split(8) == ak.Parallel(pipeline=8)
    lanes = {e.lane for e in ak.compile(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8)),
                                        (torch.randn(2, 8),), target="sn40l").report.events}
    assert all(lane.startswith("section ") for lane in lanes)
