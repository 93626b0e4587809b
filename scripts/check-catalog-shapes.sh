#!/usr/bin/env bash
# Checks the deferred tool definitions and tool-search answers of every provider against the
# official Python SDKs' request types (openai, anthropic, google-genai from PyPI). Not part of CI:
# it needs the network once, to install the SDKs into $CARGO_TARGET_DIR/py-sdk-shapes.
#
# Usage: scripts/check-catalog-shapes.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="$target/py-sdk-shapes"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import openai, anthropic, google.genai" 2>/dev/null; then
    "$python" -m venv --clear "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check openai anthropic google-genai
fi
"$venv/bin/python" -c "import openai, anthropic, google.genai as g; print(f'openai {openai.__version__}, anthropic {anthropic.__version__}, google-genai {g.__version__}')"

shapes="$(mktemp -d)"
trap 'rm -rf "$shapes"' EXIT
CATALOG_SHAPES_DIR="$shapes" cargo test -q -j2 -p tool-runtime --test catalog >/dev/null
"$venv/bin/python" "$root/scripts/check_catalog_shapes.py" "$shapes"
