"""One accelerator as a frozen value: every figure in SI units, every figure with its source.

An :class:`AcceleratorSpec` is what the rest of accelkit reads to simulate a chip: how many
compute units it has, how much memory sits where and how fast it moves, what peak FLOP/s it
reaches in each precision. The catalog keeps one TOML file per chip; a learner can write their
own (``accelkit.hardware.load("my_chip.toml")``) in the same format::

    name = "my_chip"
    vendor = "Me"
    family = "gpu"
    compute_units = { value = 100, source = "my datasheet" }    # a figure and its source
    on_chip_memory_bytes = 50e6                                  # a bare number works too
    on_chip_bandwidth_Bps = 5e12

    [peak_flops]
    bf16 = { value = 400e12, source = "my datasheet" }

    [[memory_tiers]]                # on-chip SRAM first, then the slower, bigger tiers
    name = "sram"
    capacity_bytes = 50e6
    bandwidth_Bps = 5e12

Numbers carry no unit strings: the unit is in the field's name (``_bytes``, ``_Bps``, ``_hz``,
``_w``). A source text that starts with ``illustrative`` marks a figure nobody published;
``derived`` marks arithmetic on published figures; ``unconfirmed`` a secondary source.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

from accelkit import boundary
from accelkit.errors import PrecisionError, SpecError, UnknownNameError
from accelkit.hardware.precision import PRECISIONS
from accelkit.hardware.precision import normalize as _precision_key

SCHEMA_VERSION = 1

FAMILIES_DIR = Path(__file__).parent / "families"


@dataclass(frozen=True)
class Family:
    """What every chip of an architecture family shares, from its TOML file in ``hardware/families/``: its
    place on the spectrum (``rank``, general-purpose first), the name of its compute unit, its execution model
    in a sentence. How the family runs a program is its module in :mod:`accelkit.families`."""

    name: str
    rank: int
    unit_name: str
    execution_model: str
    host: bool = False  # the host accelkit runs on is a chip of this family
    trades: str = ""  # what the family gains and gives up, in a sentence (the spectrum figure says it)


def _read_families() -> dict[str, Family]:
    out = []
    for path in sorted(FAMILIES_DIR.glob("*.toml")):
        with path.open("rb") as f:
            raw = tomllib.load(f)
        try:
            out.append(Family(raw["name"], int(raw["rank"]), raw["unit_name"], raw["execution_model"],
                              bool(raw.get("host", False)), str(raw.get("trades", ""))))
        except (KeyError, TypeError, ValueError) as e:  # a broken file shipped with the package
            raise SpecError(f"{path}: a family file needs name, rank, unit_name and execution_model ({e})",
                            fix="compare it with accelkit/hardware/families/gpu.toml") from None
    return {f.name: f for f in sorted(out, key=lambda f: (f.rank, f.name))}


FAMILY_INFO: dict[str, Family] = _read_families()
"""Every architecture family, by name, from general-purpose to specialised (one TOML file each)."""

FAMILIES = tuple(FAMILY_INFO)
"""Architecture families' names, from general-purpose to specialised."""

HOST_FAMILY = next(f.name for f in FAMILY_INFO.values() if f.host)
"""The family of the host accelkit runs on (its spec comes from ``hardware.calibrate``)."""

EXECUTION_MODELS = {f.name: f.execution_model for f in FAMILY_INFO.values()}
UNIT_NAMES = {f.name: f.unit_name for f in FAMILY_INFO.values()}


# Field name -> what the number means, for error messages ("must be <this>").
_NUMBERS: dict[str, str] = {
    "compute_units": "a whole number of compute units",
    "pcus": "a whole number of PCUs",
    "pmus": "a whole number of PMUs",
    "max_chips": "a whole number of chips",
    "torus_dims": "a whole number of torus dimensions (2 or 3)",
    "on_chip_memory_bytes": "a number of bytes",
    "memory_per_unit_bytes": "a number of bytes",
    "capacity_bytes": "a number of bytes",
    "on_chip_bandwidth_Bps": "a number of bytes per second",
    "fabric_Bps": "a number of bytes per second",
    "chip_to_chip_Bps": "a number of bytes per second",
    "host_link_Bps": "a number of bytes per second",
    "bandwidth_Bps": "a number of bytes per second",
    "clock_hz": "a number of hertz (cycles per second)",
    "power_w": "a number of watts",
    "matmul_efficiency": "a fraction of the peak FLOP/s (above 0, at most 1)",
    "peak_flops": "a number of FLOP/s",
}
_INTEGERS = {"compute_units", "pcus", "pmus", "max_chips", "torus_dims", "on_chip_memory_bytes",
             "memory_per_unit_bytes", "capacity_bytes"}


class FrozenMap(Mapping[str, Any]):
    """A read-only, hashable dict, so a spec can stay a frozen, hashable dataclass."""

    __slots__ = ("_d",)

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        self._d = dict(items or {})

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(frozenset(self._d.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._d) == dict(other)

    def __repr__(self) -> str:
        return repr(self._d)


@dataclass(frozen=True)
class MemoryTier:
    """One level of a chip's memory: on-chip SRAM, HBM, DDR, MemoryX, streaming memory..."""

    name: str
    capacity_bytes: int
    bandwidth_Bps: float

    def __str__(self) -> str:
        return f"{self.name} {fmt_capacity(self.capacity_bytes)} @ {fmt_si(self.bandwidth_Bps, 'B/s')}"


@dataclass(frozen=True)
class AcceleratorSpec:
    """A chip's published architecture figures (per chip / per socket), each with its source.

    ``sources`` maps a figure's key to where it comes from. Keys are field names, plus
    ``peak_flops.<precision>`` and ``memory_tiers.<tier>.capacity_bytes`` / ``.bandwidth_Bps``.
    ``chip_to_chip_Bps`` is the total of all of a chip's links, both directions, as vendors quote it.
    """

    name: str
    vendor: str
    family: str
    compute_units: int
    on_chip_memory_bytes: int
    on_chip_bandwidth_Bps: float
    peak_flops: Mapping[str, float]
    memory_tiers: tuple[MemoryTier, ...]
    memory_per_unit_bytes: int
    dtypes: tuple[str, ...]
    sources: Mapping[str, str]
    full_name: str = ""
    unit_name: str = ""
    execution_model: str = ""
    mesh_shape: tuple[int, int] | None = None
    pcus: int | None = None
    pmus: int | None = None
    functional_slices: Mapping[str, int] | None = None
    fabric_Bps: float | None = None
    clock_hz: float | None = None
    chip_to_chip_Bps: float | None = None
    host_link_Bps: float | None = None  # the link to the host CPU (PCIe...), both directions, as vendors quote it
    power_w: float | None = None
    max_chips: int | None = None
    torus_dims: int | None = None  # chips linked in a 2-D or 3-D torus (TPU ICI); None: another network
    # the share of the 16-bit peak the best large matmul reaches on the real chip (measured: its "maximum
    # achievable matmul FLOPS"); None where nobody published one (the family's default then applies)
    matmul_efficiency: float | None = None
    notes: str = ""

    # ---- questions a learner asks of a chip

    def peak(self, precision: Any) -> float:
        """Peak FLOP/s in ``precision`` ("bf16", "bfloat16" or ``torch.bfloat16``)."""
        key = _precision_key(precision)
        if key not in self.peak_flops:
            have = ", ".join(self.peak_flops)
            raise PrecisionError(
                f"{self.name} has no {key} peak; it has: {have}",
                fix=f"use one of {have}, e.g. spec.peak({next(iter(self.peak_flops))!r})",
            )
        return self.peak_flops[key]

    def peak_16bit(self) -> tuple[str, float]:
        """The 16-bit training precision this chip offers and its peak: bf16 if it has it, else fp16."""
        for key in ("bf16", "fp16", "fp32"):
            if key in self.peak_flops:
                return key, self.peak_flops[key]
        key = next(iter(self.peak_flops))
        return key, self.peak_flops[key]

    def tier(self, name: str) -> MemoryTier:
        """The memory tier called ``name`` (case-insensitive)."""
        for t in self.memory_tiers:
            if t.name.lower() == name.lower():
                return t
        raise UnknownNameError(
            f"{self.name} has no memory tier {name!r}; it has: {', '.join(t.name for t in self.memory_tiers)}"
        )

    def source(self, key: str) -> str:
        """Where the figure ``key`` comes from ("" if no source was given)."""
        return self.sources.get(key, "")

    def is_illustrative(self, key: str) -> bool:
        """True when nobody published this figure (its source starts with "illustrative")."""
        return self.source(key).lower().startswith("illustrative")

    def figure_keys(self) -> list[str]:
        """Keys of every figure this spec holds (the keys ``sources`` should cover)."""
        keys = [f for f in _FIGURE_FIELDS if getattr(self, f) is not None]
        keys += [f"peak_flops.{p}" for p in self.peak_flops]
        for t in self.memory_tiers:
            keys += [f"memory_tiers.{t.name}.capacity_bytes", f"memory_tiers.{t.name}.bandwidth_Bps"]
        return keys

    def describe(self) -> str:
        """A short multi-line summary with units; ``*`` marks illustrative figures."""

        def mark(key: str) -> str:
            return "*" if self.is_illustrative(key) else ""

        units = f"{self.compute_units:,} {self.unit_name}{'s' if self.compute_units != 1 else ''}"
        if self.pmus:
            units += f" + {self.pmus:,} PMUs"
        if self.mesh_shape:
            units += f" (drawn as {self.mesh_shape[0]} x {self.mesh_shape[1]}{mark('mesh_shape')})"
        if self.functional_slices:
            units += " (" + ", ".join(f"{n} {k}" for k, n in self.functional_slices.items()) + ")"
        peaks = ", ".join(f"{fmt_si(v, 'FLOP/s')}{mark('peak_flops.' + k)} {k}"
                          for k, v in self.peak_flops.items())
        per_unit = "PMU" if self.pmus else self.unit_name
        lines = [
            f"{self.name}: {self.full_name} [{self.family}]",
            f"  compute:   {units}",
            f"  peak:      {peaks}",
            f"  on chip:   {fmt_bytes(self.on_chip_memory_bytes)}{mark('on_chip_memory_bytes')} at "
            f"{fmt_si(self.on_chip_bandwidth_Bps, 'B/s')}{mark('on_chip_bandwidth_Bps')}"
            f" ({fmt_bytes(self.memory_per_unit_bytes)}{mark('memory_per_unit_bytes')} per {per_unit})",
            "  memory:    " + " | ".join(
                f"{t.name} {fmt_capacity(t.capacity_bytes)}{mark(f'memory_tiers.{t.name}.capacity_bytes')} @ "
                f"{fmt_si(t.bandwidth_Bps, 'B/s')}{mark(f'memory_tiers.{t.name}.bandwidth_Bps')}"
                for t in self.memory_tiers),
        ]
        extras = []
        if self.clock_hz:
            extras.append(f"clock {fmt_si(self.clock_hz, 'Hz')}{mark('clock_hz')}")
        if self.chip_to_chip_Bps:
            extras.append(f"links {fmt_si(self.chip_to_chip_Bps, 'B/s')}{mark('chip_to_chip_Bps')}")
        if self.host_link_Bps:
            extras.append(f"host link {fmt_si(self.host_link_Bps, 'B/s')}{mark('host_link_Bps')}")
        if self.power_w:
            extras.append(f"{self.power_w:g} W")
        if self.max_chips:
            extras.append(f"up to {self.max_chips:,} chip{'s' if self.max_chips != 1 else ''}{mark('max_chips')}")
        if self.torus_dims:
            extras.append(f"{self.torus_dims}-D torus{mark('torus_dims')}")
        if extras:
            lines.append("  chip:      " + ", ".join(extras))
        lines.append(f"  execution: {self.execution_model}")
        if any(self.is_illustrative(k) for k in self.figure_keys()):
            lines.append("  (* illustrative: no public source)")
        return "\n".join(lines)

    # ---- plain data in and out (a compiled artifact embeds the spec as JSON)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data; ``from_dict(spec.to_dict()) == spec``."""
        out: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "memory_tiers":
                v = [{"name": t.name, "capacity_bytes": t.capacity_bytes, "bandwidth_Bps": t.bandwidth_Bps}
                     for t in v]
            elif isinstance(v, Mapping):
                v = dict(v)
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, origin: str = "<dict>") -> AcceleratorSpec:
        """Rebuild a spec from :meth:`to_dict` output (validated like a TOML file)."""
        values = {k: v for k, v in data.items() if k not in ("sources", "schema_version")}
        version = data.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise SpecError(f"{origin}: schema_version {version} is not {SCHEMA_VERSION}",
                            fix="re-create the spec with this version of accelkit")
        return _build(values, dict(data.get("sources", {})), origin=origin, strict=False)

    def to_toml(self) -> str:
        """This spec as a TOML file in the catalog's format: copy, edit, then ``load()`` it."""
        d = self.to_dict()
        lines = [f"# accelkit hardware spec (schema {SCHEMA_VERSION}): figure = {{ value = ..., source = \"...\" }}"]
        for key in ("name", "full_name", "vendor", "family", "unit_name", "execution_model", "notes"):
            lines.append(f"{key} = {_toml_value(d[key])}")
        for key in _FIGURE_FIELDS:
            if d[key] is not None:
                lines.append(f"{key} = {_toml_figure(d[key], self.source(key))}")
        lines += ["", "[peak_flops]"]
        lines += [f"{p} = {_toml_figure(v, self.source('peak_flops.' + p))}" for p, v in d["peak_flops"].items()]
        for t in self.memory_tiers:
            base = f"memory_tiers.{t.name}"
            lines += ["", "[[memory_tiers]]", f"name = {_toml_value(t.name)}",
                      f"capacity_bytes = {_toml_figure(t.capacity_bytes, self.source(base + '.capacity_bytes'))}",
                      f"bandwidth_Bps = {_toml_figure(t.bandwidth_Bps, self.source(base + '.bandwidth_Bps'))}"]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.describe()


# Fields that hold a figure (and so want a source), in file order.
_FIGURE_FIELDS = ("compute_units", "mesh_shape", "pcus", "pmus", "functional_slices",
                  "on_chip_memory_bytes", "memory_per_unit_bytes", "on_chip_bandwidth_Bps", "fabric_Bps",
                  "clock_hz", "chip_to_chip_Bps", "host_link_Bps", "power_w", "max_chips", "torus_dims",
                  "matmul_efficiency", "dtypes")
_TEXT_FIELDS = ("name", "vendor", "family", "full_name", "unit_name", "execution_model", "notes")
_REQUIRED = {
    "name": "a short name, e.g. \"my_chip\"",
    "vendor": "the maker's name",
    "family": "one of " + ", ".join(FAMILIES),
    "compute_units": _NUMBERS["compute_units"],
    "on_chip_memory_bytes": _NUMBERS["on_chip_memory_bytes"],
    "on_chip_bandwidth_Bps": _NUMBERS["on_chip_bandwidth_Bps"],
    "peak_flops": "a table of FLOP/s per precision, e.g. [peak_flops] bf16 = 400e12",
}
_KNOWN = set(_FIGURE_FIELDS) | set(_TEXT_FIELDS) | {"peak_flops", "memory_tiers", "sources"}


# ---- loading


def load(path: str | Path, *, strict_sources: bool = False) -> AcceleratorSpec:
    """Read a chip from a TOML file; a bad file raises :class:`SpecError` naming file, field and unit.

    With ``strict_sources`` every figure must carry a source (the catalog's own files do);
    otherwise a figure without one gets the source "<file>: no source given".
    """
    path = boundary.path("path", path, example="accelkit.hardware.load('my_chip.toml')")
    raw = _read_toml(path)
    values, sources = _split_sources(raw, path.name)
    return _build(values, sources, origin=path.name, strict=strict_sources, where=str(path))


def _read_toml(path: Path, depth: int = 0) -> dict[str, Any]:
    """A spec file's table; ``extends = "other.toml"`` (a file beside it, never a path) starts from that file:
    the variant's keys replace the base's, its ``[peak_flops]`` entries and its ``[[memory_tiers]]`` (by name)
    replace or add to the base's, so a part sold in two sizes says only what differs."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file", fix="check the path") from None
    except IsADirectoryError:
        raise SpecError(f"{path} is a folder, not a chip's TOML file", fix="name the .toml file inside it") from None
    except UnicodeDecodeError:
        raise SpecError(f"{path.name} is not a text file (not UTF-8), so not a chip's TOML file", where=str(path),
                        fix="pass the chip's .toml file (see accelkit/hardware/systems/ for examples)") from None
    except OSError as e:
        raise SpecError(f"{path}: cannot be read ({e.strerror or e})", fix="check the path and its permissions") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path.name}: not valid TOML: {e}", where=str(path),
                        fix="fix the syntax at that line (strings in quotes, one key = value per line)") from None
    base_name = raw.pop("extends", None)
    if base_name is None:
        return raw
    if not isinstance(base_name, str) or Path(base_name).name != base_name or not base_name.endswith(".toml"):
        raise SpecError(f"{path.name}: extends = {base_name!r} must name a .toml file in the same folder",
                        where=str(path), fix='e.g. extends = "a100.toml"')
    if depth >= 3:
        raise SpecError(f"{path.name}: extends goes more than 3 files deep", where=str(path),
                        fix="extend the base file directly")
    base = _read_toml(path.parent / base_name, depth + 1)
    merged = {**base, **{k: v for k, v in raw.items() if k not in ("peak_flops", "memory_tiers", "sources")}}
    merged["peak_flops"] = {**base.get("peak_flops", {}), **raw.get("peak_flops", {})}
    tiers = {t.get("name"): t for t in base.get("memory_tiers", [])}
    for t in raw.get("memory_tiers", []):
        tiers[t.get("name")] = {**tiers.get(t.get("name"), {}), **t}
    merged["memory_tiers"] = list(tiers.values())
    if "sources" in base or "sources" in raw:
        merged["sources"] = {**base.get("sources", {}), **raw.get("sources", {})}
    return merged


def _split_sources(raw: dict[str, Any], origin: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Turn ``{ value = x, source = "s" }`` figures into plain values plus a sources dict."""
    sources: dict[str, str] = {}
    extra = raw.get("sources", {})
    if not isinstance(extra, dict):
        raise SpecError(f"{origin}: field 'sources' must be a table of field = \"source text\"",
                        fix='write [sources] then one line per figure, e.g. peak_flops.bf16 = "vendor datasheet, p. 2"')

    def flatten(table: dict[str, Any], prefix: str = "") -> None:  # [sources] peak_flops.bf16 = "..." nests
        for k, v in table.items():
            if isinstance(v, dict):
                flatten(v, f"{prefix}{k}.")
            else:
                sources[f"{prefix}{k}"] = str(v)

    flatten(extra)

    def unwrap(v: Any, key: str) -> Any:
        if isinstance(v, dict) and "value" in v:
            unknown = set(v) - {"value", "source"}
            if unknown:
                raise SpecError(f"{origin}: field '{key}' has unknown keys {sorted(unknown)}; "
                                "a figure is { value = ..., source = \"...\" }",
                                fix=f'write {key} = {{ value = 1.0e12, source = "where the figure comes from" }}')
            if "source" in v:
                sources[key] = str(v["source"])
            return v["value"]
        return v

    values: dict[str, Any] = {}
    for key, v in raw.items():
        if key == "sources":
            continue
        if key == "peak_flops" and isinstance(v, dict):
            values[key] = {p: unwrap(x, f"peak_flops.{p}") for p, x in v.items()}
        elif key == "memory_tiers" and isinstance(v, list):
            tiers = []
            for i, t in enumerate(v):
                if not isinstance(t, dict):
                    tiers.append(t)
                    continue
                tname = t.get("name", f"#{i}")
                tiers.append({k: unwrap(x, f"memory_tiers.{tname}.{k}") for k, x in t.items()})
            values[key] = tiers
        else:
            values[key] = unwrap(v, key)
    return values, sources


_UNIT_WORDS = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18,
               "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40, "pi": 2**50}


def _suggest(field_name: str, raw: Any) -> str | None:
    """For '520MB' or '1.6 TB/s' suggest the plain number to write instead."""
    if not isinstance(raw, str):
        return None
    m = re.fullmatch(r"\s*([0-9][0-9_.,]*)\s*([kKmMgGtTpPeE]i?)?\s*[a-zA-Z/]*\s*", raw)
    if not m:
        return None
    try:
        number = float(m.group(1).replace(",", "").replace("_", ""))
    except ValueError:
        return None
    prefix = (m.group(2) or "").lower()
    if prefix.endswith("i"):      # KiB, MiB...: binary, so write the whole number
        plain = str(int(number * _UNIT_WORDS[prefix]))
    elif prefix:                  # kB, MB, TB/s...: decimal, so 520MB -> 520e6
        plain = f"{number:g}e{round(math.log10(_UNIT_WORDS[prefix]))}"
    else:
        plain = f"{number:g}"
    return f"write the plain number: {field_name} = {plain}"


def _number(origin: str, key: str, raw: Any, kind: str, *, positive: bool = True,
            where: str | None = None) -> float | int:
    expected = _NUMBERS[kind]
    if isinstance(raw, bool) or not isinstance(raw, int | float) or (isinstance(raw, float) and not math.isfinite(raw)):
        raise SpecError(f"{origin}: field '{key}' must be {expected} (got {raw!r})", where=where,
                        fix=_suggest(key.split(".")[-1], raw) or "units go in the field name, not the value")
    if positive and raw <= 0:
        raise SpecError(f"{origin}: field '{key}' must be {expected} greater than 0 (got {raw!r})", where=where,
                        fix=f"give {key} its published value (> 0), with its source")
    if kind in _INTEGERS:
        if kind not in ("on_chip_memory_bytes", "memory_per_unit_bytes", "capacity_bytes") and raw != int(raw):
            raise SpecError(f"{origin}: field '{key}' must be {expected} (got {raw!r})", where=where,
                            fix=f"give {key} as a whole number")
        return int(round(raw))
    return float(raw)


@cache
def _torch_dtype_names() -> frozenset[str]:
    import torch

    return frozenset(n for n in dir(torch) if isinstance(getattr(torch, n, None), torch.dtype))


def _build(values: dict[str, Any], sources: dict[str, str], *, origin: str, strict: bool,
           where: str | None = None) -> AcceleratorSpec:
    """Validate plain values (no units, no inline sources) and make the spec.

    ``origin`` (the file's name) starts every error message; ``where`` (its full path) goes with it.
    """

    def num(key: str, raw: Any, kind: str) -> float | int:
        return _number(origin, key, raw, kind, where=where)

    _check_fields(values, origin, where)
    family = values["family"]
    v: dict[str, Any] = {k: values.get(k, "") for k in _TEXT_FIELDS}
    v["full_name"] = v["full_name"] or v["name"]
    v["unit_name"] = v["unit_name"] or UNIT_NAMES[family]
    v["execution_model"] = v["execution_model"] or EXECUTION_MODELS[family]
    for key in ("compute_units", "on_chip_memory_bytes", "on_chip_bandwidth_Bps"):
        v[key] = num(key, values[key], key)
    for key in ("pcus", "pmus", "fabric_Bps", "clock_hz", "chip_to_chip_Bps", "host_link_Bps", "power_w",
                "max_chips", "torus_dims", "memory_per_unit_bytes", "matmul_efficiency"):
        v[key] = None if values.get(key) is None else num(key, values[key], key)
    if v["matmul_efficiency"] is not None and v["matmul_efficiency"] > 1:
        raise SpecError(f"{origin}: field 'matmul_efficiency' must be {_NUMBERS['matmul_efficiency']} "
                        f"(got {v['matmul_efficiency']!r})", where=where,
                        fix="write the share of the peak, e.g. 0.80 for 80%")

    if v["memory_per_unit_bytes"] is None:
        per = v["pmus"] or v["compute_units"]
        v["memory_per_unit_bytes"] = int(round(v["on_chip_memory_bytes"] / per))
        sources.setdefault("memory_per_unit_bytes", f"derived: on_chip_memory_bytes / {per:,} units")

    v["mesh_shape"], v["functional_slices"] = _layout(values, num, origin, where)
    v["peak_flops"] = _peaks(values, num, origin, where)
    v["memory_tiers"] = _tiers(values, v, sources, num, origin, where)
    v["dtypes"] = _dtypes(values, origin, where)
    if not isinstance(sources, dict) or not all(isinstance(s, str) for s in sources.values()):
        raise SpecError(f"{origin}: field 'sources' must map field names to text", where=where,
                        fix='e.g. [sources] peak_flops.bf16 = "vendor datasheet"')
    spec = AcceleratorSpec(sources=FrozenMap(), **v)
    missing = [k for k in spec.figure_keys() if not sources.get(k, "").strip()]
    if missing and strict:
        raise SpecError(f"{origin}: figure(s) without a source: {', '.join(missing)}", where=where,
                        fix="write each as { value = ..., source = \"where it was published\" }; "
                            "start the source with 'illustrative' if nobody published it")
    for k in missing:
        sources[k] = f"{origin}: no source given"
    known = set(spec.figure_keys())
    return replace(spec, sources=FrozenMap({k: s for k, s in sources.items() if k in known}))


_Num = Callable[[str, Any, str], float | int]


def _check_fields(values: dict[str, Any], origin: str, where: str | None) -> None:
    """Every required field there, no unknown one, text where text belongs, a known family."""
    for key, what in _REQUIRED.items():
        if values.get(key) is None:
            raise SpecError(f"{origin}: missing required field '{key}' ({what})", where=where,
                            fix=f"add {key} = ... with its source (a catalog file in accelkit/hardware/systems/ "
                                "shows every field), or extends = \"a100.toml\" to start from one")
    unknown = sorted(set(values) - _KNOWN)
    if unknown:
        raise SpecError(f"{origin}: unknown field(s) {', '.join(map(repr, unknown))}",
                        where=where, fix="known fields: " + ", ".join(sorted(_KNOWN)))
    for key in _TEXT_FIELDS:
        if key in values and not isinstance(values[key], str):
            raise SpecError(f"{origin}: field '{key}' must be text (got {values[key]!r})", where=where,
                            fix=f'quote it: {key} = "..."')
    family = values["family"]
    if family not in FAMILIES:
        raise SpecError(f"{origin}: field 'family' must be one of {', '.join(FAMILIES)} (got {family!r})",
                        where=where)



def _layout(values: dict[str, Any], num: _Num, origin: str, where: str | None) -> tuple[Any, Any]:
    """The mesh shape (rows, cols) and the functional slices (kind -> count), each None when not given."""
    mesh = values.get("mesh_shape")
    if mesh is not None:
        if (not isinstance(mesh, list | tuple) or len(mesh) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in mesh)):
            raise SpecError(f"{origin}: field 'mesh_shape' must be [rows, cols], two whole numbers (got {mesh!r})",
                            where=where, fix="e.g. mesh_shape = [750, 994]")
        mesh = (int(mesh[0]), int(mesh[1]))

    slices = values.get("functional_slices")
    if slices is not None:
        if not isinstance(slices, dict) or not slices:
            raise SpecError(f"{origin}: field 'functional_slices' must be a table of kind = count "
                            f"(got {slices!r})", where=where)
        slices = FrozenMap({str(k): int(num(f"functional_slices.{k}", n, "compute_units"))
                            for k, n in slices.items()})
    return mesh, slices



def _peaks(values: dict[str, Any], num: _Num, origin: str, where: str | None) -> FrozenMap:
    """FLOP/s per precision, in the precisions' order."""
    peaks = values["peak_flops"]
    if not isinstance(peaks, dict) or not peaks:
        raise SpecError(f"{origin}: field 'peak_flops' must be a table of FLOP/s per precision "
                        f"(got {peaks!r})", where=where, fix="[peak_flops] then e.g. bf16 = 400e12")
    for p in peaks:
        if p not in PRECISIONS:
            raise SpecError(f"{origin}: field 'peak_flops.{p}': unknown precision {p!r}; use one of "
                            f"{', '.join(PRECISIONS)}", where=where)
    return FrozenMap({p: num(f"peak_flops.{p}", x, "peak_flops")
                     for p, x in sorted(peaks.items(), key=lambda kv: PRECISIONS.index(kv[0]))})



def _tiers(values: dict[str, Any], v: dict[str, Any], sources: dict[str, str], num: _Num, origin: str,
           where: str | None) -> tuple[MemoryTier, ...]:
    """The memory tiers, fastest first (one SRAM tier from the on-chip figures when none is given)."""
    tiers_raw = values.get("memory_tiers")
    if tiers_raw is None:
        tiers_raw = [{"name": "sram", "capacity_bytes": v["on_chip_memory_bytes"],
                      "bandwidth_Bps": v["on_chip_bandwidth_Bps"]}]
        for k in ("capacity_bytes", "bandwidth_Bps"):
            src_key = "on_chip_memory_bytes" if k == "capacity_bytes" else "on_chip_bandwidth_Bps"
            if src_key in sources:
                sources.setdefault(f"memory_tiers.sram.{k}", sources[src_key])
    if not isinstance(tiers_raw, list) or not tiers_raw:
        raise SpecError(f"{origin}: field 'memory_tiers' must be a list of [[memory_tiers]] tables "
                        "with name, capacity_bytes, bandwidth_Bps", where=where)
    tiers = []
    for i, t in enumerate(tiers_raw):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise SpecError(f"{origin}: field 'memory_tiers' entry {i + 1} needs a name (text), "
                            "capacity_bytes and bandwidth_Bps", where=where)
        name = t["name"]
        for k in ("capacity_bytes", "bandwidth_Bps"):
            if k not in t:
                raise SpecError(f"{origin}: missing required field 'memory_tiers.{name}.{k}' ({_NUMBERS[k]})",
                                where=where)
        extra = set(t) - {"name", "capacity_bytes", "bandwidth_Bps"}
        if extra:
            raise SpecError(f"{origin}: memory tier {name!r} has unknown field(s) {sorted(extra)}", where=where,
                            fix="a tier has name, capacity_bytes and bandwidth_Bps (see a catalog file)")
        tiers.append(MemoryTier(name, int(num(f"memory_tiers.{name}.capacity_bytes",
                                                  t["capacity_bytes"], "capacity_bytes")),
                                float(num(f"memory_tiers.{name}.bandwidth_Bps",
                                              t["bandwidth_Bps"], "bandwidth_Bps"))))
    if len({t.name for t in tiers}) != len(tiers):
        raise SpecError(f"{origin}: field 'memory_tiers' has two tiers with the same name", where=where,
                        fix="give each [[memory_tiers]] its own name (e.g. sram, hbm, ddr)")
    return tuple(tiers)



def _dtypes(values: dict[str, Any], origin: str, where: str | None) -> tuple[str, ...]:
    """The torch dtypes the chip computes in (float32 when not given)."""
    dtypes = values.get("dtypes", ["float32"])
    if not isinstance(dtypes, list | tuple) or not all(isinstance(d, str) for d in dtypes):
        raise SpecError(f"{origin}: field 'dtypes' must be a list of torch dtype names, e.g. "
                        f"[\"float32\", \"bfloat16\"] (got {dtypes!r})", where=where)
    bad = [d for d in dtypes if d not in _torch_dtype_names()]
    if bad:
        raise SpecError(f"{origin}: field 'dtypes': {', '.join(map(repr, bad))} is not a torch dtype name",
                        where=where, fix="use names like float32, bfloat16, float16, int32, int64, bool")
    return tuple(dtypes)



# ---- formatting


def fmt_bytes(n: float) -> str:
    """Bytes in decimal SI units, as vendors quote them: ``fmt_bytes(520e6) == "520 MB"``."""
    return fmt_si(n, "B")


def fmt_capacity(n: float) -> str:
    """A memory's capacity as its maker counts it: a whole number of GiB or MiB in binary units (HBM stacks and
    SRAMs come in powers of two: Gaudi 2's "96 GB" is 96 GiB, ``fmt_capacity(96 * 2**30) == "96 GiB"``), anything
    else in decimal SI units (``fmt_capacity(80e9) == "80 GB"``)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20)):
        if n >= size and float(n) % size == 0:
            return f"{n / size:,.0f} {unit}"
    return fmt_bytes(n)


def fmt_sig(x: float, digits: int = 3) -> str:
    """A number to ``digits`` significant figures, grouped by thousands: ``fmt_sig(2642248.0) == "2,640,000"``,
    ``fmt_sig(0.8512) == "0.851"``. For rates a reader compares (samples/s, tokens/s)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    exp = math.floor(math.log10(abs(x)))
    if exp >= digits - 1:
        return f"{round(x, digits - 1 - exp):,.0f}"
    return f"{x:.{digits - 1 - exp}f}" if exp >= -4 else f"{x:.{digits}g}"


def fmt_si(x: float, unit: str) -> str:
    """A number with an SI prefix and 3 significant figures: ``fmt_si(638e12, "FLOP/s") == "638 TFLOP/s"``."""
    if x == 0:
        return f"0 {unit}"
    for prefix, scale in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale * 0.9995:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _toml_value(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {v!r} as TOML")


def _toml_figure(v: Any, source: str) -> str:
    return f"{{ value = {_toml_value(v)}, source = {_toml_value(source)} }}"


__all__ = [
    "EXECUTION_MODELS", "FAMILIES", "FAMILY_INFO", "HOST_FAMILY", "PRECISIONS", "SCHEMA_VERSION", "UNIT_NAMES",
    "AcceleratorSpec", "Family", "FrozenMap", "MemoryTier", "fmt_bytes", "fmt_si", "load",
]
