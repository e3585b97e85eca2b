"""The curriculum's frame around every notebook, and the second notebook run with the solutions applied.

Every notebook opens with objectives (3-5), prerequisites, an estimated time and a link to the glossary, and
closes with a summary and a self-check. Each of 01-08 asks at least two exercises, every one registered in
``accelkit.teach`` for that notebook, each an answer cell left as ``...`` and a ``teach.check`` cell. ``make test``
runs every notebook once, with ``solutions=True`` (tests/notebook_runs.py): every checker must pass on the shipped
solution, or the check raises ``ExerciseFailed`` and the run fails. The same run's golden cells are compared with
the committed ones (test_notebooks.py). As shipped, each checker says "not done yet" and nothing fails
(test_teach.py); an answer's variable feeds its check and nothing else (below), so the solutions change what the
check cells print and nothing the golden cells show. 09 and 10 are checked further in test_capstone.py and
test_bridge.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from notebook_runs import RUNS, executed, output_text, runs_dir

from accelkit import teach

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
WITH_EXERCISES = [p for p in NOTEBOOKS if "01" <= p.name[:2] <= "08" or p.name[:2] == "11"]
SOLVED_ELSEWHERE = ("09", "10")  # test_capstone.py, test_bridge.py
TODO = re.compile(r"^\s*(\w+) = \.\.\.\s+# TODO", flags=re.M)
CHECK_CALL = re.compile(r"""teach\.check\(\s*["'](\d\d\.\w+)["']""")


def _cells(path: Path) -> list[nbformat.NotebookNode]:
    return nbformat.read(str(path), as_version=4).cells


def _markdown(path: Path) -> list[str]:
    return [c.source for c in _cells(path) if c.cell_type == "markdown"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_notebook_opens_with_objectives_prerequisites_time_and_the_glossary(path: Path) -> None:
    opening = _markdown(path)[0]
    assert "**Objectives.**" in opening, f"{path.name}: the first cell states no objectives"
    objectives = opening.split("**Objectives.**", 1)[1].split("**Prerequisites", 1)[0]
    count = len(re.findall(r"^\d+\. ", objectives, flags=re.M))
    assert 3 <= count <= 5, f"{path.name}: {count} objectives, want 3-5"
    assert re.search(r"\*\*Prerequisites:\*\* \S", opening), f"{path.name}: no prerequisites"
    assert re.search(r"\*\*Time:\*\* about \d+ minutes", opening), f"{path.name}: no estimated time"
    assert "(glossary.md" in opening, f"{path.name}: the first cell does not link the glossary"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_notebook_closes_with_a_summary_and_a_self_check(path: Path) -> None:
    text = "\n".join(_markdown(path))
    assert re.search(r"^## Summary$", text, flags=re.M), f"{path.name}: no '## Summary'"
    self_check = re.split(r"^## Self-check$", text, flags=re.M)
    assert len(self_check) == 2, f"{path.name}: no '## Self-check'"
    questions = re.findall(r"^\d+\. ", self_check[1], flags=re.M)
    assert len(questions) >= 3, f"{path.name}: {len(questions)} self-check questions, want 3 or more"


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name[:2])
def test_notebook_asks_every_exercise_registered_for_it(path: Path) -> None:
    nb = path.name[:2]
    code = [c.source for c in _cells(path) if c.cell_type == "code"]
    asked = [m for src in code for m in CHECK_CALL.findall(src)]
    registered = [e.name for e in teach.exercises_for(nb)]
    assert len(registered) >= 2, f"notebook {nb} has {len(registered)} exercises in accelkit.teach, want 2 or more"
    assert sorted(asked) == sorted(registered), f"{path.name} asks {asked}, accelkit.teach registers {registered}"
    # shipped unanswered, and run as shipped: a solution on the learner's page is no exercise
    assert any(TODO.search(src) for src in code), path.name
    assert not any("teach.solutions" in src or "from accelkit.teach import solutions" in src for src in code)
    params = next(c.source for c in _cells(path) if "parameters" in c.metadata.get("tags", []))
    assert re.search(r"^solutions = False\b", params, flags=re.M), f"{path.name}: no `solutions = False` knob"
    assert any("teach.setup(solutions=solutions)" in src for src in code), path.name


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in WITH_EXERCISES if p.name[:2] not in SOLVED_ELSEWHERE],
                         ids=lambda p: p.name[:2])
def test_notebook_with_the_solutions_applied(path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    # the notebook's one run, shared with its golden cells' test and the browser test (tests/notebook_runs.py)
    text = output_text(executed(path.name[:2], RUNS[path.name[:2]], runs_dir(tmp_path_factory)))
    registered = [e.name for e in teach.exercises_for(path.name[:2])]
    for name in registered:
        assert f"Exercise {name} (" in text, f"{path.name}: exercise {name} printed nothing"
    assert text.count("Solved (with the shipped solution).") == len(registered), text[-3000:]
    assert "not done yet" not in text


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name[:2])
def test_an_answer_feeds_its_check_and_nothing_else(path: Path) -> None:
    """The solutions fill an answer inside ``teach.check`` only, so a solved run shows every other cell as a
    learner's run does: a cell that names an answer's variable either sets it to ``...`` or checks it."""
    code = [c.source for c in _cells(path) if c.cell_type == "code"]
    answers = {m for src in code for m in TODO.findall(src)}
    for i, src in enumerate(code):
        named = {v for v in answers if re.search(rf"\b{v}\b", src)}
        for v in named:
            assert re.search(rf"^\s*{v} = \.\.\.\s+# TODO", src, flags=re.M) or re.search(
                rf"teach\.check\([^)]*\b{v}\b", src, flags=re.S), f"{path.name}: code cell {i} reads the answer {v}"


def test_every_glossary_link_has_its_entry() -> None:
    glossary = (NOTEBOOK_DIR / "glossary.md").read_text()
    anchors = set(re.findall(r'<a id="([\w-]+)"></a>', glossary))
    for path in NOTEBOOKS:
        for anchor in re.findall(r"\(glossary\.md#([\w-]+)\)", path.read_text()):
            assert anchor in anchors, f"{path.name} links glossary.md#{anchor}, which has no entry"
