"""Kinds of model the first GPU timings did not hold: depthwise convolutions and their FLOPs, the memory layout
eager PyTorch gives each tensor, batch norm's per-plane cost on NCHW images, fp32 GEMMs on the CUDA cores; and the
third measured file (``validate_measured(file="kinds")``)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import accelkit as ak
from accelkit.graph.cost import registry_flops


class DepthwiseBlock(nn.Module):
    """MobileNet's pattern: a 1 x 1 expansion, a 3 x 3 depthwise convolution, batch norms, a 1 x 1 projection."""

    def __init__(self, c: int = 32, expand: int = 4) -> None:
        super().__init__()
        self.expand = nn.Conv2d(c, c * expand, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c * expand)
        self.dw = nn.Conv2d(c * expand, c * expand, 3, padding=1, groups=c * expand, bias=False)
        self.bn2 = nn.BatchNorm2d(c * expand)
        self.project = nn.Conv2d(c * expand, c, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.expand(x)))
        x = torch.relu(self.bn2(self.dw(x)))
        return self.project(x)


class NhwcBlock(nn.Module):
    """ConvNeXt's pattern: the depthwise convolution's input is an NHWC tensor permuted to NCHW's shape."""

    def __init__(self, c: int = 64) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(c)
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return self.dw(x)


def _conv_backward_flops(groups: int) -> tuple[int, int, int]:
    """(accelkit's count, PyTorch's own count, the forward's) of one 3 x 3 convolution's backward over 64 channels."""
    x = torch.empty(8, 64, 28, 28, device="meta")
    w = torch.empty(64, 64 // groups, 3, 3, device="meta")
    g = torch.empty(8, 64, 28, 28, device="meta")
    args = (g, x, w, [64], [1, 1], [1, 1], [1, 1], False, [0, 0], groups, [True, True, False])
    ours = registry_flops(torch.ops.aten.convolution_backward.default, args, {})
    with FlopCounterMode(display=False) as counter:
        torch.ops.aten.convolution_backward.default(*args)
    forward = registry_flops(torch.ops.aten.convolution.default,
                             (x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], groups), {})
    return ours, int(counter.get_total_flops()), forward


def test_a_grouped_convolutions_weight_gradient_is_counted_per_group() -> None:
    """PyTorch's flop formula counts a grouped convolution's weight gradient as a dense one (groups times too
    many); accelkit counts each gradient as its forward: input gradient + weight gradient = twice the forward."""
    dense, torch_dense, fwd_dense = _conv_backward_flops(1)
    assert dense == torch_dense == 2 * fwd_dense  # a dense convolution: PyTorch's count, unchanged
    depthwise, torch_depthwise, fwd_depthwise = _conv_backward_flops(64)
    assert depthwise == 2 * fwd_depthwise
    assert torch_depthwise == fwd_depthwise + 64 * fwd_depthwise  # the weight gradient counted 64 times over
    grouped, _, fwd_grouped = _conv_backward_flops(4)
    assert grouped == 2 * fwd_grouped
    # the captured training graph counts the same, and the profiler's counter agrees
    net = DepthwiseBlock()
    graph = ak.compile(net, (torch.randn(1, 32, 28, 28),), target="h100", training=True).graph
    dw_bwd = [n for n in graph.nodes if n.kind == "convolution_backward" and n.inputs[2].shape[1] == 1]
    dw_fwd = [n for n in graph.nodes if n.kind == "conv2d" and n.inputs[1].shape[1] == 1]
    assert len(dw_bwd) == len(dw_fwd) == 1 and dw_bwd[0].flops == 2 * dw_fwd[0].flops
    from accelkit.profiler.host import flop_counter_mode

    with flop_counter_mode() as counter:
        net(torch.randn(1, 32, 28, 28)).sum().backward()
    assert counter.get_total_flops() == sum(n.flops for n in graph.nodes if n.flops_from == "registry")


def _eager_s(model: nn.Module, x: torch.Tensor, *, precision: str = "bf16", training: bool = False,
             batch: int = 64) -> float:
    return ak.compile(model, (x,), target="h100", precision=precision, stack="eager", training=training,
                      batch_size=batch, synthetic_data=True).report.step_time_s


def test_eager_depthwise_convolutions_on_nchw_images_run_on_pytorchs_own_slow_kernels() -> None:
    """bf16 or fp32 depthwise convolutions on NCHW images run on PyTorch's own kernels (a thread per output element,
    far below the memory's rate); channels-last images go to cuDNN, and so does fp16."""
    from accelkit.families.gpu import (
        DEPTHWISE_FWD,
        DEPTHWISE_INPUT_GRAD,
        DEPTHWISE_WEIGHT_GRAD,
        depthwise,
        depthwise_s,
    )

    spec = ak.hardware.get("h100")
    net = DepthwiseBlock().eval()
    x = torch.randn(1, 32, 56, 56)
    graph = ak.compile(net, (x,), target="h100").graph
    dw = next(n for n in graph.nodes if depthwise(n))
    assert [bool(depthwise(n)) for n in graph.nodes if n.kind == "conv2d"] == [False, True, False]
    outs, ins, taps = depthwise(dw)
    assert (outs, ins, taps) == (128 * 56 * 56, 128 * 56 * 56, 9)
    a, b = DEPTHWISE_FWD.value
    per_s = spec.compute_units * spec.clock_hz
    assert depthwise_s(dw, 64, spec) == pytest.approx(64 * outs * (a + b * 9) / per_s)
    nchw, nhwc = _eager_s(net, x), _eager_s(net, x.to(memory_format=torch.channels_last))
    assert nchw > nhwc + 0.8 * depthwise_s(dw, 64, spec)
    assert _eager_s(net, x, precision="fp16") < nchw
    # TF32 changes cuDNN's and cuBLAS's math, not which kernel a depthwise convolution takes: still PyTorch's own
    assert _eager_s(net, x, precision="tf32") > _eager_s(net, x.to(memory_format=torch.channels_last),
                                                         precision="tf32") + 0.5 * depthwise_s(dw, 64, spec)
    # the backward: input and weight gradients at their own rates
    train = ak.compile(DepthwiseBlock(), (x,), target="h100", training=True).graph
    back = next(n for n in train.nodes if n.kind == "convolution_backward" and depthwise(n))
    c, d = DEPTHWISE_INPUT_GRAD.value
    want = 64 * (ins * (c + d * 9) + outs * 9 * float(DEPTHWISE_WEIGHT_GRAD.value)) / per_s
    assert depthwise_s(back, 64, spec) == pytest.approx(want)
    # a dense convolution is no depthwise one, nor is a grouped one with several channels per group
    grouped = nn.Conv2d(64, 64, 3, groups=8)
    g = ak.compile(grouped, (torch.randn(1, 64, 8, 8),), target="h100").graph
    assert not any(depthwise(n) for n in g.nodes)


def test_eager_layouts_follow_permutes_convolutions_and_elementwise_ops() -> None:
    """An NHWC tensor permuted to NCHW's shape is channels last, and so is what a convolution or an elementwise op
    makes of it; a reshape makes a contiguous tensor. A backward convolution takes its forward's layout."""
    from accelkit.families.gpu import channels_last_nodes

    net = NhwcBlock()
    graph = ak.compile(net, (torch.randn(1, 64, 14, 14),), target="h100", training=True).graph
    last = channels_last_nodes(graph)
    conv = next(n for n in graph.nodes if n.kind == "conv2d")
    assert conv.name in last
    back = next(n for n in graph.nodes if n.kind == "convolution_backward")
    assert back.name in last
    plain = ak.compile(DepthwiseBlock(), (torch.randn(1, 32, 14, 14),), target="h100", training=True).graph
    assert not channels_last_nodes(plain)
    cl = ak.compile(DepthwiseBlock(), (torch.randn(1, 32, 14, 14).to(memory_format=torch.channels_last),),
                    target="h100", training=True).graph
    marked = channels_last_nodes(cl)
    assert all(n.name in marked for n in cl.nodes if n.kind in ("conv2d", "convolution_backward"))
    # a pad (MobileNet's TensorFlow-style padding) keeps the layout; contiguous() makes the tensor NCHW again
    padded = nn.Sequential(nn.ZeroPad2d(1), nn.Conv2d(8, 8, 3, groups=8))
    x8 = torch.randn(1, 8, 14, 14).to(memory_format=torch.channels_last)
    g = ak.compile(padded, (x8,), target="h100").graph
    assert next(n for n in g.nodes if n.kind == "conv2d").name in channels_last_nodes(g)

    class Contiguous(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dw = nn.Conv2d(8, 8, 3, groups=8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.dw(torch.relu(x).contiguous())

    g = ak.compile(Contiguous(), (x8,), target="h100").graph
    relu = next(n for n in g.nodes if n.kind == "relu")
    assert relu.name in channels_last_nodes(g)
    if any(n.kind == "contiguous" for n in g.nodes):  # the capture may drop a no-op contiguous() of a view
        assert next(n for n in g.nodes if n.kind == "conv2d").name not in channels_last_nodes(g)
    # a depthwise convolution on channels-last images runs on cuDNN's NHWC kernels (GPU_CUDNN_DEPTHWISE_SM_CYCLES),
    # faster than PyTorch's own on NCHW images, and slower than its bytes at the memory's rate
    from accelkit.families.gpu import CUDNN_DEPTHWISE

    dw = nn.Conv2d(64, 64, 7, padding=3, groups=64)
    x = torch.randn(1, 64, 28, 28)

    def conv_s(images: torch.Tensor) -> float:
        report = ak.compile(dw, (images,), target="h100", precision="bf16", stack="eager", batch_size=64,
                            synthetic_data=True).report
        return next(k.time_s for k in report.kernels if "conv2d" in k.name)

    on_cudnn, native = conv_s(x.to(memory_format=torch.channels_last)), conv_s(x)
    assert on_cudnn < native / 2
    h100 = ak.hardware.get("h100")
    outputs = 64 * 64 * 28 * 28  # at batch 64
    floor = outputs * 49 * CUDNN_DEPTHWISE.value[0] / (h100.compute_units * h100.clock_hz)
    assert on_cudnn >= floor and on_cudnn > 2 * outputs * 2 * 2 / h100.memory_tiers[0].bandwidth_Bps


def test_batch_norm_on_nchw_images_pays_per_plane_in_inference_too() -> None:
    """bf16 batch norm on NCHW images normalizes each (image, channel) plane in a block of its own: the same
    number of values in many small planes takes longer than in a few large ones; channels last does not pay it."""
    from accelkit.families.gpu import NCHW_BN_APPLY

    def bn_s(channels: int, side: int, channels_last: bool = False) -> float:
        net = nn.Sequential(nn.BatchNorm2d(channels)).eval()
        x = torch.randn(1, channels, side, side)
        return _eager_s(net, x.to(memory_format=torch.channels_last) if channels_last else x, batch=32)

    few, many = bn_s(16, 128), bn_s(1024, 16)  # 262,144 values an image either way
    spec = ak.hardware.get("h100")
    extra = (1024 - 16) * 32 * float(NCHW_BN_APPLY.value) / (spec.compute_units * spec.clock_hz)
    assert many - few == pytest.approx(extra, rel=0.05)
    assert bn_s(1024, 16, channels_last=True) < many - 0.9 * extra


def test_fp32_gemms_run_on_the_cuda_cores_at_any_alignment() -> None:
    """Without TF32 (PyTorch's default) an fp32 GEMM runs on the CUDA cores: an odd vocabulary costs nothing there,
    where a bf16 one falls to the narrow tensor-core kernels."""
    from accelkit.cost.gemm import GemmShape
    from accelkit.families.gpu import unaligned_share

    odd = GemmShape(4096, 50257, 768, aligned=1)
    assert unaligned_share(odd, "fp32") == 1.0
    assert unaligned_share(odd, "bf16") < 0.5 and unaligned_share(odd, "tf32") < 1.0

    def head_s(vocab: int, precision: str) -> float:
        m = nn.Linear(768, vocab, bias=False)
        return ak.compile(m, (torch.randn(2048, 768),), target="h100", precision=precision,
                          stack="eager").report.step_time_s

    assert head_s(50257, "fp32") == pytest.approx(head_s(50304, "fp32"), rel=0.02)
    assert head_s(50257, "bf16") > 2 * head_s(50304, "bf16")


def test_the_kinds_file_counts_gpu_bound_rows_and_shows_the_host_bound_apart() -> None:
    from accelkit.sim.measured import KINDS_CSV, measured_rows, validate_measured

    rows = measured_rows(KINDS_CSV)
    models = {r["model"] for r in rows}
    assert {"mobilenet-v2", "efficientnet-b0", "convnext-tiny", "swin-tiny", "t5-small"} <= models
    assert any(r["precision"].startswith("fp32") for r in rows)
    result = validate_measured(["infer-mobilenet-v2-b256", "infer-t5-small-b32-s128", "train-mobilenet-v2-b128",
                                "fp32-infer-bert-base-b32-s128"], file="kinds")
    assert [r.case for r in result.rows] == ["infer-mobilenet-v2-b256", "fp32-infer-bert-base-b32-s128"]
    assert [r.case for r in result.host_bound] == ["infer-t5-small-b32-s128"]  # the seen row is left out
    assert all(r.ratio < 1.5 for r in result.rows)
    text = result.table()
    assert "not counted" in text and "2026-11-28" in text
    with pytest.raises(ak.AccelkitError, match="kinds"):
        validate_measured(file="kind")


def test_a_recurrent_layers_backward_counts_twice_its_forward_and_runs_on_the_matrix_units() -> None:
    """A CPU capture of nn.LSTM records each layer's backward as one oneDNN op that PyTorch's registry has no
    formula for (it counted 0 FLOPs, so an LSTM trained in a fraction of its time); each layer's backward is the
    input and weight gradients of its gate products: twice its forward."""
    from accelkit.graph.cost import MATMUL_KINDS

    class Lm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(1000, 64)
            self.rnn = nn.LSTM(64, 128, 2, batch_first=True)
            self.out = nn.Linear(128, 1000)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(self.rnn(self.emb(x))[0])

    graph = ak.compile(Lm(), (torch.zeros(1, 16, dtype=torch.long),), target="h100", training=True).graph
    fwd = [n for n in graph.nodes if n.kind == "lstm"]
    back = [n for n in graph.nodes if n.kind == "mkldnn_rnn_layer_backward"]
    if not back:  # a PyTorch build without oneDNN decomposes the layers: nothing uncounted to check
        pytest.skip("this PyTorch records no fused recurrent backward")
    gates = 4 * 128
    layer_fwd = [2 * 16 * gates * (64 + 128), 2 * 16 * gates * (128 + 128)]
    assert len(fwd) == 1 and fwd[0].flops == sum(layer_fwd)
    assert sorted(n.flops for n in back) == sorted(2 * f for f in layer_fwd)
    assert {"lstm", "mkldnn_rnn_layer_backward"} <= MATMUL_KINDS


def test_a_first_layer_depthwise_backward_computes_no_input_gradient() -> None:
    """The images need no gradient: a depthwise convolution that reads them computes its weight's gradient only."""
    from accelkit.families.gpu import DEPTHWISE_WEIGHT_GRAD, depthwise, depthwise_s

    first = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.Conv2d(8, 8, 3, padding=1, groups=8))
    graph = ak.compile(first, (torch.randn(1, 8, 16, 16),), target="h100", training=True).graph
    back = [n for n in graph.nodes if n.kind == "convolution_backward" and depthwise(n)]
    assert len(back) == 2
    spec = ak.hardware.get("h100")
    outs, _ins, taps = depthwise(back[-1])  # the first layer's, computed last
    weight_only = outs * 4 * taps * float(DEPTHWISE_WEIGHT_GRAD.value) / (spec.compute_units * spec.clock_hz)
    assert depthwise_s(back[-1], 4, spec) == pytest.approx(weight_only)
    assert depthwise_s(back[0], 4, spec) > 1.5 * weight_only  # and the input gradient besides


def test_the_report_says_when_pytorchs_own_nchw_kernels_take_a_share_of_the_step() -> None:
    """A learner's eager MobileNet-style block on NCHW images: the report's note names the layers, what moves them
    to cuDNN, and their share; channels-last images, the compiled stack and a small share say nothing."""
    net = DepthwiseBlock().eval()
    x = torch.randn(1, 32, 56, 56)

    def notes(images: torch.Tensor, **kw: object) -> list[str]:
        args = {"target": "h100", "precision": "bf16", "stack": "eager", "batch_size": 64, **kw}
        return [n for n in ak.compile(net, (images,), **args).report.notes if "PyTorch's own kernels" in n]

    (note,) = notes(x)
    assert "depthwise convolutions" in note and "batch norms" in note and "channels_last" in note
    share = float(note.rsplit("(", 1)[1].split("%")[0])
    assert 5 <= share <= 100
    assert notes(x.to(memory_format=torch.channels_last)) == []
    assert notes(x, stack="compiled") == []
    assert notes(x, precision="fp16") == []  # cuDNN takes fp16 batch norms and depthwise convolutions


def test_the_report_says_when_unaligned_matmuls_take_a_share_of_the_step() -> None:
    """GPT-2's 50,257-word head in eager bf16 runs on narrow kernels, and the report says how to fix it; padded to
    50,304 (or in fp32, on the CUDA cores) it says nothing."""
    def notes(vocab: int, precision: str = "bf16") -> list[str]:
        head = nn.Linear(768, vocab, bias=False)
        report = ak.compile(head, (torch.randn(2048, 768),), target="h100", precision=precision,
                            stack="eager").report
        return [n for n in report.notes if "multiple of 16 bytes" in n]

    (note,) = notes(50257)
    assert "50,304" in note and "eager bf16" in note
    assert notes(50304) == [] and notes(50257, "fp32") == []


def test_eager_layer_norm_over_narrow_rows_costs_per_row() -> None:
    """The same number of values normalized in rows of 96 features (ConvNeXt's, Swin's first stage) takes longer
    than in rows of 768 (BERT's): PyTorch's kernel spends a fixed time on each row."""
    from accelkit.families.gpu import LAYER_NORM_ROW

    def ln_s(features: int, rows: int) -> float:
        net = nn.LayerNorm(features)
        return _eager_s(net.eval(), torch.randn(1, rows, features), batch=1)

    narrow, wide = ln_s(96, 8 * 65536), ln_s(768, 65536)  # 50 M values each
    spec = ak.hardware.get("h100")
    per_row = 8 * 65536 * float(LAYER_NORM_ROW.value) / (spec.compute_units * spec.clock_hz)
    assert narrow > 1.5 * wide
    assert narrow == pytest.approx(per_row, rel=0.15)  # bound by its rows (launch and casts besides)
