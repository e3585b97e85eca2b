"""The JupyterHub configuration of a workshop room, as one function of :class:`HubSettings`.

``jupyterhub -f accelkit/hub/jupyterhub_config.py`` (what ``make hub`` runs) calls :func:`configure` with
the settings from the environment. At start, as root, it also makes the room's group and the instructor's
account, lets the group pass through folders on the way to the environment (:func:`accounts.grant_traverse`)
and hides the solutions unless the instructor has released them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from accelkit.hub import accounts
from accelkit.hub.settings import REPO, HubSettings, proxy_command, singleuser_command

NOTEBOOKS = REPO / "notebooks"
ROOM_NOTEBOOK = Path(__file__).with_name("room.ipynb")  # the instructor's view, copied into their home
RELEASED_MARKER = "solutions-released"


def private_dir(settings: HubSettings) -> Path:
    """The hub's own files (database, cookie secret, passwords): root only."""
    return settings.state_dir / "private"


def prepare(settings: HubSettings) -> None:
    """What the room needs on this machine before the hub starts (root; idempotent)."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(settings.state_dir, 0o711)  # attendees pass through to their own progress file, list nothing
    private_dir(settings).mkdir(exist_ok=True)
    os.chmod(private_dir(settings), 0o700)
    accounts.ensure_group(settings.group)
    accounts.ensure_user(settings.admin, settings)
    accounts.progress_file(settings.admin, settings)  # makes the progress folder, readable by the instructor
    accounts.grant_traverse(settings)
    accounts.set_solutions_released((settings.state_dir / RELEASED_MARKER).exists())


def pre_spawn(settings: HubSettings, spawner: Any) -> None:
    """Before an attendee's server starts: their system user, their notebooks (first time), their verdict file."""
    name = spawner.user.name
    user = accounts.ensure_user(name, settings)
    accounts.copy_notebooks(user, NOTEBOOKS)
    if name == settings.admin and ROOM_NOTEBOOK.exists():
        room = Path(user.pw_dir) / ROOM_NOTEBOOK.name
        if not os.path.lexists(room):
            room.write_bytes(ROOM_NOTEBOOK.read_bytes())
            os.chown(room, user.pw_uid, user.pw_gid)
    accounts.progress_file(name, settings)


def configure(c: Any, settings: HubSettings) -> None:
    """Fill JupyterHub's config object ``c`` for the room."""
    from accelkit.hub.auth import WorkshopAuthenticator

    private = private_dir(settings)
    c.JupyterHub.ip = settings.ip
    c.JupyterHub.port = settings.port
    c.JupyterHub.hub_ip = "127.0.0.1"
    c.JupyterHub.hub_port = settings.api_port
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{settings.proxy_api_port}"
    c.ConfigurableHTTPProxy.command = proxy_command()
    c.JupyterHub.db_url = f"sqlite:///{private / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(private / "jupyterhub_cookie_secret")
    c.JupyterHub.pid_file = str(private / "jupyterhub.pid")
    c.JupyterHub.cleanup_servers = True  # the hub stops every attendee's server when it stops

    c.JupyterHub.authenticator_class = WorkshopAuthenticator
    c.WorkshopAuthenticator.dbm_path = str(private / "passwords.dbm")
    c.WorkshopAuthenticator.workshop_code = settings.workshop_code
    c.WorkshopAuthenticator.admin_code = settings.admin_code
    c.WorkshopAuthenticator.admin_name = settings.admin
    c.WorkshopAuthenticator.room_group = settings.group
    c.WorkshopAuthenticator.request_otp = True  # the sign-in page's third field
    c.WorkshopAuthenticator.otp_prompt = "Workshop code (first sign-in only):"
    c.WorkshopAuthenticator.check_passwords_on_startup = False
    c.Authenticator.admin_users = {settings.admin}
    if settings.allowed_users:
        c.Authenticator.allowed_users = set(settings.allowed_users)

    c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
    c.Spawner.cmd = singleuser_command()
    c.Spawner.notebook_dir = "~"
    c.Spawner.default_url = "/lab/tree/notebooks"
    c.Spawner.start_timeout = 120
    c.Spawner.http_timeout = 90
    c.LocalProcessSpawner.interrupt_timeout = 5  # a stopped or culled server gets 5 s to save, then SIGTERM
    c.LocalProcessSpawner.term_timeout = 5
    c.Spawner.pre_spawn_hook = lambda spawner: pre_spawn(settings, spawner)
    c.Spawner.environment = {
        "ACCELKIT_PROGRESS_FILE": lambda spawner: str(settings.progress_dir / f"{spawner.user.name}.jsonl"),
        "PLOTLY_RENDERER": "plotly_mimetype",
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": str(settings.threads),
    }

    c.JupyterHub.load_roles = [{
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }]
    c.JupyterHub.services = [{
        "name": "idle-culler",
        "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={settings.cull_idle_s}"],
    }]
    token = os.environ.get("HUB_API_TOKEN", "").strip()
    if token:  # scripts (the test, the benchmark, an instructor's own) drive the room through the REST API
        c.JupyterHub.services.append({"name": "room-api", "api_token": token})
        c.JupyterHub.load_roles.append({
            "name": "room-api", "services": ["room-api"],
            "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users", "access:servers",
                       "list:services", "read:services"],
        })


def load(c: Any) -> HubSettings:
    """Settings from the environment, the machine prepared, ``c`` configured; prints made-up codes."""
    settings = HubSettings.from_env()
    prepare(settings)
    configure(c, settings)
    for name in settings.generated_codes:
        value = settings.workshop_code if name == "HUB_WORKSHOP_CODE" else settings.admin_code
        print(f"accelkit room: {name} was not set; this run's code is {value}", file=sys.stderr, flush=True)
    print(f"accelkit room: {settings.url} (instructor: {settings.admin}; room group {settings.group})",
          file=sys.stderr, flush=True)
    return settings
