#!/usr/bin/env bash
# What `cargo check` of a crate that uses only `#[tool]` and the registry compiles, cold: the
# number of crates and the time, for this checkout's tool-runtime without its default features,
# the same with them, a baseline checkout of tool-runtime (BASE, a git revision, before the
# crate split by default), and rmcp with its `#[tool]` macros (`server` and `macros`), each in a
# fresh target directory, from the same Cargo.lock, offline.
#
# Usage: benches/minimal_check.sh          (BASE=e03ae5a JOBS=2 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BASE=${BASE:-e03ae5a}
JOBS=${JOBS:-2}
OUT=$ROOT/target/minimal-check
rm -rf "$OUT"
mkdir -p "$OUT"
git worktree add -q --detach "$OUT/base-tree" "$BASE"
trap 'git -C "$ROOT" worktree remove --force "$OUT/base-tree"' EXIT

tool_source='use tool_runtime::{Registry, ToolError, tool};

/// Add two numbers.
#[tool(parallel, read_only)]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> Result<String, ToolError> {
    Ok((a + b).to_string())
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    assert!(registry.contains("add"));
}'

rmcp_source='use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServerHandler, schemars, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

#[derive(Clone)]
struct Adder;

#[tool_router(server_handler)]
impl Adder {
    /// Add two numbers.
    #[tool]
    fn add(&self, Parameters(args): Parameters<AddArgs>) -> String {
        (args.a + args.b).to_string()
    }
}

fn main() {
    let _ = Adder;
}'

crate_with() { # name, dependency lines, source
    mkdir -p "$OUT/$1/src"
    printf '[package]\nname = "%s"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n[dependencies]\n%s\n\n[workspace]\n' \
        "$1" "$2" >"$OUT/$1/Cargo.toml"
    printf '%s\n' "$3" >"$OUT/$1/src/main.rs"
    cp "$ROOT/Cargo.lock" "$OUT/$1/Cargo.lock"
}

crate_with core 'tool-runtime = { path = "'"$ROOT"'/tool-runtime", default-features = false }' "$tool_source"
crate_with defaults 'tool-runtime = { path = "'"$ROOT"'/tool-runtime" }' "$tool_source"
crate_with base 'tool-runtime = { path = "'"$OUT"'/base-tree/tool-runtime" }' "$tool_source"
crate_with rmcp 'rmcp = { version = "3.9", default-features = false, features = ["server", "macros"] }
serde = { version = "1", features = ["derive"] }' "$rmcp_source"

printf '%-10s %8s %10s\n' crate crates seconds
for name in core defaults base rmcp; do
    cd "$OUT/$name"
    start=$(date +%s.%N)
    log=$(CARGO_TARGET_DIR="$OUT/$name/target" cargo check --offline -j"$JOBS" --color never 2>&1) || {
        echo "$log" >&2
        exit 1
    }
    end=$(date +%s.%N)
    crates=$(grep -cE '^ +(Checking|Compiling) ' <<<"$log")
    printf '%-10s %8s %10.1f\n' "$name" "$crates" "$(echo "$end - $start" | bc)"
done
