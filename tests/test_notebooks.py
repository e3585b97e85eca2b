"""Every notebook in notebooks/ is committed clean, runs top to bottom at its default parameters, and its golden
cells (`# NBVAL_CHECK_OUTPUT`) show what they were committed with.

Each notebook runs once in `make test` (tests/notebook_runs.py: papermill, the default parameters, the solutions
applied); its golden cells are compared here with nbval's rules and sanitizers (accelkit.devtools.golden), the
exercises in test_curriculum.py, the figures in test_browser.py. An instructor can still run nbval itself:
`pytest --nbval-lax --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks/NN_x.ipynb`.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from notebook_runs import ORDER, RUNS, executed, golden_mismatches, runs_dir

from accelkit.devtools import golden, nbclean

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
NOTEBOOK_PARAMS = [pytest.param(p, id=p.name) for p in NOTEBOOKS] or [
    pytest.param(None, id="none", marks=pytest.mark.skip(reason=f"no notebooks in {NOTEBOOK_DIR} yet"))
]
SANITIZE_CFG = Path(__file__).resolve().parent / "nbval_sanitize.cfg"


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_notebook_is_clean(path: Path) -> None:
    nb = nbformat.read(str(path), as_version=4)
    found = nbclean.problems(nb)
    assert found == [], f"{path.name} is not clean:\n" + "\n".join(found)


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("nb", ORDER)
def test_notebook_runs_and_its_golden_cells_match(nb: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    run = executed(nb, RUNS[nb], runs_dir(tmp_path_factory))  # papermill fails the test on any cell's error
    found = golden_mismatches(nb, run)
    assert found == [], (f"notebook {nb}: {len(found)} golden cell(s) differ from the committed outputs "
                         "(regenerate with `python -m accelkit.devtools.nbclean --execute` if the change is "
                         "meant):\n" + "\n".join(found))


def test_every_notebook_has_a_run_and_golden_cells() -> None:
    assert sorted(RUNS) == sorted(ORDER) == sorted(p.name[:2] for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"):
        nb = nbformat.read(str(p), as_version=4)
        assert any(nbclean.is_golden(c) for c in nb.cells), f"{p.name} has no golden cell"


# --- nbclean itself, on a synthetic notebook -------------------------------------------------------

def _dirty_notebook() -> nbformat.NotebookNode:
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python", "version": "3.11.9", "mimetype": "text/x-python"},
        "papermill": {"duration": 1.5},
    }
    nb.cells = [
        v4.new_markdown_cell("# Title", metadata={"jp-MarkdownHeadingCollapsed": True}),
        v4.new_code_cell("n = 3", execution_count=4),  # the knobs, but not tagged `parameters`
        v4.new_code_cell("x = n * 2\nx", execution_count=5,
                         metadata={"scrolled": True, "execution": {"iopub.execute_input": "2026-11-22"}},
                         outputs=[v4.new_output("execute_result", {"text/plain": "6"}, execution_count=5)]),
        v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(x)", execution_count=6,
                         metadata={"tags": ["keep"], "papermill": {"status": "completed"}},
                         outputs=[v4.new_output("stream", name="stdout", text="6\n"),
                                  v4.new_output("execute_result", {"text/plain": "6"}, execution_count=6,
                                                metadata={"isolated": True})]),
    ]
    return nb


def test_nbclean_reports_each_problem() -> None:
    found = "\n".join(nbclean.problems(_dirty_notebook()))
    expected = [
        "cell 0 (markdown: '# Title'): stray cell metadata jp-MarkdownHeadingCollapsed",
        "cell 1 (code: 'n = 3'): execution_count is 4, want null",
        "cell 2 (code: 'x = n * 2'): stray cell metadata execution, scrolled",
        "cell 2 (code: 'x = n * 2'): execution_count is 5, want null",
        "cell 2 (code: 'x = n * 2'): 1 output(s) on a cell that is not golden",
        "cell 3 (code: '# NBVAL_CHECK_OUTPUT'): stray cell metadata papermill",
        "cell 3 (code: '# NBVAL_CHECK_OUTPUT'): golden cell execution_count is 6, want 1",
        "cell 3 (code: '# NBVAL_CHECK_OUTPUT'): golden cell output 1 has execution_count 6, want null",
        "cell 3 (code: '# NBVAL_CHECK_OUTPUT'): golden cell output 1 has metadata isolated",
        "notebook: no code cell is tagged `parameters`",
        "notebook: stray notebook metadata papermill",
        "notebook: language_info is not",
    ]
    for text in expected:
        assert text in found, f"missing {text!r} in:\n{found}"
    assert found.count("-> fix: run `make clean-notebooks`") == len(expected) - 1
    assert "-> fix: give the code cell holding the notebook's knobs the tag `parameters`" in found


def test_nbclean_clean_fixes_everything_it_can() -> None:
    dirty = _dirty_notebook()
    cleaned = nbclean.clean(dirty)
    assert nbclean.problems(dirty) != [], "clean must return a copy, not edit its argument"
    # Which cell holds the knobs is a person's call, so that one problem remains.
    assert [p.what for p in nbclean.find_problems(cleaned)] == ["no code cell is tagged `parameters`"]
    cleaned.cells[1].metadata["tags"] = ["parameters"]
    assert nbclean.problems(cleaned) == []

    assert cleaned.metadata == {"kernelspec": dirty.metadata.kernelspec, "language_info": {"name": "python"}}
    assert [c.metadata for c in cleaned.cells] == [{}, {"tags": ["parameters"]}, {}, {"tags": ["keep"]}]
    assert (cleaned.cells[2].execution_count, cleaned.cells[2].outputs) == (None, [])
    golden = cleaned.cells[3]
    assert golden.execution_count == nbclean.GOLDEN_EXECUTION_COUNT  # nbval skips unrun cells
    assert [o.output_type for o in golden.outputs] == ["stream", "execute_result"]
    assert golden.outputs[0].text == "6\n"
    assert (golden.outputs[1].execution_count, golden.outputs[1].metadata) == (None, {})
    nbformat.validate(cleaned)
    assert nbclean.clean(cleaned) == cleaned


def test_nbclean_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "01_dirty.ipynb"
    nb = _dirty_notebook()
    nb.cells[1].metadata["tags"] = ["parameters"]
    nbformat.write(nb, str(path), indent=2)

    assert nbclean.main(["--check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}: cell 1 (code: 'n = 3'): execution_count is 4, want null" in out
    assert "1 of 1 notebook(s) still not clean" in out

    assert nbclean.main([str(path)]) == 0
    assert "fixed cell 1" in capsys.readouterr().out
    text = path.read_text()
    assert text.endswith("}\n") and '\n "cells": [\n' in text  # nbformat layout: indent 1
    assert nbclean.main(["--check", str(path)]) == 0
    assert nbclean.main([str(path)]) == 0
    assert path.read_text() == text  # idempotent


def test_nbclean_multiple_parameters_cells() -> None:
    nb = nbclean.clean(_dirty_notebook())
    for i in (1, 2):
        nb.cells[i].metadata["tags"] = ["parameters"]
    assert nbclean.problems(nb) == [
        "notebook: 2 code cells are tagged `parameters` (1, 2) -> fix: keep the `parameters` tag on one cell only"
    ]


def test_sanitizers() -> None:
    from nbval.plugin import get_sanitize_patterns

    patterns = get_sanitize_patterns(SANITIZE_CFG.read_text())
    assert len(patterns) == 5

    def sanitize(s: str) -> str:
        import re

        for regex, replace in patterns:
            s = re.sub(regex, replace, s)
        return s

    assert sanitize("<Node at 0x7f3a2c1d4e50>, mask 0xFF") == "<Node at 0xADDRESS>, mask 0xFF"
    assert sanitize('<div id="0b4c2f0e-1d2a-4c8e-9f00-123456789abc">') == '<div id="UUID">'
    assert sanitize("run 2026-11-22T03:37:05.123+00:00 / 2026-11-22") == "run TIMESTAMP / TIMESTAMP"
    assert sanitize("measured 12.3 ms, wall: 1.2 s, took 850 us") == \
        "measured DURATION, wall: DURATION, took DURATION"
    assert sanitize("estimated step time 4.17 ms on wse2") == "estimated step time 4.17 ms on wse2"
    # a notebook cell's execution count differs between papermill and nbval; its line does not
    assert sanitize("aten.item  cell [7], line 5") == "aten.item  cell [N], line 5"
    assert sanitize("model.py:12, cell [3]") == "model.py:12, cell [3]"


# --- the golden comparison (accelkit.devtools.golden), on synthetic notebooks -----------------------------

def _golden_pair() -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """A committed notebook and a papermill run of it that agree under nbval's rules."""
    v4 = nbformat.v4
    shipped = v4.new_notebook(cells=[
        v4.new_code_cell("n = 3", metadata={"tags": ["parameters"]}),
        v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint('measured 1.2 ms'); print(n)", execution_count=1,
                         outputs=[v4.new_output("stream", name="stdout", text="measured 1.2 ms\n3\n")]),
        v4.new_code_cell("print('not golden')"),
        v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nfig", execution_count=1, outputs=[v4.new_output(
            "display_data", {"text/plain": "Figure", "image/png": "AAAA"})]),
    ])
    run = v4.new_notebook(cells=[
        v4.new_code_cell("n = 3", metadata={"tags": ["parameters"]}),
        v4.new_code_cell("solutions = True\n", metadata={"tags": ["injected-parameters"]}),
        # the same text in two flushes, another duration; a new PNG
        v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint('measured 1.2 ms'); print(n)", execution_count=7, outputs=[
            v4.new_output("stream", name="stdout", text="measured 9.87 ms\n"),
            v4.new_output("stream", name="stdout", text="3\n")]),
        v4.new_code_cell("print('not golden')", outputs=[v4.new_output("stream", name="stdout", text="other\n")]),
        v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nfig", execution_count=9, outputs=[v4.new_output(
            "display_data", {"text/plain": "Figure", "image/png": "BBBB"})]),
    ])
    return shipped, run


def test_golden_comparison_follows_nbval() -> None:
    shipped, run = _golden_pair()
    patterns = golden.sanitize_patterns(SANITIZE_CFG)
    assert golden.mismatches(shipped, run, patterns) == []
    assert len(golden.mismatches(shipped, run, [])) == 1  # without the sanitizers the duration differs

    run.cells[2].outputs[1].text = "4\n"
    found = golden.mismatches(shipped, run, patterns)
    assert len(found) == 1 and found[0].startswith("code cell 1 (print('measured 1.2 ms'); print(n))")
    assert "-3\n+4" in found[0]

    shipped, run = _golden_pair()
    run.cells[4].outputs[0].data["text/html"] = "<b>Figure</b>"
    assert "outputs of kinds ['text/html', 'text/plain']" in golden.mismatches(shipped, run, patterns)[0]

    shipped, run = _golden_pair()
    run.cells[4].source = "fig2"
    assert "its source differs" in golden.mismatches(shipped, run, patterns)[0]
    del run.cells[3]
    assert "the run has 3 code cells, the notebook 4" in golden.mismatches(shipped, run, patterns)[0]


def test_golden_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped, run = _golden_pair()
    run.cells[2].outputs[1].text = "4\n"
    for name, nb in (("nb.ipynb", shipped), ("run.ipynb", run)):
        nbformat.write(nb, str(tmp_path / name))
    argv = [str(tmp_path / "nb.ipynb"), str(tmp_path / "run.ipynb"), "--sanitize", str(SANITIZE_CFG)]
    assert golden.main(argv) == 1
    assert "1 golden cell(s) differ" in capsys.readouterr().out
    nbformat.write(shipped, str(tmp_path / "run.ipynb"))
    assert golden.main(argv) == 0
