"""The workshop room (make hub) on this machine: time from an attendee's sign-in to a running kernel, and
the memory an idle attendee holds (their Jupyter server plus a kernel that has imported accelkit).

Starts a private hub on 127.0.0.1 (free ports, its own group and folder, removed afterwards), signs in
``USERS`` attendees one after the other and times each: sign-in form, server start, kernel start, a first
``import accelkit`` answered. Memory is the unique set size (USS: pages no other process shares) of every
process of one attendee, summed, after all of them sit idle: what each further attendee adds to the server.
Needs root (one system user per attendee), as `make hub` does.
"""

from __future__ import annotations

import os
import pwd
import statistics
import time

import psutil

USERS = 3
LOGIN_GOAL_S = 30.0      # an attendee waits at most this long for a kernel (illustrative: a room's patience)
IDLE_GOAL_MB = 600.0     # 60 attendees then fit in ~36 GB (illustrative: a 64 GB workshop server)


def _uss_mb(user: str) -> float:
    uid = pwd.getpwnam(user).pw_uid
    total = 0
    for proc in psutil.process_iter(["uids"]):
        if proc.info["uids"] and proc.info["uids"].real == uid:
            try:
                total += proc.memory_full_info().uss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
    return total / 2**20


def run() -> list[dict]:
    if os.geteuid() != 0:
        raise PermissionError("bench_hub makes system users: run `make bench` as root, as `make hub` runs")
    from accelkit.hub.client import LocalRoom, RoomClient

    code = "bench-room-code"
    with LocalRoom.start(workshop_code=code, admin_code="bench-admin-code") as hub:
        client = RoomClient(hub.url, hub.api_token)
        tag = hub.settings.group.removeprefix("akroom")
        names = [f"bench{i}{tag}" for i in range(USERS)]
        seconds, kernels = [], []
        for name in names:
            start = time.perf_counter()
            ok, message = client.sign_up(name, "bench-password", code)
            assert ok, message
            client.start_server(name)
            client.wait_ready(name)
            kernel = client.kernel(name)
            out = kernel.run("import accelkit")
            assert out.error is None, out.error
            seconds.append(time.perf_counter() - start)
            kernels.append(kernel)
        time.sleep(3)  # idle
        memory = [_uss_mb(name) for name in names]
        for kernel in kernels:
            kernel.close()
    login, idle = statistics.median(seconds), statistics.median(memory)
    return [
        {"name": f"sign-in to a running kernel, median of {USERS} attendees", "value": round(login, 2), "unit": "s",
         "goal": f"<= {LOGIN_GOAL_S:g} s", "ok": login <= LOGIN_GOAL_S},
        {"name": "sign-in to a running kernel, slowest", "value": round(max(seconds), 2), "unit": "s"},
        {"name": "memory per idle attendee (server + kernel with accelkit, USS)", "value": round(idle, 1),
         "unit": "MB", "goal": f"<= {IDLE_GOAL_MB:g} MB", "ok": idle <= IDLE_GOAL_MB},
    ]
