"""GroqFlow's build stages and sequences, for ``groqit(..., sequence=...)`` (GroqFlow's power-user example
``examples/sequence.py``: the default stages with the fp16 conversion left out).

GroqFlow builds a PyTorch model through a :class:`Sequence` of stages: ``onnxflow.justbuildit.export``'s
``ExportPytorchModel``, ``OptimizeOnnxModel``, ``ConvertOnnxToFp16``, ``groqflow.justgroqit.export``'s
``CheckOnnxCompatibility``, then ``groqflow.justgroqit.compile``'s ``CompileOnnx`` and ``Assemble``
(github.com/groq/groqflow, groqflow/justgroqit/ignition.py: ``default_pytorch_sequence``). accelkit has no
ONNX step: its build is capture -> precision -> compile for the TSP. A sequence made of these stages is read
for what changes the computation -- with ``ConvertOnnxToFp16`` the build is fp16 (GroqFlow's default),
without it fp32 -- and the other stages are recorded. A stage accelkit does not know, or a sequence without
``CompileOnnx``/``Assemble`` (GroqFlow then stops before a runnable program), is refused naming it.

The launcher answers ``onnxflow.justbuildit.stage``, ``onnxflow.justbuildit.export``,
``groqflow.justgroqit.export`` and ``groqflow.justgroqit.compile`` with this module.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence as _Seq
from typing import Any

from accelkit.facades.groqflow.model import GroqFlowError


class Stage:
    """One GroqFlow build stage (``onnxflow.justbuildit.stage.Stage(unique_name, monitor_message)``)."""

    #: what the stage does in GroqFlow, and what accelkit does for it
    does = ""

    def __init__(self, unique_name: str | None = None, monitor_message: str | None = None) -> None:
        self.unique_name = unique_name or type(self).__name__
        self.monitor_message = monitor_message or self.does

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ExportPytorchModel(Stage):
    does = "export the PyTorch model to ONNX (accelkit captures it with torch.fx instead)"


class OptimizeOnnxModel(Stage):
    does = "ONNX Runtime's graph optimisations (accelkit's compiler fuses instead)"


class ConvertOnnxToFp16(Stage):
    does = "convert the ONNX model to fp16 (accelkit: the build's precision is fp16)"


class CheckOnnxCompatibility(Stage):
    does = "check every ONNX op is supported by Groq's compiler (accelkit: the TSP's porting support table)"


class CompileOnnx(Stage):
    does = "Groq's compiler: the static schedule (accelkit: compile for the TSP)"


class Assemble(Stage):
    does = "Groq's assembler: the program file (accelkit: the build cache's artifact)"


class Sequence(Stage):
    """``Sequence(unique_name, monitor_message, stages, enable_model_validation=False)``: stages run in order;
    a sequence may hold sequences (GroqFlow's default nests an export sequence)."""

    def __init__(self, unique_name: str, monitor_message: str, stages: _Seq[Stage],
                 enable_model_validation: bool = False) -> None:
        super().__init__(unique_name, monitor_message)
        self.stages = list(stages)
        self.enable_model_validation = enable_model_validation

    def flat(self) -> Iterator[Stage]:
        for s in self.stages:
            yield from (s.flat() if isinstance(s, Sequence) else (s,))

    def __repr__(self) -> str:
        return f"Sequence({self.unique_name!r}, [{', '.join(map(repr, self.stages))}])"


KNOWN = (ExportPytorchModel, OptimizeOnnxModel, ConvertOnnxToFp16, CheckOnnxCompatibility, CompileOnnx, Assemble)


def read_sequence(sequence: Any) -> tuple[str, list[str]]:
    """The precision a GroqFlow build ``sequence`` asks for, and the names of its stages (refuses what
    accelkit cannot follow, naming it)."""
    if not isinstance(sequence, Sequence):
        raise GroqFlowError(f"groqit(sequence={sequence!r}): a build sequence is a Sequence of GroqFlow stages",
                            fix="build it as onnxflow.justbuildit.stage.Sequence(name, message, [stages...])")
    stages = list(sequence.flat())
    names = [type(s).__name__ for s in stages]
    for s in stages:
        if type(s) not in KNOWN:
            raise GroqFlowError(f"groqit(sequence=...): stage {type(s).__name__} is not one accelkit can follow "
                                f"(it knows {', '.join(k.__name__ for k in KNOWN)})",
                                fix=f"drop {type(s).__name__} from the sequence, or drop sequence= for the default")
    missing = [k.__name__ for k in (CompileOnnx, Assemble) if k.__name__ not in names]
    if missing:
        raise GroqFlowError(f"groqit(sequence={sequence.unique_name!r}) has no {' or '.join(missing)}: GroqFlow would "
                            "stop before a runnable program, and a GroqModel needs one",
                            fix="end the sequence with compile.CompileOnnx(), compile.Assemble()")
    return ("fp16" if "ConvertOnnxToFp16" in names else "fp32"), names


__all__ = ["Assemble", "CheckOnnxCompatibility", "CompileOnnx", "ConvertOnnxToFp16", "ExportPytorchModel",
           "OptimizeOnnxModel", "Sequence", "Stage", "read_sequence"]
