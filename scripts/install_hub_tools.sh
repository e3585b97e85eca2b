#!/usr/bin/env bash
# Install what the workshop room (make hub, tests/test_hub.py) needs besides Python packages, if missing:
#   configurable-http-proxy (npm, into .venv/node_modules: JupyterHub's proxy; node and npm from apt if absent)
#   setfacl (Debian's `acl`: lets the room's group pass through a closed folder such as /root, see README)
#
#     scripts/install_hub_tools.sh
#
# Idempotent: does nothing when both are there. Installing from apt needs root (no sudo is used); without root
# it says what is missing and goes on (only `make hub` and its test need these, and they run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
CHP_VERSION=5.3.0
CHP=.venv/node_modules/.bin/configurable-http-proxy

apt_install() {
    if [ "$(id -u)" -ne 0 ]; then  # only the room needs them, and the room runs as root: not fatal here
        echo "install_hub_tools: $* missing (only make hub needs it); as root: apt-get install -y $*" >&2
        return 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "$@" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$@" >/dev/null; }
}

if ! command -v setfacl >/dev/null 2>&1; then
    echo "install_hub_tools: setfacl not found; installing Debian's acl"
    apt_install acl || true
fi
if [ ! -x "$CHP" ]; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "install_hub_tools: npm not found; installing Debian's nodejs and npm"
        apt_install nodejs npm || exit 0
    fi
    echo "install_hub_tools: configurable-http-proxy@$CHP_VERSION into .venv/node_modules"
    npm install --prefix .venv --no-save --no-audit --no-fund --loglevel=error "configurable-http-proxy@$CHP_VERSION"
fi
