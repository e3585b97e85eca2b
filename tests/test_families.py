"""One execution model per family, in a registry (accelkit.families): the performance model, the memory
plans and their modes, the timeline lanes and the model-parallel split come from it, and no other module
compares a family's name as a string, apart from the files still listed below (each to be moved into its
family's module)."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit import families
from accelkit.compiler.memory import MODES
from accelkit.constants import value
from accelkit.families.base import ExecutionModel, Timed, TimingContext

ROOT = Path(ak.__file__).parent
STILL_COMPARING: dict[str, int] = {}  # file -> family-name strings it may still hold (a ratchet: only down)


def _family_strings(path: Path) -> list[str]:
    """The string literals in ``path`` that are a family's name (every family the catalog has, new ones
    included), from the parsed code: docstrings and comments are not code, and "cpu" as a torch device
    (``device("cpu")``, ``autocast("cpu")``, ``x.device.type == "cpu"``) is not a family."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    names = set(ak.hardware.FAMILIES)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Call) and getattr(parent.func, "attr", getattr(parent.func, "id", "")) in (
                "device", "autocast"):
            continue
        if isinstance(parent, ast.Compare) and isinstance(parent.left, ast.Attribute) and parent.left.attr == "type":
            continue
        found.append(node.value)
    return found


def test_the_registry_has_every_catalog_family_and_their_modes() -> None:
    assert set(families.REGISTRY) == set(ak.hardware.FAMILIES)
    for family, model in families.REGISTRY.items():
        assert isinstance(model, ExecutionModel) and model.family == family and model.modes
        assert MODES[family] == model.modes  # the memory plan's modes are the model's
    with pytest.raises(ak.AccelkitError, match="no execution model for family 'optical'"):
        families.model_for("optical")


def test_the_family_name_detector_sees_comparisons_and_not_devices(tmp_path: Path) -> None:
    code = tmp_path / "m.py"
    code.write_text('"""A docstring that names family = "gpu"."""\nimport torch\n'
                    'def f(spec, x):\n    d = torch.device("cpu")  # a device\n'
                    '    if x.device.type == "cpu":\n        pass\n'
                    '    return spec.family == "wafer-dataflow" or spec.family in ("gpu",)\n')
    assert sorted(_family_strings(code)) == ["gpu", "wafer-dataflow"]


def test_no_module_compares_a_family_name_outside_the_registry() -> None:
    found = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("families/"):
            continue
        n = len(_family_strings(path))
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
    assert families.model_for("systolic-torus").split(8) == ak.Parallel(tensor=8)  # GSPMD shards each layer
    lanes = {e.lane for e in ak.compile(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8)),
                                        (torch.randn(2, 8),), target="sn40l").report.events}
    assert all(lane.startswith("section ") for lane in lanes - {"host link"})


def test_each_family_is_data_plus_one_module() -> None:
    """A family is its TOML (name, rank, unit, execution-model sentence) plus one module whose model says how
    it is drawn, fused, compiled and launched; the figures and passes only read those."""
    from accelkit.viz.catalog import _DIAGRAMS

    info = ak.hardware.FAMILY_INFO
    assert list(info) == list(families.REGISTRY)  # the registry follows the catalog's ranks
    assert [f.rank for f in info.values()] == sorted(f.rank for f in info.values())
    assert sum(f.host for f in info.values()) == 1 and info[ak.hardware.HOST_FAMILY].host
    for family, model in families.REGISTRY.items():
        assert model.diagram in _DIAGRAMS, family
        assert model.placement_map in ("stream", "regions", "sections", "supersteps", "schedule"), family
        assert model.shades and all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in model.shades), family
        if model.launch is not None:  # a family's own constants are in the registry and its assumptions
            assert ak.constants.CONSTANTS[model.launch.name] is model.launch
            assert model.launch.assumption() in ak.constants.assumptions_for(family)
    # a chip of a family names it in its report: the family's launch constant, no other family's
    wse = ak.compile(nn.Linear(8, 8), (torch.randn(2, 8),), target="wse2").report.assumptions
    assert families.model_for("wafer-dataflow").launch.assumption() in wse
    assert families.model_for("gpu").launch.assumption() not in wse


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) * 2 + 1  # one layer, four ops


def test_fusion_levels_and_compile_costs_come_from_the_model() -> None:
    m = nn.Sequential(_Block(), nn.Linear(8, 4))
    x = (torch.randn(2, 8),)
    o0 = ak.compile(m, x, target="sn40l", fusion="o0")
    o1 = ak.compile(m, x, target="sn40l", fusion="o1")
    assert len(o0.kernels) > len(o1.kernels)
    fusion = {p.name: p.summary for p in o1.passes}["fusion"]
    assert " sections " in fusion and "o1" in fusion
    gpu = ak.compile(m, x, target="a100")
    assert " layers " in {p.name: p.summary for p in gpu.passes}["fusion"]
    from accelkit.compiler.compile_time import compile_time

    cost = families.model_for("reconfigurable-dataflow").compile_cost
    assert compile_time(o1).seconds == pytest.approx(cost.fixed_s + cost.per_kernel_s * len(o1.kernels))
    assert compile_time(gpu).seconds == 0.0



def _compute_s_per_flop(target: str, width: int) -> float:
    """Modelled compute seconds per FLOP of a ``width``-wide linear layer on 4,096 rows."""
    kw = {"stack": "engine"} if target == "a100" else {}  # one fused kernel (eager adds autocast's casts)
    k = ak.compile(nn.Linear(width, width), (torch.randn(4096, width),), target=target, **kw).report.kernels[0]
    return k.compute_s / k.flops


def test_a_tpu_matmul_runs_at_the_share_of_the_128_wide_mxu_its_layer_fills() -> None:
    """XLA pads a layer to whole 128 x 128 MXU tiles: a 64-wide layer fills a quarter of each tile (half its
    contraction, half its outputs), so each of its FLOPs takes four times as long as a 1,024-wide layer's, and a
    128-wide layer fills the MXUs as well as a 1,024-wide one. A GPU's matmul library tiles the output too
    (accelkit.cost.gemm): a 64-wide layer is slower per FLOP there as well."""
    tpu = families.model_for("systolic-torus")
    narrow, full, wide = (_compute_s_per_flop("tpu-v4", w) for w in (64, 128, 1024))
    assert narrow == pytest.approx(4 * wide) and full == pytest.approx(wide)
    assert _compute_s_per_flop("a100", 64) > 1.5 * _compute_s_per_flop("a100", 1024)
    k = ak.compile(nn.Linear(64, 200), (torch.randn(8, 64),), target="tpu-v4").kernels[0]
    assert tpu.tile_fill(k) == pytest.approx(64 / 128 * 200 / 256)
    assert tpu.tile_fill(k, tensor=2) == pytest.approx(64 / 128 * 100 / 128)  # each chip holds half the outputs


def test_a_gaudi_all_reduce_runs_on_the_ports_that_join_the_cards_it_spans() -> None:
    """Inside a Gaudi server each pair of cards shares 3 of the 24 RoCE ports: 2 cards all-reduce over 3 ports (an
    eighth of the card's bandwidth), 8 cards over 21; beyond one server the scale-out ports add a ring. A compiled
    data-parallel program charges exactly this for its gradient all-reduce, and the 2-card all-reduce is slower than
    a ring over all 24 ports would be."""
    from accelkit.cost.rates import allreduce_s

    spec = ak.hardware.get("gaudi3")
    model = families.model_for(spec.family)
    r = model.rates(spec, "bf16")
    gb = 1e9
    port = spec.chip_to_chip_Bps / 2 / 24  # one 200 GbE port, one direction
    fixed = 2 * r.hop_s + r.collective_s
    two, eight = model.allreduce_s(gb, 2, r, spec), model.allreduce_s(gb, 8, r, spec)
    assert two == pytest.approx(2 * 1 / 2 * gb / (3 * port) + fixed)
    assert eight == pytest.approx(2 * 7 / 8 * gb / (21 * port) + fixed)
    assert two > 3 * eight and two > 5 * allreduce_s(gb, 2, r)  # the ring over every port is what it was before
    sixteen = model.allreduce_s(gb, 16, r, spec)
    assert sixteen == pytest.approx(eight + 2 * 1 / 2 * (gb / 8) / (3 * port) + 2 * r.hop_s)
    assert model.allreduce_s(gb, 1, r, spec) == 0.0
    m = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    prog = ak.compile(m, (torch.randn(64, 256),), target="gaudi3", training=True, chips=2,
                      parallel=ak.Parallel(data=2))
    want = model.allreduce_s(prog.memory_plan.gradient_bytes, 2, r, spec)
    assert prog.report.sections_s["comm"] == pytest.approx(want)


def test_a_tpu_all_reduce_runs_rings_along_the_torus_axes_the_slice_spans() -> None:
    """8 chips of a 3-D torus (2 x 2 x 2) use all six links; 4 chips (2 x 2 x 1) leave the third axis idle, so
    they take longer for the same bytes; a 2-D torus splits 8 chips as 4 x 2. A compiled data-parallel program
    charges exactly this for its gradient all-reduce."""
    from accelkit.families.tpu import torus_allreduce_s, torus_shape

    assert torus_shape(8, 3) == (2, 2, 2) and torus_shape(8, 2) == (4, 2) and torus_shape(1, 3) == (1, 1, 1)
    assert torus_shape(4096, 3) == (16, 16, 16) and torus_shape(256, 2) == (16, 16)
    spec = ak.hardware.get("tpu-v4")
    model = families.model_for(spec.family)
    r = model.rates(spec, "bf16")
    gb = 1e9
    link = spec.chip_to_chip_Bps / 2  # every link, one direction
    assert r.hop_s == pytest.approx(ak.constants.value("TPU_ICI_HOP_S"))
    eight = model.allreduce_s(gb, 8, r, spec)
    assert eight == pytest.approx(2 * 7 / 8 * gb / link + 6 * r.hop_s)  # 3 axes x 2 ring steps
    four = model.allreduce_s(gb, 4, r, spec)
    assert four == pytest.approx(2 * 3 / 4 * gb / (link * 2 / 3) + 4 * r.hop_s)
    assert four > eight and torus_allreduce_s(gb, 1, r, 3) == 0.0
    m = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    prog = ak.compile(m, (torch.randn(64, 256),), target="tpu-v4", training=True, chips=8,
                      parallel=ak.Parallel(data=8))
    want = model.allreduce_s(prog.memory_plan.gradient_bytes, 8, r, spec)
    assert prog.report.sections_s["comm"] == pytest.approx(want)


def test_an_ipu_runs_elementwise_work_on_its_vector_units_even_beside_a_matmul(tmp_path: Path) -> None:
    """Poplar runs each op as compute sets of its own: a matmul's fused GELU, a layer norm, attention's scale and
    softmax run on the tiles' vector units at Graphcore's own cycle estimate (a 64-bit vector per 3 worker cycles:
    2/3 fp32 or 4/3 fp16 values per tile per cycle), far below the matrix units; a GPU's kernel does its epilogue
    and a fused attention's softmax beside the tensor cores, so its clock is unchanged by them."""
    from accelkit.constants import value
    from accelkit.graph.cost import attention_score_flops
    from accelkit.graph.ir import TensorMeta

    gc200 = ak.hardware.get("gc200")
    model = families.model_for("bsp-tiles")
    for precision, lanes in (("fp32", 2), ("fp16", 4)):
        rates = model.rates(gc200, precision)
        assert rates.vector_flops == pytest.approx(1472 * gc200.clock_hz * lanes / value("IPU_VECTOR_CYCLES"))
        assert rates.vector_flops < rates.matmul_flops / 10
    class Block(nn.Module):
        def __init__(self, gelu: bool) -> None:
            super().__init__()
            self.fc, self.gelu = nn.Linear(256, 1024), gelu

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.gelu(self.fc(x)) if self.gelu else self.fc(x)

    class Net(nn.Module):  # repeated blocks: each block's linear and GELU are one kernel (fusion groups a layer)
        def __init__(self, gelu: bool) -> None:
            super().__init__()
            self.layers = nn.ModuleList([Block(gelu)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.layers[0](x)

    x = torch.randn(64, 256)
    plain = ak.compile(Net(False), (x,), target="gc200", precision="fp16")
    fused = ak.compile(Net(True), (x,), target="gc200", precision="fp16")
    k = fused.kernels[0]
    assert k.kind == "matmul" and 0 < k.vector_flops < k.flops and k.vector_flops == k.flops - plain.kernels[0].flops
    gelu_s = k.vector_flops / model.rates(gc200, "fp16").vector_flops
    assert fused.report.kernels[0].compute_s == pytest.approx(plain.report.kernels[0].compute_s + gelu_s)
    gpu = [ak.compile(m, (x,), target="h100", precision="bf16", stack="compiled").report.kernels[0].compute_s
           for m in (plain.model, fused.model)]
    ipu = [prog.report.kernels[0].compute_s for prog in (plain, fused)]
    assert ipu[1] / ipu[0] > 1.5 and gpu[1] / gpu[0] < 1.1  # on a GPU the epilogue rides along with the GEMM
    # attention: the registry counts its two matmuls; its scores' scale and softmax are the vector units' work
    q = TensorMeta((2, 4, 128, 64), "float32")
    k_ = TensorMeta((2, 4, 96, 64), "float32")
    assert attention_score_flops("scaled_dot_product_attention", [q, k_, k_]) == 6 * 2 * 4 * 128 * 96
    grad = TensorMeta((2, 4, 128, 64), "float32")
    assert attention_score_flops("_scaled_dot_product_flash_attention_for_cpu_backward", [grad, q, k_]) == \
        5 * 2 * 4 * 128 * 96
    assert attention_score_flops("mm", [q, k_]) == 0

    class Attention(nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return nn.functional.scaled_dot_product_attention(q, k, v)

    qkv = tuple(torch.randn(2, 4, 128, 64) for _ in range(3))
    att = ak.compile(Attention(), qkv, target="gc200", precision="fp16")
    sdpa = next(k for k in att.kernels if "attention" in k.ops[0])
    assert sdpa.score_flops == 6 * 2 * 4 * 128 * 128 and sdpa.scaled(2.0).score_flops == 2 * sdpa.score_flops
    att.save(tmp_path / "att")
    back = ak.load(tmp_path / "att")
    assert [(b.vector_flops, b.score_flops) for b in back.kernels] == [(a.vector_flops, a.score_flops)
                                                                         for a in att.kernels]
    assert back.report.step_time_s == pytest.approx(att.report.step_time_s)


def test_no_ipu_kernel_is_shorter_than_its_ops_program_and_a_large_one_covers_it() -> None:
    """However little a kernel computes, its op's Poplar program (compute sets, exchanges, a sync each, the
    layout copies) takes IPU_OP_FLOOR_S; a kernel whose own compute and exchange take longer pays only its
    superstep's sync on top, so the floor changes small models' steps and leaves large kernels as they were."""
    from accelkit.constants import value

    floor, sync = value("IPU_OP_FLOOR_S"), value("IPU_SUPERSTEP_SYNC_S")
    assert sync < floor
    tiny = ak.compile(nn.Sequential(nn.Linear(10, 5), nn.ReLU()), (torch.randn(4, 10),), target="gc200",
                      precision="fp32")
    assert tiny.report.kernels and all(k.time_s == pytest.approx(floor) and k.bound == "latency"
                                       for k in tiny.report.kernels)
    big = ak.compile(nn.Linear(4096, 4096), (torch.randn(2048, 4096),), target="gc200", precision="fp16")
    k = big.report.kernels[0]
    assert k.time_s > 2 * floor and k.overhead_s == pytest.approx(sync)
    assert k.time_s == pytest.approx(max(k.compute_s, k.memory_s) + k.comm_s + sync)


def test_an_ipu_pipeline_waits_for_its_busiest_stage() -> None:
    """Pipelined training runs at the pace of the stage the placement gave the most work, not of an even split."""
    import torch
    from torch import nn

    import accelkit as ak

    torch.manual_seed(0)
    uneven = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 16384), nn.Linear(16384, 8))  # one layer ~ 9/10 of it
    x = torch.randn(8, 64)
    prog = ak.compile(uneven, (x,), target="gc200", precision="fp16", training=True, chips=2,
                      parallel=ak.Parallel(pipeline=2), batch_size=32768, micro_batch=4096)
    rep = prog.report  # (micro-batches large enough for the big layer's kernels to outlast IPU_OP_FLOOR_S)
    assert len(prog.placement.stages) == 2
    note = next(n for n in rep.notes if "busiest stage holds" in n)
    share = float(note.split("busiest stage holds ")[1].split("%")[0]) / 100
    assert share > 0.75  # the big layer's stage
    work = rep.sections_s["fwd"] + rep.sections_s["bckwd"]  # the average chip's: 8 micro-batches x half the model
    # even stages would idle 1/8 of that (filling and draining a 2-stage pipe over 8 micro-batches); these idle
    # while the busy stage works
    assert rep.sections_s["bubble"] > 0.5 * work


def test_an_ipu_pipeline_keeps_each_layer_on_one_ipu_and_follows_the_models_blocks() -> None:
    """A pipeline stage holds whole layers: a layer's forward, backward and update on one IPU (not the forward
    on the first IPUs and the backward on the last); ``stages=`` puts blocks where the model's BeginBlocks do,
    a block back on IPU 0 included, and the step waits for the IPU the split loaded most."""
    import torch
    from torch import nn

    import accelkit as ak
    from accelkit.errors import CompileError

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                        nn.ReLU(), nn.Linear(1024, 64))
    x = torch.randn(8, 64)
    # micro-batches large enough for the 1024-wide layers' kernels to outlast IPU_OP_FLOOR_S
    kw = dict(target="gc200", precision="fp16", training=True, chips=2, batch_size=65536, micro_batch=8192)

    def chips_of(prog: ak.CompiledProgram) -> dict[tuple[str, str], set[int]]:
        chip = {name: r.chip for r in prog.placement.regions for name in r.kernels}
        out: dict[tuple[str, str], set[int]] = {}
        for k in prog.kernels:
            if k.module:
                out.setdefault((k.module, k.section), set()).add(chip[k.name])
        return out

    auto = ak.compile(net, (x,), parallel=ak.Parallel(pipeline=2), **kw)
    where = chips_of(auto)
    for module in ("0", "2", "4", "6"):  # each layer on one IPU, whatever the section
        on = set().union(*(c for (m, _s), c in where.items() if m == module))
        assert len(on) == 1, (module, where)
    assert where[("0", "fwd")] == {0} and where[("6", "fwd")] == {1}  # the forward's order, cut once

    # the model's own split: everything but the last layer on IPU 1, the last back on IPU 0
    given = ak.compile(net, (x,), stages={"2": 1, "6": 0}, **kw)
    assert given.parallel.pipeline == 2  # derived from the stages
    assert ak.compile(net, (x,), stages={"2": 1, "6": 0}, **{**kw, "chips": "auto"}).chips == 2  # as many as named
    where = chips_of(given)
    assert where[("0", "fwd")] == {0} and where[("2", "fwd")] == {1} and where[("4", "bckwd")] == {1}
    assert where[("6", "fwd")] == where[("6", "bckwd")] == {0}
    assert given.placement.stages == (("0", "1", "6"), ("2", "3", "4", "5"))  # each IPU's layers, in order
    note = next(n for n in given.report.notes if "busiest stage holds" in n)
    assert float(note.split("busiest stage holds ")[1].split("%")[0]) / 100 > 0.75  # both big layers on IPU 1
    assert given.report.step_time_s > auto.report.step_time_s  # a worse split than the balanced one

    with pytest.raises(CompileError, match="runs nothing"):
        ak.compile(net, (x,), stages={"9": 1}, **kw)
    with pytest.raises(CompileError, match="pipeline of 4"):
        ak.compile(net, (x,), stages={"2": 1}, **{**kw, "chips": 4}, parallel=ak.Parallel(pipeline=4))
    with pytest.raises(CompileError, match="splits a pipeline itself"):
        ak.compile(net, (x,), stages={"2": 1}, **{**kw, "target": "a100", "precision": "bf16"})
    with pytest.raises(CompileError, match="chip's index"):
        ak.compile(net, (x,), stages={"2": -1}, **kw)
    from accelkit.compiler.options import CompileOptions

    opts = CompileOptions.check("gc200", precision="fp16", training=True, chips=2, stages=[("2", 1)])
    assert opts.parallel == ak.Parallel(pipeline=2) and opts.stages == (("2", 1),)
    assert opts.but(chips=4, parallel=ak.Parallel(data=2, pipeline=2)).stages == opts.stages  # more replicas
    with pytest.raises(CompileError, match="keep pipeline=2"):
        opts.but(parallel=ak.Parallel(data=2, pipeline=1))  # a search may not undo the model's split


def test_a_pipeline_split_leaves_its_busiest_stage_as_light_as_any_split_could() -> None:
    """The automatic cut of consecutive layers into n stages: every stage used while there are layers enough, in
    order, and the busiest no heavier than the best of every possible cut (checked by brute force)."""
    import itertools
    import random
    from types import SimpleNamespace

    from accelkit.families.placement import balanced_stages

    def best(flops: list[float], n: int) -> float:
        g = len(flops)
        return min(max(sum(flops[b[i]:b[i + 1]]) for i in range(n))
                   for cuts in itertools.combinations(range(1, g), n - 1) for b in [(0, *cuts, g)])

    rng = random.Random(1)
    for _ in range(200):
        g, n = rng.randint(1, 9), rng.randint(1, 5)
        flops = [rng.choice([0, 1, 5, 100, 1000]) * rng.random() for _ in range(g)]
        stages = balanced_stages([("layer", [SimpleNamespace(flops=f)]) for f in flops], n)  # type: ignore[list-item]
        assert len(stages) == n and [i for s in stages for i in s] == list(range(g))
        if g >= n:
            assert all(stages)
            assert max(sum(flops[i] for i in s) for s in stages) <= best(flops, n) * (1 + 1e-9) + 1e-12


def test_stages_name_the_learners_own_modules_inside_ak_ports_wrapper() -> None:
    """ak.port wraps a model whose forward returns a non-tensor (TensorOutputs(inner=...)): its kernels run in
    ``inner.ff.2``, but the learner names ``ff.2``, as their own model calls it."""
    import torch
    from torch import nn

    import accelkit as ak
    from accelkit.porting.recipes import TensorOutputs

    class TwoOut(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ff = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
            return self.ff(x), 3

    prog = ak.compile(TensorOutputs(TwoOut()), (torch.randn(2, 8),), target="gc200", precision="fp16", chips=2,
                      stages={"ff.2": 1})
    assert prog.graph.wrapper_prefix == "inner."
    chip = {name: r.chip for r in prog.placement.regions for name in r.kernels}
    assert {chip[k.name] for k in prog.kernels if k.module == "inner.ff.0"} == {0}
    assert {chip[k.name] for k in prog.kernels if k.module == "inner.ff.4"} == {1}


def test_a_block_may_begin_at_a_module_computed_ahead_of_time() -> None:
    """Graphcore's BERT inference begins its second IPU at ``bert.embeddings.position_embeddings``: a lookup at fixed
    position ids, computed once, so no kernel runs it. The block begins at the first kernel after it (the encoder);
    the word embeddings' kernel, which begins before it, stays on IPU 0. A module the forward never calls is still
    refused."""
    from transformers import BertConfig, BertForQuestionAnswering

    from accelkit.errors import CompileError

    cfg = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                     max_position_embeddings=64, vocab_size=500)
    model = BertForQuestionAnswering(cfg).eval()
    x = torch.randint(0, 500, (2, 16))
    prog = ak.compile(model, (x,), target="gc200", precision="fp16", chips=2,
                      stages={"bert.embeddings.position_embeddings": 1})
    assert not any(k.module.startswith("bert.embeddings.position_embeddings") for k in prog.kernels)
    chip = {name: r.chip for r in prog.placement.regions for name in r.kernels}
    assert {chip[k.name] for k in prog.kernels if k.module.startswith("bert.embeddings")} == {0}
    assert {chip[k.name] for k in prog.kernels if k.module.startswith("bert.encoder")} == {1}
    assert {chip[k.name] for k in prog.kernels if k.module == "qa_outputs"} == {1}
    with pytest.raises(CompileError, match="runs nothing"):
        ak.compile(model, (x,), target="gc200", precision="fp16", chips=2, stages={"bert.pooler": 1})


def test_tpu_matmuls_run_at_the_share_xla_reaches_or_at_the_chips_own_ceiling() -> None:
    tpu, v5e = families.model_for("systolic-torus"), ak.hardware.get("tpu-v5e")
    assert tpu.rates(v5e, "bf16").matmul_flops == pytest.approx(197e12 * value("TPU_MATMUL_EFFICIENCY"))
    assert value("TPU_MATMUL_EFFICIENCY") > value("COMPUTE_EFFICIENCY")  # the cross-family share is a GPU's at scale
    measured = dataclasses.replace(v5e, matmul_efficiency=0.7)  # a catalog entry with its own measured ceiling
    assert tpu.rates(measured, "bf16").matmul_flops == pytest.approx(197e12 * 0.7)
