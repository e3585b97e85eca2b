"""The ``accelkit`` command: in-process through ``accelkit.cli.main`` (fast), once as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import accelkit as ak
from accelkit.cli import UsageError, load_model, main, parse_shape, run_artifact

MODELS = textwrap.dedent('''
    import torch
    from torch import nn

    def make_mlp():
        return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), (torch.randn(8, 16),)

    def make_mlp_only():
        return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    class Positives(nn.Module):  # x[x > 0]: an output size that depends on the data
        def forward(self, x):
            return x[x > 0].sum().reshape(1)

    def make_masked():  # a statically scheduled TSP program cannot size a buffer from data
        return Positives(), torch.randn(8, 16)

    def make_embed():
        return nn.Sequential(nn.Embedding(100, 8), nn.Flatten(), nn.Linear(8 * 6, 3))

    def broken():
        raise RuntimeError("boom")

    def not_a_model():
        return 42

    mlp_object = nn.Linear(16, 4)
    NUMBER = 3
''')


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("models")
    (d / "akcli_models.py").write_text(MODELS)
    (d / "akcli_badimport.py").write_text("import akcli_no_such_dependency\n")
    (d / "akcli_syntax.py").write_text("def f(:\n")
    return d


@pytest.fixture(autouse=True)
def _models_on_path(models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(models_dir))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---- help ---------------------------------------------------------------------------------------
def test_help_as_a_subprocess() -> None:
    proc = subprocess.run([sys.executable, "-m", "accelkit.cli", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    for command in ("profile", "check", "compile", "run", "box"):
        assert command in proc.stdout


@pytest.mark.parametrize("command", ["profile", "check", "compile", "run", "box"])
def test_every_subcommand_documents_an_example(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    assert "example:" in out and f"accelkit {command}" in out


# ---- the commands -------------------------------------------------------------------------------
def test_profile_prints_the_measured_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "profile", "akcli_models:make_mlp_only", "--inputs", "8x16:float32", "--runs", "1")
    assert code == 0, err
    assert "MEASURED on this host" in out


def test_check_exit_code_says_whether_the_model_is_ready(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "akcli_models:make_mlp", "--target", "sn40l")
    assert code == 0 and "ready" in out
    code, out, _ = run(capsys, "check", "akcli_models:make_masked", "--target", "tsp")
    assert code == 1
    assert "NOT ready" in out and "torch.where(mask, x, 0)" in out  # the finding and its fix


def test_compile_writes_an_artifact_that_run_reads(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "mlp.akp"
    code, out, err = run(capsys, "compile", "akcli_models:make_mlp", "--target", "sn40l", "--precision", "fp32",
                         "--batch-size", "16", "-o", str(out_dir))
    assert code == 0, err
    assert "CompiledProgram" in out and "MODELLED" in out
    assert (out_dir / "manifest.json").is_file() and (out_dir / "weights.safetensors").is_file()
    assert json.loads((out_dir / "cli.json").read_text())["spec"] == "akcli_models:make_mlp"
    assert ak.load(out_dir).batch_size == 16

    # the artifact records its spec, but run imports only the code you name (see tests/test_security.py)
    code, out, err = run(capsys, "run", str(out_dir), "--steps", "2")
    assert code == 2 and f"accelkit run {out_dir} --spec akcli_models:make_mlp" in err
    code, out, err = run(capsys, "run", str(out_dir), "--steps", "2", "--spec", "akcli_models:make_mlp")
    assert code == 0, err
    assert "(--spec)" in out and "float32[16, 16]" in out
    assert "MODELLED on sn40l" in out and "2 steps, 32 samples" in out and "MEASURED on this host" in out


def test_run_computes_with_the_artifacts_weights(tmp_path: Path) -> None:
    """The oracle: run's outputs equal plain PyTorch with the compiled weights, though run builds the
    model from another seed (so its initial weights differ) and loads the artifact's into it."""
    spec = "akcli_models:make_mlp"
    compiled = load_model(spec, seed=0)
    ak.compile(compiled.model, compiled.example_inputs, target="sn40l", precision="fp32").save(tmp_path / "a")
    result = run_artifact(tmp_path / "a", spec=spec, seed=1, steps=2)
    with torch.no_grad():
        expected = compiled.model.eval()(*result.last_inputs)
    torch.testing.assert_close(result.last_outputs, expected, rtol=0, atol=0)
    assert not torch.equal(load_model(spec, seed=1).model(*result.last_inputs), expected)


def test_run_needs_a_spec_when_the_artifact_records_none(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    loaded = load_model("akcli_models:make_embed", ["2x6:int64:100"])
    ak.compile(loaded.model, loaded.example_inputs, target="wse2").save(tmp_path / "e")
    code, _, err = run(capsys, "run", str(tmp_path / "e"))
    assert code == 2 and "--spec" in err and "Traceback" not in err
    code, out, err = run(capsys, "run", str(tmp_path / "e"), "--spec", "akcli_models:make_embed", "--batch-size", "4")
    assert code == 0, err
    assert "int64[4, 6]" in out and "(--spec)" in out


def test_integer_inputs_stay_in_the_embedding_table(tmp_path: Path) -> None:
    loaded = load_model("akcli_models:make_embed", ["2x6:int64:100"])
    ak.compile(loaded.model, loaded.example_inputs, target="wse2").save(tmp_path / "e")
    result = run_artifact(tmp_path / "e", spec="akcli_models:make_embed", steps=3)  # no example: the table's size
    (ids,) = result.last_inputs
    assert ids.dtype == torch.int64 and 0 <= int(ids.min()) and int(ids.max()) < 100


def test_zoo_spec_runs_on_the_entrys_dataset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    name = "ffn_logreg"
    code, _, err = run(capsys, "compile", f"zoo:{name}", "--target", "sn40l", "-o", str(tmp_path / "z"))
    assert code == 0, err
    code, out, err = run(capsys, "run", str(tmp_path / "z"))
    assert code == 0, err
    assert "batches of" in out and "MODELLED" in out


# ---- errors: one clear message, the right exit code, never a traceback ---------------------------
@pytest.mark.parametrize(("argv", "says"), [
    (["profile", "akcli_nosuch:make"], "cannot import 'akcli_nosuch'"),
    (["profile", "akcli_models:nope"], "has no attribute 'nope'"),
    (["profile", "akcli_models:NUMBER"], "not a model or a factory"),
    (["profile", "akcli_models:broken"], "the factory raised RuntimeError: boom"),
    (["profile", "akcli_models:not_a_model"], "the factory returned a int"),
    (["profile", "akcli_badimport:make"], "install 'akcli_no_such_dependency'"),
    (["profile", "akcli_syntax:f"], "raised SyntaxError"),
    (["profile", "akcli_models"], "is not module:factory"),
    (["profile", "akcli_models:make_mlp_only"], "--inputs"),
    (["profile", "akcli_models:make_mlp_only", "--inputs", "8y16"], "bad input shape '8y16'"),
    (["profile", "akcli_models:make_mlp_only", "--inputs", "8x16:float33"], "not a torch dtype"),
    (["profile", "akcli_models:make_mlp_only", "--inputs", "8x0"], "every size must be ≥ 1"),
    (["check", "akcli_models:make_mlp", "--target", "tpu9"], "no system called 'tpu9'; known: "),
    (["check", "zoo:akcli_no_such_entry", "--target", "sn40l"], "zoo"),
    (["compile", "akcli_models:make_mlp", "--target", "sn40l"], "--output"),  # argparse's own usage error
    (["compile", "akcli_models:make_mlp", "--target", "sn40l", "--precision", "fp64", "-o", "g"], "no fp64 peak"),
    # the default precision (bf16) on a chip without it: the fix is the flag, not Python's spec.peak()
    (["compile", "akcli_models:make_mlp", "--target", "tsp", "-o", "g"], "(--precision is bf16 by default); fix: pass --precision fp32"),
])
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], says: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert says in err and "Traceback" not in err + out
    if "--output" not in says:
        assert err.count("\n") == 1 and "fix:" in err  # one line: cause and fix
        assert argv[1] in err or argv[-1] in err or "--precision" in err  # names the spec (the shape, the flag)


@pytest.mark.parametrize(("argv", "says"), [
    (["compile", "akcli_models:make_masked", "--target", "tsp", "--precision", "fp16", "-o", "{tmp}/g"],
     "depends on the values in it"),
    (["run", "{tmp}/missing.akp"], "not an accelkit artifact"),
    (["profile", "akcli_models:make_mlp_only", "--inputs", "8x15"], "shapes cannot be multiplied"),
])
def test_accelkit_errors_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str],
                                says: str) -> None:
    code, out, err = run(capsys, *(a.format(tmp=tmp_path) for a in argv))
    assert code == 1
    assert says in err and "fix:" in err and "Traceback" not in err + out


def test_run_refuses_weights_of_another_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(capsys, "compile", "akcli_models:make_mlp", "--target", "wse2", "-o", str(tmp_path / "m"))[0] == 0
    code, _, err = run(capsys, "run", str(tmp_path / "m"), "--spec", "akcli_models:make_embed")
    assert code == 1 and "do not fit the model from 'akcli_models:make_embed'" in err


def test_run_refuses_a_tampered_artifact(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(capsys, "compile", "akcli_models:make_mlp", "--target", "wse2", "-o", str(tmp_path / "m"))[0] == 0
    manifest = tmp_path / "m" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"batch_size": 8', '"batch_size": 9'))
    code, _, err = run(capsys, "run", str(tmp_path / "m"))
    assert code == 1 and "modified" in err and "Traceback" not in err


def test_debug_reraises(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="akcli_nosuch"):
        main(["--debug", "profile", "akcli_nosuch:make"])
    with pytest.raises(UsageError):
        main(["profile", "akcli_nosuch:make", "--debug"])


def test_a_spec_may_name_a_model_object(tmp_path: Path) -> None:
    import akcli_models  # type: ignore[import-not-found]

    loaded = load_model("akcli_models:mlp_object", ["2x16"])
    assert loaded.model is akcli_models.mlp_object and loaded.example_inputs[0].shape == (2, 16)


def test_an_unwritable_output_is_an_error_not_a_traceback(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    code, _, err = run(capsys, "compile", "akcli_models:make_mlp", "--target", "wse2", "-o", str(tmp_path / "file"))
    assert code == 1 and "check the path" in err and "Traceback" not in err


def test_parse_shape() -> None:
    assert parse_shape("8x16") == ((8, 16), torch.float32, 2)
    assert parse_shape("4x64:int64:1000") == ((4, 64), torch.int64, 1000)
    assert parse_shape("2:bf16") == ((2,), torch.bfloat16, 2)
    with pytest.raises(UsageError, match="HIGH"):
        parse_shape("2x3:float32:10")


# ---- run: --inputs is used or refused, never ignored; a long run shows progress and stops on Ctrl-C ---------
@pytest.fixture
def mlp_akp(tmp_path: Path) -> Path:
    loaded = load_model("akcli_models:make_mlp", seed=0)
    ak.compile(loaded.model, loaded.example_inputs, target="sn40l", precision="fp32").save(tmp_path / "a")
    return tmp_path / "a"


def test_run_inputs_of_other_shapes_are_refused(capsys: pytest.CaptureFixture[str], mlp_akp: Path) -> None:
    code, out, err = run(capsys, "run", str(mlp_akp), "--spec", "akcli_models:make_mlp", "--inputs", "8x32")
    assert code == 2 and "not the inputs this artifact was compiled for: float32[Bx16]" in err
    assert "compile again with these --inputs" in err and "Traceback" not in err + out


def test_run_inputs_set_the_batch(capsys: pytest.CaptureFixture[str], mlp_akp: Path) -> None:
    code, out, err = run(capsys, "run", str(mlp_akp), "--spec", "akcli_models:make_mlp", "--inputs", "4x16")
    assert code == 0, err
    assert "inputs: --inputs 4x16" in out and "float32[4, 4]" in out and "1 steps, 4 samples" in out


def test_a_long_run_shows_progress_and_stops_on_ctrl_c(capsys: pytest.CaptureFixture[str], mlp_akp: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    real = ak.Session.run
    calls = []

    def run_until_ctrl_c(self: ak.Session, *xs: torch.Tensor, **kw: object) -> ak.StepResult:
        calls.append(1)
        if len(calls) > 25:
            raise KeyboardInterrupt
        return real(self, *xs, **kw)

    monkeypatch.setattr(ak.Session, "run", run_until_ctrl_c)
    result = run_artifact(mlp_akp, spec="akcli_models:make_mlp", steps=10**12)
    assert "interrupted after 25 of 1,000,000,000,000 steps" in result.inputs and result.report.steps == 25
    assert "/1000000000000" in capsys.readouterr().err  # the progress bar, on stderr
