"""Self sign-up for a workshop room: FirstUseAuthenticator (a name and a password chosen at the first
sign-in, stored as a bcrypt hash) behind a workshop code that only the people in the room know.

The sign-in page gets a third field, "Workshop code", through JupyterHub's one-time-code field
(``request_otp``): it is needed once, when a name is first claimed; later sign-ins need only the password.
The instructor (``HUB_ADMIN``) claims their name with the instructor's code instead. Every refusal says why.
"""

from __future__ import annotations

import dbm
import hmac
from typing import Any

from firstuseauthenticator import FirstUseAuthenticator
from traitlets import Unicode

from accelkit.hub.accounts import check_name, in_group, system_user_exists


class WorkshopAuthenticator(FirstUseAuthenticator):
    """First use claims a name, with the workshop code; the hub's own user creation makes the system user."""

    workshop_code = Unicode("", config=True, help="the code an attendee types once, to sign up")
    admin_code = Unicode("", config=True, help="the code the instructor signs up with")
    admin_name = Unicode("instructor", config=True, help="the instructor's name")
    room_group = Unicode("accelkit-room", config=True, help="the system group of the room's attendees")

    def _has_password(self, name: str) -> bool:
        with dbm.open(self.dbm_path, "c", 0o600) as db:
            return db.get(name.encode("utf8")) is not None

    @staticmethod
    def _refuse(handler: Any, message: str) -> None:
        handler.custom_login_error = message
        return None

    async def authenticate(self, handler: Any, data: dict[str, str]) -> str | None:
        name = self.normalize_username(data.get("username", ""))
        if problem := check_name(name):
            return self._refuse(handler, f"Cannot use the name {name[:40]!r}: {problem}.")
        if self._has_password(name):  # a returning attendee: the password alone decides
            user = await super().authenticate(handler, data)
            if user is None and not getattr(handler, "custom_login_error", ""):
                return self._refuse(handler, f"The name {name!r} is taken. If it is yours, check your password; "
                                             "if not, pick another name.")
            return user
        code = data.get("otp", "").strip()
        expected = self.admin_code if name == self.admin_name else self.workshop_code
        if not expected or not hmac.compare_digest(code.encode(), expected.encode()):
            who = "the instructor's code" if name == self.admin_name else "the workshop code"
            return self._refuse(handler, f"Wrong or missing workshop code: signing up as {name!r} needs {who}. "
                                         "Ask the instructor for it (later sign-ins need only your password).")
        if self.allowed_users and name not in self.allowed_users and name != self.admin_name:
            return self._refuse(handler, f"{name!r} is not on this room's list: use the name the instructor gave you.")
        if system_user_exists(name) and not in_group(name, self.room_group):
            return self._refuse(handler, f"The name {name!r} is taken on this machine: pick another name.")
        return await super().authenticate(handler, data)  # stores the password's hash: the name is claimed
