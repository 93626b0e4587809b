#!/usr/bin/env bash
# Runs four coding agents (Codex CLI, Claude Code, Gemini CLI, opencode) against `tools serve` as
# their MCP server, over stdio and over Streamable HTTP, each driven by a scripted model
# (scripts/agents/scripted_model.py, on 127.0.0.1) instead of an LLM, and prints a table of what
# reached the model. See scripts/agents/README.md.
#
# Environment:
#   AGENTS_DIR   where the agents are installed with npm and runs are kept (default /tmp/agents)
#   TOOLS_BIN    the `tools` binary (default $AGENTS_DIR/tools, else target/debug/tools)
#   AGENTS       which agents to run (default "codex claude gemini opencode")
#   TRANSPORTS   which transports (default "stdio http")
#   RUN_TIMEOUT  seconds each agent run may take before it is killed (default 180)
#   CODEX_TOOLS_APPROVAL   codex's `default_tools_approval_mode` for the server (default
#                `approve`; empty leaves it out, as a fresh codex config does)
#   MCP_TEE=1    over stdio, put scripts/agents/stdio_tee.py between agent and server and keep
#                every JSON-RPC line in the run's mcp.log
#   CODEX_PKG, CLAUDE_PKG, GEMINI_PKG, OPENCODE_PKG   npm package specs (defaults: the versions
#                the README's table was made with; `name@latest` for the newest)
#
# Exits 0 with a "skipped" line when node, npm, python3 or the tools binary is missing; an agent
# whose package cannot be installed is skipped with a line saying so. Exits 1 when a run's
# step failed, 0 otherwise.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
AGENTS_DIR="${AGENTS_DIR:-/tmp/agents}"
AGENTS="${AGENTS:-codex claude gemini opencode}"
TRANSPORTS="${TRANSPORTS:-stdio http}"
RUN_TIMEOUT="${RUN_TIMEOUT:-180}"
CODEX_PKG="${CODEX_PKG:-@openai/codex@0.171.0}"
CLAUDE_PKG="${CLAUDE_PKG:-@anthropic-ai/claude-code@2.1.332}"
GEMINI_PKG="${GEMINI_PKG:-@google/gemini-cli@0.61.0}"
OPENCODE_PKG="${OPENCODE_PKG:-opencode-ai@1.18.33}"
CODEX_TOOLS_APPROVAL="${CODEX_TOOLS_APPROVAL-approve}"
PROMPT="Run the scripted steps."

say() { printf 'agents: %s\n' "$*" >&2; }

if ! command -v python3 >/dev/null 2>&1; then
    echo "agents: skipped: python3 is needed for the scripted model"
    exit 0
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "agents: skipped: node and npm are needed to install and run the agents"
    exit 0
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
    echo "agents: skipped: node $(node --version) is older than the agents need (20)"
    exit 0
fi
TOOLS_BIN="${TOOLS_BIN:-}"
if [ -z "$TOOLS_BIN" ]; then
    if [ -x "$AGENTS_DIR/tools" ]; then TOOLS_BIN="$AGENTS_DIR/tools"; else TOOLS_BIN="$repo/target/debug/tools"; fi
fi
if [ ! -x "$TOOLS_BIN" ]; then
    echo "agents: skipped: no tools binary at $TOOLS_BIN (set TOOLS_BIN, or build it: cargo build -p tools-cli --bin tools)"
    exit 0
fi
# The agents start the stdio server from directories of their own: a relative path would name
# no binary there, and every stdio run would see no tools.
TOOLS_BIN="$(cd "$(dirname "$TOOLS_BIN")" && pwd)/$(basename "$TOOLS_BIN")"

mkdir -p "$AGENTS_DIR"
AGENTS_DIR="$(cd "$AGENTS_DIR" && pwd)"
# The installed version of an npm package, or nothing.
installed() { node -p "require('$AGENTS_DIR/node_modules/$1/package.json').version" 2>/dev/null; }
pkg_name() { local s="$1" rest; if [[ "$s" == @* ]]; then rest="${s:1}"; echo "@${rest%%@*}"; else echo "${s%%@*}"; fi; }
pkg_version() { local s="$1" n; n="$(pkg_name "$s")"; s="${s#"$n"}"; echo "${s#@}"; }
# Installs SPEC into $AGENTS_DIR unless that exact version is there; prints nothing on success.
ensure() {
    local spec="$1" name want have
    name="$(pkg_name "$spec")"
    want="$(pkg_version "$spec")"
    have="$(installed "$name")"
    if [ -n "$have" ] && { [ "$want" = "$have" ] || [ -z "$want" ]; }; then return 0; fi
    say "installing $spec into $AGENTS_DIR"
    npm install --silent --no-audit --no-fund --prefix "$AGENTS_DIR" "$spec" >"$AGENTS_DIR/npm-$$.log" 2>&1 || return 1
    have="$(installed "$name")"
    # An exact version must be the one installed; a tag (latest) or a range takes what came.
    if [[ "$want" =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]; then [ "$have" = "$want" ]; else [ -n "$have" ]; fi
}
bin_of() { echo "$AGENTS_DIR/node_modules/.bin/$1"; }

stamp="$(date +%Y%m%dT%H%M%S)"
runs="$AGENTS_DIR/work/$stamp"
mkdir -p "$runs"
results="$runs/results.md"
failed=0
header="| agent | version | transport | tools offered | a read | g read 3000 lines | g2 read 160 KB | b bash 3000 lines | b2 bash 5 MB | c grep | d refused write | e write+read | h background bash | k code mode script | f final | leftover processes | wall |"
printf '%s\n|%s\n' "$header" "$(printf '%s' "$header" | sed 's/[^|]//g; s/|/---|/g; s/^---|//')" >"$results"

# Starts the scripted model for run directory $1; sets MODEL_PID, MODEL_PORT.
start_model() {
    python3 "$here/scripted_model.py" --log "$1/model.jsonl" --port-file "$1/model.port" >"$1/model.out" 2>&1 &
    MODEL_PID=$!
    for _ in $(seq 1 50); do [ -s "$1/model.port" ] && break; sleep 0.1; done
    MODEL_PORT="$(cat "$1/model.port" 2>/dev/null)"
}
# Starts `tools serve --http` for run directory $1; sets HTTP_PID, MCP_URL (and TEE_PID).
start_http() {
    "$TOOLS_BIN" serve --http 127.0.0.1:0 --root "$1/ws" --no-settings --code-mode >"$1/serve.out" 2>"$1/serve.err" &
    HTTP_PID=$!
    MCP_URL=""
    for _ in $(seq 1 100); do
        MCP_URL="$(grep -o 'http://[^ ]*/mcp' "$1/serve.out" 2>/dev/null | head -1)"
        [ -n "$MCP_URL" ] && break
        sleep 0.1
    done
    TEE_PID=""
    if [ -n "$MCP_URL" ] && [ "${MCP_TEE:-}" = 1 ]; then
        python3 "$here/http_tee.py" --upstream "${MCP_URL%/mcp}" --log "$1/mcp-http.log" \
            --port-file "$1/tee.port" >/dev/null 2>"$1/tee.err" &
        TEE_PID=$!
        for _ in $(seq 1 50); do [ -s "$1/tee.port" ] && break; sleep 0.1; done
        MCP_URL="http://127.0.0.1:$(cat "$1/tee.port")/mcp"
    fi
}
# The stdio server command for run directory $1, one word a line.
stdio_argv() {
    if [ "${MCP_TEE:-}" = 1 ]; then printf '%s\n' python3 "$here/stdio_tee.py" "$1/mcp.log" --; fi
    printf '%s\n' "$TOOLS_BIN" serve --root "$1/ws" --no-settings --code-mode
}
json_array() { python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().splitlines()))'; }
toml_array() { json_array; }  # a JSON array of strings is a TOML array

setup_codex() {  # dir transport
    local d="$1" argv
    mkdir -p "$d/home"
    {
        echo 'model = "scripted"'
        echo 'model_provider = "local"'
        echo '[model_providers.local]'
        echo 'name = "local"'
        echo "base_url = \"http://127.0.0.1:$MODEL_PORT/v1\""
        echo 'wire_api = "responses"'
        echo 'env_key = "LOCAL_MODEL_KEY"'
        echo '[mcp_servers.tools]'
        if [ "$2" = stdio ]; then
            argv="$(stdio_argv "$d" | toml_array)"
            echo "command = $(echo "$argv" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[0]))')"
            echo "args = $(echo "$argv" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[1:]))')"
        else
            echo "url = \"$MCP_URL\""
        fi
        # codex exec runs with approval policy `never`, and asks approval for every MCP tool
        # not annotated read-only; without this line bash and write are refused (README).
        if [ -n "$CODEX_TOOLS_APPROVAL" ]; then
            echo "default_tools_approval_mode = \"$CODEX_TOOLS_APPROVAL\""
        fi
    } >"$d/home/config.toml"
    AGENT_CMD=(env HOME="$d/home" CODEX_HOME="$d/home" LOCAL_MODEL_KEY=dummy
        "$(bin_of codex)" exec --skip-git-repo-check "$PROMPT")
}

setup_claude() {
    local d="$1" entry
    mkdir -p "$d/home/.claude"
    if [ "$2" = stdio ]; then
        entry="$(stdio_argv "$d" | python3 -c 'import json,sys; a=sys.stdin.read().splitlines(); print(json.dumps({"type":"stdio","command":a[0],"args":a[1:]}))')"
    else
        entry="{\"type\": \"http\", \"url\": \"$MCP_URL\"}"
    fi
    echo "{\"mcpServers\": {\"tools\": $entry}}" >"$d/mcp.json"
    AGENT_CMD=(env HOME="$d/home" CLAUDE_CONFIG_DIR="$d/home/.claude"
        ANTHROPIC_BASE_URL="http://127.0.0.1:$MODEL_PORT" ANTHROPIC_API_KEY=dummy
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
        "$(bin_of claude)" -p "$PROMPT" --mcp-config "$d/mcp.json" --strict-mcp-config
        --allowedTools "mcp__tools__*" --output-format text)
}

setup_gemini() {
    local d="$1" entry
    mkdir -p "$d/home/.gemini"
    if [ "$2" = stdio ]; then
        entry="$(stdio_argv "$d" | python3 -c 'import json,sys; a=sys.stdin.read().splitlines(); print(json.dumps({"command":a[0],"args":a[1:]}))')"
    else
        entry="{\"httpUrl\": \"$MCP_URL\"}"
    fi
    cat >"$d/home/.gemini/settings.json" <<EOF
{"security": {"auth": {"selectedType": "gemini-api-key"}},
 "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},
 "mcpServers": {"tools": $entry}}
EOF
    AGENT_CMD=(env HOME="$d/home" GEMINI_API_KEY=dummy GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$MODEL_PORT"
        "$(bin_of gemini)" -p "$PROMPT" --yolo --skip-trust -m gemini-2.5-flash)
}

setup_opencode() {
    local d="$1" entry
    if [ "$2" = stdio ]; then
        entry="$(stdio_argv "$d" | python3 -c 'import json,sys; a=sys.stdin.read().splitlines(); print(json.dumps({"type":"local","command":a,"enabled":True}))')"
    else
        entry="{\"type\": \"remote\", \"url\": \"$MCP_URL\", \"enabled\": true}"
    fi
    cat >"$d/opencode.json" <<EOF
{"autoupdate": false, "share": "disabled",
 "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
   "options": {"baseURL": "http://127.0.0.1:$MODEL_PORT/v1", "apiKey": "dummy"},
   "models": {"scripted": {"name": "Scripted", "tool_call": true}}}},
 "model": "scripted/scripted",
 "mcp": {"tools": $entry}}
EOF
    AGENT_CMD=(env HOME="$d/home" XDG_CONFIG_HOME="$d/home/.config" XDG_DATA_HOME="$d/home/.local/share"
        XDG_CACHE_HOME="$AGENTS_DIR/opencode-cache" XDG_STATE_HOME="$d/home/.local/state"
        OPENCODE_CONFIG="$d/opencode.json" OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1
        "$(bin_of opencode)" run -m scripted/scripted "$PROMPT")
}

# Processes whose command line names the run's workspace, but for the HTTP server itself.
# Processes whose command line names the run's workspace, or that run in it, but for the HTTP
# server itself.
leftovers() {  # dir [pid to ignore]
    local p
    {
        pgrep -af -- "$1/ws"
        for p in /proc/[0-9]*; do
            case "$(readlink "$p/cwd" 2>/dev/null)" in
                "$1/ws" | "$1/ws/"*) echo "${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) (cwd in the workspace)" ;;
            esac
        done
    } | grep -v -e "^${2:-x} " | sort -un -k1,1 || true
}

for agent in $AGENTS; do
    case "$agent" in
        codex) spec="$CODEX_PKG" ;;
        claude) spec="$CLAUDE_PKG" ;;
        gemini) spec="$GEMINI_PKG" ;;
        opencode) spec="$OPENCODE_PKG" ;;
        *) say "unknown agent $agent"; continue ;;
    esac
    if ! ensure "$spec"; then
        echo "agents: skipped $agent: npm could not install $spec (see $AGENTS_DIR/npm-$$.log)"
        continue
    fi
    version="$(timeout 60 "$(bin_of "$agent")" --version 2>/dev/null | head -1)"
    if [ -z "$version" ]; then
        echo "agents: skipped $agent: $(bin_of "$agent") --version did not answer"
        continue
    fi
    for transport in $TRANSPORTS; do
        d="$runs/$agent-$transport"
        mkdir -p "$d/ws"
        echo "alpha needle here" >"$d/ws/notes.txt"
        seq 1 3000 | sed 's/^/line /' >"$d/ws/big.txt"
        seq -f 'wide-file-line-%04g' 1 2000 | sed 's/$/ ............................................................../' >"$d/ws/wide.txt"
        start_model "$d"
        HTTP_PID=""
        if [ "$transport" = http ]; then
            start_http "$d"
            if [ -z "$MCP_URL" ]; then
                echo "| $agent | $version | $transport | server did not start: $(head -c 300 "$d/serve.err") | | | | | | | | | | | | | |" >>"$results"
                kill "$MODEL_PID" "$HTTP_PID" 2>/dev/null
                failed=1
                continue
            fi
        fi
        "setup_$agent" "$d" "$transport"
        say "$agent over $transport (in $d)"
        t0="$(date +%s%N)"
        (cd "$d/ws" && timeout -k 5 "$RUN_TIMEOUT" "${AGENT_CMD[@]}" </dev/null >"$d/agent.out" 2>"$d/agent.err")
        rc=$?
        wall="$(( ($(date +%s%N) - t0) / 1000000 ))"
        sleep 2
        left=""
        if [ -n "$HTTP_PID" ]; then
            # The server outlives the agent over HTTP; what the agent's session started lives on
            # until the agent ends its session (DELETE), the session idles out, or the server stops.
            bg="$(leftovers "$d" "$HTTP_PID")"
            if [ -n "$bg" ]; then
                left="after the agent exited, its session's commands ran on: $(echo "$bg" | tr '\n' ';' | cut -c1-200); "
            else
                left="after the agent exited, none ran on; "
            fi
            kill -TERM "$HTTP_PID" 2>/dev/null
            for _ in $(seq 1 150); do kill -0 "$HTTP_PID" 2>/dev/null || break; sleep 0.1; done
            if kill -0 "$HTTP_PID" 2>/dev/null; then
                left="${left}server still running 15 s after SIGTERM; "
                kill -KILL "$HTTP_PID" 2>/dev/null
            fi
        fi
        others="$(leftovers "$d" "$HTTP_PID")"
        if [ -n "$others" ]; then
            left="${left}$(echo "$others" | tr '\n' ';' | cut -c1-300)"
            echo "$others" | awk '{print $1}' | xargs -r kill 2>/dev/null
        fi
        [ -n "${TEE_PID:-}" ] && kill "$TEE_PID" 2>/dev/null
        kill "$MODEL_PID" 2>/dev/null
        wait "$MODEL_PID" 2>/dev/null
        case "$left" in
            "") left="none" ;;
            "after the agent exited, none ran on; ") left="none" ;;
            *"ran on:"*) [ -z "$others" ] && left="${left}none after the server stopped" ;;
        esac
        row="$(python3 "$here/check.py" --log "$d/model.jsonl" --ws "$d/ws" --out "$d/agent.out" --rc "$rc" --json "$d/check.json")"
        IFS='|' read -r tools a g g2 b b2 c dd e h k f notes <<<"$row"
        echo "| $agent | $version | $transport | $tools | $a | $g | $g2 | $b | $b2 | $c | $dd | $e | $h | $k | $f | $left | $((wall / 1000)).$(printf '%03d' $((wall % 1000))) s (exit $rc; $notes) |" >>"$results"
        case "$a$g$g2$b$b2$c$dd$e$h$k$f" in *FAIL*|*"not run"*) failed=1 ;; esac
        case "$left" in none | *"none after the server stopped") ;; *) failed=1 ;; esac
    done
done

cat "$results"
echo
echo "agents: runs kept in $runs (model.jsonl: every request the model got; agent.out/err; check.json)"
exit "$failed"
