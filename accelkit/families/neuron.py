"""NeuronCore (AWS Inferentia2, Trainium): the Neuron compiler (neuronx-cc) turns the graph's supported ops into
kernels for the chip's NeuronCores, each a Tensor Engine (a systolic array for matmuls and convolutions) beside
Vector, Scalar and GpSimd engines, fed from HBM through an on-chip state buffer. A kernel is bound by its
engine's rate or by HBM; a matmul fills the 128 x 128 Tensor Engine as far as its shape allows. Ops outside the
Neuron operator list do not compile: ``ak.compile(..., fallback="host")`` runs them on the host CPU and pays the
transfers both ways, as the Neuron runtime's CPU partitions do."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from accelkit.constants import HOST_TRANSFER, Constant, register, value
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import Rates, kernel_time, roofline
from accelkit.cost.report import KernelTime
from accelkit.families.base import CompileCost, ExecutionModel, HostIO, Timed, TimingContext
from accelkit.hardware.spec import AcceleratorSpec

FAMILY = "neuron"

_ARCH = ("AWS Neuron docs, 'NeuronCore-v2 Architecture' "
         "(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/neuron-core-v2.html)")

PE_WIDTH, VECTOR_FLOPS, KERNEL_OVERHEAD, STAGING, AUTOCAST = register(
    Constant("NEURON_PE_WIDTH", 128,
             "a NeuronCore-v2 Tensor Engine multiplies 128 x 128 tiles: a layer whose contraction or output features "
             "do not fill whole tiles leaves the rest of the array idle",
             "AWS Neuron docs, 'Trainium/Inferentia2 Architecture Guide for NKI' "
             "(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/arch/trainium_inferentia2_arch.html): the "
             "TensorEngine's systolic array and its 128-partition tiles", False, (FAMILY,)),
    Constant("NEURON_VECTOR_FLOPS_PER_CORE", 5.2e12,
             "elementwise work and reductions run on a NeuronCore-v2's Vector (2.3 TFLOP/s fp32) and Scalar "
             "(2.9 TFLOP/s fp32) engines together: 5.2 TFLOP/s per core",
             _ARCH + ": 'ScalarEngine ... delivers 2.9 TFLOPS of FP32', 'VectorEngine ... delivers 2.3 TFLOPS of FP32'",
             False, (FAMILY,)),
    Constant("NEURON_KERNEL_OVERHEAD_S", 2e-6,
             "each kernel of a Neuron program costs 2 µs of fixed overhead (instruction fetch, semaphores between "
             "engines, DMA descriptors)",
             "AWS publishes no per-kernel figure; the Neuron runtime launches one compiled program (NEFF) per step, "
             "so this is far below a GPU's per-kernel launch", True, (FAMILY,)),
    Constant("NEURON_WEIGHT_STAGING", "weights + compute",
             "a kernel's weights are staged from HBM into the state buffer before its engines use them, so a kernel "
             "takes its weight read plus its compute (activations stream in alongside); with at least one sample per "
             "NeuronCore, each core runs its own copy of the model (torch-neuronx DataParallel) and reads its own "
             "weights",
             "no vendor figure for the overlap; with it, AWS's own BERT benchmarks (inf2 BERT-base and BERT-Large "
             "inference, trn1 BERT-Large pretraining; accelkit.validate) are within 1.25x, without it 1.3-1.5x "
             "too fast", True, (FAMILY,)),
    Constant("NEURON_AUTOCAST", "matmult -> bf16",
             "an fp32 program's matrix multiplications run at the bf16 rate: neuronx-cc casts them by default",
             "AWS Neuron docs, neuronx-cc command-line reference "
             "(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/neuronx-cc/api-reference-guide/"
             "neuron-compiler-cli-reference-guide.html): --auto-cast defaults to matmult, --auto-cast-type to bf16",
             False, (FAMILY,)),
)


def _engine(k: Kernel) -> str:
    return "Tensor Engine" if k.kind == "matmul" else "Vector/Scalar engines" if k.flops else "DMA"


class NeuronModel(ExecutionModel):
    stacks = (("neuronx", "torch-neuronx: the model traced and compiled by neuronx-cc into a NEFF; ops it does not support run on the host CPU"),)
    family = FAMILY
    matrix_unit = "NEURON_PE_WIDTH"
    modes = ("hbm",)  # weights and activations in HBM, staged through the state buffer kernel by kernel
    launch = KERNEL_OVERHEAD
    host_io = HostIO(HOST_TRANSFER, loop="steps the NeuronCores run per call of the traced model")
    shades = ("#e377c2", "#f7b6d2", "#a1306e")
    diagram = "neuroncores"
    compile_cost = CompileCost(60.0, 0.5, "a NEFF (Neuron Executable File Format), cached by neuronx-cc")
    model_split = "tensor"  # neuronx-distributed shards each layer over NeuronCores (tensor parallel)
    lane_label = "{units}"

    def rates(self, spec: AcceleratorSpec, precision: str, measured: Any = None) -> Rates:
        """The datasheet peak for the Tensor Engine (an fp32 program's matmuls at the bf16 rate: neuronx-cc's
        default autocast); the Vector and Scalar engines' published fp32 rate for everything else."""
        r = super().rates(spec, precision, measured)
        matmul = self.peak(spec, precision) * value("COMPUTE_EFFICIENCY")
        vec = value("NEURON_VECTOR_FLOPS_PER_CORE") * spec.compute_units * value("COMPUTE_EFFICIENCY")
        return replace(r, matmul_flops=matmul, vector_flops=min(matmul, vec))

    def peak(self, spec: AcceleratorSpec, precision: str) -> float:
        return spec.peak("bf16") if precision == "fp32" and "bf16" in spec.peak_flops else spec.peak(precision)

    def lane(self, k: KernelTime) -> str:
        return k.units.split(" x")[0]

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        r, plan = ctx.rates, ctx.plan
        w, a = plan.placement["weights"], plan.placement["activation"]
        cores = ctx.spec.compute_units
        # one copy of the model per NeuronCore when every core gets a sample (DataParallel), else one shared copy
        copies = cores if ctx.tensor == 1 and ctx.samples >= cores else 1
        out = []
        for k in kernels:
            c, act = roofline(replace(k, param_bytes=0, bytes_read=k.bytes_read - k.param_bytes), r, w, a,
                              tensor=ctx.tensor, act_tensor=ctx.act_tensor, opt_tier=plan.placement.get("optimizer"),
                              spill=ctx.spill)
            stage = roofline(replace(k, flops=0, bytes_read=k.param_bytes, bytes_written=0), r, w, a,
                             tensor=ctx.tensor, spill=ctx.spill)[1] * copies if k.section != "opt" else 0.0
            if k.kind == "matmul":
                c /= self.tile_fill(k)
            if k.section == "opt":  # an update reads and writes its state where it lives, as on every chip
                c, act = roofline(k, r, w, a, tensor=ctx.tensor, act_tensor=ctx.act_tensor,
                                  opt_tier=plan.placement.get("optimizer"), spill=ctx.spill)
            t = max(c, act) + stage + r.launch_s
            out.append(kernel_time(k, f"{_engine(k)} x{cores} NeuronCores", c, act + stage, 0.0, r.launch_s,
                                   ctx.peak * ctx.tensor, time=t))
        return Timed(out, sum(k.time_s for k in out))


MODEL = NeuronModel()
