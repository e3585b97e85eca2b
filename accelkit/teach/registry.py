"""The exercises' values: an exercise, a checker's line, a check's result, and the registry the checkers fill.

Data only: :mod:`accelkit.teach.checkers` registers into it, :mod:`accelkit.teach.solutions` answers from it,
and :mod:`accelkit.teach.exercises` runs the checks; none of the three imports another one that imports it back.
"""

from __future__ import annotations

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


def exercise(name: str, title: str, task: str) -> Callable[[Checker], Checker]:
    """Register ``checker`` as exercise ``name`` (used by :mod:`accelkit.teach.checkers`)."""

    def register(checker: Checker) -> Checker:
        if name in EXERCISES:
            raise ValueError(f"exercise {name!r} is registered twice")
        EXERCISES[name] = Exercise(name, title, task, checker)
        return checker

    return register
