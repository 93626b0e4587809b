#!/usr/bin/env bash
# Instructions per call of the engine's cost rows of tests/benches/code_mode.rs, counted with
# valgrind (cachegrind without cache simulation): what a nested call costs the machine whatever
# its load, where wall-clock figures swing with how soon an idle core wakes.
#
# Each row runs twice, with N1 and N2 calls (CODE_MODE_ROW, CODE_MODE_COUNT); the instructions
# per call are (I(N2) - I(N1)) / (N2 - N1), so what is done once (process start, runtime,
# registry, the script's start for the nested rows) cancels out. Every thread is counted.
#
# Usage: tests/benches/code_mode_instructions.sh [ROW...]   (every row when none is named)
#   N1=500 N2=2500 by default; CODE_MODE_BIN=PATH skips the build and counts that binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/valgrind_count.sh
N1=${N1:-500}
N2=${N2:-2500}
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind is not installed: install it (Debian: apt-get install valgrind) and run again" >&2
    exit 1
fi
BIN=${CODE_MODE_BIN:-}
if [ -z "$BIN" ]; then
    BIN=$(cargo bench -p tool-tests --bench code_mode --no-run -j2 --message-format=json 2>/dev/null |
        bench_executable code_mode)
fi
if [ "$#" -gt 0 ]; then ROWS=("$@"); else ROWS=(registry_call dispatcher_run nested_await nested_all script_start); fi

instructions() { # row, count
    count_instructions "$BIN" CODE_MODE_ROW "$1" CODE_MODE_COUNT "$2"
}

echo "instructions per call: valgrind $(valgrind --version | sed 's/valgrind-//'), N1=$N1, N2=$N2, $BIN" >&2
echo "| row | instructions per call |"
echo "| --- | ---: |"
for row in "${ROWS[@]}"; do
    i1=$(instructions "$row" "$N1")
    i2=$(instructions "$row" "$N2")
    echo "  $row: I($N1)=$i1 I($N2)=$i2" >&2
    echo "| $row | $(( (i2 - i1) / (N2 - N1) )) |"
done
