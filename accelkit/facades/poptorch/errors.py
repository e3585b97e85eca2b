"""PopTorch's exceptions (``poptorch.Error``, ``RecoverableError``, ``UnrecoverableError``) and the two names of
its C++ extension ``poptorch.poptorch_core`` that its user guide's error-handling example uses
(``TestErrorType``, ``_throwTestError``).

PopTorch turns every error of its stack into one of three Python exceptions: ``Error`` (a compile or usage error:
its ``type`` names the library, ``message`` and ``location`` say what and where), ``RecoverableError`` (a
runtime error the IPUs recover from after ``recovery_action``: ``"IPU_RESET"``, ``"PARTITION_RESET"``,
``"FULL_RESET"``) and ``UnrecoverableError`` (take the machine offline). ``_throwTestError`` raises the error
each ``TestErrorType`` stands for, with the type strings and messages PopTorch's own test hook gives them
(graphcore/poptorch, ``popart_compiler/source/Compiler.cpp``: ``throwTestError`` and
``rethrowPopartOrPoplarException``; ``python/poptorch.cpp``: the classes), so a script's error handling can be
rehearsed here. Nothing else of the C++ extension exists in the simulation: other names are refused, saying so.
"""

from __future__ import annotations

import enum
from typing import Any

from accelkit.facades.poptorch.options import PopTorchError


class Error(Exception):
    """PopTorch's error: ``type`` (the library that raised it), ``message`` and ``location``; ``str(e)`` is
    PopTorch's long form."""

    def __init__(self, message: str, type: str = "poptorch_error", location: str = "",  # noqa: A002 - PopTorch's
                 where: str = "poptorch/source/Error.cpp:0", recovery_action: str = "") -> None:
        long = f"In {where}: '{type}': {message}"
        if recovery_action:
            long += f"\nRecovery action required: {recovery_action}"
        if location:
            long += f"\nError raised in:\n{location}"
        super().__init__(long)
        self.message = message
        self.type = type
        self.location = location


class RecoverableError(Error):
    """A runtime error the IPUs recover from after ``recovery_action`` (``"IPU_RESET"``, ``"PARTITION_RESET"``,
    ``"FULL_RESET"``)."""

    def __init__(self, message: str, type: str = "poplar_recoverable_runtime_error",  # noqa: A002
                 location: str = "", where: str = "poptorch/source/Error.cpp:0",
                 recovery_action: str = "FULL_RESET") -> None:
        super().__init__(message, type, location, where, recovery_action)
        self.recovery_action = recovery_action


class UnrecoverableError(Error):
    """A runtime error after which the machine must be taken offline."""


class TestErrorType(enum.IntEnum):
    """The errors PopTorch's test hook raises (``poptorch.poptorch_core.TestErrorType``)."""

    __test__ = False  # not a pytest test class

    Poptorch = 0
    Popart = 1
    PopartInternal = 2
    Poplibs = 3
    PoplarUnrecoverable = 4
    PoplarUnknown = 5
    PoplarRecoverableFullReset = 6
    PoplarLinkError = 7


_WHERE = "popart_compiler/source/Compiler.cpp:1795"
_LOCATION = "throwTestError::topLevel\n throwTestError::bottomLevel"
# (exception class, PopTorch's type string, message) per TestErrorType, as PopTorch's throwTestError raises them and
# its exception handler files them
_TEST_ERRORS: dict[TestErrorType, tuple[type[Error], str, str]] = {
    TestErrorType.Poptorch: (Error, "poptorch_cpp_error", "This is a PopTorch error"),
    TestErrorType.Popart: (Error, "popart_exception", "This is a Popart error"),
    TestErrorType.PopartInternal: (Error, "popart_internal_exception", "This is a Popart error"),
    TestErrorType.Poplibs: (Error, "poplibs_exception", "This is a Poplibs error"),
    TestErrorType.PoplarUnrecoverable: (UnrecoverableError, "poplar_unrecoverable_runtime_error",
                                        "This is not recoverable"),
    TestErrorType.PoplarUnknown: (Error, "poplar_unknown_runtime_error", "Don't know what happened"),
    TestErrorType.PoplarRecoverableFullReset: (RecoverableError, "poplar_recoverable_runtime_error", "Reboot needed"),
    TestErrorType.PoplarLinkError: (Error, "poplar_link_error",
                                    "Link error. Output: Library -lfoo not found\ncheck path"),
}


def _throwTestError(error: TestErrorType | int) -> None:  # noqa: N802 - PopTorch's name
    """Raise the error ``error`` (a :class:`TestErrorType`) stands for, as PopTorch's test hook does."""
    try:
        kind = TestErrorType(int(error))
    except ValueError:
        raise Error("Unknown TestErrorType", "poptorch_cpp_error", _LOCATION, _WHERE) from None
    cls, type_, message = _TEST_ERRORS[kind]
    if cls is RecoverableError:
        raise RecoverableError(message, type_, _LOCATION, _WHERE, recovery_action="FULL_RESET")
    raise cls(message, type_, _LOCATION, _WHERE)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise PopTorchError(
        f"poptorch.poptorch_core.{name} is part of PopTorch's C++ extension, which the simulated PopTorch does not "
        "have: it has only TestErrorType and _throwTestError (the user guide's error-handling example) and the "
        "exceptions poptorch.Error, RecoverableError and UnrecoverableError",
        fix="use PopTorch's public API (poptorch.trainingModel, poptorch.Options, ...) instead of its internals")


__all__ = ["Error", "RecoverableError", "TestErrorType", "UnrecoverableError", "_throwTestError"]
