"""The workshop room's commands (run as root on the room's machine; ``make hub`` runs ``serve``).

    python -m accelkit.hub serve [jupyterhub args]   start the room (settings from the environment)
    python -m accelkit.hub room                      the room's progress: board and where attendees are stuck
    python -m accelkit.hub release-solutions         let every attendee apply the shipped solutions
    python -m accelkit.hub hide-solutions            hide them again (the state a new room starts in)
    python -m accelkit.hub remove-room               after the workshop: delete the attendees' accounts
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

CONFIG = Path(__file__).with_name("jupyterhub_config.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accelkit.hub", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["serve", "room", "release-solutions", "hide-solutions", "remove-room"])
    args, rest = parser.parse_known_args(argv)
    from accelkit.hub import accounts, config
    from accelkit.hub.settings import HubError, HubSettings

    try:
        if args.command == "serve":
            if os.geteuid() != 0:
                raise HubError("the room makes one system user per attendee, which needs root",
                               fix="run `make hub` as root (a workshop container or server)")
            hub = Path(sys.prefix) / "bin" / "jupyterhub"
            os.execv(hub, [str(hub), "-f", str(CONFIG), *rest])
        settings = HubSettings.from_env()
        if args.command == "room":
            from accelkit.hub import room

            df = room.load(settings.progress_dir)
            print(f"{df['attendee'].nunique()} attendee(s), {len(df)} check(s) in {settings.progress_dir}\n")
            print(room.board(df).to_string() if not df.empty else "(no checks yet)")
            print()
            print(room.stuck(df).to_string())
        elif args.command in ("release-solutions", "hide-solutions"):
            released = args.command == "release-solutions"
            marker = settings.state_dir / config.RELEASED_MARKER
            settings.state_dir.mkdir(parents=True, exist_ok=True)
            marker.touch() if released else marker.unlink(missing_ok=True)
            files = accounts.set_solutions_released(released)
            print(f"solutions {'released to every attendee' if released else 'hidden'} ({files[0]})")
        elif args.command == "remove-room":
            removed = accounts.remove_room(settings)
            print(f"removed {len(removed)} account(s) of group {settings.group}: {', '.join(removed) or '-'}")
    except HubError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
