"""Small helpers that turn computed numbers into sentences for a notebook's takeaways.

A takeaway that quotes numbers computes them from the outputs beside it; these keep its wording right whatever
the numbers come out as: a list of names in any length, a gap that rounds to nothing, a share that is tiny.
"""

from __future__ import annotations

from collections.abc import Iterable


def and_list(items: Iterable[object], *, conj: str = "and") -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``: names joined as a sentence lists them ("" for none)."""
    words = [str(i) for i in items]
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {conj} {words[-1]}"


def gap_text(ratio: float) -> str:
    """How far apart two numbers are, from their ratio (>= 1 or <= 1, either way round): ``"within 12%"``;
    a gap under 1% reads ``"within 1%"`` (never ``"within 0%"``), and none at all ``"the same"``."""
    if ratio <= 0:
        raise ValueError(f"a ratio of two positive numbers, not {ratio}")
    gap = max(ratio, 1 / ratio) - 1
    if gap == 0:
        return "the same"
    if gap < 0.01:
        return "within 1%"
    return f"within {gap:.0%}"


def times_text(ratio: float) -> str:
    """A ratio as a reader says it: ``"3.4x"``, ``"12x"``; one that rounds to 1 reads ``"about the same"``."""
    if round(ratio, 1) == 1.0:
        return "about the same"
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"


def ordinal(n: int) -> str:
    """``"second"`` for 2, up to ``"tenth"``; ``"11th"``, ``"22nd"`` beyond."""
    words = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
    if 1 <= n <= len(words):
        return words[n - 1]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


__all__ = ["and_list", "gap_text", "ordinal", "times_text"]
