#!/usr/bin/env bash
# Mounts the reference MCP server `@modelcontextprotocol/server-everything` (npm, pinned) into
# the `tools` binary with --mcp-config and checks what comes back through `tools list`, `call`
# and `turn`: schemas and annotations, validation and coercion, text, images, embedded resources,
# resource links, structured content and progress events, and its resources through the
# resource tools (`list_mcp_resources`, `list_mcp_resource_templates`, `read_mcp_resource`).
#
# Needs node and npm (the package is installed under $CARGO_TARGET_DIR/npm-everything); without
# them it says so and exits 0, so CI never depends on it.
#
# Usage: scripts/mcp-everything.sh
set -uo pipefail

VERSION="2026.8.31"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
dir="$target/npm-everything"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "mcp-everything: skipped: node and npm are needed to run @modelcontextprotocol/server-everything"
    exit 0
fi
server="$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
installed="$(node -p "require('$dir/node_modules/@modelcontextprotocol/server-everything/package.json').version" 2>/dev/null || true)"
if [ "$installed" != "$VERSION" ]; then
    mkdir -p "$dir"
    if ! npm install --silent --no-audit --no-fund --prefix "$dir" "@modelcontextprotocol/server-everything@$VERSION" >/dev/null; then
        echo "mcp-everything: skipped: npm could not install @modelcontextprotocol/server-everything@$VERSION"
        exit 0
    fi
fi

cargo build --quiet -j2 -p tools-cli || exit 1
tools="$target/debug/tools"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
config="$work/mcp.json"
node -e 'process.stdout.write(JSON.stringify({mcpServers: {everything: {command: "node", args: [process.argv[1], "stdio"]}}}))' "$server" >"$config"

passed=0
failed=0
# check NAME JS_CONDITION FILE: the condition sees the file's JSON as `d`.
check() {
    if node -e "const d = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')); process.exit(($2) ? 0 : 1)" "$3" 2>/dev/null; then
        passed=$((passed + 1)); echo "ok   $1"
    else
        failed=$((failed + 1)); echo "FAIL $1: $(head -c 600 "$3")"
    fi
}
call() { "$tools" call "$1" "$2" --mcp-config "$config" >"$work/out.json" 2>"$work/err.txt"; }

"$tools" list --mcp-config "$config" >"$work/list.json" 2>"$work/err.txt"
check "list: the server's tools are mounted as everything__*" \
    'd.filter(t => t.name.startsWith("everything__")).length >= 10 && d.some(t => t.name === "read")' "$work/list.json"
check "list: readOnlyHint and the title pass through" \
    'd.find(t => t.name === "everything__echo").annotations.readOnlyHint === true && d.find(t => t.name === "everything__echo").title === "Echo Tool"' "$work/list.json"
for format in openai-chat openai-responses anthropic gemini; do
    "$tools" list --format "$format" --mcp-config "$config" >"$work/list-$format.json" 2>"$work/err.txt"
    check "list --format $format: every schema lowers" 'Array.isArray(d) && d.length > 10' "$work/list-$format.json"
done

call everything__echo '{"message": "hello"}'
check "call echo" 'd.output === "Echo: hello" && !d.is_error && d.metadata.mcp_server === "everything"' "$work/out.json"
call everything__get-sum '{"a": 2, "b": "3"}'
check "call get-sum: \"3\" coerced to a number" 'd.output === "The sum of 2 and 3 is 5."' "$work/out.json"
call everything__get-sum '{"a": 2}'
check "call get-sum without b: our validation error" 'd.is_error && d.output.includes("/b: missing required property")' "$work/out.json"
call everything__get-tiny-image '{}'
check "call get-tiny-image: text, image, text" 'd.content.map(c => c.type).join() === "text,image,text" && d.content[1].mime_type === "image/png"' "$work/out.json"
call everything__get-resource-reference '{"resourceType": "Text", "resourceId": 1}'
check "call get-resource-reference: the embedded resource's text, original kept" 'd.output.includes("[resource: demo://resource/") && d.metadata.mcp_content.some(c => c.type === "resource")' "$work/out.json"
call everything__get-resource-links '{"count": 2}'
check "call get-resource-links: every link" '(d.output.match(/\[resource link: /g) || []).length === 2' "$work/out.json"
call everything__get-structured-content '{"location": "Chicago"}'
check "call get-structured-content" 'd.output.includes("temperature")' "$work/out.json"

call list_mcp_resources '{"server": "everything"}'
check "call list_mcp_resources: its resources, each with its server" 'JSON.parse(d.output).resources.length > 0 && JSON.parse(d.output).resources.every(r => r.server === "everything")' "$work/out.json"
call list_mcp_resource_templates '{}'
check "call list_mcp_resource_templates: its templates" 'JSON.parse(d.output).resourceTemplates.some(t => t.uriTemplate === "demo://resource/dynamic/text/{resourceId}")' "$work/out.json"
call read_mcp_resource '{"server": "everything", "uri": "demo://resource/dynamic/text/1"}'
check "call read_mcp_resource: a text resource" 'd.output.startsWith("[resource: demo://resource/dynamic/text/1]\nResource 1:")' "$work/out.json"
call read_mcp_resource '{"server": "everything", "uri": "demo://resource/dynamic/blob/2"}'
check "call read_mcp_resource: a blob is one line, the original kept" 'd.output.startsWith("[resource: demo://resource/dynamic/blob/2, text/plain data of") && d.metadata.mcp_content[0].resource.blob.length > 0' "$work/out.json"

echo '{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "everything__trigger-long-running-operation", "input": {"duration": 2, "steps": 4}}]}' |
    "$tools" turn --format anthropic --events --mcp-config "$config" >"$work/turn.json" 2>"$work/events.txt"
check "turn: trigger-long-running-operation completes" 'd[0].content[0].content.startsWith("Long running operation completed")' "$work/turn.json"
node -e 'const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse); process.stdout.write(JSON.stringify(lines.filter(e => e.type === "progress").map(e => e.update.progress)))' "$work/events.txt" >"$work/progress.json"
check "turn --events: the server's progress notifications are progress events" 'JSON.stringify(d) === "[1,2,3,4]"' "$work/progress.json"

echo "mcp-everything: @modelcontextprotocol/server-everything@$VERSION"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
