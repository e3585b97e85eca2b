"""``GroqModel``: what ``groqit`` returns — call it like the PyTorch model; ask it for its modelled speed.

    gmodel = groqit(model, {"x": x})
    gmodel(x=x)                       # real numerics (fp16, as GroqFlow converts the model) on this CPU
    gmodel.estimate_performance()     # latency / throughput on the chips the build needed (MODELLED)
    gmodel.state.build_status         # "successful_build"; gmodel.state.loaded_from_cache

An fp16 build's convolutions and matrix products are computed from their fp16 operands with fp32 sums, rounded to
fp16 once, as the TSP's matrix units accumulate fp16 products in fp32 (Abts et al., "Think Fast: A Tensor Streaming
Processor", ISCA 2020) (:class:`~accelkit.facades.poptorch.partials.FloatPartials`: on this CPU about ten times
faster than PyTorch's own fp16 kernels for a ResNet-50).

The TSP runs a schedule the compiler fixed cycle by cycle, so one input shape always takes the same
time: the build is for the exact shapes given to ``groqit``, and a call with other shapes is refused
(GroqFlow's advice: pad the inputs to the built shape).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from accelkit.compiler.program import CompiledProgram
from accelkit.errors import AccelkitError
from accelkit.facades.poptorch.partials import FloatPartials
from accelkit.hardware.spec import fmt_sig
from accelkit.runtime import facade_log
from accelkit.runtime.session import Session, SessionReport


class GroqFlowError(AccelkitError, ValueError):
    """A groqit build or GroqModel call that cannot work as written: says what, and the fix."""


def bind_inputs(model: nn.Module, inputs: Any = None, args: tuple[Any, ...] = (),
                kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The model's inputs by forward-argument name, in signature order, from a dict, a tuple or a tensor."""
    if inputs is not None:
        if isinstance(inputs, dict):
            kwargs = dict(inputs)
        elif isinstance(inputs, (tuple, list)):
            args = tuple(inputs)
        else:
            args = (inputs,)
    sig = inspect.signature(model.forward)
    try:
        bound = sig.bind(*args, **(kwargs or {}))
    except TypeError as exc:
        raise GroqFlowError(f"the inputs do not match {type(model).__name__}.forward{sig}: {exc}",
                            fix="pass a dict keyed by forward's argument names, e.g. groqit(model, {'x': x})") from None
    variadic = [n for n, p in sig.parameters.items()
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and n in bound.arguments]
    if variadic:
        raise GroqFlowError(f"{type(model).__name__}.forward takes *args/**kwargs ({variadic}); a build needs named "
                            "inputs", fix="give forward named arguments")
    return dict(bound.arguments)


def input_shapes(named: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")} if isinstance(v, torch.Tensor)
            else {"value": repr(v)} for k, v in named.items()}


@dataclass(frozen=True)
class GroqEstimatedPerformance:
    """Modelled speed of one call on the chips the build needed (GroqFlow's ``GroqEstimatedPerformance``).

    Compute only: GroqFlow adds an estimate of the PCIe transfers to and from the host; accelkit's catalog
    has no sourced host-link figure for the TSP, so that part is left out.
    """

    latency_s: float  # one call (the built batch), modelled
    throughput_ips: float  # inferences (samples) per second, modelled
    chips: int
    batch_size: int
    label = "modelled"
    latency_units = "seconds"  # GroqFlow's units, printed beside the numbers by its examples
    throughput_units = "inferences per second"

    @property
    def latency(self) -> float:
        """GroqFlow's name: seconds per call."""
        return self.latency_s

    @property
    def compute_latency(self) -> float:
        """GroqFlow's name for the chips' part of a call, in seconds: here all of ``latency`` (no PCIe part)."""
        return self.latency_s

    @property
    def throughput(self) -> float:
        """GroqFlow's name: inferences per second."""
        return self.throughput_ips

    def __str__(self) -> str:
        from accelkit.sim.report import fmt_s

        return (f"MODELLED on {self.chips} x tsp (not measured): latency {fmt_s(self.latency_s)} per call of "
                f"{self.batch_size} sample(s), throughput {fmt_sig(self.throughput_ips)} inferences/s "
                "(compute only, no PCIe transfers)")


@dataclass
class BuildInfo:
    """``gmodel.state.info``: what GroqFlow records about the tools it ran for a build. accelkit runs no Groq
    tool, so the commands name the tool and the flags the script gave, marked as not run; the measured figures
    stay None (there is no GroqChip to measure on), and the modelled ones are filled by ``estimate_performance``,
    ``benchmark`` and ``benchmark_abunch``."""

    compiler_command: str
    assembler_command: str
    measured_latency: float | None = None
    measured_throughput: float | None = None
    estimated_latency: float | None = None  # seconds per call, MODELLED
    estimated_throughput: float | None = None  # inferences per second, MODELLED


def build_info(state: Any) -> BuildInfo:
    config = getattr(state, "config", {}) or {}
    note = "(not run: accelkit's simulated build models the TSP instead)"
    compiler = " ".join(["groq-compiler", *map(str, config.get("compiler_flags") or []),
                         f"{state.build_name}.onnx", note])
    assembler = " ".join(["aa-latest", *map(str, config.get("assembler_flags") or []), f"{state.build_name}.aa", note])
    return BuildInfo(compiler_command=compiler, assembler_command=assembler)


class _ByName(nn.Module):
    """Calls the model with its inputs by keyword: GroqFlow binds a build's inputs by forward's argument names,
    so ``gmodel(input_ids=..., attention_mask=...)`` reaches GPT-2's ``attention_mask``, not the positional
    ``past_key_values`` between them. The session runs this module positionally, in the build's input order."""

    def __init__(self, model: nn.Module, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *values: Any) -> Any:
        return self.model(**dict(zip(self.names, values, strict=True)))


def _positional_prefix(model: nn.Module, names: tuple[str, ...]) -> bool:
    """True when ``names`` are forward's first positional parameters, in order (a positional call binds them)."""
    params = [n for n, p in inspect.signature(model.forward).parameters.items()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return tuple(params[:len(names)]) == names


def graph_outputs(out: Any) -> Any:
    """What GroqFlow's ``GroqModel`` hands back: the built graph's output tensors, one tensor where the graph has
    one output, else a tuple of them in order (groqflow/groqmodel/groqmodel.py, ``_unpack_results``). The build is
    an exported graph, so a Hugging Face ``ModelOutput``, a dict, a tuple or a list the model returns comes back as
    its tensors: ``(logits,)`` from a ``torchscript=True`` classifier is the logits tensor itself."""
    def flat(o: Any) -> list[torch.Tensor]:
        if isinstance(o, torch.Tensor):
            return [o]
        if hasattr(o, "to_tuple"):  # transformers' ModelOutput: its set fields, in order
            o = o.to_tuple()
        if isinstance(o, dict):
            o = tuple(o.values())
        if isinstance(o, (tuple, list)):
            return [t for x in o for t in flat(x)]
        return []  # None and plain values are not graph outputs

    tensors = flat(out)
    if not tensors:
        return out
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


class GroqModel:
    """A built model (GroqFlow's ``PytorchModelWrapper``): ``gmodel(**inputs)``, ``gmodel(*args)`` or
    ``gmodel.run(inputs)`` run real numerics in the build's precision; the clock is modelled."""

    def __init__(self, model: nn.Module, program: CompiledProgram, state: Any, built_inputs: dict[str, Any],
                 quantization: dict[str, list[float]] | None = None,
                 numerics: Callable[[], Any] | None = None) -> None:
        self.model = model
        self.quantization = quantization  # an int8 build's calibrated ranges, per layer (groqit's samples)
        self._numerics = numerics  # a context in which a call computes the build's numerics (an int8 build's grids)
        self.program = program
        self.state = state
        self._built = input_shapes(built_inputs)
        self._example = dict(built_inputs)
        self._names = tuple(built_inputs)
        runs = model if _positional_prefix(model, self._names) else _ByName(model, self._names)
        # the build times every call; an int8 build's layers round to their grids themselves, in fp32
        self.session = Session.from_program(runs, program, numerics="fp32" if quantization else None)
        if not hasattr(state, "info"):
            state.info = build_info(state)
        facade_log.register_run(repr(self), self.report)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        named = bind_inputs(self.model, args=args, kwargs=kwargs)
        got = input_shapes(named)
        if got != self._built:
            diff = [k for k in set(got) | set(self._built) if got.get(k) != self._built.get(k)]
            k = sorted(diff)[0]
            raise GroqFlowError(f"input {k!r} is {got.get(k)}, the build {self.state.build_name!r} is for "
                                f"{self._built.get(k)} (a TSP schedule is fixed for its shapes)",
                                fix="pad the inputs to the built shape, or groqit(model, new_inputs, "
                                    "build_name=...) for a build of the new shape")
        partials: Any = contextlib.nullcontext()
        if self._numerics is not None:
            partials = self._numerics()
        elif self.program.precision == "fp16":
            partials = FloatPartials()
        with facade_log.vendor_call(f"the GroqModel {self.state.build_name!r} called on its inputs"), partials:
            # by name: in the build's input order, whatever order the call gave them in
            return graph_outputs(self.session.run(*(named[k] for k in self._names)).outputs)  # forward, eval mode

    def run(self, inputs: dict[str, Any]) -> Any:
        """One inference on ``inputs`` (a dict keyed by forward's argument names)."""
        return self(**inputs)

    def run_abunch(self, input_collection: list[dict[str, Any]]) -> list[Any]:
        """One inference per dict in ``input_collection``."""
        return [self(**inputs) for inputs in input_collection]

    def estimate_performance(self) -> GroqEstimatedPerformance:
        """Latency and throughput of one call, modelled on the chips the build needed (not measured)."""
        rep = self.program.report
        perf = GroqEstimatedPerformance(latency_s=rep.step_time_s, throughput_ips=rep.throughput,
                                        chips=self.program.chips, batch_size=self.program.batch_size)
        info = getattr(self.state, "info", None)
        if isinstance(info, BuildInfo):
            info.estimated_latency, info.estimated_throughput = perf.latency_s, perf.throughput_ips
        return perf

    def benchmark_abunch(self, input_collection: list[dict[str, Any]], repetitions: int = 1) -> GroqEstimatedPerformance:
        """GroqFlow's ``benchmark_abunch(input_collection, repetitions=1)`` measures the calls on GroqChips. Here each
        input set runs once (real numerics, the shape check) and the MODELLED figures of one call come back (the
        TSP's schedule is fixed, so every call of the built shape takes the same time)."""
        if not isinstance(repetitions, int) or repetitions < 1:
            raise GroqFlowError(f"repetitions must be a whole number ≥ 1, got {repetitions!r}", fix="e.g. repetitions=1")
        if not input_collection:
            raise GroqFlowError("benchmark_abunch got no inputs", fix="pass a list of input dicts, e.g. [{'x': x}]")
        self.run_abunch(list(input_collection))
        return self.estimate_performance()

    def groqview(self) -> str:
        """GroqFlow opens GroqView, Groq's cycle-by-cycle view of the program on the chips (it needs
        ``groqit(groqview=True)``). accelkit has no GroqView file: it writes its own view of where the program's
        kernels sit and how long each takes (an HTML page of plotly figures) into the build folder, says where,
        and returns the path."""
        from accelkit.facades.groqflow.view import write_view

        path = write_view(self.program, self.state.path / "groqview.html", title=f"{self.state.build_name} on "
                          f"{self.program.chips} x tsp (MODELLED)")
        facade_log.accept("GroqFlow", "gmodel.groqview()", "opens GroqView, the cycle-by-cycle picture of the "
                          f"program on the chip; accelkit wrote its own placement view instead: {path}")
        print(f"GroqView is Groq's tool; accelkit wrote its own view of this build (MODELLED) to {path}")
        return str(path)

    def benchmark(self, inputs: dict[str, Any] | None = None, repetitions: int = 100) -> GroqEstimatedPerformance:
        """GroqFlow's ``GroqModel.benchmark(inputs=None, repetitions=100)`` runs the build ``repetitions`` times on
        GroqChips and reports the measured latency and throughput. There are no GroqChips here: this runs
        ``inputs`` (default: the build's example inputs) once, for real numerics and the shape check, and
        returns the MODELLED figures of one call (the TSP's schedule is fixed, so every repetition would take
        the same time; ``repetitions`` changes nothing and is only checked)."""
        if not isinstance(repetitions, int) or repetitions < 1:
            raise GroqFlowError(f"repetitions must be a whole number ≥ 1, got {repetitions!r}", fix="e.g. repetitions=100")
        self(**(inputs if inputs is not None else self._example))
        return self.estimate_performance()

    @property
    def simulated_time_s(self) -> float:
        """Modelled TSP time of every call so far."""
        return self.session.simulated_time_s

    def report(self) -> SessionReport:
        """Modelled totals of the calls so far (labelled MODELLED) and measured host time."""
        return self.session.report()

    def __repr__(self) -> str:
        return f"GroqModel({self.state.build_name!r}: {self.program.chips} x tsp, {self.program.precision})"
