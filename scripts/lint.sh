#!/usr/bin/env bash
# What the code declares, enforced: clippy with the workspace's lints as errors, the docs with
# broken intra-doc links as errors, each library crate with no default features and with each
# feature alone, and the fuzz targets compiled. CI runs it (.ci/run); run it before a push.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
jobs="${CARGO_BUILD_JOBS:-2}"

step() { printf '\n== %s\n' "$*" >&2; }

step "clippy, every target and feature, warnings denied"
cargo clippy --workspace --all-targets --all-features --locked -j "$jobs" -- -D warnings

step "docs, warnings (broken intra-doc links among them) denied"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --locked -j "$jobs"

# Each library crate with no default features, then with each of its features alone: a feature
# that does not build alone (a missing `dep:` or `cfg`) fails here, not in a user's build.
step "features, each alone"
for manifest in tool-*/Cargo.toml tools-std/Cargo.toml; do
    crate="$(dirname "$manifest")"
    [ "$crate" = "tool-macros" ] && continue
    features="$(sed -n '/^\[features\]/,/^\[/p' "$manifest" | grep -oE '^[a-z][a-z0-9_-]* =' | cut -d' ' -f1 | grep -v '^default$' || true)"
    echo "$crate: no default features${features:+; each of:} $(echo $features)" >&2
    cargo check -p "$crate" --no-default-features --lib --locked -j "$jobs" --quiet
    for feature in $features; do
        cargo check -p "$crate" --no-default-features --features "$feature" --lib --locked -j "$jobs" --quiet
    done
done

step "fuzz targets compiled"
cargo check --manifest-path fuzz/Cargo.toml --bins --locked -j "$jobs"
# On CI its own target directory (about 0.4 GB) is not needed again: freed before the tests build
# (see "Disk taken by the test suite" in BENCHMARKS.md).
if [ "${CI:-}" = "true" ]; then
    rm -rf fuzz/target
fi
