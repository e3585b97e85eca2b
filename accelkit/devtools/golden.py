"""Compare an executed notebook's golden cells with the outputs committed in the notebook, as nbval does.

nbval (``pytest --nbval-lax notebook.ipynb``) runs a notebook in a kernel of its own and compares each golden cell
(:func:`accelkit.devtools.nbclean.is_golden`) with its committed outputs. This module applies the same comparison
to a run made elsewhere, e.g. by papermill, so that one run of a notebook can serve both its golden cells and the
other checks that read it (``make test`` runs each notebook once, not once per check). The rules are nbval's:
streams of one name joined, ``\\r`` and backspace applied; the sanitizers of a nbval sanitize file applied to both
sides; metadata, tracebacks, execution counts, widget ids and PNG/JPEG images not compared; within a MIME type,
the outputs compared in order.

Cells are matched by position among the code cells, skipping the cell papermill injects with the parameters
(tag ``injected-parameters``); a cell whose source differs between the two notebooks is reported, not compared.

    python -m accelkit.devtools.golden notebooks/04_compile.ipynb /tmp/04-run.ipynb --sanitize tests/nbval_sanitize.cfg
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import nbformat

from accelkit.devtools.nbclean import is_golden

INJECTED_TAG = "injected-parameters"  # papermill's cell with the parameters it was given
# nbval's IPyNbFile.skip_compare (without --nbdime): keys and MIME types whose values are never compared
SKIP_COMPARE = frozenset({"metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
                          "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"})


def sanitize_patterns(path: Path | None) -> list[tuple[str, str]]:
    """The (regex, replacement) pairs of a nbval sanitize file (``regex:`` and ``replace:`` lines)."""
    if path is None:
        return []
    from nbval.plugin import get_sanitize_patterns

    return list(get_sanitize_patterns(Path(path).read_text()))


def _flatten(outputs: list[Any], patterns: list[tuple[str, str]]) -> dict[str, list[Any]]:
    """nbval's view of a cell's outputs: each compared key (MIME types flattened) -> its values, in order."""
    from nbval.plugin import coalesce_streams, transform_streams_for_comparison

    def sanitize(value: Any) -> Any:
        if isinstance(value, str):
            for regex, replace in patterns:
                value = re.sub(regex, replace, value)
        return value

    flat: dict[str, list[Any]] = defaultdict(list)
    for out in transform_streams_for_comparison(coalesce_streams([nbformat.from_dict(o) for o in outputs])):
        for key, value in out.items():
            if key in SKIP_COMPARE:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in SKIP_COMPARE:
                        flat[mime].append(sanitize(data))
            else:
                flat[key].append(sanitize(value))
    return flat


def _source(cell: Any) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _excerpt(cell: Any) -> str:
    lines = [ln for ln in _source(cell).splitlines() if ln.strip() and "NBVAL_CHECK_OUTPUT" not in ln]
    return (lines[0][:60] if lines else "").strip()


def _diff(key: str, want: list[Any], got: list[Any]) -> str:
    import difflib

    if len(want) == 1 and len(got) == 1 and isinstance(want[0], str) and isinstance(got[0], str):
        lines = difflib.unified_diff(want[0].splitlines(), got[0].splitlines(), "committed", "this run",
                                     lineterm="", n=1)
        return f"{key} differs:\n" + "\n".join(list(lines)[:40])
    return f"{key} differs: committed {want!r:.400} / this run {got!r:.400}"


def mismatches(shipped: Any, executed: Any, patterns: list[tuple[str, str]] | None = None) -> list[str]:
    """Every golden cell of ``shipped`` whose outputs ``executed`` does not reproduce; [] when all agree.

    ``shipped`` is the committed notebook (its golden outputs are the reference), ``executed`` a run of it;
    both are nbformat notebooks or paths."""
    nbs = [nbformat.read(str(nb), as_version=4) if isinstance(nb, str | Path) else nb for nb in (shipped, executed)]
    ref_cells = [c for c in nbs[0].cells if c.cell_type == "code"]
    run_cells = [c for c in nbs[1].cells
                 if c.cell_type == "code" and INJECTED_TAG not in c.get("metadata", {}).get("tags", [])]
    if len(ref_cells) != len(run_cells):
        return [f"the run has {len(run_cells)} code cells, the notebook {len(ref_cells)}: "
                "was the run made from another version of the notebook?"]
    found = []
    for i, (ref, run) in enumerate(zip(ref_cells, run_cells, strict=True)):
        if not is_golden(ref):
            continue
        where = f"code cell {i} ({_excerpt(ref)})"
        if _source(ref) != _source(run):
            found.append(f"{where}: its source differs in the run; compare a run of this very notebook")
            continue
        want, got = _flatten(ref.outputs, patterns or []), _flatten(run.get("outputs", []), patterns or [])
        if set(want) != set(got):
            found.append(f"{where}: outputs of kinds {sorted(got)} where the notebook has {sorted(want)}")
            continue
        for key in want:
            if want[key] != got[key]:
                found.append(f"{where}: {_diff(key, want[key], got[key])}")
                break
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accelkit.devtools.golden", description=__doc__.split("\n")[0])
    parser.add_argument("notebook", type=Path, help="the committed notebook (its golden outputs are the reference)")
    parser.add_argument("run", type=Path, help="an executed copy of it (papermill's output, say)")
    parser.add_argument("--sanitize", type=Path, default=None, help="a nbval sanitize file")
    args = parser.parse_args(argv)
    found = mismatches(args.notebook, args.run, sanitize_patterns(args.sanitize))
    for line in found:
        print(line)
    print(f"{len(found)} golden cell(s) differ" if found else "every golden cell agrees")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
