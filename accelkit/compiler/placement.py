"""Placement: kernels onto the compute units of each kind of chip. Each family's ``ExecutionModel.place``
(``accelkit.families``) does it; this module dispatches and checks the invariants common to all.

- wafer-dataflow: each layer (region) gets a rectangle of the core mesh sized by its share of the
  FLOPs, so every region takes about as long as the others (a balanced pipeline). Regions are
  column strips laid left to right; none overlap. In weight-streaming mode one layer at a time
  owns the whole wafer, so regions are drawn for the ops inside the largest layer.
- reconfigurable-dataflow: sections run one after another, each owning the chip: PCUs are split
  among a section's kernels by FLOPs, PMUs by the bytes they hold.
- bsp-tiles: each kernel is a superstep (compute, sync, exchange) spread over tiles in
  proportion to its FLOPs; weights held on chip must fit the tiles' memory.
- static-schedule: a cycle-exact schedule of kernels on functional slices (MXM for matmuls, VXM
  for vector ops, MEM for copies) and chips; a kernel waits for its predecessor.
- gpu / cpu: the kernel sequence as launched, one stream.

Every kernel is placed exactly once; invariants are checked by :func:`check_placement`.
"""

from __future__ import annotations

from accelkit.compiler.memory import MemoryPlan
from accelkit.cost.kernel import Kernel
from accelkit.families import ExecutionModel, model_for
from accelkit.families.placement import Placement, PlacementError, Region
from accelkit.hardware.spec import AcceleratorSpec


def place(kernels: list[Kernel], spec: AcceleratorSpec, plan: MemoryPlan, *, chips: int,
          pipeline: int = 1, precision: str | None = None, family: ExecutionModel | None = None,
          stages: tuple[tuple[str, int], ...] = ()) -> Placement:
    """Where each kernel runs, as the chip's family places it (``ExecutionModel.place``; ``family``: the model,
    when the caller looked it up already; ``stages``: where a pipeline's blocks begin, for a family that takes them,
    ``ExecutionModel.pipeline_blocks``)."""
    fam = family or model_for(spec.family)
    if stages and pipeline > 1:
        return fam.place(kernels, spec, plan, chips=chips, pipeline=pipeline, precision=precision,
                         stages=stages)  # type: ignore[call-arg]  # the families with pipeline_blocks take it
    return fam.place(kernels, spec, plan, chips=chips, pipeline=pipeline, precision=precision)


def check_placement(p: Placement, kernels: list[Kernel], spec: AcceleratorSpec, plan: MemoryPlan,
                    family: ExecutionModel | None = None) -> None:
    """Invariants: every kernel placed once, then the family's own (a wafer's regions stay on the mesh, do
    not overlap and hold their weights)."""
    placed = [k for r in (*p.regions, *p.host_regions) for k in r.kernels] + list(p.streamed_kernels)
    names = [k.name for k in kernels]
    if sorted(placed) != sorted(names):
        missing = sorted(set(names) - set(placed))[:5]
        raise PlacementError(f"placement lost kernels {missing}", fix="report this as an accelkit bug")
    (family or model_for(spec.family)).check(p, [k for k in kernels if k.off_device is None], spec, plan)


__all__ = ["Placement", "PlacementError", "Region", "check_placement", "place"]
