#!/usr/bin/env bash
# Compile time of a crate with 100 `#[tool]` functions, next to two baselines built the same way:
#
#   tool    100 `#[tool]` fns in 10 modules; main builds the registry from inventory.
#   serde   the hand-written equivalent: per tool a `#[derive(Deserialize, JsonSchema)]` argument
#           struct and the same fn; main matches names to decode + call, and lists the schemas.
#   plain   the same 100 async fns without any of it; main calls each once.
#
# For each: a clean build of the crate (dependencies already built), a rebuild after touching one
# tool's body (incremental, median of 3), in the dev profile, a clean `cargo check` and a `cargo
# check` after touching one tool (median of 3), and a clean release build. The
# crates are generated under target/compile-time-bench with their own target directory, against
# this checkout's tool-runtime (path dependency) and Cargo.lock.
#
# Usage: benches/compile_time.sh            (TOOLS=100 JOBS=2 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TOOLS=${TOOLS:-100}
JOBS=${JOBS:-2}
MODULES=10
PER_MODULE=$(( (TOOLS + MODULES - 1) / MODULES ))
OUT=$ROOT/target/compile-time-bench
export CARGO_TARGET_DIR=$OUT/target
export CARGO_TERM_COLOR=never
export CARGO_INCREMENTAL=1

manifest() { # name, extra dependencies
    cat <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
tool-runtime = { path = "$ROOT/tool-runtime" }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = "1.2"
tokio = { version = "1", features = ["rt"] }

[workspace]
TOML
}

# One tool's source, in each variant; $3 is a marker in the body that the rebuild changes.
tool_source() { # variant, index, marker
    local v=$1 i=$2 m=$3
    case $v in
    tool) cat <<RS
/// Tool $i: look something up.
///
/// Returns what it found, one result per line.
#[tool(parallel, read_only)]
pub async fn tool_$i(
    /// What to look for.
    query: String,
    /// Maximum number of results.
    #[arg(default = 10)]
    limit: u32,
    /// Where to look, relative to the workspace root.
    path: Option<String>,
    /// Extra flags.
    flags: Vec<String>,
) -> Result<String, ToolError> {
    Ok(format!("tool_$i $m: {query} {limit} {path:?} {flags:?}"))
}

RS
    ;;
    serde) cat <<RS
/// Arguments of tool $i.
#[derive(Deserialize, JsonSchema)]
pub struct Tool${i}Args {
    /// What to look for.
    pub query: String,
    /// Maximum number of results.
    #[serde(default = "ten")]
    pub limit: u32,
    /// Where to look, relative to the workspace root.
    pub path: Option<String>,
    /// Extra flags.
    pub flags: Vec<String>,
}

/// Tool $i: look something up.
pub async fn tool_$i(args: Tool${i}Args) -> Result<String, String> {
    let Tool${i}Args { query, limit, path, flags } = args;
    Ok(format!("tool_$i $m: {query} {limit} {path:?} {flags:?}"))
}

RS
    ;;
    plain) cat <<RS
/// Tool $i: look something up.
pub async fn tool_$i(query: String, limit: u32, path: Option<String>, flags: Vec<String>) -> Result<String, String> {
    Ok(format!("tool_$i $m: {query} {limit} {path:?} {flags:?}"))
}

RS
    ;;
    esac
}

module_source() { # variant, module
    local v=$1 m=$2 i
    case $v in
    tool) echo "use tool_runtime::{ToolError, tool};" ;;
    serde) printf 'use schemars::JsonSchema;\nuse serde::Deserialize;\n\nfn ten() -> u32 {\n    10\n}\n' ;;
    esac
    echo
    for ((i = m * PER_MODULE; i < (m + 1) * PER_MODULE && i < TOOLS; i++)); do
        tool_source "$v" "$i" v0
    done
}

main_source() { # variant
    local v=$1 m i
    for ((m = 0; m < MODULES; m++)); do echo "mod m$m;"; done
    echo
    case $v in
    tool) cat <<RS
fn main() {
    let registry = tool_runtime::Registry::from_inventory().expect("registry");
    assert_eq!(registry.len(), $TOOLS);
    println!("{} tools", registry.len());
}
RS
    ;;
    serde)
        echo "type Call = std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>>>>;"
        echo
        echo "fn dispatch(name: &str, args: &str) -> Option<Call> {"
        echo "    match name {"
        for ((i = 0; i < TOOLS; i++)); do
            m=$((i / PER_MODULE))
            echo "        \"tool_$i\" => Some(Box::pin(m$m::tool_$i(serde_json::from_str(args).ok()?))),"
        done
        echo "        _ => None,"
        echo "    }"
        echo "}"
        echo
        echo "fn schemas() -> Vec<serde_json::Value> {"
        echo "    vec!["
        for ((i = 0; i < TOOLS; i++)); do
            m=$((i / PER_MODULE))
            echo "        schemars::schema_for!(m$m::Tool${i}Args).to_value(),"
        done
        echo "    ]"
        echo "}"
        echo
        echo "fn main() {"
        echo "    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();"
        echo "    let calls = (0..$TOOLS).filter_map(|i| dispatch(&format!(\"tool_{i}\"), r#\"{\"query\": \"q\", \"flags\": []}\"#));"
        echo "    let done = calls.map(|call| rt.block_on(call).is_ok()).filter(|ok| *ok).count();"
        echo "    assert_eq!((done, schemas().len()), ($TOOLS, $TOOLS));"
        echo "    println!(\"{done} tools\");"
        echo "}"
        ;;
    plain)
        echo "fn main() {"
        echo "    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();"
        echo "    let mut done = 0;"
        for ((i = 0; i < TOOLS; i++)); do
            m=$((i / PER_MODULE))
            echo "    done += usize::from(rt.block_on(m$m::tool_$i(\"q\".into(), 10, None, Vec::new())).is_ok());"
        done
        echo "    assert_eq!(done, $TOOLS);"
        echo "    println!(\"{done} tools\");"
        echo "}"
        ;;
    esac
}

generate() { # variant
    local v=$1 dir=$OUT/$1 m
    rm -rf "$dir"
    mkdir -p "$dir/src"
    manifest "ctb-$v" >"$dir/Cargo.toml"
    cp "$ROOT/Cargo.lock" "$dir/Cargo.lock"
    for ((m = 0; m < MODULES; m++)); do module_source "$v" "$m" >"$dir/src/m$m.rs"; done
    main_source "$v" >"$dir/src/main.rs"
}

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

build() { # variant, cargo command, flag...
    local v=$1 command=$2
    shift 2
    (cd "$OUT/$v" && cargo "$command" -q -j"$JOBS" "$@")
}

timed_build() { # variant, cargo command, flag... ; prints seconds
    local start
    start=$(now)
    build "$@"
    secs "$start" "$(now)"
}

median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

mkdir -p "$OUT"
echo "compile time of $TOOLS tools, -j$JOBS, $(rustc --version)"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"

for v in tool serde plain; do generate "$v"; done

# Dependencies once (shared by the three crates), so that the figures below are the crate's own.
start=$(now)
build tool build
build tool build --release
build tool check
echo "dependencies (dev + release + check, once): $(secs "$start" "$(now)") s"
for v in serde plain; do build "$v" build; build "$v" build --release; build "$v" check; done
for v in tool serde plain; do (cd "$OUT/$v" && "$CARGO_TARGET_DIR/debug/ctb-$v" >/dev/null); done

printf '\n%-7s %12s %14s %12s %14s %12s\n' variant "clean (dev)" "rebuild (dev)" "check" "recheck" "clean (rel)"
declare -A CLEAN CHECK
touch_tool() { # variant, k: change the marker in the body of the first tool of module 3
    sed -i "0,/ v$(($2 - 1)): / s// v$2: /" "$OUT/$1/src/m3.rs"
}
for v in tool serde plain; do
    (cd "$OUT/$v" && cargo clean -q -p "ctb-$v" && cargo clean -q -p "ctb-$v" --release)
    clean=$(timed_build "$v" build)
    CLEAN[$v]=$clean
    times=()
    for k in 1 2 3; do
        touch_tool "$v" "$k"
        times+=("$(timed_build "$v" build)")
    done
    (cd "$OUT/$v" && cargo clean -q -p "ctb-$v")
    check=$(timed_build "$v" check)
    CHECK[$v]=$check
    checks=()
    for k in 4 5 6; do
        touch_tool "$v" "$k"
        checks+=("$(timed_build "$v" check)")
    done
    release=$(timed_build "$v" build --release)
    printf '%-7s %10s s %12s s %10s s %12s s %10s s\n' "$v" "$clean" "$(median3 "${times[@]}")" "$check" \
        "$(median3 "${checks[@]}")" "$release"
done
echo
awk -v t="${CLEAN[tool]}" -v s="${CLEAN[serde]}" -v p="${CLEAN[plain]}" \
    -v tc="${CHECK[tool]}" -v sc="${CHECK[serde]}" -v pc="${CHECK[plain]}" -v n="$TOOLS" 'BEGIN {
    printf "per tool over plain fns, clean dev build: #[tool] %.1f ms, hand-written serde + schemars %.1f ms\n",
        (t - p) * 1000 / n, (s - p) * 1000 / n
    printf "per tool over plain fns, clean check: #[tool] %.1f ms, hand-written serde + schemars %.1f ms\n",
        (tc - pc) * 1000 / n, (sc - pc) * 1000 / n
    printf "#[tool] / hand-written: clean dev build %.2f, clean check %.2f\n", t / s, tc / sc
}'
