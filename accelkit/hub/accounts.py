"""System accounts of the workshop room: one per attendee, made by the hub's pre-spawn hook.

Every attendee is a system user in the room's group, with a home folder only they can open (0700), their
own copy of ``notebooks/`` made on their first start and never overwritten, and a verdict file in the hub's
progress folder that they append to and the instructor reads. Everything here runs as root, in the hub.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from accelkit.hub.names import check_name
from accelkit.hub.settings import HubError, HubSettings


def in_group(name: str, group: str) -> bool:
    try:
        return name in grp.getgrnam(group).gr_mem
    except KeyError:
        return False


def system_user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def name_taken_on_this_machine(name: str, settings: HubSettings) -> bool:
    """A system account of that name exists and is not one of this room's attendees (root, a service...)."""
    return system_user_exists(name) and not in_group(name, settings.group)


def _run(*cmd: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise HubError(f"`{' '.join(cmd)}` failed: {done.stderr.strip() or done.stdout.strip()}",
                       fix="the hub must run as root (a workshop container), with useradd/groupadd available")


def ensure_group(group: str) -> int:
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        _run("groupadd", group)
        return grp.getgrnam(group).gr_gid


def ensure_user(name: str, settings: HubSettings) -> pwd.struct_passwd:
    """The attendee's system user, created on first use (a home only they can open, in the room's group)."""
    if problem := check_name(name):
        raise HubError(f"cannot make a system user {name!r}: {problem}", fix="sign up with another name")
    if name_taken_on_this_machine(name, settings):
        raise HubError(f"{name!r} is already a system account on this machine, not one of this room's",
                       fix="sign up with another name")
    ensure_group(settings.group)
    if not system_user_exists(name):
        settings.home_root.mkdir(parents=True, exist_ok=True)
        _run("useradd", "--create-home", "--home-dir", str(settings.home_root / name), "--shell", "/bin/bash",
             "--groups", settings.group, "--comment", "accelkit workshop attendee", name)
    user = pwd.getpwnam(name)
    os.chmod(user.pw_dir, 0o700)  # other attendees cannot list, read or write it
    return user


def copy_notebooks(user: pwd.struct_passwd, source: Path) -> Path:
    """``~/notebooks``: a copy of ``source`` made the first time; never touched again once it exists."""
    dest = Path(user.pw_dir) / "notebooks"
    if os.path.lexists(dest):
        return dest
    staging = Path(user.pw_dir) / ".notebooks-copying"
    if os.path.lexists(staging):  # a copy cut short earlier, or anything the user put there
        shutil.rmtree(staging) if staging.is_dir() and not staging.is_symlink() else staging.unlink()
    shutil.copytree(source, staging, symlinks=False,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc"))
    for path in [staging, *staging.rglob("*")]:
        os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
    staging.rename(dest)  # whole or not at all
    return dest


def progress_file(name: str, settings: HubSettings) -> Path:
    """The attendee's verdict file: theirs to append to, the instructor's to read, nobody else's."""
    admin_gid = pwd.getpwnam(settings.admin).pw_gid if system_user_exists(settings.admin) else 0
    folder = settings.progress_dir
    folder.mkdir(parents=True, exist_ok=True)
    os.chown(folder, 0, admin_gid)
    os.chmod(folder, 0o751)  # the instructor lists it; attendees reach their own file by its name only
    path = folder / f"{name}.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o640)
    try:
        os.fchown(fd, pwd.getpwnam(name).pw_uid, admin_gid)
        os.fchmod(fd, 0o640)
    finally:
        os.close(fd)
    return path


# ---- letting attendees reach the environment --------------------------------------------------------
def needed_paths() -> list[Path]:
    """What an attendee's server opens: the interpreter (through its real path), the venv, accelkit."""
    import accelkit

    return [Path(os.path.realpath(sys.executable)), Path(sys.prefix), Path(accelkit.__file__).parent]


def closed_dirs(paths: Iterable[Path]) -> list[Path]:
    """Folders on the way to ``paths`` that other users cannot pass through (e.g. /root, mode 0700)."""
    found: list[Path] = []
    for path in paths:
        for folder in reversed(Path(path).resolve().parents):
            if not os.stat(folder).st_mode & stat.S_IXOTH and folder not in found:
                found.append(folder)
    return found


def grant_traverse(settings: HubSettings) -> list[Path]:
    """Let the room's group pass through (x only: no listing, no reading) each closed folder on the way to
    the environment, with a POSIX ACL; remembered in HUB_DIR so :func:`revoke_traverse` undoes it."""
    folders = closed_dirs(needed_paths() + [settings.home_root, settings.state_dir])
    if not folders:
        return []
    if shutil.which("setfacl") is None:
        raise HubError(f"attendees cannot reach the environment through {', '.join(map(str, folders))} and "
                       "setfacl is missing", fix="apt-get install acl (make setup does it)")
    ensure_group(settings.group)
    record = settings.state_dir / "traverse-grants.txt"
    record.parent.mkdir(parents=True, exist_ok=True)
    done = set(record.read_text().split("\n")) if record.exists() else set()
    for folder in folders:
        _run("setfacl", "-m", f"g:{settings.group}:x", str(folder))
        done.add(str(folder))
    record.write_text("\n".join(sorted(d for d in done if d)) + "\n")
    return folders


def revoke_traverse(settings: HubSettings) -> None:
    record = settings.state_dir / "traverse-grants.txt"
    if not record.exists() or shutil.which("setfacl") is None:
        return
    for folder in filter(None, record.read_text().split("\n")):
        if os.path.isdir(folder):
            subprocess.run(["setfacl", "-x", f"g:{settings.group}", folder], capture_output=True)
            acl = subprocess.run(["getfacl", "-cp", folder], capture_output=True, text=True).stdout
            if not re.search(r"^(user|group):[^:]+:", acl, re.MULTILINE):  # no named entry left: drop the mask
                subprocess.run(["setfacl", "-b", folder], capture_output=True)
    record.unlink()


# ---- after the workshop ------------------------------------------------------------------------------
def room_members(settings: HubSettings) -> list[str]:
    try:
        return sorted(grp.getgrnam(settings.group).gr_mem)
    except KeyError:
        return []


def remove_user(name: str, settings: HubSettings) -> None:
    """Stop ``name``'s processes and delete the system user, its home and its verdicts (room members only)."""
    if not in_group(name, settings.group):
        raise HubError(f"{name!r} is not an attendee of this room (group {settings.group})",
                       fix="remove only the room's own accounts")
    import psutil

    uid = pwd.getpwnam(name).pw_uid
    procs = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid]
    for p in procs:
        p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=5)
    for p in alive:
        p.kill()
    subprocess.run(["userdel", "--remove", name], capture_output=True)  # warns about a missing mail spool
    (settings.progress_dir / f"{name}.jsonl").unlink(missing_ok=True)


def remove_room(settings: HubSettings) -> list[str]:
    """Every attendee of the room removed, the group deleted, the folder grants revoked."""
    members = room_members(settings)
    for name in members:
        remove_user(name, settings)
    revoke_traverse(settings)
    subprocess.run(["groupdel", settings.group], capture_output=True)
    return members


# ---- the solutions --------------------------------------------------------------------------------------
def solution_files() -> list[Path]:
    """accelkit's solutions module and its compiled copies (which Python would read in its place)."""
    import importlib.util

    spec = importlib.util.find_spec("accelkit.teach.solutions")
    assert spec is not None and spec.origin is not None
    source = Path(spec.origin)
    return [source, *sorted((source.parent / "__pycache__").glob(f"{source.stem}.*.pyc"))]


def set_solutions_released(released: bool) -> list[Path]:
    """Hide the solutions from every user but root (0600), or release them to all (0644)."""
    files = solution_files()
    for path in files:
        os.chmod(path, 0o644 if released else 0o600)
    return files


def solutions_released() -> bool:
    return bool(solution_files()[0].stat().st_mode & stat.S_IROTH)
