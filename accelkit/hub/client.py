"""Drive a workshop room from a script: sign up, start servers, run code in an attendee's kernel.

What the room's test and benchmark use, and what an instructor can use to rehearse a room before the class::

    with LocalRoom.start(workshop_code="...", admin_code="...") as hub:      # a private hub, stopped after
        client = RoomClient(hub.url, hub.api_token)
        client.sign_up("ada", "a-password", "the-code")
        client.start_server("ada")
        with client.kernel("ada") as k:
            print(k.run("1 + 1").text)

Sign-up goes through the hub's sign-in form (as a browser would); everything else through JupyterHub's
REST API (servers, tokens) and the attendee's Jupyter server (contents, kernels over a websocket).
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from accelkit.hub.settings import HubError, HubSettings

LOGIN_ERROR = re.compile(r'<p class="login_error">(.*?)</p>', re.DOTALL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Outputs:
    """What one execution sent back: outputs in order, and the error if it raised."""

    items: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: str | None = None

    @property
    def text(self) -> str:
        """Streams and text/plain results, joined."""
        parts = []
        for kind, content in self.items:
            if kind == "stream":
                parts.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                parts.append(content.get("data", {}).get("text/plain", ""))
        return "".join(parts)

    def mimetypes(self) -> set[str]:
        return {m for kind, c in self.items if kind in ("execute_result", "display_data") for m in c.get("data", {})}


class Kernel:
    """A kernel in an attendee's server, spoken to over its websocket (Jupyter's messaging protocol)."""

    def __init__(self, base: str, user: str, token: str, timeout_s: float = 120) -> None:
        import websocket  # websocket-client, which jupyter_server depends on

        self.base, self.user, self.timeout_s = base, user, timeout_s
        self.headers = {"Authorization": f"token {token}"}
        r = requests.post(f"{base}/user/{user}/api/kernels", headers=self.headers, json={"name": "python3"},
                          timeout=timeout_s)
        r.raise_for_status()
        self.id = r.json()["id"]
        # a session of our own: if the server drops the socket, it buffers what the kernel sends for this session
        # and replays it when the same session reconnects (jupyter_server's kernel message buffering)
        self.session = uuid.uuid4().hex
        self._ws_url = (base.replace("http", "ws", 1) + f"/user/{user}/api/kernels/{self.id}/channels"
                        f"?session_id={self.session}")
        self._connect = lambda: websocket.create_connection(self._ws_url, header=[f"Authorization: token {token}"],
                                                            timeout=timeout_s)
        self.ws = self._connect()
        self._used = time.monotonic()

    # The server pings an open websocket every 30 s and drops it when no pong comes; this client answers pings
    # only while it waits for a reply, so a connection left idle longer is opened anew before the next run.
    IDLE_RECONNECT_S = 20.0

    # a socket the server drops while a cell runs (a late pong on a loaded machine) is reopened this many times
    RECONNECTS = 3

    def _reconnect(self) -> None:
        from websocket import WebSocketException

        with contextlib.suppress(WebSocketException, OSError):  # already closed, or closed by the server
            self.ws.close()
        self.ws = self._connect()

    def run(self, code: str) -> Outputs:
        from websocket import WebSocketConnectionClosedException

        if time.monotonic() - self._used > self.IDLE_RECONNECT_S:
            self._reconnect()
        msg_id = uuid.uuid4().hex
        request = json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": self.user,
                       "session": self.session, "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True},
        })
        try:
            self.ws.send(request)
        except (WebSocketConnectionClosedException, ConnectionError):  # dropped before the request went out
            self._reconnect()
            self.ws.send(request)
        out = Outputs()
        reconnects = 0
        while True:
            try:
                raw = self.ws.recv()
            except (WebSocketConnectionClosedException, ConnectionError):
                # the request went out: the server buffers the kernel's replies for this session and replays them
                # when it reconnects, so nothing is sent twice
                reconnects += 1
                if reconnects > self.RECONNECTS:
                    raise
                self._reconnect()
                continue
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id or msg.get("channel") != "iopub":
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind in ("stream", "execute_result", "display_data"):
                out.items.append((kind, content))
            elif kind == "error":
                out.error = f"{content['ename']}: {content['evalue']}"
                out.items.append((kind, content))
            elif kind == "status" and content["execution_state"] == "idle":
                self._used = time.monotonic()
                return out

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            requests.delete(f"{self.base}/user/{self.user}/api/kernels/{self.id}", headers=self.headers, timeout=30)

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RoomClient:
    """A script's view of a running room: ``api_token`` is a token of the hub's ``room-api`` service."""

    def __init__(self, url: str, api_token: str) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"token {api_token}"}
        self._tokens: dict[str, str] = {}

    def api(self, method: str, path: str, **kw: Any) -> requests.Response:
        return requests.request(method, f"{self.url}/hub/api{path}", headers=self.headers, timeout=60, **kw)

    def sign_up(self, name: str, password: str, code: str = "") -> tuple[bool, str]:
        """Sign in through the hub's form (the first sign-in claims the name); (signed in, the page's message)."""
        s = requests.Session()
        s.get(f"{self.url}/hub/login", timeout=60)
        r = s.post(f"{self.url}/hub/login", allow_redirects=False, timeout=60,
                   data={"username": name, "password": password, "otp": code, "_xsrf": s.cookies.get("_xsrf", "")})
        match = LOGIN_ERROR.search(r.text)
        return r.status_code == 302, html.unescape(match.group(1)).strip() if match else ""

    def start_server(self, name: str) -> None:
        r = self.api("POST", f"/users/{name}/server")
        if r.status_code not in (201, 202, 400):  # 400: already running
            raise HubError(f"starting {name}'s server: {r.status_code} {r.text[:200]}")

    def wait_ready(self, name: str, timeout_s: float = 120) -> float:
        """Seconds until ``name``'s server answers (raises after ``timeout_s``)."""
        start = time.monotonic()
        while time.monotonic() - start < timeout_s:
            server = self.api("GET", f"/users/{name}").json().get("servers", {}).get("")
            if server and server.get("ready"):
                return time.monotonic() - start
            time.sleep(0.5)
        raise HubError(f"{name}'s server did not start in {timeout_s:.0f} s", fix="read the hub's log")

    def stop_server(self, name: str, timeout_s: float = 60) -> None:
        self.api("DELETE", f"/users/{name}/server")
        start = time.monotonic()
        while time.monotonic() - start < timeout_s:
            if not self.api("GET", f"/users/{name}").json().get("servers"):
                return
            time.sleep(0.5)
        raise HubError(f"{name}'s server did not stop in {timeout_s:.0f} s")

    def token(self, name: str) -> str:
        """An API token of ``name`` (what their browser's session would carry), made once."""
        if name not in self._tokens:
            r = self.api("POST", f"/users/{name}/tokens", json={"note": "room client", "expires_in": 3600})
            r.raise_for_status()
            self._tokens[name] = r.json()["token"]
        return self._tokens[name]

    def contents(self, name: str, path: str, *, as_user: str | None = None) -> requests.Response:
        """GET a file from ``name``'s server through its contents API (with ``as_user``'s token)."""
        token = self.token(as_user or name)
        return requests.get(f"{self.url}/user/{name}/api/contents/{path}", timeout=60,
                            headers={"Authorization": f"token {token}"})

    def save(self, name: str, path: str, model: dict[str, Any]) -> requests.Response:
        return requests.put(f"{self.url}/user/{name}/api/contents/{path}", json=model, timeout=60,
                            headers={"Authorization": f"token {self.token(name)}"})

    def kernel(self, name: str) -> Kernel:
        return Kernel(self.url, name, self.token(name))


def notebook_code(nb: dict[str, Any], overrides: str = "") -> list[str]:
    """A notebook's code cells, with ``overrides`` run right after the ``parameters`` cell (as papermill does)."""
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        cells.append(source)
        if overrides and "parameters" in cell.get("metadata", {}).get("tags", []):
            cells.append(overrides)
    return cells


@dataclass
class LocalRoom:
    """A private hub on 127.0.0.1 with free ports, its accounts in a group of its own, in a temporary folder.
    :meth:`stop` stops the hub (and with it every server and the proxy) and removes every account it made."""

    settings: HubSettings
    process: subprocess.Popen[bytes]
    api_token: str
    folder: Path
    log_path: Path
    solutions_were_released: bool = True
    final_log: str = ""  # what the room printed, kept by stop() when its folder goes

    @property
    def url(self) -> str:
        return self.settings.url

    @classmethod
    def start(cls, *, workshop_code: str, admin_code: str, admin: str = "", timeout_s: float = 120,
              extra_env: dict[str, str] | None = None) -> LocalRoom:
        folder = Path(tempfile.mkdtemp(prefix="accelkit-room-"))
        os.chmod(folder, 0o755)  # the attendees' homes live below it
        tag = secrets.token_hex(3)
        port = free_port()
        env = {**os.environ, "HUB_PORT": str(port), "HUB_API_PORT": str(free_port()),
               "HUB_PROXY_API_PORT": str(free_port()), "HUB_IP": "127.0.0.1", "HUB_ADMIN": admin or f"inst{tag}",
               "HUB_WORKSHOP_CODE": workshop_code, "HUB_ADMIN_CODE": admin_code, "HUB_DIR": str(folder / "state"),
               "HUB_HOME_ROOT": str(folder / "home"), "HUB_GROUP": f"akroom{tag}", "HUB_THREADS": "1",
               "HUB_API_TOKEN": secrets.token_hex(16), **(extra_env or {})}
        settings = HubSettings.from_env(env)
        from accelkit.hub import accounts

        released = accounts.solutions_released()  # the hub hides them; put them back as they were
        log_path = folder / "hub.log"
        with open(log_path, "wb") as log:
            hub = [str(Path(sys.prefix) / "bin" / "jupyterhub"), "-f", str(Path(__file__).with_name("jupyterhub_config.py"))]
            process = subprocess.Popen(hub, env=env, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        room = cls(settings, process, env["HUB_API_TOKEN"], folder, log_path, released)
        try:
            room._wait_up(timeout_s)
        except BaseException:
            room.stop()
            raise
        return room

    def _wait_up(self, timeout_s: float) -> None:
        start = time.monotonic()
        while time.monotonic() - start < timeout_s:
            if self.process.poll() is not None:
                raise HubError(f"the hub exited ({self.process.returncode}):\n{self.log()[-3000:]}")
            try:
                if requests.get(f"{self.url}/hub/api/", timeout=5).ok:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.3)
        raise HubError(f"the hub did not answer in {timeout_s:.0f} s:\n{self.log()[-3000:]}")

    def log(self) -> str:
        """What the hub, the proxy and the attendees' servers printed (after stop(), what they had printed)."""
        if self.log_path.exists():
            return self.log_path.read_text(errors="replace")
        return self.final_log

    def stop(self, timeout_s: float = 60) -> int | None:
        """Stop the hub (SIGTERM: it stops every server and the proxy), then remove the room's accounts."""
        from accelkit.hub import accounts

        code = None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                code = self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)  # its own session: the proxy and services with it
                self.process.wait(10)
        else:
            code = self.process.returncode
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # anything of this hub's session still left
        except ProcessLookupError:
            pass
        accounts.remove_room(self.settings)
        accounts.set_solutions_released(self.solutions_were_released)
        self.final_log = self.log()  # the room's folder goes; its log stays readable
        shutil.rmtree(self.folder, ignore_errors=True)
        return code

    def __enter__(self) -> LocalRoom:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
