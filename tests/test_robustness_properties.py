"""Robustness properties over generated models (Hypothesis; issue 15), kept lean for CI:

- every failure of the Python API (compile, Session, capture, check, port, serve, profile) on a bad argument or a bad input is an ``AccelkitError`` whose message has a
  fix, never a raw exception (``test_every_bad_input_gets_an_accelkit_error_with_a_fix``);
- a Session step equals the same step in eager PyTorch: outputs, loss and the weights after the optimizer step
  (``test_a_session_step_equals_eager_pytorch``);
- check, port and compile give one verdict, and a port that claims success keeps the outputs and the gradients
  (``test_check_port_and_compile_agree``);
- a received folder reads nothing outside itself through symlinks and never puts itself on the import path;
  ``prog.save`` and checkpoints stay loadable under concurrent saves and ``kill -9``; a flipped bit in
  ``checkpoint.json`` is refused with the session untouched; a huge batch is refused at once; measuring the host
  never moves torch's random state (the dropout oracle under ``target="host"``).

Each test counts the models it generated and asserts its share, so CI proves the suite ran at least
``sum(MODELS.values())`` (>= 200) models with no raw traceback and no mismatch. Derandomized, no example database:
the same models every run.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.abc
import io
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import accelkit as ak
from accelkit.errors import AccelkitError

MODELS = {"bad inputs": 190, "session": 8, "verdicts": 10}
"""Generated models per property (the examples Hypothesis draws); 208 in all."""
FOLDERS = {"symlinks": 8, "shadowed": 4, "concurrent": 3, "killed": 8, "flips": 30, "huge batches": 12,
           "host dropout": 2}
"""Examples per property over folders, saves and clocks (cheap ones: tiny models, no subprocess)."""

SETTINGS = {"deadline": None, "derandomize": True, "database": None,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


# ---- generated models ------------------------------------------------------------------------------------
BLOCKS: dict[str, Callable[[int], nn.Module]] = {
    "linear": lambda w: nn.Linear(w, w), "relu": lambda w: nn.ReLU(), "gelu": lambda w: nn.GELU(),
    "norm": nn.LayerNorm, "tanh": lambda w: nn.Tanh(), "dropout0": lambda w: nn.Dropout(0.0),
}


@st.composite
def mlps(draw: st.DrawFn) -> tuple[nn.Module, torch.Tensor]:
    width = draw(st.sampled_from([4, 8, 12]))
    kinds = draw(st.lists(st.sampled_from(sorted(BLOCKS)), min_size=1, max_size=4))
    torch.manual_seed(draw(st.integers(0, 10_000)))
    first = nn.Linear(width, width)  # so an int64 input is wrong for every model drawn (tanh(int64) is float)
    model = nn.Sequential(first, *[BLOCKS[k](width) for k in kinds], nn.Linear(width, 3))
    return model, torch.randn(draw(st.sampled_from([2, 4, 8])), width)


class Hazards(nn.Module):
    """A linear layer, then what porting guides warn about, as drawn: a Python ``if`` on a tensor (``branch``),
    a data-dependent size (``mask``), a host read (``item``), a non-tensor output (``extra``)."""

    def __init__(self, width: int, hazards: tuple[str, ...]) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.out = nn.Linear(width, 3)
        self.hazards = hazards

    def forward(self, x: torch.Tensor) -> Any:
        h = self.fc(x)
        if "branch" in self.hazards:
            if h.mean() > 0:
                h = torch.relu(h)
            else:
                h = torch.tanh(h)
        if "mask" in self.hazards:
            h = h + h[h > 0].sum()
        if "item" in self.hazards:
            h = h * float(h.abs().max().item())
        y = self.out(h)
        return (y, "extra") if "extra" in self.hazards else y


@st.composite
def hazardous(draw: st.DrawFn) -> tuple[nn.Module, torch.Tensor, tuple[str, ...]]:
    width = draw(st.sampled_from([4, 8]))
    hazards = tuple(draw(st.lists(st.sampled_from(["branch", "mask", "item", "extra"]), max_size=2, unique=True)))
    torch.manual_seed(draw(st.integers(0, 10_000)))
    return Hazards(width, hazards), torch.randn(draw(st.sampled_from([2, 4])), width), hazards


# ---- 1. every failure is an accelkit error with a fix ------------------------------------------------------
BAD = {  # argument -> values it must refuse
    "target": [None, 3, {}, "tpu9", ""],
    "chips": [0, -1, True, "2", 2.5, None],
    "batch_size": [0, -3, "8", 1.5, False],
    "micro_batch": [0, "2", -2, 3.5],
    "mode": ["turbo", 3, None],
    "precision": ["fp13", None, 16, ""],
    "training": ["yes", 1, None],
    "parallel": ["data", 2, (2, 1, 1)],
    "fallback": ["cpu", True],
    "optimizer": ["adam", 0.1, torch.optim.SGD],
    "loss_fn": ["mse", 3],
    "tolerance": ["tight", -1.0, float("nan")],
    "trials": ["3", -1, 1.5],
    "dynamic_dims": [{0: 7}, {5: 0}, {"nope": 1}, [0], {0: "x"}],
    "prompt_tokens": ["8", 0, -4, 2.0],
    "runs": [0, "3", None],
    "inputs": ["wrong width", "int64", "a string", "a list of strings"],
}
TAKES = {  # entry point -> the arguments it takes, with the defaults filled in when another one is bad
    "compile": ("target", "chips", "batch_size", "micro_batch", "mode", "precision", "training", "parallel",
                "fallback", "inputs"),
    "session": ("target", "chips", "batch_size", "micro_batch", "mode", "precision", "parallel", "fallback",
                "optimizer", "loss_fn", "inputs"),
    "capture": ("training", "inputs"),
    "check": ("target", "training", "dynamic_dims"),
    "port": ("target", "training", "tolerance", "trials", "dynamic_dims", "loss_fn", "inputs"),
    "serve": ("target", "chips", "precision", "prompt_tokens", "mode", "parallel"),
    "profile": ("runs", "training", "inputs"),
}


def _inputs(kind: str, x: torch.Tensor) -> Any:
    return {"wrong width": (torch.randn(x.shape[0], x.shape[1] + 1),), "int64": (x.long(),), "a string": "x",
            "a list of strings": ["a", "b"]}[kind]


def _call(entry: str, model: nn.Module, x: torch.Tensor, arg: str, bad: Any) -> None:
    inputs = _inputs(bad, x) if arg == "inputs" else (x,)
    kw = {} if arg == "inputs" else {arg: bad}
    target = kw.pop("target", "a100")
    if entry == "compile":
        ak.compile(model, inputs, target=target, precision=kw.pop("precision", "fp32"), **kw)
    elif entry == "session":
        ak.Session(model, target=target, **kw).run(*inputs) if isinstance(inputs, tuple) else \
            ak.Session(model, target=target, **kw).run(inputs)
    elif entry == "capture":
        ak.capture(model, inputs, **kw)
    elif entry == "check":
        ak.check(model, inputs, target=target, **kw)
    elif entry == "port":
        ak.port(model, inputs, target=target, **kw)
    elif entry == "serve":
        ak.serve(model, target=target, prompt_tokens=kw.pop("prompt_tokens", 8), output_tokens=8, **kw)
    else:
        ak.profile(model, inputs, warmup=0, check_portability=False, **kw)


def test_every_bad_input_gets_an_accelkit_error_with_a_fix() -> None:
    seen: list[str] = []
    raw: list[str] = []
    accepted: list[str] = []

    @settings(max_examples=MODELS["bad inputs"], **SETTINGS)  # type: ignore[call-overload]
    @given(m=mlps(), data=st.data())
    def prop(m: tuple[nn.Module, torch.Tensor], data: st.DataObject) -> None:
        model, x = m
        entry = data.draw(st.sampled_from(sorted(TAKES)))
        arg = data.draw(st.sampled_from(TAKES[entry]))
        bad = data.draw(st.sampled_from(BAD[arg]))
        case = f"{entry}({arg}={bad!r}) on {model}"
        seen.append(case)
        if entry == "capture" and bad == "int64":
            return  # capture records what export sees; ak.check then reports the dtype error (test_clear_errors)
        try:
            _call(entry, model, x, arg, bad)
        except AccelkitError as err:
            if not err.fix:
                raw.append(f"{case}: no fix in {err!r}")
            elif arg != "inputs" and arg not in str(err):
                raw.append(f"{case}: the error does not name {arg!r}: {err}")
        except Exception as err:  # noqa: BLE001 - what this property hunts for
            raw.append(f"{case}: raw {type(err).__name__}: {err}")
        else:
            accepted.append(case)

    prop()
    assert len(seen) >= MODELS["bad inputs"]
    assert raw == [] and accepted == []


# ---- 2. a Session step is the eager PyTorch step -----------------------------------------------------------
def test_a_session_step_equals_eager_pytorch() -> None:
    seen: list[str] = []

    @settings(max_examples=MODELS["session"], **SETTINGS)  # type: ignore[call-overload]
    @given(m=mlps(), target=st.sampled_from(["a100", "sn40l", "gc200", "wse2", "tsp"]), training=st.booleans(),
           micro=st.sampled_from([None, 2]))
    def prop(m: tuple[nn.Module, torch.Tensor], target: str, training: bool, micro: int | None) -> None:
        model, x = m
        seen.append(f"{model} on {target}")
        labels = torch.randint(0, 3, (x.shape[0],))
        eager = copy.deepcopy(model)
        kw: dict[str, Any] = {}
        if training:
            kw = {"optimizer": torch.optim.SGD(model.parameters(), lr=0.1), "loss_fn": nn.CrossEntropyLoss(),
                  "micro_batch": micro}
        step = ak.Session(model, target=target, precision="fp32", **kw).run(x, labels=labels if training else None)
        eager.train(training)
        with torch.set_grad_enabled(training):
            out = eager(x)
        if training:
            opt = torch.optim.SGD(eager.parameters(), lr=0.1)
            loss = nn.CrossEntropyLoss()(out, labels)
            loss.backward()
            opt.step()
            exact = micro is None  # micro-batches add their gradients in another order: float rounding only
            tol = {"rtol": 0, "atol": 0} if exact else {"rtol": 1e-5, "atol": 1e-6}
            torch.testing.assert_close(step.loss, loss.detach(), **tol)
            for a, b in zip(model.parameters(), eager.parameters(), strict=True):
                torch.testing.assert_close(a.detach(), b.detach(), **tol)
        else:
            torch.testing.assert_close(step.outputs, out, rtol=0, atol=0)

    prop()
    assert len(seen) >= MODELS["session"]


# ---- 3. check, port and compile: one verdict; a port that claims success keeps outputs and gradients ---------
def first_tensor(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out


def _grads(model: nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    work = copy.deepcopy(model).train()
    first_tensor(work(x)).double().sum().backward()
    return {re.sub(r"^(inner\.)+", "", n): p.grad for n, p in work.named_parameters() if p.grad is not None}


def test_check_port_and_compile_agree() -> None:
    seen: list[str] = []
    verdicts: dict[str, int] = {"ready": 0, "refused": 0, "ported": 0}

    @settings(max_examples=MODELS["verdicts"], **SETTINGS)  # type: ignore[call-overload]
    @given(m=hazardous(), target=st.sampled_from(["a100", "sn40l", "gc200", "tsp"]))
    def prop(m: tuple[nn.Module, torch.Tensor, tuple[str, ...]], target: str) -> None:
        model, x, hazards = m
        seen.append(f"{hazards} on {target}")
        precision = next(p for p in ("bf16", "fp16", "fp32") if p in ak.hardware.get(target).peak_flops)
        report = ak.check(model, (x,), target=target)
        try:
            ak.compile(model, (x,), target=target, precision=precision)
            compiled = True
        except AccelkitError as err:
            assert err.fix, err
            compiled = False
        assert report.ok == compiled, (hazards, target, report.headline())
        verdicts["ready" if compiled else "refused"] += 1
        result = ak.port(model, (x,), target=target)  # raises only an AccelkitError (else the test fails)
        if not result.report_after.ok:
            return
        verdicts["ported"] += 1  # it claims success: compile agrees, the numbers and the gradients are kept
        ak.compile(result.model, result.example_inputs, target=target, precision=precision)
        g = torch.Generator().manual_seed(1)
        for fresh in (x, torch.randn(x.shape, generator=g) + 2, torch.randn(x.shape, generator=g) - 2):
            with torch.no_grad():
                want = first_tensor(model.eval()(fresh))
                got = first_tensor(result.model.eval()(*result.convert_inputs((fresh,))))
            torch.testing.assert_close(got, want, rtol=result.tolerance.rtol, atol=result.tolerance.atol + 1e-6)
        if not any("inference only" in n for n in result.notes):
            want_g, got_g = _grads(model, x), _grads(result.model, x)
            assert want_g.keys() == got_g.keys()
            for name, gr in want_g.items():
                torch.testing.assert_close(got_g[name], gr, rtol=1e-4, atol=1e-5)

    prop()
    assert len(seen) >= MODELS["verdicts"]
    assert verdicts["ready"] and verdicts["refused"] and verdicts["ported"]  # every branch was exercised


# ---- 4. a received folder: nothing outside it is read, nothing in it is imported ---------------------------
@pytest.fixture(scope="module")
def pristine_box(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ModelBox of zoo:ffn_logreg (from `accelkit compile` and `accelkit box`), copied afresh by each example."""
    from accelkit.cli import main

    root = tmp_path_factory.mktemp("pristine")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["compile", "zoo:ffn_logreg", "-t", "a100", "--precision", "fp32", "-o", str(root / "a.akp")]) == 0
        assert main(["box", str(root / "a.akp"), str(root / "box"), "--steps", "1"]) == 0
    (root / "secret.txt").write_text("password: hunter2\n")
    return root


LINKED = ["box.yaml", "model.akp", "model.akp/manifest.json", "model.akp/weights.safetensors", "model.akp/cli.json"]


def test_a_symlink_out_of_a_box_is_refused(pristine_box: Path, tmp_path: Path) -> None:
    from accelkit.box import run_box
    from accelkit.runner import run_artifact

    seen: list[str] = []

    @settings(max_examples=FOLDERS["symlinks"], **SETTINGS)  # type: ignore[call-overload]
    @given(name=st.sampled_from(LINKED), to=st.sampled_from(["secret", "other artifact", "/dev/zero", "missing"]))
    def prop(name: str, to: str) -> None:
        box = tmp_path / f"box{len(seen)}"
        seen.append(f"{name} -> {to}")
        shutil.copytree(pristine_box / "box", box)
        target = {"secret": pristine_box / "secret.txt", "other artifact": pristine_box / "a.akp",
                  "/dev/zero": Path("/dev/zero"), "missing": pristine_box / "nowhere"}[to]
        if to == "other artifact" and name != "model.akp":
            target = target / Path(name).name if name.startswith("model.akp/") else target / "manifest.json"
        victim = box / name
        shutil.rmtree(victim) if victim.is_dir() else victim.unlink()
        victim.symlink_to(target)
        with pytest.raises(AccelkitError) as info:  # cli.json: the box never reads it, `accelkit run` on its artifact does
            run_box(box) if name != "model.akp/cli.json" else run_artifact(box / "model.akp")
        assert info.value.fix and "hunter2" not in str(info.value), info.value

    prop()
    assert len(seen) >= FOLDERS["symlinks"]


class _Recorder(importlib.abc.MetaPathFinder):
    """Notes every import made while a given folder is on sys.path (it finds nothing itself)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.hits = str(folder), []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if self.folder in sys.path:
            self.hits.append(name)


def test_a_received_folder_is_never_on_the_import_path(pristine_box: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`cd box; accelkit run .` (and box, check, compile from inside it) import nothing while the folder is on
    sys.path, so a yaml.py or sympy.py placed there can shadow nothing (the subprocess test in test_security
    runs it for real)."""
    from accelkit.cli import main

    seen: list[str] = []

    @settings(max_examples=FOLDERS["shadowed"], **SETTINGS)  # type: ignore[call-overload]
    @given(argv=st.sampled_from([["run", "."], ["run", "model.akp"], ["box", "model.akp", "again"],
                                 ["check", "zoo:ffn_logreg", "-t", "tsp"]]),
           names=st.lists(st.sampled_from(["yaml", "safetensors", "IPython", "sympy", "plotly", "accelkit_zoo"]),
                          min_size=1, max_size=3, unique=True))
    def prop(argv: list[str], names: list[str]) -> None:
        box = tmp_path / f"box{len(seen)}"
        seen.append(" ".join(argv))
        shutil.copytree(pristine_box / "box", box)
        for name in names:
            (box / f"{name}.py").write_text("raise SystemExit('imported from the received folder')\n")
        monkeypatch.chdir(box)
        recorder = _Recorder(box)
        sys.meta_path.insert(0, recorder)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                code = main(argv)
        finally:
            sys.meta_path.remove(recorder)
        assert recorder.hits == [] and code in (0, 1), (argv, recorder.hits)
        assert str(box) not in sys.path

    prop()
    assert len(seen) >= FOLDERS["shadowed"]


# ---- 5. saves: concurrent, killed; loads: flipped bits --------------------------------------------------------
def _tiny_programs() -> tuple[Any, Any]:
    torch.manual_seed(0)
    a = ak.compile(nn.Linear(6, 3), (torch.randn(2, 6),), target="a100", precision="fp32")
    b = ak.compile(nn.Sequential(nn.Linear(6, 4), nn.ReLU()), (torch.randn(4, 6),), target="sn40l", precision="fp32")
    return a, b


def test_concurrent_saves_leave_one_whole_artifact_and_checkpoint(tmp_path: Path) -> None:
    progs = _tiny_programs()
    seen: list[str] = []

    @settings(max_examples=FOLDERS["concurrent"], **SETTINGS)  # type: ignore[call-overload]
    @given(writers=st.integers(2, 4), exists=st.booleans())
    def prop(writers: int, exists: bool) -> None:
        root = tmp_path / f"c{len(seen)}"
        seen.append(f"{writers} writers")
        akp, ckpt = root / "m.akp", root / "ckpt"
        sessions = [ak.Session(nn.Linear(3, 2), target="a100", optimizer=None) for _ in range(writers)]
        if exists:
            progs[0].save(akp)
            sessions[0].save_checkpoint(ckpt)
        errors: list[BaseException] = []

        def work(i: int) -> None:
            try:
                for _ in range(3):
                    progs[i % 2].save(akp)
                    sessions[i].save_checkpoint(ckpt)
            except BaseException as exc:  # noqa: BLE001 - collected, asserted below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert ak.load(akp).batch_size in (2, 4)
        sessions[0].load_checkpoint(ckpt)
        assert not [p.name for p in root.iterdir() if p.name.startswith(".")]  # no temporary folder left

    prop()
    assert len(seen) >= FOLDERS["concurrent"]


def test_kill_9_during_prog_save_leaves_a_loadable_artifact(tmp_path: Path) -> None:
    a, b = _tiny_programs()
    seen: list[float] = []

    @settings(max_examples=FOLDERS["killed"], **SETTINGS)  # type: ignore[call-overload]
    @given(delay_ms=st.integers(0, 60))
    def prop(delay_ms: int) -> None:
        akp = tmp_path / f"k{len(seen)}" / "m.akp"
        seen.append(delay_ms)
        a.save(akp)
        pid = os.fork()
        if pid == 0:  # the child overwrites the artifact again and again, until it is killed
            try:
                while True:
                    b.save(akp)
                    a.save(akp)
            finally:
                os._exit(0)
        time.sleep(delay_ms / 1000)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        assert ak.load(akp).batch_size in (2, 4)  # the previous artifact or the new one, never a mix

    prop()
    assert len(seen) >= FOLDERS["killed"]


def test_a_flipped_bit_in_checkpoint_json_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    from accelkit.runtime import CheckpointError

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    s = ak.Session(model, target="a100", optimizer=torch.optim.Adam(model.parameters(), lr=1e-3),
                   loss_fn=nn.MSELoss())
    s.run(torch.randn(4, 3), labels=torch.randn(4, 2))
    ckpt = Path(s.save_checkpoint(tmp_path / "ckpt"))
    s.run(torch.randn(4, 3), labels=torch.randn(4, 2))  # the session moves on: a load would change it
    saved = (ckpt / "checkpoint.json").read_bytes()
    outcomes = {"refused": 0, "same": 0}

    @settings(max_examples=FOLDERS["flips"], **SETTINGS)  # type: ignore[call-overload]
    @given(at=st.integers(0, len(saved) - 1), bit=st.integers(0, 7))
    def prop(at: int, bit: int) -> None:
        flipped = bytearray(saved)
        flipped[at] ^= 1 << bit
        (ckpt / "checkpoint.json").write_bytes(bytes(flipped))
        before = {k: v.clone() for k, v in model.state_dict().items()}
        opt_before = json.dumps({k: v for k, v in s.optimizer.state_dict()["param_groups"][0].items()})
        clock = (s.steps, s.simulated_time_s)
        try:
            s.load_checkpoint(ckpt)
        except CheckpointError as err:
            assert err.fix
            assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
            assert json.dumps(dict(s.optimizer.state_dict()["param_groups"][0].items())) == opt_before
            assert (s.steps, s.simulated_time_s) == clock
            outcomes["refused"] += 1
            return
        # loaded: only a flip JSON ignores (whitespace) can get here, and then it is the saved checkpoint
        assert json.loads(bytes(flipped)) == json.loads(saved)
        outcomes["same"] += 1

    prop()
    (ckpt / "checkpoint.json").write_bytes(saved)
    assert outcomes["refused"] >= FOLDERS["flips"] // 2


# ---- 6. huge batches are refused at once; measuring the host leaves torch's random state alone -----------------
def test_a_huge_batch_gets_an_answer_at_once() -> None:
    seen: list[str] = []

    @settings(max_examples=FOLDERS["huge batches"], **SETTINGS)  # type: ignore[call-overload]
    @given(batch=st.one_of(st.integers(10**9, 10**15), st.sampled_from([10**12, 2**50, 999_999_999_989])),
           micro=st.integers(2, 97), entry=st.sampled_from(["session", "compile"]))
    def prop(batch: int, micro: int, entry: str) -> None:
        seen.append(f"{entry} {batch} / {micro}")
        t0 = time.perf_counter()
        model = nn.Linear(16, 4)
        try:
            if entry == "session":
                ak.Session(model, target="a100", batch_size=batch, micro_batch=micro)
            else:
                ak.compile(model, (torch.randn(2, 16),), target="a100", precision="fp32", batch_size=batch,
                           micro_batch=micro, training=True)
        except AccelkitError as err:
            assert batch % micro and "micro_batch" in str(err) and err.fix
        else:
            assert batch % micro == 0
        assert time.perf_counter() - t0 < 5

    prop()
    assert len(seen) >= FOLDERS["huge batches"]


class _Dropper(nn.Module):
    def __init__(self, width: int, p: float) -> None:
        super().__init__()
        self.fc, self.drop, self.out = nn.Linear(width, width), nn.Dropout(p), nn.Linear(width, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.drop(torch.relu(self.fc(x))))


def test_a_session_measured_on_the_host_keeps_the_dropout_masks_of_pytorch() -> None:
    """target="host" measures this CPU while it compiles (tiny models, ops replayed): it must not draw from torch's
    global random state, or the first dropout mask differs from plain PyTorch's."""
    from accelkit.cost import host

    seen: list[str] = []

    @settings(max_examples=FOLDERS["host dropout"], **SETTINGS)  # type: ignore[call-overload]
    @given(width=st.integers(3, 24), p=st.sampled_from([0.1, 0.5]), seed=st.integers(0, 1000),
           batch=st.sampled_from([2, 5]))
    def prop(width: int, p: float, seed: int, batch: int) -> None:
        seen.append(f"{width} {p}")
        host._OP_TIMES.clear()  # measured afresh, as in a new process
        torch.manual_seed(seed)
        model = _Dropper(width, p)
        eager = copy.deepcopy(model)
        x, labels = torch.randn(batch, width), torch.randint(0, 2, (batch,))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        session = ak.Session(model, target="host", optimizer=opt, loss_fn=nn.CrossEntropyLoss())
        torch.manual_seed(seed + 1)
        step = session.run(x, labels=labels)
        torch.manual_seed(seed + 1)
        want = nn.CrossEntropyLoss()(eager.train()(x), labels)
        torch.testing.assert_close(step.loss, want.detach(), rtol=0, atol=0)

    prop()
    assert len(seen) >= FOLDERS["host dropout"]
