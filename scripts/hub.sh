#!/usr/bin/env bash
# The workshop room, as `make hub` starts it: JupyterHub with accelkit/hub/jupyterhub_config.py.
# Settings come from the environment (HUB_PORT, HUB_IP, HUB_ADMIN, HUB_WORKSHOP_CODE, HUB_ADMIN_CODE, ...;
# accelkit/hub/settings.py and the README's "A workshop room" list them all). Runs as root: the hub makes
# one system user per attendee. Further arguments go to `jupyterhub` as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
    echo "make hub: the room makes one system user per attendee, which needs root (a workshop container or server)" >&2
    exit 1
fi
exec .venv/bin/jupyterhub -f accelkit/hub/jupyterhub_config.py "$@"
