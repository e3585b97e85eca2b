"""The GPU's software stacks (eager PyTorch, torch.compile, a serving engine), kernels whose speed follows their
shape, and the host's share of an eager step; checked against timings measured on a real H100."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.cost.gemm import GemmShape, gemm_fit
from accelkit.errors import CompileError, UnknownNameError
from accelkit.families import model_for
from accelkit.sim.measured import MORE_CSV, measured_rows, validate_measured


class Mlp(nn.Module):
    """Eight small layers: a model far too small for the GPU, as a workshop starts with."""

    def __init__(self, width: int = 64, depth: int = 8) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


# ---- kernel shapes --------------------------------------------------------------------------------------------
def test_a_large_square_gemm_reaches_the_achievable_rate_and_a_thin_one_does_not() -> None:
    big = gemm_fit(GemmShape(8192, 8192, 8192), 132)
    assert big.efficiency > 0.9
    thin_k = gemm_fit(GemmShape(8192, 8192, 64), 132)  # the main loop's fill and drain dominate
    assert thin_k.efficiency < 0.6 * big.efficiency
    narrow = gemm_fit(GemmShape(8192, 16, 4096), 132)  # 16 of every tile's 64+ columns are used
    assert narrow.efficiency < 0.3


def test_wave_quantization_a_tile_too_many_costs_a_whole_wave() -> None:
    """132 tiles of 128 x 256 fill 132 SMs in one wave; one more tile column makes the split-K-free choices worse,
    and the library moves to a smaller tile rather than run a nearly empty second wave."""
    one_wave = gemm_fit(GemmShape(128 * 12, 256 * 11, 4096), 132)  # 132 tiles: one full wave
    assert one_wave.waves == 1 and one_wave.efficiency > 0.9
    ragged = gemm_fit(GemmShape(128 * 12 + 1, 256 * 11, 4096), 132)
    assert ragged.efficiency < one_wave.efficiency
    assert ragged.tile != (128, 256) or ragged.waves > 1


def test_the_chip_catalog_carries_its_measured_matmul_ceiling(tmp_path) -> None:
    h100, a100 = ak.hardware.get("h100"), ak.hardware.get("a100")
    assert 0.7 < h100.matmul_efficiency < a100.matmul_efficiency < 0.95  # Hopper throttles below its peak
    assert "Maximum Achievable Matmul FLOPS" in h100.source("matmul_efficiency")
    bad = tmp_path / "mygpu.toml"
    bad.write_text(h100.to_toml().replace("name = \"h100\"", "name = \"mygpu\"")
                   .replace("value = 0.801", "value = 1.5"))
    with pytest.raises(ak.AccelkitError, match="matmul_efficiency.*at most 1"):
        ak.hardware.load(str(bad))


# ---- stacks ---------------------------------------------------------------------------------------------------
def test_every_family_names_its_stacks_and_a_wrong_one_is_refused_with_the_list() -> None:
    assert model_for("gpu").stack_names == ("eager", "compiled", "engine")
    gpu = model_for("gpu")
    assert (gpu.stack(), gpu.stack(session=True), gpu.stack(serving=True)) == ("compiled", "eager", "engine")
    assert model_for("reconfigurable-dataflow").stack() == "sambaflow"
    x = (torch.randn(4, 64),)
    with pytest.raises(CompileError, match="'eager'.*'compiled'.*'engine'"):
        ak.compile(Mlp(), x, target="h100", stack="tensorrt")
    with pytest.raises(CompileError, match="sambaflow"):
        ak.compile(Mlp(), x, target="sn40l", stack="eager")
    with pytest.raises(CompileError, match="stack"):
        ak.Session(Mlp(), target="h100", stack=3)


def test_eager_at_small_batch_is_bound_by_the_host_and_the_report_says_so() -> None:
    """Eight 64-wide layers: the GPU finishes each kernel long before the host issues the next, so the step is
    the host's (about the same at batch 1 and 64), and a CUDA graph (compiled) removes most of it."""
    model = Mlp().eval()
    one = ak.compile(model, (torch.randn(1, 64),), target="h100", precision="bf16", stack="eager").report
    many = ak.compile(model, (torch.randn(1, 64),), target="h100", precision="bf16", batch_size=64,
                      stack="eager").report
    assert one.stack == "eager" and "stack 'eager'" in one.summary()
    parts = one.breakdown.parts_s
    assert max(parts, key=lambda p: parts[p]) == "host"
    assert many.step_time_s == pytest.approx(one.step_time_s, rel=0.05)
    compiled = ak.compile(model, (torch.randn(1, 64),), target="h100", precision="bf16").report  # the default
    assert compiled.step_time_s < 0.5 * one.step_time_s and compiled.stack == "compiled"
    # the timeline shows the host issuing beside the GPU's kernels
    assert any(k.bound == "host" for k in one.kernels)


def test_autocast_casts_fp32_weights_and_a_16_bit_model_has_none() -> None:
    x = torch.randn(32, 256)
    fp32 = ak.compile(nn.Linear(256, 256), (x,), target="a100", precision="bf16", stack="eager").report
    bf16 = ak.compile(nn.Linear(256, 256).to(torch.bfloat16), (x.to(torch.bfloat16),), target="a100",
                      precision="bf16", stack="eager").report
    assert any(k.name == "autocast casts" for k in fp32.kernels)
    assert not any(k.name == "autocast casts" for k in bf16.kernels)
    assert fp32.step_time_s > bf16.step_time_s



class _Residual(nn.Module):
    """A pre-norm block: the fp32 residual stream meets the bf16 output of a Linear under autocast."""

    def __init__(self, d: int = 1024) -> None:
        super().__init__()
        self.norm, self.fc = nn.LayerNorm(d), nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc(self.norm(x))


def test_eager_norms_and_mixed_dtype_adds_run_at_the_sms_rate_not_the_memorys() -> None:
    """Under autocast the residual add reads an fp32 and a bf16 tensor: PyTorch's unrolled kernel, bounded by what
    the SMs keep in flight; the layer norm likewise. The H200's faster HBM does not speed them up; more SMs do."""
    from accelkit.families.eager import eager_ops
    from accelkit.families.gpu import ROWS_BYTES, UNROLLED_BYTES
    from accelkit.sim.measured import H200_TOML

    x = torch.zeros(1, 4096, 1024, device="meta")
    with torch.device("meta"):
        block = _Residual()
    prog = ak.compile(block, (x,), target="h100", precision="bf16", stack="eager", batch_size=32)
    ops = {op.kind: op for op in eager_ops(prog.graph, list(prog.kernels), scale=32.0, low_bytes=2, autocast=True,
                                           section="fwd")}
    assert ops["layer_norm"].access == "rows" and ops["add"].access == "unrolled"
    assert ops["linear"].access == "vector"

    def norm_and_add_s(target: object) -> float:
        rep = ak.compile(block, (x,), target=target, precision="bf16", stack="eager", batch_size=32).report
        return sum(k.time_s for k in rep.kernels if k.ops in ("layer_norm", "linear+add"))

    h200 = ak.hardware.load(H200_TOML)
    assert norm_and_add_s(h200) == pytest.approx(norm_and_add_s("h100"), rel=0.05)  # 1.43x the HBM, same SMs
    rep = ak.compile(block, (x,), target=h200, precision="bf16", stack="eager", batch_size=32).report
    norm = next(k for k in rep.kernels if k.ops == "layer_norm")
    sm_rate = ROWS_BYTES.value * 132 * 1.98e9
    assert norm.time_s == pytest.approx(norm.bytes / sm_rate, rel=0.1)  # 32 x 4096 x 1024 fp32 in and out
    assert UNROLLED_BYTES.value * 132 * 1.98e9 < 0.8 * 4.8e12  # below what the H200's HBM would give
    more_sms = dataclasses.replace(h200, name="h200-264", compute_units=264)
    assert norm_and_add_s(more_sms) < 0.8 * norm_and_add_s(h200)

def test_eager_training_dropout_is_a_kernel_and_an_idle_one_is_not() -> None:
    """A dropout in training with 0 < p < 1 runs PyTorch's fused kernel (the output and a byte-per-element mask
    written, an op for the host to issue); with p = 0, or in inference, PyTorch hands back its input."""
    from accelkit.families.eager import eager_ops

    def dropout_ops(p: float, training: bool) -> list:
        model = nn.Sequential(nn.Linear(256, 256), nn.Dropout(p), nn.Linear(256, 8)).train(training)
        x = torch.randn(64, 256)
        prog = ak.compile(model, (x,), target="h100", precision="bf16", stack="eager", training=training)
        ops = eager_ops(prog.graph, [k for k in prog.kernels if k.section == "fwd"], scale=1.0, low_bytes=2,
                        autocast=True, section="fwd")
        return [op for op in ops if op.kind == "dropout"]

    (active,) = dropout_ops(0.1, True)
    assert active.runs_kernel and active.kernel == "dropout"
    assert active.act_bytes == 64 * 256 * (2 + 2 + 1)  # 16-bit in and out (the linear's output), a byte of mask
    (idle,) = dropout_ops(0.0, True)
    assert not idle.runs_kernel and idle.bytes == 0
    assert all(not op.runs_kernel for op in dropout_ops(0.1, False))


def _tiny(kind: str) -> nn.Module:
    """A two-layer transformers model on the meta device: BERT (a padding mask, broadcast along the keys) or GPT-2
    (a causal mask, a full matrix)."""
    from transformers import BertConfig, BertModel, GPT2Config, GPT2Model

    with torch.device("meta"):
        if kind == "bert":
            return BertModel(BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                                        intermediate_size=256)).eval()
        return GPT2Model(GPT2Config(n_layer=2, n_embd=128, n_head=2, use_cache=False)).eval()


def test_compiled_attention_with_a_key_broadcast_mask_runs_in_fp32_math_and_a_causal_one_fused() -> None:
    """torch.compile gets BERT's padding mask expanded from one key column, which no fused kernel takes: PyTorch's
    math path, two fp32 matmuls on the CUDA cores. GPT-2's causal mask is a full matrix and runs fused."""
    import accelkit.families.gpu as gpu
    from accelkit.families.gpu import math_attention

    ids = torch.zeros(1, 512, dtype=torch.long, device="meta")
    kw = dict(target="h100", precision="bf16", batch_size=32, stack="compiled")
    bert_model, gpt2_model = _tiny("bert"), _tiny("gpt2")  # each captured once, compiled again from the cache
    bert = ak.compile(bert_model, (ids,), **kw)
    gpt2 = ak.compile(gpt2_model, (ids,), **kw)
    assert math_attention(bert.graph) and not math_attention(gpt2.graph)

    def attention_s(prog) -> float:
        return sum(k.time_s for k in prog.report.kernels if "scaled_dot_product_attention" in k.ops)
    fused = replace_constant(gpu.MASK_MATH, False, lambda: attention_s(ak.compile(bert_model, (ids,), **kw)))
    assert attention_s(bert) > 3 * fused  # fp32 on the CUDA cores, the scores through memory
    gpt2_off = replace_constant(gpu.MASK_MATH, False, lambda: attention_s(ak.compile(gpt2_model, (ids,), **kw)))
    assert attention_s(gpt2) == pytest.approx(gpt2_off)
    eager = ak.compile(bert_model, (ids,), **{**kw, "stack": "eager"})  # eager PyTorch gets no mask at all
    assert attention_s(eager) < attention_s(bert)


def test_compiled_math_attention_backward_runs_on_the_tensor_cores_and_its_forward_casts_its_inputs() -> None:
    """Measured on an H100: the math path's forward matmuls are fp32 on the CUDA cores after its bf16 queries, keys
    and values are cast up by kernels of their own; its backward's four batched matmuls run on the tensor cores."""
    import accelkit.families.gpu as gpu
    from accelkit.families.gpu import _upcast_bytes

    ids = torch.zeros(1, 512, dtype=torch.long, device="meta")
    kw = dict(target="h100", precision="bf16", batch_size=32, stack="compiled", training=True)
    model = _tiny("bert").train()

    def backward_bmm_s() -> float:
        prog = ak.compile(model, {"input_ids": ids}, **kw)
        return sum(k.time_s for k in prog.report.kernels if k.section == "bckwd" and k.ops.startswith("bmm"))
    tensor_cores = backward_bmm_s()
    fp32 = replace_constant(gpu.MATH_BACKWARD_TC, False, backward_bmm_s)
    assert fp32 > 1.5 * tensor_cores
    prog = ak.compile(model, {"input_ids": ids}, **kw)
    node = next(n for n in prog.graph.nodes if n.kind == "scaled_dot_product_attention")
    q = node.inputs[0].numel  # (1, heads, 512, 64): every input and the output alike
    assert _upcast_bytes(node, 32.0, 2) == pytest.approx(32 * (3 * q * 6 + q * 6))
    assert _upcast_bytes(node, 32.0, 4) == 0.0  # fp32 runs need no cast


def replace_constant(c, value, run):
    """Run ``run()`` with constant ``c`` set to ``value``, then put it back."""
    old = c.value
    object.__setattr__(c, "value", value)
    try:
        return run()
    finally:
        object.__setattr__(c, "value", old)


def test_compiled_under_autocast_casts_every_weight_each_step_unless_the_model_is_16_bit() -> None:
    x = torch.randn(8, 1024)
    model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))
    fp32 = ak.compile(model, (x,), target="h100", precision="bf16", stack="compiled").report
    casts = [k for k in fp32.kernels if k.name.startswith("autocast casts")]
    assert len(casts) == 1 and casts[0].ops == "4 casts"  # two weights, two biases
    assert casts[0].bytes == (2 * 1024 * 1024 + 2 * 1024) * (4 + 2)
    trained = ak.compile(model, (x,), target="h100", precision="bf16", stack="compiled", training=True).report
    assert {k.section for k in trained.kernels if k.name.startswith("autocast casts")} == {"fwd", "bckwd"}
    bf16 = ak.compile(nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).to(torch.bfloat16),
                      (x.to(torch.bfloat16),), target="h100", precision="bf16", stack="compiled").report
    assert not any(k.name.startswith("autocast casts") for k in bf16.kernels)
    assert fp32.step_time_s > bf16.step_time_s
    engine = ak.compile(model, (x,), target="h100", precision="bf16", stack="engine").report  # converted weights
    assert not any(k.name.startswith("autocast casts") for k in engine.kernels)


def test_bf16_batch_norm_training_on_nchw_images_is_slow_per_channel_and_channels_last_is_not() -> None:
    """PyTorch trains batch norm on bf16 NCHW images with one thread block per channel: a layer of few channels and
    many pixels runs far below the memory's bandwidth. Channels-last images (or weights), and fp16, do not."""
    from accelkit.families.gpu import NCHW_BN_STATS, nchw_batch_norm_s

    net = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.Conv2d(64, 4, 1))

    def step(x: torch.Tensor, precision: str = "bf16", model: nn.Module = net) -> float:
        return ak.compile(model, (x,), target="h100", precision=precision, stack="eager", training=True,
                          batch_size=16, synthetic_data=True).report.step_time_s
    x = torch.randn(1, 3, 128, 128)
    nchw, nhwc = step(x), step(x.to(memory_format=torch.channels_last))
    assert nchw > 1.5 * nhwc
    # the statistics alone: one block per channel (64 channels fill one wave), 16 x 128 x 128 values each
    node = next(n for n in ak.compile(net, (x,), target="h100", training=True).graph.nodes if n.kind == "batch_norm")
    assert nchw_batch_norm_s(node, 16, 132) == pytest.approx(16 * 128 * 128 / NCHW_BN_STATS.value)
    assert step(x, "fp16") < 0.7 * nchw  # cuDNN's batch norm takes fp16
    weights_nhwc = copy.deepcopy(net).to(memory_format=torch.channels_last)
    assert step(x, model=weights_nhwc) == pytest.approx(nhwc)
    infer = [ak.compile(net.eval(), (t,), target="h100", precision="bf16", stack="eager", batch_size=16).report
             .step_time_s for t in (x, x.to(memory_format=torch.channels_last))]
    net.train()
    assert infer[0] == pytest.approx(infer[1])  # inference normalizes with the running statistics: no reduction
    again = copy.deepcopy(net)
    assert not ak.compile(again, (x,), target="h100").graph.channels_last
    again.to(memory_format=torch.channels_last)  # in place: the capture of the NCHW weights is not reused
    assert ak.compile(again, (x,), target="h100").graph.channels_last


def test_the_stack_travels_with_the_program_session_and_serve(tmp_path) -> None:
    model = Mlp()
    prog = ak.compile(model, (torch.randn(4, 64),), target="h100", stack="compiled")
    again = ak.load(prog.save(str(tmp_path / "p.akp")))
    assert again.stack == "compiled" and again.report.step_time_s == pytest.approx(prog.report.step_time_s)
    session = ak.Session(model, target="h100", optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                         loss_fn=nn.functional.mse_loss)
    session.run(torch.randn(4, 64), labels=torch.randn(4, 64))
    assert session.stack == "eager" and "running eager" in str(session.report())


# ---- against the real H100 ------------------------------------------------------------------------------------
def test_the_h100_file_has_every_workload_the_checks_name() -> None:
    rows = measured_rows()
    assert len(rows) == 49
    assert {r["workload"] for r in rows} == {"gemm", "train", "infer", "prefill"}


def test_the_unseen_file_runs_other_models_stacks_and_a_gpu_outside_the_catalog() -> None:
    """The second file: an H200 (loaded from its own spec, not in the catalog) and the torch.compile stack; the
    rows it repeats from the first file are kept for the spread between machines but left out of the check."""
    rows = measured_rows(MORE_CSV)
    assert {r["target"] for r in rows} == {"h100", "h200"} and {r["stack"] for r in rows} == {"eager", "compiled"}
    seen = [r for r in rows if r["seen"] == "yes"]
    assert seen and all(r["case"] in {m["case"] for m in measured_rows()} for r in seen)
    assert "h200" not in ak.hardware.names()
    result = validate_measured(["prefill-llama3.2-1b-b32-p128", "compiled-infer-resnet50-b1"], file="unseen")
    assert {(r.target, r.stack) for r in result.rows} == {("h100", "eager"), ("h200", "eager"),
                                                          ("h100", "compiled"), ("h200", "compiled")}
    # the H200 has the H100's compute and more HBM bandwidth: never slower on the same row
    by = {(r.case, r.target): r.modelled_s for r in result.rows}
    assert by[("prefill-llama3.2-1b-b32-p128", "h200")] <= by[("prefill-llama3.2-1b-b32-p128", "h100")]
    assert "h200" in result.table() and "compiled" in result.table()
    with pytest.raises(UnknownNameError, match="unseen"):
        validate_measured(file="h300")


def test_the_measured_unet_is_the_zoo_unet_at_the_papers_widths() -> None:
    from accelkit.sim.measured import _UNet
    from accelkit.zoo.unet2d import UNet2D

    ours, zoo = _UNet(), UNet2D(in_channels=3, classes=4, width=64, depth=4)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {k: v.shape for k, v in zoo.state_dict().items()}
    ours.load_state_dict(zoo.state_dict())
    x = torch.randn(1, 3, 32, 32)
    torch.testing.assert_close(ours.eval()(x), zoo.eval()(x))


def test_an_unaligned_vocabulary_runs_its_gemms_on_slower_kernels() -> None:
    """GPT-2's 50,257-word head (odd rows: 2-byte alignment in bf16) against the same head padded to 50,304, as
    nanoGPT pads it: 0.1% more FLOPs, several times faster."""
    from accelkit.cost.gemm import GemmShape, alignment
    from accelkit.families.gpu import unaligned_share

    assert alignment(50257, 768) == 1 and alignment(30522, 768) == 2 and alignment(50304, 768) == 16
    assert unaligned_share(GemmShape(8192, 50304, 768), "bf16") == 1.0
    assert unaligned_share(GemmShape(8192, 30522, 768, aligned=2), "bf16") > unaligned_share(
        GemmShape(8192, 50257, 768, aligned=1), "bf16")
    assert unaligned_share(GemmShape(8192, 30522, 768, aligned=4), "fp32") == 1.0  # 16 bytes in fp32

    def head_s(vocab: int) -> float:
        m = nn.Linear(768, vocab, bias=False)
        return ak.compile(m, (torch.randn(2048, 768),), target="h100", stack="eager").report.step_time_s

    assert head_s(50257) > 2 * head_s(50304)


def test_torch_compile_pads_an_unaligned_heads_activations_but_not_its_weight_gradient() -> None:
    """Measured on an H100: compiled GPT-2 training ran two of its head's three GEMMs on fast kernels and the
    weight's gradient, which keeps the weight's 50,257 rows, on the unaligned one, as eager does."""
    import accelkit.families.gpu as gpu

    def head_s(vocab: int, section: str) -> float:
        with torch.device("meta"):
            m = nn.Linear(768, vocab, bias=False)
        prog = ak.compile(m, (torch.zeros(8192, 768, device="meta"),), target="h100", stack="compiled",
                          training=True)
        return sum(k.time_s for k in prog.report.kernels if k.section == section and k.ops.split("+")[0] in (
            "mm", "linear", "t"))

    assert head_s(50257, "fwd") == pytest.approx(head_s(50304, "fwd"), rel=0.05)  # padded: the fast kernels
    assert head_s(50257, "bckwd") > 1.5 * head_s(50304, "bckwd")  # the weight's gradient is not
    padded = replace_constant(gpu.UNPADDED_WEIGHT_GRADS, False, lambda: head_s(50257, "bckwd"))
    assert padded == pytest.approx(head_s(50304, "bckwd"), rel=0.05)


def test_gemm_rows_memory_and_compute_bound_are_within_the_goal() -> None:
    """Four GEMM rows from either side of the ridge point (1 token: reading the weight; 4,096 tokens: the tensor
    cores), modelled as eager PyTorch runs them."""
    result = validate_measured(["gemm-gate_up-m1", "gemm-qkv-m64", "gemm-down-m4096", "gemm-square8192-m8192"])
    assert len(result.rows) == 4
    assert result.max_ratio <= 1.25, result.table()
    bounds = {r.case: r.bound for r in result.rows}
    assert bounds["gemm-gate_up-m1"] == "memory" and bounds["gemm-square8192-m8192"] == "compute"


def test_compare_stacks_shows_the_eager_host_floor_and_draws_it() -> None:
    from accelkit.viz.perf import stack_comparison

    cmp = ak.compare_stacks(Mlp().eval(), (torch.randn(1, 64),), target="a100", batch_sizes=(1, 256))
    assert [r.stack for r in cmp.rows] == ["eager", "eager", "compiled", "compiled", "engine", "engine"]
    eager1, eager256 = cmp.row("eager", 1), cmp.row("eager", 256)
    assert eager1.host_share > 0.5 and eager1.bound == "host"
    assert eager256.per_sample_s < eager1.per_sample_s / 50  # the host's floor, shared by 256 samples
    assert cmp.row("compiled", 1).step_s < eager1.step_s
    fig = stack_comparison(cmp)
    assert [t.name for t in fig.data] == ["eager", "compiled", "engine"]
    assert list(fig.data[0].y) == [eager1.step_s, eager256.step_s]  # step time: flat where the host is the bound
    report = cmp.reports[("eager", 1)]
    host = [e for e in report.events if e.lane == "host (issues kernels)"]
    assert host, report.events
    # the host's issue work fits in the step it issues (the second of two back to back), each span its own ops
    assert max(e.start_s + e.duration_s for e in host) <= report.step_time_s * 1.001
    assert sum(e.duration_s for e in host) <= report.step_time_s * 1.001
    with pytest.raises(ak.AccelkitError, match="batch sizes"):
        ak.compare_stacks(Mlp(), (torch.randn(1, 64),), batch_sizes=(0,))
