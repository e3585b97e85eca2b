"""Robustness properties over generated models (Hypothesis; issue 15), kept lean for CI:

- every failure of the Python API (compile, Session, capture, check, port, serve, profile) on a bad argument or a bad input is an ``AccelkitError`` whose message has a
  fix, never a raw exception (``test_every_bad_input_gets_an_accelkit_error_with_a_fix``);
- a Session step equals the same step in eager PyTorch: outputs, loss and the weights after the optimizer step
  (``test_a_session_step_equals_eager_pytorch``);
- check, port and compile give one verdict, and a port that claims success keeps the outputs and the gradients
  (``test_check_port_and_compile_agree``).

Each test counts the models it generated and asserts its share, so CI proves the suite ran at least
``sum(MODELS.values())`` (>= 200) models with no raw traceback and no mismatch. Derandomized, no example database:
the same models every run.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import accelkit as ak
from accelkit.errors import AccelkitError

MODELS = {"bad inputs": 190, "session": 8, "verdicts": 10}
"""Generated models per property (the examples Hypothesis draws); 208 in all."""

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
