"""ModelBox: box an artifact, run it, refuse illegal parameters, and run a copy from elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

import accelkit as ak
from accelkit.box import BoxError, legal_values, make_box, run_box
from accelkit.cli import UsageError, load_model, main

MODELS = textwrap.dedent('''
    import torch
    from torch import nn

    def make_mlp():
        return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), (torch.randn(8, 16),)
''')
SPEC = "akbox_models:make_mlp"


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("models")
    (d / "akbox_models.py").write_text(MODELS)
    return d


@pytest.fixture(autouse=True)
def _models_on_path(models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(models_dir))


@pytest.fixture
def box(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A box made by the CLI from an artifact compiled by the CLI (batch 8, bf16, sn40l)."""
    assert main(["compile", SPEC, "--target", "sn40l", "-o", str(tmp_path / "mlp.akp")]) == 0
    assert main(["box", str(tmp_path / "mlp.akp"), str(tmp_path / "box"), "--spec", SPEC]) == 0
    capsys.readouterr()
    return tmp_path / "box"


def edit(box: Path, old: str, new: str) -> None:
    path = box / "box.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_box_then_run(box: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sorted(p.name for p in box.iterdir()) == ["box.yaml", "model.akp", "run.py"]
    cfg = yaml.safe_load((box / "box.yaml").read_text())
    assert cfg["model"] == SPEC and cfg["target"] == "sn40l" and cfg["precision"] == "bf16"
    assert cfg["legal"]["batch_size"] == [1, 2, 4, 8] and cfg["legal"]["steps"] == {"min": 1}

    assert main(["run", str(box), "--steps", "2", "--spec", SPEC]) == 0
    out = capsys.readouterr().out
    assert "(--spec)" in out and "2 steps, 16 samples" in out and "MODELLED on sn40l" in out

    edit(box, "batch_size: 8", "batch_size: 2")
    edit(box, "steps: 10", "steps: 3")
    result = run_box(box, spec=SPEC)
    assert result.report.steps == 3 and result.report.samples == 6


@pytest.mark.parametrize(("old", "new", "says"), [
    ("batch_size: 8", "batch_size: 7", "box.yaml: batch_size 7 is not allowed; legal values: 1, 2, 4, 8"),
    ("batch_size: 8", "batch_size: 8.0", "batch_size 8.0 is not allowed; legal values: 1, 2, 4, 8"),
    ('precision: "bf16"', "precision: fp16", "precision 'fp16' is not allowed; legal values: bf16"),
    ('target: "sn40l"', "target: tsp", "target 'tsp' is not allowed; legal values: sn40l"),
    ("steps: 10", "steps: 0", "steps 0 is not allowed; legal values: a whole number >= 1"),
    ("steps: 10", "steps: ten", "steps 'ten' is not allowed"),
    ("seed: 0", "sead: 0", "unknown key(s) sead; missing key(s) seed"),
    ("seed: 0", "seed: 0\nbatchsize: 4", "unknown key(s) batchsize; fix: the parameters are target, precision"),
    ('artifact: "model.akp"', 'artifact: "../elsewhere"', "must be a folder inside the box"),
    ("steps: 10", 'steps: !!python/object/apply:os.system ["echo pwned"]', "is not plain YAML"),
])
def test_illegal_parameters_are_refused(box: Path, capsys: pytest.CaptureFixture[str], old: str, new: str,
                                        says: str) -> None:
    edit(box, old, new)
    assert main(["run", str(box)]) == 2
    out, err = capsys.readouterr()
    assert says in err and "Traceback" not in err and "pwned" not in out + err


def test_editing_the_legal_list_changes_nothing(box: Path) -> None:
    edit(box, "batch_size: [1, 2, 4, 8]", "batch_size: [1, 2, 4, 7, 8]")
    edit(box, "batch_size: 8", "batch_size: 7")
    with pytest.raises(BoxError, match="legal values: 1, 2, 4, 8\n"):
        run_box(box)


def test_a_box_is_self_contained(tmp_path: Path, models_dir: Path) -> None:
    """Made through the API from an artifact that records no spec; the original is deleted, the box
    is copied elsewhere, and its run.py runs there with only the spec's module importable."""
    loaded = load_model(SPEC)
    ak.compile(loaded.model, loaded.example_inputs, target="wse2", precision="fp32").save(tmp_path / "a.akp")
    with pytest.raises(BoxError, match="pass spec="):
        make_box(tmp_path / "a.akp", tmp_path / "nospec")
    made = make_box(tmp_path / "a.akp", tmp_path / "made", spec=SPEC, steps=2)
    shutil.rmtree(tmp_path / "a.akp")
    moved = Path(shutil.copytree(made, tmp_path / "elsewhere" / "box"))
    shutil.rmtree(made)
    env = {**os.environ, "PYTHONPATH": str(models_dir)}
    proc = subprocess.run([sys.executable, "run.py", "--spec", SPEC], cwd=moved, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "2 steps, 16 samples" in proc.stdout and "MODELLED on wse2" in proc.stdout


def test_make_box_refuses_an_occupied_folder_and_a_bad_spec(box: Path, tmp_path: Path) -> None:
    with pytest.raises(BoxError, match="not an empty folder"):
        make_box(box / "model.akp", box, spec=SPEC)
    with pytest.raises(UsageError, match="cannot import"):
        make_box(box / "model.akp", tmp_path / "other", spec="akbox_no_such_module:make")
    assert not (tmp_path / "other").exists()


def test_legal_batch_sizes_give_every_replica_whole_samples() -> None:
    prog = SimpleNamespace(batch_size=12, parallel=SimpleNamespace(data=2), spec=SimpleNamespace(name="gc200"),
                           precision="fp16")
    assert legal_values(prog)["batch_size"] == [2, 4, 6, 12]
