"""Which names an attendee may sign up with: the same names become system users and home folders."""

from __future__ import annotations

import re

NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")  # what useradd accepts, made strict: no dots, slashes, spaces
RESERVED = frozenset({"root", "admin", "hub", "user", "users", "jupyter", "jupyterhub", "nobody", "daemon"})


def check_name(name: str) -> str | None:
    """Why ``name`` cannot be an attendee's name (path-like, odd, reserved), or None when it can."""
    if not name:
        return "the name is empty"
    if "/" in name or "\\" in name or name.startswith(".") or ".." in name:
        return "a name cannot look like a path (no '/', '\\' or '..')"
    if len(name) > 32:
        return f"the name is {len(name)} characters long; 32 at most"
    if not NAME.fullmatch(name):
        return "use lower-case letters, digits, '-' and '_', starting with a letter"
    if name in RESERVED:
        return f"{name!r} is reserved on this machine"
    return None
