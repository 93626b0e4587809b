#!/usr/bin/env bash
# Checks the Lark grammar of apply_patch (tools-std/src/patch/apply_patch.lark, the `format` of its
# OpenAI `custom` tool definition) with the `lark` package from PyPI: every patch of the table
# in tests/data/apply_patch_cases.json marked `"grammar": true` must parse, the ones marked
# false (not patches, or accepted only by the parser's leniency: CRLF, a heredoc wrapper) and a
# few malformed patches must not.
#
# Usage: scripts/check-apply-patch-grammar.sh [VENV_DIR]   (default $CARGO_TARGET_DIR/py-lark)
set -euo pipefail

LARK_VERSION="1.3.1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-${CARGO_TARGET_DIR:-$root/target}/py-lark}"
python="${PYTHON:-python3}"

if ! { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('lark') != '$LARK_VERSION')" 2>/dev/null; }; then
    "$python" -m venv --clear "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "lark==$LARK_VERSION"
fi

"$venv/bin/python" - "$root" <<'PY'
import json, sys
from pathlib import Path
import lark

root = Path(sys.argv[1])
grammar = (root / "tools-std/src/patch/apply_patch.lark").read_text()
parser = lark.Lark(grammar, start="start", parser="earley")

def parses(text):
    try:
        parser.parse(text)
        return True, ""
    except lark.exceptions.LarkError as e:
        return False, str(e).splitlines()[0]

cases = json.loads((root / "tests/data/apply_patch_cases.json").read_text())
malformed = {
    "no end marker": "*** Begin Patch\n*** Update File: a\n-a\n+b\n",
    "hunk line without a prefix": "*** Begin Patch\n*** Update File: a\n@@\nx\n*** End Patch\n",
    "added file line without +": "*** Begin Patch\n*** Add File: a\nhello\n*** End Patch\n",
    "no file section": "*** Begin Patch\n*** End Patch\n",
    "unified diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
}
failures = []
accepted = rejected = 0
for case in cases:
    ok, why = parses(case["patch"])
    if ok != case["grammar"]:
        failures.append(f'{case["name"]}: expected {"accepted" if case["grammar"] else "rejected"}, got {"accepted" if ok else "rejected: " + why}')
    accepted += ok
    rejected += not ok
for name, text in malformed.items():
    ok, _ = parses(text)
    if ok:
        failures.append(f"malformed patch accepted: {name}")
    rejected += not ok
print(f"lark {lark.__version__}: {accepted} patches accepted, {rejected} rejected, as expected" if not failures else "")
if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
PY
