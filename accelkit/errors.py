"""Every error accelkit raises on purpose derives from :class:`AccelkitError`.

An accelkit error says three things a learner needs: what went wrong, where (the module,
the op, the user's ``file:line`` when PyTorch recorded one), and how to fix it.
"""

from __future__ import annotations

import os


def notebook_cell(path: str | None) -> str | None:
    """The execution number of the notebook cell IPython compiled into ``path`` (``/tmp/ipykernel_1/123.py``
    under Jupyter, ``<ipython-input-4-...>`` in a terminal IPython), or ``None`` outside IPython."""
    if path is None:
        return None
    try:
        from IPython import get_ipython
    except ImportError:  # IPython is optional outside notebooks
        return None
    shell = get_ipython()
    try:
        label = shell.compile.format_code_name(path) if shell is not None else None
    except (AttributeError, TypeError):
        label = None
    return label[1].removeprefix("In[").removesuffix("]") if label else None


def source_label(path: str | None, line: int | str | None) -> str:
    """Where a line of the user's code is, as the user knows it: ``model.py:12``, or ``cell [4], line 3``
    for code typed in a notebook (IPython compiles each cell into a temporary file whose name means nothing
    to a reader; its compiler remembers which cell a file holds)."""
    number = notebook_cell(path)
    if number is not None:
        return f"cell [{number}], line {line}"
    return f"{os.path.basename(path or '?')}:{line}"


class AccelkitError(Exception):
    """Base class of accelkit's errors: a message with a cause, a location and a fix.

    ``where`` and ``fix`` are kept as attributes too, so notebooks and tests can read them.
    """

    def __init__(self, message: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.message = message
        self.where = where
        self.fix = fix
        text = message
        if where:
            text += f"\n  where: {where}"
        if fix:
            text += f"\n  fix:   {fix}"
        super().__init__(text)


class CompileError(AccelkitError, ValueError):
    """A compile request that cannot be honoured: the message names the argument and the fix."""


class UnknownNameError(AccelkitError, KeyError):
    """A name (target, system, model) that accelkit does not know; the message lists the known ones."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return Exception.__str__(self)


class SpecError(AccelkitError, ValueError):
    """A hardware spec file that cannot be read: names the file, the field and the expected unit."""


class CaptureError(AccelkitError):
    """A model that cannot be captured as a graph: names the module, the op and the user's line.

    Attributes ``module``, ``op`` and ``source`` hold those parts (``None`` where unknown),
    and ``kind`` classifies the cause (``data-dependent-control-flow``, ``host-sync``,
    ``non-tensor-output``, ``dynamic-shape``, ``unsupported``).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        module: str | None = None,
        op: str | None = None,
        source: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.kind = kind
        self.module = module
        self.op = op
        self.source = source
        parts = [p for p in (f"module {module}" if module else None,
                             f"op {op}" if op else None, source) if p]
        super().__init__(message, where=", ".join(parts) or None, fix=fix)


class PrecisionError(AccelkitError, ValueError):
    """A precision (bf16, fp8, ...) the chip has no peak figure for; the message lists the ones it has."""


class PortError(AccelkitError):
    """A rewrite ``ak.port`` refuses: it would change results beyond its tolerance, or cannot apply.

    ``recipe`` names the rewrite; ``error`` is the measured max absolute difference (``None``
    when the rewrite could not run) and ``tolerance`` the bound it had to meet.
    """

    def __init__(self, message: str, *, recipe: str, error: float | None = None, tolerance: str | None = None,
                 where: str | None = None, fix: str | None = None) -> None:
        self.recipe = recipe
        self.error = error
        self.tolerance = tolerance
        super().__init__(message, where=where, fix=fix)


class ArgumentError(AccelkitError, TypeError, ValueError):
    """An argument of the wrong type or out of range: names the argument, what it got and what it takes.

    A ``TypeError`` and a ``ValueError`` both, as Python's own functions raise one or the other for these.
    """


class ModelError(AccelkitError):
    """The user's model failed on its own (its forward or backward raised, or it holds no real weights):
    names the model, what it raised, the user's ``file:line`` and the inputs it was given."""
