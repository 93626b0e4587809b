#!/usr/bin/env bash
# Instructions per call of each row of tool-runtime/benches/call_path.rs, counted with valgrind
# (cachegrind without cache simulation), which does not drift with the machine's load as wall-clock
# times do.
#
# The bench binary (bench profile) runs one row outside criterion when CALL_PATH_ROW and
# CALL_PATH_COUNT are set. Each row runs twice, with N1 and N2 calls; the instructions per call
# are (I(N2) - I(N1)) / (N2 - N1), so everything done once (process start, runtime, registry,
# MCP initialize, the check of the first result) cancels out. Every thread is counted: for the
# duplex rows that is the client, the server and the runtime's workers.
#
# Usage: benches/instructions.sh [ROW...]       (every row when none is named)
#   N1=2000 N2=12000 by default; CARGO_TARGET_DIR and JOBS (default 2) are honoured.
#   CALL_PATH_BIN=PATH skips the build and counts that binary.
#   TIMES=1 also prints the times of the last criterion run of the same rows (from
#   $CARGO_TARGET_DIR/criterion/call_path), with the same ratios; COUNT=0 prints only those.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/valgrind_count.sh
N1=${N1:-2000}
N2=${N2:-12000}
JOBS=${JOBS:-2}
TARGET=${CARGO_TARGET_DIR:-$PWD/target}

COUNT=${COUNT:-1}
if [ "$COUNT" != 0 ] && ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind is not installed: install it (Debian: apt-get install valgrind) and run again" >&2
    exit 1
fi
if [ "$N2" -le "$N1" ]; then
    echo "N2 ($N2) must be larger than N1 ($N1)" >&2
    exit 1
fi

BIN=${CALL_PATH_BIN:-}
if [ -z "$BIN" ]; then
    BIN=$(cargo bench -p tool-runtime --features mcp --bench call_path --no-run -j"$JOBS" \
        --message-format=json 2>/dev/null | bench_executable call_path)
    if [ -z "$BIN" ]; then
        echo "the call_path bench did not build; run" \
            "'cargo bench -p tool-runtime --features mcp --bench call_path --no-run' to see why" >&2
        exit 1
    fi
fi

if [ "$#" -gt 0 ]; then
    ROWS=("$@")
else
    mapfile -t ROWS < <(CALL_PATH_ROW=list "$BIN")
fi

# Total instructions of one run of ROW with COUNT calls.
instructions() { # row, count
    count_instructions "$BIN" CALL_PATH_ROW "$1" CALL_PATH_COUNT "$2"
}

RESULTS=$(mktemp)
trap 'rm -f "$RESULTS"' EXIT
[ "$COUNT" = 0 ] ||
    echo "instructions per call: valgrind $(valgrind --version | sed 's/valgrind-//'), N1=$N1, N2=$N2, $BIN" >&2
for row in "${ROWS[@]}"; do
    if [ "$COUNT" = 0 ]; then
        echo "$row - -" >>"$RESULTS"
        continue
    fi
    i1=$(instructions "$row" "$N1")
    i2=$(instructions "$row" "$N2")
    echo "$row $i1 $i2" >>"$RESULTS"
    echo "  $row: I($N1)=$i1 I($N2)=$i2" >&2
done

# The table: per row, the figure and its ratios to the serde baseline and to rmcp's comparator
# (in process, or over the duplex for the duplex rows); then the issue's targets.
python3 - "$RESULTS" "$N1" "$N2" "${TIMES:-}" "$TARGET/criterion/call_path" <<'PY'
import json, os, sys

results, n1, n2, times, criterion_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rows, per_call = [], {}
for line in open(results):
    row, i1, i2 = line.split()
    rows.append(row)
    if i1 != "-":
        per_call[row] = (int(i2) - int(i1)) / (n2 - n1)

def baseline_of(row):
    return "rich_validation/serde_from_str" if row.startswith("rich_validation/") else "serde_baseline"

def rmcp_of(row):
    if row.startswith("rich_validation/"):
        return None
    return "rmcp_duplex" if row.endswith("_duplex") else "rmcp_in_process"

def ratio(figures, row, other):
    if other is None or other not in figures or figures[other] == 0:
        return "-"
    return f"{figures[row] / figures[other]:.2f}x"

def table(title, figures, unit, fmt):
    print(f"\n{title}\n")
    print(f"| row | {unit} | / baseline | / rmcp |")
    print("| --- | ---: | ---: | ---: |")
    for row in figures:
        print(f"| {row} | {fmt(figures[row])} | {ratio(figures, row, baseline_of(row))} | "
              f"{ratio(figures, row, rmcp_of(row))} |")

def targets(title, f):
    # The performance targets of issue 13, each as (text, left row, factor, right row):
    # met when left <= factor * right (strictly below for the rmcp in-process target).
    checks = [
        ("Registry::call below rmcp in process", "registry_call", 1.0, "rmcp_in_process", True),
        ("Registry::call at most 4x the serde baseline", "registry_call", 4.0, "serde_baseline", False),
        ("run_batch (1 call) at most 2x Registry::call", "dispatcher_run_batch_1", 2.0, "registry_call", False),
        ("rich validation at most 4x serde from_str", "rich_validation/registry_validate", 4.0,
         "rich_validation/serde_from_str", False),
        ("tools/call over the duplex at most rmcp's server", "ours_duplex", 1.0, "rmcp_duplex", False),
    ]
    print(f"\n{title}\n")
    print("| target | measured | |")
    print("| --- | ---: | --- |")
    for text, left, factor, right, strict in checks:
        if left not in f or right not in f:
            continue
        value = f[left] / f[right]
        met = value < factor if strict else value <= factor
        print(f"| {text} | {value:.2f}x | {'met' if met else 'not met'} |")

if per_call:
    table("Instructions per call", per_call, "instructions", lambda v: f"{v:,.0f}")
    targets("Targets (instructions)", per_call)

if times:
    # Criterion's figure: the slope of its linear sampling when it has one, else the mean.
    figures = {}
    for root, _, files in os.walk(criterion_dir):
        if os.path.basename(root) != "new" or "benchmark.json" not in files:
            continue
        bench = json.load(open(os.path.join(root, "benchmark.json")))
        estimates = json.load(open(os.path.join(root, "estimates.json")))
        figure = (estimates.get("slope") or estimates["mean"])["point_estimate"]
        figures[bench["function_id"]] = figure
    ordered = {row: figures[row] for row in rows if row in figures}
    if ordered:
        table("Time per call (last criterion run)", ordered, "time",
              lambda ns: f"{ns / 1000:.2f} µs" if ns >= 1000 else f"{ns:.0f} ns")
        targets("Targets (time)", ordered)
    else:
        print(f"\nno criterion results under {criterion_dir}", file=sys.stderr)
PY
