#!/usr/bin/env bash
# Install accelkit and its tested pins (constraints.txt) into .venv: what `make setup` runs when the pins change.
#
#     scripts/install_python.sh [EXTRAS]        # EXTRAS defaults to "dev"; e.g. "dev,peers"
#
# 1. PyTorch with pip, from the local wheel the workshop machines carry (pip's own configuration points at it;
#    uv does not look there and would fetch a multi-GB CUDA build), then its bytecode compiled on every core
#    (pip compiles one file at a time: most of the minute it spent here).
# 2. Everything else with uv (from PyPI, the versions constraints.txt pins), which installs and compiles in
#    parallel: under a minute where pip took over two. torch is already there and satisfies the pin, so uv keeps
#    it. Where uv cannot be installed or fails, pip does the same install (slower, same result).
# The bytecode is compiled here because these machines set PYTHONDONTWRITEBYTECODE: nothing would cache it later,
# and every new Python process (each notebook kernel, each subprocess of the tests) would compile torch again.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS=${1:-dev}
PY=.venv/bin/python
PIP=("$PY" -m pip install -q --disable-pip-version-check)
TORCH=$(grep -E '^torch==' constraints.txt)

"${PIP[@]}" --no-compile -c constraints.txt "$TORCH"
# a few of torch's test helpers are written for newer Pythons and do not compile: pip skips them too
"$PY" -m compileall -q -j 0 "$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/torch" \
    >/dev/null || true
UV_PIN=$(grep -E '^uv==' constraints.txt || echo uv)
if "${PIP[@]}" "$UV_PIN" && .venv/bin/uv pip install -q --compile-bytecode --python "$PY" -c constraints.txt \
        -e ".[$EXTRAS]"; then
    exit 0
fi
echo "install_python: uv did not install the packages; installing them with pip instead" >&2
"${PIP[@]}" -c constraints.txt -e ".[$EXTRAS]"
