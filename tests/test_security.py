"""A received artifact or ModelBox never makes accelkit import code the user did not name (issue: the CLI ran
`evil_pkg:make` named by an artifact's cli.json, from a module shipped beside it)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from accelkit.box import make_box, run_box
from accelkit.cli import UsageError, main, trusted_spec

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
