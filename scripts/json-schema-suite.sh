#!/usr/bin/env bash
# Fetches the official JSON Schema Test Suite (github.com/json-schema-org/JSON-Schema-Test-Suite)
# into target/json-schema-test-suite, for tool-core's validator test (`cargo test -p tool-core
# json_schema_suite`). The suite comes from PyPI, inside the sdist of the Python `jsonschema`
# package, which vendors it.
set -euo pipefail
cd "$(dirname "$0")/.."

version=4.26.0
sha256=0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326
dest=target/json-schema-test-suite
if [ -f "$dest/VERSION" ] && [ "$(cat "$dest/VERSION")" = "$version" ]; then
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The sdist's hash is pinned: what is tested against is exactly that release's suite.
echo "jsonschema==$version --hash=sha256:$sha256" > "$tmp/requirements.txt"
python3 -m pip download --quiet --no-deps --no-binary :all: --require-hashes -r "$tmp/requirements.txt" -d "$tmp"
tar xzf "$tmp/jsonschema-$version.tar.gz" -C "$tmp" "jsonschema-$version/json"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/jsonschema-$version/json" "$dest"
echo "$version" > "$dest/VERSION"
echo "JSON Schema Test Suite in $dest"
