"""The catalog: one TOML file per chip in ``systems/``, looked up by name; and "what fits where".

``get("sn40l")`` reads ``systems/sn40l.toml`` once and returns the frozen spec; ``get("host")``
returns this machine, measured by :func:`accelkit.hardware.calibrate`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from accelkit.errors import UnknownNameError
from accelkit.hardware.capacity import chips_to_hold, holding_tiers, usable_bytes, usable_on_chip_bytes
from accelkit.hardware.spec import FAMILIES, AcceleratorSpec, fmt_bytes, load
from accelkit.hardware.table import Table

SYSTEMS_DIR = Path(__file__).with_name("systems")

BYTES_PER_PARAM = {
    "bf16 weights": 2,       # inference: the weights alone
    "fp32 weights": 4,
    "bf16 training": 16,     # Adam, mixed precision: bf16 weights + bf16 grads + fp32 master, m, v
}
"""Bytes each parameter costs, for :func:`fits` (activations not counted)."""


@cache
def _catalog() -> dict[str, AcceleratorSpec]:
    specs = {}
    for path in sorted(SYSTEMS_DIR.glob("*.toml")):
        spec = load(path, strict_sources=True)
        specs[spec.name.lower()] = spec
    return specs


def names(*, by_family: bool = False, host: bool = True) -> list[str]:
    """The catalog's names, sorted, then ``"host"`` (this machine, measured).

    ``by_family=True`` orders them along the spectrum instead: family by family, general-purpose (GPUs) to
    most specialised (the TSP), as notebook 00 draws it. ``host=False`` leaves the measured host out.
    """
    order = sorted(_catalog(), key=lambda n: (FAMILIES.index(_catalog()[n].family), n)) if by_family \
        else sorted(_catalog())
    return order + (["host"] if host else [])


def get(name: str | AcceleratorSpec) -> AcceleratorSpec:
    """The spec called ``name`` (case-insensitive); ``"host"`` measures this machine (cached).

    A spec is returned as it is, so every function that takes a target name also takes your own chip
    from :func:`load` (``ak.compile(model, x, target=ak.hardware.load("my_chip.toml"))``).
    """
    if isinstance(name, AcceleratorSpec):
        return name
    if not isinstance(name, str):
        raise UnknownNameError(
            f"a target is a chip's name or an AcceleratorSpec, not {type(name).__name__} ({name!r})",
            fix=f"e.g. target='sn40l' (known: {', '.join(names())}) or target=accelkit.hardware.load('my_chip.toml')")
    key = name.strip().lower()
    if key == "host":
        from accelkit.hardware.calibrate import calibrate

        return calibrate()
    try:
        return _catalog()[key]
    except KeyError:
        raise UnknownNameError(
            f"no system called {name!r}; known: {', '.join(names())}",
            fix="pick one of the known names as the target, or load your own chip with "
                "accelkit.hardware.load('my_chip.toml')",
        ) from None


def catalog(names: Sequence[str | AcceleratorSpec] | None = None) -> list[AcceleratorSpec]:
    """Specs in spectrum order, general-purpose to specialised (family, then name).

    ``names=None`` gives the whole catalog without the host. Entries may be names (``"host"``
    measures this machine) or specs, e.g. your own chip from :func:`load`.
    """
    if names is None:
        specs = list(_catalog().values())
    else:
        specs = [n if isinstance(n, AcceleratorSpec) else get(n) for n in names]
    return sorted(specs, key=lambda s: (FAMILIES.index(s.family), s.name))


@dataclass(frozen=True)
class Fit:
    """Where a model's bytes fit on one kind of chip (parameter state only, never activations), in the room
    the compiler may fill (:mod:`accelkit.hardware.capacity`: the usable share of on-chip SRAM).

    ``tier`` is the fastest memory tier that holds everything on one chip (``None`` if none
    does). Otherwise ``chips_needed`` chips hold it in their ``spread_tier`` (the biggest tier).
    ``chips_on_chip`` is how many chips it takes to hold everything in on-chip SRAM alone.
    """

    spec_name: str
    model_bytes: int
    tier: str | None
    chips_needed: int
    spread_tier: str
    chips_on_chip: int
    max_chips: int | None

    @property
    def on_chip(self) -> bool:
        """True when one chip holds everything in on-chip SRAM."""
        return self.chips_on_chip == 1

    @property
    def within_max_chips(self) -> bool:
        """False when it takes more chips than the largest published system."""
        return self.max_chips is None or self.chips_needed <= self.max_chips

    def summary(self) -> str:
        """Short text for a table cell: ``"sram"``, ``"hbm"``, ``"12x hbm"``; ``!`` = too many chips."""
        if self.tier is not None:
            return self.tier
        text = f"{self.chips_needed:,}x {self.spread_tier}"
        return text if self.within_max_chips else text + "!"


def fits(param_count: float, spec: AcceleratorSpec | str, bytes_per_param: float = 2) -> Fit:
    """Where ``param_count`` parameters of ``bytes_per_param`` bytes each fit on ``spec``.

    >>> fits(70e9, "h100").summary()       # 140 GB of bf16 weights, 80 GB of HBM per GPU
    '2x hbm'
    """
    if isinstance(spec, str):
        spec = get(spec)
    model_bytes = int(math.ceil(param_count * bytes_per_param))
    room = usable_bytes(spec)  # what the compiler may fill: the memory plan's figures (hardware.capacity)
    chips_on_chip = chips_to_hold(model_bytes, usable_on_chip_bytes(spec))
    tiers = holding_tiers(spec)
    tier = next((t.name for t in tiers if model_bytes <= room[t.name]), None)
    biggest = max(tiers, key=lambda t: room[t.name])
    if tier is not None:
        return Fit(spec.name, model_bytes, tier, 1, tier, chips_on_chip, spec.max_chips)
    chips = chips_to_hold(model_bytes, room[biggest.name])
    return Fit(spec.name, model_bytes, None, chips, biggest.name, chips_on_chip, spec.max_chips)


def fits_table(param_counts: dict[str, float], bytes_per_param: dict[str, float] | None = None,
               names: Sequence[str | AcceleratorSpec] | None = None, *, by_chip: bool = False) -> Table:
    """A table of :func:`fits` for every model size x parameter state x chip: text (a ``str``) that a notebook
    shows as an HTML table (:class:`accelkit.hardware.table.Table`; ``print()`` gives the text).

    ``param_counts`` maps a label ("8 B") to a parameter count; ``bytes_per_param`` maps a label
    to bytes per parameter (default: bf16 weights and bf16 Adam training). A ``!`` marks more
    chips than the largest published system. ``by_chip=True`` puts one chip per row (a narrow table that
    fits a notebook's width when the catalog is long), each model and state a column.
    """
    bytes_per_param = bytes_per_param or {k: BYTES_PER_PARAM[k] for k in ("bf16 weights", "bf16 training")}
    specs = catalog(names)
    if by_chip:
        cases = [(m, c, st, b) for m, c in param_counts.items() for st, b in bytes_per_param.items()]
        head = ["chip"] + [f"{m} {st} ({fmt_bytes(c * b)})" for m, c, st, b in cases]
        return Table(head, [[s.name] + [fits(c, s, b).summary() for _m, c, _st, b in cases] for s in specs])
    rows = [[mlabel, slabel, fmt_bytes(count * bpp)] + [fits(count, s, bpp).summary() for s in specs]
            for mlabel, count in param_counts.items() for slabel, bpp in bytes_per_param.items()]
    return Table(["model", "state", "bytes"] + [s.name for s in specs], rows, left=2)


def catalog_table(names: Sequence[str | AcceleratorSpec] | None = None) -> str:
    """The catalog side by side as text: family, 16-bit peak, on-chip memory, bandwidth."""
    specs = catalog(names)
    w = max([len("name"), *(len(s.name) for s in specs)])  # the longest name sets the column ("a100-40gb")
    head = (f"{'name':<{w}} {'family':<24} {'bf16 TFLOP/s':>12} {'16-bit TFLOP/s':>14} "
            f"{'on-chip MB':>10} {'on-chip TB/s':>12}")
    rows = [head, "-" * len(head)]
    for s in specs:
        bf16 = f"{s.peak_flops['bf16'] / 1e12:,.0f}" if "bf16" in s.peak_flops else "-"
        prec, p16 = s.peak_16bit()
        rows.append(f"{s.name:<{w}} {s.family:<24} {bf16:>12} {f'{p16 / 1e12:,.0f} {prec}':>14} "
                    f"{s.on_chip_memory_bytes / 1e6:>10,.0f} {s.on_chip_bandwidth_Bps / 1e12:>12,.1f}")
    return "\n".join(rows)
