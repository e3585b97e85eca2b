"""A learner's verdicts, recorded for the workshop room's instructor (off unless the room asks for it).

When ``$ACCELKIT_PROGRESS_FILE`` names a file (the workshop hub sets it for each attendee), every
``teach.check`` of an attempted answer appends one JSON line to it::

    {"exercise": "02.ridge_point", "passed": false, "time": "2026-11-26T09:12:03+00:00",
     "hint": "divide the peak FLOP/s by the bandwidth in bytes per second"}

The line holds the exercise, the verdict, the time and the hint the learner was shown: never the
answer, the code or the checked values. Unset, nothing is written and ``check`` behaves as before.
Recording never fails a check: a file that cannot be written is reported once as a warning.
Each record is one ``write`` on a file opened with ``O_APPEND``, so two kernels of one learner
appending at once never interleave their lines. :func:`read` skips lines it cannot parse.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

ENV = "ACCELKIT_PROGRESS_FILE"
MAX_HINT_CHARS = 300  # a hint is a sentence; a longer one is cut so a line stays one small write


@dataclass(frozen=True)
class Verdict:
    """One check of one exercise by one learner."""

    exercise: str   # "02.ridge_point"
    passed: bool
    time: str       # ISO 8601, UTC
    hint: str = ""  # the first hint the learner was shown ("" when it passed)


_warned: set[str] = set()


def target() -> Path | None:
    """The file verdicts go to, from ``$ACCELKIT_PROGRESS_FILE``; ``None`` when recording is off."""
    value = os.environ.get(ENV, "").strip()
    return Path(value).expanduser() if value else None


def record(exercise: str, passed: bool, hint: str = "", *, path: Path | None = None) -> bool:
    """Append one verdict to ``path`` (default: :func:`target`); True when written. Never raises."""
    path = path if path is not None else target()
    if path is None:
        return False
    verdict = Verdict(exercise, bool(passed), datetime.now(UTC).isoformat(timespec="seconds"),
                      " ".join(hint.split())[:MAX_HINT_CHARS])
    data = (json.dumps(asdict(verdict), ensure_ascii=False) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            os.write(fd, data)  # one write: O_APPEND places it whole at the end
        finally:
            os.close(fd)
        return True
    except OSError as exc:
        if str(path) not in _warned:
            _warned.add(str(path))
            warnings.warn(f"accelkit could not record this check for the instructor ({path}: "
                          f"{exc.strerror or exc}); your check itself is unaffected", stacklevel=3)
        return False


def read(path: Path) -> Iterator[Verdict]:
    """The verdicts in ``path``, oldest first; unreadable or malformed lines are skipped."""
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return
    for line in text.splitlines():
        try:
            row = json.loads(line)
            yield Verdict(str(row["exercise"]), bool(row["passed"]), str(row["time"]), str(row.get("hint", "")))
        except (ValueError, KeyError, TypeError):
            continue
