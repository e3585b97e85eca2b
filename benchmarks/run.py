"""Run every benchmarks/bench_*.py, print one table, write test-artifacts/bench.json.

    python benchmarks/run.py              # all benchmarks (what `make bench` runs)
    python benchmarks/run.py capture      # only modules whose name contains "capture"

Each module exposes ``run() -> list[dict]``; a row has ``name``, ``value`` (a number), ``unit``,
optionally ``goal`` (text such as "<= 2 s") and ``ok`` (True/False when checked against the goal,
None when there is nothing to check). A missed goal is reported, not fatal: the exit status is
non-zero only when a benchmark raises or returns malformed rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR.parent / "test-artifacts" / "bench.json"  # test-artifacts/ is gitignored
REQUIRED = ("name", "value", "unit")
OPTIONAL = ("goal", "ok")


@dataclass
class Outcome:
    module: str
    seconds: float
    rows: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def discover(directory: Path | None = None, only: list[str] | None = None) -> list[Path]:
    paths = sorted((directory or BENCH_DIR).glob("bench_*.py"))
    return [p for p in paths if not only or any(word in p.stem.removeprefix("bench_") for word in only)]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"benchmarks.{path.stem}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_rows(rows: Any) -> list[dict[str, Any]]:
    if not isinstance(rows, list):
        raise TypeError(f"run() must return a list of dicts, got {type(rows).__name__}")
    for row in rows:
        if not isinstance(row, dict):
            raise TypeError(f"row {row!r} is not a dict")
        missing = [k for k in REQUIRED if k not in row]
        extra = sorted(set(row) - set(REQUIRED) - set(OPTIONAL))
        if missing or extra:
            raise ValueError(f"row {row!r}: missing keys {missing}, unknown keys {extra}")
        if isinstance(row["value"], bool) or not isinstance(row["value"], int | float):
            raise TypeError(f"row {row['name']!r}: value must be a number, got {row['value']!r}")
        if row.get("ok") not in (True, False, None):
            raise ValueError(f"row {row['name']!r}: ok must be True, False or None, got {row['ok']!r}")
    return [{"name": row["name"], "value": row["value"], "unit": row["unit"],
             "goal": row.get("goal"), "ok": row.get("ok")} for row in rows]


def run_one(path: Path) -> Outcome:
    start = time.perf_counter()
    try:
        rows = _check_rows(_load(path).run())
        return Outcome(path.stem, time.perf_counter() - start, rows)
    except Exception:
        return Outcome(path.stem, time.perf_counter() - start, error=traceback.format_exc())


def format_table(outcomes: list[Outcome]) -> str:
    header = ("benchmark", "name", "value", "unit", "goal", "ok")
    lines: list[tuple[str, ...]] = [header]
    for o in outcomes:
        if o.error is not None:
            lines.append((o.module, f"ERROR {o.error.strip().splitlines()[-1][:70]}", "", "", "", "✗"))
        for row in o.rows:
            value = row["value"]
            shown = f"{value:.4g}" if isinstance(value, float) else str(value)
            ok = {True: "✓", False: "✗", None: "-"}[row["ok"]]
            lines.append((o.module, str(row["name"]), shown, str(row["unit"]), str(row["goal"] or ""), ok))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]

    def fmt(line: tuple[str, ...]) -> str:
        cells = [c.rjust(w) if i == 2 else c.ljust(w)  # values line up on the right
                 for i, (c, w) in enumerate(zip(line, widths, strict=True))]
        return "  ".join(cells).rstrip()

    return "\n".join(fmt(line) for line in lines)


def write_results(outcomes: list[Outcome], path: Path = RESULTS) -> None:
    import torch  # recorded so figures from different machines and versions are not mixed up

    path.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": {"machine": platform.machine(), "processor": platform.processor(),
                 "python": platform.python_version(), "torch": torch.__version__,
                 "threads": torch.get_num_threads()},
        "benchmarks": [asdict(o) for o in outcomes],
    }
    path.write_text(json.dumps(report, indent=1, default=str) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="run only modules whose name contains one of these words")
    args = parser.parse_args(argv)

    paths = discover(only=args.only)
    if not paths:
        print(f"no benchmarks/bench_*.py modules{' match ' + str(args.only) if args.only else ''}")
        return 0
    outcomes = []
    for path in paths:
        print(f"running {path.stem} ...", flush=True)
        outcomes.append(run_one(path))
    print()
    print(format_table(outcomes))
    for o in outcomes:
        if o.error is not None:
            print(f"\n{o.module} failed:\n{o.error}", file=sys.stderr)
    missed = sum(row["ok"] is False for o in outcomes for row in o.rows)
    write_results(outcomes, RESULTS)
    total = sum(o.seconds for o in outcomes)
    print(f"\n{len(outcomes)} benchmark module(s) in {total:.1f} s; {missed} goal(s) missed; "
          f"results in {RESULTS.relative_to(BENCH_DIR.parent)}")
    return 1 if any(o.error is not None for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
