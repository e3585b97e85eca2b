"""The performance model's constants: few, named, explained, each with its source.

Everything else the model uses comes from the chip's spec (peak FLOP/s per precision, memory
tiers and their bandwidths, links, clock) and from the compiled program (FLOPs and bytes per
kernel, the memory plan, the placement). There are no per-model or per-case corrections.
"""

from __future__ import annotations

# Fraction of peak FLOP/s that dense matmul-type kernels reach in practice. Large-model training
# reaches 40–55% of A100 peak (163 TFLOP/s of 312 on a 1 T model, 52%: Narayanan et al. 2021,
# arXiv 2104.04473); the same fraction is used for every chip, since vendors publish no better
# per-chip figure.
COMPUTE_EFFICIENCY = 0.55

# Fraction of a memory tier's peak bandwidth that streaming kernels reach. SambaNova reports
# >75% of peak bandwidth during decode on 8–16 RDUs (DAC 2025 talk); the SN40L Llama-3-70B
# measurement in LLM-Inference-Bench implies ~85% (shared/reference/hardware_facts.md);
# STREAM-like copies on HBM GPUs typically reach 80–90%.
BANDWIDTH_EFFICIENCY = 0.8

# Vector (elementwise, normalisation, softmax) work runs on vector units, not the matrix
# engines. Where a chip publishes an fp32 peak we use it for vector work (on GPUs that is the
# CUDA-core rate); otherwise a quarter of the 16-bit peak (illustrative).
VECTOR_FRACTION_OF_16BIT_PEAK = 0.25

# Fixed cost of starting one unit of work, per family: a GPU kernel launch (a few µs on A100/H100,
# NVIDIA Nsight traces; CUDA graphs remove part of it), a CPU op dispatch in eager PyTorch (measured
# on this host by ak.hardware.calibrate() when available), an RDU section switch, a wafer region
# hand-off, an IPU superstep's sync, a TSP instruction block. Only the GPU figure has a public basis;
# the others are illustrative.
LAUNCH_OVERHEAD_S = {
    "gpu": 4e-6,
    "cpu": 8e-6,
    "reconfigurable-dataflow": 4e-6,
    "wafer-dataflow": 1.5e-6,
    "bsp-tiles": 1e-6,
    "static-schedule": 0.0,  # compiler-scheduled: no runtime dispatch at all
}

# A TSP instruction streams its operands across the chip's slices before results emerge: a fixed
# number of cycles per kernel on top of its compute (illustrative: ~100 cycles at 900 MHz; the ISCA
# 2020 paper describes the stream pipeline but publishes no single figure).
TSP_STREAM_CYCLES = 100

# Latency of one hop between chips (a collective step, a pipeline hand-off). Illustrative: 2 µs is
# typical of NVLink/IPU-Link/Ethernet-class links; no vendor publishes a comparable figure.
CHIP_HOP_LATENCY_S = 2e-6

# Where a spec gives no chip-to-chip bandwidth, assume PCIe Gen4 x16 (32 GB/s per direction).
DEFAULT_LINK_BPS = 32e9

ASSUMPTIONS = [
    f"dense matmul-type kernels reach {COMPUTE_EFFICIENCY:.0%} of the chip's peak FLOP/s "
    "(Narayanan et al. 2021: 52% of A100 peak at scale)",
    f"memory tiers deliver {BANDWIDTH_EFFICIENCY:.0%} of their peak bandwidth (SambaNova: >75% in decode; "
    "STREAM-like on HBM: 80–90%)",
    "vector work runs at the chip's fp32 peak where published, else a quarter of its 16-bit peak (illustrative)",
    "each unit of work costs a fixed launch overhead per family (GPU 4 µs from kernel traces; others illustrative)",
    f"a chip-to-chip hop costs {CHIP_HOP_LATENCY_S * 1e6:.0f} µs of latency plus bytes / link bandwidth (illustrative)",
    "ring all-reduce moves 2 (n-1)/n of the data over each chip's links",
    "FLOPs come from PyTorch's flop registry (matmul-type ops) and accelkit's vector-op model; bytes from tensor shapes",
]
