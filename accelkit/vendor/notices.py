"""What ``accelkit vendor-run --synthetic-data`` replaced in this run: each notice printed once, and the list of
them. Its own module so that the stand-ins (datasets, models, tokenizers) can say what they are without importing
one another."""

from __future__ import annotations

_said: list[str] = []


def say(text: str) -> None:
    """Print ``text`` once per run, on stdout (a notice, not an error)."""
    if text not in _said:
        _said.append(text)
        print(f"accelkit vendor-run: --synthetic-data: {text}")


def substitutions() -> list[str]:
    """What ``--synthetic-data`` replaced in this run, one line each."""
    return list(_said)


def reset() -> None:
    """Forget the notices (a new run says them again)."""
    _said.clear()
