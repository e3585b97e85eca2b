"""Verdict recording for the workshop room (accelkit.teach.progress) and the instructor's view (accelkit.hub.room),
without a hub: fast, in-process."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from accelkit import teach
from accelkit.hub import room
from accelkit.hub.names import check_name
from accelkit.hub.settings import HubError, HubSettings
from accelkit.teach import progress

FLOPS = {"batch": 2, "in_features": 3, "out_features": 4}  # 01.linear_flops: 2 * 2 * 3 * 4 = 48


def test_nothing_is_recorded_unless_the_room_asks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(progress.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert teach.check("01.linear_flops", 48, quiet=True, **FLOPS).passed
    assert list(tmp_path.iterdir()) == []


def test_check_records_verdict_and_hint_but_never_the_answer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "me.jsonl"
    monkeypatch.setenv(progress.ENV, str(path))
    teach.check("01.linear_flops", quiet=True, **FLOPS)              # not done yet: nothing to record
    wrong = teach.check("01.linear_flops", 24, quiet=True, **FLOPS)  # multiply-adds, not FLOPs
    right = teach.check("01.linear_flops", 48, quiet=True, **FLOPS)
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert set(first) == {"exercise", "passed", "time", "hint"}
    assert (first["exercise"], first["passed"], second["passed"]) == ("01.linear_flops", False, True)
    assert first["hint"] == wrong.lines[0].hint and "double" in first["hint"]
    assert second["hint"] == "" and right.passed
    # no answers, no checked values (the timestamp may hold any digits: look at everything else)
    rest = [json.dumps({k: v for k, v in rec.items() if k != "time"}) for rec in (first, second)]
    assert "24" not in rest[0] and "48" not in rest[1]


def test_a_bad_progress_file_never_breaks_a_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(progress.ENV, str(tmp_path / "no-such-folder" / "me.jsonl"))
    with pytest.warns(UserWarning, match="could not record"):
        assert teach.check("01.linear_flops", 48, quiet=True, **FLOPS).passed
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_bytes(b'{"exercise": "01.x", "passed": true, "time": "2026-01-01T00:00:00+00:00"}\n'
                        b'\xff\xfe garbage\n{"exercise": \n[1, 2]\n')
    monkeypatch.setenv(progress.ENV, str(corrupt))
    assert teach.check("01.linear_flops", 48, quiet=True, **FLOPS).passed  # appends after the garbage
    assert [v.exercise for v in progress.read(corrupt)] == ["01.x", "01.linear_flops"]


def _append_many(path: str, n: int) -> None:
    for i in range(n):
        progress.record(f"01.ex{i % 3}", i % 2 == 0, "a hint " * 30, path=Path(path))


def test_appends_from_two_processes_stay_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "both.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(path), 200)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    lines = path.read_text().splitlines()
    assert len(lines) == 400 and all(json.loads(line)["exercise"].startswith("01.ex") for line in lines)


def test_room_board_and_where_attendees_are_stuck(tmp_path: Path) -> None:
    for name, verdicts in {"ada": [("01.a", False, "double it"), ("01.a", True, "")],
                           "bob": [("01.a", False, "double it"), ("02.b", False, "divide by the bandwidth")],
                           "cy": [("01.a", False, "multiply by the batch")]}.items():
        for exercise, passed, hint in verdicts:
            progress.record(exercise, passed, hint, path=tmp_path / f"{name}.jsonl")
    (tmp_path / "dee").mkdir()  # the Kubernetes layout: a folder per attendee
    progress.record("02.b", True, "", path=tmp_path / "dee" / "progress.jsonl")
    df = room.load(tmp_path)
    assert len(df) == 6 and set(df.attendee) == {"ada", "bob", "cy", "dee"}
    board = room.board(df)
    assert board.loc["ada", "01.a"] == "passed" and board.loc["bob", "01.a"] == "failed (1 try)"
    assert board.loc["cy", "02.b"] == ""
    stuck = room.stuck(df)
    assert list(stuck.index) == ["01.a", "02.b"]  # two attendees still failing 01.a
    assert stuck.loc["01.a", ["tried", "passed", "still failing"]].tolist() == [3, 1, 2]
    assert stuck.loc["02.b", ["tried", "passed", "still failing"]].tolist() == [2, 1, 1]
    assert stuck.loc["01.a", "commonest hint"] in ("double it", "multiply by the batch")
    fig = room.figure(df)
    assert [t.name for t in fig.data] == ["passed", "still failing"] and list(fig.data[1].y) == [2, 1]
    assert room.board(room.load(tmp_path / "empty")).empty


@pytest.mark.parametrize("name, ok", [("ada", True), ("b0b_x-1", True), ("../etc", False), ("a/b", False),
                                      (".hidden", False), ("Ada", False), ("root", False), ("a" * 33, False),
                                      ("", False), ("1abc", False), ("a b", False)])
def test_attendee_names(name: str, ok: bool) -> None:
    assert (check_name(name) is None) == ok


def test_room_settings_from_the_environment() -> None:
    s = HubSettings.from_env({"HUB_PORT": "9000", "HUB_WORKSHOP_CODE": "room42", "HUB_ADMIN": "Teacher"})
    assert (s.port, s.ip, s.api_port, s.admin, s.workshop_code) == (9000, "127.0.0.1", 9001, "teacher", "room42")
    assert s.generated_codes == ("HUB_ADMIN_CODE",) and len(s.admin_code) >= 8
    for env, word in [({"HUB_PORT": "80a"}, "port"), ({"HUB_WORKSHOP_CODE": "ab"}, "too short"),
                      ({"HUB_ADMIN": "../x"}, "path"), ({"HUB_WORKSHOP_CODE": "same", "HUB_ADMIN_CODE": "same"}, "same")]:
        with pytest.raises(HubError, match=word):
            HubSettings.from_env(env)


def test_the_instructors_notebook_runs_on_a_room(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from accelkit.hub.client import notebook_code
    from accelkit.hub.config import ROOM_NOTEBOOK

    progress.record("03.first_recipe", False, "look at the error-level finding", path=tmp_path / "ada.jsonl")
    monkeypatch.setenv("ACCELKIT_ROOM_DIR", str(tmp_path))
    namespace: dict = {}
    for code in notebook_code(json.loads(ROOM_NOTEBOOK.read_text())):
        exec(compile(code, "room.ipynb", "exec"), namespace)  # noqa: S102 - our own notebook
    assert namespace["r"].attendee.tolist() == ["ada"]
    assert room.stuck(namespace["r"]).loc["03.first_recipe", "commonest hint"] == "look at the error-level finding"
