#!/usr/bin/env bash
# Calls per second of the official TypeScript MCP SDK client (`@modelcontextprotocol/sdk`, npm,
# pinned) over Streamable HTTP, with 1, 8 and 32 clients at once: against `tools serve --http`
# (calling `ls` on a workspace of one file) and against the reference server
# `@modelcontextprotocol/server-everything` in its streamable HTTP mode (calling `echo`).
#
# Needs node and npm (the packages are installed under $CARGO_TARGET_DIR/npm-bench); without
# them it says so and exits 0. Traffic stays on 127.0.0.1.
#
# Usage: scripts/mcp-http-bench.sh [SECS_PER_RUN] [TOOLS_BINARY]
set -uo pipefail

SDK_VERSION="1.32.2"
EVERYTHING_VERSION="2026.8.31"
secs="${1:-5}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
dir="$target/npm-bench"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "mcp-http-bench: skipped: node and npm are needed to run the TypeScript MCP SDK client"
    exit 0
fi
version() { node -p "require('$dir/node_modules/$1/package.json').version" 2>/dev/null || true; }
if [ "$(version @modelcontextprotocol/sdk)" != "$SDK_VERSION" ] ||
    [ "$(version @modelcontextprotocol/server-everything)" != "$EVERYTHING_VERSION" ]; then
    mkdir -p "$dir"
    if ! npm install --silent --no-audit --no-fund --prefix "$dir" \
        "@modelcontextprotocol/sdk@$SDK_VERSION" "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >/dev/null; then
        echo "mcp-http-bench: skipped: npm could not install the MCP SDK packages"
        exit 0
    fi
fi
# The bench script resolves the SDK from the directory it runs in.
cp "$root/scripts/mcp_http_bench.mjs" "$dir/mcp_http_bench.mjs"

if [ -n "${2:-}" ]; then
    tools="$2"
else
    cargo build --quiet --release -j2 -p tools-cli || exit 1
    tools="$target/release/tools"
fi
work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/ws"
echo "hello" >"$work/ws/a.txt"

# A free port on 127.0.0.1, from the kernel.
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

"$tools" serve --root "$work/ws" --http 127.0.0.1:0 >"$work/tools.out" 2>"$work/tools.err" &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$work/tools.out" 2>/dev/null && break; sleep 0.1; done
tools_url="$(sed -n 's/^tools serve: listening on //p' "$work/tools.out")"
if [ -z "$tools_url" ]; then
    echo "mcp-http-bench: tools serve did not start: $(cat "$work/tools.err")"
    exit 1
fi

port="$(free_port)"
PORT="$port" node "$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp \
    >"$work/everything.out" 2>"$work/everything.err" &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on port" "$work/everything.err" 2>/dev/null && break; sleep 0.1; done

echo "tools serve --http ($tools_url), tool ls, ${secs}s per run:"
node "$dir/mcp_http_bench.mjs" "$tools_url" ls '{}' "$secs" 1 8 32 || exit 1
echo "server-everything streamableHttp (http://127.0.0.1:$port/mcp), tool echo, ${secs}s per run:"
node "$dir/mcp_http_bench.mjs" "http://127.0.0.1:$port/mcp" echo '{"message":"hi"}' "$secs" 1 8 32 || exit 1
