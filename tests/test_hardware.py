"""The hardware catalog, user spec files, host calibration and "what fits where"."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
from pathlib import Path

import pytest
import torch

import accelkit as ak
from accelkit import hardware as hw
from accelkit.errors import AccelkitError, PrecisionError, SpecError, UnknownNameError

CATALOG = ["a100", "a100-40gb", "bow", "gaudi2", "gaudi3", "gc200", "gh200", "h100", "inf2", "mi250", "mi300x",
           "sn30", "sn40l", "tpu-v4", "tpu-v5e", "trn1", "tsp", "wse2", "wse3"]
calibrate_module = importlib.import_module("accelkit.hardware.calibrate")


# ---- the catalog


def test_names_lists_the_catalog_then_host() -> None:
    assert hw.names() == CATALOG + ["host"]


def test_names_by_family_follow_the_spectrum() -> None:
    """General-purpose to specialised (family rank), by name within a family; the host left out on request."""
    ordered = hw.names(by_family=True, host=False)
    assert sorted(ordered) == CATALOG
    ranks = [hw.FAMILIES.index(hw.get(n).family) for n in ordered]
    assert ranks == sorted(ranks) and ordered[0].startswith("a100") and ordered[-1] == "tsp"
    assert hw.names(by_family=True)[-1] == "host"


@pytest.mark.parametrize("name", CATALOG)
def test_every_chip_loads_with_legal_values_and_a_source_per_figure(name: str) -> None:
    spec = hw.get(name)
    assert spec.name == name
    assert spec.family in hw.FAMILIES and spec.family not in ("cpu",)
    assert spec.execution_model and spec.vendor and spec.full_name
    for key in spec.figure_keys():
        assert spec.sources.get(key, "").strip(), f"{name}: figure {key} has no source"
        assert "no source given" not in spec.sources[key]
    assert set(spec.sources) == set(spec.figure_keys())
    assert spec.memory_tiers[0].capacity_bytes == spec.on_chip_memory_bytes
    assert spec.memory_tiers[0].bandwidth_Bps == spec.on_chip_bandwidth_Bps
    assert all(p in hw.PRECISIONS for p in spec.peak_flops) and "fp32" in spec.peak_flops
    assert all(v > 0 for v in spec.peak_flops.values())
    assert all(t.capacity_bytes > 0 and t.bandwidth_Bps > 0 for t in spec.memory_tiers)
    assert all(isinstance(getattr(torch, d), torch.dtype) for d in spec.dtypes)
    if spec.family != "gpu":
        assert "float64" not in spec.dtypes, "no accelerator here computes in float64"
    if spec.mesh_shape is not None:
        rows, cols = spec.mesh_shape
        cells = spec.compute_units + (spec.pmus or 0) if spec.pmus else spec.compute_units
        assert rows * cols == cells
    hash(spec)  # frozen and hashable, mappings included
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.compute_units = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.peak_flops["bf16"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize(("name", "getter", "expected"), [
    ("wse2", lambda s: s.compute_units, 850_000),
    ("wse2", lambda s: s.on_chip_memory_bytes, 40e9),
    ("wse2", lambda s: s.on_chip_bandwidth_Bps, 20e15),
    ("wse3", lambda s: s.compute_units, 900_000),
    ("wse3", lambda s: s.on_chip_memory_bytes, 44e9),
    ("sn40l", lambda s: (s.pcus, s.pmus), (1040, 1040)),
    ("sn40l", lambda s: s.on_chip_memory_bytes, 520e6),
    ("sn40l", lambda s: s.peak("bf16"), 638e12),
    ("sn40l", lambda s: (s.tier("hbm").capacity_bytes, s.tier("hbm").bandwidth_Bps), (64e9, 1.6e12)),
    ("gc200", lambda s: s.compute_units, 1472),
    ("gc200", lambda s: s.on_chip_memory_bytes, 900e6),
    ("gc200", lambda s: s.peak("fp16"), 250e12),
    ("gc200", lambda s: s.clock_hz, 1.35e9),
    ("bow", lambda s: (s.clock_hz, s.peak("fp16")), (1.85e9, 350e12)),
    ("tsp", lambda s: s.on_chip_memory_bytes, 220 * 2**20),
    ("tsp", lambda s: (s.peak("fp16"), s.peak("int8"), s.clock_hz), (188e12, 750e12, 900e6)),
    ("a100", lambda s: s.tier("hbm").bandwidth_Bps, 2.039e12),
    ("a100", lambda s: (s.compute_units, s.peak("bf16"), s.peak("fp32"), s.power_w), (108, 312e12, 19.5e12, 400)),
    ("h100", lambda s: s.peak("bf16"), 989e12),
    ("h100", lambda s: (s.peak("fp8"), s.tier("hbm").bandwidth_Bps, s.compute_units), (1979e12, 3.35e12, 132)),
    # AWS Neuron docs, Inferentia2 / Trainium Architecture: 2 NeuronCore-v2, 190 bf16 / 47.5 fp32 TFLOPS, 32 GiB HBM
    *[(n, lambda s: (s.compute_units, s.peak("bf16"), s.peak("fp32"), s.tier("hbm").capacity_bytes,
                     s.tier("hbm").bandwidth_Bps), (2, 190e12, 47.5e12, 32 * 2**30, 820e9)) for n in ("inf2", "trn1")],
    ("tpu-v4", lambda s: (s.compute_units, s.functional_slices["MXU"], s.peak("bf16"), s.tier("hbm").bandwidth_Bps,
                          s.max_chips, s.torus_dims), (2, 8, 275e12, 1.2e12, 4096, 3)),
    ("tpu-v5e", lambda s: (s.compute_units, s.functional_slices["MXU"], s.peak("bf16"), s.tier("hbm").bandwidth_Bps,
                           s.max_chips, s.torus_dims, s.chip_to_chip_Bps), (1, 4, 197e12, 819e9, 256, 2, 400e9)),
    # Intel, Hot Chips 2024 (Gaudi 3 talk): Gaudi 2 432 TFLOPS bf16, 96 GB at 2.46 TB/s, 600 W; Gaudi 3 8 MMEs, 64 TPCs,
    # 1,835 TFLOPS bf16 and fp8, 128 GB at 3.67 TB/s, 96 MB SRAM, 900 W; HBM's GB are binary (hl-smi: 98304 MiB on an
    # HL-225, 131072 MiB on an HL-325L)
    ("gaudi2", lambda s: (s.compute_units, s.peak("bf16"), s.tier("hbm").capacity_bytes, s.tier("hbm").bandwidth_Bps,
                          s.power_w), (24, 432e12, 96 * 2**30, 2.46e12, 600)),
    ("gaudi3", lambda s: (dict(s.functional_slices), s.peak("bf16"), s.peak("fp8"), s.tier("hbm").capacity_bytes,
                          s.tier("hbm").bandwidth_Bps, s.on_chip_memory_bytes, s.power_w),
     ({"MME": 8, "TPC": 64}, 1835e12, 1835e12, 128 * 2**30, 3.67e12, 96e6, 900)),
    ("mi250", lambda s: (s.compute_units, s.peak("fp16"), s.tier("hbm").capacity_bytes), (208, 362.1e12, 128e9)),
    ("mi300x", lambda s: (s.peak("bf16"), s.tier("hbm").capacity_bytes, s.tier("hbm").bandwidth_Bps),
     (1307.4e12, 192e9, 5.3e12)),
    # the Hopper GPU is h100.toml's (extends); its own HBM, and Grace's LPDDR5X over NVLink-C2C as a third tier
    ("gh200", lambda s: (s.peak("bf16"), s.compute_units, s.tier("hbm").capacity_bytes, s.tier("hbm").bandwidth_Bps,
                         s.tier("lpddr").capacity_bytes), (989e12, 132, 96e9, 4e12, 480e9)),
])
def test_figures_match_the_reference_sheet(name: str, getter, expected) -> None:  # type: ignore[no-untyped-def]
    assert getter(hw.get(name)) == expected


def test_unpublished_figures_are_marked() -> None:
    assert hw.get("wse2").is_illustrative("peak_flops.fp32")
    assert hw.get("wse2").source("memory_per_unit_bytes").startswith("derived: 40 GB / 850,000 cores")
    assert hw.get("wse2").is_illustrative("mesh_shape")
    assert hw.get("sn40l").source("memory_tiers.hbm.bandwidth_Bps").startswith("derived")
    assert hw.get("sn30").source("peak_flops.bf16").startswith("unconfirmed")
    assert not hw.get("h100").is_illustrative("peak_flops.bf16")
    for name in CATALOG:  # fp32 has a figure everywhere; where unpublished it says so
        src = hw.get(name).source("peak_flops.fp32")
        assert src.startswith(("illustrative", "unconfirmed", "NVIDIA", "AWS", "AMD")), (name, src)


def test_ipus_have_no_bf16_and_peak_says_what_they_have() -> None:
    gc200 = hw.get("gc200")
    assert "bfloat16" not in gc200.dtypes
    with pytest.raises(PrecisionError, match=r"gc200 has no bf16 peak; it has: fp32, fp16") as err:
        gc200.peak(torch.bfloat16)
    assert isinstance(err.value, AccelkitError) and isinstance(err.value, ValueError)
    assert gc200.peak_16bit() == ("fp16", 250e12)
    assert hw.get("a100").peak("bfloat16") == hw.get("a100").peak("bf16") == hw.get("a100").peak_16bit()[1]
    assert hw.get("h100").peak("torch.float32") == 67e12


def test_get_is_case_insensitive_and_unknown_names_list_the_known() -> None:
    assert hw.get("SN40L") is hw.get("sn40l")
    assert ak.hardware.get(" Wse2 ") is hw.get("wse2")
    with pytest.raises(UnknownNameError) as err:
        hw.get("tpu")
    text = str(err.value)
    assert "'tpu'" in text and all(n in text for n in hw.names())
    assert isinstance(err.value, KeyError)
    with pytest.raises(UnknownNameError, match="it has: sram, ddr"):
        hw.get("sn30").tier("hbm")


def test_describe_has_units_and_marks_illustrative() -> None:
    text = hw.get("sn40l").describe()
    assert "1,040 PCUs + 1,040 PMUs" in text
    assert "638 TFLOP/s bf16" in text
    assert "hbm 64 GB @ 1.6 TB/s" in text
    assert "244 TB/s*" in text and "illustrative" in text
    assert str(hw.get("sn40l")) == text


def test_to_dict_is_json_and_round_trips() -> None:
    for name in CATALOG:
        spec = hw.get(name)
        data = json.loads(json.dumps(spec.to_dict()))
        assert data["schema_version"] == 1
        back = hw.AcceleratorSpec.from_dict(data)
        assert back == spec and hash(back) == hash(spec)
    with pytest.raises(SpecError, match="schema_version 99"):
        hw.AcceleratorSpec.from_dict({**hw.get("tsp").to_dict(), "schema_version": 99})


def test_catalog_order_and_tables() -> None:
    families = [s.family for s in hw.catalog()]
    assert families == sorted(families, key=hw.FAMILIES.index)
    table = hw.catalog_table()
    assert table.splitlines()[0].split()[:3] == ["name", "family", "bf16"]
    gc200_row = next(line for line in table.splitlines() if line.startswith("gc200"))
    assert " - " in gc200_row and "250 fp16" in gc200_row


# ---- a user's own chip


USER_CHIP = """\
name = "mychip"
vendor = "Me"
family = "gpu"
compute_units = { value = 64, source = "my datasheet" }
on_chip_memory_bytes = 32e6
on_chip_bandwidth_Bps = 4e12
chip_to_chip_Bps = 100e9
dtypes = ["float32", "bfloat16"]

[peak_flops]
bf16 = { value = 200e12, source = "my datasheet" }
fp32 = 50e12

[[memory_tiers]]
name = "sram"
capacity_bytes = 32e6
bandwidth_Bps = 4e12

[[memory_tiers]]
name = "hbm"
capacity_bytes = { value = 24e9, source = "my datasheet" }
bandwidth_Bps = 1e12
"""


def _write(tmp_path: Path, text: str, name: str = "mychip.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_user_file_loads_and_round_trips(tmp_path: Path) -> None:
    spec = hw.load(_write(tmp_path, USER_CHIP))
    assert spec.peak("bf16") == 200e12 and spec.tier("HBM").capacity_bytes == 24_000_000_000
    assert spec.unit_name == "SM" and spec.execution_model == hw.EXECUTION_MODELS["gpu"]
    assert spec.source("compute_units") == "my datasheet"
    assert spec.source("on_chip_memory_bytes") == "mychip.toml: no source given"
    assert spec.memory_per_unit_bytes == 500_000 and spec.source("memory_per_unit_bytes").startswith("derived")
    assert hw.AcceleratorSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    again = hw.load(_write(tmp_path, spec.to_toml(), "copy.toml"))
    assert again == spec
    with pytest.raises(SpecError, match="without a source"):
        hw.load(_write(tmp_path, USER_CHIP), strict_sources=True)


def test_catalog_files_round_trip_through_toml(tmp_path: Path) -> None:
    for name in ("wse2", "sn40l", "tsp"):
        spec = hw.get(name)
        assert hw.load(_write(tmp_path, spec.to_toml(), f"{name}.toml"), strict_sources=True) == spec


def test_a_sources_table_works_too(tmp_path: Path) -> None:
    text = USER_CHIP + '\n[sources]\non_chip_memory_bytes = "my datasheet, p. 2"\npeak_flops.fp32 = "my datasheet, p. 3"\n'
    spec = hw.load(_write(tmp_path, text))
    assert spec.source("on_chip_memory_bytes") == "my datasheet, p. 2"
    assert spec.source("peak_flops.fp32") == "my datasheet, p. 3"


def test_memory_tiers_default_to_on_chip_sram(tmp_path: Path) -> None:
    text = USER_CHIP.split("\n[[memory_tiers]]")[0]
    spec = hw.load(_write(tmp_path, text))
    assert [t.name for t in spec.memory_tiers] == ["sram"]
    assert spec.memory_tiers[0].capacity_bytes == spec.on_chip_memory_bytes


@pytest.mark.parametrize(("edit", "pattern"), [
    (("on_chip_memory_bytes = 32e6", 'on_chip_memory_bytes = "32MB"'),
     r"mychip.toml: field 'on_chip_memory_bytes' must be a number of bytes \(got '32MB'\)"),
    (("bandwidth_Bps = 1e12", 'bandwidth_Bps = "1 TB/s"'),
     r"mychip.toml: field 'memory_tiers.hbm.bandwidth_Bps' must be a number of bytes per second \(got '1 TB/s'\)"),
    (("fp32 = 50e12", 'fp32 = "50 TFLOPS"'),
     r"mychip.toml: field 'peak_flops.fp32' must be a number of FLOP/s"),
    (("compute_units = { value = 64,", "compute_units = { value = 64.5,"),
     r"mychip.toml: field 'compute_units' must be a whole number of compute units"),
    (("chip_to_chip_Bps = 100e9", "chip_to_chip_Bps = -1"),
     r"mychip.toml: field 'chip_to_chip_Bps' must be a number of bytes per second greater than 0"),
    (('vendor = "Me"\n', ""), r"mychip.toml: missing required field 'vendor'"),
    (("[peak_flops]", "[peak_flop]"), r"mychip.toml: missing required field 'peak_flops'"),
    (('family = "gpu"', 'family = "tpu"'),
     r"mychip.toml: field 'family' must be one of cpu, gpu, gaudi, systolic-torus, neuron, bsp-tiles, "
     r"reconfigurable-dataflow, wafer-dataflow, static-schedule \(got 'tpu'\)"),
    (("bf16 = {", "bfloat16 = {"), r"mychip.toml: field 'peak_flops.bfloat16': unknown precision"),
    (('dtypes = ["float32", "bfloat16"]', 'dtypes = ["float32", "brain16"]'),
     r"mychip.toml: field 'dtypes': 'brain16' is not a torch dtype name"),
    (("chip_to_chip_Bps", "chip2chip_Bps"), r"mychip.toml: unknown field\(s\) 'chip2chip_Bps'"),
    (("capacity_bytes = 32e6\n", ""), r"mychip.toml: missing required field 'memory_tiers.sram.capacity_bytes'"),
    (('vendor = "Me"', 'vendor = "Me'), r"mychip.toml: not valid TOML: .*line 2"),
])
def test_bad_files_name_file_field_and_unit(tmp_path: Path, edit: tuple[str, str], pattern: str) -> None:
    old, new = edit
    assert old in USER_CHIP
    with pytest.raises(SpecError, match=pattern):
        hw.load(_write(tmp_path, USER_CHIP.replace(old, new, 1)))


def test_unit_strings_get_a_suggested_fix(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        hw.load(_write(tmp_path, USER_CHIP.replace("on_chip_memory_bytes = 32e6", 'on_chip_memory_bytes = "520MB"')))
    assert err.value.fix == "write the plain number: on_chip_memory_bytes = 520e6"
    with pytest.raises(SpecError) as err:
        hw.load(_write(tmp_path, USER_CHIP.replace("bandwidth_Bps = 1e12", 'bandwidth_Bps = "1.6 TB/s"')))
    assert err.value.fix == "write the plain number: bandwidth_Bps = 1.6e12"
    with pytest.raises(SpecError) as err:
        hw.load(_write(tmp_path, USER_CHIP.replace("capacity_bytes = 32e6", 'capacity_bytes = "2 MiB"')))
    assert err.value.fix == "write the plain number: capacity_bytes = 2097152"
    with pytest.raises(SpecError, match="no such file"):
        hw.load(tmp_path / "missing.toml")


# ---- host calibration


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACCELKIT_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_calibrate_measures_this_cpu_then_uses_the_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host = hw.calibrate()
    assert host.name == "host" and host.family == "cpu"
    assert host.compute_units == torch.get_num_threads()
    assert host.peak("fp32") > 0 and host.peak("bf16") > 0
    assert [t.name for t in host.memory_tiers] == ["cache", "dram"]
    assert all(t.capacity_bytes > 0 and t.bandwidth_Bps > 0 for t in host.memory_tiers)
    assert host.source("peak_flops.fp32").startswith("measured on this host 20")
    assert host.source("memory_tiers.dram.bandwidth_Bps").startswith("measured on this host")
    assert all(host.source(k) for k in host.figure_keys())
    cached = json.loads((cache_dir / "host.json").read_text())
    assert cached["torch_version"] == torch.__version__ and cached["schema_version"] == 1 and cached["date"]

    def no_measuring() -> None:
        raise AssertionError("measured again instead of reading the cache")

    monkeypatch.setattr(calibrate_module, "_measure", no_measuring)
    assert hw.calibrate() == host
    assert hw.get("HOST") == host


def test_calibrate_ignores_a_stale_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = dataclasses.replace(hw.get("a100"), name="host", family="cpu")
    calls = []

    def fake_measure() -> hw.AcceleratorSpec:
        calls.append(1)
        return fake

    monkeypatch.setattr(calibrate_module, "_measure", fake_measure)
    assert hw.calibrate() == fake and calls == [1]
    path = cache_dir / "host.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "schema_version": 0}))
    assert hw.calibrate() == fake and calls == [1, 1]
    path.write_text(json.dumps({**data, "torch_version": "0.0.1"}))
    hw.calibrate()
    path.write_text("{not json")
    hw.calibrate()
    assert len(calls) == 4
    hw.calibrate()
    assert len(calls) == 4  # the rewritten cache is good again
    hw.calibrate(force=True)
    assert len(calls) == 5


# ---- what fits where


def test_fits_picks_the_fastest_tier_that_holds_the_model() -> None:
    assert hw.fits(110e6, "a100").tier == "hbm"
    assert hw.fits(10e6, "a100").tier == "hbm"               # L2 is a cache in front of HBM, not room of its own
    assert hw.fits(100e6, "tsp").tier == "sram"              # 200 MB <= 212 MB usable of 231 MB
    assert hw.fits(110e6, "tsp").tier is None                # 220 MB > 212 MB usable: two chips
    f = hw.fits(70e9, hw.get("tsp"))
    room = hw.capacity.usable_bytes(hw.get("tsp"))["sram"]
    assert room == int(230_686_720 * ak.constants.value("USABLE_SRAM_FRACTION"))
    assert f.tier is None and f.chips_needed == f.chips_on_chip == math.ceil(140e9 / room) == 660
    assert f.summary() == "660x sram"
    f = hw.fits(70e9, "h100")
    assert (f.summary(), f.chips_needed, f.model_bytes) == ("2x hbm", 2, 140_000_000_000)
    f = hw.fits(70e9, "wse3")                                 # weight streaming from MemoryX
    assert f.tier == "memoryx" and f.chips_on_chip == 4 and not f.on_chip
    assert hw.fits(20e9, "wse3").tier == "sram"               # the vendor's "20 B fits one CS-3"
    f = hw.fits(70e9, "sn40l", bytes_per_param=hw.BYTES_PER_PARAM["bf16 training"])
    assert f.tier == "ddr" and f.model_bytes == 1_120_000_000_000
    f = hw.fits(10e12, "tsp")                                 # more chips than any system holds
    assert not f.within_max_chips and f.summary().endswith("!")


def test_fits_table_has_a_row_per_size_and_state() -> None:
    table = hw.fits_table({"110 M": 110e6, "70 B": 70e9})
    lines = table.splitlines()
    assert len(lines) == 2 + 4
    assert lines[0].split()[3:] == [s.name for s in hw.catalog()]
    assert "660x sram" in lines[4]


def test_a_loaded_chip_works_wherever_a_target_name_does(tmp_path: Path) -> None:
    """Your own chip from hardware.load is not in the catalog: check, compile, serve and a Session take
    the spec itself and never look it up again by name."""
    import torch
    from torch import nn
    from transformers import LlamaConfig, LlamaForCausalLM

    import accelkit as ak

    src = Path(hw.__file__).parent / "systems" / "sn40l.toml"
    path = tmp_path / "mychip.toml"
    path.write_text(src.read_text().replace('name = "sn40l"', 'name = "mychip"', 1))
    spec = hw.load(path)
    assert spec.name == "mychip" and "mychip" not in hw.names() and hw.get(spec) is spec
    model, x = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)), (torch.randn(4, 8),)
    assert ak.check(model, x, target=spec).ok
    prog = ak.compile(model, x, target=spec, precision="fp32")
    assert prog.spec is spec and prog.report.target == "mychip" and prog.report.step_time_s > 0
    session = ak.Session(model, target=spec, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                         loss_fn=nn.CrossEntropyLoss(), precision="fp32")
    assert session.run(x[0], labels=torch.tensor([0, 1, 0, 1])).loss is not None
    assert session.simulated_time_s > 0 and "mychip" in str(session.report())
    with torch.device("meta"):
        llm = LlamaForCausalLM(LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                           intermediate_size=128, vocab_size=256, use_cache=False))
    est = ak.serve(llm, target=spec, prompt_tokens=16, output_tokens=8)
    assert est.tokens_per_s > 0
    with pytest.raises(UnknownNameError, match="not int"):
        hw.get(3)  # type: ignore[arg-type]


def test_one_precision_table_everywhere() -> None:
    """Names, aliases, bytes, the emulated dtypes and tolerances live in hardware.precision; the modules that
    used to keep their own copies now read that one (the same objects)."""
    import torch

    from accelkit.compiler import program
    from accelkit.hardware import precision
    from accelkit.runtime import session
    from accelkit.widgets import explorer

    assert program.ELEMENT_BYTES is precision.ELEMENT_BYTES and session.PRECISION_DTYPES is precision.EMULATED
    assert session.TOLERANCE is precision.TOLERANCE and explorer.PREFERRED_PRECISIONS is precision.PREFERRED
    assert hw.PRECISIONS is precision.PRECISIONS
    assert [precision.normalize(p) for p in ("bfloat16", "BF16", torch.float16, "half", "fp8")] == \
        ["bf16", "bf16", "fp16", "fp16", "fp8"]
    assert precision.element_bytes("bfloat16") == 2 and precision.element_bytes("fp8") == 1
    with pytest.raises(PrecisionError, match="no precision called 'fp12'"):
        precision.element_bytes("fp12")  # no silent 2-byte guess
    assert precision.default_for(hw.get("sn40l")) == "bf16" and precision.default_for(hw.get("tsp")) == "fp16"
    assert hw.get("a100").peak("bfloat16") == hw.get("a100").peak("bf16")


def test_check_fits_and_the_memory_plan_count_chips_the_same_way() -> None:
    """One capacity computation (hardware.capacity): the porting check's "too large", hardware.fits and the
    compiler's ModeError name the same number of chips for a model whose weights are all that matters."""
    with torch.device("meta"):
        model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096, bias=False) for _ in range(30)])
    x = (torch.zeros(1, 4096, device="meta"),)
    tsp = hw.get("tsp")
    params = sum(p.numel() for p in model.parameters())
    fit = hw.fits(params, tsp, 2)
    [big] = ak.check(model, x, tsp).find(kind="too-large")
    with pytest.raises(ak.compiler.ModeError) as e:
        ak.compile(model, x, target=tsp, precision="fp16")
    assert fit.chips_needed == big.chips_needed == e.value.chips_needed == 5, (fit, big.chips_needed, e.value)
    assert f"chips={fit.chips_needed}" in e.value.fix


def test_a_part_sold_in_two_sizes_is_one_file_extending_the_other():
    big, small = hw.get("a100"), hw.get("a100-40gb")
    assert (small.tier("hbm").capacity_bytes, small.tier("hbm").bandwidth_Bps) == (40e9, 1.555e12)
    assert (small.compute_units, small.peak("bf16"), small.clock_hz) == (big.compute_units, big.peak("bf16"),
                                                                          big.clock_hz)
    assert small.source("memory_tiers.hbm.bandwidth_Bps") != big.source("memory_tiers.hbm.bandwidth_Bps")
    assert small.source("peak_flops.bf16") == big.source("peak_flops.bf16")  # inherited with its source


@pytest.mark.parametrize("extends", ["../systems/a100.toml", "/etc/passwd", "a100"])
def test_extends_names_only_a_file_beside_it(tmp_path, extends):
    (tmp_path / "chip.toml").write_text(f'extends = "{extends}"\nname = "x"\n')
    with pytest.raises(ak.errors.SpecError, match="same folder"):
        hw.load(tmp_path / "chip.toml")


def test_extends_reads_the_base_beside_the_file(tmp_path):
    base = hw.get("a100").to_toml()
    (tmp_path / "base.toml").write_text(base)
    (tmp_path / "fast.toml").write_text('extends = "base.toml"\nname = "fast"\n[peak_flops]\n'
                                        'bf16 = { value = 624e12, source = "what if: twice the peak" }\n')
    fast = hw.load(tmp_path / "fast.toml")
    assert fast.name == "fast" and fast.peak("bf16") == 624e12 and fast.peak("fp32") == 19.5e12


def test_a_capacity_is_shown_as_its_maker_counts_it():
    """HBM stacks and SRAMs come in powers of two: a capacity of whole GiB (Gaudi 2's "96 GB", which hl-smi reports
    as 98304 MiB) reads in GiB, whole MiB in MiB, anything else in decimal units; a chip's description uses it."""
    from accelkit.hardware.spec import fmt_capacity

    assert fmt_capacity(96 * 2**30) == "96 GiB" and fmt_capacity(220 * 2**20) == "220 MiB"
    assert fmt_capacity(80e9) == "80 GB" and fmt_capacity(48e6) == "48 MB" and fmt_capacity(2**30 + 1) == "1.07 GB"
    assert "hbm 96 GiB" in ak.hardware.get("gaudi2").describe()
    assert "hbm 80 GB" in ak.hardware.get("h100").describe()
