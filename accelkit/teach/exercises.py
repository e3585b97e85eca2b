"""The exercise facility: a registry of exercises, ``check`` and its result.

Each exercise has a name ``"NN.short_name"`` (NN: the notebook that asks it), a task the learner reads,
and a checker: a function ``(answer, **context) -> list[Line]`` that compares the answer with the value
accelkit itself computes for the same context, and for each known wrong answer says what is wrong and how
to get it right. The checkers live in :mod:`accelkit.teach.checkers`, their solutions in
:mod:`accelkit.teach.solutions`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from accelkit.errors import AccelkitError

NOT_DONE, PASSED, FAILED = "not done yet", "passed", "failed"


class ExerciseFailed(AccelkitError, AssertionError):
    """A checker did not pass while solutions are applied: the solution or the checker is wrong."""


class SolutionsHidden(AccelkitError, PermissionError):
    """The solutions were asked for where a workshop room hides them (until its instructor releases them)."""


@dataclass(frozen=True)
class Line:
    """One criterion of a check: whether it holds, what was checked, and a hint when it does not."""

    ok: bool
    text: str
    hint: str = ""

    def __str__(self) -> str:
        mark = "PASS" if self.ok else "FAIL"
        return f"[{mark}] {self.text}" + (f"\n       hint: {self.hint}" if self.hint and not self.ok else "")


Checker = Callable[..., list[Line]]


@dataclass(frozen=True)
class Exercise:
    name: str        # "02.ridge_point": notebook 02, exercise ridge_point
    title: str
    task: str        # what the learner is asked, as the notebook states it
    checker: Checker = field(repr=False)

    @property
    def notebook(self) -> str:
        return self.name.split(".", 1)[0]


@dataclass
class CheckResult:
    """What ``check`` found: ``status`` is "not done yet", "passed" or "failed"; ``lines`` the criteria."""

    exercise: Exercise
    status: str
    lines: list[Line]
    from_solution: bool = False
    context: str = ""  # the context it was checked for, e.g. "target='a100', precision='bf16'"
    answer: Any = field(default=..., repr=False)

    def answer_or(self, default: Any) -> Any:
        """The checked answer when it passed, else ``default`` (so a notebook runs on before it is done)."""
        if self.passed:
            return self.answer
        print(f"(using {default!r} until exercise {self.exercise.name} passes)")
        return default

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        head = f"Exercise {self.exercise.name} ({self.exercise.title})"
        if self.status == NOT_DONE:
            given = f" Here: {self.context}." if self.context else ""
            return (f"{head}: not done yet. {self.exercise.task}{given}\n"
                    "Replace the `...` in the cell above with your answer and run both cells again.")
        body = "\n".join(str(line) for line in self.lines)
        tail = ("Solved" + (" (with the shipped solution)." if self.from_solution else ".")
                if self.passed else "Not yet: fix the FAIL lines above and run both cells again.")
        return f"{head}\n{body}\n{tail}"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


EXERCISES: dict[str, Exercise] = {}
_state = {"solutions": False}


def exercise(name: str, title: str, task: str) -> Callable[[Checker], Checker]:
    """Register ``checker`` as exercise ``name`` (used by :mod:`accelkit.teach.checkers`)."""

    def register(checker: Checker) -> Checker:
        if name in EXERCISES:
            raise ValueError(f"exercise {name!r} is registered twice")
        EXERCISES[name] = Exercise(name, title, task, checker)
        return checker

    return register


def _load() -> dict[str, Exercise]:
    importlib.import_module("accelkit.teach.checkers")  # registers every exercise on first use
    return EXERCISES


def setup(*, solutions: bool = False) -> None:
    """Run the notebook as shipped (``solutions=False``) or with every unanswered exercise solved from
    :mod:`accelkit.teach.solutions`, in which case a check that does not pass raises ExerciseFailed."""
    if solutions and not solutions_readable():
        raise SolutionsHidden("the solutions are not released yet in this room",
                              fix="try the exercises first; the instructor releases the solutions later")
    _state["solutions"] = bool(solutions)


def solutions_readable() -> bool:
    """Whether this user may read the shipped solutions (a workshop room hides them until it releases them)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("accelkit.teach.solutions")
    return spec is not None and spec.origin is not None and os.access(spec.origin, os.R_OK)


def solutions_enabled() -> bool:
    return _state["solutions"]


def exercises_for(notebook: str) -> list[Exercise]:
    """The exercises notebook ``notebook`` ("02" or "02_understand_the_hardware") asks, in order."""
    prefix = notebook[:2] + "."
    return [e for n, e in sorted(_load().items()) if n.startswith(prefix)]


def get(name: str) -> Exercise:
    known = _load()
    if name not in known:
        from accelkit.errors import UnknownNameError

        raise UnknownNameError(f"no exercise {name!r}", fix=f"use one of: {', '.join(sorted(known))}")
    return known[name]


def check(name: str, answer: Any = ..., /, *, quiet: bool = False, **context: Any) -> CheckResult:
    """Check ``answer`` to exercise ``name``; ``context`` is what the exercise is about (a target, a model).

    ``...`` means not attempted: "not done yet", nothing fails, unless solutions are enabled, in which case
    the shipped solution is checked instead and must pass. Prints the result unless ``quiet``.
    """
    ex = get(name)
    given = ", ".join(f"{k}={v!r}" for k, v in context.items() if isinstance(v, (str, int, float)))
    from_solution = False
    if answer is ... and solutions_enabled():
        from accelkit.teach import solutions

        answer, from_solution = solutions.solve(name, **context), True
    if answer is ...:
        result = CheckResult(ex, NOT_DONE, [], context=given, answer=answer)
    else:
        try:
            lines = ex.checker(answer, **context)
        except Exception as exc:  # the learner's code raised inside the checker: say so, do not crash
            lines = [Line(False, f"checking your answer raised {type(exc).__name__}: {exc}",
                          "run your answer on its own first and read the error")]
        result = CheckResult(ex, PASSED if all(line.ok for line in lines) else FAILED, lines, from_solution, given,
                             answer)
    if result.status != NOT_DONE and not from_solution:  # the instructor's view of the room (off by default)
        from accelkit.teach import progress

        progress.record(name, result.passed, next((line.hint for line in result.lines if not line.ok), ""))
    if not quiet:
        print(result)
    if solutions_enabled() and not result.passed:
        raise ExerciseFailed(f"exercise {name} {result.status} with solutions applied:\n{result}",
                             fix="fix the solution in accelkit/teach/solutions.py or the checker")
    return result
