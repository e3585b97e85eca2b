"""Measure this machine with PyTorch micro-benchmarks: the ``host`` spec.

The figures are what PyTorch reaches here (``torch.mm`` throughput, a large tensor copy), not
datasheet peaks, and every source says "measured on this host <date>". The result is cached as
JSON in ``$ACCELKIT_CACHE_DIR/host.json`` (else ``~/.cache/accelkit/host.json``) and reused while
the cache's schema version, torch version and thread count match. A calibration takes 1-2 s.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import torch

from accelkit.errors import AccelkitError
from accelkit.hardware.spec import HOST_FAMILY, AcceleratorSpec

CACHE_SCHEMA = 1
"""Bump when the measurement or the spec format changes: older caches are then ignored."""

_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")


def cache_path() -> Path:
    """Where the host calibration is cached."""
    base = os.environ.get("ACCELKIT_CACHE_DIR")
    return (Path(base) if base else Path.home() / ".cache" / "accelkit") / "host.json"


def calibrate(force: bool = False) -> AcceleratorSpec:
    """The ``host`` spec: this CPU, measured (cached on disk; ``force=True`` measures again)."""
    path = cache_path()
    if not force:
        cached = _read_cache(path)
        if cached is not None:
            return cached
    for _ in range(MEASURE_TRIES):  # a busy machine can break physics for one measurement: measure again
        spec = _measure()
        broken = physics_errors(spec)
        if not broken:
            break
    if broken:
        # a shared machine (a workshop's server) can keep the CPU too busy for every try: the cache's small copies
        # wait on threads the other programs hold. Not cached; the cache taken at no less than the memory behind it
        return _bounded(spec, "; ".join(broken))
    _write_cache(path, spec)
    return spec


def _bounded(spec: AcceleratorSpec, broken: str) -> AcceleratorSpec:
    """``spec`` with each memory tier at least as fast as the one behind it (a lower bound, said in its source):
    what a calibration disturbed on every try is used for this session only, never cached."""
    d = spec.to_dict()
    tiers = d["memory_tiers"]
    for i in range(len(tiers) - 2, -1, -1):
        if tiers[i]["bandwidth_Bps"] < tiers[i + 1]["bandwidth_Bps"]:
            tiers[i]["bandwidth_Bps"] = tiers[i + 1]["bandwidth_Bps"]
            d["sources"][f"memory_tiers.{tiers[i]['name']}.bandwidth_Bps"] = (
                f"the measurement was disturbed on all {MEASURE_TRIES} tries ({broken}: other programs were using "
                f"this machine), so the {tiers[i]['name']} is taken at the {tiers[i + 1]['name']}'s measured rate, a "
                "lower bound; not cached: run ak.hardware.calibrate(force=True) on a quieter machine")
    d["on_chip_bandwidth_Bps"] = tiers[0]["bandwidth_Bps"]
    d["sources"]["on_chip_bandwidth_Bps"] = d["sources"][f"memory_tiers.{tiers[0]['name']}.bandwidth_Bps"]
    return AcceleratorSpec.from_dict(d, origin="host calibration (disturbed; not cached)")


MEASURE_TRIES = 3


class CalibrationError(AccelkitError):
    """A host measurement that cannot be true (a cache slower than the memory behind it). ``calibrate`` no longer
    raises it (it bounds such a measurement and does not cache it); kept for code that catches it."""


def physics_errors(spec: AcceleratorSpec) -> list[str]:
    """What in a measured host spec cannot be true of a real machine: each memory tier at least as fast as the
    one behind it (a cache slower than DRAM means the measurement was disturbed); empty when it holds."""
    out = []
    tiers = list(spec.memory_tiers)
    for near, far in zip(tiers, tiers[1:], strict=False):
        if near.bandwidth_Bps < far.bandwidth_Bps:
            out.append(f"the {near.name} measured {near.bandwidth_Bps / 1e9:.3g} GB/s, slower than the {far.name} "
                       f"behind it at {far.bandwidth_Bps / 1e9:.3g} GB/s")
    return out


def _cache_key() -> dict[str, Any]:
    return {"schema_version": CACHE_SCHEMA, "torch_version": torch.__version__,
            "num_threads": torch.get_num_threads()}


def _read_cache(path: Path) -> AcceleratorSpec | None:
    """The cached spec, or ``None`` when missing, unreadable or made by another schema / torch."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if any(data.get(k) != v for k, v in _cache_key().items()):
            return None
        spec = AcceleratorSpec.from_dict(data["spec"], origin=str(path))
    except (OSError, ValueError, KeyError, TypeError, AccelkitError):
        return None
    if physics_errors(spec):  # a cache written before this check, or edited by hand: measure again
        return None
    return spec


def _write_cache(path: Path, spec: AcceleratorSpec) -> None:
    data = {**_cache_key(), "date": _dt.date.today().isoformat(), "spec": spec.to_dict()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a read-only home still gets a spec, just not a cached one


# ---- micro-benchmarks


AGREE = 0.10  # the three fastest calls agree within 10% ...
EXTRA_BUDGET = 4.0  # ... or up to this many times the budget has gone by


def _best_time(fn: Any, budget_s: float, min_reps: int = 3) -> tuple[float, int, float]:
    """Fastest of repeated calls of ``fn`` (after one warm-up): at least ``budget_s`` seconds of calls, more until
    the three fastest agree within :data:`AGREE`. Returns (best, calls, spread of the three fastest)."""
    fn()
    times: list[float] = []
    start = time.perf_counter()

    def spread() -> float:
        top = sorted(times)[:3]
        return (top[-1] - top[0]) / top[0] if len(top) == 3 and top[0] > 0 else float("inf")

    while True:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - start
        if len(times) >= min_reps and elapsed > budget_s and (spread() <= AGREE or elapsed > budget_s * EXTRA_BUDGET):
            break
    return min(times), len(times), spread()


def _matmul_flops(dtype: torch.dtype, budget_s: float) -> tuple[float, str] | None:
    """FLOP/s of ``torch.mm`` on square matrices big enough to take ~10 ms; None if it cannot run."""
    try:
        n = 256
        torch.mm(torch.ones(64, 64).to(dtype), torch.ones(64, 64).to(dtype))  # warm-up: thread pool, kernels
        while True:
            a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
            t0 = time.perf_counter()
            torch.mm(a, b)  # (n, n) @ (n, n) -> (n, n)
            if time.perf_counter() - t0 > 0.01 or n >= 1024:
                break
            n *= 2
        best, reps, spread = _best_time(lambda: torch.mm(a, b), budget_s)
    except (RuntimeError, TypeError):
        return None
    return 2 * n**3 / best, f"torch.mm {n}x{n}, best of {reps} (the three fastest within {spread:.0%})"


def _copy_Bps(nbytes: int, budget_s: float, inner: int = 1) -> tuple[float, str]:
    """Bytes per second moved by ``dst.copy_(src)`` (read + write) for float32 tensors of ``nbytes``."""
    src = torch.ones(nbytes // 4)
    dst = torch.empty_like(src)

    def run() -> None:
        for _ in range(inner):
            dst.copy_(src)

    best, reps, spread = _best_time(run, budget_s)
    return (2 * nbytes * inner / best,
            f"copy of a {nbytes / 2**20:g} MiB tensor, best of {reps} (the three fastest within {spread:.0%})")


def _copy_Bps_best(nbytes: int, budget_s: float, inner: int = 1) -> tuple[float, str]:  # noqa: N802
    """:func:`_copy_Bps` on all of PyTorch's threads and on one, the faster: on a machine other programs keep busy,
    a copy split over threads waits at each step for a thread that is not running (a 1 MiB copy on 2 threads beside
    two busy processes: 0.26 GB/s, on 1 thread: 114 GB/s, measured here), which no tier of memory is that slow at."""
    threads = torch.get_num_threads()
    best, how = _copy_Bps(nbytes, budget_s, inner)
    if threads > 1:
        torch.set_num_threads(1)
        try:
            one, how_one = _copy_Bps(nbytes, budget_s, inner)
        finally:
            torch.set_num_threads(threads)
        if one > best:
            return one, f"{how_one}, on 1 thread (faster than on {threads}: the other threads were busy)"
        how += f", on {threads} threads (faster than on 1)"
    return best, how


def _cache_bytes() -> int | None:
    """Size of the largest CPU cache level (Linux sysfs), or None if it cannot be read."""
    sizes = []
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip().upper()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        try:
            sizes.append(int(text.rstrip("KMG")) * scale)
        except ValueError:
            continue
    return max(sizes) if sizes else None


def _cpu_names() -> tuple[str, str]:
    """(vendor, model) from /proc/cpuinfo where it exists, else from ``platform``."""
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    vendors = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}
    vendor = vendors.get(info.get("vendor_id", ""), info.get("vendor_id", "")) or platform.system()
    model = info.get("model name") or platform.processor() or platform.machine() or "CPU"
    return vendor, model


def _measure() -> AcceleratorSpec:
    """Run the micro-benchmarks (1-2 s) and build the host spec."""
    import psutil

    today = _dt.date.today().isoformat()
    here = f"measured on this host {today}"
    sources: dict[str, str] = {}
    threads = torch.get_num_threads()
    sources["compute_units"] = f"{here}: torch.get_num_threads()"

    peaks: dict[str, float] = {}
    for key, dtype, budget in (("fp32", torch.float32, 0.3), ("fp16", torch.float16, 0.2),
                               ("bf16", torch.bfloat16, 0.2)):
        got = _matmul_flops(dtype, budget)
        if got is not None:
            peaks[key] = got[0]
            sources[f"peak_flops.{key}"] = f"{here}: {got[1]} (what PyTorch reaches, not a datasheet peak)"

    dram_Bps, how = _copy_Bps_best(64 * 2**20, 0.25)
    sources["memory_tiers.dram.bandwidth_Bps"] = f"{here}: {how}"
    cache_Bps, how = _copy_Bps_best(2**20, 0.15, inner=20)
    sources["on_chip_bandwidth_Bps"] = f"{here}: {how} (stays in cache)"
    cache = _cache_bytes()
    if cache is None:
        cache = 32 * 2**20
        sources["on_chip_memory_bytes"] = "illustrative: cache size unreadable here; 32 MiB assumed"
    else:
        sources["on_chip_memory_bytes"] = f"{here}: largest cache level in /sys/devices/system/cpu"
    total = psutil.virtual_memory().total
    sources["memory_tiers.dram.capacity_bytes"] = f"{here}: psutil.virtual_memory().total"
    sources["memory_tiers.cache.capacity_bytes"] = sources["on_chip_memory_bytes"]
    sources["memory_tiers.cache.bandwidth_Bps"] = sources["on_chip_bandwidth_Bps"]
    sources["memory_per_unit_bytes"] = f"derived: cache / {threads} threads"
    sources["dtypes"] = "PyTorch's CPU backend runs every common dtype"

    values: dict[str, Any] = {
        "name": "host", "vendor": _cpu_names()[0], "family": HOST_FAMILY, "full_name": _cpu_names()[1],
        "unit_name": "core", "compute_units": threads, "on_chip_memory_bytes": cache,
        "memory_per_unit_bytes": max(1, cache // threads), "on_chip_bandwidth_Bps": cache_Bps,
        "peak_flops": peaks, "dtypes": list(_DTYPES),
        "memory_tiers": [{"name": "cache", "capacity_bytes": cache, "bandwidth_Bps": cache_Bps},
                         {"name": "dram", "capacity_bytes": total, "bandwidth_Bps": dram_Bps}],
        "max_chips": 1,
        "notes": f"Measured with torch {torch.__version__} on {threads} threads, {today}. These are "
                 "achieved figures, lower than the CPU's datasheet peaks.",
    }
    sources["max_chips"] = "this host is one machine"
    freq = psutil.cpu_freq()
    if freq is not None and (freq.max or freq.current):
        values["clock_hz"] = (freq.max or freq.current) * 1e6
        sources["clock_hz"] = f"{here}: psutil.cpu_freq()"
    return AcceleratorSpec.from_dict({**values, "sources": sources}, origin="host calibration")
