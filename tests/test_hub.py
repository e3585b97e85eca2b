"""The workshop room end to end: a real JupyterHub on 127.0.0.1 (free ports, a private group and folder),
three attendees and the instructor signed up through the sign-in form, their servers and kernels started, each
kernel running as its attendee on its own copy of the notebooks, and notebook 00 run whole in one of them
through the server's kernel API while the others work; isolation between attendees, the instructor's view, the
solutions gate, a second sign-in keeping edits, a clean stop. One module fixture: the hub starts once.

Needs root (one system user per attendee), useradd, configurable-http-proxy and setfacl (`make setup`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from accelkit.hub import accounts, room
from accelkit.hub.__main__ import main as hub_cli
from accelkit.hub.client import LocalRoom, RoomClient, notebook_code
from accelkit.hub.settings import proxy_command

NB00 = "notebooks/00_accelerator_landscape.ipynb"
CODE, ADMIN_CODE = "room-code-7", "teacher-code-9"
PASSWORD = "a-good-password"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(400),
    pytest.mark.skipif(os.geteuid() != 0, reason="the room makes system users: run as root (make test does)"),
    pytest.mark.skipif(shutil.which(proxy_command()[0]) is None and not os.path.exists(proxy_command()[0]),
                       reason="configurable-http-proxy is missing: `make setup` installs it"),
]


ARTIFACTS = Path(__file__).parents[1] / "test-artifacts" / "hub"  # gitignored


@pytest.fixture(scope="module")
def hub():
    room = LocalRoom.start(workshop_code=CODE, admin_code=ADMIN_CODE)
    try:
        yield room
    finally:
        # the room's log (the hub's, the proxy's and each attendee's server's) outlives its temporary folder: a
        # failure under load can be read afterwards
        with contextlib.suppress(OSError):
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            (ARTIFACTS / "last-room.log").write_text(room.log())
        room.stop()


@pytest.fixture(scope="module")
def client(hub: LocalRoom) -> RoomClient:
    return RoomClient(hub.url, hub.api_token)


def _names(hub: LocalRoom) -> list[str]:
    tag = hub.settings.group.removeprefix("akroom")
    return [f"{c}{tag}" for c in "abc"]  # unique per run: never an account of this machine


def test_the_room(hub: LocalRoom, client: RoomClient, monkeypatch: pytest.MonkeyPatch) -> None:
    names, admin = _names(hub), hub.settings.admin
    a, b, c = names
    run_all = {a}  # notebook 00 whole, in one kernel while the others run (each of the three checks its own copy and user)

    # ---- sign-up: refusals say why; three attendees and the instructor get in ----------------------------
    refused = {
        "wrong code": client.sign_up(a, PASSWORD, "not-the-code"),
        "path-like": client.sign_up("../etc", PASSWORD, CODE),
        "slash": client.sign_up("x/y", PASSWORD, CODE),
        "system account": client.sign_up("bin", PASSWORD, CODE),
        "instructor with the attendees' code": client.sign_up(admin, PASSWORD, CODE),
    }
    assert all(not ok for ok, _ in refused.values()), refused
    assert "workshop code" in refused["wrong code"][1]
    assert "look like a path" in refused["path-like"][1] and "look like a path" in refused["slash"][1]
    assert "taken on this machine" in refused["system account"][1]
    assert "instructor's code" in refused["instructor with the attendees' code"][1]
    for name in names:
        assert client.sign_up(name, PASSWORD, CODE) == (True, ""), name
    assert client.sign_up(admin, PASSWORD, ADMIN_CODE)[0]
    ok, message = client.sign_up(a, "someone-elses-password", CODE)
    assert not ok and "is taken" in message
    assert client.sign_up(a, PASSWORD)[0]  # a returning attendee needs no code

    services = client.api("GET", "/services").json()
    assert "--timeout=3600" in " ".join(services.get("idle-culler", {}).get("command", [])), services  # culled

    # ---- every server starts as its own system user, with its own copy of the notebooks ---------------------
    for name in names:
        client.start_server(name)
    for name in names:
        client.wait_ready(name)
    with ThreadPoolExecutor(len(names)) as pool:  # kernels start in parallel, as a room's attendees do
        kernels = dict(zip(names, pool.map(client.kernel, names), strict=True))
    try:
        # ---- notebook 00, from each attendee's own copy, through their kernel -------------------------------
        def run_nb00(name: str) -> list:
            who = kernels[name].run("import os, pwd\nprint(pwd.getpwuid(os.getuid()).pw_name, os.path.expanduser('~'),"
                                    " os.stat('notebooks/00_accelerator_landscape.ipynb').st_uid == os.getuid())")
            assert who.error is None and who.text.split() == [name, str(hub.settings.home_root / name), "True"], who
            if name not in run_all:
                return []
            nb = client.contents(name, NB00).json()["content"]
            return [kernels[name].run(code) for code in notebook_code(nb, "include_host = False")]

        with ThreadPoolExecutor(len(names)) as pool:
            results = dict(zip(names, pool.map(run_nb00, names), strict=True))
        ran_all = [n for n in names if n in run_all]
        assert len(ran_all) == 1, ran_all
        for name, outs in ((n, results[n]) for n in ran_all):
            assert [o.error for o in outs if o.error] == [], name
            shown = "".join(o.text for o in outs)
            assert "sn40l" in shown and "source" in shown, name  # the golden cells' text came back
            assert sum("application/vnd.plotly.v1+json" in o.mimetypes() for o in outs) >= 5, name  # the figures

        # ---- a socket dropped while a cell runs (a late pong on a loaded machine): the client reopens it with its
        # session, the server hands over what the kernel sent, and the cell is not run twice ------------------------
        dropped = kernels[a]
        timer = threading.Timer(1.0, lambda: dropped.ws.sock.shutdown(socket.SHUT_RDWR))
        timer.start()
        once = dropped.run("import time\nruns = globals().get('runs', 0) + 1\ntime.sleep(3)\nprint('ran', runs)")
        timer.join()
        assert once.error is None and once.text.split() == ["ran", "1"], once
        assert dropped.run("print(runs)").text.strip() == "1"

        # ---- attendees cannot read or write each other's files, nor reach each other's server -------------------
        b_home = hub.settings.home_root / b
        probe = kernels[a].run(
            "import pathlib\nfor op in ('read', 'write', 'list'):\n"
            f"    p = pathlib.Path({str(b_home)!r})\n"
            "    try:\n"
            "        (p / 'notebooks' / '00_accelerator_landscape.ipynb').read_text() if op == 'read' else "
            "(p / 'mine.txt').write_text('x') if op == 'write' else list(p.iterdir())\n"
            "        print(op, 'ALLOWED')\n"
            "    except PermissionError:\n"
            "        print(op, 'denied')\n")
        assert probe.text.split() == ["read", "denied", "write", "denied", "list", "denied"], probe
        assert not (b_home / "mine.txt").exists()
        assert client.contents(b, NB00, as_user=a).status_code in (302, 403, 404)

        # ---- user C's verdicts show in the instructor's view; other attendees cannot read them ------------------
        verdict = kernels[c].run("from accelkit import teach\n"
                                 "r1 = teach.check('01.linear_flops', 24, batch=2, in_features=3, out_features=4)\n"
                                 "r2 = teach.check('01.linear_flops', 48, batch=2, in_features=3, out_features=4)\n"
                                 "print(r1.status, r2.status)")
        assert verdict.error is None and verdict.text.strip().endswith("failed passed"), verdict
        c_file = hub.settings.progress_dir / f"{c}.jsonl"
        seen = subprocess.run(["runuser", "-u", admin, "--", "cat", str(c_file)], capture_output=True, text=True)
        assert seen.returncode == 0 and seen.stdout.count("01.linear_flops") == 2, seen  # the instructor reads it
        view = room.load(hub.settings.progress_dir)  # what the instructor's notebook shows, from what it can read
        assert room.board(view).loc[c, "01.linear_flops"] == "passed"
        assert room.stuck(view).loc["01.linear_flops", "tried"] == 1
        spy = kernels[a].run(f"open({str(c_file)!r}).read()")
        assert spy.error is not None and "PermissionError" in spy.error
        record = (hub.settings.progress_dir / f"{c}.jsonl").read_text()
        assert record.count("\n") == 2 and '"hint": "each multiply-add' in record
        # the verdicts, never the answers (48, the right one); a time stamp may hold the digits
        assert all(48 not in r.values() and "answer" not in r for r in map(json.loads, record.splitlines()))

        # ---- solutions: hidden until the instructor releases them (one command) --------------------------------
        gate = "from accelkit import teach\ntry:\n    teach.setup(solutions=True)\n    print('applied')\n" \
               "except teach.exercises.SolutionsHidden as e:\n    print('hidden:', e.message)\n"
        assert kernels[c].run(gate).text.startswith("hidden: the solutions are not released")
        monkeypatch.setenv("HUB_DIR", str(hub.settings.state_dir))
        assert hub_cli(["release-solutions"]) == 0  # `make hub-release-solutions`, in this process
        assert kernels[c].run(gate).text.strip() == "applied"
    finally:
        for k in kernels.values():
            k.close()

    # ---- an attendee who stops and signs in again finds their edits ------------------------------------------
    nb = client.contents(c, NB00).json()
    nb["content"]["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": "my notes: ridge point"})
    assert client.save(c, NB00, {"type": "notebook", "content": nb["content"]}).status_code == 200
    instructor = RoomClient(hub.url, client.token(admin))  # the instructor sees every server and restarts them
    servers = {u["name"]: u["servers"] for u in instructor.api("GET", "/users").json()}
    assert all(servers[n] for n in names) and not servers[admin]
    instructor.stop_server(c)
    assert client.sign_up(c, PASSWORD)[0]  # signs in again (password only)
    instructor.start_server(c)
    instructor.wait_ready(c)
    again = client.contents(c, NB00).json()["content"]["cells"][0]
    assert again["source"] == "my notes: ridge point"

    # ---- the hub stops cleanly: exit 0, no server of any attendee left ----------------------------------------
    uids = {accounts.pwd.getpwnam(n).pw_uid for n in [*names, admin]}
    code = hub.stop()
    assert code == 0, hub.log()[-2000:]
    left = [p.info for p in psutil.process_iter(["pid", "uids", "cmdline"]) if p.info["uids"] and p.info["uids"].real in uids]
    assert left == []
    assert not any(accounts.system_user_exists(n) for n in [*names, admin])
