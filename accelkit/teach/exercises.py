"""The exercise facility: a registry of exercises, ``check`` and its result.

Each exercise has a name ``"NN.short_name"`` (NN: the notebook that asks it), a task the learner reads,
and a checker: a function ``(answer, **context) -> list[Line]`` that compares the answer with the value
accelkit itself computes for the same context, and for each known wrong answer says what is wrong and how
to get it right. The checkers live in :mod:`accelkit.teach.checkers`, their solutions in
:mod:`accelkit.teach.solutions`.
"""

from __future__ import annotations

from typing import Any

from accelkit.teach.registry import (  # noqa: F401 - the values, re-exported where they always were
    EXERCISES,
    FAILED,
    NOT_DONE,
    PASSED,
    Checker,
    CheckResult,
    Exercise,
    ExerciseFailed,
    Line,
    SolutionsHidden,
    exercise,
)

_state = {"solutions": False}


def _load() -> dict[str, Exercise]:
    from accelkit.teach import checkers  # noqa: F401 - registers every exercise on first use

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
