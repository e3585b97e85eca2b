"""The Gaudi family (Intel Gaudi 2 ``gaudi2``, Gaudi 3 ``gaudi3``): matmuls on the MMEs filled by the layer's shape,
the rest on the TPCs, one recipe launch per compiled graph; ops with no HPU kernel (complex FFTs) refused, or run on
the host with ``fallback="host"``; compile, serve and a Session that trains with plain PyTorch's numbers."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.constants import value
from accelkit.errors import CompileError
from accelkit.families import model_for
from accelkit.porting import check, load_table
from accelkit.viz.catalog import family_diagram


class Spectral(nn.Module):
    """A spectral-feature classifier: |rfft(x)| -> feed-forward. The FFT makes complex tensors, which Gaudi lacks."""

    def __init__(self, n: int = 32, d: int = 16) -> None:
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(n // 2 + 1, d), nn.GELU(), nn.Linear(d, 3))

    def forward(self, x):
        return self.ff(torch.fft.rfft(x).abs())


def _x(batch: int = 4, n: int = 32) -> torch.Tensor:
    return torch.randn(batch, n, generator=torch.Generator().manual_seed(3))


def test_the_table_names_what_the_bridge_lacks_with_sources():
    table = load_table("gaudi")
    fft = table.op_rule("aten.fft_rfft.default", "fft_rfft", {})
    assert fft is not None and fft.severity == "error" and "fallback" in fft.fix and "complex" in fft.reason
    assert table.op_rule("aten.addmm.default", "addmm", {}) is None  # a deny-list: listed ops only
    assert table.dtypes["int64"].severity == "warning" and table.dtypes["int64"].recipe == "int64-to-int32"
    assert table.rule("host-sync").severity == "warning"  # lazy mode breaks the graph there, it does not fail
    assert all(r.source for r in table.ops) and all(d.source for d in table.dtypes.values())


@pytest.mark.parametrize("target", ["gaudi2", "gaudi3"])
def test_an_fft_is_refused_naming_the_host_fallback(target):
    report = check(Spectral().eval(), (_x(),), target)
    assert {e.op for e in report.errors} == {"aten.fft_rfft.default"}
    with pytest.raises(CompileError, match="(?s)fft_rfft.*test_gaudi.py:.*fallback"):
        ak.compile(Spectral().eval(), (_x(),), target=target)


def test_matmuls_run_on_the_mmes_filled_by_their_shape_and_the_graph_launches_once():
    def ffn(width: int) -> nn.Module:
        return nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width)).eval()

    wide = ak.compile(ffn(512), (torch.randn(512, 512),), target="gaudi2", precision="bf16")
    lanes = {k.name: k.units for k in wide.report.kernels}
    assert [u.split(" x")[0] for u in lanes.values()] == ["MME", "TPC", "MME"]
    assert {e.lane for e in wide.report.events} - {"host link"} == {"MME", "TPC"}
    # graph mode: one recipe launch for the pass, not one per kernel as eager GPU kernels pay
    assert [k.overhead_s for k in wide.report.kernels] == [value("GAUDI_RECIPE_LAUNCH_S"), 0.0, 0.0]
    # a 64-wide layer fills a quarter of each 256 x 256 MME in both dimensions: 1/16 of the array
    gaudi = model_for("gaudi")
    narrow = ak.compile(ffn(64), (torch.randn(512, 64),), target="gaudi2", precision="bf16")
    (k64, k512) = (next(k for k in p.kernels if k.kind == "matmul") for p in (narrow, wide))
    assert gaudi.tile_fill(k64) == pytest.approx(1 / 16) and gaudi.tile_fill(k512) == 1.0
    t64, t512 = (next(k for k in p.report.kernels if k.units.startswith("MME")) for p in (narrow, wide))
    assert t64.compute_s / k64.flops == pytest.approx(16 * t512.compute_s / k512.flops)


def test_the_mmes_run_at_each_chips_measured_maximum_not_one_share_of_every_datasheet():
    """Gaudi 3's datasheet is 4.2x Gaudi 2's in bf16, but a brute-force matmul search reaches 1,243 against 418.7
    TFLOP/s: a large compute-bound matmul is modelled 3x faster, not 4.2x; a spec without a measured maximum
    falls back to COMPUTE_EFFICIENCY of its peak."""
    gaudi = model_for("gaudi")
    g2, g3 = ak.hardware.get("gaudi2"), ak.hardware.get("gaudi3")
    rate2, rate3 = (gaudi.rates(s, "bf16").matmul_flops for s in (g2, g3))
    of_max = value("GAUDI_MME_OF_MAXIMUM")
    assert rate2 == pytest.approx(432e12 * g2.matmul_efficiency * of_max)
    assert rate3 / rate2 == pytest.approx(g3.matmul_efficiency * 1835 / (g2.matmul_efficiency * 432))
    assert 2.8 < rate3 / rate2 < 3.1  # the measured maxima's ratio, 1,243 / 418.7
    bare = dataclasses.replace(g3, matmul_efficiency=None)
    assert gaudi.rates(bare, "bf16").matmul_flops == pytest.approx(1835e12 * value("COMPUTE_EFFICIENCY"))
    # the compiled kernel follows: a 4096-wide layer on 4096 rows is compute-bound on both
    with torch.device("meta"):
        layer, x = nn.Linear(4096, 4096).eval(), torch.zeros(4096, 4096)
    t2, t3 = (next(k for k in ak.compile(layer, (x,), target=t, precision="bf16").report.kernels
                   if k.units.startswith("MME")) for t in ("gaudi2", "gaudi3"))
    assert t2.bound == t3.bound == "compute" and 2.8 < t2.compute_s / t3.compute_s < 3.1


def test_gaudi2_runs_the_fft_on_the_host_and_the_rest_on_its_engines():
    prog = ak.compile(Spectral().eval(), (_x(64, 32),), target="gaudi2", fallback="host")
    assert [k.ops[0] for k in prog.kernels if k.runs_on == "host"] == ["fft_rfft"]
    assert [k.extra["direction"] for k in prog.kernels if k.runs_on == "link"] == ["to device"]
    rep = prog.report
    assert {"host CPU", "host link", "MME", "TPC"} <= {e.lane for e in rep.events}
    assert rep.host_s > 0 and rep.transfer_s > 0 and rep.step_time_s > rep.host_s + rep.transfer_s


def _trains_as_plain_pytorch(ref: nn.Module, batch: tuple[int, int], steps: int, **session: object) -> ak.Session:
    """The oracle: a Session on a copy of ``ref`` (SGD, cross-entropy over 3 classes, fp32) gives, step by step,
    the loss plain PyTorch gives, and ends with the same weights; returns the Session."""
    model = copy.deepcopy(ref)
    ref_opt, opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, model))
    loss_fn = nn.functional.cross_entropy
    run = ak.Session(model, optimizer=opt, loss_fn=loss_fn, precision="fp32", **session)  # type: ignore[arg-type]
    g = torch.Generator().manual_seed(5)
    for _ in range(steps):
        x, y = torch.randn(*batch, generator=g), torch.randint(0, 3, (batch[0],), generator=g)
        ref_opt.zero_grad()
        ref_loss = loss_fn(ref(x), y)
        ref_loss.backward()
        ref_opt.step()
        loss = run.run(x, labels=y).loss
        assert loss is not None and torch.equal(loss, ref_loss.detach())
    for (n, p), (_, q) in zip(ref.named_parameters(), model.named_parameters(), strict=True):
        assert torch.equal(p, q), n
    return run


def test_gaudi3_session_with_the_fft_on_the_host_trains_as_plain_pytorch():
    torch.manual_seed(0)
    session = _trains_as_plain_pytorch(Spectral(), (4, 32), 3, target="gaudi3", fallback="host")
    prog = session.compiled
    assert prog is not None and prog.training and prog.host_partitions >= 1
    assert "fwd" in {k.section for k in prog.kernels if k.runs_on == "host"}


def test_serve_on_gaudi_chips():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=512, vocab_size=1000, use_cache=False)
    with torch.device("meta"):
        llama = LlamaForCausalLM(cfg).eval()
    two, three = (ak.serve(llama, target=t, batch=4, prompt_tokens=64, output_tokens=16) for t in ("gaudi2", "gaudi3"))
    assert 0 < two.tokens_per_s < three.tokens_per_s and two.ttft_s > two.tpot_s  # Gaudi 3: 1.5x the HBM bandwidth
    # tensor parallel over the RoCE ports: each all-reduce pays HCCL's start-up
    pair = ak.serve(llama, target="gaudi2", chips=2, batch=4, prompt_tokens=64, output_tokens=16,
                    parallel=ak.Parallel(tensor=2))
    # 2 layers x 2 all-reduces per decode step, each at least HCCL's fixed start-up
    assert pair.parallel.tensor == 2 and pair.tpot_s > 4 * value("GAUDI_COLLECTIVE_S")


def test_the_diagram_draws_the_engines_the_spec_lists():
    for name, mmes in (("gaudi2", 2), ("gaudi3", 8)):
        fig = family_diagram(name)
        text = " ".join(a.text for a in fig.layout.annotations)
        assert f"{mmes} matrix engines (MME)" in text and "RoCE" in text and "host CPU" in text
        spec = ak.hardware.get(name)
        hover = fig.data[0].hovertext
        assert sum(h.startswith("Matrix Multiplication Engine") for h in hover) == mmes
        assert sum(h.startswith("TPC ") for h in hover) == spec.compute_units


def test_eager_mode_launches_every_op_by_itself_and_lazy_mode_one_graph():
    """The bridge's two modes: lazy (the default, one recipe a pass, fused) and eager (each op its own recipe and
    launch, issued by the host; under bf16, autocast's casts of the fp32 weights too)."""
    gaudi = model_for("gaudi")
    assert gaudi.stack_names == ("lazy", "eager") and gaudi.stack() == gaudi.stack(session=True) == "lazy"
    model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.GELU()) for _ in range(8)]).eval()
    one, many = ([ak.compile(model, (torch.randn(b, 64),), target="gaudi2", precision="bf16", stack=s).report
                  for s in ("lazy", "eager")] for b in (1, 64))
    lazy, eager = one
    assert lazy.stack == "lazy" and eager.stack == "eager" and "stack 'eager'" in eager.summary()
    # eager: at least a recipe launch per op (8 linears, 8 GELUs, 8 weight casts), where lazy pays one
    assert eager.step_time_s >= 24 * value("GAUDI_RECIPE_LAUNCH_S") > 10 * lazy.step_time_s
    assert any(k.name == "autocast casts" for k in eager.kernels)
    assert sum(k.overhead_s for k in lazy.kernels) == pytest.approx(value("GAUDI_RECIPE_LAUNCH_S"))
    # tiny layers: the launches bound eager mode, so 64 times the batch costs about the same
    assert many[1].step_time_s == pytest.approx(eager.step_time_s, rel=0.1)
    # a bf16 model has no casts to make
    half = ak.compile(copy.deepcopy(model).to(torch.bfloat16), (torch.randn(1, 64, dtype=torch.bfloat16),),
                      target="gaudi2", precision="bf16", stack="eager").report
    assert not any(k.name == "autocast casts" for k in half.kernels) and half.step_time_s < eager.step_time_s
    with pytest.raises(CompileError, match="'lazy'.*'eager'"):
        ak.compile(model, (torch.randn(1, 64),), target="gaudi2", stack="compiled")


def test_an_eager_gaudi_session_trains_as_plain_pytorch_and_says_so():
    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 3))
    session = _trains_as_plain_pytorch(ref, (8, 16), 2, target="gaudi2", stack="eager")
    assert session.stack == "eager" and "eager" in str(session.report())
    lazy = ak.compile(copy.deepcopy(ref), (torch.randn(8, 16),), target="gaudi2", precision="fp32", training=True)
    assert session.compiled is not None and session.compiled.report.step_time_s > lazy.report.step_time_s
