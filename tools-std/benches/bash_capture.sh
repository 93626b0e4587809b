#!/usr/bin/env bash
# `bash` capturing a command that prints 1 GiB (through the `tools` binary): throughput against
# the same command with its output redirected to /dev/null and piped through `cat` to
# /dev/null (one pipe, as the tool reads it), and the peak memory of each.
#
# The tool cuts the output as it comes (keeping only what the model is shown), writes it to the
# output store up to the store's 64 MiB limit per output (by default under target/bash-bench, on
# disk through the page cache; STORE_PARENT=/dev/shm puts it in memory) and returns the two ends
# with a notice. Each stored output is deleted after its run.
#
# Usage: tools-std/benches/bash_capture.sh   (RUNS=5, GIB=1)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
RUNS=${RUNS:-5}
GIB=${GIB:-1}
BYTES=$((GIB * 1024 * 1024 * 1024))
OUT=$ROOT/target/bash-bench
mkdir -p "$OUT"
export XDG_DATA_HOME=${STORE_PARENT:-$OUT}/bash-bench-store
cargo build -q --release -p tools-cli
TOOLS=$ROOT/target/release/tools

COMMAND="yes 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde | head -c $BYTES"
echo "command: $COMMAND"
echo "$(bash --version | awk 'NR == 1'), $(rustc --version)"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"

now() { date +%s%N; }
# measure NAME CMD... : RUNS runs after one warm-up; prints "median_seconds peak_MiB"
measure() {
    local name=$1 t0 i peak=0 kib
    shift
    local times=()
    for ((i = 0; i <= RUNS; i++)); do
        rm -rf "$XDG_DATA_HOME"
        t0=$(now)
        kib=$(/usr/bin/time -f %M -o "$OUT/$name.time" "$@" >"$OUT/$name.out" && cat "$OUT/$name.time")
        local t=$(($(now) - t0))
        [ "$i" -eq 0 ] && continue
        times+=("$t")
        [ "$kib" -gt "$peak" ] && peak=$kib
    done
    rm -rf "$XDG_DATA_HOME"
    local median
    median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    awk -v ns="$median" -v kib="$peak" 'BEGIN { printf "%.3f %.0f", ns / 1e9, kib / 1024 }'
}

printf '\n%-40s %10s %12s %10s\n' case median throughput "peak RSS"
report() { # label, "seconds MiB"
    set -- "$1" $2
    awk -v l="$1" -v s="$2" -v m="$3" -v b="$BYTES" 'BEGIN {
        printf "%-40s %8.2f s %8.2f GiB/s %7s MiB\n", l, s, b / s / 1073741824, m }'
}
devnull=$(measure devnull bash -c "$COMMAND > /dev/null")
report "bash -c '... > /dev/null'" "$devnull"
piped=$(measure cat bash -c "$COMMAND | cat > /dev/null")
report "bash -c '... | cat > /dev/null'" "$piped"
ours=$(measure tools "$TOOLS" call bash "{\"command\": \"$COMMAND\", \"timeout_secs\": 600}")
report "tools call bash (capture + store)" "$ours"
python3 - "$OUT/tools.out" "$BYTES" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
info = out["metadata"]["truncation"]
assert info["total_bytes"] == int(sys.argv[2]), info
print(f"    captured {info['total_bytes']} bytes, {info['total_lines']} lines; the model sees "
      f"{len(out['output'].encode())} bytes; is_error={out['is_error']}")
PY
awk -v a="${ours% *}" -v b="${devnull% *}" -v c="${piped% *}" 'BEGIN {
    printf "ratio of medians: %.2fx the /dev/null redirect, %.2fx the pipe through cat\n", a / b, a / c }'
