#!/usr/bin/env bash
# JupyterLab on the notebooks, as `make lab` starts it (the browser test starts it through `make lab` too).
#   JUPYTER_PORT   port to serve on (default 8888; Jupyter picks the next free one if it is taken)
#   JUPYTER_TOKEN  the access token (default: a random one, printed in the URL below)
#   JUPYTER_IP     the address to listen on (default localhost; 0.0.0.0 for a remote or container session)
#   LAB_DIR        the folder to serve (default notebooks/)
# Run as root (a workshop container), it adds --allow-root, which Jupyter otherwise demands. Any further
# arguments go to `jupyter lab` as they are (e.g. --no-browser).
set -euo pipefail
cd "$(dirname "$0")/.."
args=(--port="${JUPYTER_PORT:-8888}" --ServerApp.root_dir="${LAB_DIR:-notebooks}")
if [ -n "${JUPYTER_TOKEN:-}" ]; then args+=(--IdentityProvider.token="$JUPYTER_TOKEN"); fi
if [ -n "${JUPYTER_IP:-}" ]; then args+=(--ip="$JUPYTER_IP"); fi
if [ "$(id -u)" = 0 ]; then args+=(--allow-root); fi
exec .venv/bin/jupyter lab "${args[@]}" "$@"
