"""Keep committed notebooks small, diffable and stable under nbval.

A notebook is *clean* when:

- every code cell has ``execution_count`` null and no outputs, except *golden cells*;
- a golden cell is one nbval checks under ``--nbval-lax``: a comment line ``# NBVAL_CHECK_OUTPUT``
  (by convention the first line) or the cell tag ``nbval-check-output``. A golden cell keeps its
  outputs, each with no ``execution_count`` and ``metadata`` of at most ``{}``, and records
  ``execution_count`` 1: nbval refuses a cell that has outputs but no execution count
  ("Unrun reference cell has outputs"), so a fixed 1 marks it as run without churning diffs;
- cell metadata holds at most ``tags`` (no ``execution``, ``papermill``, ``collapsed``, ``scrolled``...);
- notebook metadata holds only ``kernelspec`` (the ``python3`` kernel the tests use) and
  ``language_info`` reduced to ``{"name": "python"}``;
- exactly one code cell is tagged ``parameters``, so papermill can override its values.

Usage::

    python -m accelkit.devtools.nbclean notebooks/                # rewrite in place, say what changed
    python -m accelkit.devtools.nbclean --check notebooks/        # exit 1 listing every problem
    python -m accelkit.devtools.nbclean --execute notebooks/03_x.ipynb   # re-run, then clean

Arguments are notebook files or directories (every ``*.ipynb`` directly inside). Cell numbers in
messages are indices into ``nb.cells``, counting from 0 and including markdown cells.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

GOLDEN_MARKER = "NBVAL_CHECK_OUTPUT"
GOLDEN_TAG = "nbval-check-output"
GOLDEN_EXECUTION_COUNT = 1
PARAMETERS_TAG = "parameters"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"name": "python"}

FIX_CLEAN = "run `make clean-notebooks`"
FIX_PARAMETERS = "give the code cell holding the notebook's knobs the tag `parameters` (JupyterLab: Property Inspector)"
FIX_EXECUTE = "regenerate with `python -m accelkit.devtools.nbclean --execute FILE`"


@dataclass(frozen=True)
class Problem:
    """One way a notebook is not clean. `cell` is an index into nb.cells, None for the whole notebook."""

    cell: int | None
    what: str
    fix: str = FIX_CLEAN
    excerpt: str = ""

    @property
    def fixable(self) -> bool:
        return self.fix == FIX_CLEAN

    @property
    def location(self) -> str:
        where = "notebook" if self.cell is None else f"cell {self.cell}"
        return f"{where} ({self.excerpt})" if self.excerpt else where

    def __str__(self) -> str:
        return f"{self.location}: {self.what} -> fix: {self.fix}"


def is_golden(cell: Any) -> bool:
    """True if nbval (under --nbval-lax) compares this code cell's outputs."""
    if cell.get("cell_type") != "code":
        return False
    if GOLDEN_TAG in cell.get("metadata", {}).get("tags", []):
        return True
    return any(line.strip().lstrip("#").strip() == GOLDEN_MARKER
               for line in _source(cell).splitlines() if line.strip().startswith("#"))


def find_problems(nb: Any) -> list[Problem]:
    """Every way `nb` differs from clean, in cell order, notebook-level problems last."""
    found: list[Problem] = []
    parameter_cells: list[int] = []
    for i, cell in enumerate(nb.get("cells", [])):
        excerpt = _excerpt(cell)

        def add(what: str, fix: str = FIX_CLEAN, i: int = i, excerpt: str = excerpt) -> None:
            found.append(Problem(i, what, fix, excerpt))

        metadata = cell.get("metadata", {})
        stray = sorted(set(metadata) - {"tags"})
        if stray:
            add(f"stray cell metadata {', '.join(stray)}")
        if "tags" in metadata and not metadata["tags"]:
            add("empty `tags` list in cell metadata")
        tags = metadata.get("tags") or []
        if PARAMETERS_TAG in tags:
            if cell.get("cell_type") == "code":
                parameter_cells.append(i)
            else:
                add(f"{cell.get('cell_type')} cell tagged `parameters`", FIX_PARAMETERS)
        if cell.get("cell_type") != "code":
            continue

        count = cell.get("execution_count")
        outputs = cell.get("outputs", [])
        if not is_golden(cell):
            if count is not None:
                add(f"execution_count is {count}, want null")
            if outputs:
                add(f"{len(outputs)} output(s) on a cell that is not golden (# {GOLDEN_MARKER})")
            continue
        if count != GOLDEN_EXECUTION_COUNT:
            add(f"golden cell execution_count is {_json(count)}, want {GOLDEN_EXECUTION_COUNT} "
                "(nbval only compares outputs of a cell with an execution count)")
        if not outputs:
            add("golden cell has no stored output to compare against", FIX_EXECUTE)
        for k, out in enumerate(outputs):
            if out.get("output_type") == "error":
                add(f"golden cell output {k} is an error ({out.get('ename')})", FIX_EXECUTE)
            if out.get("execution_count") is not None:
                add(f"golden cell output {k} has execution_count {out['execution_count']}, want null")
            if out.get("metadata"):
                add(f"golden cell output {k} has metadata {', '.join(sorted(out['metadata']))}")

    if not parameter_cells:
        found.append(Problem(None, "no code cell is tagged `parameters`", FIX_PARAMETERS))
    elif len(parameter_cells) > 1:
        cells = ", ".join(map(str, parameter_cells))
        found.append(Problem(None, f"{len(parameter_cells)} code cells are tagged `parameters` ({cells})",
                             "keep the `parameters` tag on one cell only"))

    metadata = nb.get("metadata", {})
    stray = sorted(set(metadata) - {"kernelspec", "language_info"})
    if stray:
        found.append(Problem(None, f"stray notebook metadata {', '.join(stray)}"))
    if metadata.get("kernelspec") != KERNELSPEC:
        found.append(Problem(None, f"kernelspec is {_json(metadata.get('kernelspec'))}, want {KERNELSPEC}"))
    if metadata.get("language_info") != LANGUAGE_INFO:
        found.append(Problem(None, f"language_info is not {_json(LANGUAGE_INFO)}"))
    return found


def problems(nb: Any) -> list[str]:
    """Human-readable problems (cell, what, fix); an empty list means `nb` is clean."""
    return [str(p) for p in find_problems(nb)]


def clean(nb: Any) -> Any:
    """A cleaned copy of `nb`. Fixes everything except a missing or repeated `parameters` tag and
    missing or failed golden outputs, which need a person (or `--execute`)."""
    nb = copy.deepcopy(nb)
    nb.metadata = nbformat.from_dict({"kernelspec": dict(KERNELSPEC), "language_info": dict(LANGUAGE_INFO)})
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags") or []
        cell.metadata = nbformat.from_dict({"tags": list(tags)} if tags else {})
        if cell.cell_type != "code":
            continue
        if not is_golden(cell):
            cell.execution_count = None
            cell.outputs = []
            continue
        cell.execution_count = GOLDEN_EXECUTION_COUNT
        cell.outputs = _coalesce_streams(cell.outputs)
        for out in cell.outputs:
            if out.get("output_type") == "execute_result":
                out.execution_count = None  # required key, so null rather than absent
            elif "execution_count" in out:
                del out["execution_count"]
            if "metadata" in out:
                out.metadata = nbformat.from_dict({})
    return nb


def _coalesce_streams(outputs: list[Any]) -> list[Any]:
    """Consecutive prints to one stream as one output (how the kernel happened to flush them says nothing; nbval
    joins them the same way before it compares)."""
    merged: list[Any] = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (out.get("output_type") == "stream" and prev is not None and prev.get("output_type") == "stream"
                and prev.get("name") == out.get("name")):
            prev["text"] = "".join(prev["text"]) + "".join(out["text"])
        else:
            merged.append(out)
    return merged


def dumps(nb: Any) -> str:
    """The stable on-disk form: nbformat's JSON (indent 1, sorted keys) with a trailing newline."""
    text = nbformat.writes(nb, version=nbformat.NO_CONVERT, indent=1)
    return text if text.endswith("\n") else text + "\n"


def execute(path: Path) -> None:
    """Run `path` with papermill at its default parameters (kernel python3, cwd = its folder) and
    replace it with the cleaned result. Leaves the file untouched if a cell fails."""
    import papermill  # only needed here, and slow to import

    from accelkit.devtools.kernels import IpcKernelManager

    # Same renderer and hash seed as `make test`, so golden outputs match what nbval will see.
    os.environ["PLOTLY_RENDERER"] = "plotly_mimetype"
    os.environ["PYTHONHASHSEED"] = "0"
    with tempfile.TemporaryDirectory(prefix="nbclean-") as tmp:
        out_path = Path(tmp) / path.name
        papermill.execute_notebook(str(path), str(out_path), kernel_name="python3",
                                   cwd=str(path.resolve().parent), progress_bar=sys.stderr.isatty(),
                                   kernel_manager_class=IpcKernelManager)
        executed = nbformat.read(str(out_path), as_version=4)
    path.write_text(dumps(clean(executed)), encoding="utf-8")


def _notebook_paths(args: list[str]) -> list[Path]:
    paths: list[Path] = []
    for arg in args:
        p = Path(arg)
        if p.is_dir():
            paths.extend(sorted(p.glob("*.ipynb")))
        elif p.suffix == ".ipynb" and p.is_file():
            paths.append(p)
        else:
            raise SystemExit(f"nbclean: {arg}: not a notebook file or a directory")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accelkit.devtools.nbclean",
                                     description="Check or clean notebooks (see the module docstring).")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="change nothing; exit 1 listing every problem")
    mode.add_argument("--execute", action="store_true",
                      help="re-run each notebook with papermill (regenerates golden outputs), then clean it")
    parser.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    args = parser.parse_args(argv)
    paths = _notebook_paths(args.paths)
    if not paths:
        print("nbclean: no notebooks found")
        return 0

    status = 0
    if args.execute:
        executed = []
        for path in paths:
            print(f"{path}: executing with papermill", flush=True)
            try:
                execute(path)
                print(f"{path}: executed; golden outputs regenerated, notebook cleaned")
                executed.append(path)
            except Exception as exc:  # papermill's PapermillExecutionError carries the cell's traceback
                print(f"{path}: execution failed, file left unchanged\n{exc}", file=sys.stderr)
                status = 1
        paths = executed

    n_dirty = n_cleaned = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        nb = nbformat.reads(text, as_version=4)
        found = find_problems(nb)
        if args.check:
            for p in found:
                print(f"{path}: {p}")
            n_dirty += bool(found)
            continue
        cleaned_text = dumps(clean(nb))
        if cleaned_text != text:
            path.write_text(cleaned_text, encoding="utf-8")
            n_cleaned += 1
            fixed = [f"{p.location}: {p.what}" for p in found if p.fixable]
            print(f"{path}: cleaned")
            for line in fixed or ["JSON layout (nbformat: indent 1, sorted keys, trailing newline)"]:
                print(f"  fixed {line}")
        left = find_problems(nbformat.reads(cleaned_text, as_version=4))
        for p in left:
            print(f"{path}: {p}")
        n_dirty += bool(left)

    if not args.check and not args.execute:
        print(f"nbclean: {n_cleaned} of {len(paths)} notebook(s) rewritten")
    if n_dirty:
        print(f"nbclean: {n_dirty} of {len(paths)} notebook(s) still not clean")
        status = 1
    elif args.check:
        print(f"nbclean: {len(paths)} notebook(s) clean")
    return status


def _source(cell: Any) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _excerpt(cell: Any, width: int = 40) -> str:
    first = next((line.strip() for line in _source(cell).splitlines() if line.strip()), "")
    first = first if len(first) <= width else first[: width - 1] + "…"
    return f"{cell.get('cell_type')}: {first!r}" if first else f"empty {cell.get('cell_type')}"


def _json(value: Any) -> str:
    return "null" if value is None else repr(value)


if __name__ == "__main__":
    sys.exit(main())
