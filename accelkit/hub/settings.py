"""The workshop room's settings, read from the environment the way ``make lab`` reads its own.

    HUB_PORT            the port attendees open (default 8000)
    HUB_IP              the address it listens on (default 127.0.0.1: loopback; 0.0.0.0 to open the room)
    HUB_ADMIN           the instructor's name (default "instructor"); an admin of the hub
    HUB_WORKSHOP_CODE   the code attendees type once, when they sign up (default: a random one, printed)
    HUB_ADMIN_CODE      the code the instructor signs up with (default: a random one, printed)
    HUB_DIR             the hub's state: database, cookie secret, passwords, progress (default .hub/)
    HUB_HOME_ROOT       where the attendees' home folders go (default /home)
    HUB_GROUP           the system group every attendee joins (default accelkit-room)
    HUB_CULL_IDLE_S     an idle server is stopped after this many seconds (default 3600)
    HUB_THREADS         CPU threads per attendee's kernel (OMP_NUM_THREADS; default 2)
    HUB_ALLOWED_USERS   optional room list, comma-separated: only these names may sign up
    HUB_API_PORT, HUB_PROXY_API_PORT   the hub's and the proxy's internal ports (default HUB_PORT+1, +2)
"""

from __future__ import annotations

import os
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path

from accelkit.errors import AccelkitError

REPO = Path(__file__).resolve().parents[2]  # the checkout (editable install) or site-packages (a wheel)


class HubError(AccelkitError, ValueError):
    """A workshop room setting or account operation that cannot be done: names the cause and the fix."""


def _port(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise HubError(f"{name}={raw!r} is not a port number", fix=f"set {name} to a number from 1 to 65535")
    return int(raw)


def _code(env: dict[str, str], name: str) -> tuple[str, bool]:
    raw = env.get(name, "").strip()
    if raw and len(raw) < 4:
        raise HubError(f"{name} is too short ({len(raw)} characters)", fix="use a code of 4 characters or more")
    return (raw, False) if raw else (secrets.token_urlsafe(6), True)


@dataclass(frozen=True)
class HubSettings:
    port: int = 8000
    ip: str = "127.0.0.1"
    admin: str = "instructor"
    workshop_code: str = field(default="", repr=False)
    admin_code: str = field(default="", repr=False)
    generated_codes: tuple[str, ...] = ()  # which codes were made up here (printed at start)
    state_dir: Path = Path(".hub")
    home_root: Path = Path("/home")
    group: str = "accelkit-room"
    cull_idle_s: int = 3600
    threads: int = 2
    allowed_users: tuple[str, ...] = ()
    api_port: int = 8001
    proxy_api_port: int = 8002

    @property
    def progress_dir(self) -> Path:
        """One verdict file per attendee, ``<name>.jsonl``; the room's group reads, each attendee writes its own."""
        return self.state_dir / "progress"

    @property
    def passwords_path(self) -> Path:
        return self.state_dir / "passwords.dbm"

    @property
    def url(self) -> str:
        return f"http://{'127.0.0.1' if self.ip in ('', '0.0.0.0') else self.ip}:{self.port}"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> HubSettings:
        env = dict(os.environ if env is None else env)
        port = _port(env, "HUB_PORT", 8000)
        workshop_code, gen_w = _code(env, "HUB_WORKSHOP_CODE")
        admin_code, gen_a = _code(env, "HUB_ADMIN_CODE")
        if workshop_code == admin_code:
            raise HubError("HUB_WORKSHOP_CODE and HUB_ADMIN_CODE are the same",
                           fix="give the instructor a code of their own")
        from accelkit.hub.names import check_name

        admin = env.get("HUB_ADMIN", "").strip().lower() or "instructor"
        if problem := check_name(admin):
            raise HubError(f"HUB_ADMIN={admin!r}: {problem}", fix="pick a short lower-case name such as instructor")
        allowed = tuple(n.strip().lower() for n in env.get("HUB_ALLOWED_USERS", "").split(",") if n.strip())
        for name in allowed:
            if problem := check_name(name):
                raise HubError(f"HUB_ALLOWED_USERS names {name!r}: {problem}", fix="fix the room list")
        for name in ("HUB_CULL_IDLE_S", "HUB_THREADS"):
            if env.get(name, "").strip() and not env[name].strip().isdigit():
                raise HubError(f"{name}={env[name]!r} is not a whole number", fix=f"set {name} to e.g. 2")
        return cls(
            port=port, ip=env.get("HUB_IP", "").strip() or "127.0.0.1", admin=admin,
            workshop_code=workshop_code, admin_code=admin_code,
            generated_codes=tuple(n for n, g in (("HUB_WORKSHOP_CODE", gen_w), ("HUB_ADMIN_CODE", gen_a)) if g),
            state_dir=Path(env.get("HUB_DIR", "").strip() or REPO / ".hub").resolve(),
            home_root=Path(env.get("HUB_HOME_ROOT", "").strip() or "/home").resolve(),
            group=env.get("HUB_GROUP", "").strip() or "accelkit-room",
            cull_idle_s=int(env.get("HUB_CULL_IDLE_S", "").strip() or 3600),
            threads=int(env.get("HUB_THREADS", "").strip() or 2),
            allowed_users=allowed,
            api_port=_port(env, "HUB_API_PORT", port + 1),
            proxy_api_port=_port(env, "HUB_PROXY_API_PORT", port + 2),
        )


def singleuser_command() -> list[str]:
    """The attendee's server: jupyterhub-singleuser of this very environment (the accelkit kernel's venv)."""
    return [str(Path(sys.prefix) / "bin" / "jupyterhub-singleuser")]


def proxy_command() -> list[str]:
    """configurable-http-proxy as ``make setup`` installs it (.venv/node_modules), else the one on PATH."""
    local = Path(sys.prefix) / "node_modules" / ".bin" / "configurable-http-proxy"
    return [str(local)] if local.exists() else ["configurable-http-proxy"]
