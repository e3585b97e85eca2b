"""The architecture families' execution models, one module each, in a registry.

    model_for("wafer-dataflow")   the family's ExecutionModel: its modes, how it times kernels, its lanes
    REGISTRY                      family name -> model, in the catalog's order (general-purpose first)
    rates(spec, precision)        what one chip delivers, as its family's model says (datasheet x the
                                  efficiency constants, or the host's measured rates)

Adding a family is one module here (a subclass of :class:`ExecutionModel`, as ``MODEL``), found by the
registry on import, plus its TOML files: ``hardware/families/<family>.toml`` (name, rank on the spectrum, unit
name, execution model in a sentence) and one ``hardware/systems/<chip>.toml`` per chip. Nothing else compares a
family's name as a string.
"""

from __future__ import annotations

import importlib
import pkgutil

from accelkit.cost.rates import Rates
from accelkit.errors import UnknownNameError
from accelkit.families.base import CompileCost, ExecutionModel, Timed, TimingContext
from accelkit.hardware.spec import FAMILIES, AcceleratorSpec


def _discover() -> dict[str, ExecutionModel]:
    """Every module of this package that defines ``MODEL``, by family, in the catalog's order."""
    found: dict[str, ExecutionModel] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        model = getattr(module, "MODEL", None)
        if isinstance(model, ExecutionModel):
            if model.family in found:
                raise RuntimeError(f"two execution models for family {model.family!r}")
            found[model.family] = model
    rank = {f: i for i, f in enumerate(FAMILIES)}
    return dict(sorted(found.items(), key=lambda kv: rank.get(kv[0], len(rank))))


REGISTRY: dict[str, ExecutionModel] = _discover()


def model_for(family: str) -> ExecutionModel:
    """The execution model of ``family``; an unknown family names the known ones."""
    try:
        return REGISTRY[family]
    except KeyError:
        raise UnknownNameError(f"no execution model for family {family!r}; known: {', '.join(REGISTRY)}",
                               fix="add a module to accelkit.families (one ExecutionModel subclass)") from None


def rates(spec: AcceleratorSpec, precision: str, measured: object = None) -> Rates:
    """The chip's rates at ``precision``, after the efficiency constants (none for a measured host)."""
    return model_for(spec.family).rates(spec, precision, measured)


__all__ = ["REGISTRY", "CompileCost", "ExecutionModel", "Rates", "Timed", "TimingContext", "model_for", "rates"]
