"""Issue 15, section 4: every bad input to the Python API gets an accelkit error naming the argument (or the
model, op and line) and the fix; nothing is silently accepted, and check, port and compile give one verdict.

Each case is one of the issue's reproducers. Arguments are checked before any work (accelkit.boundary), so most
cases here cost nothing; the ones that capture a model use models of a few parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.errors import AccelkitError, ArgumentError, CaptureError, CompileError, ModelError, PortError

X = torch.randn(4, 8)
Y = torch.randint(0, 4, (4,))


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))


def sgd(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.1)


def refused(call: Callable[[], Any], *says: str, kind: type[AccelkitError] = AccelkitError) -> AccelkitError:
    """``call`` raises an accelkit error of ``kind`` whose text holds every one of ``says`` and a fix."""
    with pytest.raises(kind) as info:
        call()
    text = str(info.value)
    for s in says:
        assert s in text, f"{s!r} not in {text!r}"
    assert info.value.fix, text
    return info.value


# ---- wrong types: the argument, what it got, what it takes ----------------------------------------
WRONG_TYPES: dict[str, tuple[Callable[[], Any], tuple[str, ...]]] = {
    "compile target=None": (lambda: ak.compile(mlp(), (X,), target=None), ("target", "NoneType")),
    "compile target=3": (lambda: ak.compile(mlp(), (X,), target=3), ("target", "int")),
    "check target=dict": (lambda: ak.check(mlp(), (X,), target={}), ("target", "dict")),
    "Session target=None": (lambda: ak.Session(mlp(), target=None), ("target", "NoneType")),
    "port target=3": (lambda: ak.port(mlp(), (X,), target=3), ("target", "int")),
    "compile parallel='data'": (lambda: ak.compile(mlp(), (X,), target="a100", parallel="data"),
                                ("parallel must be an ak.Parallel", "str 'data'")),
    "Session parallel='data'": (lambda: ak.Session(mlp(), target="a100", parallel="data"), ("parallel", "'data'")),
    "compile training='yes'": (lambda: ak.compile(mlp(), (X,), target="a100", training="yes"),
                               ("training must be True or False", "'yes'")),
    "capture training='yes'": (lambda: ak.capture(mlp(), (X,), training="yes"), ("training",)),
    "check training='yes'": (lambda: ak.check(mlp(), (X,), target="a100", training="yes"), ("training",)),
    "port training='yes'": (lambda: ak.port(mlp(), (X,), target="a100", training="yes"), ("training",)),
    "Session micro_batch='2'": (lambda: ak.Session(mlp(), target="a100", micro_batch="2"),
                                ("micro_batch must be a whole number", "str '2'")),
    "compile micro_batch='2'": (lambda: ak.compile(mlp(), (X,), target="a100", micro_batch="2"), ("micro_batch",)),
    "Session optimizer='adam'": (lambda: ak.Session(mlp(), target="a100", optimizer="adam"),
                                 ("optimizer must be an optimizer object", "str 'adam'")),
    "Session loss_fn='mse'": (lambda: ak.Session(mlp(), target="a100", loss_fn="mse"), ("loss_fn", "str 'mse'")),
    "port loss_fn='mse'": (lambda: ak.port(mlp(), (X,), target="tsp", loss_fn="mse", labels=Y), ("loss_fn",)),
    "port tolerance='tight'": (lambda: ak.port(mlp(), (X,), target="tsp", tolerance="tight"),
                               ("tolerance must be a number", "str 'tight'")),
    "port trials='3'": (lambda: ak.port(mlp(), (X,), target="tsp", trials="3"), ("trials", "str '3'")),
    "check dynamic_dims={0: 7}": (lambda: ak.check(mlp(), (X,), target="tsp", dynamic_dims={0: 7}),
                                  ("dynamic_dims[0]", "2 dimension(s)", "dimension 7 does not exist")),
    "port dynamic_dims={0: 7}": (lambda: ak.port(mlp(), (X,), target="tsp", dynamic_dims={0: 7}), ("dynamic_dims",)),
    "port dynamic_dims={'nope': 1}": (lambda: ak.port(mlp(), (X,), target="tsp", dynamic_dims={"nope": 1}),
                                      ("names input 'nope'",)),
    "hardware.load(None)": (lambda: ak.hardware.load(None), ("path must be a path", "NoneType")),
    "ak.load(None)": (lambda: ak.load(None), ("ak.load needs the artifact's folder", "NoneType")),
    "serve prompt_tokens='8'": (lambda: ak.serve(mlp(), target="a100", prompt_tokens="8", output_tokens=8),
                                ("prompt_tokens must be a whole number", "str '8'")),
    "prog.save(None)": (lambda: ak.compile(mlp(), (X,), target="a100", precision="fp32").save(None),
                        ("path must be a path", "NoneType")),
    "validate(3)": (lambda: ak.validate(3), ("cases must be a list of case names", "int 3")),
    "validate('cs3-llama31-8b')": (lambda: ak.validate("cs3-llama31-8b"), ("cases must be a list",)),
    "profile runs='3'": (lambda: ak.profile(mlp(), (X,), runs="3"), ("runs", "str '3'")),
}


@pytest.mark.parametrize("case", list(WRONG_TYPES))
def test_a_wrong_type_names_the_argument_and_what_it_takes(case: str) -> None:
    call, says = WRONG_TYPES[case]
    refused(call, *says)


def test_an_optimizer_name_is_refused_before_any_forward(monkeypatch: pytest.MonkeyPatch) -> None:
    model = mlp()
    monkeypatch.setattr(model, "forward", lambda *a: pytest.fail("forward ran before the optimizer was checked"))
    refused(lambda: ak.Session(model, target="a100", optimizer="adam", loss_fn=nn.CrossEntropyLoss()),
            "optimizer", kind=ArgumentError)


def test_argument_errors_are_type_and_value_errors_too() -> None:
    err = refused(lambda: ak.port(mlp(), (X,), target="tsp", trials="3"), "trials")
    assert isinstance(err, TypeError) and isinstance(err, ValueError)


@pytest.mark.parametrize("what", ["a folder", "a binary file"])
def test_hardware_load_names_what_is_not_a_chip_file(tmp_path: Path, what: str) -> None:
    path = tmp_path / "chip.toml"
    if what == "a folder":
        path.mkdir()
        refused(lambda: ak.hardware.load(path), "is a folder", kind=ak.SpecError)
    else:
        path.write_bytes(bytes(range(256)))
        refused(lambda: ak.hardware.load(path), "not a text file", kind=ak.SpecError)


# ---- values that were silently accepted ----------------------------------------------------------
@pytest.mark.parametrize(("kw", "says"), [
    ({"batch_size": 0}, "batch_size must be a whole number ≥ 1, got 0"),
    ({"batch_size": -1}, "batch_size must be a whole number ≥ 1, got -1"),
    ({"chips": 0}, "chips must be a whole number ≥ 1, got 0"),
    ({"chips": -1}, "chips must be a whole number ≥ 1, got -1"),
    ({"micro_batch": 0}, "micro_batch must be a whole number ≥ 1, got 0"),
    ({"mode": "turbo"}, "a100 has no execution mode 'turbo'"),
])
def test_a_session_refuses_what_compile_would_at_construction(kw: dict[str, Any], says: str) -> None:
    refused(lambda: ak.Session(mlp(), target="a100", **kw), says)


def test_one_section_may_be_named_as_a_string() -> None:
    assert ak.Session(mlp(), target="a100").run(X, sections="fwd").sections == ("fwd",)


def test_compile_refuses_chips_true() -> None:
    refused(lambda: ak.compile(mlp(), (X,), target="a100", chips=True), "chips must be a whole number",
            "bool True", kind=CompileError)


def test_more_data_replicas_than_samples_is_refused() -> None:
    refused(lambda: ak.compile(mlp(), (X,), target="a100", chips=8, parallel=ak.Parallel(data=8)),
            "8 replicas", "batch of 4", "would have no sample", kind=CompileError)


def test_integer_inputs_into_a_float_linear_are_not_ready() -> None:
    ids = torch.randint(0, 5, (4, 8))
    report = ak.check(mlp(), (ids,), target="a100")
    assert not report.ok and report.errors[0].kind == "dtype" and "float32 and int64" in report.errors[0].reason
    refused(lambda: ak.compile(mlp(), (ids,), target="a100"), "float32 and int64", kind=CompileError)
    refused(lambda: ak.port(mlp(), (ids,), target="a100"), "Sequential.forward raised RuntimeError",
            "int64[4, 8]", kind=ModelError)


class ReturnsNone(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> None:
        self.fc(x)


class ReturnsMixed(ReturnsNone):
    def forward(self, x: torch.Tensor) -> Any:  # type: ignore[override]
        return self.fc(x), 3, "text"


@pytest.mark.parametrize("model_cls", [ReturnsNone, ReturnsMixed])
def test_a_forward_returning_non_tensors_is_refused(model_cls: type[nn.Module]) -> None:
    report = ak.check(model_cls(), (X,), target="a100")
    assert not report.ok and report.kinds() == ["non-tensor-output"]
    refused(lambda: ak.compile(model_cls(), (X,), target="a100"), "non-tensor-output", kind=CompileError)
    refused(lambda: ak.Session(model_cls(), target="a100").run(X), "non-tensor-output", kind=CompileError)


def meta_mlp() -> nn.Module:
    with torch.device("meta"):
        return nn.Sequential(nn.Linear(8, 8))


@pytest.mark.parametrize("inputs_on", ["cpu", "meta"])
def test_meta_models_are_refused_where_real_numbers_are_needed(inputs_on: str) -> None:
    x = torch.randn(4, 8, device=inputs_on)
    refused(lambda: ak.Session(meta_mlp(), target="a100").run(x), "Session.run runs the model for real",
            "on the meta device", kind=ModelError)
    refused(lambda: ak.profile(meta_mlp(), (x,)), "on the meta device", kind=ModelError)
    refused(lambda: ak.profile(mlp(), (torch.randn(4, 8, device="meta"),)), "meta device", kind=ModelError)
    assert ak.compile(meta_mlp(), (x.to("meta"),), target="a100").weights is None  # modelling needs no values


# ---- one verdict: check, port and compile agree ---------------------------------------------------
class MaskedSum(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        return h + h[h > 0].sum()


class NonZero(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nonzero(x)


@pytest.mark.parametrize("model_cls", [MaskedSum, NonZero])
def test_check_port_and_compile_agree_on_data_dependent_shapes(model_cls: type[nn.Module]) -> None:
    report = ak.check(model_cls(), (X,), target="a100")
    assert not report.ok and "ak.compile refuses it" in report.errors[0].reason
    assert not ak.port(model_cls(), (X,), target="a100").report_after.ok
    refused(lambda: ak.compile(model_cls(), (X,), target="a100"), "depends on the values", kind=CaptureError)


class Item(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        return h * h.sum().item()


def test_item_in_a_training_capture_is_a_host_sync_error() -> None:
    err = refused(lambda: ak.capture(Item(), (X,), training=True), "reads a tensor's value on the host",
                  "test_clear_errors.py:", kind=CaptureError)
    assert err.kind == "host-sync"  # type: ignore[attr-defined]
    assert not ak.check(Item(), (X,), target="a100", training=True).ok


# ---- the user's own code failing is named as theirs, never a recipe's ---------------------------
class Raises(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("a bug in the user's forward")


def test_an_exception_in_forward_leaves_port_as_the_users_error() -> None:
    err = refused(lambda: ak.port(Raises(), (X,), target="tsp"), "Raises.forward raised ValueError",
                  "a bug in the user's forward", "test_clear_errors.py:", kind=ModelError)
    assert isinstance(err.__cause__, ValueError) and not isinstance(err, PortError)


def test_wrong_inputs_to_port_are_the_callers_not_a_recipes() -> None:
    refused(lambda: ak.port(mlp(), (torch.randn(4, 9),), target="tsp"), "float32[4, 9]", kind=ModelError)


def test_a_loss_fn_that_fails_on_the_labels_is_named_not_the_recipe() -> None:
    def model() -> nn.Module:  # loss-in-forward: the IPU wants the loss computed inside forward
        return mlp()

    err = refused(lambda: ak.port(model(), (X,), target="gc200", training=True, loss_fn=nn.CrossEntropyLoss(),
                                  labels=torch.randint(0, 4, (5,))),
                  "loss_fn(outputs, labels) of Sequential raised", kind=ModelError)
    assert "recipe" not in err.message


class BreaksLater(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.broken = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.broken:
            raise RuntimeError("fails on real data")
        return self.fc(x)


def test_an_exception_in_forward_during_a_session_step_is_the_users_error() -> None:
    model = BreaksLater()
    session = ak.Session(model, target="a100")
    session.run(X)  # compiled and run
    model.broken = True
    refused(lambda: session.run(X), "BreaksLater.forward raised RuntimeError: fails on real data",
            "test_clear_errors.py:", "float32[4, 8]", kind=ModelError)


# ---- the second campaign: raw errors, hangs and a cache that grew without bound ----------------------------
def test_a_huge_batch_is_refused_at_once_with_a_few_nearby_legal_values() -> None:
    import time

    t0 = time.perf_counter()
    err = refused(lambda: ak.Session(nn.Linear(16, 4), target="a100", batch_size=10**12, micro_batch=7),
                  "not divisible by micro_batch 7", kind=CompileError)
    assert time.perf_counter() - t0 < 5 and "[4, 5, 8, 10]" in str(err.fix)


def test_legal_batches_of_a_huge_artifact_come_from_its_factors() -> None:
    from types import SimpleNamespace

    from accelkit.boundary import divisors
    from accelkit.box import legal_values

    assert divisors(10**12)[:6] == [1, 2, 4, 5, 8, 10] and len(divisors(10**12)) == 169
    assert divisors(999_999_999_989) == [1, 999_999_999_989]  # a prime: trial division stops at a million
    prog = SimpleNamespace(batch_size=10**12, parallel=SimpleNamespace(data=4), spec=SimpleNamespace(name="a100"),
                           precision="fp32")
    legal = legal_values(prog)["batch_size"]
    assert legal[:3] == [4, 8, 16] and legal[-1] == 10**12 and all(10**12 % d == 0 and d % 4 == 0 for d in legal)


def test_an_empty_batch_is_refused() -> None:
    refused(lambda: ak.compile(mlp(), (torch.randn(0, 8),), target="a100", precision="fp32"), "0 samples",
            kind=CompileError)


def test_wrong_kinds_of_argument_name_the_argument() -> None:
    model = mlp()
    refused(lambda: ak.check(model, (X,), target="a100", graph="g"), "graph must be a Graph", kind=ArgumentError)
    refused(lambda: ak.Session.from_program(model, "prog"), "needs a compiled program")
    refused(lambda: ak.Session(model, target="a100").run(X, sections=5), "sections must be a list")
    refused(lambda: ak.port(model, (X,), target="a100", seed=2**70), "seed must be at most 2**64 - 1",
            kind=ArgumentError)


def test_folder_arguments_that_are_not_paths(tmp_path: Path) -> None:
    from accelkit.box import run_box
    from accelkit.groqflow import groqit

    refused(lambda: run_box(None), "must be a folder path")  # type: ignore[arg-type]
    refused(lambda: groqit(mlp(), {"input": X}, cache_dir=5), "cache_dir must be a folder path")  # type: ignore[arg-type]


def test_the_cli_refuses_a_seed_torch_cannot_take(capsys: pytest.CaptureFixture[str]) -> None:
    from accelkit.cli import main

    assert main(["check", "zoo:ffn_logreg", "-t", "tsp", "--seed", "18446744073709551616"]) == 2
    assert "2**64 - 1" in capsys.readouterr().err


def test_a_save_to_a_folder_that_cannot_be_written_is_an_accelkit_error(tmp_path: Path) -> None:
    from accelkit.compiler.manifest import ArtifactError

    prog = ak.compile(nn.Linear(3, 2), (torch.randn(2, 3),), target="a100", precision="fp32")
    (tmp_path / "file").write_text("in the way")
    refused(lambda: prog.save(tmp_path / "file" / "m.akp"), "cannot write the artifact", kind=ArtifactError)


@pytest.mark.parametrize("returns", [None, "hello"])
def test_port_refuses_to_verify_a_forward_that_returns_no_tensor(returns: Any) -> None:
    class Quiet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x: torch.Tensor) -> Any:
            self.fc(x)
            return returns

    refused(lambda: ak.port(Quiet(), (X,), target="tsp"), "no tensor in it", kind=ModelError)


def test_an_artifact_for_a_chip_from_a_file_runs(tmp_path: Path) -> None:
    """A chip read with hardware.load() is not in the catalog: the artifact carries it, and run uses that."""
    from accelkit.runner import run_artifact

    base = Path(ak.hardware.__file__).parent / "systems"
    text = (base / "a100.toml").read_text().replace('name = "a100"', 'name = "my-a100"', 1)
    (tmp_path / "my.toml").write_text(text)
    chip = ak.hardware.load(tmp_path / "my.toml")
    assert chip.name == "my-a100"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4))
    out = ak.compile(model, (X,), target=chip, precision="fp32").save(tmp_path / "m.akp")
    tiny = tmp_path / "tinymodels.py"
    tiny.write_text("from torch import nn\n\ndef make():\n    return nn.Sequential(nn.Linear(8, 4))\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        result = run_artifact(out, spec="tinymodels:make")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("tinymodels", None)
    assert result.report.target == "my-a100" and result.report.steps == 1


def test_a_session_keeps_a_bounded_number_of_compiled_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelkit.runtime import session as session_module

    assert session_module.PROGRAM_CACHE_SIZE == 16
    monkeypatch.setattr(session_module, "PROGRAM_CACHE_SIZE", 2)  # the same rule, fewer compiles
    session = ak.Session(nn.Linear(4, 2), target="a100")
    for n in (1, 2, 1, 3):  # 1 is used again before 3 comes: 2 is the least recently used, and goes
        session.run(torch.randn(n, 4))
    assert [key[0][0][0][0] for key in session._programs] == [1, 3]
    assert session.compiled is not None and session.compiled.example_batch == 3


def test_port_draws_fresh_complex_inputs() -> None:
    """Fresh inputs like a complex example are drawn as complex numbers (torch has no min() for them)."""
    class Real(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, z: torch.Tensor) -> torch.Tensor:
            return self.fc(z.real)

    try:
        result = ak.port(Real(), (torch.randn(4, 8, dtype=torch.complex64),), target="tsp", trials=2)
    except AccelkitError as err:  # a target may refuse complex inputs: then with a fix, never raw
        assert err.fix
    else:
        assert result.verified and result.samples_checked == 3
