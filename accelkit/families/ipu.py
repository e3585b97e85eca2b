"""Bulk-synchronous tiles (Graphcore IPU): one superstep per kernel. Every tile computes on its own SRAM, all
tiles sync, then they exchange the outputs over the on-chip exchange; a matmul's exchange is at least what
its busiest tile must receive however the product is split (``IPU_MATMUL_EXCHANGE_WORDS``); streaming-memory
mode adds the weights' copy in. No kernel takes less than the length of its op's Poplar program
(``IPU_OP_FLOOR_S``), which a small model's kernels meet."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from accelkit import constants
from accelkit.constants import HOST_TRANSFER, Constant, register, value
from accelkit.cost.kernel import Kernel
from accelkit.cost.rates import Rates, kernel_time, roofline
from accelkit.families.base import (
    CompileCost,
    ExecutionModel,
    HostIO,
    Layout,
    MemoryContext,
    Timed,
    TimingContext,
    everything_in,
)
from accelkit.families.placement import Placement, Region, pipeline_stages
from accelkit.hardware.precision import element_bytes
from accelkit.hardware.spec import AcceleratorSpec

FAMILY = "bsp-tiles"

SUPERSTEP_SYNC, _, _, STREAM_BPS, STREAM_COPY, VECTOR_CYCLES, MATMUL_EXCHANGE, OP_FLOOR = register(
    Constant("IPU_SUPERSTEP_SYNC_S", 1e-6,
             "each kernel (an op: in Poplar several compute sets, each ending in a sync of every tile, with the "
             "exchanges between them) costs at least 1 µs beyond its compute and exchange",
             "Graphcore publishes no per-op figure; its lightweight-profiling tutorial on real IPUs shows one sync "
             "costs tens of cycles (two single-vertex compute sets of about 3,600 cycles each: 7,236-7,240 cycles) "
             "and a compute set's launch tens to a few hundred (graphcore/tutorials, "
             "tutorials/popvision/lightweight_profiling, examples 1 and 2), so 1 µs (about 1,350 cycles) stands for "
             "a handful of them", True, (FAMILY,)),
    Constant(f"USABLE_SRAM_FRACTION[{FAMILY}]", 0.92,
             "92% of an IPU's In-Processor Memory holds tensors; the rest holds each tile's code and exchange "
             "buffers",
             "Graphcore publishes no share; each tile's memory holds its code and exchange buffers beside the data "
             "(Graphcore, IPU Programmer's Guide, 'tile memory'); PopTorch's availableMemoryProportion (default 0.6) "
             "caps only the temporary memory of matmuls and convolutions", True, (FAMILY,)),
    Constant("IPU_TILE_COLUMNS", 46,
             "an IPU's tiles are laid out 46 to a row when its spec gives no mesh",
             "GC200: 1,472 tiles drawn as 32 x 46; the real chip has 4 columns of tile islands", True, (FAMILY,)),
    Constant("IPU_HOST_STREAM_BPS", 2.1e9,
             "the host streams data to and from its IPUs at about 2.1 GB/s in all, the host's preparation included "
             "(one host process feeds every replica)",
             "derived from Graphcore's Poplar tutorial 6 run on IPU hardware (graphcore/tutorials, "
             "tutorials/poplar/tut6_matrix_vector_opt/README.md, SDK 3.1): a 10,000 x 1,000 fp32 matrix (40 MB) "
             "streamed in, multiplied and the result streamed back in 25,444,984 cycles (about 19,131.6 µs), most of "
             "it StreamCopyBegin, 'the host preparing I/O': 40 MB / 19.1 ms = 2.1 GB/s, far below the link's own rate",
             False, (FAMILY,)),
    Constant("IPU_STREAM_COPY_S", 123e-6,
             "each stream copy between the host and an IPU synchronises with the host, about 123 µs however few its "
             "bytes; a step pays one for each input tensor of each micro-batch, and one for each output tensor that "
             "comes back every step, whatever its deviceIterations: PopART schedules every tensor's copy on its own, "
             "an input's as late as possible and an output's as early, unless groupHostSync groups them into one "
             "per direction (graphcore/popart, willow/src/popx/irlowering.cpp, fromHostTask and toHostTask; "
             "SessionOptions.groupHostSync, default false, 'trades off memory usage for speed')",
             "derived from Graphcore's lightweight-profiling tutorial on real IPUs (graphcore/tutorials, "
             "tutorials/popvision/lightweight_profiling/README.md, SDK 3.0, example 3): a loop streaming one int from "
             "the host per iteration ran one iteration per ~163,000 cycles for 3,700 cycles of work, each StreamCopy "
             "taking Begin 77,000-88,000 + Mid 1,500 + End 80,000-84,000 cycles (median about 164,000); cycles at the "
             "1.33 GHz of the tutorials' IPU-POD (tutorial 6's hardware profile: 25,444,984 cycles = 19,131.6 µs)",
             False, (FAMILY,)),
    Constant("IPU_VECTOR_CYCLES", 3,
             "elementwise work, normalisations and reductions run on each tile's vector unit: one 64-bit vector (2 "
             "fp32 or 4 fp16 values) per 3 cycles of each of its 6 worker threads, which share the tile's cycles: "
             "2/3 fp32 or 4/3 fp16 values per tile per cycle, one FLOP each (2.6 TFLOP/s fp16 on a GC200, not the "
             "matrix units' 250)",
             "Graphcore's own cycle estimates for its elementwise codelets (graphcore/poplibs, "
             "lib/popops/popopsCycleEstimators.cpp, binaryOpInnerLoopCycles: cyclesPerLoop 1 for ADD and MULTIPLY "
             "(popopsCycleEstimators.hpp) plus 2 for the loads, store and loop per natural vector of "
             "dataPathWidth / 32 floats or / 16 halves; BinaryOp1D returns numWorkers x worker cycles); 64 bits per "
             "vector, '2 floats, 4 halves' (lib/popops/codelets/asm/ContinuousReductionAcc.S)", False, (FAMILY,)),
    Constant("IPU_MATMUL_EXCHANGE_WORDS", 3,
             "a matmul or convolution (M x K by K x N) spread over T tiles makes its busiest tile receive at least "
             "3 (MNK / T)^(2/3) operand and partial-sum elements, less its 1/T share of the three matrices, at that "
             "tile's share of the exchange (4 bytes a "
             "cycle on a GC200: 8 TB/s over 1,472 tiles at 1.35 GHz); the exchange phase does not overlap the "
             "compute phase (bulk-synchronous), so the two add",
             "the tight memory-independent communication lower bound of parallel matrix multiplication, "
             "3 (mnk/P)^(2/3) - (mn + mk + nk)/P words for P processors where the smallest matrix exceeds a "
             "processor's (mnk/P)^(2/3) (Al Daas, Ballard, Grigori, Kumar and Rouse, 'Tight memory-independent "
             "parallel matrix multiplication communication lower bounds', SPAA 2022; after Irony, Toledo and "
             "Tiskin, J. Parallel Distrib. Comput. 64(9), 2004); Poplar's convolution planner costs the same "
             "exchange per tile: bytes per "
             "tile over the target's exchange bytes per cycle (graphcore/poplibs, lib/poplin/ConvModel.cpp, "
             "getExchangeBytesPerCycle)", False, (FAMILY,)),
    Constant("IPU_OP_FLOOR_S", 13.9e-6,
             "no kernel of a compiled PopTorch program takes less than 13.9 µs on an IPU: its Poplar program (the "
             "compute sets and exchanges PopART lowers each op to, every one ending in a sync of all the tiles, and "
             "the copies that rearrange its operands into the layouts its vertices need) has that length however "
             "little it computes; a larger kernel's own compute and exchange cover it, so a kernel costs the "
             "larger of the two",
             "derived from Graphcore's efficient-data-loading tutorial run on IPU hardware (graphcore/examples, "
             "tutorials/tutorials/pytorch/efficient_data_loading/README.md, SDK 3.1): with synthetic data (no input "
             "crosses the host link) the tutorial's classifier trained at 47,323.53 items/s, batch 16, 50 steps a "
             "call: 338 µs a step, where its 24 kernels' compute, exchange and syncs model 103 µs and a 13.9 µs "
             "floor under each accounts for the rest. Checked on runs that did not set it: ALCF's MNIST run and the "
             "pipelining tutorial (small kernels, like this one), Graphcore's published BERT, GPT-2 and ResNet-50 "
             "training (kernels mostly above the floor): `make bench`, vendors' small models and published cases",
             False, (FAMILY,)),
)


def place(kernels: list[Kernel], spec: AcceleratorSpec, plan: Any, *, chips: int, pipeline: int = 1,
          precision: str | None = None, stages: tuple[tuple[str, int], ...] = ()) -> Placement:
    """Every kernel a superstep over all the tiles of its IPU; over a pipeline, each layer (its forward, backward
    and update) on one IPU: where ``stages`` (PopTorch's ``BeginBlock``s: module, IPU) put it, else the forward's
    layers cut into stages of about equal FLOPs."""
    tiles = spec.compute_units
    n_stages = max(1, pipeline if pipeline > 1 else (plan.chips_needed if plan.mode == "on-chip" else 1))
    n_stages = min(n_stages, chips) if chips > 1 else 1
    stage_of = pipeline_stages(kernels, n_stages, stages) if n_stages > 1 else {}
    regions = []
    for step, k in enumerate(kernels):
        units = tiles  # bulk-synchronous: every tile takes part in every superstep
        regions.append(Region(k.name, (k.name,), stage_of.get(k.name, 0), 0, 0, 1, units, units,
                              memory_bytes=k.param_bytes if plan.mode == "on-chip" else 0,
                              start_cycle=step, slice=f"superstep {step}", section=k.section))
    held: list[list[str]] = [[] for _ in range(n_stages)]  # each IPU's layers, in the forward's order
    for k in kernels:
        if k.section == "fwd" and k.group not in held[stage_of.get(k.name, 0)]:
            held[stage_of.get(k.name, 0)].append(k.group)
    how = ("as the model's BeginBlocks put them" if stages else "the forward's layers cut where the FLOPs balance")
    cols = spec.mesh_shape[1] if spec.mesh_shape else constants.value("IPU_TILE_COLUMNS")
    return Placement(FAMILY, (max(1, tiles // cols), cols), tuple(regions), chips, "tile",
                     ("each kernel is a superstep: every tile computes its share, all tiles sync, then "
                      "exchange results over the on-chip exchange",)
                     + ((f"pipelined over {n_stages} IPUs (PopTorch BeginBlock style): each layer"
                         + ("'s forward, backward and update" if any(k.section != "fwd" for k in kernels) else "")
                         + f" on one IPU, {how}",) if n_stages > 1 else ()),
                     stages=tuple(tuple(g) for g in held) if n_stages > 1 else ())


class IpuModel(ExecutionModel):
    stacks = (("poptorch", "PopTorch: the model compiled ahead of time by PopART into one Poplar program; the host feeds it deviceIterations batches per call"),)
    family = FAMILY
    modes = ("on-chip", "optimizer-offload", "streaming-memory")
    launch = SUPERSTEP_SYNC
    # each step's inputs are stream copies inside the Poplar program, synchronised with the host, one per tensor
    # unless groupHostSync groups them: the IPUs wait for them (PopTorch's default has no I/O tiles to overlap
    # them with compute), at the host's streaming rate, shared by the replicas; the host round trip is paid once
    # per call of deviceIterations steps
    host_io = HostIO(HOST_TRANSFER, STREAM_BPS, stream_sync=STREAM_COPY, shared=True,
                     loop="PopTorch's deviceIterations: steps the IPUs run per call from the host")
    shades = ("#9467bd", "#c5b0d5", "#5e3c99")
    diagram = "tiles"
    placement_map = "supersteps"
    pipeline_blocks = True
    compile_cost = CompileCost(60.0, 2.0, "a PopART executable (PopTorch `model.compile(...)`, cached by "
                               "`enableExecutableCaching`)")

    def rates(self, spec: AcceleratorSpec, precision: str, measured: Any = None) -> Rates:
        """The matrix units at the datasheet peak (x the efficiency constant); everything else at the tiles'
        vector rate, Graphcore's own cycle estimate (``IPU_VECTOR_CYCLES``), which counts its overheads already."""
        r = super().rates(spec, precision, measured)
        lanes = 64 // (32 if precision == "fp32" else 16)
        vec = spec.compute_units * (spec.clock_hz or 1e9) * lanes / float(value("IPU_VECTOR_CYCLES"))
        return replace(r, vector_flops=min(r.matmul_flops, vec))

    def layouts(self, ctx: MemoryContext) -> list[Layout]:
        sram, stream = ctx.tier(0), ctx.tier(1)
        return [everything_in("on-chip", sram),
                # Graphcore's usual recipe for large models: weights stay in tile memory, optimizer state lives
                # in streaming memory and is touched once per step
                Layout("optimizer-offload", {"weights": sram, "activation": sram, "gradient": sram,
                                             "optimizer": stream}, ("weights", "activation", "gradient"), sram),
                Layout("streaming-memory", {"weights": stream, "activation": sram, "gradient": stream,
                                            "optimizer": stream}, ("weights", "gradient", "optimizer"), stream)]

    def place(self, kernels: list[Kernel], spec: AcceleratorSpec, plan: Any, *, chips: int, pipeline: int = 1,
              precision: str | None = None, stages: tuple[tuple[str, int], ...] = ()) -> Placement:
        return place(kernels, spec, plan, chips=chips, pipeline=pipeline, precision=precision, stages=stages)

    def time(self, kernels: list[Kernel], ctx: TimingContext) -> Timed:
        spec, r, plan = ctx.spec, ctx.rates, ctx.plan
        exchange_Bps = (spec.fabric_Bps or spec.on_chip_bandwidth_Bps) * value("BANDWIDTH_EFFICIENCY")
        w = plan.placement["weights"]  # tile memory unless the weights stream in from streaming memory
        units = f"{spec.compute_units} tiles"
        out = []
        for k in kernels:
            c, m = roofline(k, r, w, spec.memory_tiers[0].name, tensor=ctx.tensor, act_tensor=ctx.act_tensor,
                            opt_tier=plan.placement.get("optimizer"), spill=ctx.spill)
            if k.kind == "matmul" and (k.vector_flops or k.score_flops):
                # each op is a compute set of its own: the matrix units do the matmuls, the vector units the rest
                vec = (k.vector_flops + k.score_flops) / ctx.tensor / (r.vector_flops * k.efficiency)
                c = c * max(0, k.flops - k.vector_flops) / k.flops + vec if k.flops else vec
            # the exchange phase moves the superstep's inputs to the tiles that need them and its results out
            # (weights stay in their tiles' memory)
            exchange = (max(0, k.bytes_read - k.param_bytes) + k.out_bytes) / exchange_Bps
            if k.kind == "matmul" and k.flops > k.vector_flops + k.score_flops:
                exchange = max(exchange, _matmul_exchange_s(k, ctx, exchange_Bps))
            # the kernel's supersteps end in a sync each; however little it computes, its program takes the floor
            latency = max(r.launch_s, float(OP_FLOOR.value) - max(c, m) - exchange)
            out.append(kernel_time(k, units, c, m, exchange, latency, ctx.peak * ctx.tensor))  # compute|sync|exchange
        return Timed(out, sum(k.time_s for k in out))


def _matmul_exchange_s(k: Kernel, ctx: TimingContext, exchange_Bps: float) -> float:
    """The least time a matmul's exchange phases take (``IPU_MATMUL_EXCHANGE_WORDS``): however Poplar splits an
    (M x K) @ (K x N) product over T tiles, some tile must receive at least 3 (MNK / T)^(2/3) of the operands' and
    partial results' elements less the (MN + MK + KN) / T it holds already (the tight memory-independent lower
    bound of distributed matrix multiplication), at its share of the exchange. A fused kernel's matmuls are
    counted as one (MNK = its matmul FLOPs / 2), and a batched product's local share is not subtracted."""
    tiles = ctx.spec.compute_units
    mnk = max(0, k.flops - k.vector_flops - k.score_flops) / 2 / ctx.tensor
    words = float(MATMUL_EXCHANGE.value) * (mnk / tiles) ** (2 / 3)
    if k.matmul_dims and not any(op in ("bmm", "baddbmm", "matmul") for op in k.ops):
        # less what a tile holds already: its share of the three matrices (M from the FLOPs, K and N captured)
        kk, n = k.matmul_dims
        m = mnk / max(1, kk * n)
        words -= (m * n + m * kk + kk * n) / tiles
    return max(0.0, words) * element_bytes(ctx.program.precision) / (exchange_Bps / tiles)


MODEL = IpuModel()
