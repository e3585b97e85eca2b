"""Accelerators as data: the catalog, your own chips, and this host measured.

    import accelkit as ak
    ak.hardware.names()                  # ['a100', 'bow', ..., 'wse3', 'host']
    spec = ak.hardware.get("sn40l")      # a frozen AcceleratorSpec; every figure has a source
    print(spec.describe())
    spec.peak("bf16"), spec.tier("hbm").bandwidth_Bps, spec.sources["peak_flops.bf16"]
    ak.hardware.fits(70e9, spec, bytes_per_param=2).summary()   # where 70 B bf16 weights live
    mine = ak.hardware.load("my_chip.toml")                     # your own chip, same format
"""

from __future__ import annotations

from accelkit.hardware import capacity, precision
from accelkit.hardware.calibrate import cache_path, calibrate
from accelkit.hardware.catalog import (
    BYTES_PER_PARAM,
    Fit,
    catalog,
    catalog_table,
    fits,
    fits_table,
    get,
    names,
)
from accelkit.hardware.spec import (
    EXECUTION_MODELS,
    FAMILIES,
    FAMILY_INFO,
    HOST_FAMILY,
    PRECISIONS,
    AcceleratorSpec,
    Family,
    MemoryTier,
    fmt_bytes,
    fmt_si,
    fmt_sig,
    load,
)

__all__ = [
    "BYTES_PER_PARAM",
    "EXECUTION_MODELS",
    "FAMILIES",
    "FAMILY_INFO",
    "HOST_FAMILY",
    "PRECISIONS",
    "Family",
    "AcceleratorSpec",
    "Fit",
    "MemoryTier",
    "cache_path",
    "calibrate",
    "capacity",
    "catalog",
    "catalog_table",
    "fits",
    "fits_table",
    "precision",
    "fmt_bytes",
    "fmt_si",
    "fmt_sig",
    "get",
    "load",
    "names",
]
