"""The architecture families' execution models, one module each, in a registry.

    model_for("wafer-dataflow")   the family's ExecutionModel: its modes, how it times kernels, its lanes
    REGISTRY                      family name -> model, in the catalog's order (general-purpose first)
    rates(spec, precision)        what one chip delivers, as its family's model says (datasheet x the
                                  efficiency constants, or the host's measured rates)

Adding a family is one module here (a subclass of :class:`ExecutionModel`) and its TOML files; nothing else
compares a family's name as a string.
"""

from __future__ import annotations

from accelkit.cost.rates import Rates
from accelkit.errors import UnknownNameError
from accelkit.families import cpu, gpu, ipu, rdu, tsp, wafer
from accelkit.families.base import ExecutionModel, Timed, TimingContext
from accelkit.hardware.spec import AcceleratorSpec

REGISTRY: dict[str, ExecutionModel] = {m.MODEL.family: m.MODEL for m in (cpu, gpu, ipu, rdu, wafer, tsp)}


def model_for(family: str) -> ExecutionModel:
    """The execution model of ``family``; an unknown family names the known ones."""
    try:
        return REGISTRY[family]
    except KeyError:
        raise UnknownNameError(f"no execution model for family {family!r}; known: {', '.join(REGISTRY)}",
                               fix="add a module to accelkit.families (one ExecutionModel subclass)") from None


def rates(spec: AcceleratorSpec, precision: str) -> Rates:
    """The chip's rates at ``precision``, after the efficiency constants (none for a measured host)."""
    return model_for(spec.family).rates(spec, precision)


__all__ = ["REGISTRY", "ExecutionModel", "Rates", "Timed", "TimingContext", "model_for", "rates"]
