"""A received artifact or ModelBox never makes accelkit import code the user did not name (issue: the CLI ran
`evil_pkg:make` named by an artifact's cli.json, from a module shipped beside it), and never reads or writes
outside the folder it was given: artifact paths, groqit's build_name, Session's log_dir."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.box import make_box, run_box
from accelkit.cli import UsageError, main, trusted_spec
from accelkit.compiler.artifact import ArtifactError
from accelkit.groqflow import GroqFlowError, groqit
from accelkit.runtime.session import SessionError

MODELS = textwrap.dedent('''
    import torch
    from torch import nn

    def make():
        return nn.Sequential(nn.Linear(8, 4)), (torch.randn(2, 8),)
''')
# imported, it leaves a marker file beside itself: the test's proof that it ran
EVIL = textwrap.dedent('''
    from pathlib import Path
    Path(__file__).with_name("PWNED").write_text("imported")

    def make():
        Path(__file__).with_name("PWNED").write_text("called")
''')


@pytest.fixture
def artifact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """mymodels:make compiled by the CLI into a.akp, then tampered with: cli.json names evil_pkg:make, and an
    evil_pkg.py lies beside it (as in a folder someone sent you)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "aksec_mymodels.py").write_text(MODELS)
    monkeypatch.syspath_prepend(str(src))
    out = tmp_path / "a.akp"
    assert main(["compile", "aksec_mymodels:make", "--target", "sn40l", "--precision", "fp32", "-o", str(out)]) == 0
    (out / "cli.json").write_text(json.dumps({"spec": "aksec_evil_pkg:make", "inputs": None}))
    (out / "aksec_evil_pkg.py").write_text(EVIL)
    capsys.readouterr()
    yield out
    sys.modules.pop("aksec_evil_pkg", None)


def test_run_from_inside_a_received_artifact_imports_nothing_it_names(
        artifact: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(artifact)  # cd a.akp && accelkit run .
    assert main(["run", "."]) == 2
    err = capsys.readouterr().err
    assert not (artifact / "PWNED").exists() and "aksec_evil_pkg" not in sys.modules
    assert "does not import code named by a file" in err and "--spec aksec_evil_pkg:make" in err
    assert "Traceback" not in err


def test_a_recorded_function_is_never_called(artifact: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (artifact / "cli.json").write_text(json.dumps({"spec": "os:getcwd", "inputs": None}))
    resolved: list[str] = []  # every spec accelkit imports goes through resolve_factory
    monkeypatch.setattr("accelkit.runner.resolve_factory", lambda spec: resolved.append(spec))
    assert main(["run", str(artifact)]) == 2
    assert resolved == [] and "--spec os:getcwd" in capsys.readouterr().err


def test_the_model_you_name_runs(artifact: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(artifact), "--spec", "aksec_mymodels:make"]) == 0
    assert "(--spec)" in capsys.readouterr().out and not (artifact / "PWNED").exists()


def test_boxing_a_received_artifact_imports_nothing_it_names(artifact: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not import code named by a file"):
        make_box(artifact, tmp_path / "box")
    assert not (artifact / "PWNED").exists() and not (tmp_path / "box").exists()


def test_a_box_whose_yaml_names_other_code_runs_only_what_you_name(
        artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    box = make_box(artifact, tmp_path / "box", spec="aksec_mymodels:make", steps=1)
    yaml_path = box / "box.yaml"
    yaml_path.write_text(yaml_path.read_text().replace('model: "aksec_mymodels:make"', 'model: "evil:make"'))
    (box / "evil.py").write_text(EVIL)
    assert main(["run", str(box)]) == 2
    assert "--spec evil:make" in capsys.readouterr().err
    with pytest.raises(UsageError, match="does not import code named by a file"):
        run_box(box)
    assert not (box / "PWNED").exists() and "evil" not in sys.modules
    assert run_box(box, spec="aksec_mymodels:make").report.steps == 1


def test_zoo_models_are_accelkits_own_code() -> None:
    assert trusted_spec("zoo:ffn_logreg", None, "cli.json", "accelkit run a.akp") == "zoo:ffn_logreg"
    assert trusted_spec("evil:make", "mine:make", "cli.json", "accelkit run a.akp") == "mine:make"
    with pytest.raises(UsageError) as info:
        trusted_spec("evil:make", None, "a.akp/cli.json", "accelkit run a.akp")
    assert info.value.fix == "name the model yourself if you trust it: accelkit run a.akp --spec evil:make"


# ---- paths stay inside the folder ----------------------------------------------------------
def resign(akp: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit an artifact's manifest and recompute its checksum, as anyone can (it is unkeyed: integrity, not trust)."""
    mpath = akp / "manifest.json"
    body = json.loads(mpath.read_text())
    body.pop("checksum")
    edit(body)
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    mpath.write_text(json.dumps({**body, "checksum": hashlib.sha256(canonical).hexdigest()}))


@pytest.fixture
def tiny_akp(tmp_path: Path) -> Path:
    """A compiled and saved artifact, and a valid copy of its weights outside it (tmp/outside/)."""
    torch.manual_seed(0)
    out = Path(ak.compile(nn.Sequential(nn.Linear(8, 4)), (torch.randn(2, 8),), target="a100",
                          precision="fp32").save(tmp_path / "a.akp"))
    (tmp_path / "outside").mkdir()
    shutil.copy(out / "weights.safetensors", tmp_path / "outside" / "weights.safetensors")
    assert ak.load(out).weights is not None
    return out


@pytest.mark.parametrize(("name", "says"), [
    ("{outside}/weights.safetensors", "is an absolute path"),
    ("../outside/weights.safetensors", "climbs out of the folder with '..'"),
    ("sub/../../outside/weights.safetensors", "climbs out of the folder with '..'"),
])
def test_an_artifact_never_reads_weights_named_outside_its_folder(tiny_akp: Path, name: str, says: str) -> None:
    outside = tiny_akp.parent / "outside"
    file = name.format(outside=outside)
    resign(tiny_akp, lambda body: body["weights"].update(file=file))  # the SHA-256 still matches the outside file
    with pytest.raises(ArtifactError) as info:
        ak.load(tiny_akp)
    assert says in str(info.value) and repr(file) in str(info.value) and "ak.compile" in str(info.value.fix)


def test_an_artifact_never_follows_a_symlink_out_of_its_folder(tiny_akp: Path) -> None:
    outside = tiny_akp.parent / "outside"
    (tiny_akp / "weights.safetensors").unlink()
    (tiny_akp / "weights.safetensors").symlink_to(outside / "weights.safetensors")
    with pytest.raises(ArtifactError, match="symlink to .*outside the artifact's folder"):
        ak.load(tiny_akp)
    shutil.move(str(tiny_akp / "manifest.json"), str(outside / "manifest.json"))  # the manifest too
    (tiny_akp / "manifest.json").symlink_to(outside / "manifest.json")
    with pytest.raises(ArtifactError, match="the manifest 'manifest.json' is a symlink"):
        ak.load(tiny_akp)


def test_a_symlink_inside_the_folder_still_loads(tiny_akp: Path) -> None:
    (tiny_akp / "weights.safetensors").rename(tiny_akp / "real.safetensors")
    (tiny_akp / "weights.safetensors").symlink_to("real.safetensors")
    assert ak.load(tiny_akp).weights is not None


@pytest.mark.parametrize("build_name", ["../../escape", "/tmp/escape", "sub/escape", "..", 3])
def test_groqit_build_name_never_leaves_the_cache(tmp_path: Path, build_name: Any) -> None:
    cache = tmp_path / "a" / "cache"
    with pytest.raises(GroqFlowError, match="build_name") as info:
        groqit(nn.Linear(8, 4), torch.randn(2, 8), build_name=build_name, cache_dir=cache, monitor=False)
    assert "cache_dir" in str(info.value.fix)
    assert not (tmp_path / "escape").exists() and not cache.exists()


def test_groqit_ignores_a_build_name_written_into_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "a" / "cache"
    model, x = nn.Linear(8, 4), torch.randn(2, 8)
    groqit(model, x, build_name="net", cache_dir=cache, monitor=False)
    state = cache / "net" / "state.json"
    state.write_text(json.dumps({**json.loads(state.read_text()), "build_name": "../../escape"}))
    shutil.copytree(cache / "net", tmp_path / "escape")  # a valid build where that name points
    gmodel = groqit(model, x, build_name="net", cache_dir=cache, monitor=False)  # rebuilt where it belongs
    assert gmodel.state.path == cache / "net" and not gmodel.state.loaded_from_cache
    assert json.loads(state.read_text())["build_name"] == "net"


@pytest.mark.parametrize(("log_dir", "says"), [(3, "int 3"), (b"runs", "bytes"), ("", "empty"),
                                               ("afile", "is a file")])
def test_session_log_dir_must_be_a_folder_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_dir: Any,
                                               says: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a folder")
    with pytest.raises(SessionError, match="log_dir") as info:
        ak.Session(nn.Linear(8, 4), target="a100", log_dir=log_dir)
    assert says in str(info.value) and "log_dir=" in str(info.value.fix)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # no ./3, no runs/


# ---- one error boundary around ak.load -------------------------------------------------------
def _garble_weights(akp: Path, data: bytes) -> None:
    """Replace the weights with ``data`` and re-sign both checksums, as a forger would."""
    (akp / "weights.safetensors").write_bytes(data)
    resign(akp, lambda body: body["weights"].update(sha256=hashlib.sha256(data).hexdigest()))


def _wrong_shape_weights(akp: Path) -> None:
    from safetensors.torch import save

    _garble_weights(akp, save({"0.weight": torch.zeros(3, 3), "0.bias": torch.zeros(4)}))


def _deep_notes(akp: Path) -> None:
    """graph.notes nested 5000 lists deep, re-signed (the forger's json needs a higher recursion limit)."""
    value: Any = 0
    for _ in range(5000):
        value = [value]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    try:
        resign(akp, lambda body: body["graph"].update(notes=value))
    finally:
        sys.setrecursionlimit(limit)


def _set(*keys: Any, value: Any) -> Callable[[Path], None]:
    """A corruption: set manifest[keys...] = value and re-sign (so it gets past the checksum)."""
    def edit(body: dict[str, Any]) -> None:
        for k in keys[:-1]:
            body = body[k]
        body[keys[-1]] = value
    return lambda akp: resign(akp, edit)


def _drop(*keys: str) -> Callable[[Path], None]:
    def edit(body: dict[str, Any]) -> None:
        for k in keys[:-1]:
            body = body[k]
        del body[keys[-1]]
    return lambda akp: resign(akp, edit)


def _write(name: str, data: bytes | Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def corrupt(akp: Path) -> None:
        f = akp / name
        f.write_bytes(data(f.read_bytes()) if callable(data) else data)
    return corrupt


def _flip(b: bytes) -> bytes:
    return b[:-5] + bytes([b[-5] ^ 0xFF]) + b[-4:]


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    # the files themselves, as a bad disk or copy leaves them
    "manifest truncated": _write("manifest.json", lambda b: b[: len(b) // 2]),
    "manifest empty": _write("manifest.json", b""),
    "manifest binary garbage": _write("manifest.json", bytes(range(256)) * 4),
    "manifest a JSON list": _write("manifest.json", b"[1, 2, 3]"),
    "manifest nested 100000 deep": _write("manifest.json", b"[" * 100_000 + b"]" * 100_000),
    "manifest deleted": lambda akp: (akp / "manifest.json").unlink(),
    "weights truncated": _write("weights.safetensors", lambda b: b[: len(b) // 2]),
    "weights byte flipped": _write("weights.safetensors", _flip),
    "weights deleted": lambda akp: (akp / "weights.safetensors").unlink(),
    # edited and re-signed, as a forger or a buggy tool leaves them
    "weights garbage, re-hashed": lambda akp: _garble_weights(akp, b"\x08\x00\x00\x00\x00\x00\x00\x00{}garbage"),
    "weights header lies, re-hashed": lambda akp: _garble_weights(akp, b"\xff" * 8 + b"{}"),
    "weights of the wrong shape, re-hashed": _wrong_shape_weights,
    "schema_version a string": _set("schema_version", value="1"),
    "graph missing": _drop("graph"),
    "options missing": _drop("options"),
    "batch_size a string": _set("options", "batch_size", value="8"),
    "batch_size zero": _set("options", "batch_size", value=0),
    "chips zero": _set("options", "chips", value=0),
    "micro_batch negative": _set("options", "micro_batch", value=-2),
    "kernels not a list": _set("kernels", value="kernels"),
    "a kernel's key missing": lambda akp: resign(akp, lambda body: body["kernels"][0].pop("flops")),
    "a kernel's flops a list": lambda akp: resign(akp, lambda body: body["kernels"][0].update(flops=[1])),
    "memory_plan null": _set("memory_plan", value=None),
    "placement regions a number": _set("placement", "regions", value=5),
    "target empty": _set("target", value={}),
    "target bandwidth zero": lambda akp: resign(akp, lambda body: [t.update(bandwidth_Bps=0)
                                                                   for t in body["target"]["memory_tiers"]]),
    "a graph shape a string": lambda akp: resign(akp, lambda body: body["graph"]["nodes"][0]["outputs"][0]
                                                 .__setitem__(0, "big")),
    "graph notes nested 5000 deep": _deep_notes,
    "weights file a number": _set("weights", "file", value=3),
    "weights aliases a list": _set("weights", "aliases", value=["0.weight"]),
    "weights sha256 null": _set("weights", "sha256", value=None),
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4))
    return Path(ak.compile(model, (torch.randn(2, 8),), target="a100", precision="fp32", training=True)
                .save(tmp_path_factory.mktemp("pristine") / "a.akp"))


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_every_corrupted_artifact_gets_an_accelkit_error(pristine: Path, tmp_path: Path, corruption: str) -> None:
    akp = Path(shutil.copytree(pristine, tmp_path / "a.akp"))
    ak.load(akp)  # the copy loads before it is corrupted
    CORRUPTIONS[corruption](akp)
    with pytest.raises(ArtifactError) as info:
        ak.load(akp)
    text = str(info.value)
    assert str(akp) in text and "Traceback" not in text  # names the folder or the file in it
    assert info.value.fix  # and says how to get a good one


@pytest.mark.parametrize("path", [None, 3, ["a.akp"]])
def test_load_names_a_path_that_is_not_one(path: Any) -> None:
    with pytest.raises(ArtifactError, match="ak.load needs the artifact's folder"):
        ak.load(path)


# ---- a received folder is never on the import path --------------------------------------------
SHADOWED = ("yaml", "safetensors", "IPython", "sympy", "ipywidgets", "plotly")


def test_a_received_box_cannot_shadow_a_library(tmp_path: Path) -> None:
    """`cd box; accelkit run .` with a yaml.py (and other library names) in the box imports none of them."""
    import subprocess

    box = tmp_path / "b"
    make_box(_zoo_artifact(tmp_path), box, steps=1)
    for name in SHADOWED:
        (box / f"{name}.py").write_text(f'open({str(box / "PWNED")!r}, "a").write("{name} ")\n')
    script = "import sys; from accelkit.cli import main; sys.exit(main(['run', '.']))"  # as the console script
    done = subprocess.run([sys.executable, "-P", "-c", script], cwd=box, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1",
                                               "PYTHONPATH": str(Path(ak.__file__).parents[1])})
    assert not (box / "PWNED").exists(), (box / "PWNED").read_text()
    assert done.returncode == 0, done.stderr


def _zoo_artifact(tmp_path: Path) -> Path:
    out = tmp_path / "a.akp"
    assert main(["compile", "zoo:ffn_logreg", "-t", "a100", "--precision", "fp32", "-o", str(out)]) == 0
    return out


# ---- a received box reads nothing outside itself through symlinks -------------------------------
@pytest.fixture
def zoo_box(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    box = make_box(_zoo_artifact(tmp_path), tmp_path / "box", steps=1)
    capsys.readouterr()
    return box


def test_a_box_artifact_symlinked_elsewhere_is_refused(zoo_box: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(zoo_box / "model.akp")
    (zoo_box / "model.akp").symlink_to(tmp_path / "a.akp")  # a valid artifact, elsewhere
    with pytest.raises(UsageError, match="outside the box"):
        run_box(zoo_box)
    assert main(["run", str(zoo_box)]) == 2 and "outside the box" in capsys.readouterr().err


def test_a_box_yaml_symlinked_to_a_secret_never_shows_it(zoo_box: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("user: me\npassword hunter2\n")
    (zoo_box / "box.yaml").unlink()
    (zoo_box / "box.yaml").symlink_to(secret)
    assert main(["run", str(zoo_box)]) == 2
    err = capsys.readouterr().err
    assert "hunter2" not in err and "outside the box" in err


def test_a_cli_json_symlinked_elsewhere_is_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    akp = _zoo_artifact(tmp_path)
    elsewhere = tmp_path / "elsewhere.json"
    (akp / "cli.json").rename(elsewhere)
    (akp / "cli.json").symlink_to(elsewhere)
    assert main(["run", str(akp)]) == 1
    assert "outside the artifact's folder" in capsys.readouterr().err
    (akp / "cli.json").unlink()
    (akp / "cli.json").symlink_to("/dev/zero")  # a device: never read (it has no end)
    assert main(["run", str(akp)]) == 1
    assert "outside the artifact's folder" in capsys.readouterr().err


@pytest.mark.parametrize(("key", "bad", "says"), [
    ("output_mode", "every", "options.output_mode is 'every'"),
    ("input_overlap", "no", "options.input_overlap is 'no'"),
    ("optimizer", "lion", "options.optimizer is 'lion'"),
    ("optimizer_state", "fp8", "options.optimizer_state is 'fp8'"),
])
def test_an_artifacts_host_loop_options_are_checked_on_load(tiny_akp: Path, key: str, bad: Any, says: str) -> None:
    """A re-signed manifest with a host-loop option no compile could have written is refused, naming it; one
    written before the options existed loads with their defaults."""
    before = (tiny_akp / "manifest.json").read_bytes()
    resign(tiny_akp, lambda body: body["options"].__setitem__(key, bad))
    with pytest.raises(ArtifactError, match=re.escape(says)):
        ak.load(tiny_akp)
    (tiny_akp / "manifest.json").write_bytes(before)
    resign(tiny_akp, lambda body: [body["options"].pop(k, None) for k in ("output_mode", "input_overlap",
                                                                          "optimizer", "optimizer_state")])
    old = ak.load(tiny_akp)
    assert (old.input_overlap, old.output_mode) == (True, None)
    assert old.optimizer == ("adamw" if old.training else "")  # before the option: AdamW, the only update then
    assert old.optimizer_state == ("mixed" if old.training else "")  # and mixed precision's state, the only layout
