"""Every notebook in notebooks/ is committed clean and runs top to bottom at its default parameters.

Each notebook runs twice in `make test`, neither time here: the nbval run executes every cell and compares the
golden ones (`# NBVAL_CHECK_OUTPUT`), and tests/test_browser.py runs it in JupyterLab (as `make lab` starts it)
and times it. Here: every committed notebook is clean.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from accelkit.devtools import nbclean

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
