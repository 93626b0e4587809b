#!/usr/bin/env bash
# Checks the tool definitions `tools list --format F` prints, for every provider format and
# definition option, against the official SDKs' own types: `openai`, `anthropic` and
# `google-genai` (and `mcp` for the MCP format), pinned, from PyPI, in a virtual environment at
# $CARGO_TARGET_DIR/py-provider-sdks (default: target/py-provider-sdks).
#
# Usage: scripts/check-provider-shapes.sh [--setup-only] [TOOLS_BINARY] [-- CHECKER_ARGS...]
#   TOOLS_BINARY defaults to $CARGO_TARGET_DIR/debug/tools (built with `cargo build -p tools-cli`).
#   CHECKER_ARGS go to check_provider_shapes.py, e.g. `--flags=--strict` to check every
#   format once more with extra `tools list` flags; see its --help.
# Exit codes: 0 every shape matched, 1 a shape did not match, 2 the environment cannot be made
# (no python3, no venv module, PyPI unreachable): the caller may skip.
set -euo pipefail

OPENAI_VERSION="3.57.0"
ANTHROPIC_VERSION="2.13.0"
GOOGLE_GENAI_VERSION="3.6.1"
MCP_VERSION="2.3.0"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${PROVIDER_SDKS_VENV:-$target/py-provider-sdks}"
python="${PYTHON:-python3}"

setup_only=0
if [ "${1:-}" = "--setup-only" ]; then
    setup_only=1
    shift
fi
tools="$target/debug/tools"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    tools="$1"
    shift
fi
if [ "${1:-}" = "--" ]; then
    shift
fi

packages=(
    "openai==$OPENAI_VERSION"
    "anthropic==$ANTHROPIC_VERSION"
    "google-genai==$GOOGLE_GENAI_VERSION"
    "mcp==$MCP_VERSION"
)

if ! command -v "$python" >/dev/null 2>&1; then
    echo "check-provider-shapes: $python not found" >&2
    exit 2
fi

installed() {
    "$venv/bin/python" - "${packages[@]}" <<'PY' 2>/dev/null
import importlib.metadata as m, sys
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    if m.version(name) != version:
        sys.exit(1)
PY
}

if ! { [ -x "$venv/bin/python" ] && installed; }; then
    # A half-made environment would fail the check instead of skipping it: remove it on failure.
    if ! { "$python" -m venv --clear "$venv" &&
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}"; }; then
        rm -rf "$venv"
        echo "check-provider-shapes: could not install ${packages[*]} from PyPI" >&2
        exit 2
    fi
fi

if [ "$setup_only" = 1 ]; then
    echo "check-provider-shapes: SDKs ready in $venv"
    exit 0
fi
if [ ! -x "$tools" ]; then
    echo "check-provider-shapes: no tools binary at $tools; build it with \`cargo build -p tools-cli\` or pass its path" >&2
    exit 1
fi
exec "$venv/bin/python" "$root/scripts/check_provider_shapes.py" "$tools" "$@"
