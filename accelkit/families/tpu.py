"""Systolic arrays on a torus (Google TPU): XLA compiles the whole step into one program of fused kernels.

Each fused kernel (an XLA fusion: a matmul with the elementwise work around it) runs on the chip's 128 x 128
systolic matrix units (MXUs), from HBM: a roofline per fusion, the matmul at the share of the MXUs its
layer's contraction and output features fill, plus a small fixed cost per fusion (the program is launched
once; there is no host launch per kernel). Chips exchange data over the inter-chip interconnect (ICI), a 2-D
(v5e) or 3-D (v4) torus: an all-reduce runs a bidirectional ring along every axis of the slice at once, and
pays a hop per ring step.

Where the seeds' argument has GPUs scale out by data parallelism and split a model only when it must, the
TPU is the exception: its pods are built for model parallelism. XLA's SPMD partitioner (GSPMD, Mesh
TensorFlow before it) shards each layer's matrices over the torus axes, so a model too big for one chip is
split layer by layer (tensor parallel, ``model_split``), as PaLM 540B was on 6,144 TPU v4 chips.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from accelkit.constants import HOST_TRANSFER, Constant, register
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import Rates, kernel_time, roofline
from accelkit.families.base import CompileCost, ExecutionModel, HostIO, Timed, TimingContext
from accelkit.families.placement import Placement, Region
from accelkit.hardware.spec import AcceleratorSpec

FAMILY = "systolic-torus"

FUSION_OVERHEAD, ICI_HOP, _, MATMUL_EFFICIENCY = register(
    Constant("TPU_FUSION_OVERHEAD_S", 1e-6,
             "each XLA fusion on a TPU costs 1 µs of fixed overhead (pipeline fill and DMA set-up); the step is "
             "one compiled program, so no kernel pays a host launch",
             "Google publishes no per-fusion figure", True, (FAMILY,)),
    Constant("TPU_ICI_HOP_S", 1e-6,
             "each step of an all-reduce ring over the TPU's inter-chip torus costs a 1 µs hop",
             "Austin et al., 'How to Scale Your Model' (Google DeepMind 2025), part 2: the latency of each ICI "
             "hop is about 1 µs", False, (FAMILY,), when="multi-chip"),
    Constant("TPU_MXU_WIDTH", 128,
             "a TPU's matrix units are 128 x 128 systolic arrays: a layer whose contraction or output features do "
             "not fill whole 128-wide tiles leaves the rest idle (XLA pads them to 128)",
             "Cloud TPU system architecture documentation: each MXU is a 128 x 128 systolic array; Austin et al., "
             "'How to Scale Your Model' part 2: weight matrices are padded to at least 128 in both dimensions",
             False, (FAMILY,)),
    Constant("TPU_MATMUL_EFFICIENCY", 0.89,
             "XLA's large fused matmuls keep the MXUs 89% busy (of the chip's bf16 peak); a catalog entry that "
             "gives the chip's own measured matmul ceiling (matmul_efficiency) takes that instead",
             "derived from Google's published MaxText run of its 32B model on one TPU v5e-256 (AI-Hypercomputer/"
             "maxtext, MaxText/configs/v5e/README.md: 132 TFLOP/s per chip, 66.86% MFU, counted as MaxText counts "
             "model FLOPs; configs/v5e/32b.sh: remat_policy=full, so the hardware also runs the forward a second "
             "time: 132 x 4/3 = 176 of 197 TFLOP/s, 0.89). Every other overhead of that step (the FSDP all-gathers, "
             "memory-bound fusions) only adds time, so the MXUs ran at least this busy; the 16B row of the same "
             "table checks it. The cross-family COMPUTE_EFFICIENCY (0.55, from GPUs at scale) made every TPU "
             "training step 35-40% too slow", False, (FAMILY,)),
)


def torus_shape(n: int, dims: int) -> tuple[int, ...]:
    """The slice of ``n`` chips a ``dims``-D torus gives (as even as its factors allow, longest axis first):
    8 chips of a 3-D torus are 2 x 2 x 2, 8 of a 2-D torus 4 x 2, 256 of a 2-D torus 16 x 16."""
    shape = [1] * max(1, dims)
    rest, f = n, 2
    factors = []
    while rest > 1:  # prime factors, largest first, each onto the shortest axis so far
        while rest % f == 0:
            factors.append(f)
            rest //= f
        f += 1
    for p in sorted(factors, reverse=True):
        shape[shape.index(min(shape))] *= p
    return tuple(sorted(shape, reverse=True))


def torus_allreduce_s(nbytes: float, n: int, r: Rates, dims: int) -> float:
    """An all-reduce of ``nbytes`` over ``n`` chips of a ``dims``-D torus: a bidirectional ring along every
    axis of the slice at once, so each chip sends ``2 (n-1)/n`` of the data over the links of the axes the
    slice spans (two per axis, one each way; an axis of length 1 leaves its links idle), plus one ICI hop per
    ring step (reduce-scatter then all-gather: ``2 (d-1)`` steps on an axis of ``d`` chips)."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    shape = torus_shape(n, dims)
    axes = [d for d in shape if d > 1]
    per_axis = r.link_Bps / max(1, dims)  # r.link_Bps: every link of the chip, one direction
    bandwidth = per_axis * len(axes)
    hops = sum(2 * (d - 1) for d in axes)
    return 2 * (n - 1) / n * nbytes / bandwidth + hops * r.hop_s + r.collective_s


class TpuModel(ExecutionModel):
    stacks = (("xla", "PyTorch/XLA or JAX: the step traced into one XLA program, fused and compiled for the TPU"),)
    family = FAMILY
    matrix_unit = "TPU_MXU_WIDTH"
    modes = ("hbm",)
    launch = FUSION_OVERHEAD
    # the loop copies the next batch while this step computes, so the host link shows only when it is the bound
    host_io = HostIO(HOST_TRANSFER, overlapped=True, loop="XLA's infeed queue is filled by the host while the TPU runs the step")
    hop = ICI_HOP
    shades = ("#17becf", "#9edae5", "#0e7c87")
    diagram = "torus"
    lane_label = "{units}"  # one timeline lane for the MXUs, one for the vector units
    compile_cost = CompileCost(20.0, 0.02, "an XLA executable (the step's HLO compiled for the TPU; cached by "
                                            "the persistent compilation cache)")
    model_split = "tensor"  # GSPMD shards each layer's matrices over the torus axes

    def tile_fill(self, k: Kernel, tensor: int = 1) -> float:
        """The share of the 128 x 128 MXUs a matmul kernel keeps busy; with ``tensor``-way tensor parallelism
        each chip holds 1/tensor of the output features, so that is what fills its MXUs."""
        dims = k.matmul_dims if k.kind == "matmul" else None
        if dims and tensor > 1:
            contraction, features = dims
            k = replace(k, matmul_dims=(contraction, max(1, math.ceil(features / tensor))))
        return super().tile_fill(k)

    def allreduce_s(self, nbytes: float, n: int, r: Rates, spec: AcceleratorSpec) -> float:
        return torus_allreduce_s(nbytes, n, r, spec.torus_dims or 2)

    def rates(self, spec: AcceleratorSpec, precision: str, measured: Any = None) -> Rates:
        """The family's rates, its matmuls at the share of the MXUs' peak XLA's fused matmuls reach
        (``TPU_MATMUL_EFFICIENCY``, or the chip's own measured ceiling where its catalog entry has one)."""
        r = super().rates(spec, precision, measured)
        share = spec.matmul_efficiency if spec.matmul_efficiency is not None else float(MATMUL_EFFICIENCY.value)
        return replace(r, matmul_flops=spec.peak(precision) * share)

    @staticmethod
    def _units(k: Kernel, spec: AcceleratorSpec) -> str:
        units = dict(spec.functional_slices or {})
        if k.kind == "matmul":
            return f"{units.get('MXU', spec.compute_units)} MXUs"
        return f"{units.get('VPU', spec.compute_units)} vector unit{'s' if units.get('VPU', 1) != 1 else ''}"

    def place(self, kernels: list[Kernel], spec: AcceleratorSpec, plan: Any, *, chips: int, pipeline: int = 1,
              precision: str | None = None) -> Placement:
        """XLA's fusions run one after another in one compiled program, each on every TensorCore of the chip
        (v4's two TensorCores act as one 'megacore'): matmuls on the MXUs, the rest on the vector units."""
        regions = tuple(Region(k.name, (k.name,), 0, 0, i, 1, 1, spec.compute_units, slice=self._units(k, spec),
                               section=k.section) for i, k in enumerate(kernels))
        notes: tuple[str, ...] = (
            "XLA compiles the step into one program; its fusions run one after another on every TensorCore",
            f"matmuls fill 128 x 128 MXUs by the layer's shape; {len(kernels)} fusions, no host launch each")
        if chips > 1:
            notes += (f"{chips} chips on a {' x '.join(map(str, torus_shape(chips, spec.torus_dims or 2)))} "
                      "slice of the ICI torus",)
        return Placement(self.family, (1, max(1, len(kernels))), regions, chips, spec.unit_name or "TensorCore",
                         notes)

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        spec, r, plan = ctx.spec, ctx.rates, ctx.plan
        w, a = plan.placement["weights"], plan.placement["activation"]
        o = plan.placement.get("optimizer")
        out = []
        for k in kernels:
            c, m = roofline(k, r, w, a, tensor=ctx.tensor, act_tensor=ctx.act_tensor, opt_tier=o, spill=ctx.spill)
            c /= self.tile_fill(k, ctx.tensor)  # XLA pads the layer's dims to whole 128 x 128 tiles
            out.append(kernel_time(k, self._units(k, spec), c, m, 0.0, r.launch_s, ctx.peak * ctx.tensor))
        return Timed(out, sum(k.time_s for k in out))


MODEL = TpuModel()
