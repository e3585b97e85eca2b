#!/usr/bin/env bash
# Install Debian's chromium for the browser test (tests/test_browser.py), if it is not there yet.
#
#     scripts/install_chromium.sh
#
# Idempotent: exits 0 at once when /usr/bin/chromium exists. Otherwise installs the `chromium`
# package with apt-get (needs root; no sudo is used). Playwright's own browser download
# (`playwright install`) does not work on the workshop machines, so the test drives this one.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
    echo "install_chromium: $CHROMIUM already present ($("$CHROMIUM" --version 2>/dev/null || echo 'version unknown')); nothing to do"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install_chromium: $CHROMIUM is missing and installing it needs root; run: apt-get install -y chromium" >&2
    exit 1
fi

echo "install_chromium: $CHROMIUM not found; installing Debian's chromium with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
if [ ! -x "$CHROMIUM" ]; then
    echo "install_chromium: apt-get finished but $CHROMIUM is still missing" >&2
    exit 1
fi
echo "install_chromium: installed $("$CHROMIUM" --version 2>/dev/null || echo chromium)"
