"""Solutions to the notebook exercises, kept off the learner's page.

The notebooks never import this module; ``teach.check`` reads it only after ``teach.setup(solutions=True)``
(the ``solutions`` papermill parameter CI sets), for an answer still left as ``...``. Each solution takes the
same context as its checker and computes the answer the way a learner would, from the package's values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SOLUTIONS: dict[str, Callable[..., Any]] = {
    "01.linear_flops": lambda *, batch, in_features, out_features: 2 * batch * in_features * out_features,
    "01.hottest_op": lambda *, prof: prof.ops[0].op,
    "02.ridge_point": lambda *, target, precision, tier: _spec(target).peak(precision)
    / _spec(target).tier(tier).bandwidth_Bps,
    "02.weights_fit": lambda *, target, params, precision: params * (4 if precision == "fp32" else 2)
    <= _spec(target).on_chip_memory_bytes,
    "03.first_recipe": lambda *, report: next(f.recipe for f in report.findings if f.severity == "error"),
    "10.recompile": lambda: {change: change.split()[0] in ("batch", "sequence", "bf16", "1")
                             for change in _changes()},
    "09.three_families": lambda: ["a100", "sn40l", "tsp"],
}


def _spec(target: str) -> Any:
    from accelkit import hardware

    return hardware.get(target)


def _changes() -> list[str]:
    from accelkit.teach.checkers import CHANGES

    return list(CHANGES)


def solve(name: str, **context: Any) -> Any:
    """The shipped answer to exercise ``name`` for ``context``."""
    if name not in SOLUTIONS:
        from accelkit.teach.exercises import ExerciseFailed

        raise ExerciseFailed(f"exercise {name} has no shipped solution", fix="add one to accelkit/teach/solutions.py")
    return SOLUTIONS[name](**context)
