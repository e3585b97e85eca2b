"""Gaudi (Intel Gaudi 2 and Gaudi 3, the "HPU"): two kinds of engine beside HBM. Matrix Multiplication Engines
(MME) do everything that lowers to a matrix multiplication (linear layers, convolutions, batched GEMM); a cluster of
programmable Tensor Processor Cores (TPC, VLIW SIMD) does everything else. The Habana graph compiler takes the whole
graph (lazy mode or torch.compile's hpu_backend), fuses the TPC ops, and launches it as one compiled recipe, so a step
pays one launch, not one per kernel as eager mode would. A matmul fills the MMEs as far as its shape allows (the
256 x 256 output-stationary array); a kernel is bound by its engine's rate or by HBM. Chips talk over on-die RoCE
(RDMA over Ethernet) ports, the same Ethernet inside a server and across racks: inside a server of 8 cards each pair
is joined by 3 of the 24 ports, so a collective's bandwidth grows with the cards it spans. Ops the PyTorch bridge has no kernel
for run on the host CPU, as ``ak.compile(..., fallback="host")`` models."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from accelkit.constants import HOST_TRANSFER, Constant, register, value
from accelkit.cost.gemm import GemmShape
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import Rates, kernel_time, roofline
from accelkit.cost.report import KernelTime
from accelkit.families.base import CompileCost, ExecutionModel, HostIO, Timed, TimingContext
from accelkit.families.eager import EagerOp, eager_ops, host_events, issue, kernel_times
from accelkit.graph.ir import DTYPE_BYTES
from accelkit.hardware.precision import element_bytes
from accelkit.hardware.spec import AcceleratorSpec

FAMILY = "gaudi"

_WHITE_PAPER = ("Intel Gaudi 3 AI Accelerator White Paper (2024) and Hot Chips 2024 talk (R. Kaplan, 'Intel Gaudi 3 AI "
                "Accelerator: Architected for Gen AI Training and Inference')")

MME_WIDTH, TPC_FLOPS, RECIPE_LAUNCH, COLLECTIVE, HOP, PORTS, PORTS_PER_PEER, SERVER_CARDS = register(
    Constant("GAUDI_MME_WIDTH", 256,
             "a Gaudi matrix engine (MME) is a 256 x 256 array of multiply-accumulate cells: a layer whose "
             "contraction or output features do not fill whole 256-wide tiles leaves the rest of the array idle",
             "unconfirmed: " + _WHITE_PAPER + " describe each Gaudi 3 MME as a 256 x 256 MAC structure with FP32 "
             "accumulators (as reported by ITmedia PC USER, 2024-07-05, and y-ic.de); Gaudi 2 publishes no MME "
             "geometry, and its 432 TFLOP/s over 2 MMEs of the same size implies a 1.65 GHz clock", False, (FAMILY,)),
    Constant("GAUDI_TPC_FLOPS", 448e9,
             "each Tensor Processor Core (TPC) does 448 GFLOP/s of bf16 vector work (elementwise, normalisation, "
             "softmax, reductions): 24 TPCs make 10.8 TFLOP/s on a Gaudi 2, 64 make 28.7 on a Gaudi 3",
             "derived: " + _WHITE_PAPER + ": Gaudi 3 'BF16 Vector TFLOPs 28.7' over its 64 TPCs; the TPC's 2048-bit "
             "SIMD (Intel Gaudi docs, TPC User Guide, https://docs.habana.ai/en/latest/TPC_User_Guide/"
             "TPC_User_Guide.html) is the same on both generations", False, (FAMILY,)),
    Constant("GAUDI_RECIPE_LAUNCH_S", 20e-6,
             "each compiled graph (a 'recipe') costs 20 µs to launch; the kernels inside it are scheduled by the "
             "graph compiler onto the engines' queues with no launch of their own",
             "Intel publishes no launch figure; the Habana bridge caches compiled recipes and re-launches the same "
             "recipe every step (Intel Gaudi docs, 'Runtime Environment Variables', PT_HPU_RECIPE_CACHE_CONFIG; Habana "
             "developer blog, 'Detecting Frequent Graph Re-compilations')", True, (FAMILY,)),
    Constant("GAUDI_COLLECTIVE_S", 20e-6,
             "each HCCL all-reduce over the RoCE ports starts with 20 µs of fixed latency, however small the message",
             "Intel publishes bandwidths for HCCL collectives (Intel Gaudi docs, 'Collectives Performance', "
             "hccl_demo), not small-message latency; RDMA over Ethernet is taken as twice NVLink's NCCL start-up "
             "(GPU_COLLECTIVE_S)", True, (FAMILY,), when="multi-chip"),
    Constant("GAUDI_ROCE_HOP_S", 3e-6,
             "a hop between Gaudis over an on-die RoCE port costs 3 µs",
             "no published figure; RoCE v2 port-to-port latency through the NIC pipeline and an Ethernet PHY is a "
             "few µs", True, (FAMILY,), when="multi-chip"),
    Constant("GAUDI_NIC_PORTS", 24,
             "a Gaudi card has 24 on-die RoCE ports (100 GbE on Gaudi 2, 200 GbE on Gaudi 3); the spec's chip-to-chip "
             "bandwidth is all 24 together, so one port carries 1/24 of it",
             "Intel, Hot Chips 2024: Gaudi 2 '24 x 100 GbE RoCE', Gaudi 3 'Networking 1200 GB/s bidirectional "
             "(24 x 200 GbE RoCE)'", False, (FAMILY,), when="multi-chip"),
    Constant("GAUDI_PORTS_PER_PEER", 3,
             "inside an 8-card server each card joins every other card by 3 ports of its own (21 ports all-to-all, "
             "the other 3 go to the scale-out network): a collective over n cards of one server runs on the 3(n-1) "
             "ports that join them, so 2 cards share 3 ports' bandwidth, not 24; a collective beyond one server "
             "crosses the 3 scale-out ports",
             "Intel Gaudi 3 AI Accelerator White Paper (2024) and Intel Gaudi docs, HLS-Gaudi2 / HLS-Gaudi3 server "
             "topology: 'in each Gaudi, 21 of the 24 NICs are dedicated to an all-to-all connectivity within the "
             "system, with 3 NICs to each other Gaudi; 3 NICs per Gaudi go to the scale-out'", False, (FAMILY,),
             when="multi-chip"),
    Constant("GAUDI_SERVER_CARDS", 8,
             "a Gaudi server (HLS-Gaudi2, HLS-Gaudi3) holds 8 cards, joined all-to-all",
             "Intel Gaudi docs, HLS-Gaudi2 and HLS-Gaudi3 system descriptions: eight OAM cards per server", False,
             (FAMILY,), when="multi-chip"),
)


MME_OF_MAXIMUM = register(
    Constant("GAUDI_MME_OF_MAXIMUM", 0.61,
             "a model's matrix multiplications, run by the framework over a whole step, reach 61% of the most the "
             "chip's matrix engines reach on the best-shaped single matmul (AcceleratorSpec.matmul_efficiency, "
             "measured per chip); a chip whose catalog entry gives no such maximum runs at COMPUTE_EFFICIENCY of "
             "its peak",
             "derived from two measurements on the same chip: Narayanan et al. 2021 (arXiv 2104.04473) sustain 163 "
             "TFLOP/s per A100 training GPT models at scale, and Stas Bekman's Maximum Achievable Matmul FLOPS table "
             "(ml-engineering, compute/accelerator) finds 267.9 TFLOP/s on an A100 SXM: 163 / 267.9 = 0.61. The "
             "same table measures Gaudi 2 at 418.7 of 432 TFLOP/s and Gaudi 3 at 1,243 (the ratio a datasheet's "
             "peak alone does not show)", False, (FAMILY,)),
)[0]


EAGER_OP, EAGER_VIEW = register(
    Constant("GAUDI_EAGER_OP_S", 15e-6,
             "Gaudi eager mode: the host spends 15 µs issuing each op that runs on the device (the model's Python "
             "and module calls, PyTorch's dispatcher, the Intel Gaudi bridge's look-up of the op's cached recipe), "
             "one op after another; the device then launches that op's recipe by itself (GAUDI_RECIPE_LAUNCH_S)",
             "illustrative: the framework's share is eager PyTorch's on a GPU host (GPU_EAGER_OP_S: Fernandez et "
             "al., 'The Framework Tax', EMNLP 2023, checked against the H100 timings); Intel publishes no per-op "
             "figure for the bridge, only that eager mode 'sends the ops for execution immediately, one-by-one' "
             "(Intel Gaudi docs, 'PyTorch Gaudi Theory of Operations')", True, (FAMILY,), when="eager"),
    Constant("GAUDI_EAGER_VIEW_S", 3e-6,
             "Gaudi eager mode: an op that runs nothing on the device (a view, a reshape) still costs the host 3 µs",
             "illustrative: the dispatcher without a recipe launch, as GPU_EAGER_VIEW_S", True, (FAMILY,),
             when="eager"),
)


def eager_host_s(op: EagerOp) -> float:
    """What issuing ``op`` costs the host in Gaudi eager mode."""
    return float(EAGER_OP.value) if op.runs_kernel else float(EAGER_VIEW.value)


def gemm_fill(gemm: GemmShape | None) -> float:
    """The share of a 256 x 256 matrix engine an eager matmul of shape ``gemm`` keeps busy (its contraction and
    output features padded to whole tiles, as :func:`accelkit.cost.rates.tile_fill` pads a kernel's)."""
    if gemm is None:
        return 1.0
    width = int(value("GAUDI_MME_WIDTH"))
    fill = 1.0
    for d in (gemm.k, gemm.n):
        d = max(1, int(d))
        fill *= d / (-(-d // width) * width)
    return fill


def a2a_allreduce_s(nbytes: float, n: int, r: Rates, spec: AcceleratorSpec) -> float:
    """An all-reduce of ``nbytes`` over ``n`` Gaudis: inside a server the cards are joined all-to-all, 3 ports per
    pair, so a reduce-scatter then an all-gather each send ``(n-1)/n`` of the data spread over the ``3 (n-1)`` ports
    that join the n cards (two RoCE hops); beyond one server each card's shard (1/8 of the data) is all-reduced in a
    ring over its 3 scale-out ports."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    port_Bps = float(spec.chip_to_chip_Bps or value("DEFAULT_LINK_BPS")) / 2 / value("GAUDI_NIC_PORTS")
    peer = value("GAUDI_PORTS_PER_PEER")
    cards = int(value("GAUDI_SERVER_CARDS"))
    inside = min(n, cards)
    seconds = 2 * (inside - 1) / inside * nbytes / ((inside - 1) * peer * port_Bps) + 2 * r.hop_s + r.collective_s
    servers = -(-n // cards)
    if servers > 1:  # each card's 1/8 of the data, in a ring over the servers on the scale-out ports
        seconds += 2 * (servers - 1) / servers * (nbytes / cards) / (peer * port_Bps) + 2 * (servers - 1) * r.hop_s
    return seconds


def _engine(k: Kernel) -> str:
    return "MME" if k.kind == "matmul" else "TPC" if k.flops else "DMA"


class GaudiModel(ExecutionModel):
    stacks = (("lazy", "the Intel Gaudi PyTorch bridge in lazy mode (the default here, and what Intel's published "
                       "model performance runs): ops are gathered into a graph that the graph compiler fuses and runs "
                       "at mark_step; torch.compile with hpu_backend compiles the same kind of graph"),
              ("eager", "the Intel Gaudi PyTorch bridge in eager mode (PT_HPU_LAZY_MODE=0, no torch.compile): ops "
                        "sent to the device one by one, each its own recipe and launch, nothing fused; under a "
                        "16-bit precision, autocast over fp32 weights"))
    family = FAMILY
    matrix_unit = "GAUDI_MME_WIDTH"
    modes = ("hbm",)  # weights and activations in HBM; the graph compiler stages tiles through the on-die SRAM
    launch = RECIPE_LAUNCH
    # the loop copies the next batch while this step computes, so the host link shows only when it is the bound
    host_io = HostIO(HOST_TRANSFER, overlapped=True, loop='the PyTorch bridge copies the next batch asynchronously while the graph runs')
    collective = COLLECTIVE
    hop = HOP
    shades = ("#bcbd22", "#dbdb8d", "#6b6b12")  # olive: a hue no other family takes
    diagram = "engines"
    compile_cost = CompileCost(20.0, 0.05, "a recipe (the Habana graph compiler's compiled graph), cached by the "
                                           "PyTorch bridge")
    model_split = "tensor"  # DeepSpeed / Optimum Habana shard each layer over the Gaudis of a server
    lane_label = "{units}"

    def rates(self, spec: AcceleratorSpec, precision: str, measured: Any = None) -> Rates:
        """The MMEs at ``GAUDI_MME_OF_MAXIMUM`` of the chip's measured matmul maximum (the datasheet peak x
        ``COMPUTE_EFFICIENCY`` where none is catalogued); the TPCs at their derived bf16 vector rate (half of it
        in fp32: a 2048-bit SIMD holds 64 fp32 lanes against 128 16-bit ones, TPC User Guide)."""
        r = super().rates(spec, precision, measured)
        lanes = 0.5 if precision == "fp32" else 1.0
        vec = value("GAUDI_TPC_FLOPS") * lanes * spec.compute_units * value("COMPUTE_EFFICIENCY")
        mme = r.matmul_flops
        if spec.matmul_efficiency is not None:  # the chip's measured ceiling, not one share of every datasheet
            mme = spec.peak(precision) * spec.matmul_efficiency * float(MME_OF_MAXIMUM.value)
        return replace(r, matmul_flops=mme, vector_flops=min(mme, vec))

    def lane(self, k: KernelTime) -> str:
        return k.units.split(" x")[0]

    def allreduce_s(self, nbytes: float, n: int, r: Rates, spec: AcceleratorSpec) -> float:
        return a2a_allreduce_s(nbytes, n, r, spec)

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        prog = ctx.program
        stack = self.stack(getattr(prog, "stack", None) or None)
        if stack == "eager" and prog is not None and getattr(prog, "graph", None) is not None:
            return self._eager(kernels, ctx)
        return self._graph(kernels, ctx)

    def _graph(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        """Graph mode: the pass is one recipe, launched once; each kernel runs on its engine (a matmul on the MMEs
        at the share of their 256 x 256 arrays its shape fills, the rest on the TPCs), bound by that engine or by
        HBM, one after another."""
        r, plan, spec = ctx.rates, ctx.plan, ctx.spec
        w, a = plan.placement["weights"], plan.placement["activation"]
        slices = dict(spec.functional_slices or {})
        counts = {"MME": slices.get("MME", 1), "TPC": slices.get("TPC", spec.compute_units), "DMA": 1}
        out = []
        for i, k in enumerate(kernels):
            c, m = roofline(k, r, w, a, tensor=ctx.tensor, act_tensor=ctx.act_tensor, opt_tier=plan.placement.get("optimizer"), spill=ctx.spill)
            if k.kind == "matmul":
                c /= self.tile_fill(k)
            launch = r.launch_s if i == 0 else 0.0  # the recipe's launch, once per pass
            engine = _engine(k)
            units = f"{engine} x{counts[engine]}" if engine != "DMA" else "DMA"
            out.append(kernel_time(k, units, c, m, 0.0, launch, ctx.peak * ctx.tensor))
        return Timed(out, sum(k.time_s for k in out))

    def _eager(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        """Eager mode: every op of the captured graph its own recipe, issued by the host one after another
        (:func:`accelkit.families.eager.issue`) and launched by itself; a matmul on the MMEs at the share of their
        arrays its shape fills, the rest on the TPCs, each bound by its engine or by reading and writing HBM. The
        optimizer is Intel's fused AdamW / SGD (``habana_frameworks.torch.hpex.optimizers``): a few launches."""
        spec, r, prog = ctx.spec, ctx.rates, ctx.program
        section = kernels[0].section if kernels else "fwd"
        if section == "opt":
            graph = self._graph(kernels, ctx)
            host = float(EAGER_OP.value) * 10  # a handful of fused multi-tensor launches per step
            return Timed(graph.kernels, max(host, graph.step_s))
        act_bw = r.tier_bw[ctx.plan.placement["activation"]]
        w_bw = r.tier_bw[ctx.plan.placement["weights"]]
        elem = element_bytes(prog.precision)
        captured = max((DTYPE_BYTES.get(m.dtype, 4) for m in prog.graph.params.values()), default=4)
        ops = eager_ops(prog.graph, kernels, scale=ctx.scale, low_bytes=elem, autocast=elem < captured,
                        section=section)
        t_ = ctx.tensor
        slices = dict(spec.functional_slices or {})

        def parts(op: EagerOp) -> tuple[float, float]:
            if op.flops and (op.gemm is not None or op.attention is not None):
                c = op.flops / t_ / (r.matmul_flops * gemm_fill(op.gemm))
            else:
                c = op.flops / t_ / r.vector_flops
            return c, op.act_bytes / ctx.act_tensor / act_bw + op.param_bytes / t_ / w_bw

        def device_s(op: EagerOp) -> float:
            c, m = parts(op)
            return max(c, m) + r.launch_s

        issued = issue(ops, device_s, eager_host_s)

        def units(run: list[EagerOp]) -> str:  # the engine the kernel's ops run on
            engine = "MME" if any(op.gemm is not None or op.attention is not None for op in run) else "TPC"
            return f"{engine} x{slices.get(engine, 1 if engine == 'MME' else spec.compute_units)}"

        return Timed(kernel_times(ops, issued, kernels, section=section, parts=parts, units=units,
                                  launch_s=r.launch_s, peak=ctx.peak * t_),
                     issued.step_s, host_events=host_events(issued))

MODEL = GaudiModel()
