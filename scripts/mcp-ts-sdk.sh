#!/usr/bin/env bash
# The official TypeScript MCP SDK client (`@modelcontextprotocol/sdk`, npm, pinned) reading
# resources, resource templates and prompts over stdio: served by the resources fixture server
# (`tool_runtime::mcp_server`, paged one item at a time) and mounted by `tools serve`. See
# scripts/mcp_ts_sdk.mjs for the checks.
#
# Needs node and npm (the SDK is installed under $CARGO_TARGET_DIR/npm-ts); without them it says
# so and exits 0.
#
# Usage: scripts/mcp-ts-sdk.sh [TOOLS_BINARY FIXTURE_BINARY]
set -uo pipefail

SDK_VERSION="1.32.2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
dir="$target/npm-ts"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "mcp-ts-sdk: skipped: node and npm are needed to run the TypeScript MCP SDK client"
    exit 0
fi
if [ "$(node -p "require('$dir/node_modules/@modelcontextprotocol/sdk/package.json').version" 2>/dev/null)" != "$SDK_VERSION" ]; then
    mkdir -p "$dir"
    if ! npm install --silent --no-audit --no-fund --prefix "$dir" "@modelcontextprotocol/sdk@$SDK_VERSION" >/dev/null; then
        echo "mcp-ts-sdk: skipped: npm could not install @modelcontextprotocol/sdk@$SDK_VERSION"
        exit 0
    fi
fi
# The script resolves the SDK from the directory it runs in.
cp "$root/scripts/mcp_ts_sdk.mjs" "$dir/mcp_ts_sdk.mjs"

if [ -n "${2:-}" ]; then
    tools="$1"
    fixture="$2"
else
    cargo build --quiet -j2 -p tools-cli -p tool-mcp --bin tools --bin mcp-resources-server || exit 1
    tools="$target/debug/tools"
    fixture="$target/debug/mcp-resources-server"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws"
printf '{"mcpServers": {"fx": {"command": "%s"}}}\n' "$fixture" >"$work/mounts.json"
XDG_DATA_HOME="$work/data" node "$dir/mcp_ts_sdk.mjs" "$tools" "$fixture" "$work/ws" "$work/mounts.json"
