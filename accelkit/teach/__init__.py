"""Exercises with checkers, for the workshop notebooks.

A notebook exercise is two cells: the learner's answer, left as ``...`` (a TODO), and a check::

    answer = ...  # TODO: the ridge point of sn40l in bf16, in FLOP per byte
    teach.check("02.ridge_point", answer, target="sn40l", precision="bf16")

``check`` prints one line per criterion, each FAIL line with a hint, and returns a :class:`CheckResult`.
An answer still ``...`` is reported as "not done yet" and nothing fails, so a notebook runs as shipped.
The solutions live in :mod:`accelkit.teach.solutions`, off the learner's page: ``teach.setup(solutions=True)``
(a papermill parameter in every notebook) fills each unanswered exercise from there, and then a check that
does not pass raises :class:`ExerciseFailed`, so CI proves every checker passes on its own solution.
"""

from __future__ import annotations

from accelkit.teach.exercises import (
    EXERCISES,
    CheckResult,
    Exercise,
    ExerciseFailed,
    Line,
    check,
    exercises_for,
    setup,
    solutions_enabled,
)

__all__ = ["EXERCISES", "CheckResult", "Exercise", "ExerciseFailed", "Line", "check", "exercises_for",
           "setup", "solutions_enabled"]
