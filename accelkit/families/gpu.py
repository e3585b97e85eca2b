"""GPU: kernel by kernel from HBM. Each kernel reads and writes its tensors in HBM and pays a launch; data
parallel across GPUs. Three software stacks run a model (``stack=``): eager PyTorch (every op a kernel, issued by
the host one by one: :mod:`accelkit.families.eager`), torch.compile and a serving engine (the compiler's fused
kernels, the step launched as a CUDA graph). A matmul's rate follows from its shape (:mod:`accelkit.cost.gemm`)
under the chip's measured matmul ceiling."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from accelkit.constants import HOST_TRANSFER, Constant, register, value
from accelkit.cost.gemm import GemmShape, attention_waves, gemm_fit
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import Rates, kernel_time, roofline
from accelkit.cost.report import KernelTime
from accelkit.families.base import ExecutionModel, HostIO, Timed, TimingContext
from accelkit.families.eager import (
    ATTENTION_KINDS,
    CONV_KINDS,
    EagerOp,
    eager_ops,
    gemm_of,
    host_events,
    issue,
    kernel_times,
    weight_grad,
)
from accelkit.graph.cost import MATMUL_KINDS, VIEW_OPS, WeightShapes
from accelkit.graph.ir import DTYPE_BYTES
from accelkit.hardware.precision import element_bytes
from accelkit.hardware.spec import AcceleratorSpec


def kernel_by_kernel(kernels: list[Kernel], ctx: TimingContext, *, cache_share: float = 0.0,
                     profiled: dict[str, float] | None = None, launches_per_op: bool = False) -> list:
    """Each kernel on its own: the roofline from the plan's tiers (the first tier when its tensors fit in
    ``cache_share`` of it), plus a launch (one per op when ``launches_per_op``). ``profiled`` maps a kernel to
    op times measured on this host, which replace the roofline there."""
    spec, r, plan = ctx.spec, ctx.rates, ctx.plan
    w, a = plan.placement["weights"], plan.placement["activation"]
    units = f"{spec.compute_units} {spec.unit_name or 'units'}"
    o = plan.placement.get("optimizer")
    cache = spec.memory_tiers[0]
    out = []
    for k in kernels:
        tier = cache.name if cache_share and k.bytes <= cache.capacity_bytes * cache_share else None
        c, m = roofline(k, r, tier or w, tier or a, tensor=ctx.tensor, act_tensor=ctx.act_tensor, opt_tier=o, spill=ctx.spill)
        launch = r.launch_s * (len(k.ops) if launches_per_op else 1)
        if profiled and k.name in profiled:
            measured = profiled[k.name]
            out.append(kernel_time(k, units, measured if c >= m else c, m if m > c else measured, 0.0, launch,
                                   ctx.peak, time=max(measured, c, m) + launch))
        else:
            out.append(kernel_time(k, units, c, m, 0.0, launch, ctx.peak * ctx.tensor))
    return out


FAMILY = "gpu"

(KERNEL_LAUNCH, COLLECTIVE, EAGER_OP, EAGER_CAST, EAGER_VIEW, EAGER_CUDNN, GRAPH_LAUNCH, MATMUL_FRACTION,
 ATTENTION_FRACTION, CONV_FRACTION) = register(
    Constant("GPU_KERNEL_LAUNCH_S", 4e-6, "each GPU kernel costs a 4 µs launch",
             "typical of NVIDIA Nsight kernel traces; NVIDIA publishes no single figure", True, (FAMILY,)),
    Constant("GPU_COLLECTIVE_S", 10e-6,
             "each NCCL all-reduce starts with 10 µs of fixed latency, however small the message",
             "nccl-tests all_reduce_perf on 2 x A100-SXM4-40GB over NVLink: a 32-byte all-reduce takes 10.1 µs "
             "(NVIDIA/nccl issue 583, 2021)", False, (FAMILY,), when="multi-chip"),
    Constant("GPU_EAGER_OP_S", 15e-6,
             "eager PyTorch: the host spends 15 µs issuing each op of the model that launches a kernel (the model's "
             "Python and nn.Module calls, PyTorch's dispatcher, the CUDA launch), one op after another",
             "Fernandez et al., 'The Framework Tax', EMNLP 2023: eager PyTorch inference is bound by the framework, "
             "not the GPU, at small batches; a bare op issued from Python takes about 4-5 µs on a current server, "
             "a transformers or torchvision model's own Python and module calls about twice that again "
             "(illustrative split; checked against the H100 timings in shared/reference/gpu_measured)", True,
             (FAMILY,), when="eager"),
    Constant("GPU_EAGER_CAST_S", 15e-6,
             "eager PyTorch: a cast autocast inserts (fp32 -> 16 bits) costs the host 15 µs, as much as an op of the "
             "model: no Python, but two dispatches (an allocation and a copy), a launch and autocast's cache of the "
             "cast weight",
             "measured on an H200 server (benchmarks/gpu/host_backward.py, results/h200_host_backward.json): a chain "
             "of 200 Linear + ReLU layers took 37 µs a layer in fp32 and 81 µs under bf16 autocast, two casts a layer: "
             "22 µs a cast against 19 µs an op with its module call, on that host; rounded to GPU_EAGER_OP_S",
             False, (FAMILY,), when="eager"),
    Constant("GPU_EAGER_VIEW_S", 3e-6,
             "eager PyTorch: an op that launches no kernel (a view, a reshape) still costs the host 3 µs",
             "illustrative: the dispatcher without the CUDA launch", True, (FAMILY,), when="eager"),
    Constant("GPU_EAGER_CUDNN_S", 8e-6,
             "eager PyTorch: a convolution costs the host 8 µs more than another op (cuDNN finds its execution plan "
             "for the shape on every call)",
             "illustrative: cuDNN's v8 graph API builds or looks up an execution plan per call (NVIDIA cuDNN "
             "developer guide, 'Graph API')", True, (FAMILY,), when="eager"),
    Constant("GPU_GRAPH_LAUNCH_S", 20e-6,
             "a compiled program or serving engine launches a step as one CUDA graph: 20 µs on the host per step",
             "illustrative: a CUDA graph launch (cudaGraphLaunch) plus the runtime's Python per step; PyTorch's "
             "'Accelerating PyTorch with CUDA Graphs' (2021) shows one launch replacing one per kernel", True,
             (FAMILY,)),
    Constant("GPU_MATMUL_FRACTION", 0.8,
             "a GPU whose catalog entry gives no measured matmul ceiling reaches 80% of its peak on large matmuls",
             "the median NVIDIA entry of Stas Bekman's Maximum Achievable Matmul FLOPS table (A100 86%, GH200 83%, "
             "H100 80%)", True, (FAMILY,)),
    Constant("GPU_ATTENTION_FRACTION", 0.5,
             "fused attention (FlashAttention-2, PyTorch's scaled_dot_product_attention) runs at half the chip's "
             "achievable matmul rate",
             "Dao 2023, FlashAttention-2: 50-73% of peak on A100; Shah et al. 2024, FlashAttention-3: FA-2 reaches "
             "35% of peak on H100", False, (FAMILY,)),
    Constant("GPU_CONV_FRACTION", 0.5,
             "a convolution (cuDNN's implicit GEMM) runs at half the rate of a plain GEMM of the same shape: its "
             "operands are gathered from the image as it goes",
             "illustrative; NVIDIA Deep Learning Performance guide, 'Convolutional Layers User's Guide' (implicit "
             "GEMM, its dimensions and quantization); borne out by cuDNN as PyTorch calls it on an H100 (the measured "
             "ResNet-50 and U-Net rows: compiled ResNet-50 training's convolution kernels 7.15 ms where this models "
             "6.64), not by TensorRT's tuned int8 kernels: MLPerf Inference v2.1's ResNet-50 Offline runs 2.0x "
             "faster on an A100 and 1.4x on an H100 than modelled (the GPU-like validation rows)",
             True, (FAMILY,)),
)

UNROLLED_BYTES, ROWS_BYTES = register(
    Constant("GPU_UNROLLED_BYTES_PER_SM_CYCLE", 9.0,
             "an eager elementwise kernel whose operands differ in dtype (autocast's fp32 residual stream plus a 16-bit "
             "output) moves at most 9 bytes per SM per clock: PyTorch's unrolled kernel casts each element as it loads "
             "it, without vector loads, so it keeps fewer bytes in flight than HBM needs to run at its rate",
             "measured on an H100 SXM5 (benchmarks/gpu/profile_compiled.py, results/h100_profile_compiled.json, eager "
             "BERT-base at batch 32 x 128): 24 residual adds (unrolled_elementwise_kernel<CUDAFunctor_add<float>>, an fp32 "
             "and a bf16 operand, 3.1 M elements, 31.5 MB each) took 0.319 ms: 2.37 TB/s, 71% of the HBM's 3.35, or 9.1 "
             "bytes per SM per clock at 132 SMs x 1.98 GHz; which kernel PyTorch picks: aten/src/ATen/native/cuda/"
             "CUDALoops.cuh, gpu_kernel_impl (needs_dynamic_casting -> unrolled). On an H200 (benchmarks/gpu/"
             "eager_bandwidth.py, results/h200_eager_bandwidth.json) an fp32 + bf16 add of 12.6 M-201 M elements "
             "moved 8.6-10.8 bytes per SM per clock where a bf16 add reached the HBM's rate (16.3)", False, (FAMILY,),
             when="eager"),
    Constant("GPU_ROWS_BYTES_PER_SM_CYCLE", 8.0,
             "an eager layer or group norm (PyTorch's kernel, a row at a time, fp32 under autocast) moves at most 8 "
             "bytes per SM per clock, for rows of 768-1,024 features",
             "measured on an H100 SXM5 (results/h100_profile_compiled.json, eager BERT-base at batch 32 x 128): 25 "
             "vectorized_layer_norm_kernel<float> over 3.1 M fp32 elements (25.2 MB read and written each) took "
             "0.323 ms: 1.95 TB/s, 58% of the HBM's 3.35, 7.5 bytes per SM per clock at 132 SMs x 1.98 GHz; on an "
             "H200 (benchmarks/gpu/eager_bandwidth.py, results/h200_eager_bandwidth.json) fp32 layer norms of 12.6 M-"
             "201 M elements moved 6.1-8.6 bytes per SM per clock in rows of 768, 6.9-10.2 in rows of 1,024 and "
             "6.9-11.5 in rows of 4,096 (wider rows are faster; not modelled)", False, (FAMILY,), when="eager"),
)


def access_Bps(spec: AcceleratorSpec, access: str) -> float | None:
    """What the SMs sustain for an eager kernel that walks memory as ``access`` says (``EagerOp.access``): bytes per
    SM per clock x SMs x clock; None where the memory's own rate is the bound ("vector")."""
    per = {"unrolled": UNROLLED_BYTES, "rows": ROWS_BYTES}.get(access)
    if per is None:
        return None
    return float(per.value) * spec.compute_units * (spec.clock_hz or 1.5e9)


GEMM_OF_MAXIMUM = register(
    Constant("GPU_GEMM_OF_MAXIMUM", 0.891,
             "a large GEMM as a framework or serving engine runs it (the library's own heuristics, at the clocks "
             "a long run holds) reaches 89% of the maximum a brute-force search over shapes finds "
             "(AcceleratorSpec.matmul_efficiency)",
             "measured: an 8192^3 bf16 matmul on an H100 SXM5 ran at 706 TFLOP/s (shared/reference/gpu_measured), "
             "against the 792.1 TFLOP/s maximum Stas Bekman's search found on an H100 SXM (h100.toml); the Llama-3-8B "
             "GEMMs of 1,024-16,384 tokens there ran at 632-740 TFLOP/s", False, (FAMILY,)),
)[0]

UNALIGNED = register(
    Constant("GPU_GEMM_UNALIGNED", ((4, 0.36), (2, 0.21)),
             "a GEMM whose operands' row strides are not a multiple of 16 bytes cannot use the fastest kernels "
             "(Hopper's tensor-memory accelerator requires 16-byte strides) and runs on narrower, older ones: at "
             "4-15 bytes of alignment (a 16-bit matrix with an even row, e.g. BERT's 30,522-word vocabulary) 36% of "
             "the large-GEMM rate, at 2 bytes (an odd row: GPT-2's 50,257) 21%",
             "measured: torch.profiler on an H100 SXM5 (benchmarks/gpu/profile_compiled.py, 2026-11-26): BERT's "
             "masked-LM head GEMMs (0.77 TFLOP each) ran on CUTLASS sm80 align2 kernels at 245-265 TFLOP/s, GPT-2's "
             "tied LM head (0.63 TFLOP) on an sm75 align1 kernel at 148 TFLOP/s, against the 706 of an aligned "
             "large GEMM; NVIDIA's Matrix Multiplication Background User's Guide (dimensions multiples of 16 bytes "
             "for Tensor Cores); CUDA driver API, cuTensorMapEncodeTiled (globalStrides multiples of 16); "
             "nanoGPT's vocabulary padded from 50,257 to 50,304 for about 25% speed (Karpathy, 2023). Eager PyTorch "
             "only: torch.compile pads such matrices itself (torch._inductor.config.shape_padding) and serving engines "
             "pad the vocabulary (vLLM's ParallelLMHead, to a multiple of 64)",
             False, (FAMILY,)),
)[0]

FP32_SIMT = register(
    Constant("GPU_FP32_SIMT_ANY_ALIGNMENT", True,
             "an fp32 matmul (PyTorch's default: TF32 off) runs on the CUDA cores, whose kernels read operands of any "
             "alignment at the same rate: a vocabulary of 50,257 costs an fp32 GEMM nothing, where a 16-bit one "
             "falls to the narrow tensor-core kernels (GPU_GEMM_UNALIGNED)",
             "measured with torch.profiler on an H100 SXM5 (benchmarks/gpu/profile_new_kinds.py, results/"
             "h100_profile_new_kinds_2.json): GPT-2 small trained in fp32 at batch 8 x 512 ran its GEMMs, the "
             "language-model head's included, on CUTLASS and cuBLAS SIMT kernels (cutlass_80_simt_sgemm_*_align1, "
             "sm80_xmma_gemm_f32f32_*_ffma): 63.5 ms for about 2.9 TFLOP, 46 TFLOP/s, 69% of the 67 TFLOP/s fp32 "
             "peak; torch.backends.cuda.matmul.allow_tf32 defaults to False", False, (FAMILY,)),
)[0]

LIBRARY_GEMMS = register(
    Constant("GPU_COMPILED_LIBRARY_GEMMS", True,
             "torch.compile (its default mode) runs each matmul as a library call (cuBLAS) and fuses only the "
             "pointwise ops around it, into kernels of their own: a GEMM's output goes to memory and is read back "
             "by its epilogue, which costs a second launch. A serving engine fuses bias, activation and residual "
             "into the GEMM (the 'engine' stack keeps them in one kernel)",
             "PyTorch Inductor: aten.mm and addmm lower to extern_kernels (cuBLAS) unless max_autotune selects a "
             "Triton template, and only templates take epilogue fusion (torch._inductor.config.max_autotune, "
             "epilogue_fusion); seen on an H100 (benchmarks/gpu/profile_compiled.py): cuBLAS nvjet kernels beside "
             "Triton 'triton_poi_fused_gelu' and 'fused__to_copy_add_native_layer_norm' kernels; TensorRT's and "
             "cuBLASLt's GEMM epilogues (bias, GELU) for the engine", False, (FAMILY,)),
)[0]

MASK_MATH, MATH_BACKWARD_TC, UNPADDED_WEIGHT_GRADS, FP32_MATMUL, COMPILED_CASTS = register(
    Constant("GPU_COMPILED_BROADCAST_MASK_MATH", True,
             "torch.compile runs an attention whose mask is broadcast along the keys (a padding mask expanded from one "
             "column: BERT's, ViT's) on PyTorch's math path, not a fused kernel: two batched matmuls in fp32 on the "
             "CUDA cores and a softmax over the fp32 scores, written to and read back from memory, in the backward "
             "too. A causal mask (GPT-2's, Llama's) is contiguous and runs fused (cuDNN / FlashAttention)",
             "measured on an H200 with PyTorch 2.11 and transformers 5.17 (benchmarks/gpu/sdpa_choice.py, "
             "results/h200_sdpa_choice.json): torch._fused_sdp_choice picks the math backend for a bool mask whose last "
             "dimension has stride 0 and cuDNN for every other mask, with or without dropout; compiled BERT-base and "
             "ViT-B/16 ran aten::bmm on sm80_xmma_gemm_f32f32 FFMA kernels beside a Triton '_safe_softmax' kernel, "
             "GPT-2 and Llama-3.2-1B ran cuDNN's flash kernel (also results/h100_profile_compiled.log). transformers "
             "builds the mask under torch.compile with torch < 2.14 (masking_utils._ignore_bidirectional_mask_sdpa); "
             "the math backend upcasts 16-bit inputs to fp32 (torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp, "
             "off by default)", False, (FAMILY,), when="compiled"),
    Constant("GPU_COMPILED_MATH_BACKWARD_TENSOR_CORES", True,
             "the backward of torch.compile's math attention runs its four batched matmuls on the tensor cores (16 "
             "bits), not on the CUDA cores in fp32 as its forward does; the fp32 scores' gradient still goes through "
             "memory",
             "measured on an H100 SXM5 (benchmarks/gpu/profile_compiled.py with TOP=40, results/h100_profile_compiled_"
             "top40.json): compiled BERT-base training at batch 32 x 512 ran its forward attention on two "
             "sm80_xmma_gemm_f32f32 FFMA kernels a layer (9.0 ms, 34 TFLOP/s) and its backward on four nvjet tensor-"
             "core kernels a layer (nvjet_sm90_tst_128x160 NTT twice, 64x256 TNN and NTN: 4.7 ms for 625 GFLOP); the "
             "forward's inputs were cast up and laid out by three Triton kernels a layer "
             "(triton_poi_fused__to_copy_..._clone_mul_transpose: 2.0 ms)", False, (FAMILY,), when="compiled"),
    Constant("GPU_COMPILED_UNPADDED_WEIGHT_GRADS", True,
             "torch.compile pads a matmul's activations to aligned shapes (shape_padding) but not the gradient of a "
             "weight whose rows are not a multiple of 16 bytes: that GEMM keeps the weight's shape and runs on the "
             "older, narrower kernels (GPU_GEMM_UNALIGNED), as in eager PyTorch",
             "measured on an H100 SXM5 (benchmarks/gpu/profile_compiled.py with TOP=45, results/h100_profile_gpt2_"
             "training.json): compiled GPT-2 small training at batch 8 x 1,024 ran two of its three language-model-"
             "head GEMMs (a 50,257-word vocabulary) on nvjet kernels (0.90 and 0.78 ms) and the third on "
             "cutlass_75_tensorop_bf16_s1688gemm_bf16_128x256_nt_align1 (4.29 ms, as in eager: 4.28 ms), each 632 "
             "GFLOP", False, (FAMILY,), when="compiled"),
    Constant("GPU_FP32_MATMUL_FRACTION", 0.3,
             "an fp32 matmul on the CUDA cores (FFMA, no tensor cores) reaches 30% of the chip's fp32 peak",
             "measured: the math path's attention matmuls ran at 25 TFLOP/s in compiled BERT-base (H100 SXM5, batch 32 "
             "x 128), 21 TFLOP/s (H200, batch 8 x 128) and 18 TFLOP/s in ViT-B/16 (H200, batch 8), of the 67 "
             "TFLOP/s fp32 peak (benchmarks/gpu/results)", False, (FAMILY,), when="compiled"),
    Constant("GPU_COMPILED_AUTOCAST_CASTS", True,
             "torch.compile under autocast (fp32 weights, a 16-bit precision) casts every fp32 weight and bias a matmul "
             "reads to 16 bits inside the compiled step, every step, a kernel each (6 bytes moved per element), and in "
             "training casts each such weight's 16-bit gradient back to fp32 the same way. Not under tensor "
             "parallelism: Megatron-LM holds its model in 16 bits (Float16Module) and keeps fp32 weights in the "
             "optimizer only",
             "measured on an H100 SXM5 (benchmarks/gpu/results/h100_profile_compiled.log) and an H200: compiled "
             "BERT-base inference ran 134 'triton_poi_fused__to_copy' kernels a step, 0.98 of its 3.44 ms of GPU time "
             "in copies; autocast casts inside the region it covers and keeps no cast between calls (PyTorch, "
             "'Automatic Mixed Precision package')", False, (FAMILY,), when="compiled"),
)


NCHW_BN_STATS, NCHW_BN_BACKWARD = register(
    Constant("GPU_NCHW_BATCH_NORM_STATS_RATE", 1.2e9,
             "eager PyTorch trains batch norm on bf16 NCHW images with its own kernels (cuDNN's take no bf16), one "
             "thread block of 512 threads per channel, four blocks to an SM: each block sums its channel's values at "
             "1.2 billion elements a second, so a layer with few channels and many pixels runs far below the memory's "
             "bandwidth (channels-last images, fp16 and fp32 use faster kernels)",
             "PyTorch's aten/src/ATen/native/cuda/Normalization.cuh (batch_norm_collect_statistics_kernel, a block per "
             "channel; _batch_norm_impl_index uses cuDNN only for non-bf16 inputs); measured with the profiler on an "
             "H200 (benchmarks/gpu/results/h200_profile_conv_training.json): the U-Net's 18 layers (64-1,024 channels, "
             "batch 16 at 256 x 256) 1.24, an NCHW ResNet-50's 53 layers (batch 64) 1.12 billion elements a second per "
             "block", False, (FAMILY,), when="eager"),
    Constant("GPU_NCHW_BATCH_NORM_BACKWARD_RATE", 0.52e9,
             "the same kernels' backward (batch_norm_backward_kernel, a block per channel) runs at 0.52 billion "
             "elements a second per block",
             "measured as GPU_NCHW_BATCH_NORM_STATS_RATE: the U-Net 0.57, the NCHW ResNet-50 0.47 billion elements a "
             "second per block", False, (FAMILY,), when="eager"),
)
DEPTHWISE_FWD, DEPTHWISE_INPUT_GRAD, DEPTHWISE_WEIGHT_GRAD, NCHW_BN_APPLY = register(
    Constant("GPU_DEPTHWISE_FORWARD_SM_CYCLES", (1.51, 0.128),
             "eager PyTorch runs a depthwise convolution (groups = input channels) over NCHW images in bf16 or fp32 "
             "with its own kernels, not cuDNN's: a thread per output element looping over the filter's taps, 1.51 "
             "SM-cycles per output element plus 0.128 per tap (a 3 x 3 filter: 2.66, a 5 x 5: 4.70), far below the "
             "memory's rate",
             "PyTorch's aten/src/ATen/native/cuda/DepthwiseConv2d.cu (conv_depthwise2d_forward_kernel), chosen for "
             "depthwise convolutions unless the input is channels last or fp16 (Convolution.cpp, "
             "use_cudnn_depthwise); measured with torch.profiler on an H100 SXM5 (benchmarks/gpu/"
             "profile_new_kinds.py and measure_new_kinds.py, results/h100_profile_new_kinds*.json, 132 SMs x 1.98 GHz): "
             "MobileNetV2's 17 3 x 3 layers at batch 128 (2.66 cycles an output) and EfficientNet-B0's nine 5 x 5 at "
             "batch 64 (4.70) set the two figures; MobileNetV2 at batch 256 and EfficientNet-B0's 3 x 3 layers at "
             "batches 64 and 256 come out within 3% of them", False, (FAMILY,), when="eager"),
    Constant("GPU_DEPTHWISE_INPUT_GRAD_SM_CYCLES", (3.77, 0.066),
             "the same kernels' input gradient: a thread per input element looping over the taps, 3.77 SM-cycles per "
             "input element plus 0.066 per tap, at any stride",
             "measured as GPU_DEPTHWISE_FORWARD_SM_CYCLES (conv_depthwise2d_backward_kernel): MobileNetV2's 3 x 3 "
             "layers (strides 1 and 2 alike, 4.36 cycles an input element) and EfficientNet-B0's 5 x 5 (5.41) set "
             "it; EfficientNet-B0's 3 x 3 layers come out within 1%", False, (FAMILY,), when="eager"),
    Constant("GPU_DEPTHWISE_WEIGHT_GRAD_SM_CYCLES", 0.53,
             "the same kernels' weight gradient (a block per filter tap, summing over the batch and the image) takes "
             "0.53 SM-cycles per output element and tap",
             "measured as GPU_DEPTHWISE_FORWARD_SM_CYCLES (conv_depthwise2d_grad_weight_kernel): MobileNetV2's 17 "
             "layers at batch 128; EfficientNet-B0's 16 at batch 64 took 8% longer than this gives",
             False, (FAMILY,), when="eager"),
    Constant("GPU_NCHW_BATCH_NORM_APPLY_PLANE_SM_CYCLES", 195,
             "eager PyTorch normalizes bf16 NCHW images with batch norm's own kernel (training and inference alike, "
             "after the statistics in training), each image's channel (an H x W plane) by a thread block of its own: "
             "the data at the memory's rate plus 195 SM-cycles a plane, so a network of many channels over small "
             "images (MobileNet's 7 x 7 maps of 960 channels) normalizes at half the memory's rate, a U-Net's "
             "256 x 256 maps at nearly all of it",
             "PyTorch's aten/src/ATen/native/cuda/Normalization.cuh (batch_norm_transform_input_kernel, a block per "
             "channel and batch slice; batch_norm_elementwise takes it for contiguous inputs in inference too); "
             "measured as GPU_DEPTHWISE_FORWARD_SM_CYCLES: MobileNetV2's 52 layers in training at batch 128 (2.18 M "
             "planes: 195.6 cycles a plane beyond the memory's rate); the same layers at inference batch 256 (195.4) "
             "and EfficientNet-B0's 49 at batches 64 and 256 (185 and 174) come out within 7%",
             False, (FAMILY,), when="eager"),
)
LAYER_NORM_ROW = register(
    Constant("GPU_LAYER_NORM_ROW_SM_CYCLES", 433,
             "eager PyTorch's layer-norm kernel spends at least 433 SM-cycles on each row, however few its features: "
             "rows narrower than about 430 fp32 features (ConvNeXt's and Swin's 96-384 channels) run at that per-row "
             "rate, a third of the memory's or less; wider rows (BERT's 768 and up) are bound by their bytes "
             "(GPU_ROWS_BYTES_PER_SM_CYCLE)",
             "PyTorch's aten/src/ATen/native/cuda/layer_norm_kernel.cu (vectorized_layer_norm_kernel, a block per "
             "row); measured with torch.profiler on an H100 SXM5 (benchmarks/gpu/profile_new_kinds.py, results/"
             "h100_profile_new_kinds_2.json): ConvNeXt-T's 23 layer norms at inference batch 128 (2.68 M rows, 4.47 "
             "ms) set it; Swin-T's 29 at inference batch 64 and training batch 32 come out within 0% and 3% of "
             "their measured 2.43 and 1.25 ms, ConvNeXt-T's at training batch 64 within 1%; BERT-base's rows on an "
             "H100 and the 768-4,096-wide rows of benchmarks/gpu/eager_bandwidth.py on an H200 stay bound by their "
             "bytes under it", False, (FAMILY,), when="eager"),
)[0]
LAYER_NORM_KINDS = frozenset({"layer_norm", "native_layer_norm"})
BN_STATS_KINDS = frozenset({"batch_norm", "_native_batch_norm_legit", "native_batch_norm",
                            "_native_batch_norm_legit_functional"})
BN_BACKWARD_KINDS = frozenset({"native_batch_norm_backward"})
BN_BLOCKS_PER_SM = 4  # 2,048 threads an SM holds (every NVIDIA GPU since Volta) over the kernels' 512 per block


def nchw_batch_norm_s(node: Any, scale: float, sms: int) -> float:
    """Seconds PyTorch's per-channel batch-norm kernel takes for ``node`` (training statistics or backward): each
    channel one block, ``BN_BLOCKS_PER_SM`` blocks to an SM, each through its channel at the kernel's rate."""
    if node is None or not node.inputs or len(node.inputs[0].shape) < 3:
        return 0.0
    shape = node.inputs[0].shape
    channels = shape[1]
    per_channel = node.inputs[0].numel / max(1, channels) * scale
    waves = math.ceil(channels / (BN_BLOCKS_PER_SM * sms))
    rate = NCHW_BN_BACKWARD.value if node.kind in BN_BACKWARD_KINDS else NCHW_BN_STATS.value
    return waves * per_channel / rate


(CUDNN_DEPTHWISE,) = register(
    Constant("GPU_CUDNN_DEPTHWISE_SM_CYCLES", (0.0458, 0.0924, 0.0355),
             "cuDNN runs a depthwise convolution on channels-last images (and torch.compile's, which lays a "
             "convolutional network out channels last) with its own NHWC kernels, a multiply-add per filter tap and "
             "output element on the CUDA cores at a fraction of their rate: 0.0458 SM-cycles per tap and output "
             "element forward, 0.0924 per tap and input element for the input gradient, 0.0355 per tap and output "
             "element for the weight gradient (a 7 x 7 filter: 2.2, 4.5 and 1.7 cycles an element), well below the "
             "memory's rate",
             "measured with torch.profiler on an H100 SXM5 (benchmarks/gpu/profile_new_kinds.py, "
             "results/h100_profile_new_kinds_2.json, 132 SMs x 1.98 GHz): ConvNeXt-T's 18 7 x 7 depthwise layers, "
             "which its permutes hand to cuDNN channels last: conv2d_c1_k1_nhwc_specialized 2.356 ms at batch 128 in "
             "inference (274.6 M outputs; the training forward at batch 64, 1.250 ms, is within 6%), "
             "dgrad2d_c1_k1_nhwc_specialized 2.379 ms and wgrad2d_c1_k1_nhwc 0.915 ms at batch 64; checked on "
             "NVIDIA's EfficientNet-B0 inference in AMP on channels-last images on an A100 (3 x 3 and 5 x 5 filters) "
             "and on the compiled MobileNetV2 and ConvNeXt-T rows", False, (FAMILY,)),
)


def cudnn_depthwise_s(node: Any, scale: float, spec: AcceleratorSpec) -> float:
    """Seconds cuDNN's NHWC depthwise kernels take for ``node`` at ``scale`` times the captured batch
    (``GPU_CUDNN_DEPTHWISE_SM_CYCLES``): the forward, or the backward's input and weight gradients (the ones it
    computes); 0 for a node that is no depthwise convolution."""
    dims = depthwise(node)
    if dims is None:
        return 0.0
    outs, ins, taps = dims
    fwd, dgrad, wgrad = CUDNN_DEPTHWISE.value
    if node.kind != "convolution_backward":
        return _sm_cycles_s(outs * scale * taps * fwd, spec)
    made = {tuple(o.shape) for o in node.outputs}
    x_shape, w_shape = tuple(node.inputs[1].shape), tuple(node.inputs[2].shape)
    cycles = ins * scale * taps * dgrad if x_shape in made else 0.0
    cycles += outs * scale * taps * wgrad if w_shape in made else 0.0
    return _sm_cycles_s(cycles, spec)


def _sm_cycles_s(cycles: float, spec: AcceleratorSpec) -> float:
    return cycles / (spec.compute_units * (spec.clock_hz or 1.5e9))


def depthwise(node: Any) -> tuple[int, int, int] | None:
    """(output elements, input elements, taps) at the captured batch of a depthwise convolution (every input
    channel its own group: a weight of one input channel per group), or None for any other node."""
    if node is None or node.kind not in ("conv2d", "convolution", "_convolution", "convolution_backward"):
        return None
    ins = node.inputs
    if node.kind == "convolution_backward":
        if len(ins) < 3:
            return None
        x, w, out = ins[1], ins[2], ins[0]  # grad_output has the forward output's shape
    else:
        if len(ins) < 2 or not node.outputs:
            return None
        x, w, out = ins[0], ins[1], node.outputs[0]
    if len(x.shape) != 4 or len(w.shape) != 4:
        return None
    if w.shape[1] != 1 or x.shape[1] <= 1 or w.shape[0] % x.shape[1]:
        return None
    return out.numel, x.numel, w.shape[2] * w.shape[3]


def depthwise_s(node: Any, scale: float, spec: AcceleratorSpec) -> float:
    """Seconds PyTorch's own depthwise kernels take for ``node`` at ``scale`` times the captured batch: the forward
    (``GPU_DEPTHWISE_FORWARD_SM_CYCLES``), or the backward's input and weight gradients (the ones it computes)."""
    dims = depthwise(node)
    if dims is None:
        return 0.0
    outs, ins, taps = dims
    if node.kind != "convolution_backward":
        a, b = DEPTHWISE_FWD.value
        return _sm_cycles_s(outs * scale * (a + b * taps), spec)
    # the gradients it returns, known by their shapes (a first layer's input needs none)
    made = {tuple(o.shape) for o in node.outputs}
    x_shape, w_shape = tuple(node.inputs[1].shape), tuple(node.inputs[2].shape)
    c, d = DEPTHWISE_INPUT_GRAD.value
    cycles = ins * scale * (c + d * taps) if x_shape in made else 0.0
    cycles += outs * scale * taps * float(DEPTHWISE_WEIGHT_GRAD.value) if w_shape in made else 0.0
    return _sm_cycles_s(cycles, spec)


_LAYOUT_KEEPING = frozenset({"detach", "alias", "dropout", "lift_fresh", "lift_fresh_copy"})
"""Views that hand on their input as it is (every other view or reshape of a 4-D tensor, ``contiguous`` among
them, is taken to make it contiguous NCHW)."""


def channels_last_nodes(graph: Any) -> frozenset[str]:
    """The nodes whose 4-D output is laid out channels last (NHWC in memory, NCHW in shape), as eager PyTorch lays
    them out: the images where the graph says so (``Graph.channels_last``); an NHWC tensor permuted to NCHW's shape
    (a ConvNeXt block's ``x.permute(0, 3, 1, 2)``); and what any op that computes (a convolution, a norm, a pad, a
    pooling, an elementwise op) makes of a channels-last first input: cuDNN, TensorIterator and the pad and pooling
    kernels keep the input's suggested layout. A reshape, ``contiguous`` or another view makes a contiguous tensor."""
    last: set[str] = set()
    twins: dict[tuple[str, tuple[int, ...], tuple[int, ...]], list[str]] = {}
    if getattr(graph, "channels_last", False):
        last |= {name for name, m in graph.inputs.items() if len(m.shape) == 4}
    for n in graph.nodes:
        if not n.outputs or len(n.outputs[0].shape) != 4:
            continue
        if n.kind == "permute" and n.inputs and len(n.inputs[0].shape) == 4:
            i, o = tuple(n.inputs[0].shape), tuple(n.outputs[0].shape)
            if (o[0], o[2], o[3], o[1]) == i and n.args and n.args[0] not in last:  # NHWC data in NCHW's shape
                last.add(n.name)
            continue
        key = _twin_key(n)
        if key is not None and n.section == "bckwd":
            # the backward of a convolution or a batch norm reads the input its forward saved, in that layout
            # (the backward graph names it apart): its forward is the latest one of the same shapes not yet met
            fwd = twins.get(key)
            if fwd and fwd.pop() in last:
                last.add(n.name)
            continue
        if n.kind not in VIEW_OPS or n.kind in _LAYOUT_KEEPING:
            four = [a for a, t in zip(n.args, n.inputs, strict=False) if len(t.shape) == 4]
            if four and four[0] in last:
                last.add(n.name)
        if key is not None:
            twins.setdefault(key, []).append(n.name)
    return frozenset(last)


def _twin_key(n: Any) -> tuple[str, tuple[int, ...], tuple[int, ...]] | None:
    """A convolution's or a batch norm's (family, input shape, weight shape), the same for its forward and its
    backward."""
    backward = n.kind in ("convolution_backward", "native_batch_norm_backward")
    family = ("conv" if n.kind in ("conv2d", "convolution", "_convolution", "convolution_backward") else
              "bn" if n.kind in BN_STATS_KINDS | BN_BACKWARD_KINDS | {"_native_batch_norm_legit_no_training"}
              else None)
    first = 1 if backward else 0
    if family is None or len(n.inputs) < first + 2:
        return None
    return family, tuple(n.inputs[first].shape), tuple(n.inputs[first + 1].shape)


KV_PER_QUERY_HEAD = register(
    Constant("GPU_DECODE_KV_PER_QUERY_HEAD", True,
             "a serving engine's decode attention runs one thread block per query head, so a key/value head shared by "
             "g query heads (grouped-query attention) is read g times through the L2 cache, once from HBM: the step "
             "takes the longer of the two",
             "vLLM's paged_attention v1/v2 kernels (grid: query heads x sequences x partitions), vllm-project/vllm "
             "issue 15351 (2025): for 64 query and 8 KV heads the kernel moves over 800 MB between L1 and L2 for 64 MB "
             "of keys and values; the L2 bandwidth it meets is the catalog's (illustrative where the datasheet gives "
             "none)", False, (FAMILY,), when="serve"),
)[0]

register(  # the GEMM shape model's constants (accelkit.cost.gemm reads them)
    Constant("GEMM_TILES", ((128, 256, 1.0), (256, 128, 1.0), (128, 128, 0.9), (64, 128, 0.75), (128, 64, 0.75),
                            (64, 64, 0.55)),
             "a GPU GEMM runs on one of these thread-block tiles (rows, columns, rate relative to the largest): "
             "smaller tiles reuse each operand they load fewer times",
             "tile shapes: CUTLASS's Hopper/Ampere GEMM configurations; the relative rates are illustrative",
             True, (FAMILY,)),
    Constant("GEMM_K_STEP", 64, "a GEMM's thread block steps through K 64 elements at a time (16-bit inputs)",
             "CUTLASS's 16-bit GEMM tiles (128x256x64, 128x128x64)", False, (FAMILY,)),
    Constant("GEMM_LOOP_FILL_STEPS", 2,
             "each thread block spends about two K steps filling its pipeline and writing its tile, so a GEMM "
             "with a thin K runs below the rate",
             "illustrative: a multistage (software-pipelined) main loop's prologue and epilogue", True, (FAMILY,)),
    Constant("GEMM_SPLIT_K", (1, 2, 4),
             "a GEMM with too few tiles to fill the SMs may split K over several blocks (split-K)",
             "cuBLAS and CUTLASS split-K kernels", False, (FAMILY,)),
)


STACKS = (
    ("eager", "PyTorch eager: one kernel per op, issued by the host one by one; under a 16-bit precision, "
              "autocast over fp32 weights (casts, fp32 master weights and optimizer)"),
    ("compiled", "torch.compile: elementwise ops fused together, each matmul a library call (its pointwise "
                 "neighbours a kernel of their own), the step launched as one CUDA graph; under autocast, fp32 "
                 "weights cast to 16 bits every step"),
    ("engine", "a tuned serving engine (TensorRT-LLM, vLLM): fused kernels and CUDA graphs, weights converted "
               "to the serving precision"),
)


def matmul_rate(spec: AcceleratorSpec, precision: str) -> float:
    """FLOP/s a large, well-shaped matmul reaches at ``precision``: the peak x the chip's maximum achievable
    share (the best shape a brute-force search finds) x the share of that maximum an ordinary large GEMM keeps
    (``GPU_GEMM_OF_MAXIMUM``)."""
    frac = spec.matmul_efficiency if spec.matmul_efficiency is not None else MATMUL_FRACTION.value
    return spec.peak(precision) * frac * float(GEMM_OF_MAXIMUM.value)


def _shape_rate(spec: AcceleratorSpec, precision: str, gemm: GemmShape | None,
                attention: tuple[int, int] | None, conv: bool = False, padded: bool = True) -> float:
    """FLOP/s a GEMM (or attention) kernel of this shape reaches. ``padded``: the stack pads a matrix's rows to a
    multiple of 16 bytes (torch.compile's ``shape_padding``, a serving engine's padded vocabulary); eager PyTorch
    runs the shapes as they are, on the kernels their alignment allows."""
    base = matmul_rate(spec, precision)
    if attention is not None:
        return base * ATTENTION_FRACTION.value * attention_waves(attention[0], attention[1], spec.compute_units)
    if gemm is None:
        # no shape: the generic efficiency
        return base * value("COMPUTE_EFFICIENCY") / (MATMUL_FRACTION.value * float(GEMM_OF_MAXIMUM.value))
    return (base * gemm_fit(gemm, spec.compute_units).efficiency * (CONV_FRACTION.value if conv else 1.0)
            * (1.0 if padded else unaligned_share(gemm, precision)))


def unaligned_share(gemm: GemmShape, precision: str) -> float:
    """The share of its rate a GEMM keeps on the kernels its operands' alignment allows (1.0 when aligned)."""
    aligned_bytes = gemm.aligned * element_bytes(precision)
    if aligned_bytes >= 16 or (precision == "fp32" and FP32_SIMT.value):
        return 1.0
    for at_least, share in UNALIGNED.value:
        if aligned_bytes >= at_least:
            return float(share)
    return float(UNALIGNED.value[-1][1])


def boundary_bytes(k: Kernel, nodes: dict[str, Any], scale: float, param_shapes: WeightShapes,
                   elem: int = 2) -> float:
    """Bytes a fused kernel's GEMM sends through memory when the GEMM runs as a library call and the pointwise ops
    fused with it as a kernel of their own: the GEMM's output written and read back, and an input that a
    neighbour in the kernel produced, the same."""
    inside = [nodes[n] for n in k.nodes if n in nodes]
    mm = next((n for n in inside if n.kind in MATMUL_KINDS and n.kind not in ATTENTION_KINDS), None)
    if mm is None:
        return 0.0
    names = {n.name for n in inside}
    neighbours = [n for n in inside if n is not mm and n.kind not in VIEW_OPS and n.kind not in MATMUL_KINDS]
    if not neighbours:
        return 0.0

    def nbytes(t: Any, producer: str) -> float:  # a floating tensor at the program's precision (``elem`` bytes)
        size = t.numel * elem if t.dtype.startswith(("float", "bfloat")) else t.nbytes
        return float(size) * (1.0 if param_shapes.fixed(tuple(t.shape), producer) else scale)

    moved = 0.0
    if any(mm.name in n.args for n in neighbours) or any(mm.name in n.args for n in inside if n.kind in VIEW_OPS):
        moved += 2 * sum(nbytes(t, mm.name) for t in mm.outputs)
    flags = mm.param_inputs or [False] * len(mm.inputs)
    for producer, t, is_param in zip(mm.args, mm.inputs, flags, strict=False):
        if not is_param and producer in names:
            moved += 2 * nbytes(t, producer)
    return moved


def _kernel_shape(k: Kernel, nodes: dict[str, Any], scale: float,
                  param_shapes: WeightShapes) -> tuple[GemmShape | None, tuple[int, int] | None]:
    """The GEMM (or attention) a fused kernel's matmul node runs, at ``scale`` times the captured batch."""
    n = _matmul_node(k, nodes)
    if n is None:
        return None, None
    if n.kind in ATTENTION_KINDS:
        if n.inputs and len(n.inputs[0].shape) == 4:
            b, h, t, _d = n.inputs[0].shape
            return None, (max(1, round(b * h * scale)), t)
        return None, None
    return gemm_of(n, scale, param_shapes), None


def _matmul_node(k: Kernel, nodes: dict[str, Any]) -> Any:
    """The matmul-type node a fused kernel is built around; None where it has none (or the nodes are unknown)."""
    return next((nodes[name] for name in k.nodes if name in nodes and nodes[name].kind in MATMUL_KINDS), None)


def _broadcast_key_mask(n: Any, nodes: dict[str, Any]) -> bool:
    """True when attention node ``n`` gets a mask expanded from a single key column (stride 0 along the keys)."""
    mask = nodes.get(n.args[3]) if len(n.args) > 3 else None
    while mask is not None and mask.kind in ("to", "_to_copy", "contiguous") and mask.args:
        mask = nodes.get(mask.args[0])
    return (mask is not None and mask.kind == "expand" and bool(mask.inputs) and bool(mask.outputs)
            and len(mask.inputs[0].shape) >= 2 and mask.inputs[0].shape[-1] == 1 and mask.outputs[0].shape[-1] > 1)


def math_attention(graph: Any, nodes: dict[str, Any] | None = None) -> bool:
    """True when the model's attention runs on PyTorch's math path under torch.compile
    (``GPU_COMPILED_BROADCAST_MASK_MATH``): a forward attention whose mask is broadcast along the keys. ``nodes``:
    the graph's nodes by name, where the caller has them."""
    nodes = nodes if nodes is not None else {n.name: n for n in graph.nodes}
    return any(n.kind in ATTENTION_KINDS and _broadcast_key_mask(n, nodes) for n in graph.nodes if n.section == "fwd")


def _on_math_path(k: Kernel, nodes: dict[str, Any]) -> bool:
    """A kernel of the math attention: the forward attention itself, or a batched matmul of its backward (the
    captured backward of attention is two batched matmuls per product: nothing else in these models is a bmm)."""
    for name in k.nodes:
        n = nodes.get(name)
        if n is None:
            continue
        if n.kind in ATTENTION_KINDS:
            return _broadcast_key_mask(n, nodes)
        if n.kind == "bmm" and n.section == "bckwd":
            return True
    return False


def _scores_bytes(n: Any, scale: float) -> float:
    """Bytes the math path moves for an attention node's fp32 scores: written by the first matmul, read and written
    by the softmax, read by the second (four passes of batch x heads x queries x keys x 4 bytes)."""
    if n.kind not in ATTENTION_KINDS or len(n.inputs) < 2 or len(n.inputs[0].shape) != 4:
        return 0.0
    b, h, t, _d = n.inputs[0].shape
    keys = n.inputs[1].shape[-2]
    return 4 * 4 * b * h * t * keys * scale


def _upcast_bytes(n: Any, scale: float, elem: float) -> float:
    """Bytes the math path's casts move for an attention node run in ``elem``-byte precision: its 16-bit queries,
    keys and values each read and written back in fp32 (scaled and laid out for the batched matmuls), and its fp32
    output read and written back in 16 bits; none in fp32."""
    if n.kind not in ATTENTION_KINDS or len(n.inputs) < 3 or not n.outputs or elem >= 4:
        return 0.0
    qkv = sum(t.numel for t in n.inputs[:3]) * (elem + 4)
    return (qkv + n.outputs[0].numel * (4 + elem)) * scale


def _autocast_casts(graph: Any, section: str, precision: str, units: str, launch_s: float,
                    weights_bw: float) -> list[KernelTime]:
    """torch.compile under autocast (``GPU_COMPILED_AUTOCAST_CASTS``): a kernel per fp32 weight a forward matmul reads,
    cast to ``precision`` every step; in the backward, a kernel per such weight's gradient, cast back to fp32."""
    from accelkit.families.eager import _cast_weights

    low = element_bytes(precision)
    captured = max((DTYPE_BYTES.get(m.dtype, 4) for m in graph.params.values()), default=4)
    if low >= captured or section not in ("fwd", "bckwd"):
        return []
    if section == "bckwd" and not any(n.section == "bckwd" for n in graph.nodes):
        return []
    weights = _cast_weights(graph)
    if not weights:
        return []
    nbytes = sum(numel for _, numel in weights) * (captured + low)
    memory = nbytes / weights_bw
    launches = launch_s * len(weights)
    t = memory + launches
    return [KernelTime("autocast casts (fp32 weights to 16 bits)" if section == "fwd" else
                       "autocast casts (16-bit gradients to fp32)", "<autocast>", section, f"{len(weights)} casts",
                       units, 0, int(nbytes), 0.0, memory, 0.0, launches, t,
                       "memory" if memory > launches else "latency", 0.0)]


def host_issue_s(op: EagerOp) -> float:
    """What issuing ``op`` costs the host in eager PyTorch."""
    if not op.runs_kernel:
        return float(EAGER_VIEW.value)
    if op.kind == "_to_copy" and op.kernel == "casts":
        return float(EAGER_CAST.value)
    return float(EAGER_OP.value) + (float(EAGER_CUDNN.value) if op.kind in CONVOLUTIONS else 0.0)


CONVOLUTIONS = frozenset({"conv1d", "conv2d", "conv3d", "convolution", "_convolution", "convolution_backward",
                          "conv_transpose1d", "conv_transpose2d"})


class GpuModel(ExecutionModel):
    family = FAMILY
    modes = ("hbm",)
    launch = KERNEL_LAUNCH
    collective = COLLECTIVE
    shades = ("#2ca02c", "#98df8a", "#1a6b1a", "#5fd35f", "#4a9a7a", "#00a36c")  # a100 ... mi300x, catalog order
    vector_at_fp32_peak = True  # elementwise work runs on the CUDA cores at the fp32 rate
    model_split = "tensor"  # Megatron-style tensor parallelism over NVLink
    stacks = STACKS
    # the loop copies the next batch while this step computes, so the host link shows only when it is the bound
    host_io = HostIO(HOST_TRANSFER, overlapped=True, loop="a training loop's DataLoader with pin_memory and non_blocking copies, or DALI")
    compile_stack = "compiled"  # ak.compile: a compiled program (torch.compile), comparable with the vendors'
    session_stack = "eager"  # ak.Session: a learner's own training loop runs eager PyTorch
    serve_stack = "engine"

    def kv_read_s(self, kv_bytes: float, tier: str, r: Rates, *, group: int, stack: str) -> float:
        """A decode step's read of the KV cache: from ``tier`` once, and through the on-chip cache (the first tier)
        once per query head (``GPU_DECODE_KV_PER_QUERY_HEAD``), whichever takes longer."""
        once = kv_bytes / r.tier_bw[tier]
        cache = next(iter(r.tier_bw))
        if not KV_PER_QUERY_HEAD.value or group <= 1 or cache == tier:
            return once
        return max(once, group * kv_bytes / r.tier_bw[cache])

    def rates(self, spec: AcceleratorSpec, precision: str, measured: Any = None) -> Rates:
        """The family's rates, its matmul rate the chip's measured ceiling (what a large, well-shaped GEMM
        reaches; a kernel's own shape sets how close it gets)."""
        r = super().rates(spec, precision, measured)
        return replace(r, matmul_flops=matmul_rate(spec, precision))

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        prog = ctx.program
        stack = self.stack(getattr(prog, "stack", None) or None)  # an older artifact: compile's default
        if stack == "eager" and prog is not None and getattr(prog, "graph", None) is not None:
            return self._eager(kernels, ctx)
        kts = self._fused(kernels, ctx)
        return Timed(kts, sum(k.time_s for k in kts))

    # ---- compiled and engine: the compiler's fused kernels, each at its shape's rate
    def _fused(self, kernels: list[Kernel], ctx: TimingContext) -> list[KernelTime]:
        spec, r, plan, prog = ctx.spec, ctx.rates, ctx.plan, ctx.program
        w, a = plan.placement["weights"], plan.placement["activation"]
        o = plan.placement.get("optimizer")
        units = f"{spec.compute_units} {spec.unit_name or 'units'}"
        graph = getattr(prog, "graph", None)
        nodes = {n.name: n for n in graph.nodes} if graph is not None else {}
        param_shapes = WeightShapes.of(graph) if graph is not None else WeightShapes(frozenset())
        precision = prog.precision if prog is not None else "bf16"
        compiled = self.stack(getattr(prog, "stack", None) or None) == "compiled"
        library_gemms = compiled and LIBRARY_GEMMS.value
        math = compiled and MASK_MATH.value and graph is not None and math_attention(graph, nodes)
        fp32_rate = spec.peak_flops.get("fp32", 0.0) * FP32_MATMUL.value
        out = []
        for k in kernels:
            c, m = roofline(k, r, w, a, tensor=ctx.tensor, act_tensor=ctx.act_tensor, opt_tier=o, spill=ctx.spill)
            apart = 0.0  # the time of the pointwise neighbours a library GEMM leaves to a kernel of their own
            if k.kind == "matmul" and k.flops and nodes:
                gemm, attention = _kernel_shape(k, nodes, ctx.scale, param_shapes)
                if math and fp32_rate and _on_math_path(k, nodes):
                    # PyTorch's math attention: the fp32 scores through memory; the forward's batched matmuls in fp32
                    # on the CUDA cores, after its 16-bit inputs are cast up (kernels of their own: the time adds);
                    # the backward's on the tensor cores (GPU_COMPILED_MATH_BACKWARD_TENSOR_CORES)
                    scores = sum(_scores_bytes(nodes[n], ctx.scale) for n in k.nodes if n in nodes)
                    m += scores / ctx.act_tensor / r.tier_bw[a]
                    if k.section == "bckwd" and MATH_BACKWARD_TC.value:
                        rate = _shape_rate(spec, precision, gemm, attention, False) * k.efficiency
                        out.append(kernel_time(k, units, k.flops / ctx.tensor / rate, m, 0.0, 4 * r.launch_s,
                                               ctx.peak * ctx.tensor))
                        continue
                    casts = sum(_upcast_bytes(nodes[n], ctx.scale, element_bytes(precision)) for n in k.nodes if n in nodes)
                    apart = casts / ctx.act_tensor / r.tier_bw[a]
                    c = k.flops / ctx.tensor / fp32_rate
                    out.append(kernel_time(k, units, c, m + apart, 0.0, 5 * r.launch_s, ctx.peak * ctx.tensor,
                                           time=max(c, m) + apart + 5 * r.launch_s))
                    continue
                conv = any(op in CONVOLUTIONS for op in k.ops)
                # torch.compile pads activations to aligned shapes, not a weight's gradient (the weight's own shape)
                node = _matmul_node(k, nodes) if compiled and UNPADDED_WEIGHT_GRADS.value else None
                padded = not (node is not None and not conv and weight_grad(node, param_shapes))
                rate = _shape_rate(spec, precision, gemm, attention, conv, padded=padded) * k.efficiency
                c = k.flops / ctx.tensor / rate
                if compiled and conv:  # torch.compile lays the network out channels last: cuDNN's depthwise kernels
                    c = max(c, sum(cudnn_depthwise_s(nodes[n], ctx.scale, spec) for n in k.nodes if n in nodes)
                            / ctx.tensor)
                if library_gemms and attention is None:
                    apart = boundary_bytes(k, nodes, ctx.scale, param_shapes, element_bytes(precision)) / r.tier_bw[a]
            if apart:
                out.append(kernel_time(k, units, c, m + apart, 0.0, 2 * r.launch_s, ctx.peak * ctx.tensor,
                                       time=max(c, m) + apart + 2 * r.launch_s))
            else:
                out.append(kernel_time(k, units, c, m, 0.0, r.launch_s, ctx.peak * ctx.tensor))
        # Megatron-style tensor parallelism (how accelkit splits a model over GPUs) is Megatron-LM's own framework,
        # which holds the model in 16 bits (Float16Module): no autocast casts there
        if compiled and COMPILED_CASTS.value and graph is not None and kernels and ctx.tensor <= 1:
            out += _autocast_casts(graph, kernels[0].section, precision, units, r.launch_s, r.tier_bw[w])
        return out

    # ---- eager: every op its own kernel, issued by the host
    def _eager(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        spec, r, prog = ctx.spec, ctx.rates, ctx.program
        section = kernels[0].section if kernels else "fwd"
        act_bw = r.tier_bw[ctx.plan.placement["activation"]]
        w_tier = ctx.plan.placement["weights"]
        spill = ctx.spill

        def weights_s(nbytes: float) -> float:  # weights that did not fit stream from the slower tier
            if spill is None or w_tier != spill.on_chip:
                return nbytes / r.tier_bw[w_tier]
            return nbytes * spill.resident / r.tier_bw[w_tier] + nbytes * (1 - spill.resident) / r.tier_bw[spill.tier]
        elem = element_bytes(prog.precision)
        captured = max((DTYPE_BYTES.get(m.dtype, 4) for m in prog.graph.params.values()), default=4)
        autocast = elem < captured
        if section == "opt":  # the optimizer: PyTorch's multi-tensor (foreach / fused) update, fp32 state
            updates = self._fused(kernels, ctx)
            host = EAGER_OP.value * 10  # a handful of multi-tensor launches per step
            return Timed(updates, max(host, sum(k.time_s for k in updates)))
        ops = eager_ops(prog.graph, kernels, scale=ctx.scale, low_bytes=elem, autocast=autocast, section=section)
        precision = prog.precision if prog.precision in spec.peak_flops else "fp32"
        t_ = ctx.tensor

        def parts(op: EagerOp) -> tuple[float, float]:
            if op.flops and (op.gemm is not None or op.attention is not None):
                c = op.flops / t_ / _shape_rate(spec, precision, op.gemm, op.attention, op.kind in CONVOLUTIONS,
                                                padded=False)
            else:
                c = op.flops / t_ / r.vector_flops
            sm = access_Bps(spec, op.access)
            return c, op.act_bytes / ctx.act_tensor / (min(act_bw, sm) if sm else act_bw) + weights_s(op.param_bytes / t_)

        graph = prog.graph
        by_name = {n.name: n for n in graph.nodes}
        nhwc = channels_last_nodes(graph)
        # PyTorch's own NCHW kernels: batch norm in bf16 (cuDNN's take fp32 and fp16), depthwise convolutions in
        # bf16, fp32 and tf32 (cuDNN's for fp16); a channels-last tensor goes to cuDNN
        native_bn = prog.precision == "bf16"
        native_dw = prog.precision in ("bf16", "fp32", "tf32")

        def nchw(node: Any) -> bool:  # a convolution or batch norm (or its backward) on NCHW images
            return node.name not in nhwc

        native: dict[str, float] = {}  # the GPU time of PyTorch's own NCHW kernels, by the layer kind they run
        unaligned = [0.0]  # the GPU time of GEMMs on the narrow kernels their rows' alignment allows

        def gpu_time(op: EagerOp) -> float:
            c, m = parts(op)
            node = by_name.get(op.name)
            if node is None:
                return max(c, m) + r.launch_s
            if native_bn and nchw(node) and (op.kind in BN_BACKWARD_KINDS or (op.kind in BN_STATS_KINDS
                                                                           and op.section == "fwd")):
                if op.kind in BN_BACKWARD_KINDS:
                    t = max(c, m, nchw_batch_norm_s(node, ctx.scale / t_, spec.compute_units))
                    native["batch norms"] = native.get("batch norms", 0.0) + t
                    return t + r.launch_s
                x = node.inputs[0].shape if node.inputs else ()
                planes = x[0] * x[1] * ctx.scale / t_ if len(x) == 4 else 0.0
                # the normalizing pass (its bytes: the op's memory time, read once more for the statistics in
                # training) plus a fixed cost per plane; the statistics kernel's own time before it in training
                apply = m + _sm_cycles_s(planes * float(NCHW_BN_APPLY.value), spec)
                stats = nchw_batch_norm_s(node, ctx.scale / t_, spec.compute_units) if graph.training else 0.0
                native["batch norms"] = native.get("batch norms", 0.0) + max(c, stats + apply)
                return max(c, stats + apply) + r.launch_s
            if native_dw and op.kind in CONV_KINDS and nchw(node):
                dw = depthwise_s(node, ctx.scale / t_, spec)
                if dw:
                    native["depthwise convolutions"] = native.get("depthwise convolutions", 0.0) + max(m, dw)
                    return max(m, dw) + r.launch_s
            elif op.kind in CONV_KINDS:  # cuDNN's depthwise kernels: channels-last images, or fp16
                dw = cudnn_depthwise_s(node, ctx.scale / t_, spec)
                if dw:  # the kernel's own measured rate, not a GEMM's over a group's single channel
                    return max(m, dw) + r.launch_s
            if op.kind in LAYER_NORM_KINDS and node.inputs and node.inputs[0].shape:
                rows = node.inputs[0].numel / max(1, node.inputs[0].shape[-1]) * ctx.scale / t_
                return max(c, m, _sm_cycles_s(rows * float(LAYER_NORM_ROW.value), spec)) + r.launch_s
            if (op.gemm is not None and op.kind not in CONV_KINDS and c > m
                    and unaligned_share(op.gemm, precision) < 1.0):
                unaligned[0] += c
            return max(c, m) + r.launch_s

        issued = issue(ops, gpu_time, host_issue_s)
        units = f"{spec.compute_units} {spec.unit_name or 'units'}"
        kts = kernel_times(ops, issued, kernels, section=section, parts=parts, units=lambda _run: units,
                           launch_s=r.launch_s, peak=ctx.peak * t_)
        spent: tuple[tuple[str, float], ...] = ()
        if native:
            spent = ((f"{' and '.join(sorted(native))} on NCHW images run on PyTorch's own kernels in eager "
                      f"{prog.precision}, well below the memory's rate; channels-last images and weights "
                      "(`model.to(memory_format=torch.channels_last)`, the same for each batch) hand them to cuDNN",
                      sum(native.values())),)
        if unaligned[0]:
            spent += ((f"matmuls whose rows are not a multiple of 16 bytes (an odd vocabulary, 50,257 words in GPT-2) run "
                       f"on narrower tensor-core kernels in eager {prog.precision} (GPU_GEMM_UNALIGNED); padding that "
                       "dimension to a multiple of 8 elements (nanoGPT pads GPT-2's vocabulary to 50,304) runs them at "
                       "the full rate", unaligned[0]),)
        return Timed(kts, issued.step_s, host_events=host_events(issued), spent=spent)


MODEL = GpuModel()
