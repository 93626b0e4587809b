#!/usr/bin/env bash
# Creates the Python virtual environment the MCP client tests use: the official MCP Python SDK,
# pinned, from PyPI. The tests in tools-cli/tests/tools/python_sdk.rs look for it at
# $CARGO_TARGET_DIR/py-mcp (default: target/py-mcp) and skip with a message when it is missing.
#
# Usage: scripts/python-sdk-env.sh [VENV_DIR]
set -euo pipefail

MCP_VERSION="2.3.0"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-${CARGO_TARGET_DIR:-$root/target}/py-mcp}"
python="${PYTHON:-python3}"

if ! command -v "$python" >/dev/null 2>&1; then
    echo "python-sdk-env: $python not found; the Python SDK tests will be skipped" >&2
    exit 1
fi

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
    echo "python-sdk-env: mcp==$MCP_VERSION already in $venv"
    exit 0
fi

# A half-made environment would fail the tests instead of skipping them: remove it on failure.
if ! { "$python" -m venv --clear "$venv" &&
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION"; }; then
    rm -rf "$venv"
    echo "python-sdk-env: could not install mcp==$MCP_VERSION" >&2
    exit 1
fi
echo "python-sdk-env: mcp==$MCP_VERSION installed in $venv"
