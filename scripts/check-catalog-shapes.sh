#!/usr/bin/env bash
# Checks the deferred tool definitions and tool-search answers of every provider against the
# official Python SDKs' request types (openai, anthropic, google-genai, in the pinned virtual
# environment of check-provider-shapes.sh). Not part of CI: `tools list` shapes are checked
# there by tools-cli/tests/tools/provider_shapes.rs; this adds the search answers.
#
# Usage: scripts/check-catalog-shapes.sh
# Exit codes: 0 every shape matched, 1 a shape did not match, 2 the SDKs cannot be installed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${PROVIDER_SDKS_VENV:-$target/py-provider-sdks}"

bash "$root/scripts/check-provider-shapes.sh" --setup-only >&2

shapes="$(mktemp -d)"
trap 'rm -rf "$shapes"' EXIT
CATALOG_SHAPES_DIR="$shapes" cargo test -q -j2 -p tool-runtime --test runtime catalog:: >/dev/null
"$venv/bin/python" "$root/scripts/check_catalog_shapes.py" "$shapes"
